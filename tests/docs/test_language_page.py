"""docs/language.md: every example parses, checks and plans, and its plan holds what the
page says under it; the page covers every statement, option, field, attribute, operator
and unit the language has."""

from __future__ import annotations

import pytest

import router
from router.language import ast
from router.language.names import OPTIONS, OUTCOME_NAMES, TARGET_ATTRIBUTES, WORKLOAD_FIELDS
from router.quantity import DURATION_UNITS, MEMORY_UNITS
from tests.docs.pages import DOCS, Block, check_example, error_examples, load, route_examples

PAGE = DOCS / "language.md"
EXAMPLES = route_examples(PAGE)


@pytest.mark.parametrize("block", EXAMPLES, ids=[f"line{b.line}" for b in EXAMPLES])
def test_example_plans_as_the_page_says(block: Block) -> None:
    check_example(PAGE, block)


def test_every_example_states_an_outcome() -> None:
    assert len(EXAMPLES) >= 20
    for block in EXAMPLES:
        assert "#>" in block.text, f"language.md:{block.line}: an example without `#>`"


@pytest.mark.parametrize(
    "block,shown", error_examples(PAGE), ids=[f"line{b.line}" for b, _ in error_examples(PAGE)]
)
def test_error_examples_print_what_the_page_shows(block: Block, shown: Block) -> None:
    with pytest.raises(router.RouterError) as caught:
        load(PAGE, block).policy  # noqa: B018 (loading it is the test)
    assert str(caught.value) == shown.text.rstrip("\n")


def _policies() -> list[ast.Policy]:
    return [load(PAGE, b).policy for b in EXAMPLES]


def test_every_option_the_checker_knows_is_used_in_an_example() -> None:
    used = {o.name for p in _policies() for o in ast.find(p, ast.Option)}
    assert set(OPTIONS) - used == set()
    text = PAGE.read_text()
    for name in OPTIONS:
        assert f"| `{name}` |" in text, f"option {name} has no row in the options tables"


def test_every_statement_and_clause_is_in_an_example() -> None:
    policies = _policies()
    kinds = {type(s).__name__ for p in policies for s in ast.walk(p)}
    assert {"Let", "Deny", "Rule", "Quota", "Spread", "Check", "Route", "Prefer"} <= kinds
    routes = [r for p in policies for r in ast.find(p, ast.Route)]
    assert {r.backend for r in routes} == {"slurm", "kubernetes", "any"}
    assert any(r.rank for r in routes)  # else route
    assert {pr.direction for p in policies for pr in ast.find(p, ast.Prefer)} == {
        "lower",
        "higher",
        None,
    }
    quotas = [q for p in policies for q in ast.find(p, ast.Quota)]
    resources = {lim.resource for q in quotas for lim in q.limits}
    assert resources == {"gpus", "cpus", "memory", "nodes", "workloads"}
    assert any(q.per for q in quotas) and any(q.on for q in quotas)
    assert any(p.name for p in policies)  # `policy NAME`


def test_every_field_attribute_and_outcome_name_is_in_an_example() -> None:
    names = {(n.scope, n.field) for p in _policies() for n in ast.find(p, ast.Name)}
    assert {f for s, f in names if s == "workload"} >= set(WORKLOAD_FIELDS)
    assert {f for s, f in names if s == "target"} >= set(TARGET_ATTRIBUTES)
    assert {f for s, f in names if s == "outcome"} >= set(OUTCOME_NAMES)


def test_every_operator_and_unit_is_in_an_example() -> None:
    policies = _policies()
    ops = {b.op for p in policies for b in ast.find(p, ast.Binary)}
    ops |= {u.op for p in policies for u in ast.find(p, ast.Unary)}
    assert ops >= {
        "and",
        "or",
        "not",
        "-",
        "==",
        "!=",
        "<",
        "<=",
        ">",
        ">=",
        "in",
        "not in",
        "+",
        "*",
        "/",
    }
    written = {lit.text for p in policies for lit in ast.find(p, ast.Literal) if lit.unit}
    for unit in [*MEMORY_UNITS, *DURATION_UNITS, "%"]:
        assert any(t.endswith(unit) and t[: -len(unit)][-1:].isdigit() for t in written), unit
    text = "\n".join(b.text for b in EXAMPLES)
    for spelling in ("→", "->", "≥", "≤", "≠"):
        assert spelling in text
