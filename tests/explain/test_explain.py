"""`router explain`: rules tried, candidates, binding constraints, minimal reasons and fixes."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from router.cli.main import cli
from router.config import load_project
from router.explain.blocking import PlanState, _minimal_core, blocking
from router.plan.build import build_plan
from router.plan.document import plan_document
from tests.helpers import job, make_project

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ml-platform"


def explain(root: Path, name: str) -> dict[str, Any]:
    r = CliRunner().invoke(cli, ["explain", name, str(root), "--format", "json"])
    assert r.exit_code == 0, r.output
    doc: dict[str, Any] = json.loads(r.output)
    return doc


def text(root: Path, name: str) -> str:
    r = CliRunner().invoke(cli, ["explain", name, str(root)])
    assert r.exit_code == 0, r.output
    return r.output


def line_of(root: Path, needle: str, file: str = "policies/policy.route") -> int:
    lines = (root / file).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if needle in line)


QUOTA_POLICY = """
policy q
rule big: when kind == "training" and gpus >= 8 → slurm exclusive
rule rest: route any prefer lower cost
quota team_a:
  for team == "a"
  limit gpus <= 16
"""


def test_quota_blocked_names_the_quota_line_and_numbers(tmp_path: Path) -> None:
    wl = [
        job("a1", team="a", priority="high"),
        job("a2", team="a", priority="high"),
        job("a3", team="a", priority="low"),
    ]
    root = make_project(tmp_path, wl, policy=QUOTA_POLICY)
    doc = explain(root, "a3")
    assert doc["status"] == "unplaced"
    src = f"policies/policy.route:{line_of(root, 'limit gpus <= 16')}"
    assert doc["reasons"] == [
        f"quota team_a ({src}) on gpus: 16 of 16 used, needs 8; blocks all 2 candidates"
    ]
    assert doc["fix"].startswith(f"quota team_a ({src}) must allow 24 gpus, it allows 16")
    # The optimiser kept the high-priority work: displacing it would cost more than a3 adds.
    assert doc["displace"]["their_work"] > doc["displace"]["its_work"]
    # plan.json carries exactly the same reasons.
    plan = build_plan(load_project(root))
    unplaced = {u["workload"]: u["reasons"] for u in plan_document(plan)["unplaced"]}
    assert unplaced == {"a3": doc["reasons"]}


CAPACITY_POLICY = """
policy c
rule big: when gpus >= 8 → slurm exclusive where gpu_type == "h100"
rule rest: route any
"""


def test_capacity_blocked_names_the_target_and_nodes_needed(tmp_path: Path) -> None:
    wl = [job("h1", priority="high"), job("h2", priority="high"), job("h3", priority="low")]
    root = make_project(tmp_path, wl, policy=CAPACITY_POLICY)
    doc = explain(root, "h3")
    assert doc["status"] == "unplaced"
    where = f"policies/policy.route:{line_of(root, 'rule big')}"
    assert doc["reasons"] == [
        "hpc/h100: needs 1 whole node, 0 of its 2 nodes are idle",
        f"not a candidate: 2 targets (hpc/a100, hpc/cpu): excluded by the route's `where` "
        # hpc/cpu has no gpu_type: said so, not as `none == "h100"`.
        f'({where}): gpu_type == "h100": "a100" == "h100" is false, gpu_type is not set',
    ]
    assert doc["fix"] == "hpc/h100 needs 1 more node (has 2) (then it fits on hpc/h100)"
    assert "would displace h" in doc["displace"]["text"]
    assert "(priority high)" in doc["displace"]["text"]


def test_placed_lists_rules_and_the_binding_constraint(tmp_path: Path) -> None:
    wl = [job("h1", priority="high"), job("h2", priority="high"), job("h3", priority="low")]
    root = make_project(tmp_path, wl, policy=CAPACITY_POLICY)
    doc = explain(root, "h1")
    assert doc["status"] == "placed"
    assert doc["rules"] == [
        {"rule": "big", "source": "policies/policy.route:2", "matched": True, "why": []}
    ]
    p = doc["placement"]
    assert p["target"] == "hpc/h100" and p["got_first_choice"]
    assert any(b.startswith("capacity hpc/h100 gpus: 16 of 16 used") for b in p["binding"])
    assert any(b.startswith("nodes hpc/h100 nodes: 2 of 2 used") for b in p["binding"])
    excluded = {e["target"]: e for e in doc["excluded"]}
    assert excluded["hpc/a100"]["source"] == "policies/policy.route:2"
    assert excluded["hpc/a100"]["why"] == ['gpu_type == "h100": "a100" == "h100" is false']
    assert excluded["hpc/cpu"]["why"] == ['gpu_type == "h100": gpu_type is not set']
    out = text(root, "h1")
    assert "big (policies/policy.route:2): matched" in out
    assert "Binding constraints (used == capacity):" in out


def test_placed_off_its_first_choice_says_what_took_it(tmp_path: Path) -> None:
    policy = """
    policy p
    rule big: when gpus >= 8 → slurm exclusive where gpus_per_node >= 8 prefer lower cost
    """
    wl = [job("a", priority="critical"), job("b", priority="critical"), job("c", priority="low")]
    root = make_project(tmp_path, wl, policy=policy)
    doc = explain(root, "c")
    p = doc["placement"]
    # a100 is cheaper, so it is everyone's first choice; the critical jobs took both nodes.
    assert p["target"] == "hpc/h100" and not p["got_first_choice"]
    assert p["first_choice"] == "hpc/a100"
    blocked = " ".join(p["first_choice_blocked"])
    assert "a (priority critical" in blocked and "b (priority critical" in blocked
    # First what the nodes say (2 nodes, both taken whole), then who holds them.
    assert p["first_choice_blocked"][0] == "hpc/a100: needs 1 whole node, 0 of its 2 nodes are idle"
    # And where it went: a node of h100, whole.
    assert p["nodes"] == ["hpc/h100 node 0: whole, nothing left there for other work"]


def test_shape_excluded_groups_identical_reasons(tmp_path: Path) -> None:
    policy = """
    policy s
    rule rest: route any
    """
    root = make_project(tmp_path, [job("x", gpu_type="b200")], policy=policy)
    doc = explain(root, "x")
    assert doc["status"] == "unplaced"
    assert "2 targets (hpc/cpu, k8s/cpu): has no GPUs" in doc["reasons"]
    assert (
        "3 targets (hpc/a100, hpc/h100, k8s/l4): has a100, h100, l4 GPUs, "
        "the workload asks for b200"
    ) in doc["reasons"]
    assert len(doc["reasons"]) == 2
    assert doc["fix"] is None


def test_unrouted_shows_the_failing_conjunct(tmp_path: Path) -> None:
    policy = """
    policy u
    let big_job = 8
    rule big: when kind == "training" and gpus >= big_job → slurm exclusive
    rule serve: when kind == "inference" → kubernetes
    """
    root = make_project(tmp_path, [job("small", gpus=4)], policy=policy)
    doc = explain(root, "small")
    assert doc["status"] == "unrouted"
    assert doc["rules"][0]["why"] == ["gpus >= big_job: 4 >= 8 is false"]
    assert doc["rules"][1]["why"] == ['kind == "inference": "training" == "inference" is false']
    assert "gpus >= big_job: 4 >= 8 is false" in text(root, "small")


def test_denied_names_rule_line_and_message(tmp_path: Path) -> None:
    policy = """
    policy d
    deny too_big: when gpus > 64 because "at most 64 GPUs"
    rule rest: route any
    """
    root = make_project(tmp_path, [job("huge", gpus=128)], policy=policy)
    doc = explain(root, "huge")
    assert doc["status"] == "denied"
    assert doc["denied"] == {
        "rule": "too_big",
        "source": "policies/policy.route:2",
        "message": "at most 64 GPUs",
    }


def test_unknown_workload_exits_1_with_did_you_mean(tmp_path: Path) -> None:
    root = make_project(tmp_path, [job("trainer")])
    r = CliRunner().invoke(cli, ["explain", "trainr", str(root)])
    assert r.exit_code == 1
    assert 'did you mean "trainer"?' in r.output


@pytest.fixture(scope="module")
def example() -> dict[str, Any]:
    return {name: explain(EXAMPLE, name) for name in ("diffusion-ablation", "llm-405b-pretrain")}


def test_example_diffusion_ablation(example: dict[str, Any]) -> None:
    doc = example["diffusion-ablation"]
    line = line_of(EXAMPLE, "limit gpus <= 64", "policies/platform.route")
    src = f"policies/platform.route:{line}"
    # research already holds 58 of its 64 GPUs: the quota alone blocks all three targets.
    where = line_of(EXAMPLE, "where gpu_type in", "policies/platform.route")
    assert doc["reasons"] == [
        f"quota research_gpus ({src}) on gpus: 58 of 64 used, needs 16; blocks all 3 candidates",
        "not a candidate: 2 targets (hpc-east/cpu, hpc-west/cpu): excluded by the route's "
        f'`where` (policies/platform.route:{where}): gpu_type in ["h100", "a100"]: gpu_type '
        'is not set; "ib" in features: "ib" in ["avx512", "lustre"], "ib" in [] are false',
    ]
    assert doc["fix"].startswith(f"quota research_gpus ({src}) must allow 74 gpus, it allows 64")
    # a100-small would also be out of room, which the per-target detail shows: its 4 whole
    # nodes, which the nodes decide (one of the two without an exclusive job holds other work).
    assert doc["per_target"]["hpc-west/a100-small"][0] == (
        "hpc-west/a100-small: needs 4 whole nodes, 1 of its 8 nodes is idle"
    )


def test_example_llm_405b(example: dict[str, Any]) -> None:
    doc = example["llm-405b-pretrain"]
    assert "hpc-east/gpu-h100: 32 nodes < 64 needed" in doc["reasons"]
    assert doc["fix"] == (
        "hpc-east/gpu-h100 needs 32 more nodes (has 32, the workload needs 64 there)"
    )


def test_example_plan_json_has_the_same_reasons(example: dict[str, Any]) -> None:
    doc = plan_document(build_plan(load_project(EXAMPLE)))
    unplaced = {u["workload"]: u["reasons"] for u in doc["unplaced"]}
    for name, exp in example.items():
        assert unplaced[name] == exp["reasons"]


def test_cores_are_minimal_and_sufficient_on_random_platforms(tmp_path: Path) -> None:
    """Every candidate is blocked by some core reason, and dropping any reason frees one."""
    rng = random.Random(5)
    checked = 0
    for case in range(12):
        teams = ["a", "b"]
        wl = [
            job(
                f"w{i}",
                team=rng.choice(teams),
                gpus=rng.choice([1, 4, 8, 16]),
                priority=rng.choice(["low", "normal", "high"]),
            )
            for i in range(8)
        ]
        policy = QUOTA_POLICY.replace("16", str(rng.choice([8, 16, 24])))
        plan = build_plan(load_project(make_project(tmp_path / str(case), wl, policy=policy)))
        state = PlanState(plan.problem, plan.solve.assignment)
        for u in plan.unplaced:
            if not u.decision.candidates:
                continue
            b = blocking(state, state.index[u.decision.workload.name])
            assert not b.fits_alone and b.core
            for v in b.candidates:
                assert any(k in b.overflows[v] for k in b.core)
            # The solver path too (blocking() skips it when one reason blocks everything).
            cores = [b.core, _minimal_core(state, b.candidates, b.keys, b.overflows)]
            for core in cores:
                for v in b.candidates:
                    assert any(k in b.overflows[v] for k in core)
                for k in core:
                    rest = [c for c in core if c != k]
                    assert any(not any(c in b.overflows[v] for c in rest) for v in b.candidates)
            checked += 1
    assert checked >= 5


def test_two_full_targets_are_both_in_the_core(tmp_path: Path) -> None:
    # Five one-node exclusive jobs, four nodes of 8 GPUs (2 h100 + 2 a100): the low one waits,
    # and neither target alone explains it.
    wl = [job(f"j{i}", priority="high") for i in range(4)] + [job("j4", priority="low")]
    policy = "policy t\nrule big: when gpus >= 8 → slurm exclusive\n"
    doc = explain(make_project(tmp_path, wl, policy=policy), "j4")
    assert [r.split(": ")[0] for r in doc["reasons"]] == ["hpc/a100", "hpc/h100"]
    assert doc["fix"].endswith("needs 1 more node (has 2) (then it fits on hpc/a100)")
