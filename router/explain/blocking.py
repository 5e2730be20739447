"""What keeps an unplaced workload out, as a minimal set of reasons, and what would let it in.

The question answered is "why could it not be placed next to the work the plan placed?".
The other workloads stay where the plan put them (their usage of every row is a constant),
the workload is forced onto one of its candidates (Σ_t x_t = 1), and every constraint that
could stop it is guarded by an assumption literal. Constraints are grouped into *reasons* a
person can act on: all capacity rows of one target (GPUs, CPUs, memory, nodes: they all grow
with the target's node count) are one reason; each quota limit is one reason; any other row
kind is a reason of its own.

CP-SAT proves the model infeasible under all assumptions and returns a sufficient subset
(`sufficient_assumptions_for_infeasibility`); deletion then drops each remaining reason in turn
and keeps it out when the rest is still infeasible, so the result is minimal: every reason in
it is needed. Deletion tries the narrowest reasons (those blocking fewest candidates) first,
so one quota that blocks every target wins over one full target per candidate. The model uses
one worker and a fixed seed, so the same plan always gets the same reasons (plan.json is
byte-stable).

Two ways to let it in are computed, both checked against the same rows:
  * the smallest change: for each candidate, every reason blocking it there with the amount
    it must grow by; the candidate needing the fewest changes wins;
  * displacement: the least placed work (priority × work, as the objective counts it) whose
    removal would make room on one candidate, which is why the optimiser did not do it.
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from typing import Any

from router.evaluate.evaluate import Candidate
from router.explain.noderoom import NodeRoom
from router.solve.greedy import rows_of
from router.solve.problem import Problem, Row

Key = tuple[str, ...]
CAPACITY_KINDS = ("capacity", "nodes")


def reason_key(row: Row) -> Key:
    if row.kind in CAPACITY_KINDS:
        return ("capacity", row.subject)
    return (row.kind, row.subject, row.resource)


class PlanState:
    """The plan's usage of every row, computed once and shared by all explanations, and what
    its nodes have left (`nodes`: the plan's node assignment, SolveResult.nodes).

    Read in the aggregate model's terms (aggregate.py: one variable per class of identical
    workloads and candidate), which the per-workload rows are expanded from row by row: a
    per-workload variable v stands for its class's variable `agg_var(v)` with the same
    coefficients, and a row's usage is Σ coefficient × the class's placed count. So building
    it costs the aggregate rows and the placements, not every workload times its rows; and
    a row's kind, subject and bounds are read from `agg.rows` (the same, index for index),
    never from the expanded per-workload rows."""

    def __init__(
        self,
        problem: Problem,
        assignment: dict[str, Candidate],
        nodes: dict[str, list[tuple[str, int]]] | None = None,
    ) -> None:
        agg = problem.aggregate
        assert agg is not None, "a Problem is expanded from its aggregate (problem.expand)"
        self.problem = problem
        self.agg = agg
        self.assignment = assignment
        self.nodes = nodes
        self.room = NodeRoom(self)
        # "not a candidate" reasons (reasons.excluded_texts) per (routing signature, rel):
        # decisions of one signature share their exclusions.
        self.excluded: dict[Hashable, list[str]] = {}
        self.index = {d.workload.name: i for i, d in enumerate(problem.decisions)}
        self.group_of = [0] * len(problem.decisions)
        # Matched by (workload, target id), not object identity, so a re-built problem works.
        self.chosen: dict[int, int] = {}
        count = [0] * len(agg.variables)
        # Per class variable, the placed per-workload variables, in the order the expanded
        # rows list them (class members in name order): members() keeps that order.
        self._placed: dict[int, list[int]] = {}
        for g, group in enumerate(agg.groups):
            # A class's members have its candidates, in its order (aggregate.py).
            at = {c.target.id: j for j, c in enumerate(group.candidates)}
            for i in group.members:
                self.group_of[i] = g
                cand = assignment.get(problem.decisions[i].workload.name)
                if cand is None:
                    continue
                j = at[cand.target.id]
                v = problem.choices[i][j]
                self.chosen[i] = v
                av = agg.choices[g][j]
                count[av] += 1
                self._placed.setdefault(av, []).append(v)
        self._rows_of = rows_of(agg)  # class variable -> [(row, coef)]
        self.used = [sum(c * count[av] for c, av in row.terms) for row in agg.rows]
        self._members: dict[int, list[tuple[int, int]]] = {}
        self._weight: list[int] | None = None
        self._weights: dict[int, int] = {}
        for level in agg.levels:
            if level.name == "placed_work":
                self._weight = [0] * len(agg.variables)
                for c, av in level.terms:
                    self._weight[av] = c
        # overflows_at(v) without `minus` reads only v's class variable: once per class.
        self._over: dict[int, dict[Key, list[Overflow]]] = {}
        self._class_of: dict[int, int] = {}  # model class -> class of reasons
        self._classes: dict[Hashable, int] = {}

    def agg_var(self, v: int) -> int:
        """The class variable a per-workload variable is expanded from. A workload's
        variables are consecutive, in its candidates' order (problem.expand)."""
        i = self.problem.variables[v][0]
        return self.agg.choices[self.group_of[i]][v - self.problem.choices[i][0]]

    def rows(self, v: int | None) -> list[tuple[int, int]]:
        """The rows variable v counts in: [(row, coefficient)], rows in order."""
        return [] if v is None else self._rows_of[self.agg_var(v)]

    def members(self, r: int) -> list[tuple[int, int]]:
        """The placed variables row r counts: [(variable, coefficient)]."""
        found = self._members.get(r)
        if found is None:
            row = self.agg.rows[r]
            found = [(v, c) for c, av in row.terms for v in self._placed.get(av, ())]
            self._members[r] = found
        return found

    def weight(self, v: int, default: int = 1) -> int:
        """Variable v's placed work, as the objective counts it."""
        if self._weight is None:
            return default
        w = self._weights.get(v)
        if w is None:  # asked for every occupant of every row a displacement reads
            w = self._weights[v] = self._weight[self.agg_var(v)]
        return w

    def workload_of(self, v: int) -> Any:
        return self.problem.decisions[self.problem.variables[v][0]].workload

    def class_key(self, i: int) -> int:
        """Unplaced workload i's class of reasons: workloads with the same key read the same
        of everything blocking() and the reasons' words read, so they have the same reasons,
        word for word. That is, per candidate (in its order) the target, rank, preference,
        resources and the rows it counts in with their coefficients (so its quota and spread
        memberships). Computed once per class of the model, as a small number."""
        g = self.group_of[i]
        key = self._class_of.get(g)
        if key is None:
            group = self.agg.groups[g]
            content = tuple(
                (c.target.id, c.rank, c.pref, c.resources, tuple(self._rows_of[av]))
                for av, c in zip(self.agg.choices[g], group.candidates, strict=True)
            )
            key = self._class_of[g] = self._classes.setdefault(content, len(self._classes))
        return key


def is_cut(row: Row) -> bool:
    """A per-node cut row (aggregate.cut_rows): the nodes decide it, not its numbers."""
    return row.kind == "nodes" and row.resource != "nodes"


@dataclass
class Overflow:
    """One row a candidate would break: `used` by others, `need` by the workload."""

    row: int
    used: int
    need: int
    rhs: int
    # Capacity decided node by node (noderoom.py): what the nodes have left, in words, and
    # how many more empty nodes would let it in. `row` is then one of the target's rows.
    text: str = ""
    more_nodes: int = 0


@dataclass
class Blocking:
    workload: int
    candidates: list[int]  # the workload's variables, best (rank, pref, target) first
    overflows: dict[int, dict[Key, list[Overflow]]]  # var -> reason -> rows it breaks
    core: list[Key]  # minimal reasons
    fits_alone: bool  # no row stops it: the solver stopped before placing it
    keys: list[Key] = field(default_factory=list)

    def blocked_by(self, key: Key) -> list[int]:
        return [v for v in self.candidates if key in self.overflows[v]]


def overflows_at(state: PlanState, v: int, minus: int | None = None) -> dict[Key, list[Overflow]]:
    """Rows that placing variable v would break, others as planned (less variable `minus`,
    the workload's own placement when asking about a placed workload's other targets).
    Without `minus` the answer is its class's, computed once and shared: do not change it."""
    if minus is None:
        av = state.agg_var(v)
        found = state._over.get(av)
        if found is None:
            found = state._over[av] = _overflows(state, v, None)
        return found
    return _overflows(state, v, minus)


def _overflows(state: PlanState, v: int, minus: int | None) -> dict[Key, list[Overflow]]:
    out: dict[Key, list[Overflow]] = {}
    minus_rows = dict(state.rows(minus))
    mine = state.rows(v)
    carrier: int | None = None
    for r, need in mine:
        row = state.agg.rows[r]
        if row.kind in CAPACITY_KINDS:
            if carrier is None and row.kind == "capacity":
                carrier = r
            continue  # decided on the nodes, below
        used = state.used[r] - minus_rows.get(r, 0)
        if used + need > row.rhs:
            out.setdefault(reason_key(row), []).append(Overflow(r, used, need, row.rhs))
    blocked = state.room.blocked(v, minus)
    if blocked is not None:
        text, more = blocked
        found = []
        for r, need in mine:
            row = state.agg.rows[r]
            used = state.used[r] - minus_rows.get(r, 0)
            if row.kind in CAPACITY_KINDS and not is_cut(row) and used + need > row.rhs:
                found.append(Overflow(r, used, need, row.rhs, "", more))
        if found:  # the sums are short too: the nodes' words lead, the sums follow
            found[0] = replace(found[0], text=text)
        elif carrier is not None:
            used = state.used[carrier] - minus_rows.get(carrier, 0)
            need = dict(mine)[carrier]
            found.append(Overflow(carrier, used, need, state.agg.rows[carrier].rhs, text, more))
        if found:
            out[("capacity", state.problem.variables[v][1].target.id)] = found
    return out


def _sort_vars(state: PlanState, vs: list[int]) -> list[int]:
    def key(v: int) -> tuple[int, int, str]:
        c = state.problem.variables[v][1]
        return (c.rank, c.pref, c.target.id)

    return sorted(vs, key=key)


def blocking(state: PlanState, i: int) -> Blocking:
    """The minimal reasons workload i (unplaced) cannot join the plan; see the module doc."""
    cands = _sort_vars(state, list(state.problem.choices[i]))
    over = {v: overflows_at(state, v) for v in cands}
    keys = sorted({k for o in over.values() for k in o})
    b = Blocking(i, cands, over, [], fits_alone=any(not o for o in over.values()), keys=keys)
    if b.fits_alone or not cands:
        return b
    b.core = _minimal_core(state, cands, keys, over)
    return b


def _minimal_core(
    state: PlanState, cands: list[int], keys: list[Key], over: dict[int, dict[Key, list[Overflow]]]
) -> list[Key]:
    # How many candidates each reason blocks, counted once: the sorts below ask it often.
    blocks = {k: sum(1 for v in cands if k in over[v]) for k in keys}

    def breadth(k: Key) -> tuple[int, int, Key]:
        return (blocks[k], 0 if k[0] == "capacity" else 1, k)

    # A reason that blocks every candidate is a core of one, minimal by definition: the
    # common case (one full quota, one candidate), answered without a solver, which matters
    # when a large plan leaves thousands unplaced. A policy quota is preferred over a
    # target's capacity, as deletion below prefers it.
    whole = [k for k in keys if breadth(k)[0] == len(cands)]
    if whole:
        return [min(whole, key=lambda k: (-breadth(k)[1], k))]
    # Each candidate blocked by one reason of its own (a full target each, as packing node
    # by node leaves many): all of them are the one minimal core, again without a solver.
    if len(keys) == len(cands) and all(len(over[v]) == 1 for v in cands):
        return sorted(keys, key=lambda k: (-breadth(k)[0], k))

    from ortools.sat.python import cp_model  # only when something is unplaced

    model = cp_model.CpModel()
    x = {v: model.new_bool_var(f"x{v}") for v in cands}
    model.add_exactly_one(x.values())
    lit = {k: model.new_bool_var("/".join(k)) for k in keys}
    for v in cands:  # capacity is decided on the nodes, candidate by candidate
        for k, _ in over[v].items():
            if k[0] == "capacity":
                model.add(x[v] == 0).only_enforce_if(lit[k])
    terms_of: dict[int, list[tuple[int, int]]] = {}  # row -> [(coef, candidate)]
    for v in cands:
        for r, coef in state.rows(v):
            terms_of.setdefault(r, []).append((coef, v))
    for r, terms in sorted(terms_of.items()):
        row = state.agg.rows[r]
        k = reason_key(row)
        if k not in lit or row.kind in CAPACITY_KINDS:
            continue  # a row no candidate would break never matters
        model.add(sum(coef * x[v] for coef, v in terms) <= row.rhs - state.used[r]).only_enforce_if(
            lit[k]
        )

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0

    def infeasible(assumed: list[Key]) -> bool:
        model.clear_assumptions()
        model.add_assumptions([lit[k] for k in assumed])
        return bool(solver.solve(model) == cp_model.INFEASIBLE)

    assert infeasible(keys), "blocking() found every candidate blocked"
    by_index = {lit[k].index: k for k in keys}
    core = [
        by_index[i] for i in solver.sufficient_assumptions_for_infeasibility() if i in by_index
    ] or list(keys)

    # Narrow reasons go first so that one broad reason can stand for many narrow ones.
    for k in sorted(core, key=breadth):
        rest = [c for c in core if c != k]
        if rest and infeasible(rest):
            core = rest
    return sorted(core, key=lambda k: (-breadth(k)[0], k))


def _cover_model(state: PlanState, overflows: dict[Key, list[Overflow]]) -> Any:
    """The least placed work to remove so the rows broken have room: (model, y, occupants)."""
    from ortools.sat.python import cp_model

    rows = [o for os in overflows.values() for o in os]
    occupants = sorted({m for o in rows for m, _ in state.members(o.row)})
    model = cp_model.CpModel()
    y = {m: model.new_bool_var(f"y{m}") for m in occupants}
    for o in rows:
        freed = [(coef, m) for m, coef in state.members(o.row)]
        model.add(sum(coef * y[m] for coef, m in freed) >= o.used + o.need - o.rhs)
    model.minimize(sum(state.weight(m) * y[m] for m in occupants))
    return model, y, occupants


def displacement(
    state: PlanState,
    v: int,
    overflows: dict[Key, list[Overflow]],
    least: int | None = None,
    built: Any = None,
) -> tuple[list[int], int] | None:
    """The least placed work to remove so variable v fits: (chosen variables, their weight).
    `least`, a proven lower bound (cover_bound), ends the search at the first solution that
    reaches it: the solution the search would end with anyway (each one it finds is lighter
    than the last, and none is lighter than the bound), without its seconds spent proving."""
    from ortools.sat.python import cp_model

    model, y, occupants = built or _cover_model(state, overflows)
    if not occupants:
        return None

    class Enough(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self) -> None:
            if least is not None and self.objective_value <= least:
                self.stop_search()

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_deterministic_time = 5.0
    if solver.solve(model, Enough()) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    chosen = [m for m in occupants if solver.value(y[m])]
    return chosen, sum(state.weight(m) for m in chosen)


def cover_bound(
    state: PlanState, overflows: dict[Key, list[Overflow]], built: Any = None
) -> int | None:
    """A proven lower bound on displacement()'s weight, in milliseconds, usually its optimum;
    None when there is no cover at all. The same model, solved without CP-SAT's presolve
    (whose clique and dominance passes on these covers of thousands of occupants take
    seconds) and with its LP relaxation at every node (linearization_level 2)."""
    from ortools.sat.python import cp_model

    model, _, occupants = built or _cover_model(state, overflows)
    if not occupants:
        return None
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.cp_model_presolve = False
    solver.parameters.linearization_level = 2
    solver.parameters.max_deterministic_time = 1.0
    if solver.solve(model) == cp_model.INFEASIBLE:
        return None
    bound = solver.best_objective_bound
    return math.ceil(bound - 1e-6) if math.isfinite(bound) else 0


# Occupants by weight per unit freed, compared exactly (w1/c1 < w2/c2 as w1·c2 < w2·c1).
def _by_unit(a: tuple[int, int], b: tuple[int, int]) -> int:
    return a[1] * b[0] - b[1] * a[0]


_per_unit = functools.cmp_to_key(_by_unit)


def least_work(state: PlanState, overflows: dict[Key, list[Overflow]]) -> int | None:
    """A lower bound on displacement()'s weight without a solver; None when removing all
    placed work in the way is not enough (displacement() finds none either). Per row broken,
    any cover of its shortfall removes at least its lightest occupant, and at least the LP
    bound (occupants by weight per unit freed, the last one in part); the largest of these
    over the rows, in exact integers."""
    bound = 0
    for os in overflows.values():
        for o in os:
            short = o.used + o.need - o.rhs
            if short <= 0:
                continue  # the sums have room (the nodes do not): no cover needed here
            items = [(c, state.weight(m)) for m, c in state.members(o.row) if c > 0]
            if sum(c for c, _ in items) < short:
                return None
            items.sort(key=_per_unit)
            lp, left = 0, short
            for c, w in items:
                if c >= left:
                    lp += -(-w * left // c)  # the last one in part, rounded up
                    break
                lp, left = lp + w, left - c
            bound = max(bound, lp, min(w for _, w in items))
    return bound


def best_displacement(state: PlanState, b: Blocking) -> tuple[int, list[int], int] | None:
    """Over all candidates, the cheapest displacement: (variable, displaced, their weight),
    the first candidate (in candidate order) of the least weight among those whose removal
    also leaves a node for it.

    Each displacement() is a CP-SAT solve of its own, up to seconds on a large plan, so the
    candidates go best bound first: each starts with least_work's, is bounded again with
    cover_bound's when it comes first, and is solved when it comes first again. Once the
    least bound left cannot come before the best so far (weight, then candidate order),
    no other can: the answer is the one solving every candidate in order gives, sooner."""
    heap: list[tuple[int, int, bool, int]] = []  # (bound, position, bounded again, variable)
    for pos, v in enumerate(b.candidates):
        lower = least_work(state, b.overflows[v])
        if lower is not None:
            # One row to cover: CP-SAT proves such a cover at once, a second bound costs more.
            rows = sum(1 for os in b.overflows[v].values() for o in os if o.used + o.need > o.rhs)
            heap.append((lower, pos, rows <= 1, v))
    heapq.heapify(heap)
    models: dict[int, Any] = {}  # one model per candidate, for its bound and its solve
    best: tuple[int, int, int, list[int]] | None = None  # (weight, position, variable, chosen)
    while heap:
        lower, pos, again, v = heapq.heappop(heap)
        if best is not None and (lower, pos) > best[:2]:
            break
        if v not in models:
            models[v] = _cover_model(state, b.overflows[v])
        if not again:
            least = cover_bound(state, b.overflows[v], models[v])
            if least is not None:
                heapq.heappush(heap, (max(lower, least), pos, True, v))
            continue
        d = displacement(state, v, b.overflows[v], lower, models[v])
        if d is None or (best is not None and (d[1], pos) > best[:2]):
            continue
        gone = frozenset(state.workload_of(m).name for m in d[0])
        if state.room.blocked(v, without=gone) is not None:
            continue  # room in the sums, but still no node for it: no displacement helps
        best = (d[1], pos, v, d[0])
    return None if best is None else (best[2], best[3], best[0])


def smallest_fix(
    b: Blocking, cost: Callable[[Key, list[Overflow]], float]
) -> tuple[int, list[Key]] | None:
    """The candidate needing the fewest changes (then the smallest, then the best ranked)."""
    best: tuple[tuple[int, float, int], int, list[Key]] | None = None
    for pos, v in enumerate(b.candidates):
        keys = sorted(b.overflows[v])
        score = (len(keys), sum(cost(k, b.overflows[v][k]) for k in keys), pos)
        if best is None or score < best[0]:
            best = (score, v, keys)
    return None if best is None else (best[1], best[2])
