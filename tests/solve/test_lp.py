"""solve/lp.py on hand-made models (the relaxation's value, residual LPs, level bounds) and
per component beside the solve, on a bench platform."""

from __future__ import annotations

import router
from router.bench.generator import generate
from router.solve.aggregate import Level
from router.solve.decompose import components
from router.solve.greedy import best_hint, level_value
from router.solve.lp import component_lp, lp_level_bound, lp_solve
from tests.solve.handmade import Cls, aggregate, var


def test_lp_bound_is_fractional_where_the_integer_optimum_is_not() -> None:
    # Two members worth 10 that need 4 of a 6-wide target: one fits, the LP takes 1.5.
    agg = aggregate([Cls(2, 10, [("t1", 0)], use={"t1": 4})], {"t1": 6})
    bound, values = lp_solve(agg)
    assert bound is not None and abs(bound - 15.0) < 1e-6
    assert values is not None and abs(values[0] - 1.5) < 1e-6


def test_lp_with_a_start_solves_what_is_left() -> None:
    agg = aggregate(
        [Cls(1, 10, [("t1", 0)], use={"t1": 6}), Cls(2, 6, [("t1", 0)], use={"t1": 3})], {"t1": 6}
    )
    assert lp_solve(agg)[0] == 12.0
    # With one 6 placed (3 of t1 used), what is left holds one more 6 (or half the 10).
    left, more = lp_solve(agg, [0, 1])
    assert left is not None and abs(left - 6.0) < 1e-6
    assert more is not None and abs(more[1] - 1.0) < 1e-6


def test_independent_parts_add_up() -> None:
    agg = aggregate([Cls(3, 2, [("a", 0)]), Cls(3, 5, [("b", 0)])], {"a": 2, "b": 1})
    assert lp_solve(agg)[0] == 2 * 2 + 1 * 5


def test_a_quota_row_over_two_targets_binds_the_sum() -> None:
    agg = aggregate(
        [Cls(4, 1, [("a", 0), ("b", 0)])], {"a": 4, "b": 4}, extra_rows=[([(0, "a"), (0, "b")], 3)]
    )
    assert lp_solve(agg)[0] == 3.0


def test_empty_model() -> None:
    agg = aggregate([], {"t1": 1})
    assert lp_solve(agg) == (0.0, [])


def test_level_bound_under_a_reached_level() -> None:
    # Stability: two planned members were on t1; t1 holds one. With all placed work
    # reached (2), at most one can stay.
    agg = aggregate([Cls(2, 1, [("t1", 0), ("t2", 0)], previous="t1")], {"t1": 1, "t2": 5})
    agg.levels.append(Level("stability", 1, [(1, var(agg, 0, "t1"))]))
    assert lp_level_bound(agg, "stability", {"placed_work": 2}) == 1.0
    assert lp_level_bound(agg, "no-such-level", {}) is None


def test_per_component_lps_and_hints_beside_the_solve() -> None:
    # The LP and the first hint are made per component where it is solved (cpsat.py): the
    # optima added are the whole LP's, and each component starts from the better of its
    # greedy and rounded hints, so no worse than the whole plan's one choice of the two.
    g = generate("M", 1)
    plan = router.plan(
        router.Platform.from_objects(policy=g.policy, inventory=g.inventory, workloads=g.workloads),
        workers=2,
    )
    agg = plan.built.problem.aggregate
    assert agg is not None and agg.nodes is not None
    comps = components(agg)
    assert len(comps) >= 2
    bound, values = lp_solve(agg)
    assert bound is not None and values is not None
    assert plan.built.lp_bound == bound  # the same float, added in the same order
    whole = agg.nodes.fit(best_hint(agg, values))
    hint = plan.built.solve.hint_objective
    assert hint >= level_value(agg, 0, whole)
    total = 0.0
    for comp in comps:
        own, got = component_lp(agg, comp)
        assert own is not None and got is not None
        mine = set(comp.variables)
        assert [got[v] for v in sorted(mine)] == [values[v] for v in sorted(mine)]
        assert not any(x for v, x in enumerate(got) if v not in mine)
        total += own
    assert total == bound
