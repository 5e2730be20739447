"""Node patterns generated on demand (column generation), for the checker's identical nodes.

router/plan/patterns.py lists every maximal pattern, which is exact but blows up on big nodes
with many small task types (a CPU partition of 128-CPU nodes and 2-CPU jobs: millions). Here
the patterns are priced in, one at a time, as the LP relaxation of the pattern model asks for
them (Gilmore-Gomory):

  * the restricted LP  min Σ z_p  s.t.  Σ_p a_pt z_p ≥ d_t  gives duals π_t ≥ 0;
  * pricing, an exact bounded knapsack on one node (CP-SAT), finds the pattern of largest
    π·a; while it is above 1 the pattern joins the LP.

A proof that nothing packs: for ANY π ≥ 0, every packing on z nodes has
Σ_p z_p π·a_p ≥ π·d, so it needs at least π·d / max_p π·a_p nodes (Farley's bound). The duals
are rounded down to integers first, so the bound is checked in integer arithmetic: exact,
whatever GLOP's rounding. A witness that it packs: diving on the LP solution (a batch of
the columns of largest z at once, each on its integer part or one node, up to half of the
nodes left; else the largest alone; the rest re-solved), then CP-SAT over the patterns
generated; a packing found is dealt to nodes by the caller. The batch matters where most z
are below 1 (awkward medium seed 2's 114 nodes and 177 job types: one node a step ran out
of DIVE_STEPS at every ask, undecided in 20 s; a batch step packs each in 5-10 s).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

SCALE = 1 << 20  # duals are scaled by this and rounded down to integers
MAX_COLUMNS = 1500  # patterns priced in per LP, at most
DIVE_TRIES = 3  # patterns tried at each step of the dive, largest z first ...
DIVE_STEPS = 40  # ... and LPs re-solved in all, steps back included
LAST_NODES = 3  # the dive's last nodes, packed exactly (CP-SAT per node)
LAST_LIMIT = 0.2  # deterministic seconds of that last step
PRICE_LIMIT = 0.05  # deterministic seconds of one pricing knapsack (almost always optimal)


@dataclass(frozen=True)
class Kind:
    """A task type on one node: what one task needs (per dimension), how many one node may
    hold (its units at most, and what fits), how many tasks in all, whole node or not."""

    need: tuple[int, ...]
    most: int
    demand: int
    whole: bool


Pattern = dict[int, int]  # type index -> tasks on one node
Known = tuple[tuple[tuple[int, int], ...], ...]  # patterns as (type index, count) pairs
# Every maximal pattern of these (non-whole) types, as counts per type; None: too many.
Enumerate = Callable[[tuple[int, ...], list[Kind]], list[tuple[int, ...]] | None]


@dataclass
class Generated:
    """What column generation found: a proof of no (`packs` False), a packing (True: node
    patterns, one per node used), or neither (None)."""

    packs: bool | None
    nodes: list[Pattern] = field(default_factory=list)
    columns: int = 0


def decide(
    cap: tuple[int, ...],
    kinds: list[Kind],
    count: int,
    limit: float,
    enumerate_: Enumerate,
    seed: Known = (),
) -> Generated:
    """Whether `kinds` pack onto `count` identical nodes of capacity `cap` (module doc):
    the LP proof, else a dive, else CP-SAT over the patterns generated (`limit`). `seed`:
    patterns (type index, count) to start from beside one per type."""
    cached, lp = _relaxed(cap, tuple(kinds), seed)
    if lp.proof_needs > count:
        return Generated(False, columns=len(cached))
    columns = list(cached)  # the dive prices more in: the cached ones stay as they were
    dived = _dive(cap, kinds, columns, count, lp, enumerate_, limit)
    if dived is not None:
        return Generated(True, dived, len(columns))
    return _integer(kinds, columns, count, limit)


def witness(
    cap: tuple[int, ...], kinds: list[Kind], count: int, limit: float = LAST_LIMIT
) -> list[Pattern] | None:
    """A packing by the dive alone (no enumeration of patterns, no CP-SAT over them): the
    packcheck's witness finder, cheap where it fails. None proves nothing."""
    columns, lp = _relaxed(cap, tuple(kinds), ())  # the key a check without seed uses
    if not lp.z or lp.proof_needs > count:
        return None
    return _dive(cap, kinds, list(columns), count, lp, lambda _cap, _kinds: None, limit)


@functools.lru_cache(maxsize=8)
def _relaxed(
    cap: tuple[int, ...],
    kinds: tuple[Kind, ...],
    seed: Known = (),
) -> tuple[tuple[Pattern, ...], _LP]:
    """The LP of the whole demand and its columns: they do not depend on the node count, so
    checks of the same work on more or fewer nodes (scale_out's search in
    router/plan/packcheck.py: 22 s of column generation each on awkward medium seed 2's 114
    nodes and 200 task types) share one. Callers copy the columns before adding to them.
    The seed's patterns join the first columns where they fit (counts within each type's
    most): one more job added to a converged LP takes a few rounds, not a thousand. Callers
    pass the seed always, () for none: the cache keys on the arguments as given."""
    columns = _start(cap, list(kinds))
    seen = {tuple(sorted(p.items())) for p in columns}
    for items in seed:
        pattern = {k: min(n, kinds[k].most) for k, n in items if not kinds[k].whole}
        pattern = {k: n for k, n in pattern.items() if n > 0}
        used = [sum(kinds[k].need[d] * n for k, n in pattern.items()) for d in range(len(cap))]
        key = tuple(sorted(pattern.items()))
        if pattern and key not in seen and all(u <= c for u, c in zip(used, cap, strict=True)):
            seen.add(key)
            columns.append(pattern)
    lp = _generate(cap, list(kinds), [k.demand for k in kinds], columns)
    return tuple(columns), lp


@dataclass(frozen=True)
class _LP:
    z: list[float]  # per column
    proof_needs: int  # a valid lower bound on nodes (Farley's, exact), rounded up
    value: float


def _fits(kind: Kind, cap: tuple[int, ...]) -> int:
    return min([kind.most, *(c // a for a, c in zip(kind.need, cap, strict=True) if a)])


def _start(cap: tuple[int, ...], kinds: list[Kind]) -> list[Pattern]:
    """One pattern per type: that type alone on a node, as many times as it fits (a whole
    type: once)."""
    out: list[Pattern] = []
    for k, kind in enumerate(kinds):
        fits = all(a <= c for a, c in zip(kind.need, cap, strict=True))
        n = int(fits) if kind.whole else _fits(kind, cap)
        if n > 0:
            out.append({k: n})
    return out


def _generate(
    cap: tuple[int, ...], kinds: list[Kind], demand: list[int], cols: list[Pattern]
) -> _LP:
    """Column generation on `demand` (new patterns appended to `cols`). A pattern is priced
    by the greedy fill first and by the exact knapsack only when the greedy finds none: the
    exact one alone gives Farley's bound, and proves the LP optimal when it finds none."""
    master = _Master(demand, cols)
    best = 0
    for _ in range(MAX_COLUMNS):
        if not master.solve():
            # Some type fits no node at all: no pattern covers it.
            return _LP([], 1 << 30 if any(demand) else 0, 0.0)
        weights = master.weights()
        priced = _greedy(cap, kinds, weights)
        if priced is None:
            priced, kappa, bound = _price(cap, kinds, weights)
            if bound > 0:
                # Farley: every packing needs ≥ π·d / max_p π·a_p nodes, in integers.
                total = sum(w * d for w, d in zip(weights, demand, strict=True))
                best = max(best, -(-total // bound))
            if priced is None or kappa <= SCALE + len(kinds):  # no pattern improves the LP
                break
        cols.append(priced)
        master.add(priced)
    return _LP(master.z, best, master.value)


class _Master:
    """The restricted LP  min Σ z_p  s.t.  Σ_p a_pt z_p ≥ d_t, kept between rounds: a new
    pattern is a column added to it, and GLOP starts again from its last basis (the model
    rebuilt each round cost 6 of the 30 s an ask of the referee took on 120 nodes and 200
    task types, the exact knapsacks most of the rest)."""

    def __init__(self, demand: list[int], cols: list[Pattern]) -> None:
        from ortools.linear_solver import pywraplp  # type: ignore[import-untyped]

        self._ok = pywraplp.Solver.OPTIMAL
        self.lp = pywraplp.Solver.CreateSolver("GLOP")
        self.rows = [self.lp.Constraint(d, self.lp.infinity()) for d in demand]
        self.objective = self.lp.Objective()
        self.objective.SetMinimization()
        self.vars: list[Any] = []
        for p in cols:
            self.add(p)
        self.z: list[float] = []
        self.value = 0.0

    def add(self, pattern: Pattern) -> None:
        var = self.lp.NumVar(0, self.lp.infinity(), "")
        for k, a in pattern.items():
            self.rows[k].SetCoefficient(var, a)
        self.objective.SetCoefficient(var, 1)
        self.vars.append(var)

    def solve(self) -> bool:
        if self.lp.Solve() != self._ok:
            return False
        self.z = [v.solution_value() for v in self.vars]
        self.value = self.objective.Value()
        return True

    def weights(self) -> list[int]:
        """The duals π_t, scaled to integers and rounded down."""
        return [max(0, int(r.dual_value() * SCALE)) for r in self.rows]


def _greedy(
    cap: tuple[int, ...], kinds: list[Kind], weights: list[int], above: float | None = None
) -> Pattern | None:
    """A pattern that improves the LP (weight above 1, or `above`), by filling one node in
    order of weight per share of the node (the largest share, the sum of the shares, CPU and
    memory): cheap, and most rounds need no more. None: none of the orders found one."""
    shared = [k for k, kind in enumerate(kinds) if not kind.whole and weights[k] > 0]
    shares = {
        k: [a / c if c else 0.0 for a, c in zip(kinds[k].need, cap, strict=True)] for k in shared
    }
    sizes: list[Callable[[list[float]], float]] = [max, sum, lambda s: s[1] + s[2]]
    best: Pattern | None = None
    value = SCALE + len(kinds) if above is None else above  # as the exact pricing asks
    for size in sizes:
        order = sorted(shared, key=lambda k: (-weights[k] / (size(shares[k]) or 1e-9), k))
        rem = list(cap)
        pattern: Pattern = {}
        for k in order:
            n = _fits(kinds[k], tuple(rem))
            if n > 0:
                pattern[k] = n
                rem = [r - a * n for r, a in zip(rem, kinds[k].need, strict=True)]
        got = sum(weights[k] * n for k, n in pattern.items())
        if got > value:
            best, value = pattern, got
    return None if best is None else _filled(cap, kinds, best)


def _price(
    cap: tuple[int, ...], kinds: list[Kind], weights: list[int]
) -> tuple[Pattern | None, int, int]:
    """The pattern of largest weight on one node: (pattern, its weight, an upper bound on
    the largest weight: CP-SAT's bound when stopped early, 0 when it found nothing)."""
    from ortools.sat.python import cp_model

    best_whole, whole_at = 0, -1
    for k, kind in enumerate(kinds):
        fits = all(a <= c for a, c in zip(kind.need, cap, strict=True))
        if kind.whole and fits and weights[k] > best_whole:
            best_whole, whole_at = weights[k], k
    shared = [k for k, kind in enumerate(kinds) if not kind.whole and weights[k] > 0]
    pattern: Pattern = {}
    value = bound = 0
    if shared:
        m = cp_model.CpModel()
        x = {k: m.new_int_var(0, _fits(kinds[k], cap), f"x{k}") for k in shared}
        for d, c in enumerate(cap):
            terms = [(x[k], kinds[k].need[d]) for k in shared if kinds[k].need[d]]
            if terms:
                m.add(sum(v * a for v, a in terms) <= c)
        m.maximize(sum(x[k] * weights[k] for k in shared))
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.random_seed = 0
        solver.parameters.max_deterministic_time = PRICE_LIMIT
        status = solver.solve(m)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return None, 0, 0
        pattern = _filled(cap, kinds, {k: int(solver.value(v)) for k, v in x.items()})
        value = sum(weights[k] * n for k, n in pattern.items())
        bound = value if status == cp_model.OPTIMAL else int(solver.best_objective_bound) + 1
    kappa = max(value, best_whole)
    if best_whole > value:
        return {whole_at: 1}, kappa, max(bound, best_whole)
    return (pattern or None), kappa, max(bound, best_whole)


def _filled(cap: tuple[int, ...], kinds: list[Kind], pattern: Pattern) -> Pattern:
    """The pattern with what is left of the node filled by the types it does not hold yet
    (of no weight, or passed over): a maximal pattern serves the dive better."""
    out = {k: n for k, n in pattern.items() if n}
    rem = list(cap)
    for k, n in out.items():
        rem = [r - a * n for r, a in zip(rem, kinds[k].need, strict=True)]
    for k, kind in enumerate(kinds):
        if kind.whole or k in out:
            continue
        n = _fits(kind, tuple(rem))
        if n > 0:
            out[k] = n
            rem = [r - a * n for r, a in zip(rem, kind.need, strict=True)]
    return out


def _dive(
    cap: tuple[int, ...],
    kinds: list[Kind],
    cols: list[Pattern],
    count: int,
    lp: _LP,
    enumerate_: Enumerate,
    limit: float,
) -> list[Pattern] | None:
    """A packing by diving on the LP: a batch of patterns of large z taken at once (_batch),
    else one (its integer part, at least once), while the rest still fits the nodes left by
    the LP, with a few steps back when it does not; the last few nodes (or a rest of few
    maximal patterns) packed exactly. None: not found within DIVE_STEPS re-solved LPs."""
    budget = [DIVE_STEPS]

    def down(left: list[int], z: list[float], nodes: int) -> list[Pattern] | None:
        rest = [replace(k, demand=d, most=min(k.most, d)) for k, d in zip(kinds, left, strict=True)]
        if nodes <= LAST_NODES:
            return _last(cap, rest, nodes, limit)
        found = enumerate_(cap, [k for k in rest if k.demand and not k.whole])
        if found is not None:
            shared = [i for i, k in enumerate(rest) if k.demand and not k.whole]
            every = [{shared[j]: c for j, c in enumerate(p) if c} for p in found]
            every += [{i: 1} for i, k in enumerate(rest) if k.demand and k.whole]
            done = _integer(rest, every, nodes, limit)
            return done.nodes if done.packs else None
        order = sorted((i for i, v in enumerate(z) if v > 1e-9), key=lambda i: (-z[i], i))
        batch = _batch(cols, order, z, left, nodes)
        if len(batch) > 1 and budget[0] > 0:
            budget[0] -= 1
            taken = [cols[i] for i, n in batch for _ in range(n)]
            after = list(left)
            for pattern in taken:
                for k, a in pattern.items():
                    after[k] = max(0, after[k] - a)
            if not any(after):
                return taken
            again = _generate(cap, kinds, after, cols)
            if again.z and again.value <= nodes - len(taken) + 1e-6:
                deeper = down(after, again.z, nodes - len(taken))
                if deeper is not None:
                    return taken + deeper
        for i in order[:DIVE_TRIES]:
            if budget[0] <= 0:
                return None
            budget[0] -= 1
            n = min(nodes, max(1, int(z[i] + 1e-9)))
            after = list(left)
            for k, a in cols[i].items():
                after[k] = max(0, after[k] - a * n)
            if not any(after):
                return [cols[i]] * n
            again = _generate(cap, kinds, after, cols)
            if again.z and again.value <= nodes - n + 1e-6:
                deeper = down(after, again.z, nodes - n)
                if deeper is not None:
                    return [cols[i]] * n + deeper
        return None

    return down([k.demand for k in kinds], lp.z, count)


def _batch(
    cols: list[Pattern], order: list[int], z: list[float], left: list[int], nodes: int
) -> list[tuple[int, int]]:
    """A dive's batch step: (column, nodes) for the columns of largest z, each on its integer
    part (at least one node) while it still covers at least half of what it would have
    covered of the demand before the batch, up to half of the nodes left past LAST_NODES."""
    most = max(2, (nodes - LAST_NODES) // 2)
    after, taken, out = list(left), 0, []
    for i in order:
        if taken >= most:
            break
        n = min(most - taken, max(1, int(z[i] + 1e-9)))
        before = sum(min(a * n, left[k]) for k, a in cols[i].items())
        useful = sum(min(a * n, after[k]) for k, a in cols[i].items())
        if useful <= 0 or 2 * useful < before:
            continue
        for k, a in cols[i].items():
            after[k] = max(0, after[k] - a * n)
        out.append((i, n))
        taken += n
    return out


def _last(
    cap: tuple[int, ...], kinds: list[Kind], nodes: int, limit: float
) -> list[Pattern] | None:
    """The rest on the last few nodes, exactly: CP-SAT with a count per type and node."""
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    live = [k for k, kind in enumerate(kinds) if kind.demand]
    x = {
        (k, n): m.new_int_var(0, 1 if kinds[k].whole else kinds[k].most, "")
        for k in live
        for n in range(nodes)
    }
    for k in live:
        m.add(sum(x[k, n] for n in range(nodes)) >= kinds[k].demand)
    for n in range(nodes):
        for d, c in enumerate(cap):
            m.add(sum(x[k, n] * kinds[k].need[d] for k in live) <= c)
        whole = [k for k in live if kinds[k].whole]
        if whole:
            alone = m.new_bool_var("")
            m.add(sum(x[k, n] for k in whole) == alone)
            for k in live:
                if not kinds[k].whole:
                    m.add(x[k, n] == 0).only_enforce_if(alone)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_deterministic_time = min(limit, LAST_LIMIT)
    if solver.solve(m) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return [
        {k: int(solver.value(x[k, n])) for k in live if solver.value(x[k, n])} for n in range(nodes)
    ]


def _integer(kinds: list[Kind], cols: list[Pattern], count: int, limit: float) -> Generated:
    """CP-SAT over the patterns generated: a packing found is a witness; nothing else is
    proved (other patterns might do)."""
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    z = [m.new_int_var(0, count, f"z{i}") for i in range(len(cols))]
    m.add(sum(z) <= count)
    for k, kind in enumerate(kinds):
        terms = [(z[i], p[k]) for i, p in enumerate(cols) if k in p]
        m.add(sum(v * a for v, a in terms) >= kind.demand)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_deterministic_time = limit
    if solver.solve(m) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Generated(None, columns=len(cols))
    nodes = [p for p, v in zip(cols, z, strict=True) for _ in range(int(solver.value(v)))]
    return Generated(True, nodes, len(cols))
