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
κ_c of a proof) when the greedy finds none.

Where the LP is 0 (a fractional packing), `packed` dives on it for an integer one: the
pattern of largest z_cp gives class c that many nodes (its integer part, at least one), the
demand and N_c are lowered and the LP solved again, a few patterns tried at each step; the
patterns found are dealt to the class's nodes (the caller checks the assignment node by
node). The per-node search finds most packings first; this finds those it
misses where running work makes many classes (running medium seed 0: 18 of the referee's
36 undecided asks pack, by moving a dozen jobs over 9 of 78 nodes).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from router.plan.columns import SCALE, Kind, Pattern, _greedy, _price
from router.plan.packdata import Problem, Work, deal
from router.plan.patterns import _dims, _vector

ROUNDS = 300  # LPs solved, at most (running medium audits: 30-40)
DIVE_TRIES = 3  # patterns tried at each step of a dive, largest z first ...
DIVE_LPS = 200  # ... and LPs solved in all (each priced in up to ROUNDS times)


def proves_short(problem: Problem, work: list[Work]) -> bool:
    """True when the LP proves that `work` does not pack onto the problem's nodes."""
    _, kinds, classes = _setup(problem, work)
    return _short(kinds, classes)


def _setup(
    problem: Problem, work: list[Work]
) -> tuple[list[tuple[tuple[int, ...], int, bool, str]], list[Kind], list[_Class]]:
    """The task types (keys: need, tasks, whole, target) and the node classes."""
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
    members: dict[tuple[tuple[int, ...], bool, tuple[str, ...]], list[int]] = defaultdict(list)
    for i, node in enumerate(problem.nodes):
        reach = tuple(reached[i])
        cap = (node.gpus, node.cpus, node.memory, *(node.slice_count(p) for p in dims[3:]))
        members[cap, node.idle, reach].append(i)
    classes = []
    for (cap, idle, reach), nodes in sorted(members.items()):
        allowed = [
            k
            for k, kind in enumerate(kinds)
            if keys[k][3] in reach
            and (idle or not kind.whole)
            and all(a <= c for a, c in zip(kind.need, cap, strict=True))
        ]
        if allowed:
            classes.append(_Class(cap, nodes, allowed))
    return keys, kinds, classes


class _Class:
    def __init__(self, cap: tuple[int, ...], nodes: list[int], allowed: list[int]) -> None:
        self.cap, self.nodes, self.allowed = cap, nodes, set(allowed)
        self.count = len(nodes)

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


def packed(problem: Problem, work: list[Work]) -> dict[str, list[list[int]]] | None:
    """A packing of `work` found by diving on the same LP (module doc), for the caller to check
    node by node (packing.check_assignment); None proves nothing. A dive step gives the
    pattern of largest z_cp its integer part of class c's nodes (at least one), lowers the
    demand and N_c and solves again (the patterns priced in as it asks), DIVE_TRIES patterns
    tried at a step, DIVE_LPS LPs in all; it ends when no demand is left, or fails where the
    LP needs slack."""
    keys, kinds, classes = _setup(problem, work)
    lp = _ClassLP(kinds, classes)
    fixed: list[list[Pattern]] = [[] for _ in classes]
    budget = [DIVE_LPS]

    def down() -> bool:
        if not any(lp.demand):
            return True
        if budget[0] <= 0:
            return False
        budget[0] -= 1
        z = lp.solve()
        if z is None:
            return False
        for c, pattern, value in z[:DIVE_TRIES]:
            n = min(lp.left[c], max(1, int(value + 1e-9)))
            before = lp.take(c, pattern, n)
            fixed[c] += [pattern] * n
            if down():
                return True
            del fixed[c][-n:]
            lp.restore(c, before, n)
        return False

    if not down():
        return None
    at: dict[int, Pattern] = {}
    for cls, patterns in zip(classes, fixed, strict=True):
        at.update(zip(cls.nodes, patterns, strict=False))
    left = [k.demand for k in kinds]
    counts: dict[tuple[int, int], int] = {}
    for i in sorted(at):
        for k, a in sorted(at[i].items()):
            take = min(a, left[k])
            if take:
                counts[k, i] = take
                left[k] -= take
    groups: dict[tuple[object, ...], list[Work]] = defaultdict(list)
    dims = _dims(problem, work)
    for w in work:
        groups[_vector(w, dims), w.tasks, w.whole, w.target].append(w)
    assignment: dict[str, list[list[int]]] = {}
    for k, key in enumerate(keys):
        for w, dealt in zip(groups[key], deal(counts, k, groups[key]), strict=True):
            assignment.setdefault(w.name, []).extend(dealt)
    return assignment


class _ClassLP:
    """The LP of the module doc with its demand and class counts lowered as a dive fixes
    nodes; patterns priced in per class (greedy first, exact knapsacks after)."""

    def __init__(self, kinds: list[Kind], classes: list[_Class]) -> None:
        from ortools.linear_solver import pywraplp

        self.kinds, self.classes = kinds, classes
        self.demand = [k.demand for k in kinds]
        self.left = [c.count for c in classes]
        self.lp = pywraplp.Solver.CreateSolver("GLOP")
        self._ok = pywraplp.Solver.OPTIMAL
        self.rows = [self.lp.Constraint(d, self.lp.infinity()) for d in self.demand]
        self.counts = [self.lp.Constraint(-self.lp.infinity(), n) for n in self.left]
        self.objective = self.lp.Objective()
        self.objective.SetMinimization()
        for row in self.rows:
            slack = self.lp.NumVar(0, self.lp.infinity(), "")
            row.SetCoefficient(slack, 1)
            self.objective.SetCoefficient(slack, 1)
        self.columns: list[tuple[int, Pattern, Any]] = []

    def add(self, c: int, pattern: Pattern) -> None:
        var = self.lp.NumVar(0, self.lp.infinity(), "")
        for k, a in pattern.items():
            self.rows[k].SetCoefficient(var, a)
        self.counts[c].SetCoefficient(var, 1)
        self.columns.append((c, pattern, var))

    def take(self, c: int, pattern: Pattern, n: int) -> list[int]:
        """n nodes of class c on `pattern`: the demand they cover and the nodes go; the
        demand as it was is returned (for restore)."""
        before = list(self.demand)
        for k, a in pattern.items():
            self.demand[k] = max(0, self.demand[k] - a * n)
            self.rows[k].SetLb(self.demand[k])
        self.left[c] -= n
        self.counts[c].SetUb(self.left[c])
        return before

    def restore(self, c: int, before: list[int], n: int) -> None:
        self.demand = before
        for row, d in zip(self.rows, before, strict=True):
            row.SetLb(d)
        self.left[c] += n
        self.counts[c].SetUb(self.left[c])

    def solve(self) -> list[tuple[int, Pattern, float]] | None:
        """The columns of positive z, largest first, when the LP covers the demand without
        slack (priced until it does, or no pattern improves it: None)."""
        margin = len(self.kinds)
        for _ in range(ROUNDS):
            if self.lp.Solve() != self._ok:
                return None
            if self.objective.Value() < 1e-9:
                z = [(c, p, v.solution_value()) for c, p, v in self.columns]
                live = [(c, p, x) for c, p, x in z if x > 1e-9 and self.left[c] > 0]
                order = sorted(range(len(live)), key=lambda j: (-live[j][2], j))
                return [live[j] for j in order]
            pi = [max(0, int(r.dual_value() * SCALE)) for r in self.rows]
            mu = [max(0.0, -r.dual_value() * SCALE) for r in self.counts]
            found = False
            for c, cls in enumerate(self.classes):
                if self.left[c] <= 0:
                    continue
                pattern = cls.mine(_greedy(cls.cap, self.kinds, cls.weights(pi), mu[c] + margin))
                if pattern is None:
                    priced, kappa, _ = _price(cls.cap, self.kinds, cls.weights(pi))
                    pattern = cls.mine(priced) if kappa > mu[c] + margin else None
                if pattern is not None:
                    self.add(c, pattern)
                    found = True
            if not found:
                return None
        return None
