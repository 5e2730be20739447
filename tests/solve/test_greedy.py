"""solve/greedy.py on hand-made models: first-fit decreasing, the rounded LP, the hints."""

from __future__ import annotations

from router.solve.greedy import (
    best_hint,
    first_fit_decreasing,
    level_value,
    previous_hint,
    rounded,
    rows_of,
)
from router.solve.lp import lp_solve
from tests.solve.handmade import Cls, aggregate, var

# Two members worth 5 that need 4 of t1 each; three worth 3 that need 3, t1 first, t2 next.
TWO_TARGETS = ([Cls(2, 5, [("t1", 0)], use={"t1": 4}),
                Cls(3, 3, [("t1", 0), ("t2", 1)], use={"t1": 3, "t2": 3})],
               {"t1": 10, "t2": 6})  # fmt: skip


def test_rows_of_lists_each_variables_rows_with_its_coefficient() -> None:
    agg = aggregate(*TWO_TARGETS)
    assert rows_of(agg) == [[(0, 4)], [(0, 3)], [(1, 3)]]


def test_first_fit_decreasing_places_the_heaviest_class_first_then_falls_back() -> None:
    agg = aggregate(*TWO_TARGETS)
    counts = first_fit_decreasing(agg)
    # The 5s take 8 of t1; 2 left is too little for a 3, so two 3s go to t2 (6 // 3).
    assert counts[var(agg, 0, "t1")] == 2
    assert counts[var(agg, 1, "t1")] == 0 and counts[var(agg, 1, "t2")] == 2
    assert level_value(agg, 0, counts) == 2 * 5 + 2 * 3


def test_first_fit_decreasing_keeps_a_feasible_start_and_completes_it() -> None:
    agg = aggregate(*TWO_TARGETS)
    start = [0, 1, 0]  # one 3 already on t1: now only one 5 fits there (3 + 4 + 4 > 10)
    counts = first_fit_decreasing(agg, start)
    # The 5 takes 4 of the 7 left; a second 3 fits the last 3 of t1; the third goes to t2.
    assert counts == [1, 2, 1]
    for row in agg.rows:  # every row still holds
        assert sum(c * counts[v] for c, v in row.terms) <= row.rhs


def test_best_hint_takes_the_rounded_lp_when_greedy_is_worse() -> None:
    # One member worth 10 fills t1 alone; two worth 6 fit together. Greedy takes the 10.
    agg = aggregate(
        [Cls(1, 10, [("t1", 0)], use={"t1": 6}), Cls(2, 6, [("t1", 0)], use={"t1": 3})], {"t1": 6}
    )
    greedy = first_fit_decreasing(agg)
    assert level_value(agg, 0, greedy) == 10
    bound, values = lp_solve(agg)
    assert bound == 12.0
    assert values is not None and rounded(agg, values) == [0, 2]
    assert best_hint(agg, values) == [0, 2]
    assert best_hint(agg, None) == greedy  # no LP: greedy


def test_previous_hint_is_the_aggregates_start_or_none() -> None:
    agg = aggregate(*TWO_TARGETS)
    assert previous_hint(agg) is None
    agg.start = [1, 0, 0]
    hint = previous_hint(agg)
    assert hint == [1, 0, 0] and hint is not agg.start
