"""Property-based tests with router.testing's strategies (bounded: small example counts)."""

from __future__ import annotations

import contextlib
import itertools
import tempfile
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from router.errors import RouterError, Span
from router.language import check_policy
from router.language.fmt import format_policy_file
from router.language.parser import parse_text
from router.testing import grammar_texts, platforms, policies, workload_dicts

pytestmark = pytest.mark.slow
FAST = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ml-platform"


def _shape(node: Any) -> Any:
    """A node without spans, source text or comments, for comparing trees."""
    if isinstance(node, Span):
        return None
    if is_dataclass(node) and not isinstance(node, type):
        skip = {"span", "text", "comments", "path", "backend_span", "resource_span", "arg_spans"}
        return (
            type(node).__name__,
            {f.name: _shape(getattr(node, f.name)) for f in fields(node) if f.name not in skip},
        )
    if isinstance(node, list):
        return [_shape(x) for x in node]
    if isinstance(node, dict):
        return {k: _shape(v) for k, v in node.items()}
    return node


@FAST
@given(st.one_of(grammar_texts(), policies(), st.text(max_size=200)))
def test_parser_never_crashes(text: str) -> None:
    with contextlib.suppress(RouterError):  # a user error with a location, never another
        check_policy_text(text)


def check_policy_text(text: str) -> None:
    from router.language.ast import Policy

    pf = parse_text(text, "gen.route")
    check_policy(Policy(pf.name, [pf], **_statements(pf)))


def _statements(pf: Any) -> dict[str, list[Any]]:
    from router.language import ast

    kinds = {
        "lets": ast.Let,
        "denies": ast.Deny,
        "rules": ast.Rule,
        "quotas": ast.Quota,
        "checks": ast.Check,
    }
    return {k: [s for s in pf.statements if isinstance(s, t)] for k, t in kinds.items()}


@FAST
@given(policies())
def test_generated_policies_are_valid_and_fmt_round_trips(text: str) -> None:
    check_policy_text(text)
    once = format_policy_file(parse_text(text, "a.route"), text)
    twice = format_policy_file(parse_text(once, "a.route"), once)
    assert twice == once
    assert _shape(parse_text(once, "a.route").statements) == _shape(
        parse_text(text, "a.route").statements
    )


def _plan(platform: dict[str, Any]) -> Any:
    from router.config import load_project
    from router.plan.build import build_plan
    from tests.helpers import make_project

    with tempfile.TemporaryDirectory() as tmp:
        root = make_project(
            Path(tmp),
            platform["workloads"],
            policy=platform["policy"],
            inventory=platform["inventory"],
        )
        return build_plan(load_project(root))


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(platforms(max_workloads=6, max_targets=3))
def test_every_plan_passes_the_independent_checker(platform: dict[str, Any]) -> None:
    from router.plan.verify import verify_plan

    plan = _plan(platform)
    i = plan.inputs
    assert verify_plan(i.policy, i.inventory, i.workloads, plan.placements) == []


def _brute_force(problem: Any) -> int:
    """The best level-1 objective over every assignment (each workload: none or a choice)."""
    level = {v: c for c, v in problem.levels[0].terms}
    best = 0
    for pick in itertools.product(*[[None, *ch] for ch in problem.choices]):
        x = {v for v in pick if v is not None}
        if all(sum(c for c, v in row.terms if v in x) <= row.rhs for row in problem.rows):
            best = max(best, sum(level.get(v, 0) for v in x))
    return best


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(platforms(max_workloads=6, max_targets=3))
def test_objective_equals_brute_force(platform: dict[str, Any]) -> None:
    plan = _plan(platform)
    if not plan.problem.choices:
        return
    assert plan.solve.objective == _brute_force(plan.problem)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(policies(), st.lists(workload_dicts(), max_size=20))
def test_analysis_agrees_with_sampling(text: str, samples: list[dict[str, Any]]) -> None:
    """No sampled workload is claimed by a rule `router check` proves unreachable, and each
    such rule's witness matches its `when` yet is decided elsewhere."""
    from router.assure.analysis import analyze
    from router.evaluate.evaluate import Evaluator
    from router.language.ast import Policy
    from router.models import Inventory, Workload
    from tests.helpers import INVENTORY

    pf = parse_text(text, "gen.route")
    policy = check_policy(Policy(pf.name, [pf], **_statements(pf)))
    inventory = Inventory.model_validate(INVENTORY)
    findings = [f for f in analyze(policy, inventory) if f.code == "unreachable-rule"]
    dead = {f.line for f in findings}
    ev = Evaluator(policy, inventory)
    for doc in samples:
        d = ev.decide(Workload.model_validate(doc))
        assert d.rule is None or d.rule.span.line not in dead
    for f in findings:
        if f.witness is not None:
            d = ev.decide(Workload.model_validate(f.witness))
            assert d.rule is None or d.rule.span.line not in dead


def test_plugin_fixtures(tmp_path: Path) -> None:
    """The pytest11 plugin's `route` fixture in a platform repo's own tests."""
    import subprocess
    import sys

    (tmp_path / "test_routing.py").write_text(
        "def test_big(route):\n"
        "    d = route({'kind': 'training', 'gpus': 16})\n"
        "    assert d.rule.name == 'large_training'\n"
        "def test_factory(router_platform):\n"
        f"    p = router_platform({str(EXAMPLE)!r})\n"
        "    assert p.route({'kind': 'notebook', 'gpus': 4}).status == 'denied'\n"
    )
    from importlib.metadata import entry_points

    args = (
        []
        if any(e.name == "router" for e in entry_points(group="pytest11"))
        else ["-p", "router.testing.pytest_plugin"]
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            *args,
            f"--router-platform={EXAMPLE}",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
