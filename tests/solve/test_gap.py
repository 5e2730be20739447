"""A large component's level 1 stops at cpsat.LARGE_GAP of CP-SAT's bound, and CP-SAT
then says OPTIMAL: the level is reported FEASIBLE, with its bound, unless the value meets
the bound (the solver is honest about what it proved)."""

from __future__ import annotations

from pathlib import Path

import pytest

from router.solve import cpsat
from router.solve.decompose import components
from router.solve.greedy import best_hint
from router.solve.lp import lp_solve
from tests.solve.test_benders import _aggregate

SLOW = Path(__file__).parents[1] / "pack" / "data" / "audit" / "slow-awkward-20"


def test_a_level_stopped_by_the_gap_limit_is_not_optimal(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every component is "large" here, and half the bound is near enough: the search stops
    # at its first solution, well below the bound.
    monkeypatch.setattr(cpsat, "SMALL_COMPONENT", 0)
    monkeypatch.setattr(cpsat, "LARGE_GAP", 0.5)
    agg = _aggregate(SLOW)
    counts = best_hint(agg, lp_solve(agg)[1])
    assert agg.nodes is not None
    counts = agg.nodes.fit(counts)
    (comp,) = components(agg)
    terms = [[(c, v) for c, v in level.terms] for level in agg.levels]
    out, _ = cpsat._solve_component(agg, comp, terms, counts, 1.0)
    value, bound, optimal = out[0]
    assert bound > value  # stopped short of the bound
    assert not optimal
