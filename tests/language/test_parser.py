"""The parser: every LANGUAGE.md example, the tree it gives, and its syntax errors."""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path
from typing import Any

import pytest

from router.errors import ErrorGroup, PolicyError, PolicySyntaxError
from router.language import ast, parse_files, parse_text

DATA = Path(__file__).parent / "data"
PLATFORM = (DATA / "platform.route").read_text()
COMPACT = """\
rule big_training: when kind == "training" and gpus ≥ 8 → slurm exclusive
rule serving: when kind == "inference" → kubernetes with hpa
"""
_POSITIONS = {"span", "backend_span", "resource_span", "arg_spans"}


def plain(node: Any) -> Any:
    """A node as plain data without source positions, to compare meanings."""
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return {
            f.name: plain(getattr(node, f.name))
            for f in dataclasses.fields(node)
            if f.name not in _POSITIONS and f.name not in ("comments", "path")
        }
    if isinstance(node, (list, tuple)):
        return [plain(x) for x in node]
    if isinstance(node, dict):
        return {k: plain(v) for k, v in node.items()}
    return node


def statements(text: str) -> list[ast.Statement]:
    return parse_text(text, "p.route").statements


def expr(text: str) -> ast.Expr:
    let = statements(f"let x = {text}")[0]
    assert isinstance(let, ast.Let)
    return let.value


def syntax_error(text: str) -> str:
    with pytest.raises(PolicySyntaxError) as info:
        parse_text(text, "p.route")
    return info.value.format()


# -- the examples of LANGUAGE.md -----------------------------------------------------------


def test_platform_example() -> None:
    pf = parse_text(PLATFORM, "platform.route")
    assert pf.name == "platform"
    kinds = [type(s).__name__ for s in pf.statements]
    assert kinds == ["Let", "Deny", "Rule", "Rule", "Rule", "Rule", "Quota", "Quota", "Check"]
    let, deny, large, small, inference, batch, research, headroom, check = pf.statements
    assert isinstance(let, ast.Let) and let.name == "big_job"
    assert isinstance(let.value, ast.Literal) and let.value.value == 8
    assert isinstance(deny, ast.Deny) and deny.name == "notebook_gpus"
    assert deny.message == "notebooks may use at most one GPU; submit a training job instead"

    assert isinstance(large, ast.Rule) and large.name == "large_training"
    (route,) = large.routes
    assert (route.backend, route.rank) == ("slurm", 0)
    exclusive, qos = route.options
    assert (exclusive.name, exclusive.value, exclusive.is_call) == ("exclusive", None, False)
    assert qos.name == "qos" and isinstance(qos.value, ast.Literal) and qos.value.value == "high"
    assert isinstance(route.where, ast.Binary) and route.where.op == "and"
    assert isinstance(route.where.left, ast.Binary) and route.where.left.op == "in"
    assert [p.direction for p in route.prefer] == ["lower"]
    assert isinstance(route.prefer[0].expr, ast.Name) and route.prefer[0].expr.parts == ("cost",)

    assert isinstance(small, ast.Rule)
    assert [(r.backend, r.rank) for r in small.routes] == [("slurm", 0), ("kubernetes", 1)]
    where = small.routes[0].where
    assert isinstance(where, ast.Binary) and isinstance(where.right, ast.Name)
    assert where.right.parts == ("workload", "gpus")
    assert [o.name for o in small.routes[1].options] == ["queue"]

    assert isinstance(inference, ast.Rule)
    hpa, pdb = inference.routes[0].options
    assert hpa.is_call and {k: v.value for k, v in hpa.args.items()} == {  # type: ignore[union-attr]
        "min": 2,
        "max": 20,
        "cpu": 0.7,
    }
    assert isinstance(hpa.args["cpu"], ast.Literal) and hpa.args["cpu"].unit == "percent"
    assert pdb.is_call and list(pdb.args) == ["min_available"]
    assert inference.routes[0].prefer[0].direction is None

    assert isinstance(batch, ast.Rule) and batch.when is None
    assert batch.routes[0].backend == "any" and batch.routes[0].prefer[0].direction == "lower"

    assert isinstance(research, ast.Quota) and research.on is None
    assert (research.limits[0].resource, research.limits[0].op) == ("gpus", "<=")
    assert isinstance(headroom, ast.Quota) and headroom.for_ is None
    amount = headroom.limits[0].amount
    assert isinstance(amount, ast.Literal) and (amount.value, amount.unit) == (0.8, "percent")
    assert amount.text == "80%"

    assert isinstance(check, ast.Check) and isinstance(check.expect, ast.Binary)
    assert isinstance(check.expect.right, ast.Name) and check.expect.right.parts == ("exclusive",)


def test_spans_and_comments() -> None:
    pf = parse_text(PLATFORM, "platform.route")
    large = pf.statements[2]
    assert isinstance(large, ast.Rule)
    assert (large.span.line, large.span.column, large.span.end_line) == (12, 1, 16)
    qos = large.routes[0].options[1]
    assert (qos.span.line, qos.span.column, qos.span.end_column) == (14, 31, 43)
    assert large.routes[0].backend_span is not None
    assert large.routes[0].backend_span.column == 9
    small = pf.statements[3]
    assert isinstance(small, ast.Rule)
    assert (small.routes[1].span.line, small.routes[1].span.column) == (21, 3)  # at `else`
    assert pf.comments[0] == (1, "# optional name; one per file set")
    assert (21, "# fallback, ranked below") in pf.comments
    assert len(pf.comments) == 8


def test_compact_forms_equal_long_forms() -> None:
    long_form = """\
rule big_training:
  when kind == "training" and gpus >= 8
  route slurm with exclusive
rule serving:
  when kind == "inference"
  route kubernetes with hpa
"""
    assert plain(statements(COMPACT)) == plain(statements(long_form))
    arrow = statements("rule a: when gpus ≠ 1 and gpus ≤ 4 -> any")
    assert plain(arrow) == plain(statements("rule a: when gpus != 1 and gpus <= 4 route any"))


def test_route_clauses_in_any_order() -> None:
    one = statements('rule a: route slurm prefer lower cost where nodes > 1 with qos = "x"')
    two = statements('rule a: route slurm with qos = "x" where nodes > 1 prefer lower cost')
    assert plain(one) == plain(two)
    merged = statements("rule a: route slurm with a with b prefer x prefer higher y")[0]
    assert isinstance(merged, ast.Rule)
    assert [o.name for o in merged.routes[0].options] == ["a", "b"]
    assert [p.direction for p in merged.routes[0].prefer] == [None, "higher"]


def test_else_routes_are_ranked() -> None:
    rule = statements("rule a: route slurm else route kubernetes else → any")[0]
    assert isinstance(rule, ast.Rule)
    assert [(r.backend, r.rank) for r in rule.routes] == [
        ("slurm", 0),
        ("kubernetes", 1),
        ("any", 2),
    ]


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("64GiB", 65536, "memory"),
        ("2TiB", 2097152, "memory"),
        ("512MiB", 512, "memory"),
        ("1.5GiB", 1536, "memory"),
        ("30s", 30, "duration"),
        ("45min", 2700, "duration"),
        ("48h", 172800, "duration"),
        ("7d", 604800, "duration"),
        ("1h30min", 5400, "duration"),
        ("70%", 0.7, "percent"),
    ],
)
def test_quantities_in_base_units(text: str, value: float, unit: str) -> None:
    lit = expr(text)
    assert isinstance(lit, ast.Literal)
    assert (lit.value, lit.unit, lit.text) == (value, unit, text)


def test_literals() -> None:
    assert plain(expr('"a\\"b\\\\c"'))["value"] == 'a"b\\c'
    assert plain(expr("2.5"))["value"] == 2.5
    assert plain(expr("true"))["value"] is True
    items = expr('[1, "x", false,]')
    assert isinstance(items, ast.ListExpr) and len(items.items) == 3
    name = expr('labels."app.kubernetes.io/name"')
    assert isinstance(name, ast.Name) and name.parts == ("labels", "app.kubernetes.io/name")


def _shape(e: ast.Expr) -> Any:
    if isinstance(e, ast.Binary):
        return (e.op, _shape(e.left), _shape(e.right))
    if isinstance(e, ast.Unary):
        return (e.op, _shape(e.operand))
    if isinstance(e, ast.Name):
        return ".".join(e.parts)
    assert isinstance(e, ast.Literal)
    return e.value


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("a or b and c", ("or", "a", ("and", "b", "c"))),
        ("not a and b", ("and", ("not", "a"), "b")),
        ("not a == b", ("not", ("==", "a", "b"))),
        ("a and not b in c", ("and", "a", ("not", ("in", "b", "c")))),
        ("a - b - c", ("-", ("-", "a", "b"), "c")),
        ("1 + 2 * -x", ("+", 1, ("*", 2, ("-", "x")))),
        ("-a * b", ("*", ("-", "a"), "b")),
        ("(a or b) and c", ("and", ("or", "a", "b"), "c")),
        ('"x" not in features', ("not in", "x", "features")),
        ("a / b >= c + 1", (">=", ("/", "a", "b"), ("+", "c", 1))),
    ],
)
def test_precedence(text: str, shape: Any) -> None:
    assert _shape(expr(text)) == shape


def test_keywords_are_names_where_a_name_is_expected() -> None:
    check = statements('check c: expect rule == "x" and target == "gpu-h100"')[0]
    assert isinstance(check, ast.Check) and isinstance(check.expect, ast.Binary)
    assert _shape(check.expect) == ("and", ("==", "rule", "x"), ("==", "target", "gpu-h100"))
    rule = statements("rule a: route slurm prefer lower cost rule b: route any")
    assert [getattr(s, "name", None) for s in rule] == ["a", "b"]


def test_parse_files(tmp_path: Path) -> None:
    (tmp_path / "b.route").write_text("rule second: route any\nquota q: limit gpus <= 1\n")
    (tmp_path / "a.route").write_text("policy p\nlet x = 1\nrule first: route slurm\n")
    policy = parse_files([tmp_path / "b.route", tmp_path / "a.route"])
    assert policy.name == "p"
    assert [r.name for r in policy.rules] == ["first", "second"]
    assert [f.path for f in policy.files] == [str(tmp_path / n) for n in ("a.route", "b.route")]
    assert [x.name for x in policy.lets] == ["x"] and len(policy.quotas) == 1
    (tmp_path / "c.route").write_text("policy other\n")
    with pytest.raises(PolicyError, match="policy `other`"):
        parse_files(sorted(tmp_path.glob("*.route")))


def test_syntax_errors_in_several_files_are_reported_together(tmp_path: Path) -> None:
    (tmp_path / "a.route").write_text("rul a: route slurm\n")
    (tmp_path / "b.route").write_text("rule b route slurm\n")
    with pytest.raises(ErrorGroup) as info:
        parse_files(sorted(tmp_path.glob("*.route")))
    assert [e.line for e in info.value.errors] == [1, 1]


# -- syntax errors -------------------------------------------------------------------------

ERRORS = [
    (
        "rul x: route slurm",
        "p.route:1:1: error: expected a statement "
        "(`rule`, `deny`, `quota`, `spread`, `check`, `let` or `policy`), found `rul`\n"
        """\
    1 | rul x: route slurm
      | ^^^
  did you mean "rule"?""",
    ),
    (
        'rule x:\n  when kind == "a"\n  rute slurm',
        """\
p.route:3:3: error: expected `route` or an operator, found `rute`
    3 |   rute slurm
      |   ^^^^
  did you mean "route"?""",
    ),
    (
        "rule x: → slrum",
        """\
p.route:1:11: error: expected a backend: slurm, kubernetes or any, found `slrum`
    1 | rule x: → slrum
      |           ^^^^^
  did you mean "slurm"?""",
    ),
    (
        "rule x when gpus > 1 route slurm",
        """\
p.route:1:8: error: expected `:` after the rule name, found `when`
    1 | rule x when gpus > 1 route slurm
      |        ^^^^""",
    ),
    (
        'rule x: when kind == "training route slurm',
        """\
p.route:1:22: error: unterminated string
    1 | rule x: when kind == "training route slurm
      |                      ^^^^^^^^^^^^^^^^^^^^^
  a string ends with " on the same line""",
    ),
    (
        "rule x: when gpus = 8 route slurm",
        """\
p.route:1:19: error: expected `route` or an operator, found `=`
    1 | rule x: when gpus = 8 route slurm
      |                   ^
  use `==` to compare""",
    ),
    (
        "rule x: when gpus >= route slurm",
        """\
p.route:1:22: error: expected an expression, found `route`
    1 | rule x: when gpus >= route slurm
      |                      ^^^^^""",
    ),
    (
        "rule x:\n  when gpus > 1",
        """\
p.route:2:16: error: expected `route` or an operator, found the end of the file
    2 |   when gpus > 1
      |                ^""",
    ),
    (
        "rule x: route slurm with time = 5sec",
        """\
p.route:1:33: error: unknown unit `sec` in `5sec`
    1 | rule x: route slurm with time = 5sec
      |                                 ^^^^
  units: KiB, MiB, GiB, TiB for memory; s, min, h, d for durations; % for a share""",
    ),
    (
        "quota q: limit gpus >= 3",
        """\
p.route:1:21: error: expected `<=` or `<`, found `>=`
    1 | quota q: limit gpus >= 3
      |                     ^^""",
    ),
    (
        "rule x: route slurm with\n  where gpus > 1",
        """\
p.route:2:3: error: expected an option, found `where`
    2 |   where gpus > 1
      |   ^^^^^""",
    ),
    (
        "rule x: when a && b route slurm",
        """\
p.route:1:16: error: expected `route` or an operator, found `&`
    1 | rule x: when a && b route slurm
      |                ^
  write `and`""",
    ),
    (
        "rule x: when a < b < c route slurm",
        """\
p.route:1:20: error: comparisons do not chain
    1 | rule x: when a < b < c route slurm
      |                    ^
  write `a < b and b < c`""",
    ),
    (
        "deny x: when gpus > 8 because too many",
        """\
p.route:1:31: error: expected a message in quotes, found `too`
    1 | deny x: when gpus > 8 because too many
      |                               ^^^""",
    ),
    (
        "rule x: else route slurm",
        """\
p.route:1:9: error: expected `when` or `route`, found `else`
    1 | rule x: else route slurm
      |         ^^^^""",
    ),
]


@pytest.mark.parametrize(("text", "expected"), ERRORS)
def test_syntax_error_messages(text: str, expected: str) -> None:
    assert syntax_error(text) == expected


def test_no_terminal_names_leak_from_any_truncation() -> None:
    """Cut the platform example at every blank: each error reads in user words."""
    cuts = [m.start() for m in re.finditer(r"\s", PLATFORM)]
    for cut in cuts:
        text = PLATFORM[:cut] + " @" if cut % 3 == 0 else PLATFORM[:cut]
        try:
            parse_text(text, "p.route")
        except PolicySyntaxError as e:
            said = re.sub(r"`[^`]*`", "", e.message + " " + (e.hint or ""))
            assert not re.search(r"[A-Z_]{2,}|Token|\$END", said), said
            assert e.span is not None and e.span.line >= 1


def test_parsing_is_fast() -> None:
    text = PLATFORM + "\n" + PLATFORM.replace("policy platform", "")
    assert len(text.splitlines()) >= 80
    parse_text(text, "p.route")
    start = time.perf_counter()
    for _ in range(20):
        parse_text(text, "p.route")
    # The budget is 2 ms per 100 lines; this bound only catches a parser gone quadratic.
    assert (time.perf_counter() - start) / 20 < 0.05
