"""`quota ... per KEY`: parsed, formatted (round trip, comments kept) and checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from router.errors import PolicySyntaxError
from router.language import ast, parse_text
from tests.language.policy_text import check, error_text, fmt

QUOTAS = """\
quota team_gpus:
  for kind == "training"
  on backend == "slurm"
  per team  # one limit per team
  limit gpus <= 64

quota cluster_headroom:
  per cluster, workload.labels."app.kubernetes.io/name", target
  limit gpus <= 80%
"""


def test_parse_per_keys() -> None:
    team, headroom = parse_text(QUOTAS, "p.route").statements
    assert isinstance(team, ast.Quota) and isinstance(headroom, ast.Quota)
    assert [k.parts for k in team.per] == [("team",)]
    assert team.for_ is not None and team.on is not None and len(team.limits) == 1
    assert [k.parts for k in headroom.per] == [
        ("cluster",),
        ("workload", "labels", "app.kubernetes.io/name"),
        ("target",),
    ]
    assert (headroom.per[0].span.line, headroom.per[0].span.column) == (8, 7)
    assert (team.span.line, team.span.end_line) == (1, 5)


def test_per_is_optional_and_one_line_works() -> None:
    (plain,) = parse_text("quota q: limit gpus <= 8\n", "p.route").statements
    assert isinstance(plain, ast.Quota) and plain.per == []
    (one,) = parse_text('quota q: for team != "x" per team limit gpus <= 8\n', "p.route").statements
    assert isinstance(one, ast.Quota) and [k.parts for k in one.per] == [("team",)]


def test_per_stays_a_name_elsewhere(tmp_path: Path) -> None:
    policy = check(
        tmp_path,
        """\
let per = 2
rule r:
  when gpus <= per and labels.per != "x"
  route slurm
quota q:
  for gpus <= per per team
  limit gpus <= per
""",
    )
    assert policy.constants == {"per": 2}
    (q,) = policy.quotas
    assert [(k.scope, k.field) for k in q.per] == [("workload", "team")]
    assert isinstance(q.limits[0].amount, ast.Literal) and q.limits[0].amount.value == 2


def test_fmt_canonical_and_round_trip() -> None:
    messy = """\
quota   team_gpus :  for kind=="training"  per team ,cluster  # one each
  limit gpus <= 64
quota h: per target.labels.zone limit gpus <= 80%
"""
    want = """\
quota team_gpus:
  for kind == "training"
  per team, cluster  # one each
  limit gpus <= 64

quota h:
  per target.labels.zone
  limit gpus <= 80%
"""
    assert fmt(messy) == want
    assert fmt(want) == want
    assert fmt(QUOTAS) == QUOTAS


def test_keys_resolve_to_target_attributes_first_then_workload_fields(tmp_path: Path) -> None:
    policy = check(
        tmp_path,
        """\
quota q:
  per cluster, backend, name, gpu_type, target, team, kind, priority, workload.name,
      workload.gpu_type, workload.labels.app, target.labels.zone, target.cost
  limit gpus <= 8
""",
    )
    (q,) = policy.quotas
    assert [(k.scope, k.field, k.key) for k in q.per] == [
        ("target", "cluster", None),
        ("target", "backend", None),
        ("target", "name", None),
        ("target", "gpu_type", None),
        ("target", "id", None),
        ("workload", "team", None),
        ("workload", "kind", None),
        ("workload", "priority", None),
        ("workload", "name", None),
        ("workload", "gpu_type", None),
        ("workload", "labels", "app"),
        ("target", "labels", "zone"),
        ("target", "cost", None),
    ]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "per teams",
            """\
p.route:3:7: error: unknown key `teams` in `per`: it takes a workload field or a target attribute
    3 |   per teams
      |       ^^^^^
  did you mean "team"?""",
        ),
        (
            "per clustr",
            """\
p.route:3:7: error: unknown key `clustr` in `per`: it takes a workload field or a target attribute
    3 |   per clustr
      |       ^^^^^^
  did you mean "cluster"?""",
        ),
        (
            "per team, workload.tem",
            """\
p.route:3:13: error: unknown workload field `tem`
    3 |   per team, workload.tem
      |             ^^^^^^^^^^^^
  did you mean "team"?""",
        ),
        (
            "per labels.app",
            """\
p.route:3:7: error: `labels.app` in `per` could be a workload label or a target label
    3 |   per labels.app
      |       ^^^^^^^^^^
  write `workload.labels.app` or `target.labels.app`""",
        ),
        (
            "per features",
            """\
p.route:3:7: error: `per` needs one value per workload or target; `features` is a list
    3 |   per features
      |       ^^^^^^^^""",
        ),
        (
            "per workload.labels",
            """\
p.route:3:7: error: `per` needs one value per workload or target; `workload.labels` is labels
    3 |   per workload.labels
      |       ^^^^^^^^^^^^^^^
  write `workload.labels.KEY`""",
        ),
        (
            "per team, workload.team",
            """\
p.route:3:13: error: `workload.team` is given twice in `per` (as `team`)
    3 |   per team, workload.team
      |             ^^^^^^^^^^^^^
  the first is at p.route:3:7""",
        ),
        (
            "per eight",
            """\
p.route:3:7: error: `eight` is a constant; `per` takes a workload field or a target attribute
    3 |   per eight
      |       ^^^^^""",
        ),
    ],
)
def test_checker_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, expected: str
) -> None:
    text = f"let eight = 8\nquota q:\n  {body}\n  limit gpus <= eight\n"
    assert error_text(tmp_path, monkeypatch, text) == expected


def test_per_without_a_key_is_a_syntax_error() -> None:
    with pytest.raises(PolicySyntaxError) as info:
        parse_text("quota q:\n  per\n  limit gpus <= 8\n", "p.route")
    assert (
        info.value.format()
        == """\
p.route:3:3: error: expected a workload field or target attribute, such as team or cluster, \
found `limit`
    3 |   limit gpus <= 8
      |   ^^^^^"""
    )
    with pytest.raises(PolicySyntaxError) as info:
        parse_text("quota q:\n  limit gpus <= 8\n  per team\n", "p.route")
    assert "found `per`" in info.value.format()
