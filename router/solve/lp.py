"""The LP relaxation of level 1 (placed work), solved with GLOP: an upper bound on any plan.

Reported beside CP-SAT's own bound so a reader can see how far the plan could be from the
best possible, measured against a bound that does not come from the solver being judged.
It relaxes the aggregated model (aggregate.py) — counts 0 ≤ y_kj with Σ_j y_kj ≤ n_k and the
same rows — which has the same integer solutions as the per-workload model, so its LP
optimum bounds every plan. Independent parts are solved apart and their optima added.
"""

from __future__ import annotations

import importlib
import math
from typing import Any

from router.gcpause import paused_gc
from router.solve.aggregate import Aggregate
from router.solve.decompose import Component, components


@paused_gc()
def lp_solve(
    agg: Aggregate,
    start: list[int] | None = None,
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


def load() -> None:
    """GLOP's modules imported, here once rather than in every forked child that solves a
    component's LP (each imported them anew: ~0.06 s with protobuf's Python parts)."""
    for name in ("linear_solver_pb2", "pywraplp"):
        importlib.import_module(f"ortools.linear_solver.{name}")


@paused_gc()
def component_lp(agg: Aggregate, comp: Component) -> tuple[float | None, list[float] | None]:
    """lp_solve of one component: its LP optimum and solution (zero off the component), or
    (None, None) if GLOP fails on it. The components' optima, added, are lp_solve's."""
    values = [0.0] * len(agg.variables)
    value = _component_bound(agg, comp, values, [0] * len(agg.variables))
    return (None, None) if value is None else (value, values)


def _relaxation(
    solver: Any,
    agg: Aggregate,
    groups: list[int],
    rows: list[int],
    fixed: list[int],
    floors: bool = False,
) -> dict[int, Any]:
    """The LP variables of `groups` (counts on top of `fixed`) and the constraints: each
    class's members (and, with `floors`, its floor: preempt.py), and the given rows."""
    y: dict[int, Any] = {}
    for g in groups:
        vs = agg.choices[g]
        left = len(agg.groups[g].members) - sum(fixed[v] for v in vs)
        for v in vs:
            y[v] = solver.NumVar(0.0, float(left), "")
        low = float(agg.floors[g]) if floors and agg.floors else 0.0
        if len(vs) > 1 or low:
            ct = solver.Constraint(low, float(left))
            for v in vs:
                ct.SetCoefficient(y[v], 1.0)
    for r in rows:
        row = agg.rows[r]
        used = sum(c * fixed[v] for c, v in row.terms)
        ct = solver.Constraint(-solver.infinity(), float(row.rhs - used))
        for c, v in row.terms:
            ct.SetCoefficient(y[v], float(c))
    return y


def _component_bound(
    agg: Aggregate, comp: Component, values: list[float], fixed: list[int]
) -> float | None:
    """The component's LP optimum, its solution written into `values`. The model is built
    as a proto (whole rows at once) and loaded into GLOP: the same variables, rows and
    order as _relaxation's, so the same optimum and solution, for half the time (bench L:
    0.22 -> 0.10 s, most of it SetCoefficient calls one term at a time)."""
    from ortools.linear_solver import linear_solver_pb2, pywraplp  # type: ignore[import-untyped]

    model = linear_solver_pb2.MPModelProto(maximize=True)
    index: dict[int, int] = {}
    for g in comp.groups:  # level 1's coefficient of a variable is its class's weight
        vs = agg.choices[g]
        left = float(len(agg.groups[g].members) - sum(fixed[v] for v in vs))
        weight = float(agg.groups[g].weight)
        for v in vs:
            index[v] = len(index)
            model.variable.add(lower_bound=0.0, upper_bound=left, objective_coefficient=weight)
        if len(vs) > 1:
            model.constraint.add(
                lower_bound=0.0,
                upper_bound=left,
                var_index=[index[v] for v in vs],
                coefficient=[1.0] * len(vs),
            )
    for r in comp.rows:
        row = agg.rows[r]
        used = sum(c * fixed[v] for c, v in row.terms)
        model.constraint.add(
            lower_bound=-math.inf,
            upper_bound=float(row.rhs - used),
            var_index=[index[v] for _, v in row.terms],
            coefficient=[float(c) for c, _ in row.terms],
        )
    solver = pywraplp.Solver.CreateSolver("GLOP")
    if solver is None or solver.LoadModelFromProto(model):
        return None
    if solver.Solve() != pywraplp.Solver.OPTIMAL:
        return None
    xs = solver.variables()
    for v, k in index.items():
        values[v] = xs[k].solution_value()
    return float(solver.Objective().Value())


def lp_level_bound(agg: Aggregate, level: str, reached: dict[str, int]) -> float | None:
    """The LP bound on level `level` over every plan at least as good as `reached` on the
    levels it names (e.g. the most workloads that can stay, for plans with the same placed
    work and rank): one GLOP model of the whole relaxation, floors included (preempt.py).
    None if GLOP fails or the level is not in the model."""
    from ortools.linear_solver import pywraplp

    by_name = {lv.name: lv for lv in agg.levels}
    if level not in by_name:
        return None
    solver = pywraplp.Solver.CreateSolver("GLOP")
    if solver is None:
        return None
    y = _relaxation(
        solver,
        agg,
        list(range(len(agg.groups))),
        list(range(len(agg.rows))),
        [0] * len(agg.variables),
        floors=True,
    )
    for name, value in reached.items():
        lv = by_name[name]
        lo, hi = (
            (float(value), solver.infinity())
            if lv.sense > 0
            else (-solver.infinity(), float(value))
        )
        ct = solver.Constraint(lo, hi)
        for c, v in lv.terms:
            ct.SetCoefficient(y[v], float(c))
    objective = solver.Objective()
    for c, v in by_name[level].terms:
        objective.SetCoefficient(y[v], float(c))
    if by_name[level].sense > 0:
        objective.SetMaximization()
    else:
        objective.SetMinimization()
    if solver.Solve() != pywraplp.Solver.OPTIMAL:
        return None
    return float(objective.Value())
