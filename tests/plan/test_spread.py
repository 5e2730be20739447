"""`spread` in plans: groups split across an attribute, unplaced members explained, verified."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from router.cli.main import cli
from router.config import load_project
from router.evaluate.evaluate import Evaluator
from router.evaluate.quota import compile_quotas
from router.evaluate.spread import compile_spreads
from router.models.placement import Placement
from router.plan.build import Plan, build_plan
from router.plan.verify import verify_plan
from router.solve.problem import build_problem
from tests.helpers import make_project, plan_json_twice

# Two Kubernetes clusters with the same pool; k8s-a is cheaper, so `prefer lower cost`
# alone puts every replica there.
INVENTORY: dict[str, Any] = {
    "clusters": [
        {
            "name": name,
            "backend": "kubernetes",
            "node_pools": [
                {
                    "name": "l4",
                    "nodes": 2,
                    "gpus_per_node": 4,
                    "gpu_type": "l4",
                    "cpus_per_node": 48,
                    "memory_per_node": "192GiB",
                    "cost_per_gpu_hour": cost,
                    "labels": labels,
                }
            ],
        }
        for name, cost, labels in [
            ("k8s-a", 0.8, {"zone": "z1"}),
            ("k8s-b", 1.2, {"zone": "z2"}),
            ("k8s-c", 1.6, {}),
        ]
    ]
}
TWO_CLUSTERS: dict[str, Any] = {"clusters": INVENTORY["clusters"][:2]}

RULE = 'rule serve: when kind == "inference" route kubernetes prefer lower cost\n'
SPREAD = """
spread web_replicas:
  for kind == "inference"
  by labels.app
  across cluster
"""


def replica(name: str, app: str | None = "web", **fields: Any) -> dict[str, Any]:
    w: dict[str, Any] = {
        "name": name,
        "kind": "inference",
        "gpus": 1,
        "gpu_type": "l4",
        "cpus": 4,
        "memory": "16GiB",
        "image": "ghcr.io/x/web:1",
        "replicas": {"min": 1, "max": 1},
    }
    if app is not None:
        w["labels"] = {"app": app}
    w.update(fields)
    return w


def plan_of(root: Path) -> Plan:
    plan = build_plan(load_project(root))
    i = plan.inputs
    assert verify_plan(i.policy, i.inventory, i.workloads, plan.placements) == []
    return plan


def per_cluster(plan: Plan) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in plan.placements:
        out.setdefault(p.target.cluster, []).append(p.workload.name)
    return {k: sorted(v) for k, v in sorted(out.items())}


def line_of(root: Path, needle: str) -> int:
    lines = (root / "policies" / "policy.route").read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if needle in line)


WEB4 = [replica(f"web-{i}") for i in range(4)]


def test_without_spread_every_replica_goes_to_the_cheaper_cluster(tmp_path: Path) -> None:
    plan = plan_of(make_project(tmp_path, WEB4, policy=RULE, inventory=TWO_CLUSTERS))
    assert per_cluster(plan) == {"k8s-a": ["web-0", "web-1", "web-2", "web-3"]}


def test_spread_across_cluster_splits_evenly(tmp_path: Path) -> None:
    plan = plan_of(make_project(tmp_path, WEB4, policy=RULE + SPREAD, inventory=TWO_CLUSTERS))
    assert {c: len(ws) for c, ws in per_cluster(plan).items()} == {"k8s-a": 2, "k8s-b": 2}
    assert not plan.unplaced
    rows = [r for r in plan.problem.rows if r.kind == "spread"]
    assert {(r.subject, r.resource, r.rhs) for r in rows} == {
        ("web_replicas", "app=web on cluster=k8s-a", 2),
        ("web_replicas", "app=web on cluster=k8s-b", 2),
    }
    assert all(r.source.endswith(f"policy.route:{line_of(tmp_path, 'spread web')}:1") for r in rows)


def test_groups_are_separate_and_for_and_missing_values_are_left_out(tmp_path: Path) -> None:
    wl = [
        replica("api-0", "api"),
        replica("api-1", "api"),
        *WEB4[:2],
        replica("solo", "solo"),  # a group of one: nothing to spread
        replica("x-0", None),
        replica("x-1", None),  # no `app` label: in no group
        replica("t-0", "web", kind="batch", gpus=0),
    ]  # not in the spread's `for`
    policy = RULE + "rule rest: route kubernetes prefer lower cost\n" + SPREAD
    plan = plan_of(make_project(tmp_path, wl, policy=policy, inventory=TWO_CLUSTERS))
    assert per_cluster(plan) == {
        "k8s-a": ["api-0", "solo", "t-0", "web-0", "x-0", "x-1"],
        "k8s-b": ["api-1", "web-1"],
    }


def test_default_max_is_an_even_share_over_the_values(tmp_path: Path) -> None:
    # 5 members over 3 clusters: at most ceil(5 / 3) = 2 on each.
    wl = [replica(f"web-{i}") for i in range(5)]
    plan = plan_of(make_project(tmp_path, wl, policy=RULE + SPREAD, inventory=INVENTORY))
    assert {c: len(ws) for c, ws in per_cluster(plan).items()} == {
        "k8s-a": 2,
        "k8s-b": 2,
        "k8s-c": 1,
    }


def test_across_a_label_counts_a_target_without_it_as_one_value(tmp_path: Path) -> None:
    # zones z1, z2 and "none" (k8s-c has no zone label): 3 values, max 1 each.
    policy = RULE + "spread by_zone: by labels.app across labels.zone max 1\n"
    wl = [replica(f"web-{i}") for i in range(4)]
    plan = plan_of(make_project(tmp_path, wl, policy=policy, inventory=INVENTORY))
    assert {c: len(ws) for c, ws in per_cluster(plan).items()} == {
        "k8s-a": 1,
        "k8s-b": 1,
        "k8s-c": 1,
    }
    (u,) = plan.unplaced
    assert any("on labels.zone none" in r for r in u.reasons)


MAX1 = SPREAD + "  max 1\n"


def test_max_one_leaves_the_third_unplaced_and_names_the_spread(tmp_path: Path) -> None:
    wl = [replica(f"web-{i}") for i in range(3)]
    root = make_project(tmp_path, wl, policy=RULE + MAX1, inventory=TWO_CLUSTERS)
    src = f"policies/policy.route:{line_of(root, 'spread web_replicas')}"
    r = CliRunner().invoke(cli, ["plan", str(root)])
    assert r.exit_code == 3, r.output
    assert "2 placed, 0 denied, 0 unrouted, 1 unplaced" in r.output
    assert f"spread web_replicas ({src}): app=web already has 1 of at most 1 on cluster" in r.output
    plan_json = json.loads((root / "out" / "plan.json").read_text())
    (unplaced,) = plan_json["unplaced"]
    name = unplaced["workload"]
    expected = [
        f"spread web_replicas ({src}): app=web already has 1 of at most 1 on cluster {c}"
        for c in ("k8s-a", "k8s-b")
    ]
    assert unplaced["reasons"] == expected
    assert unplaced["fix"] == (
        f"spread web_replicas ({src}) must allow 2 per cluster, "
        "it allows 1 (then it fits on k8s-a/l4)"
    )

    e = CliRunner().invoke(cli, ["explain", name, str(root), "--format", "json"])
    assert e.exit_code == 0, e.output
    doc = json.loads(e.output)
    assert doc["status"] == "unplaced"
    assert doc["reasons"] == expected and doc["fix"] == unplaced["fix"]
    text = CliRunner().invoke(cli, ["explain", name, str(root)]).output
    assert f"  {expected[0]}\n" in text
    assert "Smallest change: spread web_replicas" in text

    placed = next(p["workload"] for p in plan_json["placements"])
    doc = json.loads(
        CliRunner().invoke(cli, ["explain", placed, str(root), "--format", "json"]).output
    )
    assert doc["placement"]["binding"] == [
        f"spread web_replicas ({src}): app=web has 1 of at most 1 on cluster "
        f"{doc['placement']['target'].split('/')[0]}, this workload included"
    ]


def test_plan_is_byte_identical_twice(tmp_path: Path) -> None:
    wl = [replica(f"web-{i}") for i in range(3)] + [replica(f"api-{i}", "api") for i in range(5)]
    root = make_project(tmp_path, wl, policy=RULE + MAX1, inventory=INVENTORY)
    first = plan_json_twice(root, tmp_path)
    # max 1 over 3 clusters: 3 of the 5 api replicas, all 3 web ones.
    doc = json.loads(first)
    assert len(doc["placements"]) == 6 and len(doc["unplaced"]) == 2


def test_verify_catches_a_plan_that_breaks_a_spread(tmp_path: Path) -> None:
    root = make_project(tmp_path, WEB4, policy=RULE + SPREAD, inventory=TWO_CLUSTERS)
    plan = build_plan(load_project(root))
    i = plan.inputs
    a = next(p for p in plan.placements if p.target.cluster == "k8s-a")
    # Where each replica sits when all four are on k8s-a (the plan without the spread).
    alone = build_plan(
        load_project(make_project(tmp_path / "alone", WEB4, policy=RULE, inventory=TWO_CLUSTERS))
    )
    on = {p.workload.name: p.nodes for p in alone.placements}
    crowded = [
        Placement(
            p.workload,
            a.target,
            p.rule,
            p.rule_source,
            p.rank,
            p.options,
            p.resources,
            nodes=on[p.workload.name],
        )
        for p in plan.placements
    ]
    problems = verify_plan(i.policy, i.inventory, i.workloads, crowded)
    assert problems == [
        f"spread web_replicas ({plan.spreads[0].source}): app=web has 4 > 2 on cluster k8s-a"
    ]


def test_build_problem_without_spreads_keeps_working(tmp_path: Path) -> None:
    # Callers that do not pass `spreads=` get the model without spread rows.
    root = make_project(tmp_path, WEB4, policy=RULE + SPREAD, inventory=TWO_CLUSTERS)
    i = build_plan(load_project(root)).inputs
    ev = Evaluator(i.policy, i.inventory)
    decisions = [ev.decide(w) for w in i.workloads]
    quotas = compile_quotas(i.policy, i.inventory)
    plain = build_problem(decisions, ev.targets, quotas)
    spread = build_problem(
        decisions, ev.targets, quotas, spreads=compile_spreads(i.policy, i.inventory)
    )
    assert not [r for r in plain.rows if r.kind == "spread"]
    assert len([r for r in spread.rows if r.kind == "spread"]) == 2


def test_check_and_test_commands_accept_spread(tmp_path: Path) -> None:
    policy = (
        RULE
        + MAX1
        + """
let most = 2
spread teams: by team across target max most
check serve_on_kubernetes:
  for kind == "inference"
  expect backend == "kubernetes"
"""
    )
    root = make_project(tmp_path, WEB4, policy=policy, inventory=TWO_CLUSTERS)
    r = CliRunner().invoke(cli, ["check", str(root)])
    assert r.exit_code == 0, r.output
    assert "unused-constant" not in r.output  # `most` is used by the spread's `max`
    r = CliRunner().invoke(cli, ["test", str(root)])
    assert r.exit_code == 0, r.output
    assert "PROVEN" in r.output


def test_check_counts_spreads(tmp_path: Path) -> None:
    policy = "rule all: route any\nspread apps: by labels.app across cluster\n"
    root = make_project(tmp_path, WEB4, policy=policy, inventory=TWO_CLUSTERS)
    r = CliRunner().invoke(cli, ["check", str(root)])
    assert r.exit_code == 0, r.output
    assert r.output.startswith("ok: 1 rules, 0 deny rules, 0 quotas, 1 spreads, 0 checks;")


def test_check_warns_about_a_spread_across_an_attribute_no_target_has(tmp_path: Path) -> None:
    policy = "rule all: route any\nspread apps: by labels.app across labels.rack max 1\n"
    root = make_project(tmp_path, WEB4, policy=policy, inventory=TWO_CLUSTERS)
    r = CliRunner().invoke(cli, ["check", str(root)])
    assert r.exit_code == 0, r.output
    assert (
        "warning: spread `apps`: no target has `labels.rack`, so all targets count as one "
        "value and a group gets at most 1 placed in all"
    ) in r.output
    assert "policy.route:2:35" in r.output
