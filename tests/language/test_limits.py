"""The language's explicit limits (docs/limits.md), each checked at parse time with a
positioned error, and each just inside the limit still working through every stage."""

from __future__ import annotations

from pathlib import Path

import pytest

from router.errors import RouterError
from router.language import load_policy, parse_text
from router.language.fmt import format_policy_file
from router.language.limits import MAX_DEPTH, MAX_NUMBER
from tests.language.policy_text import error_text


def _or_chain(n: int) -> str:
    return " or ".join(f'kind == "k{i}"' for i in range(n))


@pytest.mark.parametrize(("text", "expected"), [
    (f"let x = {' + '.join(['1'] * (MAX_DEPTH + 2))}", "nests more than 100 levels deep"),
    (f"rule r: when {_or_chain(MAX_DEPTH + 2)} route any", "nests more than 100 levels deep"),
    (f"let x = {'[' * (MAX_DEPTH + 1)}{']' * (MAX_DEPTH + 1)}", "nests more than 100"),
    (f"rule r: when {'not ' * (MAX_DEPTH + 1)}preemptible route any", "more than 100 `not`"),
    (f"let x = {'- ' * (MAX_DEPTH + 1)}1", "more than 100 `not` or `-`"),
    ("let x = 1" + "0" * 5000, "the number 100000000000000000000... is too large"),
    (f"let x = {MAX_NUMBER + 1}", "is too large: a number in a policy is at most 10^15"),
    ("rule r: when gpus > 10000000000000000000 route any", "is too large"),
    ("rule r: when memory > 1" + "0" * 309 + "GiB route any", "out of range: at most 10^15 MiB"),
    ("rule r: when duration > 99999999999999999999d route any", "out of range"),
    ("let x = 1000000000000000 * 1000000000000000", "the value of `1000000000000000 * 10"),
])  # fmt: skip
def test_past_a_limit_is_a_positioned_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, expected: str
) -> None:
    message = error_text(tmp_path, monkeypatch, text + "\n")
    assert message.startswith("p.route:1:") and expected in message
    assert "^" in message  # the caret line


def test_just_inside_the_limits_every_stage_works(tmp_path: Path) -> None:
    from router.assure.analysis import analyze
    from router.evaluate.evaluate import Evaluator
    from router.models import Inventory, Workload
    from tests.helpers import INVENTORY

    text = (f"let big = {MAX_NUMBER}\nlet deep = {'(' * 300}1{')' * 300}\n"
            f"rule r:\n  when {_or_chain(MAX_DEPTH)}\n  route any\n"
            f"rule n:\n  when {'not ' * (MAX_DEPTH - 1)}preemptible and gpus < big\n"
            "  route any\n")  # fmt: skip
    path = tmp_path / "p.route"
    path.write_text(text)
    policy = load_policy(path)
    assert format_policy_file(parse_text(text, "p.route"), text)  # fmt walks the tree
    inventory = Inventory.model_validate(INVENTORY)
    decision = Evaluator(policy, inventory).decide(
        Workload.model_validate({"name": "w", "kind": "k99", "image": "x:1"})
    )
    assert decision.rule is not None and decision.rule.name == "r"
    assert not [f for f in analyze(policy, inventory) if f.severity == "error"]


def test_a_workload_field_in_a_quota_on_is_an_error_at_the_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = 'quota q:\n  on workload.labels.app == "x"\n  limit gpus <= 4\nrule r: route any\n'
    message = error_text(tmp_path, monkeypatch, text)
    assert message.startswith("p.route:2:6: error: `workload.labels.app` is a workload field")
    assert "conditions on workloads go in its `for`" in message


def test_a_long_line_is_shown_around_the_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "let x = " + " + ".join(["1"] * 2000) + " + 1" + "0" * 30 + "\n"
    message = error_text(tmp_path, monkeypatch, text)
    line, caret = message.splitlines()[1:3]
    assert len(line) < 140 and "| ..." in line  # a window, not 8,000 columns
    assert caret.index("^") == line.index("1000000000000000000000")


def test_limits_are_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "limits.md").read_text()
    for needle in (f"{MAX_DEPTH}", "10^15", "4,300", "MAX_YAML_DEPTH"):
        assert needle in doc


def test_huge_numbers_raise_router_errors_only() -> None:
    for text in ("let x = 1" + "0" * 4400, "let x = 1" + "0" * 400 + "TiB", "let x = 1e5"):
        with pytest.raises(RouterError):
            parse_text(text, "p.route")
