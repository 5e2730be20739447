"""The fuzzer, bounded for CI (derandomized: the same examples on every run). A longer run
with fresh seeds: `python -m tests.fuzz --minutes N` (see __main__.py), which runs the same
properties (PROPERTIES) with other settings."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.harness import EXAMPLE, check_and_plan, check_in_memory
from tests.fuzz.strategies import grammar_policies, mutated

POLICY = (EXAMPLE / "policies" / "platform.route").read_text(encoding="utf-8")
WORKLOADS = (EXAMPLE / "workloads" / "llm.yaml").read_text(encoding="utf-8")
INVENTORY = (EXAMPLE / "inventory.yaml").read_text(encoding="utf-8")
YAML_FILES = {"workloads/llm.yaml": WORKLOADS, "inventory.yaml": INVENTORY}
CASES = (EXAMPLE / "policies" / "tests" / "routing.yaml").read_text(encoding="utf-8")


def policy_checks(text: str) -> None:
    assert check_in_memory(text) is None


def policy_plans(text: str) -> None:
    for outcome in check_and_plan(text, commands=("plan",)):
        assert outcome.problem() is None


def yaml_checks_and_plans(name: str, data: st.DataObject) -> None:
    text = data.draw(mutated(YAML_FILES[name]), label="text")
    for outcome in check_and_plan(files={name: text}):
        assert outcome.problem() is None


def cases_load(text: str) -> None:
    """A mutated `router test` case file loads, or fails with an error at line and column."""
    from router.assure.cases import load_cases
    from router.errors import ErrorGroup, RouterError

    with tempfile.TemporaryDirectory(prefix="router-fuzz-") as tmp:
        path = Path(tmp) / "cases.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            cases = load_cases(path)
        except RouterError as e:
            errors = e.errors if isinstance(e, ErrorGroup) else [e]
            assert all(x.span is not None for x in errors), [x.format() for x in errors]
            return
    for case in cases:  # an invalid workload fails its case, at the field
        assert case.invalid is None or case.invalid.span is not None


# name -> (property, its strategies, examples in CI)
PROPERTIES: dict[str, tuple[Callable[..., None], tuple[Any, ...], int]] = {
    "grammar": (policy_checks, (grammar_policies(),), 150),
    "mutated-policy": (policy_checks, (mutated(POLICY),), 80),
    "mutated-policy-plan": (policy_plans, (mutated(POLICY),), 12),
    "mutated-yaml": (yaml_checks_and_plans, (st.sampled_from(sorted(YAML_FILES)), st.data()), 15),
    "mutated-cases": (cases_load, (mutated(CASES),), 60),
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
test_mutated_cases = bounded("mutated-cases")
