"""First-fit decreasing over the aggregated model: the baseline, and the solver's first hint.

Classes in decreasing order of what one member is worth (priority weight × work), each
member on the first of its candidates (by rank, preference place, target id) where every
row it touches still has room. Members of a class are identical, so "each member in turn"
is done in bulk: as many as fit on the first candidate, the rest on the next, and so on —
exactly what placing them one by one would do. Each member also goes onto real nodes
(first fit over the target's nodes, pack.py), so the result respects every row and packs
node by node: a complete, feasible hint for CP-SAT.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from router.fork import run_parts
from router.gcpause import paused_gc
from router.solve import configs, region, repair
from router.solve.aggregate import Aggregate, gpu_waste
from router.solve.eject import Nodes as Ejecting
from router.solve.nodes import Capacity, Item
from router.solve.pack import (
    BALANCED_STEPS,
    Answer,
    Entry,
    Packing,
    aggregate_fits,
    balanced,
    best_fit,
    exact_packing,
    first_fit,
    valid_layout,
)
from router.solve.patterns import pattern_packing

R = TypeVar("R")

FILL_PASSES = 4
REBALANCE_ROUNDS = 3  # re-packings of a component while they add members
# Components of more nodes end packed by plain first fit all the same (they keep what the
# re-packing adds only as far as first fit packs it). At 16 (stop 17), bench L seed 0 kept
# 306 workloads out that fit a re-packing, all on CPU partitions of 21-28 nodes; the checker
# could not find those packings afresh, but a plan's own node assignment, checked node by
# node, is the witness that they pack (bench `undecided_by_search`).
KEPT_NODES = 64
# The last step's exact packing (_topped) on components of at most this many nodes; larger
# ones take insertion with ejection only (an exact try that fails costs its whole limit).
# At 20, bench L seed 0 left 30 workloads on hpc-r0-4/cpu (25 nodes) that the referee could
# not decide; at 32 the exact try adds one there and the referee proves the rest out.
TOPPED_NODES = 32
# LPs of the dives over node classes (classdive.py) in the last try on one component
# (_by_classes_last; the audit's shared medium seed 2, hpc/h100a: 75 nodes in 2 classes,
# 128 shapes: 3 dives took one job each in 80 LPs, jobs router's referee had re-packed)
CLASS_LPS = 1_000
CLASS_DIVE_LPS = 100  # ... and in one dive (slurmx medium seed 0: one failing dive took 309
# of 400, and the 4 jobs left out that the referee re-packs were never tried)
# Deterministic s per exact try: the per-node search finds what it finds at once (bench L:
# all by 0.02) and a failing try costs its whole limit; node patterns need up to 0.1.
NODE_TOPUP = 0.03
EXACT_TOPUP = 0.1
# The last step's deep tries (_deepened), on a component of at most TOPPED_NODES nodes, for
# the shapes that every try above left undecided: a member often fits only once most nodes
# change (the audit's justfit medium seed 0: 23 nodes of 4 GPUs and 61 CPUs, every GPU and
# all but 31 CPUs taken; a 20-CPU job fits a packing that differs from the plan's on 17 of
# them). CP-SAT's per-node search with every capacity row in its LP finds it by luck: at
# 0.23-0.52 deterministic s under 5 of 16 seeds, not in 1 s under the others (nor in 3 s at
# its default level). So short searches, restarted with another seed, shape after shape in
# turn: DEEP_TOPUP each, DEEP_SEEDS rounds, DEEP_BUDGET for all of a component's. Only
# where the nodes differ (two classes or more): where all are alike, the node patterns
# decide (configs.py, dive.py) and this search only meets the nodes' symmetry (bench L
# seed 0's hpc-r3-2/cpu, 15 alike nodes: 6 tries, 3 deterministic s, nothing decided).
DEEP_TOPUP = 0.5
DEEP_SEEDS = 4
DEEP_BUDGET = 3.0
# A plan of many such components shares DEEP_TOTAL evenly (at most DEEP_BUDGET each), and
# of many components that take configs' one-more dives past MAX_SHAPES, MANY_LPS_TOTAL
# LPs (at most configs.ONE_MORE_LPS each): each costs seconds per component. The shares
# are counted from the inputs alone, so they do not depend on the worker count.
DEEP_TOTAL = 12.0
MANY_LPS_TOTAL = 3_000
RETRY_BUDGET = 1.0  # deterministic s of region.regional's second tries per component
# The last step's repairs (_repaired): on a component past TOPPED_NODES of several node
# classes (running work), and on one node class of more than configs.MAX_SHAPES shapes (the
# node patterns' step has no model there, only its dives), the members that nothing else
# placed get a per-node try of PROOF_LIMIT (which proves most that do not fit at once;
# none once PROOF_MISSES in a row decided nothing) and a repair (repair.py: LNS from the
# plan's packing), smallest first, within the component's share of REPAIR_TOTAL (at most
# REPAIR_BUDGET), after every other step. Not on a few shapes over alike nodes (bench L
# and XL: the node patterns decide there).
PROOF_LIMIT = 0.1
PROOF_MISSES = 2
REPAIR_BUDGET = 3.0
REPAIR_TOTAL = 9.0
REPAIR_REGIONS = 16  # region.regional calls of the repairs per component (wall time)


def repairs_on(agg: Aggregate, ci: int) -> bool:
    cap = agg.capacity[ci]
    return (cap.nodes > TOPPED_NODES and len(cap.groups) > 1) or configs.many_shapes(agg, ci)


@dataclass(frozen=True)
class Shares:
    """Per component, the deep tries' budget, the many-shape dives' LPs and the repairs'
    budget."""

    deep: float
    many_lps: int
    repair: float

    @classmethod
    def of(cls, agg: Aggregate) -> Shares:
        deep = sum(1 for c in agg.capacity if c.nodes <= TOPPED_NODES and len(c.groups) > 1)
        many = sum(1 for ci in range(len(agg.capacity)) if configs.many_shapes(agg, ci))
        repairs = sum(1 for ci in range(len(agg.capacity)) if repairs_on(agg, ci))
        return cls(
            min(DEEP_BUDGET, DEEP_TOTAL / max(1, deep)),
            min(configs.ONE_MORE_LPS, MANY_LPS_TOTAL // max(1, many)),
            min(REPAIR_BUDGET, REPAIR_TOTAL / max(1, repairs)),
        )


def rows_of(agg: Aggregate) -> list[list[tuple[int, int]]]:
    """Per variable, the rows it appears in: [(row index, coefficient)]; computed once per
    model (its rows never change once built)."""
    if agg.touches is not None and len(agg.touches) == len(agg.variables):
        return agg.touches
    out: list[list[tuple[int, int]]] = [[] for _ in agg.variables]
    for r, row in enumerate(agg.rows):
        for coef, v in row.terms:
            out[v].append((r, coef))
    agg.touches = out
    return out


class Filler:
    """Counts being built member by member: every row's slack and, per capacity component,
    the real nodes (pack.Packing), so that whatever it places fits node by node."""

    def __init__(
        self,
        agg: Aggregate,
        start: list[int] | None = None,
        canonical: bool = False,
        packed: bool = True,
    ) -> None:
        self.agg = agg
        self.touches = rows_of(agg)
        self.counts = list(start) if start is not None else [0] * len(agg.variables)
        # Each row's slack from the variables placed only (through touches: a row's terms
        # summed over every variable were 0.2 CPU s a plan at bench L, mostly zeros).
        self.slack = [row.rhs for row in agg.rows]
        for v, n in enumerate(self.counts):
            if n:
                for r, coef in self.touches[v]:
                    self.slack[r] -= coef * n
        # Members placed per class, kept with counts: summed over a class's candidates per
        # variable it was quadratic (a class on 20,000 partitions).
        self.in_class = [sum(self.counts[v] for v in vs) for vs in agg.choices]
        self.packs: dict[int, Packing] = {}
        if start is not None and packed and agg.nodes is not None:
            self.start_packs(sorted({agg.cap_of[v] for v, n in enumerate(start) if n}), canonical)

    def start_packs(self, cis: list[int], canonical: bool = False) -> None:
        """The current counts' own packing of capacity components `cis`, to build on."""
        nodes = self.agg.nodes
        if nodes is None:
            return
        for ci in cis:
            found = (
                nodes.canonical(ci, self.counts)
                if canonical
                else nodes.packs(ci, self.counts).packing
            )
            assert found is not None, "a start that does not fit its nodes"
            self.packs[ci] = found.copy()

    def put(self, v: int, n: int) -> int:
        """Place up to n more members on variable v, as many as rows and nodes allow."""
        agg = self.agg
        for r, coef in self.touches[v]:
            n = min(n, self.slack[r] // coef)
        if n <= 0:
            return 0
        if agg.capacity:
            ci = agg.cap_of[v]
            pack = self.packs.get(ci)
            if pack is None:
                pack = self.packs[ci] = Packing.fresh(agg.capacity[ci])
            n = pack.place(v, agg.items[v], agg.allowed[v], n)
            if n <= 0:
                return 0
        self.add(v, n)
        return n

    def add(self, v: int, n: int) -> None:
        """n more members on v (n < 0: fewer) in counts, rows and class totals; the caller
        has placed them on the nodes."""
        self.counts[v] += n
        self.in_class[self.agg.variables[v][0]] += n
        for r, coef in self.touches[v]:
            self.slack[r] -= coef * n

    def unplaced(self, g: int) -> int:
        """Members of class g placed nowhere."""
        return len(self.agg.groups[g].members) - self.in_class[g]

    def admitted(self, v: int) -> int:
        """Members of v's class placed nowhere that every row v touches still admits on v."""
        n = self.unplaced(self.agg.variables[v][0])
        for r, coef in self.touches[v]:
            n = min(n, self.slack[r] // coef)
        return n

    def take(self, v: int, n: int) -> int:
        """Take up to n members off variable v (rows and nodes freed); returns how many."""
        agg = self.agg
        n = min(n, self.counts[v])
        if n <= 0:
            return 0
        if agg.capacity:
            pack = self.packs[agg.cap_of[v]]
            n = pack.remove(v, agg.items[v], n)
        self.add(v, -n)
        return n

    def move(self, v: int, u: int) -> int:
        """Members of v moved to u, as many as fit once v's are off; returns how many. If
        the rest do not go back where they were (a row they share with u), nothing moves."""
        agg = self.agg
        # Most moves find no room: rule them out before taking anything off.
        freed = dict(self.touches[v])
        for r, coef in self.touches[u]:
            if self.slack[r] + freed.get(r, 0) * self.counts[v] < coef:
                return 0
        if agg.capacity and agg.cap_of[u] != agg.cap_of[v]:
            pack = self.packs.get(agg.cap_of[u])
            if pack is not None and not pack.room(agg.items[u], agg.allowed[u]):
                return 0
        cis = {agg.cap_of[v], agg.cap_of[u]} if agg.capacity else set()
        packs = {ci: self.packs[ci].copy() for ci in cis if ci in self.packs}
        rows = {r for r, _ in self.touches[v]} | {r for r, _ in self.touches[u]}
        slack = {r: self.slack[r] for r in rows}
        was = self.counts[v], self.counts[u]
        n = self.take(v, self.counts[v])
        got = self.put(u, n)
        back = self.put(v, n - got)
        if back == n - got:
            return got
        for x, n_was in zip((v, u), was, strict=True):
            self.in_class[agg.variables[x][0]] += n_was - self.counts[x]
        self.counts[v], self.counts[u] = was
        for r, s in slack.items():
            self.slack[r] = s
        for ci in cis:
            if ci in packs:
                self.packs[ci] = packs[ci]
            else:
                self.packs.pop(ci, None)
        return 0

    def done(self) -> list[int]:
        """The counts; their packings are remembered as witnesses for the solver."""
        # Once per fill (linear): the class totals must have followed every change of counts.
        assert self.in_class == [sum(self.counts[v] for v in vs) for vs in self.agg.choices]
        if self.agg.nodes is not None:
            for ci, pack in self.packs.items():
                self.agg.nodes.remember(ci, self.counts, pack)
        return self.counts


def by_preference(agg: Aggregate, vs: list[int]) -> list[int]:
    """Candidates best first: rank, `prefer` place, CPU work off GPU nodes, target id."""

    def key(v: int) -> tuple[int, int, bool, str]:
        c = agg.candidate(v)
        return c.rank, c.pref, bool(gpu_waste(agg, v)), c.target.id

    return sorted(vs, key=key)


def preferred(agg: Aggregate, g: int) -> list[int]:
    """Class g's variables by_preference, sorted once per model (its rows never change)."""
    if agg.preferred is None or len(agg.preferred) != len(agg.groups):
        agg.preferred = [by_preference(agg, vs) for vs in agg.choices]
    return agg.preferred[g]


def completed(
    agg: Aggregate,
    counts: list[int],
    polish: frozenset[int] = frozenset(),
    parts: list[list[int]] | None = None,
    workers: int = 1,
) -> tuple[list[int], dict[int, Packing]]:
    """`counts` (which pack) completed greedily on the nodes of their canonical packing
    (benders.Nodes.canonical), and the packing of every capacity component it ends with:
    what the plan's node assignment is read from. Members of the classes `polish` also
    move to candidates they prefer where rows and nodes have room (moved_up), and their
    capacity components end packed by plain first fit (_fresh). Then every component is
    re-packed vector-aware with its unplaced members added (_rebalanced); last, a small one
    takes what insertion with ejection or an exact packing still admits (_topped).

    `parts`: classes that share no row and no capacity component with another part's
    (the solver's components), each completed on its own (_completed_part); with
    `workers` > 1 they run in forked children, at most `workers` at once (fork.run_parts).
    Each part touches only its own counts, rows and packings, so the plan is the same
    whichever process completes which part, and in whatever order. One fill over all
    parts ran every part's passes until none changed; a part now stops after its own
    pass that changes none of its counts. The two differ only if such a pass re-lays a
    packing (Filler.move putting every member back, on other nodes) and a later one then
    finds room. Without that, a pass that changes no count leaves the whole fill as it
    was, and further passes are no-ops: so at bench L seeds 0-2 and M seeds 0-1 (no such
    pass), and the plans of L0, L1, wide and the example are byte for byte as before."""
    filled, packings, _ = solved_and_completed(agg, counts, polish, parts, workers)
    return filled, packings


def solved_and_completed(
    agg: Aggregate,
    counts: list[int],
    polish: frozenset[int] = frozenset(),
    parts: list[list[int]] | None = None,
    workers: int = 1,
    solve: Callable[[int], R] | None = None,
) -> tuple[list[int], dict[int, Packing], list[R]]:
    """completed(), each part k first given to `solve(k)` (the solver's levels, cpsat.py)
    in the process that then completes it: a part's solve and its fill run one after the
    other in one child, with no wait for the other parts' solves. `solve` may change the
    part's entries of `counts` (only those: parts share no row or node), and the fill
    starts from them; `counts` ends holding every part's solved counts, and the third
    value is solve's results in part order."""
    fill = Filler(agg, counts, canonical=True, packed=False)
    everything = [list(range(len(agg.groups)))]
    groups_of = parts if parts is not None else everything
    rows_of(agg)  # the per-model caches, once here rather than in every child
    if agg.groups:
        preferred(agg, 0)
    shares = Shares.of(agg) if agg.nodes is not None else Shares(0.0, 0, 0.0)

    def run(
        bucket: list[int],
    ) -> tuple[list[tuple[int, int]], list[tuple[int, int]], dict[int, Any], list[R]]:
        solved: list[tuple[int, int]] = []
        results: list[R] = []
        for k in bucket:
            vs = [v for g in groups_of[k] for v in agg.choices[g]]
            if solve is not None:
                results.append(solve(k))
                for v in vs:
                    if counts[v] != fill.counts[v]:
                        fill.add(v, counts[v] - fill.counts[v])
                solved += [(v, counts[v]) for v in vs]
            _completed_part(agg, fill, groups_of[k], polish, shares)
        vs = [v for k in bucket for g in groups_of[k] for v in agg.choices[g]]
        cis = sorted({agg.cap_of[v] for v in vs}) if agg.capacity else []
        packs = {
            ci: (fill.packs[ci].blocks, fill.packs[ci].placed) for ci in cis if ci in fill.packs
        }
        return solved, [(v, fill.counts[v]) for v in vs], packs, results

    buckets = _buckets(agg, groups_of, max(1, workers))
    results: dict[int, R] = {}
    # Results in bucket order; the one run here is already in `fill` (its deltas are 0).
    for bucket, (solved, pairs, packs, got) in zip(
        buckets, run_parts(run, buckets, parallel=workers > 1), strict=True
    ):
        for v, n in solved:
            counts[v] = n
        for v, n in pairs:
            if n != fill.counts[v]:
                fill.add(v, n - fill.counts[v])
        for ci, (blocks, placed) in packs.items():
            fill.packs[ci] = Packing(agg.capacity[ci], blocks, placed)
        results.update(zip(bucket, got, strict=False))
    return fill.done(), dict(sorted(fill.packs.items())), [results[k] for k in sorted(results)]


def _buckets(agg: Aggregate, parts: list[list[int]], workers: int) -> list[list[int]]:
    """Parts dealt to at most `workers` buckets, largest first to the lightest bucket (by
    variables and nodes, a rough cost); each bucket's parts in their own order. Which
    bucket a part lands in changes only who computes it, never the result."""
    size = []
    for groups in parts:
        vs = [v for g in groups for v in agg.choices[g]]
        cis = {agg.cap_of[v] for v in vs} if agg.capacity else set()
        size.append(len(vs) + sum(agg.capacity[ci].nodes for ci in cis))
    n = min(workers, len(parts))
    load = [0] * n
    out: list[list[int]] = [[] for _ in range(n)]
    for k in sorted(range(len(parts)), key=lambda k: (-size[k], k)):
        b = min(range(n), key=lambda b: (load[b], b))
        out[b].append(k)
        load[b] += size[k]
    return [sorted(b) for b in out if b]


def _completed_part(
    agg: Aggregate, fill: Filler, groups: list[int], polish: frozenset[int], shares: Shares
) -> None:
    """completed() for the classes `groups`, on `fill` (their rows and capacity components
    are theirs alone). FILL_PASSES counts this part's passes: it stops once a pass changes
    none of its own counts."""
    vs = [v for g in groups for v in agg.choices[g]]
    cis = sorted({agg.cap_of[v] for v in vs}) if agg.capacity else []
    fill.start_packs(
        [ci for ci in cis if any(fill.counts[v] for v in agg.nodes.by_cap[ci])]
        if agg.nodes is not None
        else [],
        canonical=True,
    )
    order = sorted(groups, key=lambda g: (-agg.groups[g].weight, g))
    mine = [g for g in order if g in polish]
    for _ in range(FILL_PASSES):  # a move can make room for a class passed before
        before = [fill.counts[v] for v in vs]
        _put_rest(agg, fill, order)
        if mine:
            moved_up(agg, fill, mine)
        if [fill.counts[v] for v in vs] == before:
            break
    if agg.nodes is not None:
        if mine:
            _fresh(agg, fill, {agg.cap_of[v] for g in mine for v in agg.choices[g]})
        # Then every component re-packed with what is left out (a large one staying what
        # plain first fit packs): what _fresh took off may come back here.
        for ci in cis:
            _rebalanced(agg, fill, ci)
        # Last, what only an exact re-packing admits (topup.py).
        for ci in cis:
            deep: list[float] = [shares.deep]
            out: list[int] = []
            settled: set[int] = set()
            tried: set[int] = set()
            retry = region.Retry()
            added = _topped(agg, fill, ci, deep, out, retry, settled, tried)
            if configs.repacked(agg, fill, ci, shares.many_lps):  # exact by node patterns
                settled.clear()
            # Then, after the pattern step (which keeps what is placed: a member added
            # before it can cost it its optimum, as on the audit's big small seeds 2 and
            # 5), the last step once more if it added members: what failed beside one
            # packing may fit beside the next (running medium seed 0, a 78-node
            # partition: a class that failed early ended the tries of 440 jobs asking as
            # much, and regions found room for them once 4 other members were in; a
            # third pass there added nothing in 2.2 s). Then regions that decided
            # nothing, tried again longer. Last the repairs, where they apply: they only
            # add, so that the steps before them (in worth order) are not pre-empted by
            # the small members a repair finds first (running medium seed 0 lost 84 units
            # of placed work so).
            if added:
                _topped(agg, fill, ci, deep, out, retry, settled, tried)
            _retried(agg, fill, ci, retry)
            if repairs_on(agg, ci):
                _repaired(agg, fill, ci, [shares.repair], out, tried)
            _by_classes_last(agg, fill, ci)


class _Room:
    """What rows and classes still admit while a re-packing adds members (the fill's own
    slack is changed only once the re-packing is kept)."""

    def __init__(self, agg: Aggregate, fill: Filler) -> None:
        self.agg, self.fill = agg, fill
        self.slack: dict[int, int] = {}
        self.left: dict[int, int] = {}

    def allow(self, v: int) -> bool:
        agg, fill = self.agg, self.fill
        g = agg.variables[v][0]
        if g not in self.left:
            self.left[g] = fill.unplaced(g)
        if self.left[g] <= 0:
            return False
        return all(self.slack.get(r, fill.slack[r]) >= coef for r, coef in fill.touches[v])

    def took(self, v: int) -> None:
        self.left[self.agg.variables[v][0]] -= 1
        for r, coef in self.fill.touches[v]:
            self.slack[r] = self.slack.get(r, self.fill.slack[r]) - coef


def _rebalanced(agg: Aggregate, fill: Filler, ci: int) -> bool:
    """Component ci packed afresh by pack.balanced with the unplaced members of its classes
    added, as many as rows allow and fit (best worth first), in both of its scores, the
    one that adds most worth kept; again from there until nothing more goes in. A
    component of more than KEPT_NODES nodes keeps only as many of them (in that order) as
    plain first fit packs afresh, packed so. True if the component keeps a re-packing
    (not plain first fit's)."""
    nodes = agg.nodes
    cap = agg.capacity[ci]
    few = cap.nodes <= KEPT_NODES
    weight = {v: agg.groups[agg.variables[v][0]].weight for v in nodes.by_cap[ci]}
    added = False
    for _ in range(REBALANCE_ROUNDS):
        must = [Entry(v, agg.items[v], agg.allowed[v], fill.counts[v]) for v in nodes.by_cap[ci]]
        extra: list[tuple[int, Item, frozenset[str]]] = []
        for v in nodes.by_cap[ci]:
            left = fill.admitted(v)
            if left > 0:
                extra.extend([(v, agg.items[v], agg.allowed[v])] * left)
                if len(extra) * cap.nodes > BALANCED_STEPS:
                    return added  # too large to re-pack so (pack.balanced would say None)
        if not extra:
            break
        extra.sort(key=lambda e: (-weight[e[0]], e[0]))
        best: tuple[int, Packing, list[int]] | None = None
        for aligned in (True, False):
            room = _Room(agg, fill)
            got = balanced(cap, must, extra, room.allow, room.took, aligned)
            if got is None:
                continue  # too large, or it cannot hold what is placed
            worth = sum(weight[v] for v in got[1])
            if got[1] and (best is None or worth > best[0]):
                best = (worth, got[0], got[1])
        if best is None:
            break
        packing, placed = best[1], best[2]
        if not few:  # the most of them, in order, that plain first fit packs afresh
            lo, hi = 0, len(placed)
            while lo < hi:
                mid = (lo + hi + 1) // 2
                trial = list(fill.counts)
                for v in placed[:mid]:
                    trial[v] += 1
                if nodes.fresh(ci, trial) is not None:
                    lo = mid
                else:
                    hi = mid - 1
            placed = placed[:lo]
            if not placed:
                break
        for v in placed:
            fill.add(v, 1)
        if few:
            fill.packs[ci] = packing
            added = True
        else:
            found = nodes.fresh(ci, fill.counts)
            assert found is not None
            fill.packs[ci] = found
    return added


def _topped(
    agg: Aggregate,
    fill: Filler,
    ci: int,
    deep: list[float] | None = None,
    out: list[int] | None = None,
    retry: region.Retry | None = None,
    settled: set[int] | None = None,
    tried: set[int] | None = None,
) -> bool:
    """Unplaced members of component ci's classes added, best worth first, as rows allow:
    by insertion with ejection (eject.py: pods of the plan moved to other nodes of their
    targets to make room), else by node patterns (_by_patterns, where the nodes are alike),
    else by re-packing a few nodes (region.py; on a small component, once such a try has
    failed, by first fit only), else by an exact per-node search of the component with one
    more (_per_node), else a pod by best fit afresh (pack.best_fit, on the axis the
    component's members ask most of). A class that cannot take one more
    is done (its members are identical), and so is any class that asks at least as much:
    for this pass, or for good where an exact try proved it (`out`, kept across passes:
    more members placed never make room). The exact packing only on components of at most
    TOPPED_NODES nodes; then, within what is left of `deep[0]` deterministic s (spent
    here), the deep tries on a small component of several node classes (_deepened).
    `retry`: records the regions that decided nothing (region.Retry). `settled`: the
    variables that failed at the packing the last pass ended with; this pass skips them
    until it adds a member (the same packing, the same deterministic tries), and leaves its
    own there. `tried`: set to the variables that took no more in this pass. True if any
    is added."""
    nodes = agg.nodes
    cap = agg.capacity[ci]
    pack = fill.packs.get(ci)
    if pack is None:
        return False  # nothing placed (nothing to move: _put_rest placed what fits)
    exact = cap.nodes <= TOPPED_NODES
    deep = [DEEP_BUDGET] if deep is None else deep
    out = [] if out is None else out
    settled = set() if settled is None else settled
    since: list[int] = []  # failed since the last member added, regions exact
    order = sorted(nodes.by_cap[ci], key=lambda v: (-agg.groups[agg.variables[v][0]].weight, v))
    state: Ejecting | None = None
    added = False
    failed: list[int] = []  # variables that took no more
    undecided: list[int] = []  # ... of which no exact try proved that none fits
    regions = True  # region.regional still tried
    for v in order:
        left = fill.admitted(v)
        if left <= 0 or any(_at_least(agg, v, u) for u in out) or (not added and v in settled):
            continue
        if any(_at_least(agg, v, u) for u in failed):
            if any(_at_least(agg, v, u) for u in since):
                since.append(v)
            continue
        if state is None:
            state = _ejecting(agg, pack, nodes.by_cap[ci])
        while left > 0:
            if not state.insert(v):
                trial = list(fill.counts)
                trial[v] += 1
                entries = nodes.entries(nodes.key(ci, trial)[1])
                found, proven = None, True
                if aggregate_fits(cap, entries):
                    found, proven = first_fit(cap, entries), False
                    if found is None and exact:
                        found, proven = _by_patterns(cap, entries)
                # A few nodes re-packed (region.py): where the component is too large for
                # the exact try, or its node patterns decided nothing (not where they proved
                # no room). On a small one, exactly until a try fails (bench L seed 0 tried 3
                # classes of one 21-node partition, 1 CPU s for nothing; XL's
                # hpc-r17-2/cpu: the first takes one), then by first fit only (slurmx
                # medium seed 1: the first class it failed for had no room, the 7 after it
                # did). On a small component the per-node search comes after the regions,
                # not before: a region that packs takes 0.01 s where the search, undecided,
                # spent its whole limit (bench L seed 0: 4 tries of 0.18 s on a 25-node
                # partition, a region took one each time). Then best fit afresh on the
                # scarcest axis (pack.best_fit).
                regional = False
                if found is None and not proven:
                    regional = region.regional(state, v, exact=regions, searched=exact, retry=retry)
                    if not regional and exact:
                        regions = False  # one failed on a small component: first fit only
                        found, proven = _per_node(cap, entries)
                    if not regional and not proven and found is None and not agg.items[v].whole:
                        found = best_fit(cap, entries, scarcest=True)
                if found is not None:
                    state = _ejecting(agg, found, nodes.by_cap[ci])
                elif not regional:
                    failed.append(v)
                    if proven:
                        out.append(v)
                    elif exact:
                        undecided.append(v)
                    if regions or not exact:
                        since.append(v)
                    break
            left -= 1
            added = True
            since.clear()
            fill.add(v, 1)
    settled.clear()
    settled.update(since)
    if tried is not None:
        tried.clear()
        tried.update(failed)
    if undecided and len(cap.groups) > 1 and deep[0] > 0:
        assert state is not None
        deepened = _deepened(agg, fill, ci, state, undecided, deep, out)
        if deepened is not None:
            state, added = deepened, True
            settled.clear()
    if added:
        assert state is not None
        fill.packs[ci] = state.packing()
    return added


def _retried(agg: Aggregate, fill: Filler, ci: int, retry: region.Retry) -> bool:
    """The regions that decided nothing in the last step's last tries of each variable
    (recorded in `retry`), tried again for up to region.RETRY_LIMIT each within
    RETRY_BUDGET deterministic s, best worth first, one member a variable; True if any is
    added. Each region is re-packed as the component is now (region._repacked checks it)."""
    pack = fill.packs.get(ci)
    if pack is None or not retry.regions:
        return False
    state = _ejecting(agg, pack, agg.nodes.by_cap[ci])
    budget = region.Retry(RETRY_BUDGET)
    added = False
    for v in sorted(retry.regions, key=lambda v: (-agg.groups[agg.variables[v][0]].weight, v)):
        if fill.admitted(v) > 0 and region.retried(state, v, retry.regions[v], budget):
            fill.add(v, 1)
            added = True
    if added:
        fill.packs[ci] = state.packing()
    return added


def _deepened(
    agg: Aggregate,
    fill: Filler,
    ci: int,
    state: Ejecting,
    undecided: list[int],
    budget: list[float],
    out: list[int],
) -> Ejecting | None:
    """The last step's deep tries (DEEP_TOPUP): for the variables `undecided` (in worth
    order), one more member by CP-SAT's per-node search of the whole component, every
    capacity row in its LP, seed 0 for each in turn, then seed 1 ..., while `budget[0]`
    (deterministic s, spent here) lasts. A variable whose try is proven to have no room is
    done (added to `out`), with every variable asking at least as much; one that takes a
    member is tried again at once. Returns the new state if any member was added (the
    fill's counts changed), else None. Deterministic: fixed seeds and deterministic limits,
    in variable order."""
    nodes = agg.nodes
    live = list(undecided)
    changed = False
    for seed in range(DEEP_SEEDS):
        for v in list(live):
            while v in live and budget[0] > 0:
                if fill.admitted(v) <= 0:
                    live.remove(v)
                    break
                got = _with_one_more(
                    agg, fill, ci, v, min(DEEP_TOPUP, budget[0]), linearization=2, seed=seed
                )
                budget[0] -= got.spent
                if got.packing is None:
                    if got.proven:
                        out.append(v)
                        live = [u for u in live if not _at_least(agg, u, v)]
                    break
                fill.add(v, 1)
                state = _ejecting(agg, got.packing, nodes.by_cap[ci])
                changed = True
    return state if changed else None


def _repaired(
    agg: Aggregate,
    fill: Filler,
    ci: int,
    budget: list[float],
    out: list[int],
    tried: set[int],
) -> bool:
    """The last fill's last step where repairs_on: component ci's variables with members
    left out and not proven out (`out`), smallest member first, one more member each while
    `budget[0]` lasts (deterministic s, spent here): by the regions (region.py) unless they
    failed on the packing as it stands for a member alike (`tried`: the last pass's
    failures; a heuristic's failure there ends the pass's tries of every variable asking as
    much, though the regions of a larger one may pack: the audit's mig medium seed 1, 133
    nodes, none for a (17 CPUs, 2 GiB) pod, some for (17, 8 GiB) ones); else by a per-node
    search (PROOF_LIMIT: it proves most that do not fit at once, and a proof puts the
    variable in `out`, which ends every variable asking as much), left out once
    PROOF_MISSES in a row decided nothing; else by a repair from the plan's packing
    (repair.py). A variable that takes a member is tried again, and on the new packing the
    regions too; one the repair does not place ends the tries of every variable asking as
    much. Smallest first: most that fit are small, and a small one proven out ends the
    larger ones' tries (justfit medium seed 1: in worth order the budget went on GPU jobs
    that fit nowhere). The per-node tries left out where they decide nothing: on shared
    medium seed 2 (75 nodes, 128 shapes) they proved nothing and took 0.1 of each 0.23
    det s a placed member cost, and the budget ran out with 9 jobs left out that router's
    referee re-packed. True if any member is added."""
    nodes = agg.nodes
    cap = agg.capacity[ci]
    pack = fill.packs.get(ci)
    if pack is None:
        return False
    state = _ejecting(agg, pack, nodes.by_cap[ci])
    scale = [f or 1 for f in cap.full]

    def size(v: int) -> tuple[float, int]:
        usage = agg.items[v].usage(cap.full)
        return sum(d / c for d, c in zip(usage, scale, strict=True)), v

    failed: list[int] = []
    changed = False
    regions = REPAIR_REGIONS
    # Regions fail alike for members alike (the same item on the same node sets): those
    # failed on the packing as it stands, first the last pass's.
    stale = {(agg.items[u], agg.allowed[u]) for u in tried}
    missed = 0  # per-node tries in a row that decided nothing
    for v in sorted(nodes.by_cap[ci], key=size):
        alike = (agg.items[v], agg.allowed[v])
        while fill.admitted(v) > 0 and not any(_at_least(agg, v, u) for u in out):
            if alike not in stale and regions > 0:
                regions -= 1
                if region.regional(state, v, exact=True):
                    fill.add(v, 1)
                    changed = True
                    continue
                stale.add(alike)
            if budget[0] <= 0 or any(_at_least(agg, v, u) for u in failed):
                break
            found = None
            if missed < PROOF_MISSES:
                limit = min(PROOF_LIMIT, budget[0])
                got = _with_one_more(agg, fill, ci, v, limit, cells=repair.REPAIR_CELLS)
                budget[0] -= got.spent
                found = got.packing
                missed = 0 if found is not None or got.proven else missed + 1
                if found is None and got.proven:
                    out.append(v)
                    break
            if found is None and budget[0] > 0:
                found, spent = repair.repaired(state, v, min(repair.REPAIR_LIMIT, budget[0]))
                budget[0] -= spent
            if found is None:
                failed.append(v)
                break
            fill.add(v, 1)
            state = _ejecting(agg, found, nodes.by_cap[ci])
            stale.clear()  # another packing: regions that failed on the last may fit here
            changed = True
    if changed:
        fill.packs[ci] = state.packing()
    return changed


def _by_patterns(cap: Capacity, entries: list[Entry]) -> tuple[Packing | None, bool]:
    """The last step's exact try by node patterns where the nodes are alike, within
    EXACT_TOPUP deterministic s: the packing found, and whether none was proven to exist
    ((None, False) where they do not apply or decide nothing). Where they apply they decide
    at once (a covering model solved without presolve), where the per-node search often
    spent its whole limit first (bench L seed 0: 0.135 s each time on a 9-node partition)."""
    by_pattern = pattern_packing(cap, entries, EXACT_TOPUP)
    if by_pattern is None:
        return None, False
    return by_pattern.packing, by_pattern.proven and by_pattern.packing is None


def _by_classes_last(agg: Aggregate, fill: Filler, ci: int) -> bool:
    """The very last try on a component of several node classes (running work gives nodes
    their own free capacity; targets over different node sets): members left out added one
    at a time, best worth first, where the placed pods and it pack by a dive on the LP of
    node patterns per class (classdive.py), the component laid out afresh; a variable that
    fails ends the tries of every one asking at least as much; CLASS_LPS LPs in all. Last,
    so that it only adds to what the steps before placed: the running medium seed 0 lost 62
    units of placed work where these dives ran among the earlier steps. True if any is
    added."""
    cap = agg.capacity[ci]
    if len(cap.groups) < 2 or fill.packs.get(ci) is None:
        return False
    nodes = agg.nodes
    lps = [CLASS_LPS]
    carried: configs.Carried = {}  # the last try's LP columns, for the next to start from
    failed: list[int] = []
    added = False
    for v in sorted(nodes.by_cap[ci], key=lambda v: (-agg.groups[agg.variables[v][0]].weight, v)):
        while fill.admitted(v) > 0 and lps[0] > 0:
            if any(_at_least(agg, v, u) for u in failed):
                break
            trial = list(fill.counts)
            trial[v] += 1
            mine = [min(lps[0], CLASS_DIVE_LPS)]  # one dive may not spend the others' LPs
            entries = nodes.entries(nodes.key(ci, trial)[1])
            found = _by_classes(agg, cap, entries, mine, carried)
            lps[0] -= min(lps[0], CLASS_DIVE_LPS) - mine[0]
            if found is None:
                failed.append(v)
                break
            fill.add(v, 1)
            fill.packs[ci] = found
            added = True
    return added


def _by_classes(
    agg: Aggregate,
    cap: Capacity,
    entries: list[Entry],
    lps: list[int],
    carried: configs.Carried | None = None,
) -> Packing | None:
    """One try of _by_classes_last: a dive on the LP of node patterns per class
    (configs.by_classes), its layout checked node by node (valid_layout); `lps` the LPs it
    may spend (decremented)."""
    if lps[0] <= 0:
        return None
    found = configs.by_classes(cap, entries, lps, carried)
    counts = {e.key: e.members for e in entries if e.members}
    return found if found is not None and valid_layout(agg, cap, found, counts) else None


def _with_one_more(
    agg: Aggregate, fill: Filler, ci: int, v: int, limit: float, **options: Any
) -> Answer:
    """CP-SAT's own search (pack.exact_packing, unordered) for component ci's members and
    one more of v, within `limit` deterministic s."""
    trial = list(fill.counts)
    trial[v] += 1
    entries = agg.nodes.entries(agg.nodes.key(ci, trial)[1])
    return exact_packing(agg.capacity[ci], entries, limit, ordered=False, **options)


def _per_node(cap: Capacity, entries: list[Entry]) -> tuple[Packing | None, bool]:
    """CP-SAT's own search over per-node counts within NODE_TOPUP: the packing found, and
    whether none was proven to exist."""
    per_node = exact_packing(cap, entries, NODE_TOPUP, ordered=False)
    return per_node.packing, per_node.proven and per_node.packing is None


def _ejecting(agg: Aggregate, pack: Packing, keys: list[int]) -> Ejecting:
    return Ejecting(pack, {u: agg.items[u] for u in keys}, {u: agg.allowed[u] for u in keys})


def _at_least(agg: Aggregate, v: int, u: int) -> bool:
    """A member of v asks at least what one of u does, on no more node sets: if u's did not
    fit, v's does not either."""
    a, b = agg.items[v], agg.items[u]
    return (
        a.whole == b.whole
        and a.pods >= b.pods
        and all(x >= y for x, y in zip(a.demand, b.demand, strict=True))
        and agg.allowed[v] <= agg.allowed[u]
    )


def _fresh(agg: Aggregate, fill: Filler, cis: set[int]) -> None:
    """The counts of capacity components `cis` made to pack by plain first-fit decreasing
    afresh (benders.Nodes.fresh), the members least worth taken off where they do not
    (benders.Nodes.repair), and packed so. The fill's own packing is valid, but built
    member by member it can reach counts that only a search packs: an independent checker
    must then find that packing within its limit (bench L seed 0: one target of 25 nodes
    and 281 pods stayed undecided in 5 s). What that takes off, others of the component's
    unplaced members may take back (_refilled); refilling every component afresh this way
    placed nothing more at L seed 0. Small solver components are not given here: their
    levels are solved exactly, and a plan proven optimal stays as it is."""
    nodes = agg.nodes
    for ci in sorted(cis & {agg.cap_of[v] for v, n in enumerate(fill.counts) if n}):
        # Not nodes.packs: its cache may hold a packing that the exact search found.
        if nodes.fresh(ci, fill.counts) is not None:
            continue
        counts = list(fill.counts)
        if not nodes.repair(ci, counts, fresh=True):
            continue  # nothing to take off (floors): the fill's packing stays
        for v in nodes.by_cap[ci]:
            if counts[v] != fill.counts[v]:
                fill.add(v, counts[v] - fill.counts[v])
        _refilled(agg, fill, ci)
        found = nodes.fresh(ci, fill.counts)
        assert found is not None, "repair left counts that first fit does not pack"
        fill.packs[ci] = found


def _refilled(agg: Aggregate, fill: Filler, ci: int) -> None:
    """Unplaced members put back on component ci, best worth first, as many of each class
    as rows allow and first fit still packs afresh (the most, by bisection)."""
    nodes = agg.nodes
    now = nodes.fresh(ci, fill.counts)
    for v in sorted(nodes.by_cap[ci], key=lambda v: (-agg.groups[agg.variables[v][0]].weight, v)):
        left = fill.admitted(v)
        # What fits next to the current packing: a cheap cap (a fresh packing rarely does
        # better), so that classes with no room cost no packings at all.
        if left > 0 and now is not None:
            left = min(left, now.room(agg.items[v], agg.allowed[v]))
        if left <= 0:
            continue

        lo, hi = 0, left  # the most that pack: lo does
        while lo < hi:
            mid = (lo + hi + 1) // 2
            trial = list(fill.counts)
            trial[v] += mid
            if nodes.fresh(ci, trial) is not None:
                lo = mid
            else:
                hi = mid - 1
        if lo:
            fill.add(v, lo)
            now = nodes.fresh(ci, fill.counts)


def moved_up(agg: Aggregate, fill: Filler, order: list[int]) -> None:
    """Each class's members, best worth first, moved from a candidate to one earlier in
    by_preference order (a better rank, or the same rank and a better `prefer` place or
    no GPU node for CPU work) as far as rows and nodes allow. Placed work stays the same
    (a member weighs as much on any target); a member at its previous target moves only
    for a better rank, which comes before stability. A move takes the members off (freeing
    their nodes), puts as many as fit on the better candidate and the rest back."""
    c = agg.candidate
    for g in order:
        was = agg.groups[g].previous
        vs = preferred(agg, g)
        # Each candidate's place, once per class (asked for every pair below).
        place = {v: (c(v).rank, c(v).pref, bool(gpu_waste(agg, v))) for v in vs}
        for i in range(len(vs) - 1, 0, -1):
            v = vs[i]
            if not fill.counts[v]:
                continue
            for u in vs[:i]:
                if place[u] >= place[v] or (was == c(v).target.id and c(u).rank >= c(v).rank):
                    continue
                fill.move(v, u)
                if not fill.counts[v]:
                    break


def first_fit_decreasing(
    agg: Aggregate,
    start: list[int] | None = None,
    groups: list[int] | None = None,
    packed: bool = False,
) -> list[int]:
    """Counts per aggregate variable, on real nodes. `start` counts are placed first (class
    by class, as far as rows and nodes allow; with `packed` they are known to fit and are
    kept as they are), then every class is completed. `groups`: only those classes."""
    gs = range(len(agg.groups)) if groups is None else groups
    order = sorted(gs, key=lambda g: (-agg.groups[g].weight, g))
    if packed:
        fill = Filler(agg, start)
    else:
        fill = Filler(agg)
        if start is not None:
            for g in order:
                for v in preferred(agg, g):
                    if start[v]:
                        fill.put(v, start[v])
    _put_rest(agg, fill, order)
    return fill.done()


def _put_rest(agg: Aggregate, fill: Filler, order: list[int]) -> None:
    """Each class in `order` puts its members not yet placed on its candidates, best first,
    as far as the nodes and rows let them."""
    for g in order:
        left = fill.unplaced(g)
        for v in preferred(agg, g):
            if not left:
                break
            left -= fill.put(v, left)


def level_value(agg: Aggregate, level: int, counts: list[int]) -> int:
    return sum(c * counts[v] for c, v in agg.levels[level].terms)


def rounded(
    agg: Aggregate, lp_values: list[float], rounds: int = 0, groups: list[int] | None = None
) -> list[int]:
    """The LP optimum rounded down, the LP of what is left solved and rounded down again (a
    few times, while it still rounds something), then completed first-fit decreasing.
    Rounding down keeps every row (all coefficients are ≥ 0), and a class of many members
    loses at most one per target, so on large platforms this starts near the LP bound.
    `groups`: completed with only those classes (the LP's values are zero off them)."""
    from router.solve.lp import lp_solve

    start = [int(x + 1e-6) for x in lp_values]
    for _ in range(rounds):
        more = lp_solve(agg, start)[1]
        if more is None:
            break
        step = [int(x + 1e-6) for x in more]
        if not any(step):
            break
        start = [a + b for a, b in zip(start, step, strict=True)]
    if agg.nodes is not None:  # what does not fit node by node gives way, least worth first
        start = agg.nodes.fit(start)
        return first_fit_decreasing(agg, start, groups=groups, packed=True)
    return first_fit_decreasing(agg, start, groups=groups)


@paused_gc()
def best_hint(
    agg: Aggregate, lp_values: list[float] | None, groups: list[int] | None = None
) -> list[int]:
    """The better (level 1) of first-fit decreasing and the rounded LP; ties go to greedy.
    `groups`: of those classes only (a solver component's, with its LP values), zero off
    them."""
    greedy = first_fit_decreasing(agg, groups=groups)
    if lp_values is None:
        return greedy
    lp = rounded(agg, lp_values, groups=groups)
    return lp if level_value(agg, 0, lp) > level_value(agg, 0, greedy) else greedy


def previous_hint(agg: Aggregate) -> list[int] | None:
    """The hint when re-planning: planned work back where the previous plan put it (as far as
    it still fits), completed first-fit decreasing; None if nobody was planned. Built with
    the aggregate (preempt.py), as it also fixes which planned work must stay placed."""
    return list(agg.start) if agg.start is not None else None
