"""The LP relaxation of level 1 (placed work), solved with GLOP: an upper bound on any plan.

Reported beside CP-SAT's own bound so a reader can see how far the plan could be from the
best possible, measured against a bound that does not come from the solver being judged.
"""

from __future__ import annotations

from router.solve.problem import Problem


def lp_bound(problem: Problem) -> float | None:
    """max Σ weight·x over the relaxation 0 ≤ x ≤ 1 of the same rows; None if GLOP fails."""
    if not problem.variables:
        return 0.0
    from ortools.linear_solver import pywraplp

    solver = pywraplp.Solver.CreateSolver("GLOP")
    if solver is None:
        return None
    x = [solver.NumVar(0.0, 1.0, "") for _ in problem.variables]
    for vs in problem.choices:
        if len(vs) > 1:
            solver.Add(solver.Sum([x[v] for v in vs]) <= 1)
    for row in problem.rows:
        solver.Add(solver.Sum([c * x[v] for c, v in row.terms]) <= row.rhs)
    level = problem.levels[0]
    solver.Maximize(solver.Sum([c * x[v] for c, v in level.terms]))
    if solver.Solve() != pywraplp.Solver.OPTIMAL:
        return None
    return float(solver.Objective().Value())
