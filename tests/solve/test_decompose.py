"""solve/decompose.py: independent parts are joined by shared classes and shared rows."""

from __future__ import annotations

from router.solve.decompose import components
from tests.solve.handmade import Cls, aggregate


def test_classes_on_disjoint_targets_are_apart() -> None:
    agg = aggregate(
        [Cls(1, 1, [("a", 0), ("b", 1)]), Cls(1, 1, [("c", 0)])], {"a": 1, "b": 1, "c": 1}
    )
    parts = components(agg)
    assert [p.groups for p in parts] == [[0], [1]]
    assert [p.variables for p in parts] == [[0, 1], [2]]
    assert [p.rows for p in parts] == [[0, 1], [2]]  # capacity rows of a, b, then c


def test_a_row_over_two_parts_joins_them() -> None:
    agg = aggregate(
        [Cls(1, 1, [("a", 0)]), Cls(1, 1, [("c", 0)])],
        {"a": 1, "c": 1},
        extra_rows=[([(0, "a"), (1, "c")], 1)],
    )
    parts = components(agg)
    assert len(parts) == 1
    assert parts[0].groups == [0, 1] and parts[0].rows == [0, 1, 2]


def test_the_parts_do_not_depend_on_the_order_of_classes() -> None:
    one = aggregate([Cls(1, 1, [("b", 0)]), Cls(1, 1, [("a", 0)])], {"a": 1, "b": 1})
    two = aggregate([Cls(1, 1, [("a", 0)]), Cls(1, 1, [("b", 0)])], {"a": 1, "b": 1})
    # Parts are ordered by their smallest target id: a's part first either way.
    assert (
        [one.candidate(p.variables[0]).target.id for p in components(one)]
        == [two.candidate(p.variables[0]).target.id for p in components(two)]
        == ["hpc/a", "hpc/b"]
    )
