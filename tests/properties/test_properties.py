"""Property-based tests with router.testing's strategies (bounded: small example counts)."""

from __future__ import annotations

import contextlib
import itertools
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from router.errors import RouterError, Span
from router.language import check_policy, parse_sources, parse_text
from router.language.fmt import format_policy_file
from router.testing import grammar_texts, platforms, policies, previous_plans, workload_dicts
from tests.profiles import BOUNDED

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


def check_policy_text(text: str) -> Any:
    """Parsed and checked as `router plan` does it: every statement kept (spreads too)."""
    return check_policy(parse_sources([("gen.route", text)]))


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


def _plan(platform: dict[str, Any], previous: dict[str, Any] | None = None) -> Any:
    """The platform planned in memory through the API (as a platform's own tests would)."""
    import router

    p = router.Platform.from_objects(
        policy=platform["policy"], inventory=platform["inventory"], workloads=platform["workloads"]
    )
    return router.plan(p, previous).built


@settings(BOUNDED, max_examples=25, suppress_health_check=list(HealthCheck))
@given(platforms(max_workloads=6, max_targets=3))
def test_every_plan_passes_the_independent_checker(platform: dict[str, Any]) -> None:
    from router.plan.verify import verify_plan

    plan = _plan(platform)
    i = plan.inputs
    assert verify_plan(i.policy, i.inventory, i.workloads, plan.placements) == []


@settings(BOUNDED, max_examples=25, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_replanning_against_a_previous_plan_passes_the_checker(data: st.DataObject) -> None:
    """With a previous plan (some workloads on some targets, fitting or not), the plan still
    passes the independent checker, and it says which planned work it preempted."""
    from router.plan.verify import verify_plan

    platform = data.draw(platforms(max_workloads=6, max_targets=3))
    previous = data.draw(previous_plans(platform))
    plan = _plan(platform, previous)
    i = plan.inputs
    assert verify_plan(i.policy, i.inventory, i.workloads, plan.placements) == []
    planned = {p["workload"] for p in previous["placements"]}
    if planned:  # an empty previous plan is planning afresh
        assert plan.preempted is not None
        assert {p.workload for p in plan.preempted} <= planned


def _brute_force(problem: Any) -> int:
    """The best level-1 objective over every assignment (each workload: none or a choice)."""
    level = {v: c for c, v in problem.levels[0].terms}
    best = 0
    for pick in itertools.product(*[[None, *ch] for ch in problem.choices]):
        x = {v for v in pick if v is not None}
        if all(sum(c for c, v in row.terms if v in x) <= row.rhs for row in problem.rows):
            best = max(best, sum(level.get(v, 0) for v in x))
    return best


@settings(BOUNDED, max_examples=25, suppress_health_check=list(HealthCheck))
@given(platforms(max_workloads=6, max_targets=3))
def test_objective_equals_brute_force(platform: dict[str, Any]) -> None:
    plan = _plan(platform)
    if not plan.problem.choices:
        return
    assert plan.solve.objective == _brute_force(plan.problem)


@settings(BOUNDED, max_examples=30, suppress_health_check=list(HealthCheck))
@given(policies(), st.lists(workload_dicts(), max_size=20))
def test_analysis_agrees_with_sampling(text: str, samples: list[dict[str, Any]]) -> None:
    """No sampled workload is claimed by a rule `router check` proves unreachable, and each
    such rule's witness matches its `when` yet is decided elsewhere."""
    from router.assure.analysis import analyze
    from router.evaluate.evaluate import Evaluator
    from router.models import Inventory, Workload
    from tests.helpers import INVENTORY

    policy = check_policy_text(text)
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
