"""The fuzzer, bounded for CI (derandomized: the same examples on every run). A longer run
with fresh seeds: `python -m tests.fuzz --minutes N` (see __main__.py), which runs the same
properties (PROPERTIES) with other settings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.harness import EXAMPLE, check_and_plan, check_in_memory
from tests.fuzz.strategies import grammar_policies, mutated

POLICY = (EXAMPLE / "policies" / "platform.route").read_text(encoding="utf-8")
WORKLOADS = (EXAMPLE / "workloads" / "llm.yaml").read_text(encoding="utf-8")
INVENTORY = (EXAMPLE / "inventory.yaml").read_text(encoding="utf-8")
YAML_FILES = {"workloads/llm.yaml": WORKLOADS, "inventory.yaml": INVENTORY}


def policy_checks(text: str) -> None:
    assert check_in_memory(text) is None


def policy_plans(text: str) -> None:
    for outcome in check_and_plan(text, commands=("plan",)):
        assert outcome.problem() is None


def yaml_checks_and_plans(name: str, data: st.DataObject) -> None:
    text = data.draw(mutated(YAML_FILES[name]), label="text")
    for outcome in check_and_plan(files={name: text}):
        assert outcome.problem() is None


# name -> (property, its strategies, examples in CI)
PROPERTIES: dict[str, tuple[Callable[..., None], tuple[Any, ...], int]] = {
    "grammar": (policy_checks, (grammar_policies(),), 150),
    "mutated-policy": (policy_checks, (mutated(POLICY),), 80),
    "mutated-policy-plan": (policy_plans, (mutated(POLICY),), 12),
    "mutated-yaml": (yaml_checks_and_plans, (st.sampled_from(sorted(YAML_FILES)), st.data()), 15),
}
BASE = settings(deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])  # fmt: skip


def run_with(name: str, **changes: Any) -> Callable[[], None]:
    """Property `name` as a Hypothesis test with BASE settings and `changes`."""
    prop, strategies, _ = PROPERTIES[name]
    decorate: Any = given(*strategies)  # typed for fixed arities only
    wrapped: Any = decorate(prop)
    test: Callable[[], None] = settings(BASE, **changes)(wrapped)
    return test


def bounded(name: str) -> Callable[[], None]:
    return run_with(name, derandomize=True, max_examples=PROPERTIES[name][2])


test_policies_from_the_grammar = bounded("grammar")
test_mutated_policies_check = bounded("mutated-policy")
test_mutated_policies_plan = bounded("mutated-policy-plan")
test_mutated_yaml = bounded("mutated-yaml")
