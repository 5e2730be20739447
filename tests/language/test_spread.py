"""`spread`: parsed, formatted (round trip, comments kept) and checked with clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from router.errors import PolicySyntaxError
from router.language import ast, parse_text
from tests.language.policy_text import check, error_text, fmt

SPREAD = """\
rule serve:
  when kind == "inference"
  route kubernetes

spread web_replicas:
  for kind == "inference"  # only services
  by labels.app
  across cluster
  max 1
"""


def test_parse_spread_clauses() -> None:
    pf = parse_text(SPREAD, "p.route")
    sp = pf.statements[1]
    assert isinstance(sp, ast.Spread) and sp.name == "web_replicas"
    assert isinstance(sp.for_, ast.Binary) and sp.for_.op == "=="
    assert isinstance(sp.by, ast.Name) and sp.by.parts == ("labels", "app")
    assert sp.across.parts == ("cluster",)
    assert isinstance(sp.max, ast.Literal) and sp.max.value == 1
    assert (sp.span.line, sp.span.end_line) == (5, 9)


def test_for_and_max_are_optional_and_one_line_works() -> None:
    pf = parse_text('spread s: by team across labels."topology.kubernetes.io/zone"\n', "p.route")
    (sp,) = pf.statements
    assert isinstance(sp, ast.Spread) and sp.for_ is None and sp.max is None
    assert sp.across.parts == ("labels", "topology.kubernetes.io/zone")


def test_new_keywords_stay_names_elsewhere(tmp_path: Path) -> None:
    # `max`, `by` and `across` are keywords only where a spread accepts them.
    policy = check(
        tmp_path,
        """\
let max = 2
rule r:
  when gpus <= max and labels.by != "x" and labels.across != "y"
  route kubernetes with hpa(min = 1, max = 3)
spread s: by team across cluster max max
""",
    )
    assert policy.constants == {"max": 2}
    (sp,) = policy.spreads
    assert isinstance(sp.max, ast.Literal) and sp.max.value == 2


def test_fmt_canonical_and_round_trip() -> None:
    messy = """\
# services
spread   web_replicas :  for kind=="inference"   # only services
   by labels.app across   cluster max 1
spread b: by team across target
"""
    out = fmt(messy)
    assert (
        out
        == """\
# services
spread web_replicas:
  for kind == "inference"  # only services
  by labels.app
  across cluster
  max 1

spread b:
  by team
  across target
"""
    )
    assert fmt(out) == out
    assert fmt(SPREAD) == SPREAD


def test_checker_resolves_spread_names(tmp_path: Path) -> None:
    policy = check(
        tmp_path,
        SPREAD + "spread t: by team across target\nspread z: by labels.app across labels.zone\n",
    )
    web, t, z = policy.spreads
    assert isinstance(web.by, ast.Name) and (web.by.scope, web.by.field, web.by.key) == (
        "workload",
        "labels",
        "app",
    )
    assert (web.across.scope, web.across.field) == ("target", "cluster")
    assert (t.across.scope, t.across.field) == ("target", "id")  # `target` is the target id
    assert (z.across.scope, z.across.field, z.across.key) == ("target", "labels", "zone")


def test_unknown_across_attribute_says_did_you_mean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = error_text(tmp_path, monkeypatch, "spread s:\n  by labels.app\n  across clustr\n")
    assert (
        text
        == """\
p.route:3:10: error: unknown target attribute `clustr`
    3 |   across clustr
      |          ^^^^^^
  did you mean "cluster"?"""
    )


@pytest.mark.parametrize(
    ("clause", "message"),
    [
        ("across team", "`team` is a workload field; `across` takes a target attribute"),
        ("across workload.gpus", "`workload.gpus` is a workload field"),
        ("across features", "`across` needs one value per target; `features` is a list"),
        ("across labels", "`across` needs one value per target; `labels` is labels"),
        ("across cluster max 0", "`max` of a spread is a whole number >= 1"),
        ("across cluster max 1.5", "`max` of a spread is a whole number >= 1"),
        ("across cluster max 2GiB", "`max` of a spread is a whole number >= 1"),
        ('across cluster max "two"', "`max` of a spread is a whole number >= 1"),
        ("across cluster max gpus", "`gpus` is not a constant"),
    ],
)
def test_bad_across_and_max(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clause: str, message: str
) -> None:
    text = error_text(tmp_path, monkeypatch, f"spread s: by team {clause}\n")
    assert text.startswith("p.route:1:"), text
    assert message in text
    assert "^" in text


def test_by_and_for_are_workload_scope(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = error_text(
        tmp_path, monkeypatch, "spread s:\n  for cost > 1\n  by lables.app\n  across cluster\n"
    )
    assert "p.route:2:7: error: `cost` is a target attribute" in text
    assert "p.route:3:6: error: unknown workload field `lables.app`" in text
    assert 'did you mean "labels"?' in text
    text = error_text(tmp_path, monkeypatch, "spread s: by labels across cluster\n")
    assert "`by` needs one value per workload, not labels" in text


def test_duplicate_spread_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = error_text(
        tmp_path,
        monkeypatch,
        "spread s: by team across cluster\nspread s: by kind across cluster\n",
    )
    assert text.startswith(
        "p.route:2:8: error: spread `s` is defined twice; the first is at p.route:1:8"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("spread s:\n  across cluster\n", "p.route:2:3: error: expected `for` or `by`"),
        ("spread s: by team max 1\n", "expected `across` or an operator, found `max`"),
        ("spread s: by team across\n", "expected a target attribute, such as cluster"),
        ("spred s: by team across cluster\n", 'did you mean "spread"?'),
    ],
)
def test_syntax_errors_in_words(text: str, expected: str) -> None:
    with pytest.raises(PolicySyntaxError) as info:
        parse_text(text, "p.route")
    assert expected in info.value.format()
