"""Plans are true node by node: the cases of issue 11, each on a hand-made platform."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from router.cli.main import cli
from router.config import load_project
from router.plan.build import Plan, build_plan
from router.plan.verify import verify_plan
from tests.bench import exact
from tests.helpers import kubernetes, make_project, platform, slurm, target

SERVE = """
policy nodes
rule serve: when kind == "inference" route kubernetes
rule rest: route any
"""


def _pool(
    name: str = "gpu",
    nodes: int = 2,
    gpus: int = 8,
    cpus: int = 48,
    memory: str = "384GiB",
    **more: Any,
) -> dict[str, Any]:
    return platform(kubernetes(target(name, nodes, gpus, cpus, memory, **more)))


def _service(
    name: str, gpus: int, cpus: int, memory: str, replicas: int, **more: Any
) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "inference",
        "image": "ghcr.io/example/serve:1",
        "gpus": gpus,
        "cpus": cpus,
        "memory": memory,
        "replicas": {"min": replicas, "max": replicas},
        **more,
    }


def _job(name: str, gpus: int, cpus: int, memory: str, **more: Any) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "batch",
        "image": "ghcr.io/example/batch:1",
        "command": "run",
        "gpus": gpus,
        "cpus": cpus,
        "memory": memory,
        **more,
    }


def _plan(root: Path) -> Plan:
    plan = build_plan(load_project(root))
    i = plan.inputs
    assert verify_plan(i.policy, i.inventory, i.workloads, plan.placements) == []
    assert exact.packs(
        i.inventory.targets(), [(p.target, p.resources) for p in plan.placements], i.inventory
    )
    return plan


def _placed(plan: Plan) -> set[str]:
    return {p.workload.name for p in plan.placements}


def test_three_replicas_of_30_cpus_do_not_fit_two_48_cpu_nodes(tmp_path: Path) -> None:
    root = make_project(tmp_path, [_service("chat", 2, 30, "16GiB", 3)], SERVE, _pool())
    plan = _plan(root)
    assert _placed(plan) == set()  # 90 of 96 CPUs in total, but one replica per node
    (u,) = plan.unplaced
    assert u.reasons == [
        "k8s/gpu: 3 pods need 30 CPUs free each; its 2 nodes have room for 2 "
        "(the most free on any node: 48 CPUs on 2)"
    ]
    assert u.fix == "k8s/gpu needs 1 more node (has 2) (then it fits on k8s/gpu)"


def test_only_the_replicas_that_fit_are_placed(tmp_path: Path) -> None:
    services = [_service(f"s{i}", 2, 30, "16GiB", 1) for i in range(3)]
    plan = _plan(make_project(tmp_path, services, SERVE, _pool()))
    assert len(plan.placements) == 2
    assert sorted(n for p in plan.placements for _, n in p.nodes) == [0, 1]
    (u,) = plan.unplaced
    assert "the most free on any of its 2 nodes is 18 CPUs" in u.reasons[0]


def test_a_gpu_pod_and_a_cpu_job_share_one_node(tmp_path: Path) -> None:
    pool = _pool(nodes=1, gpus=4, cpus=96, memory="192GiB")
    wl = [_service("pod", 3, 8, "16GiB", 1), _job("etl", 0, 70, "150GiB")]
    plan = _plan(make_project(tmp_path, wl, SERVE, pool))
    assert _placed(plan) == {"pod", "etl"}
    assert plan.solve.status == "OPTIMAL"
    assert {tuple(p.nodes) for p in plan.placements} == {(("k8s/gpu", 0),)}


def test_mig_slices_and_whole_gpus_are_never_the_same_gpu(tmp_path: Path) -> None:
    # 8 A100s: 4 whole, 4 cut into 7 x 1g.10gb (28 slices).
    policy = """
    policy mig
    rule sliced: when labels.mig == "yes" route kubernetes with mig = "1g.10gb"
    rule serve: when kind == "inference" route kubernetes
    """
    pool = _pool(
        "a100",
        nodes=1,
        gpus=8,
        cpus=128,
        memory="1TiB",
        mig=[{"gpus": 4, "slices": {"1g.10gb": 7}}],
    )
    pool["clusters"][0]["node_pools"][0]["gpu_type"] = "a100"
    big = _service("big", 8, 8, "16GiB", 1, gpu_type="a100")  # 8 whole GPUs: only 4 exist
    four = _service("four", 4, 8, "16GiB", 1, gpu_type="a100")
    sliced = _service("sliced", 1, 1, "1GiB", 28, labels={"mig": "yes"})
    extra = _service("extra", 1, 1, "1GiB", 1, labels={"mig": "yes"})
    plan = _plan(make_project(tmp_path, [big, four, sliced, extra], policy, pool))
    assert _placed(plan) == {"four", "sliced"}
    unplaced = {u.decision.workload.name: u.reasons for u in plan.unplaced}
    assert "4 GPUs per node < 8 per replica" in unplaced["big"][0]
    assert unplaced["extra"] == [
        "k8s/a100: needs 1 1g.10gb slice free on one node; its 1 node has 0 1g.10gb slices free"
    ]


def test_two_partitions_over_one_node_set_are_one_capacity(tmp_path: Path) -> None:
    inventory = platform(
        slurm(
            {"name": "gpu", "node_sets": ["h100"]},
            {"name": "preempt", "node_sets": ["h100"]},
            node_sets=[target("h100", 2, 8, 96, "1TiB", node_names=["g1", "g2"])],
        )
    )
    policy = """
    policy shared
    rule first: when labels.q == "gpu" route slurm where name == "gpu"
    rule rest: route slurm where name == "preempt"
    """
    wl = [
        _job(f"j{i}", 8, 16, "64GiB", labels={"q": "gpu" if i < 2 else "other"}) for i in range(4)
    ]
    root = make_project(tmp_path, wl, policy, inventory)
    plan = _plan(root)
    assert len(plan.placements) == 2  # two nodes, however many partitions name them
    nodes = sorted(n for p in plan.placements for n in p.nodes)
    assert nodes == [("hpc/h100", 0), ("hpc/h100", 1)]
    r = CliRunner().invoke(cli, ["plan", str(root), "-o", str(tmp_path / "out")])
    assert r.exit_code == 3, r.output
    doc = json.loads((tmp_path / "out" / "plan.json").read_text())
    names = sorted(n["name"] for p in doc["placements"] for n in p["nodes"])
    assert names == ["g1", "g2"]


def test_a_whole_node_job_is_alone_on_its_nodes(tmp_path: Path) -> None:
    policy = """
    policy whole
    rule big: when gpus >= 8 route slurm with exclusive
    rule rest: route slurm
    """
    inventory = platform(slurm(target("gpu", 3, 8, 48, "384GiB")))
    wl = [_job("big", 16, 32, "64GiB"), _job("small", 1, 4, "8GiB"), _job("more", 8, 8, "8GiB")]
    plan = _plan(make_project(tmp_path, wl, policy, inventory))
    where = {p.workload.name: p.nodes for p in plan.placements}
    assert sorted(where) == ["big", "more"]  # worth more than `small`, which has no node left
    assert len(set(where["big"])) == 2 and not set(where["big"]) & set(where["more"])
    (u,) = plan.unplaced
    assert u.reasons == [
        "hpc/gpu: needs 1 GPU free on one node; the most free on any of its 3 nodes is "
        "0 GPUs (in all: cpus 144 of 144 used, needs 4; gpus 24 of 24 used, needs 1; "
        "memory 1152GiB of 1152GiB used, needs 8GiB)"
    ]


def test_cpu_work_keeps_off_gpu_nodes_unless_a_rule_prefers_them(tmp_path: Path) -> None:
    # named so that the tie-break alone would pick the GPU pool
    inventory = platform(
        kubernetes(
            target("a-gpu", 1, 4, 48, "192GiB", gpu_type="l4"), target("b-cpu", 1, 0, 48, "192GiB")
        )
    )
    wl = [_job("etl", 0, 8, "16GiB")]
    plain = _plan(make_project(tmp_path / "plain", wl, SERVE, inventory))
    assert [p.target.id for p in plain.placements] == ["k8s/b-cpu"]
    prefers = SERVE.replace("route any", "route any prefer gpus_per_node == 4")
    ruled = _plan(make_project(tmp_path / "ruled", wl, prefers, inventory))
    assert [p.target.id for p in ruled.placements] == ["k8s/a-gpu"]


def test_the_plan_packs_around_running_work(tmp_path: Path) -> None:
    inventory = platform(slurm(target("gpu", 3, 8, 96, "1TiB", node_names=["g0", "g1", "g2"])))
    policy = """
    policy running
    rule big: when gpus >= 8 route slurm with exclusive
    rule rest: route slurm
    """
    wl = [_job(f"four{i}", 4, 8, "64GiB") for i in range(3)] + [
        _job("whole", 8, 8, "8GiB", priority="high")
    ]
    root = make_project(tmp_path, wl, policy, inventory)
    (root / "running.yaml").write_text(
        "running:\n"
        "  - {cluster: hpc, node: g0, gpus: 6, cpus: 16, memory: 64GiB, job: '101'}\n"
        "  - {cluster: hpc, node_set: gpu, node: 2, gpus: 1, cpus: 1, memory: 1GiB, job: '102'}\n"
    )
    with (root / "router.yaml").open("a") as f:
        f.write("running: running.yaml\n")
    plan = _plan(root)
    i = plan.inputs
    assert verify_plan(i.policy, i.inventory, i.workloads, plan.placements, i.running) == []
    where = {p.workload.name: p.nodes for p in plan.placements}
    # g0 has 2 GPUs free, g2 has 7, g1 all 8: the (high priority) whole-node job takes the
    # idle g1, one 4-GPU job fits g2 (7 free), the others find no node with 4 GPUs free.
    assert where["whole"] == [("hpc/gpu", 1)]
    assert sorted(where) == ["four0", "whole"]
    assert where["four0"] == [("hpc/gpu", 2)]
    reasons = {u.decision.workload.name: u.reasons for u in plan.unplaced}
    assert reasons["four1"] == [
        "hpc/gpu: needs 4 GPUs free on one node; the most free on any of its 3 nodes is "
        "3 GPUs; running work holds 7 of the 24 GPUs there"
    ]


def test_explain_offers_no_displacement_that_would_not_fit_the_nodes(tmp_path: Path) -> None:
    wl = [_service("chat", 2, 30, "16GiB", 3), _service("small", 2, 20, "16GiB", 1)]
    root = make_project(tmp_path, wl, SERVE, _pool())
    r = CliRunner().invoke(cli, ["explain", "chat", str(root)])
    assert r.exit_code == 0, r.output
    assert (
        "k8s/gpu: 3 pods need 30 CPUs free each; its 2 nodes have room for 1 (the most free "
        "on any node: 48 CPUs on 1, 28 on 1) (in all: cpus 20 of 96 used, needs 90)"
    ) in r.output
    # Taking `small` off frees the CPUs in total, but 3 pods of 30 still find 2 nodes of 48.
    assert "displace" not in r.output
