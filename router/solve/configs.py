"""The last fill's node-pattern re-packing of a capacity component with few work shapes.

A component of many identical nodes holding single-pod CPU work of a few shapes (bench XL:
CPU partitions of 16-76 nodes, memory-bound batch jobs of 3-8 shapes) is packed exactly by a
node-pattern (configuration) model rather than node by node. A *pattern* of a node class
(nodes of identical free capacity, nodes.NodeGroup) is how many pods of each shape one node
holds, within every axis. With z_cp nodes of class c on pattern p and x_vc members of
aggregate variable v on class c (integers):

  Σ_p z_cp ≤ N_c                                   nodes of each class
  Σ_{v of shape s} x_vc ≤ Σ_p a_ps z_cp            pods of shape s have slots on class c
  counts_v ≤ Σ_c x_vc ≤ counts_v + left_v          what is placed stays placed
  Σ_{v ∈ k} (x_v − counts_v) ≤ unplaced_k          each class's members once
  Σ coef (x_v − counts_v) ≤ slack_r                every row (quotas, spreads) the fill holds

maximising the worth added (class weight × members), preferred candidates first on ties.
Only maximal patterns are enumerated (no further pod fits: surplus slots stay empty), each
shape capped at what could be placed of it; the current packing's own node contents are
added as patterns, so it is a complete hint. Where not every maximal pattern is listed, the
priced patterns holding 1 .. FORCED pods of each shape are added too (_forced): the LP's own
columns fill nodes fractionally, and an integer solution needs whole nodes holding a few of
every shape (A15, big-s2: 84 nodes, 23 shapes, 66 generated patterns reach 26566 of the
LP's 26584, with the 49 forced ones 26584). Identical nodes are one class, so there is no
symmetry between them; the LP of the pattern model is the strong one (Gilmore-Gomory) where
per-node variables stall on memory filled to the GiB. CP-SAT solves it with one worker, a
fixed seed and a deterministic limit. The counts are then laid out on the nodes in class and
pattern order (deterministic), checked node by node and kept only if they add worth.

Pods asking whole GPUs take part too (A18: 60-169 nodes of 8 h100, 96 CPUs and 1 TiB,
22 shapes of 0-8 GPUs, kept 19-44 jobs out that router's referee re-packs): the patterns
are then over GPUs, CPUs and memory (_dims), and the pricing knapsack, a table too large
there, is solved by CP-SAT (_priced_cp). A member that takes one whole node (an exclusive
job) is a shape of its own whose only pattern is that node alone, on node classes where
nothing runs (cpucomp small seed 9: 7 exclusive jobs on 53 nodes kept the component out of
this model, and 27 shared jobs stayed out that a re-packing takes). A member of k whole
nodes (a multi-node job) fills k such slots, on k distinct nodes since each holds one
(since stop 32: x_vc counts slots, k per member, and the rows count members). A member of
k pods (a service's replicas, which may share a node) fills k pod slots of its shape the
same way (since stop 34: the audit's services medium seed 2, 54 alike L4 nodes under
services of 1-7 replicas, kept out of this model and its dive, had 27 left out that router's
referee re-packed). Components where a pod with MIG slices takes part are left to the rest
of the last step (greedy._topped); past MAX_SHAPES shapes (on one node class) only the
one-more dives run (_one_more), and past PATTERN_CAP patterns the model takes the generated
ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from router.solve import classdive, dive
from router.solve.aggregate import gpu_waste
from router.solve.nodes import Capacity
from router.solve.pack import Block, Entry, Packing, fits_count, runs, valid_layout

MAX_SHAPES = 40
PATTERN_CAP = 3000  # maximal patterns over a component's node classes
ENUM_STEPS = 10_000  # search steps enumerating them all (past either: generated ones)
STEP_CAP = 30_000  # search steps enumerating those of reduced cost about 0
TOLERANCE = 0.5  # of reduced cost, in worth units (integers), for _paying
CG_ROUNDS = 40  # rounds of column generation
KNAPSACK_CELLS = 200_000  # pricing table cells (CPUs x memory, in their common units)
LIMIT = 1.0  # deterministic seconds per component (A15 big-s0: optimal at 0.56)
SEED = 0
PRICE_SCALE = 10**9  # the largest dual, scaled to an integer, in _priced_cp
FORCED = 3  # pods of one shape forced into a priced pattern (_forced)
ONE_MORE_TRIES = 32  # dives per component in _one_more that fail after their LP fits ...
ONE_MORE_LPS = 1_000  # ... and LPs they solve in all (big small seed 5: 2 dives, 112 LPs)
# Where those LPs run out before every member is tried: a last look at the members not reached,
# in the same order, within LAST_LOOK_LPS more, at most LAST_LOOK_DIVE a dive.
LAST_LOOK_LPS = 600
LAST_LOOK_DIVE = 200
REST_STEPS, REST_PATTERNS = 2_000, 300  # a dive's rest solved over all its patterns within
REST_SHAPES = 12  # ... listed past MAX_SHAPES only once at most this many shapes are left

# The pattern model's LP: its value, and per node class the duals of its node row and of
# each shape's slot row.
LP = tuple[float, list[tuple[float, dict[int, float]]]]
Pattern = tuple[int, ...]
Aggregate = Any  # aggregate.Aggregate (typed Any so that imports flow one way)
Filler = Any  # greedy.Filler


@dataclass(frozen=True)
class _Model:
    """What the pattern model of one component reads: the aggregate and the fill, the
    component's capacity, its live variables (placed or with members left), how many more
    of each may be added, each variable's shape, and per node class the variables allowed
    there."""

    agg: Aggregate
    fill: Filler
    cap: Capacity
    live: list[int]
    left: dict[int, int]
    shape_of: dict[int, int]
    on: list[list[int]]
    dims: tuple[int, ...]
    alone: list[list[tuple[int, ...]]]  # per node class, the patterns of one whole node
    unit: dict[int, int]  # slots one member fills: its whole nodes, else its pods


def many_shapes(agg: Aggregate, ci: int) -> bool:
    """Component ci is one node class whose variables have more than MAX_SHAPES shapes:
    where repacked takes the one-more dives alone (counted before the fill, from the
    inputs)."""
    if len(agg.capacity[ci].groups) != 1:
        return False
    kinds = {(agg.items[v].demand, bool(agg.items[v].whole)) for v in agg.nodes.by_cap[ci]}
    return len(kinds) > MAX_SHAPES


def repacked(agg: Aggregate, fill: Filler, ci: int, many_lps: int = ONE_MORE_LPS) -> bool:
    """Component ci re-packed by the pattern model with unplaced members added, if that
    adds worth (see the module docstring); True if the fill took it. `many_lps`: the
    one-more dives' LPs where the shapes are too many for the pattern model."""
    cap: Capacity = agg.capacity[ci]
    pack: Packing | None = fill.packs.get(ci)
    if pack is None:
        return False
    keys: list[int] = agg.nodes.by_cap[ci]
    left: dict[int, int] = {}
    for v in keys:
        n = fill.admitted(v)
        if n > 0:
            left[v] = n
    live = [v for v in keys if fill.counts[v] or v in left]
    if not left or not all(_simple(cap, agg.items[v]) for v in live):
        return False
    if not _room_somewhere(cap, pack, agg, left):
        return False
    shape_of: dict[int, int] = {}
    kinds: list[tuple[tuple[int, ...], bool]] = []  # a whole node is never a pod's shape
    for v in live:
        key = (agg.items[v].demand, bool(agg.items[v].whole))
        if key not in kinds:
            kinds.append(key)
        shape_of[v] = kinds.index(key)
    many = len(kinds) > MAX_SHAPES  # one class only, and one member at a time (_one_more)
    if many and len(cap.groups) != 1:
        return False
    shapes = [d for d, _ in kinds]
    whole = {s for s, (_, w) in enumerate(kinds) if w}
    dims = _dims(cap, [d for d, w in kinds if not w])
    unit = {v: agg.items[v].whole or agg.items[v].pods for v in live}
    most = [0] * len(shapes)  # slots of a shape that could be filled at all
    for v in live:
        most[shape_of[v]] += unit[v] * (fill.counts[v] + left.get(v, 0))
    on: list[list[int]] = []  # per node class, the variables that may go there
    for grp in cap.groups:
        on.append([v for v in live if grp.node_set in agg.allowed[v]])
    now = _current(cap, pack, shape_of, len(shapes), unit)
    caps = [  # pods of each shape one node may hold (whole nodes apart: `alone`)
        {
            s: min(most[s], fits_count(grp.free, shapes[s]))
            for s in sorted({shape_of[v] for v in on[c]} - whole)
        }
        for c, grp in enumerate(cap.groups)
    ]
    alone = [
        [
            tuple(int(k == s) for k in range(len(shapes)))
            for s in sorted({shape_of[v] for v in on[c]} & whole)
        ]
        if grp.empty
        else []
        for c, grp in enumerate(cap.groups)
    ]
    model = _Model(agg, fill, cap, live, left, shape_of, on, dims, alone, unit)
    got = _generated(model, shapes, caps, now)
    if got is None:
        return False
    cols, lp = got
    if lp is not None and math.floor(lp[0] + 1e-6) <= now.worth(agg, live):
        return False  # the LP bound: nothing more goes in (most components end here)
    if many:
        return _one_more(model, ci, shapes, whole, many_lps)
    # Only these axes are asked (_simple, _dims): patterns over them.
    flat: list[tuple[int, ...]] = [tuple(d[a] for a in dims) for d in shapes]
    patterns = _enumerated([tuple(g.free[a] for a in dims) for g in cap.groups], flat, caps)
    if patterns is None:  # too many: the generated ones, and those the LP's optimum may use
        patterns = cols
        more = _paying(cap, dims, flat, caps, lp, patterns) if lp is not None else None
        for c, ps in enumerate(more or []):
            patterns[c].extend(p for p in ps if p not in patterns[c])
        if lp is not None:
            for c, ps in enumerate(_forced(cap, dims, shapes, caps, lp)):
                patterns[c].extend(p for p in ps if p not in patterns[c])
    for c, nodes in enumerate(now.nodes):
        patterns[c].extend(p for p in sorted(nodes, reverse=True) if p not in patterns[c])
        patterns[c].extend(p for p in alone[c] if p not in patterns[c])
    sol = _solve(model, patterns, now)
    if sol is not None and sol.worth(agg, live) <= now.worth(agg, live):
        sol = None
    took = False
    if sol is not None:
        counts = sol.counts(live)
        packing = _laid_out(cap, shapes, shape_of, sol, whole)
        if valid_layout(agg, cap, packing, counts):  # one pod per member here
            for v in live:
                if counts[v] != fill.counts[v]:
                    fill.add(v, counts[v] - fill.counts[v])
            fill.packs[ci] = packing
            took = True
    # Below the LP bound still: one member more at a time, by a dive (dive.py).
    if lp is not None and math.floor(lp[0] + 1e-6) <= _worth(agg, fill, live):
        return took
    return _one_more(model, ci, shapes, whole) or took


def _worth(agg: Aggregate, fill: Filler, live: list[int]) -> int:
    return sum(agg.groups[agg.variables[v][0]].weight * fill.counts[v] for v in live)


def _one_more(
    m: _Model, ci: int, shapes: list[tuple[int, ...]], whole: set[int], lps: int = ONE_MORE_LPS
) -> bool:
    """On a component of one node class: members left out added one at a time, best worth
    first (preferred candidates first among equals), each where the placed pods and it
    still pack onto the nodes by dive.packed, the whole component laid out afresh; a shape
    that does not fit ends the tries of every shape asking at least as much. At most
    ONE_MORE_TRIES dives fail after their first LP fitted (a heuristic's failure), and
    `lps` LPs are solved in all: a "no" of the first LP (a proof, most in 1-8 LPs) and a
    dive that adds its member spend LPs only. True if any is added. (A member of more pods
    or whole nodes than one that failed may fail where it fitted, not the reverse: the
    failures are kept per shape and slots per member.) Where the LPs run out before every
    member is tried, a member not reached is no failure: a last look goes through them
    again in the same order within LAST_LOOK_LPS more, LAST_LOOK_DIVE a dive at most.

    (Why, since stops 41 and 42: the cpsat docstring, awkward medium seed 1's p1.)

    Past MAX_SHAPES shapes (the pattern model is not built then, repacked) a dive's LP
    needs more columns (dive.MANY_ROUNDS pricings per LP), so each is priced by
    _priced_greedy first and exactly only where that finds no column of reduced cost
    below 0, and the rest is listed exactly only once at most REST_SHAPES shapes are
    left (the listing spent its whole step budget for nothing at each step before).

    Each dive starts from the columns of the dives before (`carried`), and one whose first
    LP ran out of pricing rounds (dive.packed said "open") is tried again for the same
    member rather than counted as a shape that does not fit: on awkward medium seed 2's
    k0 and k1 (114 and 60 alike nodes, 176 and 133 shapes) that LP needs 300-600 rounds
    from the nodes' own patterns, and four such dives had spent the 1,000 LPs."""
    agg, fill, cap = m.agg, m.fill, m.cap
    if len(cap.groups) != 1 or len(m.on[0]) != len(m.live):
        return False
    grp = cap.groups[0]
    most = [0 if s in whole else fits_count(grp.free, d) for s, d in enumerate(shapes)]
    many = len(shapes) > MAX_SHAPES

    price = _dive_price(m.dims, grp.free, shapes, many)
    flat = [tuple(d[a] for a in m.dims) for d in shapes]
    free = tuple(grp.free[a] for a in m.dims)

    def listed(caps: dict[int, int]) -> list[Pattern] | None:
        if many and len(caps) > REST_SHAPES:
            return None
        return _maximal(free, flat, sorted(caps), caps, [REST_STEPS], most=REST_PATTERNS)

    place = _places(agg, m.live)
    weight = {v: agg.groups[agg.variables[v][0]].weight for v in m.live}
    failed: list[tuple[int, int]] = []  # (shape, slots of one member)
    carried: list[Pattern] = []  # the dives' columns so far, for the next to start from
    tries, added = ONE_MORE_TRIES, False
    order = sorted(m.live, key=lambda v: (-weight[v], place[v], v))
    left_lps, per_dive, ran_out = [lps], 0, False
    for look in range(2):
        if look:  # the last look: the LPs ran out before every member was tried
            if not ran_out:
                break
            left_lps, per_dive, ran_out = [LAST_LOOK_LPS], LAST_LOOK_DIVE, False
        for v in order:
            if ran_out:
                break
            s = m.shape_of[v]
            while tries > 0 and not any(
                _covers(shapes, whole, s, f) and m.unit[v] >= n for f, n in failed
            ):
                if fill.admitted(v) <= 0:
                    break
                tries -= 1
                now = _current(cap, fill.packs[ci], m.shape_of, len(shapes), m.unit)
                members = dict(now.members[0])
                members[v] = members.get(v, 0) + m.unit[v]
                demand = [0] * len(shapes)
                for u, k in members.items():
                    demand[m.shape_of[u]] += k
                start = sorted(now.nodes[0], reverse=True) + m.alone[0] + carried
                rounds = dive.MANY_ROUNDS if many else dive.CG_ROUNDS
                said: list[str] = []
                mine = [min(left_lps[0], per_dive)] if per_dive else left_lps
                before = mine[0]
                got = dive.packed(
                    demand,
                    grp.count,
                    most,
                    whole,
                    start,
                    price,
                    listed,
                    mine,
                    rounds,
                    carried,
                    said,
                )
                if per_dive:
                    left_lps[0] -= before - mine[0]
                packing = None
                if got is not None:
                    sol = Solution([dict(got)], [members], m.unit)
                    packing = _laid_out(cap, shapes, m.shape_of, sol, whole)
                if packing is None or not valid_layout(agg, cap, packing, sol.counts(m.live)):
                    if said == ["open"] and left_lps[0] > 0:
                        continue  # its LP had not converged: the same member, from these columns
                    if said == ["open"]:  # the LPs ran out, not the member: not a failure
                        tries += 1
                        ran_out = True
                        break
                    if said == ["no"]:
                        tries += 1  # a proof, not a failed try
                    failed.append((s, m.unit[v]))
                    break
                tries += 1  # only LPs: members that fit are what the tries are for
                fill.add(v, 1)
                fill.packs[ci] = packing
                added = True
    return added


def _dive_price(
    dims: tuple[int, ...], free: tuple[int, ...], shapes: list[tuple[int, ...]], many: bool
) -> dive.Price:
    """The one-more dives' pricing (dive.Price): the greedy fillings first where the shapes
    are many, else or then the exact knapsack (_priced). Where that knapsack is CP-SAT's and
    it stopped at its limit short of a proof, with no pattern worth above 1 found, the worth
    returned is its upper bound (or the Lagrangian one, _worth_bound) with the best pattern
    found: dive._generated then takes the LP's value only divided by it (Farley's bound), so
    that an LP not proven optimal never says "no" (a "no" ends the tries of every member
    asking as much, _one_more)."""

    def price(caps: dict[int, int], duals: dict[int, float]) -> tuple[float, Pattern] | None:
        quick = None
        if many:
            quick = _priced_greedy(dims, free, shapes, caps, duals)
            if quick is not None and quick[0] > 1 + dive.EPS:
                return quick
        upper = [0.0]
        got = _priced(dims, free, shapes, caps, duals, upper)
        if got is not None and got[0] > 1 + dive.EPS:
            return got
        if upper[0] <= 1 + dive.EPS:
            return got  # proven: no pattern is worth more than 1
        best = got or quick or (0.0, tuple(0 for _ in shapes))
        return min(upper[0], _worth_bound(dims, free, shapes, caps, duals)), best[1]

    return price


Kind = tuple[tuple[int, ...], bool, tuple[int, ...]]  # shape, whole node, classes it may go on
Carried = dict[int, list[tuple[tuple[Kind, int], ...]]]  # per class: patterns as kind counts


def by_classes(
    cap: Capacity, entries: list[Entry], lps: list[int], carried: Carried | None = None
) -> Packing | None:
    """A packing of every member of `entries` onto `cap`'s node classes by classdive.packed
    (the last try on a component of several classes, greedy._by_classes_last), or None.
    The dive's types are kinds: a shape, whole or not, and the classes its entries may go
    on; it starts from the whole-node patterns and from the patterns `carried` from the
    caller's tries before (a pattern fits its class whatever the demand; kinds not asked for
    now are dropped from it), and leaves its own LP's there; each kind's slots of a class
    are taken node by node by its entries in key order. The caller checks the layout
    (valid_layout)."""
    entries = [e for e in entries if e.members]
    if not entries or not all(_simple(cap, e.item) for e in entries):
        return None
    kinds: list[Kind] = []
    kind_of: dict[int, int] = {}
    for e in sorted(entries, key=lambda e: e.key):
        where = tuple(c for c, g in enumerate(cap.groups) if g.node_set in e.allowed)
        kind = (e.item.demand, bool(e.item.whole), where)
        if kind not in kinds:
            kinds.append(kind)
        kind_of[e.key] = kinds.index(kind)
    vectors = [d for d, _, _ in kinds]
    single = {k for k, (_, w, _) in enumerate(kinds) if w}
    most = [
        [_most(grp, d, w, c in where) for d, w, where in kinds] for c, grp in enumerate(cap.groups)
    ]
    dims = _dims(cap, [d for d, w, _ in kinds if not w])
    slots = {e.key: e.members * (e.item.whole or e.item.pods) for e in entries}
    demand = [0] * len(kinds)
    for key, n in slots.items():
        demand[kind_of[key]] += n
    start: list[list[Pattern]] = [[] for _ in cap.groups]
    for k in sorted(single):
        for c in kinds[k][2]:
            if cap.groups[c].empty:
                start[c].append(tuple(int(j == k) for j in range(len(kinds))))
    index = {kind: k for k, kind in enumerate(kinds)}
    for c, patterns in sorted((carried or {}).items()):
        for named in patterns:
            column = [0] * len(kinds)
            for kind, n in named:
                if kind in index:
                    column[index[kind]] = n
            start[c].append(tuple(column))

    def price(
        c: int, caps: dict[int, int], duals: dict[int, float], above: float
    ) -> tuple[float, Pattern] | None:
        free = cap.groups[c].free
        quick = _priced_greedy(dims, free, vectors, caps, duals)
        if quick is not None and quick[0] > above:
            return quick
        if _worth_bound(dims, free, vectors, caps, duals) <= above:
            return None  # the knapsack's best is not above it either (and costs ~10 ms)
        return _priced(dims, free, vectors, caps, duals)

    counts = [g.count for g in cap.groups]
    idle = [g.empty for g in cap.groups]
    kept: list[tuple[int, Pattern]] = []
    got = classdive.packed(demand, counts, most, single, idle, start, price, lps, kept)
    if carried is not None:
        carried.clear()
        for c, kept_one in kept:
            carried.setdefault(c, []).append(
                tuple((kinds[k], n) for k, n in enumerate(kept_one) if n)
            )
    if got is None:
        return None
    queues: list[list[list[int]]] = [[] for _ in kinds]  # per kind: [key, slots left]
    for key in sorted(slots):
        queues[kind_of[key]].append([key, slots[key]])
    out = Packing(cap)
    for c in range(len(cap.groups)):
        contents: list[tuple[tuple[int, int], ...]] = []
        for pattern in sorted(got[c], reverse=True):
            for _ in range(got[c][pattern]):
                content: dict[int, int] = {}
                for k, a in enumerate(pattern):
                    while a and queues[k]:
                        head = queues[k][0]
                        if k in single:
                            content[head[0]] = -1
                            take = 1
                        else:
                            take = min(a, head[1])
                            content[head[0]] = content.get(head[0], 0) + take
                        a -= take
                        head[1] -= take
                        if not head[1]:
                            queues[k].pop(0)
                contents.append(tuple(sorted(content.items())))
        _blocks(out, c, contents, lambda key: kinds[kind_of[key]][0])
    if any(queues):
        return None
    out.placed = {e.key: e.members for e in entries}
    return out


def _most(grp: Any, shape: tuple[int, ...], whole: bool, there: bool) -> int:
    """Pods of a shape one node of the class may hold (a whole-node shape: its idle nodes)."""
    if not there:
        return 0
    return int(grp.empty) if whole else fits_count(grp.free, shape)


def _covers(shapes: list[tuple[int, ...]], whole: set[int], s: int, f: int) -> bool:
    """A pod of shape s asks at least what one of f does (a whole node: any whole node)."""
    if (s in whole) != (f in whole):
        return False
    return s in whole or all(x >= y for x, y in zip(shapes[s], shapes[f], strict=True))


def _simple(cap: Capacity, item: Any) -> bool:
    """Pods asking whole GPUs, CPUs and memory only (no MIG slices), or whole nodes."""
    if item.whole:
        return True
    return all(d == 0 for a, d in zip(cap.axes, item.demand, strict=True) if a not in AXES)


AXES = ("gpus", "cpus", "memory")


def _dims(cap: Capacity, shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """The axes the patterns are over: CPUs and memory, and whole GPUs first where a shape
    asks them."""
    gpus = cap.axes.index("gpus")
    asked = any(d[gpus] for d in shapes)
    return tuple(cap.axes.index(a) for a in AXES if a != "gpus" or asked)


def _room_somewhere(cap: Capacity, pack: Packing, agg: Aggregate, left: dict[int, int]) -> bool:
    """A quick necessary condition: some member left out has, on each axis, that much free
    in total on its node sets (a whole node's worth for a whole-node member), else no
    re-packing adds it."""
    free: dict[str, list[int]] = {}
    for b in pack.blocks:
        s = cap.groups[b.group].node_set
        acc = free.setdefault(s, [0] * len(cap.axes))
        for a, f in enumerate(b.free):
            acc[a] += b.count * f
    for v in left:
        item = agg.items[v]
        d = tuple(item.whole * f for f in cap.full) if item.whole else item.demand
        tot = [0] * len(cap.axes)
        for s in agg.allowed[v]:
            for a, f in enumerate(free.get(s, ())):
                tot[a] += f
        if all(t >= x for t, x in zip(tot, d, strict=True)):
            return True
    return False


def _enumerated(
    free: list[tuple[int, ...]], shapes: list[tuple[int, ...]], caps: list[dict[int, int]]
) -> list[list[tuple[int, ...]]] | None:
    """Every maximal pattern of every node class (`free` per class); None past PATTERN_CAP
    or ENUM_STEPS."""
    out: list[list[tuple[int, ...]]] = []
    budget = [ENUM_STEPS]
    total = 0
    for c, f in enumerate(free):
        found = _maximal(f, shapes, [s for s in caps[c] if caps[c][s]], caps[c], budget)
        if found is None:
            return None
        total += len(found)
        if total > PATTERN_CAP:
            return None
        out.append(found)
    return out


def _generated(
    m: _Model,
    shapes: list[tuple[int, ...]],
    caps: list[dict[int, int]],
    now: Solution,
) -> tuple[list[list[tuple[int, ...]]], LP | None] | None:
    """Patterns by column generation: the LP of the pattern model over the patterns so far
    (the current nodes' contents, and each shape alone as many as fit), a pattern of most
    dual worth per class priced by a knapsack over CPUs and memory (_priced), added while
    one has positive reduced cost, for at most CG_ROUNDS rounds; with the last LP (its
    value, a bound on the whole model, and duals) if no pattern had one any more. None if
    the LP fails."""
    cols: list[list[tuple[int, ...]]] = []
    for c in range(len(m.cap.groups)):
        mine = sorted(now.nodes[c], reverse=True)
        for s, n in caps[c].items():
            alone = tuple(n if k == s else 0 for k in range(len(shapes)))
            if n and alone not in mine:
                mine.append(alone)
        mine.extend(p for p in m.alone[c] if p not in mine)
        cols.append(mine)
    for _ in range(CG_ROUNDS):
        lp = _master(m, cols)
        if lp is None:
            return None
        added = False
        for c, grp in enumerate(m.cap.groups):
            node_dual, slot_duals = lp[1][c]
            best = _priced(m.dims, grp.free, shapes, caps[c], slot_duals)
            if (
                best is not None
                and best[0] > node_dual + 1e-6 * (1 + node_dual)
                and best[1] not in cols[c]
            ):
                cols[c].append(best[1])
                added = True
        if not added:
            return cols, lp
    return cols, None


def _paying(
    cap: Capacity,
    dims: tuple[int, ...],
    flat: list[tuple[int, ...]],
    caps: list[dict[int, int]],
    lp: LP,
    patterns: list[list[tuple[int, ...]]],
) -> list[list[tuple[int, ...]]] | None:
    """The maximal patterns of reduced cost about 0 (at least -TOLERANCE) at the LP's
    optimum: those an optimal solution of the LP may use. (By LP duality a solution is
    worth at most the bound plus its patterns' reduced costs, so the exact set for a gain
    would be those within bound - worth - 1; on a degenerate LP, as when CPUs bind, that is
    nearly every pattern.) `flat`: the shapes' CPUs and memory. None past PATTERN_CAP or
    STEP_CAP."""
    duals = lp[1]
    out: list[list[tuple[int, ...]]] = []
    budget = [STEP_CAP]
    total = 0
    for c, grp in enumerate(cap.groups):
        node_dual, slot_duals = duals[c]
        ss = [s for s in caps[c] if caps[c][s]]
        free = tuple(grp.free[a] for a in dims)
        found = _maximal(free, flat, ss, caps[c], budget, slot_duals, node_dual - TOLERANCE)
        if found is None:
            return None
        total += sum(p not in patterns[c] for p in found)
        if total > PATTERN_CAP:
            return None
        out.append(found)
    return out


def _forced(
    cap: Capacity,
    dims: tuple[int, ...],
    shapes: list[tuple[int, ...]],
    caps: list[dict[int, int]],
    lp: LP,
) -> list[list[tuple[int, ...]]]:
    """Per node class, for each shape s and k = 1 .. FORCED of it: k pods of s and the rest
    of the node priced by the LP's duals (_priced). Where the patterns of reduced cost about
    0 are too many to list, these are the columns an integer solution needs beside the LP's
    own (the LP fills nodes fractionally; a whole node holding a little of every shape is
    what re-packing the last pods asks, A15)."""
    out: list[list[tuple[int, ...]]] = []
    for c, grp in enumerate(cap.groups):
        slot_duals = lp[1][c][1]
        mine: list[tuple[int, ...]] = []
        for s in sorted(caps[c]):
            for k in range(1, min(caps[c][s], FORCED) + 1):
                rest = tuple(f - k * x for f, x in zip(grp.free, shapes[s], strict=True))
                if any(f < 0 for f in rest):
                    break
                less = dict(caps[c])
                less[s] -= k
                best = _priced(dims, rest, shapes, less, slot_duals)
                pat = list(best[1]) if best is not None else [0] * len(shapes)
                pat[s] += k
                if tuple(pat) not in mine:
                    mine.append(tuple(pat))
        out.append(mine)
    return out


def _master(
    m: _Model,
    cols: list[list[tuple[int, ...]]],
) -> LP | None:
    """The pattern model's LP over `cols`: its value, and per class the dual of its node
    row and of each shape's slot row."""
    from ortools.linear_solver import pywraplp  # type: ignore[import-untyped]

    lp = pywraplp.Solver.CreateSolver("GLOP")
    inf = lp.infinity()
    node_rows = []
    slot_rows: list[dict[int, Any]] = []
    x: list[dict[int, Any]] = []
    for c, grp in enumerate(m.cap.groups):
        z = [lp.NumVar(0, grp.count, "") for _ in cols[c]]
        node_rows.append(lp.Add(sum(z) <= grp.count))
        x.append({v: lp.NumVar(0, _slots(m, v), "") for v in m.on[c]})
        rows: dict[int, Any] = {}
        for s in sorted({m.shape_of[v] for v in m.on[c]}):
            row = lp.Constraint(-inf, 0)
            for v in m.on[c]:
                if m.shape_of[v] == s:
                    row.SetCoefficient(x[c][v], 1)
            for k, pat in enumerate(cols[c]):
                if pat[s]:
                    row.SetCoefficient(z[k], -pat[s])
            rows[s] = row
        slot_rows.append(rows)
    total = _limited(lp.Add, x, m, lambda v, slots: slots * (1.0 / m.unit[v]))
    lp.Maximize(sum(m.agg.groups[m.agg.variables[v][0]].weight * total[v] for v in m.live))
    if lp.Solve() != pywraplp.Solver.OPTIMAL:
        return None
    return float(lp.Objective().Value()), [
        (node_rows[c].dual_value(), {s: row.dual_value() for s, row in slot_rows[c].items()})
        for c in range(len(m.cap.groups))
    ]


def _worth_taking(caps: dict[int, int], duals: dict[int, float]) -> list[int]:
    """The shapes a pattern may hold (cap above 0) that are worth something (dual above 0),
    in index order: the items of every pricing below."""
    return [s for s in sorted(caps) if caps[s] and duals.get(s, 0.0) > 1e-9]


def _priced(
    dims: tuple[int, ...],
    free: tuple[int, ...],
    shapes: list[tuple[int, ...]],
    caps: dict[int, int],
    duals: dict[int, float],
    upper: list[float] | None = None,
) -> tuple[float, tuple[int, ...]] | None:
    """The pattern of most dual worth on a node with `free`: a bounded knapsack over the
    axes `dims`, by dynamic programming in units of their greatest common divisors, or by
    CP-SAT where that table is too large (_priced_cp). `upper`, if given, receives an upper
    bound on the best worth: the worth found where it is proven best (the table; CP-SAT
    where OPTIMAL), else CP-SAT's bound (_priced_cp)."""
    import numpy as np

    items = _worth_taking(caps, duals)
    if upper is not None:
        upper[:] = [0.0]
    if not items:
        return None
    unit = [math.gcd(free[a], *(shapes[s][a] for s in items)) or 1 for a in dims]
    width = [free[a] // u for a, u in zip(dims, unit, strict=True)]
    if math.prod(w + 1 for w in width) > KNAPSACK_CELLS:
        return _priced_cp(dims, free, shapes, {s: caps[s] for s in items}, duals, upper)
    dp = np.zeros(tuple(w + 1 for w in width))
    steps: list[tuple[int, int, tuple[int, ...], Any]] = []
    for s in items:
        size = [shapes[s][a] // u for a, u in zip(dims, unit, strict=True)]
        n, chunk = caps[s], 1
        while n > 0:  # binary splitting: chunks 1, 2, 4, ... of the shape
            k = min(chunk, n)
            n -= k
            chunk *= 2
            step = tuple(k * x for x in size)
            if any(d > w for d, w in zip(step, width, strict=True)):
                continue
            cand = dp[tuple(slice(0, w + 1 - d) for d, w in zip(step, width, strict=True))]
            cand = cand + k * duals[s]  # a new array: dp below is updated in place
            after = tuple(slice(d, None) for d in step)
            take = np.zeros(dp.shape, dtype=bool)
            np.greater(cand, dp[after] + 1e-12, out=take[after])
            np.copyto(dp[after], cand, where=take[after])
            steps.append((s, k, step, take))
    pat = [0] * len(shapes)
    at = list(width)
    for s, k, step, take in reversed(steps):
        if take[tuple(at)]:
            pat[s] += k
            at = [i - d for i, d in zip(at, step, strict=True)]
    if upper is not None:
        upper[:] = [float(dp[tuple(width)])]
    return float(dp[tuple(width)]), tuple(pat)


BOUND_SWEEPS = 3  # of _worth_bound's descent, over every axis


def _worth_bound(
    dims: tuple[int, ...],
    free: tuple[int, ...],
    shapes: list[tuple[int, ...]],
    caps: dict[int, int],
    duals: dict[int, float],
) -> float:
    """An upper bound on _priced's best worth: the knapsack's Lagrangian dual
    f(λ) = Σ_a λ_a free_a + Σ_s caps_s max(0, π_s - Σ_a λ_a shape_sa), valid at any λ ≥ 0,
    lowered by a few sweeps of exact minimisation along each axis (there λ_a is the ratio
    at the cut of a fractional knapsack); the least value seen."""
    items = _worth_taking(caps, duals)
    lam = dict.fromkeys(dims, 0.0)

    def value() -> float:
        worth = sum(lam[a] * free[a] for a in dims)
        for s in items:
            worth += caps[s] * max(0.0, duals[s] - sum(lam[a] * shapes[s][a] for a in dims))
        return worth

    best = value()
    for _ in range(BOUND_SWEEPS):
        for a in dims:
            rest = {s: duals[s] - sum(lam[b] * shapes[s][b] for b in dims if b != a) for s in items}
            cuts = sorted(
                ((rest[s] / shapes[s][a], caps[s] * shapes[s][a]) for s in items if shapes[s][a]),
                reverse=True,
            )
            lam[a], room = 0.0, float(free[a])
            for ratio, size in cuts:
                if ratio <= 0:
                    break
                room -= size
                if room < 0:
                    lam[a] = ratio
                    break
        best = min(best, value())
    return best


def _priced_greedy(
    dims: tuple[int, ...],
    free: tuple[int, ...],
    shapes: list[tuple[int, ...]],
    caps: dict[int, int],
    duals: dict[int, float],
) -> tuple[float, tuple[int, ...]] | None:
    """A pattern of high dual worth found greedily: shapes by dual worth per share of the
    node (on their largest axis, then on each axis of `dims` in turn), each as many as fit,
    the best of these fillings. Not the best pattern: _priced's knapsack decides when this
    finds none worth taking."""
    items = _worth_taking(caps, duals)
    if not items:
        return None
    scale = [max(1, free[a]) for a in range(len(free))]

    def share(s: int, axes: Sequence[int]) -> float:
        return max(shapes[s][a] / scale[a] for a in axes) or 1e-12

    best: tuple[float, tuple[int, ...]] | None = None
    for axes in [dims, *((a,) for a in dims)]:
        order = sorted(items, key=lambda s: (-duals[s] / share(s, axes), s))
        rem = list(free)
        pat = [0] * len(shapes)
        worth = 0.0
        for s in order:
            k = min(caps[s], fits_count(tuple(rem), shapes[s]))
            if k > 0:
                pat[s] = k
                worth += k * duals[s]
                rem = [f - k * x for f, x in zip(rem, shapes[s], strict=True)]
        if best is None or worth > best[0] + 1e-12:
            best = (worth, tuple(pat))
    return best


def _priced_cp(
    dims: tuple[int, ...],
    free: tuple[int, ...],
    shapes: list[tuple[int, ...]],
    caps: dict[int, int],
    duals: dict[int, float],
    upper: list[float] | None = None,
) -> tuple[float, tuple[int, ...]] | None:
    """_priced's knapsack solved by CP-SAT (one worker, fixed seed: deterministic), the
    duals scaled to integers of up to about PRICE_SCALE: a GPU node of 8 GPUs, 96 CPUs and
    1 TiB in GiB is 895,725 cells (A18), some 50 ms of table per pricing, against 6 ms here.
    The scaling errs by under one part in 10^7 of the largest dual per pod."""
    from ortools.sat.python import cp_model

    top = max(duals[s] for s in caps)
    scale = PRICE_SCALE / top
    model = cp_model.CpModel()
    x = {s: model.new_int_var(0, n, "") for s, n in caps.items()}
    for a in dims:
        model.add(sum(shapes[s][a] * x[s] for s in caps) <= free[a])
    model.maximize(sum(round(duals[s] * scale) * x[s] for s in caps))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = SEED
    solver.parameters.max_deterministic_time = LIMIT
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        if upper is not None:
            upper[:] = [math.inf]
        return None
    pat = [0] * len(shapes)
    for s in caps:
        pat[s] = int(solver.value(x[s]))
    worth = sum(duals[s] * pat[s] for s in caps)
    if upper is not None:  # the worths rounded: each off by half a unit at most
        slack = 0.5 * sum(caps.values())
        proven = status == cp_model.OPTIMAL
        upper[:] = [worth if proven else (solver.best_objective_bound + slack) / scale]
    return worth, tuple(pat)


def _maximal(
    free: tuple[int, ...],
    shapes: Sequence[tuple[int, ...]],
    ss: list[int],
    caps: dict[int, int],
    budget: list[int],
    duals: dict[int, float] | None = None,
    least: float = 0.0,
    most: int | None = None,
) -> list[tuple[int, ...]] | None:
    """The maximal patterns of a node with `free` over shapes `ss` (each at most caps[s]),
    as pods per shape (all shapes' positions); with `duals`, only those worth at least
    `least` by them (a branch is cut when even its best fractional filling by either axis
    is worth less). None past the step budget, or past `most` patterns."""
    order = sorted(ss, key=lambda s: tuple(-x for x in shapes[s]))
    out: list[tuple[int, ...]] = []
    a = [0] * len(shapes)
    # Per position in order and axis: the most dual worth per unit of the shapes from there.
    rate: list[list[float]] = []
    if duals is not None:
        for i in range(len(order)):
            rate.append(
                [
                    max(
                        (duals.get(s, 0.0) / shapes[s][x] for s in order[i:] if shapes[s][x]),
                        default=0.0,
                    )
                    if all(shapes[s][x] for s in order[i:])
                    else float("inf")
                    for x in range(len(free))
                ]
            )

    def rec(i: int, rem: tuple[int, ...], got: float) -> bool:
        budget[0] -= 1
        if budget[0] < 0:
            return False
        if duals is not None and i < len(order):
            best = min(r * f for r, f in zip(rate[i], rem, strict=True) if r != float("inf"))
            if got + best < least - 1e-9:
                return True
        if i == len(order):
            if (duals is None or got >= least - 1e-9) and all(
                a[s] >= caps[s] or not fits_count(rem, shapes[s]) for s in order
            ):
                out.append(tuple(a))
                if most is not None and len(out) > most:
                    return False
            return True
        s = order[i]
        top = min(caps[s], fits_count(rem, shapes[s]))
        worth = duals.get(s, 0.0) if duals is not None else 0.0
        for k in range(top, -1, -1):
            a[s] = k
            after = tuple(f - k * x for f, x in zip(rem, shapes[s], strict=True))
            if not rec(i + 1, after, got + k * worth):
                return False
        a[s] = 0
        return True

    return out if rec(0, free, 0.0) else None


def _solve(
    m: _Model,
    patterns: list[list[tuple[int, ...]]],
    start: Solution,
) -> Solution | None:
    """The pattern model over `patterns` solved from the complete hint `start`; None if it
    found nothing."""
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    # Upper bounds kept in Python: ortools 9.15's proto wrapper misreads domain ends (pack.py).
    z: list[list[Any]] = []
    x: list[dict[int, Any]] = []
    for c, grp in enumerate(m.cap.groups):
        z.append([model.new_int_var(0, grp.count, "") for _ in patterns[c]])
        model.add(sum(z[c]) <= grp.count)
        x.append({})
        for v in m.on[c]:
            s = m.shape_of[v]
            if any(p[s] for p in patterns[c]):
                x[c][v] = model.new_int_var(0, _slots(m, v), "")
        for s in sorted({m.shape_of[v] for v in x[c]}):
            slots = [(p[s], z[c][k]) for k, p in enumerate(patterns[c]) if p[s]]
            model.add(
                sum(x[c][v] for v in x[c] if m.shape_of[v] == s) <= sum(a * zz for a, zz in slots)
            )

    def members(v: int, slots: Any) -> Any:
        if m.unit[v] == 1:
            return slots
        n = model.new_int_var(0, m.fill.counts[v] + m.left.get(v, 0), "")
        model.add(slots == m.unit[v] * n)
        return n

    total = _limited(model.add, x, m, members)
    # Worth first; among equal worth, each class's preferred candidates (greedy.preferred).
    place = _places(m.agg, m.live)
    scale = 1 + sum(place[v] * (m.fill.counts[v] + m.left.get(v, 0)) for v in m.live)
    weight = {v: m.agg.groups[m.agg.variables[v][0]].weight for v in m.live}
    model.maximize(sum((scale * weight[v] - place[v]) * total[v] for v in m.live))
    for c in range(len(m.cap.groups)):
        for k, p in enumerate(patterns[c]):
            model.add_hint(z[c][k], start.nodes[c].get(p, 0))
        for v, var in x[c].items():
            model.add_hint(var, start.members[c].get(v, 0))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = SEED
    solver.parameters.max_deterministic_time = LIMIT
    # The LP of the pattern model is what proves and guides here (XL's hpc-r6-0/cpu-long:
    # optimal at 0.05 det s with level 2, still open at 2 det s with the default level).
    solver.parameters.linearization_level = 2
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return Solution(
        [
            {p: n for k, p in enumerate(patterns[c]) if (n := int(solver.value(z[c][k])))}
            for c in range(len(m.cap.groups))
        ],
        [
            {v: n for v, var in x[c].items() if (n := int(solver.value(var)))}
            for c in range(len(m.cap.groups))
        ],
        m.unit,
    )


@dataclass
class Solution:
    """Per node class: nodes per pattern, and slots filled per variable (its members, or
    for a whole-node member its nodes: `unit` per member, 1 where not given)."""

    nodes: list[dict[tuple[int, ...], int]]
    members: list[dict[int, int]]
    unit: dict[int, int] = field(default_factory=dict)

    def counts(self, live: list[int]) -> dict[int, int]:
        return {v: sum(m.get(v, 0) for m in self.members) // self.unit.get(v, 1) for v in live}

    def worth(self, agg: Aggregate, live: list[int]) -> int:
        c = self.counts(live)
        return sum(agg.groups[agg.variables[v][0]].weight * c[v] for v in live)


def _current(
    cap: Capacity, pack: Packing, shape_of: dict[int, int], n: int, unit: dict[int, int]
) -> Solution:
    """The current packing as a solution: its nodes' contents are patterns."""
    out = Solution([{} for _ in cap.groups], [{} for _ in cap.groups], unit)
    for b in pack.blocks:
        a = [0] * n
        for key, per in b.content:
            per = per if per > 0 else 1  # -1: the node is the member's whole node
            a[shape_of[key]] += per
            m = out.members[b.group]
            m[key] = m.get(key, 0) + per * b.count
        nodes = out.nodes[b.group]
        nodes[tuple(a)] = nodes.get(tuple(a), 0) + b.count
    return out


def _limited(
    add: Callable[[Any], Any],
    x: list[dict[int, Any]],
    m: _Model,
    members: Callable[[int, Any], Any],
) -> dict[int, Any]:
    """Each variable's members over the node classes (`members`: of its slots filled, which
    is the same but for whole-node members), bounded by what is placed and what is left,
    within its class's unplaced members and the fill's rows (quotas, spreads): the same
    rows for the LP of the column generation and for the CP-SAT model (`add`)."""
    live, agg, fill, left = m.live, m.agg, m.fill, m.left
    total = {v: members(v, sum(x[c][v] for c in range(len(x)) if v in x[c])) for v in live}
    for v in live:
        add(total[v] >= fill.counts[v])
        add(total[v] <= fill.counts[v] + left.get(v, 0))
    for g, vs in sorted(_by_class(agg, live).items()):
        if any(v in left for v in vs):
            add(sum(total[v] - fill.counts[v] for v in vs) <= fill.unplaced(g))
    for r, terms in sorted(_rows(fill, live).items()):
        if sum(coef * left.get(v, 0) for coef, v in terms) > fill.slack[r]:
            add(sum(coef * (total[v] - fill.counts[v]) for coef, v in terms) <= fill.slack[r])
    return total


def _slots(m: _Model, v: int) -> int:
    """The most slots v's members may fill: one per pod, or per whole node."""
    return int(m.unit[v] * (m.fill.counts[v] + m.left.get(v, 0)))


def _by_class(agg: Aggregate, live: list[int]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for v in live:
        out.setdefault(agg.variables[v][0], []).append(v)
    return out


def _rows(fill: Filler, live: list[int]) -> dict[int, list[tuple[int, int]]]:
    """The fill's rows that the variables touch: row -> [(coefficient, variable)]."""
    out: dict[int, list[tuple[int, int]]] = {}
    for v in live:
        for r, coef in fill.touches[v]:
            out.setdefault(r, []).append((coef, v))
    return out


def _places(agg: Aggregate, live: list[int]) -> dict[int, int]:
    """Where each variable stands among its class's variables here, best candidate first
    (rank, `prefer` place, CPU work off GPU nodes, target id: greedy.by_preference)."""
    c = agg.candidate
    by_class: dict[int, list[int]] = {}
    for v in live:
        by_class.setdefault(agg.variables[v][0], []).append(v)
    out: dict[int, int] = {}
    for vs in by_class.values():
        key = {v: (c(v).rank, c(v).pref, bool(gpu_waste(agg, v)), c(v).target.id) for v in vs}
        for k, v in enumerate(sorted(vs, key=key.__getitem__)):
            out[v] = k
    return out


def _laid_out(
    cap: Capacity,
    shapes: list[tuple[int, ...]],
    shape_of: dict[int, int],
    sol: Solution,
    whole: set[int],
) -> Packing:
    """The solution on the nodes: each class's nodes in index order take its patterns
    (largest first), then each shape's slots, node by node, take the variables' members in
    key order (a whole-node member's node holds it alone, as pack.Packing writes it: pods
    -1, nothing free). Runs of nodes that hold the same are one block."""
    p = Packing(cap)
    for c in range(len(cap.groups)):
        got = sol.members[c]
        node_pats = [p for p in sorted(sol.nodes[c], reverse=True) for _ in range(sol.nodes[c][p])]
        queues: dict[int, Iterator[int]] = {}
        for s in range(len(shapes)):
            keys = sorted(v for v in got if shape_of[v] == s)
            queues[s] = iter([v for v in keys for _ in range(got[v])])
        contents: list[tuple[tuple[int, int], ...]] = []
        for pat in node_pats:
            content: dict[int, int] = {}
            for s, slots in enumerate(pat):
                for _ in range(slots):
                    v = next(queues[s], None)
                    if v is None:
                        break
                    content[v] = -1 if s in whole else content.get(v, 0) + 1
            contents.append(tuple(sorted(content.items())))
        _blocks(p, c, contents, lambda v: shapes[shape_of[v]])
    for b in p.blocks:
        for v, per in b.content:
            p.placed[v] = p.placed.get(v, 0) + b.count * (1 if per < 0 else per)
    for v in p.placed:  # a member of several pods or whole nodes is placed once
        p.placed[v] //= sol.unit.get(v, 1)
    return p


def _blocks(
    out: Packing,
    c: int,
    contents: list[tuple[tuple[int, int], ...]],
    shape: Callable[[int], tuple[int, ...]],
) -> None:
    """Class c's nodes in index order, each holding `contents[i]` ((key, pods) pairs, -1 for
    a whole node; nodes past the list hold nothing), as blocks of `out`: runs of nodes
    that hold the same are one block, its free capacity what the pods leave."""
    grp = out.cap.groups[c]
    contents = contents + [()] * (grp.count - len(contents))
    for lo, count, held in runs(contents):
        free = list(grp.free)
        for key, per in held:
            if per < 0:
                free = [0] * len(free)
                continue
            free = [f - per * x for f, x in zip(free, shape(key), strict=True)]
        out.blocks.append(Block(c, lo, count, tuple(free), grp.empty and not held, held))
