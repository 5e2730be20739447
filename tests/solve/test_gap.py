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


@pytest.mark.parametrize("light", [True, False])
def test_a_large_component_presolves_lightly(monkeypatch: pytest.MonkeyPatch, light: bool) -> None:
    """From LIGHT_PRESOLVE_FROM variables, one presolve pass and no probing (half of level
    1's time at bench L); below it, CP-SAT's own presolve settings."""
    from ortools.sat.python import cp_model

    monkeypatch.setattr(cpsat, "LIGHT_PRESOLVE_FROM", 0 if light else 10**9)
    seen: list[tuple[int, int]] = []
    real = cp_model.CpSolver.solve

    def solve(self: cp_model.CpSolver, model: cp_model.CpModel, *args: object) -> object:
        seen.append(
            (self.parameters.max_presolve_iterations, self.parameters.cp_model_probing_level)
        )
        return real(self, model)

    monkeypatch.setattr(cp_model.CpSolver, "solve", solve)
    agg = _aggregate(SLOW)
    assert agg.nodes is not None
    counts = agg.nodes.fit(best_hint(agg, lp_solve(agg)[1]))
    (comp,) = components(agg)
    terms = [[(c, v) for c, v in level.terms] for level in agg.levels]
    cpsat._solve_component(agg, comp, terms, counts, 0.2)
    defaults = cp_model.CpSolver().parameters
    default = (defaults.max_presolve_iterations, defaults.cp_model_probing_level)
    assert seen[0] == ((1, 0) if light else default)  # level 1's solve (packing checks follow)
    assert default != (1, 0)
