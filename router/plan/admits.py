"""The referee of what a plan leaves out: is any workload unplaced that the plan could still take?

A workload is *unplaced for capacity* when the policy routes it (it has candidate targets) and
the plan places it nowhere; denied and unrouted workloads are planned outcomes, not this. It is
*falsely unplaced* when, for one of its candidates (the evaluator's, with the resources the plan
would give it there), adding it to the plan as it stands breaks nothing:

  * every quota limit it counts in (router/evaluate/quota.py: `for` and `per` parts, `on`
    targets, percentages of capacity) stays within its amount with its usage added;
  * every spread group it is in (router/evaluate/spread.py: `for`, `by`, `across`, the even
    share or `max N`) stays within its limit on the candidate's attribute value;
  * its pods, job nodes or whole nodes fit the target's nodes. First *beside* the plan: on what
    the plan's own node assignment (placements[].nodes) and the running work leave free, node by
    node; that is exact in closed form for one placement (identical pods: the sum over nodes of
    how many fit each, capped at the units, must reach units x tasks, McNaughton's deal spreads a
    job's tasks over distinct nodes; whole nodes need idle nodes nobody uses). Then, with
    `repack`, by the exact packing checker (router/plan/packing.py) on the whole capacity
    component with the new work added: the plan's other placements may move between nodes of
    their targets, never between targets. Undecided in its limit is reported, never counted.

A re-pack verdict depends only on the component, the work's shape and its units, so there is
one check per (component, shape, units) asked: shapes smallest first, each shape's counts by
bisection, and dominance (_Known) settles the rest. On identical nodes (most components) a
check is decided by node patterns generated as their LP asks (router/plan/columns.py): "no"
by the LP bound, "yes" by a dive on it; otherwise it starts from the plan's own node
assignment (packing.py `extend`: re-pack a few roomy nodes with the new work) before the
exact search, and what that leaves open may still be "no" by the LP of node patterns over
the component's node classes, or "yes" by a dive on it (router/plan/classes.py). The column
generation of an ask starts from the patterns of the component's own LP (Problem.seed, made
once a component): one job more takes a few rounds, not a thousand. A component's work is
built only when a re-pack is asked of it. Components are independent: `workers` > 1 settles
them in forked processes, merged in a fixed order, so the verdicts do not depend on the
worker count.

`together` (Verdicts.together_by_component): how many of the falsely unplaced fit *at once*,
greedy in name order, each one taken (nodes, quotas, spreads) before the next is tried.

Quotas and spreads are read from router/evaluate (the policy's meaning), capacity from the
inventory and the running work (router.models.capacity); nothing here imports router/solve.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from typing import Any

from router.evaluate.evaluate import Candidate, Decision, Evaluator
from router.evaluate.expr import compile_expr
from router.evaluate.quota import compile_quotas, usage
from router.evaluate.spread import compile_spreads
from router.evaluate.views import workload_view
from router.gcpause import paused_gc
from router.language import ast
from router.models import Inventory, Running, Workload, node_classes
from router.models.placement import Placement
from router.plan.packcheck import Component, components, recorded, work_of
from router.plan.packdata import Seed
from router.plan.packing import Problem, Work, cheap_check, check, exact_check
from router.plan.patterns import lp_patterns

REPACK_LIMIT = 2.0  # deterministic seconds of the exact checker per (component, work shape)
# ... and per check of `together`, sequential (quotas join the components): a lower bound
TOGETHER_LIMIT = 0.5

NodeKey = tuple[str, int]


@dataclass(frozen=True)
class Admitted:
    """A falsely unplaced workload: the candidate that takes it, and how."""

    workload: str
    target: str
    how: str  # "beside": on the nodes the plan leaves free; "re-packed": others moved
    nodes: tuple[NodeKey, ...] = ()  # beside: (node set, index) per pod, job node, whole node

    def __str__(self) -> str:
        where = ", ".join(f"{s}[{i}]" for s, i in self.nodes)
        return f"{self.workload} fits {self.target} {self.how}" + (f" ({where})" if where else "")


@dataclass
class Verdicts:
    """What the referee found over every workload unplaced for capacity."""

    checked: list[str] = field(default_factory=list)  # unplaced for capacity, by name
    pairs: int = 0  # (workload, candidate) pairs tried
    admitted: list[Admitted] = field(default_factory=list)  # falsely unplaced
    undecided: list[tuple[str, str]] = field(default_factory=list)  # (workload, target)
    kept: Counter[str] = field(default_factory=Counter)  # pairs kept out: quota, spread, nodes
    # How many of the admitted fit *together*, per component (its problem id): greedy in
    # name order, each one taken before the next is tried (`_together`).
    together_by_component: Counter[str] = field(default_factory=Counter)

    @property
    def together(self) -> int:
        return sum(self.together_by_component.values())

    @property
    def falsely_unplaced(self) -> int:
        return len(self.admitted)


def referee(
    policy: ast.Policy,
    inventory: Inventory,
    workloads: list[Workload],
    placements: list[Placement],
    running: Running | None = None,
    decisions: list[Decision] | None = None,
    repack: bool = True,
    limit: float = REPACK_LIMIT,
    workers: int = 1,
    together: bool = True,
) -> Verdicts:
    """Every workload unplaced for capacity, tried on each of its candidates (module doc).
    `decisions` may be the evaluator's, already made for these inputs."""
    if decisions is None:
        ev = Evaluator(policy, inventory)
        decisions = [ev.decide(w) for w in workloads]
    placed = {p.workload.name for p in placements}
    out = Verdicts()
    left = [d for d in decisions if d.candidates and d.workload.name not in placed]
    if not left:
        return out
    limits = _Limits(policy, inventory, workloads, decisions, placements)
    free = _Free(inventory, running, placements)
    # The components without their work, filled in (`fill`) only where a re-pack is asked:
    # building every placement's work costs more than all the re-packs of a large plan.
    comps = components(inventory, running, []) if repack else []
    of_target = {t: c for c in comps for t in c.targets}
    pending: list[tuple[Component, Work, str]] = []  # beside failed: for re-packing
    for d in sorted(left, key=lambda d: d.workload.name):
        name = d.workload.name
        out.checked.append(name)
        mine: list[tuple[Component, Work, str]] = []
        for cand in d.candidates:
            out.pairs += 1
            why = limits.keeps_out(d, cand)
            if why:
                out.kept[why] += 1
                continue
            p = Placement(d.workload, cand.target, "", "", cand.rank, cand.options, cand.resources)
            work = work_of(p)
            nodes = free.beside(work, cand.target.node_sets)
            if nodes is not None:
                out.admitted.append(Admitted(name, cand.target.id, "beside", tuple(nodes)))
                mine = []
                break
            comp = of_target.get(cand.target.id)
            if comp is None:
                out.kept["nodes"] += 1
            else:
                mine.append((comp, work, name))
        pending += mine
    # One verdict per (component, work shape, units): what a re-pack depends on. Components
    # are independent, so they may be settled in forked processes; merged in a fixed order.
    asks: dict[int, list[Work]] = defaultdict(list)
    index = {id(c): k for k, c in enumerate(comps)}
    for comp, work, _ in pending:
        asks[index[id(comp)]].append(work)
    theirs: dict[str, list[Placement]] = defaultdict(list)
    for q in placements:
        theirs[q.target.id].append(q)
    starts: dict[int, Start] = {}

    def fill(k: int) -> None:
        """Component k's work (as packcheck.components gives it) and the plan's packing."""
        c = comps[k]
        mine = [q for t in c.targets for q in theirs[t]]
        c.problem.work = [work_of(q) for q in mine]
        starts[k] = recorded(c, mine)

    for k in sorted(asks):
        fill(k)
    settled = settle(comps, asks, starts, limit, workers)
    # Smallest work first in each component (the order the verdicts were always read in).
    pending.sort(key=lambda c: (c[0].targets, _size(c[1]), c[1].slices, c[2]))
    admitted = {a.workload for a in out.admitted}
    for comp, work, name in pending:
        if name in admitted:
            continue
        packs = settled[index[id(comp)]].verdicts[work.shape, work.units]
        if packs:
            out.admitted.append(Admitted(name, work.target, "re-packed"))
            admitted.add(name)
            continue
        if packs is None:
            out.undecided.append((name, work.target))
        out.kept["nodes"] += 1
    out.admitted.sort(key=lambda a: a.workload)
    out.undecided = sorted({u for u in out.undecided if u[0] not in admitted})
    if together:
        chosen = {d.workload.name: d for d in left if d.workload.name in admitted}
        at = {t: k for k, c in enumerate(comps) for t in c.targets}
        for d in chosen.values():
            for cand in d.candidates:
                j = at.get(cand.target.id)
                if j is not None and j not in starts:
                    fill(j)
        out.together_by_component = _together(
            [chosen[a.workload] for a in out.admitted],
            limits,
            free,
            comps,
            starts,
            {k: v.witness for k, v in settled.items()},
            limit,
        )
    return out


def _together(
    decisions: list[Decision],
    limits: _Limits,
    free: _Free,
    comps: list[Component],
    starts: dict[int, Start],
    witness: dict[int, dict[Ask, dict[str, list[list[int]]]]],
    limit: float,
) -> Counter[str]:
    """How many of these (admitted) workloads fit together, per component: in order, each
    tried on its candidates within the quotas and spreads as they stand, beside what is
    taken so far or by a re-pack with it (from the packing so far); taken, it counts in all
    that follows. A re-pack undecided in `limit` does not take it: the count errs low."""
    of_target = {t: k for k, c in enumerate(comps) for t in c.targets}
    added: dict[int, list[Work]] = defaultdict(list)
    # Work that did not fit (or was undecided) stays so as more is added.
    known: dict[int, _Known] = defaultdict(_Known)
    counts: Counter[str] = Counter()
    for d in decisions:
        for cand in d.candidates:
            if limits.keeps_out(d, cand):
                continue
            p = Placement(d.workload, cand.target, "", "", cand.rank, cand.options, cand.resources)
            k = of_target.get(cand.target.id)
            work = work_of(p)
            if k is not None:
                work = replace(work, name=f"\0together{len(added[k])}")  # no workload's name
            nodes = free.beside(work, cand.target.node_sets)
            if nodes is not None:
                free.take(work, nodes)
                if k is not None and starts.get(k) is not None:
                    at = {(n.node_set, n.index): i for i, n in enumerate(comps[k].nodes)}
                    spots = [at[key] for key in nodes]
                    starts[k] = {**(starts[k] or {}), work.name: _units(spots, work)}
            elif k is None or known[k].seen(comps[k].targets, work):
                continue
            else:
                base = comps[k].problem
                problem = replace(base, work=[*base.work, *added[k], work])
                found = None if added[k] else witness.get(k, {}).get((work.shape, work.units))
                if found is not None:  # the re-pack that admitted it, nothing added since
                    found = {work.name if n == CANDIDATE else n: u for n, u in found.items()}
                else:
                    verdict = check(problem, min(limit, TOGETHER_LIMIT), starts.get(k))
                    if not verdict.packs:
                        known[k].add(comps[k].targets, work, verdict.packs)
                        continue
                    found = verdict.assignment
                free.reset(comps[k], problem, found)
                starts[k] = found
            if k is not None:
                added[k].append(work)
                counts[comps[k].problem.id] += 1
            limits.take(d, cand)
            break
    return counts


def _units(spots: list[int], w: Work) -> list[list[int]]:
    """`beside`'s nodes (units by units, a node per task) as units of node positions."""
    return [spots[u * w.tasks : (u + 1) * w.tasks] for u in range(w.units)]


Ask = tuple[tuple[object, ...], int]  # (work shape, units): all a re-pack verdict depends on
CANDIDATE = "\0candidate"  # the added work's name in a re-pack (DNS labels have no NUL)


@dataclass
class Settled:
    """One component's re-pack verdicts, and the packing found for each that packs."""

    verdicts: dict[Ask, bool | None] = field(default_factory=dict)
    witness: dict[Ask, dict[str, list[list[int]]]] = field(default_factory=dict)


Start = dict[str, list[list[int]]] | None  # a packing of a component's own work
_FORKED: tuple[list[Component], dict[int, list[Work]], dict[int, Start], float] = ([], {}, {}, 0)


def settle(
    comps: list[Component],
    asks: dict[int, list[Work]],
    starts: dict[int, Start],
    limit: float,
    workers: int = 1,
) -> dict[int, Settled]:
    """Per component (by index), whether it packs with each asked work added: True, False,
    or None (undecided in `limit`); `starts` the plan's packing of each, when known. The
    same whatever `workers` is: each component is settled on its own, within deterministic
    limits."""
    order = sorted(asks, key=lambda k: (-len(comps[k].problem.work), k))  # big ones first
    if workers <= 1 or len(order) <= 1:
        return {k: _settle_one(comps[k], asks[k], starts.get(k), limit) for k in sorted(asks)}
    import multiprocessing

    global _FORKED
    _FORKED = (comps, asks, starts, limit)  # forked children read it: only results are sent
    try:
        with multiprocessing.get_context("fork").Pool(min(workers, len(order))) as pool:
            done = dict(pool.imap_unordered(_settle_forked, order))
    finally:
        _FORKED = ([], {}, {}, 0)
    return {k: done[k] for k in sorted(done)}


def _settle_forked(k: int) -> tuple[int, Settled]:
    comps, asks, starts, limit = _FORKED
    return k, _settle_one(comps[k], asks[k], starts.get(k), limit)


def _settle_one(comp: Component, works: list[Work], start: Start, limit: float) -> Settled:
    """Every asked (shape, units) of one component. Shapes smallest first, and each shape's
    counts by bisection, smallest first: when it does not fit, nothing that asks no less
    does (_Known), which spares most exact checks of a full component."""
    by_shape: dict[tuple[object, ...], Work] = {}
    counts: dict[tuple[object, ...], set[int]] = defaultdict(set)
    for w in works:
        by_shape.setdefault(w.shape, w)
        counts[w.shape].add(w.units)
    shapes = sorted(by_shape, key=lambda s: (_size(by_shape[s])[1:], by_shape[s].slices, repr(s)))
    known = _Known()
    out = Settled()
    seeds: list[Seed] = []

    def seed() -> Seed:  # the component's own LP patterns, made when an exact check asks
        if not seeds:
            seeds.append(lp_patterns(comp.problem))
        return seeds[0]

    for s in shapes:
        rep = by_shape[s]
        units = sorted(counts[s])

        def probe(u: int, rep: Work = rep) -> bool | None:
            work = replace(rep, units=u)
            return _repacks(comp, work, limit, known, start, out.witness, seed)

        for u, packs in _monotone(units, probe).items():
            out.verdicts[s, u] = packs
    return out


def _monotone(counts: list[int], probe: Callable[[int], bool | None]) -> dict[int, bool | None]:
    """probe(u) for every u in `counts` (ascending), where packing is monotone in u: the
    smallest first, then bisection; an undecided probe splits the range in two."""
    got: dict[int, bool | None] = {}

    def between(lo: int, hi: int, first: bool) -> None:
        if lo > hi:
            return
        mid = lo if first else (lo + hi) // 2
        packs = got[counts[mid]] = probe(counts[mid])
        if packs is True:
            got.update((counts[i], True) for i in range(lo, mid))
            between(mid + 1, hi, False)
        elif packs is False:
            got.update((counts[i], False) for i in range(mid + 1, hi + 1))
            between(lo, mid - 1, False)
        else:
            between(lo, mid - 1, False)
            between(mid + 1, hi, False)

    between(0, len(counts) - 1, True)
    return got


def _repacks(
    comp: Component,
    work: Work,
    limit: float,
    known: _Known,
    start: dict[str, list[list[int]]] | None = None,
    witness: dict[Ask, dict[str, list[list[int]]]] | None = None,
    seed: Callable[[], Seed] = lambda: (),
) -> bool | None:
    """Whether the component packs with `work` added (None: undecided in `limit`); `start`
    a packing of the component without it. The packing found goes to `witness`. `seed`:
    node patterns of the component's own work, for the exact check's column generation."""
    if known.seen(comp.targets, work):
        return known.get(comp.targets, work)
    base = comp.problem
    added = replace(work, name=CANDIDATE)
    problem = Problem(base.id, base.node_ids, base.nodes, base.reach, [*base.work, added])
    verdict = cheap_check(problem)  # as check() does first, before any seed is made
    if verdict is None:
        problem.seed = seed()
        verdict = exact_check(problem, limit, start)
    packs = verdict.packs
    if packs and witness is not None:
        witness[work.shape, work.units] = verdict.assignment
    known.add(comp.targets, work, packs)
    return packs


def _size(w: Work) -> tuple[int, ...]:
    return (w.units, w.tasks, w.gpus, w.cpus, w.memory)  # _at_most compares these


def _at_most(a: Work, b: Work) -> bool:
    """Every task of `a` asks no more than one of `b`, and `a` has no more of them."""
    if (a.target, a.whole) != (b.target, b.whole):
        return False
    if any(x > y for x, y in zip(_size(a), _size(b), strict=True)):
        return False
    more = dict(b.slices)
    return all(n <= more.get(p, 0) for p, n in a.slices)


class _Known:
    """Verdicts of exact re-packs per component, reused by dominance: if work fits, so does
    any work asking no more; if it does not, neither does any work asking no less (the
    smaller work's tasks take the bigger one's places, a subset of them)."""

    def __init__(self) -> None:
        self.fits: dict[tuple[str, ...], list[Work]] = defaultdict(list)
        self.not_fits: dict[tuple[str, ...], list[Work]] = defaultdict(list)
        self.undecided: set[tuple[object, ...]] = set()  # asked again: undecided again

    def seen(self, comp: tuple[str, ...], w: Work) -> bool:
        """Whether the verdict on `w` is known (True, False, or undecided before)."""
        return (comp, w.shape, w.units) in self.undecided or self.get(comp, w) is not None

    def get(self, comp: tuple[str, ...], w: Work) -> bool | None:
        if (comp, w.shape, w.units) in self.undecided:
            return None
        if any(_at_most(w, f) for f in self.fits[comp]):
            return True
        if any(_at_most(f, w) for f in self.not_fits[comp]):
            return False
        return None

    def add(self, comp: tuple[str, ...], w: Work, packs: bool | None) -> None:
        if packs is None:
            self.undecided.add((comp, w.shape, w.units))
        else:
            (self.fits if packs else self.not_fits)[comp].append(w)


class _Limits:
    """The quota limits and spread groups of the policy, with what the plan already uses."""

    # A view per workload and its key (100k small dicts and strings at XL, none in a
    # cycle): collector passes over the whole plan were most of this set-up.
    @paused_gc()
    def __init__(
        self,
        policy: ast.Policy,
        inventory: Inventory,
        workloads: list[Workload],
        decisions: list[Decision],
        placements: list[Placement],
    ) -> None:
        self.quotas = compile_quotas(policy, inventory, workloads=workloads)
        self.spreads = compile_spreads(policy, inventory)
        self._views: dict[str, dict[str, Any]] = {}
        # The limits counting on each target, in policy order.
        self.on_target: dict[str, list[int]] = defaultdict(list)
        for k, q in enumerate(self.quotas):
            for t in sorted(q.targets):
                self.on_target[t].append(k)
        # Whether a workload is a member of a quota's part depends only on the values the
        # quotas' `for` and workload `per` keys read of it (a team, a region): those values,
        # as one key per workload, and the limits of a target counting a key, made once per
        # (key, target) rather than asked per limit, placement and candidate.
        reads = {
            (n.scope, n.field, n.key, n.parts): n
            for q in policy.quotas
            for e in (q.for_, *q.per)
            for n in ast.find(e, ast.Name)
            if n.scope == "workload"
        }
        self._reads = [compile_expr(n, policy.constants) for n in reads.values()]
        self._keys: dict[str, str] = {}  # workload name -> what the quotas read of it
        self._mine: dict[tuple[str, str], list[int]] = {}  # (key, target) -> its limits
        self.used = [0] * len(self.quotas)
        for p in placements:
            for k in self._limits_of(p.workload, p.target.id):
                self.used[k] += usage(self.quotas[k].resource, p.resources, p.target)
        # Spread groups, as spread.py defines them: routed members only, two or more.
        self.group: list[dict[str, Hashable]] = []  # per spread: workload -> group
        self.most: list[dict[Hashable, int]] = []  # per spread: group -> its limit
        self.on: list[Counter[tuple[Hashable, Hashable]]] = []  # (group, value) -> placed
        target_of = {p.workload.name: p.target.id for p in placements}
        for s in self.spreads:
            members: dict[Hashable, list[Decision]] = defaultdict(list)
            for d in decisions:
                g = s.group(self._view(d.workload)) if d.candidates else None
                if g is not None:
                    members[g].append(d)
            groups = {g: ds for g, ds in members.items() if len(ds) >= 2}
            self.group.append({d.workload.name: g for g, ds in groups.items() for d in ds})
            self.most.append(
                {
                    g: s.limit(
                        len(ds), len({s.values[c.target.id] for d in ds for c in d.candidates})
                    )
                    for g, ds in groups.items()
                }
            )
            self.on.append(
                Counter(
                    (g, s.values[target_of[d.workload.name]])
                    for g, ds in groups.items()
                    for d in ds
                    if d.workload.name in target_of
                )
            )

    def _view(self, w: Workload) -> dict[str, Any]:
        view = self._views.get(w.name)
        if view is None:
            view = self._views[w.name] = workload_view(w)
        return view

    def _limits_of(self, w: Workload, tid: str) -> list[int]:
        """The quota limits on target `tid` that count `w`, in policy order."""
        key = self._keys.get(w.name)
        if key is None:
            view = self._view(w)
            key = self._keys[w.name] = repr([f(view, {}) for f in self._reads])
        mine = self._mine.get((key, tid))
        if mine is None:
            view = self._view(w)
            mine = self._mine[key, tid] = [
                k
                for k in self.on_target.get(tid, ())
                if (m := self.quotas[k].members) is None or m(view, {})
            ]
        return mine

    def take(self, d: Decision, cand: Candidate) -> None:
        """Count `d` on `cand` in every quota and spread it is in."""
        tid = cand.target.id
        for k in self._limits_of(d.workload, tid):
            self.used[k] += usage(self.quotas[k].resource, cand.resources, cand.target)
        for k, s in enumerate(self.spreads):
            g = self.group[k].get(d.workload.name)
            if g is not None:
                self.on[k][g, s.values[tid]] += 1

    def keeps_out(self, d: Decision, cand: Candidate) -> str:
        """ "quota" or "spread" when adding `d` on `cand` breaks one; "" when none."""
        tid = cand.target.id
        for k in self._limits_of(d.workload, tid):
            q = self.quotas[k]
            if self.used[k] + usage(q.resource, cand.resources, cand.target) > q.amount:
                return "quota"
        for k, s in enumerate(self.spreads):
            g = self.group[k].get(d.workload.name)
            if g is not None and self.on[k][g, s.values[tid]] + 1 > self.most[k][g]:
                return "spread"
        return ""


class _Free:
    """What each node has free after the running work and the plan's own node assignment."""

    @paused_gc()  # a list per node: as _Limits
    def __init__(
        self, inventory: Inventory, running: Running | None, placements: list[Placement]
    ) -> None:
        self.nodes: dict[str, list[NodeKey]] = {}  # node set -> its nodes, in index order
        self.free: dict[NodeKey, list[int]] = {}  # [gpus, cpus, memory]
        self.slices: dict[NodeKey, dict[str, int]] = {}
        self.idle: dict[NodeKey, bool] = {}
        for sid, classes in node_classes(inventory, running).items():
            keys = sorted((sid, i) for c in classes for i in c.indices)
            self.nodes[sid] = keys
            for c in classes:
                for i in c.indices:
                    self.free[sid, i] = [c.free.gpus, c.free.cpus, c.free.memory]
                    self.slices[sid, i] = dict(c.free.slices)
                    self.idle[sid, i] = c.idle
        # A placement without recorded nodes leaves its target's nodes unknown: none of them
        # is taken as free (the re-packing check still decides).
        self.unknown: set[str] = set()
        for p in placements:
            r = p.resources
            if not p.nodes and r.units:
                self.unknown.update(p.target.node_sets)
            for key in p.nodes:
                if key not in self.free:
                    continue  # not a node of the inventory: check_assignment says so
                self.idle[key] = False
                if r.whole_nodes:
                    self.free[key] = [0, 0, 0]
                    self.slices[key] = {}
                    continue
                f = self.free[key]
                f[0] -= 0 if r.mig else r.gpus_per_node
                f[1] -= r.cpus_per_node
                f[2] -= r.memory_per_node
                if r.mig:
                    s = self.slices[key]
                    s[r.mig] = s.get(r.mig, 0) - r.gpus_per_node
        # `beside`'s answers while nothing is taken: at `--size wide` 405,846 (workload,
        # candidate) pairs ask it of a few hundred shapes, each over all of a target's nodes.
        self._beside: dict[tuple[object, ...], tuple[NodeKey, ...] | None] = {}

    def take(self, w: Work, nodes: list[NodeKey]) -> None:
        """Take `w`'s tasks on these nodes (one per task, as `beside` gives them)."""
        for key in nodes:
            self._use(key, w)

    def reset(
        self, comp: Component, problem: Problem, assignment: dict[str, list[list[int]]]
    ) -> None:
        """The component's nodes as a packing of its whole problem leaves them."""
        for i, n in enumerate(problem.nodes):
            key = (comp.nodes[i].node_set, comp.nodes[i].index)
            self.free[key] = [n.gpus, n.cpus, n.memory]
            self.slices[key] = dict(n.slices)
            self.idle[key] = n.idle
        for w in problem.work:
            for unit in assignment.get(w.name, []):
                for i in unit:
                    self._use((comp.nodes[i].node_set, comp.nodes[i].index), w)
        self.unknown.difference_update(comp.node_sets)
        self._beside.clear()

    def _use(self, key: NodeKey, w: Work) -> None:
        self._beside.clear()
        self.idle[key] = False
        if w.whole:
            self.free[key] = [0, 0, 0]
            self.slices[key] = {}
            return
        f, s = self.free[key], self.slices[key]
        f[0] -= w.gpus
        f[1] -= w.cpus
        f[2] -= w.memory
        for p, n in w.slices:
            s[p] = s.get(p, 0) - n

    def _holds(self, w: Work, key: NodeKey) -> int:
        """How many tasks of `w` fit on the node's free capacity (at most its units)."""
        if w.whole:
            return 1 if self.idle[key] and _within(w, self.free[key], self.slices[key]) else 0
        f, s = self.free[key], self.slices[key]
        most = w.units
        for need, have in (
            (w.gpus, f[0]),
            (w.cpus, f[1]),
            (w.memory, f[2]),
            *((n, s.get(p, 0)) for p, n in w.slices),
        ):
            if need:
                most = min(most, max(0, have) // need)
            elif have < 0:
                return 0
        return most

    def beside(self, w: Work, node_sets: tuple[str, ...]) -> list[NodeKey] | None:
        """The nodes, one per task (units by units), that hold `w` beside the plan; None."""
        key = (node_sets, w.units, w.tasks, w.gpus, w.cpus, w.memory, w.slices, w.whole)
        if key not in self._beside:
            self._beside[key] = self._beside_now(w, node_sets)
        found = self._beside[key]
        return None if found is None else list(found)

    def _beside_now(self, w: Work, node_sets: tuple[str, ...]) -> tuple[NodeKey, ...] | None:
        if any(s in self.unknown for s in node_sets):
            return None
        need = w.units * w.tasks
        per_node = [(k, self._holds(w, k)) for s in node_sets for k in self.nodes.get(s, [])]
        if sum(n for _, n in per_node) < need:
            return None
        # Tasks listed node by node, task t to unit t mod units: a node holds at most `units`
        # tasks, so a job's tasks land on distinct nodes (as packdata.deal).
        seq: list[NodeKey] = []
        for k, n in per_node:
            seq += [k] * min(n, need - len(seq))
        units: list[list[NodeKey]] = [[] for _ in range(w.units)]
        for t, k in enumerate(seq):
            units[t % w.units].append(k)
        return tuple(k for unit in units for k in unit)


def _within(w: Work, free: list[int], slices: dict[str, int]) -> bool:
    if w.gpus > free[0] or w.cpus > free[1] or w.memory > free[2]:
        return False
    return all(n <= slices.get(p, 0) for p, n in w.slices)
