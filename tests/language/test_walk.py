"""ast.walk / ast.find: the one tree walker the evaluator, the checker and the prover use."""

from __future__ import annotations

from router.language import ast, parse_sources, parse_text

TEXT = """\
policy p
let big = 8
rule r:
  when gpus > big and kind in ["a", "b"]
  route slurm with hpa(min = 2) where cluster == "x"
  prefer lower cost
spread s:
  by labels.app
  across cluster
"""


def test_walk_order_is_each_node_before_its_children_in_field_order() -> None:
    rule = parse_text(TEXT, "p.route").statements[1]
    assert isinstance(rule, ast.Rule)
    kinds = [type(n).__name__ for n in ast.walk(rule.when)]
    assert kinds == [
        "Binary",
        "Binary",
        "Name",
        "Name",
        "Binary",
        "Name",
        "ListExpr",
        "Literal",
        "Literal",
    ]
    assert list(ast.walk(None)) == []


def test_find_reaches_options_prefer_and_spreads_of_a_whole_policy() -> None:
    policy = parse_sources([("p.route", TEXT)])
    names = [n.parts for n in ast.find(policy, ast.Name)]
    # Each once: a Policy's statements are walked in its merged lists, not twice.
    assert names == [
        ("gpus",),
        ("big",),
        ("kind",),
        ("cluster",),
        ("cost",),
        ("labels", "app"),
        ("cluster",),
    ]
    options = list(ast.find(policy, ast.Option))
    assert [o.name for o in options] == ["hpa"]
    assert [lit.value for lit in ast.find(options, ast.Literal)] == [2]
