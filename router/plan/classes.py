"""A proof that nothing packs, from the LP of node patterns over several node classes.

router/plan/patterns.py decides identical nodes. Nodes that differ (running work leaves each
its own free capacity; targets reach different node sets) fall into classes: nodes of the same
free capacity, idleness and reaching targets. With N_c nodes in class c, z_cp nodes of class c
holding pattern p (what one node of c can hold: the types its targets reach, within its
capacity, at most a type's units, a whole-node type alone and on an idle node only), d_t tasks
of type t and a slack s_t per type, the LP

    min Σ_t s_t   s.t.  Σ_{c,p} a_pt z_cp + s_t ≥ d_t  (π_t),   Σ_p z_cp ≤ N_c  (μ_c)

is 0 when the work packs. A proof, for ANY π ≥ 0: every packing has
Σ_t π_t d_t ≤ Σ_c Σ_p z_cp π·a_p ≤ Σ_c N_c κ_c, κ_c the largest π·a of a pattern of class c
(an exact knapsack, or CP-SAT's bound on it). So Σ_t π_t d_t > Σ_c N_c κ_c proves that
nothing packs (Farley's bound, router/plan/columns.py, over several classes); the duals are
rounded down to integers, and it is checked in integer arithmetic. Patterns are priced in as
the LP asks for them: a greedy fill per class first, the exact knapsacks (which alone give the
κ_c of a proof) when the greedy finds none. It only proves "no": a packing is left to the
per-node search, which finds those better.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from router.plan.columns import SCALE, Kind, Pattern, _greedy, _price
from router.plan.packdata import Problem, Work
from router.plan.patterns import _dims, _vector

ROUNDS = 300  # LPs solved, at most (running medium audits: 30-40)


def proves_short(problem: Problem, work: list[Work]) -> bool:
    """True when the LP proves that `work` does not pack onto the problem's nodes."""
    dims = _dims(problem, work)
    units: dict[tuple[tuple[int, ...], int, bool, str], int] = defaultdict(int)
    for w in work:
        units[_vector(w, dims), w.tasks, w.whole, w.target] += w.units
    keys = sorted(units)
    kinds = []
    for key in keys:
        need, tasks, whole, _ = key
        kinds.append(Kind(need, units[key], units[key] * tasks, whole))
    reached: dict[int, list[str]] = defaultdict(list)
    for t, r in sorted(problem.reach.items()):
        for i in r:
            reached[i].append(t)
    members: dict[tuple[tuple[int, ...], bool, tuple[str, ...]], int] = defaultdict(int)
    for i, node in enumerate(problem.nodes):
        reach = tuple(reached[i])
        cap = (node.gpus, node.cpus, node.memory, *(node.slice_count(p) for p in dims[3:]))
        members[cap, node.idle, reach] += 1
    classes = []
    for (cap, idle, reach), count in sorted(members.items()):
        allowed = [
            k
            for k, kind in enumerate(kinds)
            if keys[k][3] in reach
            and (idle or not kind.whole)
            and all(a <= c for a, c in zip(kind.need, cap, strict=True))
        ]
        if allowed:
            classes.append(_Class(cap, count, allowed))
    return _short(kinds, classes)


class _Class:
    def __init__(self, cap: tuple[int, ...], count: int, allowed: list[int]) -> None:
        self.cap, self.count, self.allowed = cap, count, set(allowed)

    def weights(self, pi: list[int]) -> list[int]:
        return [w if k in self.allowed else 0 for k, w in enumerate(pi)]

    def mine(self, pattern: Pattern | None) -> Pattern | None:
        """The pattern without the types of no weight that do not reach this class (the
        pricing fills a node with any)."""
        if pattern is None:
            return None
        return {k: n for k, n in pattern.items() if k in self.allowed} or None


def _short(kinds: list[Kind], classes: list[_Class]) -> bool:
    from ortools.linear_solver import pywraplp  # type: ignore[import-untyped]

    lp = pywraplp.Solver.CreateSolver("GLOP")
    rows = [lp.Constraint(k.demand, lp.infinity()) for k in kinds]
    counts = [lp.Constraint(-lp.infinity(), c.count) for c in classes]
    objective = lp.Objective()
    objective.SetMinimization()
    for row in rows:
        slack = lp.NumVar(0, lp.infinity(), "")
        row.SetCoefficient(slack, 1)
        objective.SetCoefficient(slack, 1)

    def add(c: int, pattern: Pattern) -> None:
        var: Any = lp.NumVar(0, lp.infinity(), "")
        for k, a in pattern.items():
            rows[k].SetCoefficient(var, a)
        counts[c].SetCoefficient(var, 1)

    demand = [k.demand for k in kinds]
    margin = len(kinds)  # the duals' rounding, at most 1 a type and pattern count
    for _ in range(ROUNDS):
        if lp.Solve() != pywraplp.Solver.OPTIMAL or objective.Value() < 1e-9:
            return False  # the LP packs it (or failed): nothing proved
        pi = [max(0, int(r.dual_value() * SCALE)) for r in rows]
        mu = [max(0.0, -r.dual_value() * SCALE) for r in counts]
        # Improving patterns: π·a above the class's μ_c.
        found = False
        for c, cls in enumerate(classes):
            pattern = cls.mine(_greedy(cls.cap, kinds, cls.weights(pi), mu[c] + margin))
            if pattern is not None:
                add(c, pattern)
                found = True
        if found:
            continue
        most, proved = 0, True
        for c, cls in enumerate(classes):
            weights = cls.weights(pi)
            priced, kappa, bound = _price(cls.cap, kinds, weights)
            if priced is None and any(weights):
                proved = False  # the knapsack stopped with nothing: no κ_c this round
            most += cls.count * bound
            pattern = cls.mine(priced)
            if pattern is not None and kappa > mu[c] + margin:
                add(c, pattern)
                found = True
        if proved and sum(p * d for p, d in zip(pi, demand, strict=True)) > most:
            return True
        if not found:
            return False
    return False
