"""`router check` and `router test` know a partition's AllowAccounts / AllowQos / AllowGroups
and MaxNodes as the shape check (evaluate/shape.py) does: a route check calls feasible has a
workload the plan places, one it calls dead places nothing, and `expect placed` is proven
exactly when the evaluator places every workload of the `for`."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path
from typing import Any

import pytest

from router.assure.analysis import analyze
from router.assure.prove import prove_checks, runnable, violation
from router.evaluate.evaluate import Evaluator
from router.language import check_policy, load_policy, parse_files
from router.models import Inventory, Workload

NODE = {"gpus_per_node": 8, "gpu_type": "h100", "cpus_per_node": 96, "memory_per_node": "1TiB"}


def inventory(**limits: Any) -> Inventory:
    part = {"name": "gated", "nodes": 4, "max_time": "unlimited", **NODE, **limits}
    return Inventory.model_validate(
        {"clusters": [{"name": "hpc", "backend": "slurm", "partitions": [part]}]}
    )


GATED = {
    "allow_groups": ["ml"],  # a team the policies below never name
    "allow_qos": ["normal"],
    "qos": "normal",
    "allow_accounts": ["ml"],
    "account": "ml",
    "max_nodes_per_job": 1,
}


def policy_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "p.route"
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def dead_routes(tmp_path: Path, text: str, inv: Inventory) -> list[str]:
    path = policy_file(tmp_path, text)
    found = analyze(check_policy(parse_files([path])), inv, parse_files([path]))
    return [f.message for f in found if f.code == "route-never-fits"]


def sample(rng: random.Random) -> Workload:
    doc: dict[str, Any] = {"name": "s", "kind": rng.choice(["training", "training", "batch"])}
    doc["gpus"] = rng.choice([0, 1, 4, 8, 9, 16])
    doc["team"] = rng.choice(["default", "ml", "web"])
    if rng.random() < 0.3:
        doc["account"] = rng.choice(["ml", "physics"])
    return Workload.model_validate(runnable(doc))


@pytest.mark.parametrize(
    ("route", "dead"),
    [
        ("route slurm", False),
        ('route slurm with qos = "high"', True),  # AllowQos refuses it
        ('route slurm with account = "physics"', True),  # AllowAccounts refuses it
        ('route slurm with account = "ml", qos = "normal"', False),
    ],
)
def test_check_and_plan_agree_on_dead_routes(tmp_path: Path, route: str, dead: bool) -> None:
    inv = inventory(**GATED)
    text = f"rule r: {route}\n"
    said = dead_routes(tmp_path, text, inv)
    assert bool(said) is dead, said
    ev = Evaluator(load_policy(policy_file(tmp_path, text)), inv)
    rng = random.Random(3)
    placed = [w for w in (sample(rng) for _ in range(120)) if ev.decide(w).candidates]
    assert bool(placed) is not dead
    # Only the team AllowGroups names is ever placed, on one node (MaxNodes=1).
    assert all(w.team == "ml" and w.gpus <= 8 for w in placed)


def test_an_allow_groups_team_the_policy_never_names_is_in_the_space(tmp_path: Path) -> None:
    # Without the partition's groups in the team domain no workload of the space could be
    # placed here, and check would call the route dead.
    assert dead_routes(tmp_path, "rule r: route slurm where workload.team in allow_groups\n",
                       inventory(**GATED)) == []  # fmt: skip


# One-node, small, untyped-or-h100 training jobs: what the partition's nodes hold.
FIT = (
    'kind == "training" and not service and nodes == 1 and gpus_per_node == gpus'
    ' and cpus <= 32 and memory <= 64GiB and gpu_type in ["any", "h100"]'
)
PLACED = f"""
rule r: route slurm
check any_small: for {FIT} and gpus <= 8 expect placed
check small_ml: for {FIT} and team == "ml" and gpus <= 8 expect placed
check two_nodes_ml: for {FIT} and team == "ml" and gpus in [8, 16] expect placed
check cpu_ml: for {FIT} and team == "ml" and gpus == 0 expect placed
"""


@pytest.mark.parametrize(
    ("limits", "proven"),
    [
        (GATED, {"small_ml", "cpu_ml"}),
        ({**GATED, "max_nodes_per_job": 2}, {"small_ml", "two_nodes_ml", "cpu_ml"}),
        ({**GATED, "allow_qos": ["high"]}, set()),
        ({**GATED, "account": None}, set()),  # no account stated: AllowAccounts refuses
        ({}, {"any_small", "small_ml", "two_nodes_ml", "cpu_ml"}),
    ],
)
def test_expect_placed_agrees_with_the_shape_check(
    tmp_path: Path, limits: dict[str, Any], proven: set[str]
) -> None:
    inv = inventory(**limits)
    policy = load_policy(policy_file(tmp_path, PLACED))
    results = {r.name: r for r in prove_checks(policy, inv)}
    assert {n for n, r in results.items() if r.status == "proven"} == proven
    ev = Evaluator(policy, inv)
    rng = random.Random(5)
    samples = [sample(rng) for _ in range(200)]
    samples = [w for w in samples if w.account is None]  # the space's workloads state none
    for check in policy.checks:
        r = results[check.name]
        broken = [w for w in samples if violation(ev, check, w) is not None]
        if r.status == "proven":
            assert not broken, (check.name, broken[:1])
        else:
            assert r.status == "refuted" and r.counterexample is not None, r
            w = Workload.model_validate(runnable(r.counterexample))
            assert violation(ev, check, w) is not None, (check.name, r.counterexample)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"team": "ml", "account": "ml"}, {"team": "web", "account": "ml"}),
        ({"team": "ml", "account": "ml"}, {"team": "ml", "account": "physics"}),
    ],
)
def test_the_decision_cache_tells_teams_and_accounts_apart(
    tmp_path: Path, first: dict[str, Any], second: dict[str, Any]
) -> None:
    # The evaluator reuses a decision for workloads of one routing signature; the access
    # lists read team and account, so two workloads differing only there differ in outcome.
    ev = Evaluator(load_policy(policy_file(tmp_path, "rule r: route slurm\n")), inventory(**GATED))
    a, b = (Workload.model_validate(runnable({"name": "w", **f})) for f in (first, second))
    assert [c.target.id for c in ev.decide(a).candidates] == ["hpc/gated"]
    assert ev.decide(b).candidates == []
    assert "the partition allows" in ev.decide(b).excluded[0].reason
