"""The CP-SAT assignment: capacity, ranks, preferences, quotas, determinism."""

from __future__ import annotations

from pathlib import Path

from router.config import load_project
from router.plan.build import Plan, build_plan
from router.plan.verify import verify_plan
from router.solve.cpsat import SolveOptions, auto_limit
from tests.helpers import INVENTORY, job, make_project


def plan_of(root: Path, workers: int = 4) -> Plan:
    plan = build_plan(load_project(root), SolveOptions(workers=workers))
    i = plan.inputs
    assert verify_plan(i.policy, i.inventory, i.workloads, plan.placements) == []
    return plan


def where(plan: Plan) -> dict[str, str]:
    return {p.workload.name: p.target.id for p in plan.placements}


def test_capacity_keeps_highest_priority_whole_node_jobs(tmp_path: Path) -> None:
    # Four 16-GPU exclusive jobs, room for two (2 h100 + 2 a100 nodes of 8 GPUs each).
    wl = [
        job(f"j{i}", gpus=16, priority=p) for i, p in enumerate(["low", "high", "low", "critical"])
    ]
    plan = plan_of(make_project(tmp_path, wl))
    assert sorted(where(plan)) == ["j1", "j3"]
    assert {u.decision.workload.name for u in plan.unplaced} == {"j0", "j2"}
    reasons = " ".join(r for u in plan.unplaced for r in u.reasons)
    assert "needs 2 whole nodes, 0 of its 2 nodes are idle" in reasons
    assert all(p.resources.exclusive and p.resources.whole_nodes == 2 for p in plan.placements)


def test_fallback_used_only_when_primary_is_full(tmp_path: Path) -> None:
    inv = {
        "clusters": [
            INVENTORY["clusters"][0]
            | {"partitions": [INVENTORY["clusters"][0]["partitions"][0] | {"nodes": 1}]},
            INVENTORY["clusters"][1],
        ]
    }
    wl = [
        job(n, gpus=4, memory="64GiB", priority=p)
        for n, p in [("a", "high"), ("b", "normal"), ("c", "normal")]
    ]
    plan = plan_of(make_project(tmp_path, wl, inventory=inv))
    placed = where(plan)
    slurm = [n for n, t in placed.items() if t.startswith("hpc/")]
    k8s = [n for n, t in placed.items() if t.startswith("k8s/")]
    assert len(slurm) == 2 and "a" in slurm  # 8 GPUs on the one h100 node
    assert len(k8s) == 1 and k8s[0] in {"b", "c"}
    assert {p.rank for p in plan.placements if p.target.id.startswith("k8s/")} == {1}


def test_prefer_lower_cost_and_quota(tmp_path: Path) -> None:
    policy = """
    rule any_gpu: when gpus > 0 route slurm prefer lower cost
    quota team_a: for team == "a" limit gpus <= 8
    """
    wl = [
        job("x1", gpus=4, team="a", kind="batch"),
        job("x2", gpus=4, team="a", kind="batch"),
        job("x3", gpus=4, team="a", kind="batch"),
    ]
    plan = plan_of(make_project(tmp_path, wl, policy=policy))
    assert len(plan.placements) == 2
    assert {p.target.id for p in plan.placements} == {"hpc/a100"}  # cheaper than h100
    (u,) = plan.unplaced
    assert any("quota team_a" in r and "8 of 8 used, needs 4" in r for r in u.reasons)


def test_percent_quota_on_cluster(tmp_path: Path) -> None:
    policy = """
    rule s: route kubernetes where gpus_per_node > 0
    quota headroom: on cluster == "k8s" limit gpus <= 50%
    """
    # The l4 pool autoscales to 4 nodes × 4 GPUs = 16; 50% leaves 8.
    wl = [
        job(f"s{i}", kind="inference", gpus=2, cpus=4, memory="16GiB", replicas=1) for i in range(6)
    ]
    plan = plan_of(make_project(tmp_path, wl, policy=policy))
    assert sum(p.resources.gpus for p in plan.placements) == 8
    assert len(plan.unplaced) == 2


def test_shape_spreads_gpus_and_checks_time(tmp_path: Path) -> None:
    wl = [
        job("twelve", gpus=12, cpus=48, memory="128GiB"),
        job("toolong", kind="batch", gpus=0, cpus=4, memory="8GiB", duration="100h"),
    ]
    policy = "rule all: route slurm"
    plan = plan_of(make_project(tmp_path, wl, policy=policy))
    (p,) = plan.placements
    assert (p.resources.nodes, p.resources.gpus_per_node, p.resources.cpus_per_node) == (2, 6, 24)
    (u,) = plan.unplaced
    assert u.decision.workload.name == "toolong"
    assert any("hpc/h100: max time 3d < 100h" in r for r in u.reasons)


def test_denied_and_unrouted(tmp_path: Path) -> None:
    policy = """
    deny no_notebooks: when kind == "notebook" because "no notebooks here"
    rule t: when kind == "training" route slurm
    """
    wl = [job("nb", kind="notebook", gpus=0), job("b", kind="batch", gpus=0), job("t")]
    plan = plan_of(make_project(tmp_path, wl, policy=policy))
    assert [d.workload.name for d in plan.denied] == ["nb"]
    assert plan.denied[0].message == "no notebooks here"
    assert [d.workload.name for d in plan.unrouted] == ["b"]
    assert list(where(plan)) == ["t"]


def test_same_plan_whatever_the_worker_count(tmp_path: Path) -> None:
    wl = [
        job(f"w{i}", gpus=g, kind=k, cpus=8, memory="32GiB")
        for i, (g, k) in enumerate(
            [
                (1, "batch"),
                (2, "training"),
                (4, "batch"),
                (8, "training"),
                (3, "batch"),
                (1, "training"),
                (6, "batch"),
                (2, "batch"),
                (16, "training"),
                (5, "batch"),
                (7, "batch"),
                (1, "batch"),
            ]
        )
    ]
    root = make_project(tmp_path, wl)
    plans = [where(plan_of(root, workers=w)) for w in (1, 2, 8)]
    assert plans[0] == plans[1] == plans[2]
    assert len(plans[0]) >= 10


def test_the_solver_budget_grows_with_the_model_and_is_capped() -> None:
    assert [auto_limit(n) for n in (0, 7000, 11_229, 56_840, 10**6)] == [
        0.5,
        0.5,
        11_229 / 14000,
        56_840 / 14000,
        10.0,
    ]
