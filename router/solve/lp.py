"""The LP relaxation of level 1 (placed work), solved with GLOP: an upper bound on any plan.

Reported beside CP-SAT's own bound so a reader can see how far the plan could be from the
best possible, measured against a bound that does not come from the solver being judged.
It relaxes the aggregated model (aggregate.py) — counts 0 ≤ y_kj with Σ_j y_kj ≤ n_k and the
same rows — which has the same integer solutions as the per-workload model, so its LP
optimum bounds every plan. Independent parts are solved apart and their optima added.
"""

from __future__ import annotations

from router.solve.aggregate import Aggregate
from router.solve.decompose import Component, components
from router.solve.problem import Problem


def lp_bound(problem: Problem | Aggregate) -> float | None:
    """max Σ weight·y over the relaxation of the same rows; None if GLOP fails."""
    agg = problem.aggregate if isinstance(problem, Problem) else problem
    if agg is None:
        raise ValueError("the problem has no aggregated form")
    return lp_solve(agg)[0]


def lp_solve(agg: Aggregate, start: list[int] | None = None,
             ) -> tuple[float | None, list[float] | None]:
    """The LP optimum and an optimal solution (per aggregate variable); (None, None) if GLOP
    fails on some component. With `start`, the LP of what is left once those counts are
    placed: the values are counts on top of them (for iterated rounding, greedy.py)."""
    values = [0.0] * len(agg.variables)
    if not agg.variables:
        return 0.0, values
    fixed = start or [0] * len(agg.variables)
    total = 0.0
    for comp in components(agg):
        value = _component_bound(agg, comp, values, fixed)
        if value is None:
            return None, None
        total += value
    return total, values


def _component_bound(agg: Aggregate, comp: Component, values: list[float],
                     fixed: list[int]) -> float | None:
    from ortools.linear_solver import pywraplp  # type: ignore[import-untyped]

    solver = pywraplp.Solver.CreateSolver("GLOP")
    if solver is None:
        return None
    left = {g: len(agg.groups[g].members) - sum(fixed[v] for v in agg.choices[g])
            for g in comp.groups}
    y = {v: solver.NumVar(0.0, float(left[g]), "") for g in comp.groups
         for v in agg.choices[g]}
    for g in comp.groups:
        vs = agg.choices[g]
        if len(vs) > 1:
            ct = solver.Constraint(0.0, float(left[g]))
            for v in vs:
                ct.SetCoefficient(y[v], 1.0)
    for r in comp.rows:
        row = agg.rows[r]
        used = sum(c * fixed[v] for c, v in row.terms)
        ct = solver.Constraint(-solver.infinity(), float(row.rhs - used))
        for c, v in row.terms:
            ct.SetCoefficient(y[v], float(c))
    objective = solver.Objective()
    for g in comp.groups:  # level 1's coefficient of a variable is its class's weight
        for v in agg.choices[g]:
            objective.SetCoefficient(y[v], float(agg.groups[g].weight))
    objective.SetMaximization()
    if solver.Solve() != pywraplp.Solver.OPTIMAL:
        return None
    for v, var in y.items():
        values[v] = var.solution_value()
    return float(objective.Value())
