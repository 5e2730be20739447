"""`quota ... per KEY`: one limit per team or per cluster, in plans, reasons, verify and check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from router.cli.main import cli
from router.config import load_project
from router.evaluate.evaluate import Evaluator
from router.evaluate.quota import compile_quotas
from router.models.placement import Placement
from router.plan.build import Plan, build_plan, load_inputs
from router.plan.verify import verify_plan
from router.solve.aggregate import build_aggregate
from tests.helpers import job, make_project, plan_json_twice, platform, slurm, target

RULE = "rule train: route slurm\n"
PER_TEAM = (
    RULE
    + """
quota team_gpus:
  per team
  limit gpus <= 8
"""
)
PLAIN = (
    RULE
    + """
quota team_gpus:
  limit gpus <= 8
"""
)
# a-1 and b-1 fit a limit per team; a-2 would be team a's second 8 GPUs.
JOBS = [job("a-1", team="a"), job("b-1", team="b"), job("a-2", team="a")]


def plan_of(root: Path) -> Plan:
    plan = build_plan(load_project(root))
    i = plan.inputs
    assert verify_plan(i.policy, i.inventory, i.workloads, plan.placements) == []
    return plan


def line_of(root: Path, needle: str) -> int:
    lines = (root / "policies" / "policy.route").read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if needle in line)


def slurm_cluster(name: str, nodes: int, cost: float) -> dict[str, Any]:
    gpu = target("gpu", nodes, 8, 96, "1TiB", max_time="72h", cost_per_gpu_hour=cost)
    return slurm(gpu, name=name)


# 32 GPUs on the cheaper cluster, 16 on the dearer one.
TWO_SIZES: dict[str, Any] = {
    "clusters": [slurm_cluster("big", 4, 1.0), slurm_cluster("small", 2, 2.0)]
}
CHEAP = "rule train: route slurm prefer lower cost\n"
HALF = """
quota headroom:
  per cluster
  limit gpus <= 50%
"""


def by_cluster(plan: Plan) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in plan.placements:
        out[p.target.cluster] = out.get(p.target.cluster, 0) + p.resources.gpus
    return dict(sorted(out.items()))


def test_a_plain_quota_allows_8_gpus_in_all(tmp_path: Path) -> None:
    plan = plan_of(make_project(tmp_path, JOBS, policy=PLAIN))
    assert len(plan.placements) == 1 and len(plan.unplaced) == 2


def test_per_team_gives_each_team_its_own_8(tmp_path: Path) -> None:
    root = make_project(tmp_path, JOBS, policy=PER_TEAM)
    plan = plan_of(root)
    teams = sorted(p.workload.team or "" for p in plan.placements)
    assert teams == ["a", "b"]
    (u,) = plan.unplaced
    assert u.decision.workload.team == "a"
    rows = sorted((r.subject, r.rhs) for r in plan.problem.rows if r.kind == "quota")
    assert rows == [("team_gpus[team=a]", 8), ("team_gpus[team=b]", 8)]
    assert [(q.label, q.part) for q in plan.quotas] == [
        ("team_gpus[team=a]", "team=a"),
        ("team_gpus[team=b]", "team=b"),
    ]


def test_the_third_job_is_unplaced_and_the_reason_names_the_part(tmp_path: Path) -> None:
    root = make_project(tmp_path, JOBS, policy=PER_TEAM)
    src = f"policies/policy.route:{line_of(root, 'limit gpus')}"
    r = CliRunner().invoke(cli, ["plan", str(root)])
    assert r.exit_code == 3, r.output
    assert "2 placed, 0 denied, 0 unrouted, 1 unplaced" in r.output
    doc = json.loads((root / "out" / "plan.json").read_text())
    (unplaced,) = doc["unplaced"]
    name = unplaced["workload"]
    assert name in ("a-1", "a-2")
    reason = f"quota team_gpus[team=a] ({src}) on gpus: 8 of 8 used, needs 8"
    assert len(unplaced["reasons"]) == 1 and unplaced["reasons"][0].startswith(reason)
    assert unplaced["fix"].startswith(
        f"quota team_gpus[team=a] ({src}) must allow 16 gpus, it allows 8"
    )

    e = CliRunner().invoke(cli, ["explain", name, str(root), "--format", "json"])
    assert e.exit_code == 0, e.output
    explained = json.loads(e.output)
    assert explained["status"] == "unplaced"
    assert explained["reasons"] == unplaced["reasons"] and explained["fix"] == unplaced["fix"]
    text = CliRunner().invoke(cli, ["explain", name, str(root)]).output
    assert f"  {reason}" in text
    assert f"Smallest change: quota team_gpus[team=a] ({src}) must allow 16 gpus" in text


def test_per_cluster_percentage_is_of_each_clusters_own_gpus(tmp_path: Path) -> None:
    wl = [job(f"j-{i}", team="t") for i in range(6)]
    # One 50% quota over both clusters: 24 of 48 GPUs, all on the cheaper cluster.
    plain = HALF.replace("  per cluster\n", "")
    plan = plan_of(make_project(tmp_path / "plain", wl, policy=CHEAP + plain, inventory=TWO_SIZES))
    assert by_cluster(plan) == {"big": 24}
    # Per cluster: half of big's 32 and half of small's 16.
    plan = plan_of(make_project(tmp_path / "per", wl, policy=CHEAP + HALF, inventory=TWO_SIZES))
    assert by_cluster(plan) == {"big": 16, "small": 8}
    assert [(q.label, q.amount, q.described) for q in plan.quotas] == [
        ("headroom[cluster=big]", 16, "gpus <= 50% (16 of 32)"),
        ("headroom[cluster=small]", 8, "gpus <= 50% (8 of 16)"),
    ]
    assert len(plan.unplaced) == 3
    # Reasons say what a percentage is of.
    reasons = [r for u in plan.unplaced for r in u.reasons]
    assert any("on gpus: 16 of 16 (50% of 32) used, needs 8" in r for r in reasons), reasons
    placed = next(p.workload.name for p in plan.placements if p.target.cluster == "small")
    r = CliRunner().invoke(cli, ["explain", placed, str(tmp_path / "per"), "--format", "json"])
    texts = [row["text"] for row in json.loads(r.stdout)["placement"]["rows"]]
    assert any(
        t.startswith("quota headroom[cluster=small] (")
        and t.endswith(" gpus: 8 of 8 (50% of 16) used (this workload 8)")
        for t in texts
    ), texts


def test_a_workload_key_percentage_is_of_all_the_on_targets(tmp_path: Path) -> None:
    policy = CHEAP + "quota q:\n  per team, cluster\n  limit gpus <= 25%\n"
    wl = [job("a-1", team="a"), job("b-1", team="b")]
    root = make_project(tmp_path, wl, policy=policy, inventory=TWO_SIZES)
    i = load_inputs(load_project(root))
    quotas = compile_quotas(i.policy, i.inventory, workloads=i.workloads)
    assert [(q.label, q.amount, sorted(q.targets)) for q in quotas] == [
        ("q[team=a, cluster=big]", 8, ["big/gpu"]),
        ("q[team=a, cluster=small]", 4, ["small/gpu"]),
        ("q[team=b, cluster=big]", 8, ["big/gpu"]),
        ("q[team=b, cluster=small]", 4, ["small/gpu"]),
    ]
    only_team = CHEAP + "quota q:\n  per team\n  limit gpus <= 25%\n"
    root = make_project(tmp_path / "team", wl, policy=only_team, inventory=TWO_SIZES)
    i = load_inputs(load_project(root))
    quotas = compile_quotas(i.policy, i.inventory, workloads=i.workloads)
    assert [(q.label, q.described) for q in quotas] == [
        ("q[team=a]", "gpus <= 25% (12 of 48)"),
        ("q[team=b]", "gpus <= 25% (12 of 48)"),
    ]


def test_workload_parts_come_from_the_members_and_a_missing_label_is_one_part(
    tmp_path: Path,
) -> None:
    policy = RULE + (
        'quota q:\n  for kind == "training"\n  per workload.labels.app\n  limit gpus <= 8\n'
    )
    wl = [
        job("x", labels={"app": "web"}),
        job("y"),
        job("z"),
        job("n", kind="batch", labels={"app": "db"}),
    ]  # not a member: no part of its own
    root = make_project(tmp_path, wl, policy=policy)
    i = load_inputs(load_project(root))
    quotas = compile_quotas(i.policy, i.inventory, workloads=i.workloads)
    assert [q.label for q in quotas] == [
        "q[workload.labels.app=web]",
        "q[workload.labels.app=none]",
    ]
    assert compile_quotas(i.policy, i.inventory) == []  # no workloads: no part is known
    (whole,) = compile_quotas(i.policy, i.inventory, workload_keys=False)
    assert whole.label == "q" and whole.amount == 8
    plan = plan_of(root)
    assert sorted(p.workload.name for p in plan.placements) == ["n", "x", "y"]


def test_workloads_of_different_teams_never_share_a_class(tmp_path: Path) -> None:
    wl = [job("a-1", team="a"), job("b-1", team="b")]
    for policy, classes in ((PLAIN, 1), (PER_TEAM, 2)):
        root = make_project(tmp_path / str(classes), wl, policy=policy)
        i = load_inputs(load_project(root))
        ev = Evaluator(i.policy, i.inventory)
        decisions = [ev.decide(w) for w in i.workloads]
        quotas = compile_quotas(i.policy, i.inventory, workloads=i.workloads)
        assert len(build_aggregate(decisions, ev.targets, quotas).groups) == classes


def test_verify_catches_a_plan_that_breaks_one_part(tmp_path: Path) -> None:
    plan = build_plan(load_project(make_project(tmp_path, JOBS, policy=PER_TEAM)))
    i = plan.inputs
    (u,) = plan.unplaced
    used: dict[str, int] = {}
    for p in plan.placements:
        used[p.target.id] = used.get(p.target.id, 0) + p.resources.gpus
    ev = Evaluator(i.policy, i.inventory)
    # Put the unplaced job of team a on a target with room: only team a's part is broken.
    cand = next(
        c for c in ev.decide(u.decision.workload).candidates if used.get(c.target.id, 0) + 8 <= 16
    )
    taken = {n for p in plan.placements for n in p.nodes}
    sid = cand.target.node_sets[0]
    free = next(i for i in range(cand.target.target.capacity_nodes) if (sid, i) not in taken)
    extra = Placement(
        u.decision.workload,
        cand.target,
        "train",
        "",
        cand.rank,
        cand.options,
        cand.resources,
        nodes=[(sid, free)],
    )
    problems = verify_plan(i.policy, i.inventory, i.workloads, [*plan.placements, extra])
    source = plan.quotas[0].source
    assert problems == [f"quota team_gpus[team=a] ({source}): gpus 16 > 8"]


def test_plan_is_byte_identical_twice(tmp_path: Path) -> None:
    policy = CHEAP + HALF + "\nquota team_gpus:\n  per team, cluster\n  limit gpus <= 8\n"
    wl = [job(f"{team}-{i}", team=team) for team in ("a", "b", "c") for i in range(3)]
    root = make_project(tmp_path, wl, policy=policy, inventory=TWO_SIZES)
    first = plan_json_twice(root, tmp_path)
    doc = json.loads(first)
    # Each team may have 8 on each cluster; the headroom leaves 16 on big, 8 on small.
    assert len(doc["placements"]) == 3 and len(doc["unplaced"]) == 6


def test_check_reads_per_quotas(tmp_path: Path) -> None:
    policy = (
        CHEAP
        + HALF
        + """
quota loose:
  per cluster
  limit gpus <= 64
quota by_team:
  for team == "a"
  per team
  limit gpus <= 8
"""
    )
    root = make_project(tmp_path, JOBS, policy=policy, inventory=TWO_SIZES)
    r = CliRunner().invoke(cli, ["check", str(root), "--format", "json"])
    assert r.exit_code == 0, r.output
    findings = [f for f in json.loads(r.output)["findings"] if f["code"] == "quota-never-binds"]
    assert [f["message"] for f in findings] == [
        "quota `loose` never binds: in each of its 2 parts, gpus <= 64 is at least what the "
        "part's targets have"
    ]
    assert "unused" not in r.output


def test_router_test_plans_a_case_against_its_own_part(tmp_path: Path) -> None:
    root = make_project(tmp_path, JOBS, policy=PER_TEAM)
    (root / "policies" / "tests").mkdir()
    (root / "policies" / "tests" / "cases.yaml").write_text("""\
- name: eight gpus fit a team's part
  workload: {kind: training, team: a, gpus: 8}
  expect: {backend: slurm}
- name: sixteen do not
  workload: {kind: training, team: a, gpus: 16, nodes: 2}
  expect: {unplaced: true}
""")
    r = CliRunner().invoke(cli, ["test", str(root)])
    assert r.exit_code == 0, r.output


def test_a_percentage_is_exact(tmp_path: Path) -> None:
    # 29% of 100 GPUs is 29, not the 28 a float product gives (0.29 * 100 < 29).
    inventory = platform(slurm(target("gpu", 25, 4, 32, "256GiB", max_time="24h"), name="c"))
    policy = RULE + "quota share: limit gpus <= 29%\nquota cpu_share: limit cpus <= 57%\n"
    root = make_project(tmp_path, [job("a", team="t")], policy=policy, inventory=inventory)
    i = load_inputs(load_project(root))
    assert [(q.amount, q.described) for q in compile_quotas(i.policy, i.inventory)] == [
        (29, "gpus <= 29% (29 of 100)"),
        (456, "cpus <= 57% (456 of 800)"),
    ]
    assert [q.share for q in compile_quotas(i.policy, i.inventory)] == ["29% of 100", "57% of 800"]
