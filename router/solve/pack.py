"""Packing placement members onto the nodes of one capacity component, exactly.

The nodes are kept as *blocks*: runs of consecutive nodes of one class that hold the same
things (a fresh class of 500 nodes is one block; placing pods splits off the nodes that
took them). First fit over blocks in node order is first fit over the nodes themselves, but
places a whole class of identical members in one step per block, so packing 10,000 members
onto 5,000 nodes costs a few thousand steps, not millions.

`pack` answers "do these members fit?" with a witness (which node takes which pod): first-fit
decreasing in a few orders (by the largest share of a node, then GPUs-, CPU- and memory-first),
then, if every order fails and the component is small enough, a CP-SAT bin packing over the
node classes: per-node counts for the classes' nodes, searched by CP-SAT's own search, and
where that decides nothing in half the limit, with identical nodes ordered by load (so the
search never tries two permutations of the same packing), depth first. Its answer is exact
(INFEASIBLE is a proof), deterministic (one worker, a fixed seed, a deterministic time
limit); when it can prove nothing within its limit the answer is `None` with `proven=False`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from router.solve.nodes import Capacity, Item

# The exact packing is tried on components of at most this many node × member-kind pairs.
EXACT_CELLS = 6000
EXACT_LIMIT = 2.0  # deterministic seconds per exact packing


@dataclass(frozen=True)
class Entry:
    """`members` members of one kind (key: an aggregate variable, say) with one Item, that may
    go on the node sets `allowed`."""

    key: int
    item: Item
    allowed: frozenset[str]
    members: int


@dataclass
class Block:
    group: int  # index into Capacity.groups
    lo: int  # offset of its first node in the group
    count: int
    free: tuple[int, ...]
    empty: bool
    content: tuple[tuple[int, int], ...] = ()  # (key, pods per node); whole: (key, -1)


@dataclass
class Packing:
    """Where every member is: a state of the component's nodes."""

    cap: Capacity
    blocks: list[Block] = field(default_factory=list)
    placed: dict[int, int] = field(default_factory=dict)  # key -> members

    @classmethod
    def fresh(cls, cap: Capacity) -> Packing:
        return cls(
            cap,
            [
                Block(g, 0, grp.count, grp.free, grp.empty)
                for g, grp in enumerate(cap.groups)
                if grp.count
            ],
        )

    def copy(self) -> Packing:
        return Packing(self.cap, list(self.blocks), dict(self.placed))

    def room(self, item: Item, allowed: frozenset[str]) -> int:
        """How many more members of `item` first fit would place (nothing is changed)."""
        groups = self.cap.groups
        if item.whole:
            free = sum(
                b.count for b in self.blocks if b.empty and groups[b.group].node_set in allowed
            )
            return free // item.whole
        pods = 0
        for b in self.blocks:
            if groups[b.group].node_set in allowed:
                pods += b.count * fits_count(b.free, item.demand)
        return pods // item.pods if item.pods else 0

    def place(self, key: int, item: Item, allowed: frozenset[str], members: int) -> int:
        """Place up to `members` members first fit (whole members only); returns how many."""
        groups = self.cap.groups
        if item.whole:
            n = min(members, self.room(item, allowed))
            pers: list[int] = []
        else:  # room() as it is counted, each block's pods kept for the loop below
            pers = [
                fits_count(b.free, item.demand) if groups[b.group].node_set in allowed else 0
                for b in self.blocks
            ]
            pods = sum(b.count * per for b, per in zip(self.blocks, pers, strict=True))
            n = min(members, pods // item.pods if item.pods else 0)
        if n <= 0:
            return 0
        left = n * (item.whole or item.pods)
        out: list[Block] = []
        for i, b in enumerate(self.blocks):
            if not left or groups[b.group].node_set not in allowed:
                out.append(b)
                continue
            if item.whole:
                if not b.empty:
                    out.append(b)
                    continue
                take = min(left, b.count)
                zero = tuple(0 for _ in b.free)
                out.append(Block(b.group, b.lo, take, zero, False, ((key, -1),)))
                if take < b.count:
                    out.append(Block(b.group, b.lo + take, b.count - take, b.free, True))
                left -= take
                continue
            per = pers[i]
            if not per:
                out.append(b)
                continue
            full_nodes = min(b.count, left // per)
            if full_nodes:
                out.append(_with(b, b.lo, full_nodes, key, per, item.demand))
                left -= full_nodes * per
            rest_lo, rest = b.lo + full_nodes, b.count - full_nodes
            if rest and left:  # one node takes what is left (fewer than `per`)
                out.append(_with(b, rest_lo, 1, key, left, item.demand))
                left = 0
                rest_lo, rest = rest_lo + 1, rest - 1
            if rest:
                out.append(Block(b.group, rest_lo, rest, b.free, b.empty, b.content))
        assert left == 0, "room() counted nodes that place() did not find"
        self.blocks = out
        self.placed[key] = self.placed.get(key, 0) + n
        return n

    def place_best(
        self, key: int, item: Item, allowed: frozenset[str], members: int, axis: int
    ) -> bool:
        """All `members` members best fit on `axis`: each pod on the node with the least of
        `axis` free that holds it (then the least of the others, then node order), or
        nothing placed and False. A node chosen keeps the least free while it holds one
        more, so it takes as many as fit at once; whole members go first fit (any idle node
        is as good as another)."""
        if item.whole:
            return self.place(key, item, allowed, members) == members
        groups = self.cap.groups
        pers = [
            fits_count(b.free, item.demand) if groups[b.group].node_set in allowed else 0
            for b in self.blocks
        ]
        left = members * item.pods
        if not item.pods or sum(b.count * p for b, p in zip(self.blocks, pers, strict=True)) < left:
            return False
        while left:
            i = min(
                (j for j, p in enumerate(pers) if p),
                key=lambda j: (self.blocks[j].free[axis], self.blocks[j].free, j),
            )
            b, per = self.blocks[i], pers[i]
            full = min(b.count, left // per)
            if full:
                parts = [_with(b, b.lo, full, key, per, item.demand)]
                left -= full * per
            else:  # one node takes what is left (fewer than `per`)
                parts = [_with(b, b.lo, 1, key, left, item.demand)]
                full, left = 1, 0
            if full < b.count:
                parts.append(
                    Block(b.group, b.lo + full, b.count - full, b.free, b.empty, b.content)
                )
            self.blocks[i : i + 1] = parts
            pers[i : i + 1] = [
                fits_count(p.free, item.demand) if k == 0 else per for k, p in enumerate(parts)
            ]
        self.placed[key] = self.placed.get(key, 0) + members
        return True

    def remove(self, key: int, item: Item, members: int) -> int:
        """Take up to `members` members of `key` off, from its last nodes; returns how many.
        What they held is free again (an idle node that a whole member had is idle again)."""
        n = min(members, self.placed.get(key, 0))
        if n <= 0:
            return 0
        left = n * (item.whole or item.pods)
        groups = self.cap.groups
        out: list[Block] = []  # in reverse node order, turned round at the end
        for b in reversed(self.blocks):
            per = sum(p for k, p in b.content if k == key)
            if not left or not per:
                out.append(b)
                continue
            grp = groups[b.group]
            if per < 0:  # each node of the block is one of the member's whole nodes
                take = min(left, b.count)
                if take < b.count:
                    out.append(Block(b.group, b.lo + b.count - take, take, grp.free, grp.empty))
                    out.append(Block(b.group, b.lo, b.count - take, b.free, b.empty, b.content))
                else:
                    out.append(Block(b.group, b.lo, take, grp.free, grp.empty))
                left -= take
                continue
            emptied = min(b.count, left // per)  # nodes that lose all `per` pods
            left -= emptied * per
            part = 1 if left and emptied < b.count else 0  # one node loses fewer
            same = b.count - emptied - part
            if emptied:
                out.append(_without(b, grp.empty, b.lo + same + part, emptied, key, per, item))
            if part:
                out.append(_without(b, grp.empty, b.lo + same, 1, key, left, item))
                left = 0
            if same:
                out.append(Block(b.group, b.lo, same, b.free, b.empty, b.content))
        assert left == 0, "placed counted members that no block holds"
        out.reverse()
        self.blocks = out
        self.placed[key] -= n
        return n

    def nodes_of(self, key: int) -> list[tuple[str, int]]:
        """(node set, node index) per pod (or per whole node) of `key`, in node order."""
        groups = self.cap.groups
        out: list[tuple[str, int]] = []
        for b in self.blocks:
            for k, per in b.content:
                if k != key:
                    continue
                g = groups[b.group]
                for j in range(b.lo, b.lo + b.count):
                    out.extend([(g.node_set, g.indices[j])] * (1 if per < 0 else per))
        return out


def runs(
    contents: Sequence[tuple[tuple[int, int], ...]],
) -> list[tuple[int, int, tuple[tuple[int, int], ...]]]:
    """(first node, count, what each holds) of each run of alike nodes in `contents` (what
    every node of a class holds, node by node): the Blocks a layout is written as."""
    out: list[tuple[int, int, tuple[tuple[int, int], ...]]] = []
    lo = 0
    while lo < len(contents):
        hi = lo
        while hi + 1 < len(contents) and contents[hi + 1] == contents[lo]:
            hi += 1
        out.append((lo, hi - lo + 1, contents[lo]))
        lo = hi + 1
    return out


def valid_layout(agg: Any, cap: Capacity, packing: Packing, counts: dict[int, int]) -> bool:
    """Node by node, afresh: no node over any axis, whole members alone on idle nodes, every
    pod and whole node on its node sets, every member placed whole (`counts`: members per
    aggregate variable; `agg` a router.solve.aggregate.Aggregate, imports flowing one way)."""
    pods: dict[int, int] = {}
    covered = [0] * len(cap.groups)
    for b in packing.blocks:
        grp = cap.groups[b.group]
        covered[b.group] += b.count
        used = [0] * len(cap.axes)
        for v, per in b.content:
            if grp.node_set not in agg.allowed[v]:
                return False
            if per < 0:
                if len(b.content) != 1 or not grp.empty or not agg.items[v].whole:
                    return False
                pods[v] = pods.get(v, 0) + b.count
                continue
            if agg.items[v].whole or per == 0:
                return False
            used = [x + per * d for x, d in zip(used, agg.items[v].demand, strict=True)]
            pods[v] = pods.get(v, 0) + per * b.count
        if any(x > f for x, f in zip(used, grp.free, strict=True)):
            return False
    if covered != [g.count for g in cap.groups]:
        return False
    want = {v: n * (agg.items[v].whole or agg.items[v].pods) for v, n in counts.items() if n}
    return pods == want and packing.placed == {v: n for v, n in counts.items() if n}


def fits_count(free: tuple[int, ...], demand: tuple[int, ...]) -> int:
    """How many pods of `demand` fit in `free` (a large number for an all-zero demand)."""
    n = 1 << 30
    for f, d in zip(free, demand, strict=True):
        if d and f // d < n:  # not min(): this runs ~200k times a plan at bench L
            n = f // d
    return n


def _with(b: Block, lo: int, count: int, key: int, pods: int, demand: tuple[int, ...]) -> Block:
    free = tuple(f - pods * d for f, d in zip(b.free, demand, strict=True))
    return Block(b.group, lo, count, free, False, (*b.content, (key, pods)))


def _without(b: Block, idle: bool, lo: int, count: int, key: int, pods: int, item: Item) -> Block:
    """Nodes [lo, lo + count) of block b, each with `pods` pods of `key` taken off; `idle`:
    their class runs nothing, so a node left with no content is empty again."""
    free = tuple(f + pods * d for f, d in zip(b.free, item.demand, strict=True))
    kept = sum(p for k, p in b.content if k == key) - pods
    content: list[tuple[int, int]] = []
    for k, p in b.content:
        if k != key:
            content.append((k, p))
        elif kept:
            content.append((k, kept))
            kept = 0
    return Block(b.group, lo, count, free, idle and not content, tuple(content))


def _orders(cap: Capacity) -> list[Callable[[Entry], tuple[float, ...]]]:
    scale = [max((g.free[a] for g in cap.groups), default=0) or 1 for a in range(len(cap.axes))]

    def share(e: Entry) -> tuple[float, ...]:
        d = e.item.demand
        return (
            -e.item.whole,
            -max(x / s for x, s in zip(d, scale, strict=True)),
            -sum(x / s for x, s in zip(d, scale, strict=True)),
            e.key,
        )

    def axis_first(a: int) -> Callable[[Entry], tuple[float, ...]]:
        def key(e: Entry) -> tuple[float, ...]:
            return (-e.item.whole, -e.item.demand[a] / scale[a], *share(e)[1:])

        return key

    return [share, *(axis_first(a) for a in range(min(3, len(cap.axes))))]


def first_fit(cap: Capacity, entries: list[Entry]) -> Packing | None:
    """First-fit decreasing in each order in turn; the first packing of every member."""
    return _first_packing(cap, entries, _orders(cap))


def plain_first_fit(cap: Capacity, entries: list[Entry]) -> Packing | None:
    """First-fit decreasing in the plainest orders: whole nodes first, then the most CPUs
    (then memory, then GPUs), or the most memory first; the first packing of every member.
    What any packing check tries first, so counts that pack this way are verified at once."""
    orders: list[Callable[[Entry], tuple[int, ...]]] = [
        lambda e: (-e.item.whole, -e.item.demand[1], -e.item.demand[2], -e.item.demand[0], e.key),
        lambda e: (-e.item.whole, -e.item.demand[2], -e.item.demand[1], -e.item.demand[0], e.key),
    ]
    return _first_packing(cap, entries, orders)


def best_fit(cap: Capacity, entries: list[Entry], scarcest: bool = False) -> Packing | None:
    """Best-fit decreasing on each axis that the members ask for (CPUs, memory, then GPUs),
    or with `scarcest` on the one they ask most of as a share of what the nodes have free:
    the largest on it first, each on the node with the least of it free that holds it
    (Packing.place_best); the first packing of every member, else None. Where first fit
    strands a few CPUs on every node, best fit keeps the roomy nodes for the large: the
    audit's slurmx-m2, 35 CPU nodes with 11 of 1,789 CPUs to spare, packs one more 17-CPU
    job so, where first fit over the node classes and the exact searches in their limits
    find nothing."""
    asked = [a for a in (1, 2, 0) if a < len(cap.axes) and any(e.item.demand[a] for e in entries)]
    if scarcest and asked:  # only the axis the members ask the most of, as a share of it
        free = [max(1, sum(g.count * g.free[a] for g in cap.groups)) for a in range(len(cap.axes))]
        used = [
            sum(
                e.members * (e.item.pods * e.item.demand[a] + e.item.whole * cap.full[a])
                for e in entries
            )
            for a in range(len(cap.axes))
        ]
        asked = [max(asked, key=lambda a: used[a] / free[a])]
    for axis in asked:
        rest = [a for a in (1, 2, 0) if a != axis and a < len(cap.axes)]
        p = Packing.fresh(cap)
        order = sorted(
            entries,
            key=lambda e: (
                -e.item.whole,
                -e.item.demand[axis],
                *(-e.item.demand[a] for a in rest),
                e.key,
            ),
        )
        if all(p.place_best(e.key, e.item, e.allowed, e.members, axis) for e in order):
            return p
    return None


def _first_packing(
    cap: Capacity, entries: list[Entry], orders: Sequence[Callable[[Entry], tuple[float, ...]]]
) -> Packing | None:
    """First fit of the entries sorted by each order in turn: the first packing that places
    every member, or None."""
    for order in orders:
        p = Packing.fresh(cap)
        if all(
            p.place(e.key, e.item, e.allowed, e.members) == e.members
            for e in sorted(entries, key=order)
        ):
            return p
    return None


@dataclass
class Answer:
    packing: Packing | None
    proven: bool  # packing None: True if no packing exists, False if none was found in time
    spent: float = 0.0  # deterministic seconds of the exact search that gave it


def pack(
    cap: Capacity, entries: list[Entry], exact: bool = True, limit: float = EXACT_LIMIT
) -> Answer:
    """A packing of every member of `entries` onto `cap`'s nodes, the exact search within
    `limit` deterministic seconds; see the module docstring."""
    entries = [e for e in entries if e.members]
    if not entries:
        return Answer(Packing.fresh(cap), True)
    if not aggregate_fits(cap, entries):
        return Answer(None, True)
    found = first_fit(cap, entries)
    if found is not None:
        return Answer(found, True)
    if not exact:
        return Answer(None, False)
    # CP-SAT's own search first: it proves most counts impossible, and finds most tight
    # packings, far sooner (the audit's slow-awkward-20: 37 -> 14 CPU s); the depth-first
    # first-fit order where it could decide nothing (tests/pack/test_found.py's seed 106).
    first = exact_packing(cap, entries, limit / 2, ordered=False)
    if first.packing is None and not first.proven:
        again = exact_packing(cap, entries, limit / 2)
        again.spent += first.spent
        return again
    return first


def aggregate_fits(cap: Capacity, entries: list[Entry]) -> bool:
    """Quick necessary conditions: each axis in total, and whole nodes on empty nodes."""
    whole = sum(e.members * e.item.whole for e in entries)
    if whole > sum(g.count for g in cap.groups if g.empty):
        return False
    for a in range(len(cap.axes)):
        need = sum(e.members * e.item.usage(cap.full)[a] for e in entries)
        if need > sum(g.count * g.free[a] for g in cap.groups):
            return False
    return True


@dataclass
class NodeModel:
    """CP-SAT's per-node counts of a component (node_model): x[kind, node] within each node's
    free amounts, a node of a whole member holding nothing else; the caller adds how many
    of each kind there are."""

    model: Any
    x: dict[tuple[int, int], Any]
    top: dict[tuple[int, int], int]  # each x's upper bound
    kinds: dict[tuple[object, ...], list[Entry]]  # (item, allowed) -> its entries
    keys: list[tuple[object, ...]]  # the kinds in order (index k of x)
    nodes: list[tuple[int, int]]  # (group, offset) per node index n of x


def node_model(
    cap: Capacity, entries: list[Entry], every_node: bool = False, cells: int = EXACT_CELLS
) -> NodeModel | None:
    """The per-node model of `entries` on `cap` (NodeModel), or None past `cells` node ×
    kind pairs. Only as many nodes of a class as the members could use at all, unless
    `every_node`."""
    from ortools.sat.python import cp_model

    kinds: dict[tuple[object, ...], list[Entry]] = {}
    for e in entries:
        kinds.setdefault((e.item, e.allowed), []).append(e)
    keys = sorted(kinds, key=lambda k: min(e.key for e in kinds[k]))
    pods_total = sum(e.members * (e.item.whole or e.item.pods) for e in entries)
    nodes: list[tuple[int, int]] = []  # (group, offset)
    for g, grp in enumerate(cap.groups):
        nodes.extend((g, j) for j in range(grp.count if every_node else min(grp.count, pods_total)))
    if len(nodes) * len(keys) > cells:
        return None
    model = cp_model.CpModel()
    x: dict[tuple[int, int], cp_model.IntVar] = {}
    # Upper bounds kept here: ortools 9.15's proto wrapper reads domain[-1] as 0, which
    # dropped node capacity rows and proved packable counts "infeasible".
    top: dict[tuple[int, int], int] = {}
    for n, (g, _) in enumerate(nodes):
        grp = cap.groups[g]
        load = [[] for _ in cap.axes]  # type: list[list[tuple[int, int, cp_model.IntVar]]]
        wholes = []
        pods = []
        for k, key in enumerate(keys):
            item, allowed = key
            assert isinstance(item, Item) and isinstance(allowed, frozenset)
            total = sum(e.members for e in kinds[key])
            if grp.node_set not in allowed:
                continue
            if item.whole:
                if grp.empty:
                    x[k, n] = v = model.new_bool_var("")
                    top[k, n] = 1
                    wholes.append(v)
                continue
            most = min(total * item.pods, fits_count(grp.free, item.demand))
            if most <= 0:
                continue
            x[k, n] = v = model.new_int_var(0, most, "")
            top[k, n] = most
            pods.append(v)
            for a, d in enumerate(item.demand):
                if d:
                    load[a].append((d, most, v))
        for a, terms in enumerate(load):
            if terms and sum(d * m for d, m, _ in terms) > grp.free[a]:
                model.add(sum(d * v for d, _, v in terms) <= grp.free[a])
        if wholes:
            taken = model.new_bool_var("")
            model.add(sum(wholes) == taken)
            for v in pods:
                model.add(v == 0).only_enforce_if(taken)
    return NodeModel(model, x, top, kinds, keys, nodes)


def exact_packing(
    cap: Capacity,
    entries: list[Entry],
    limit: float = EXACT_LIMIT,
    ordered: bool = True,
    linearization: int = 1,
    seed: int = 0,
    cells: int = EXACT_CELLS,
) -> Answer:
    """CP-SAT bin packing over the component's node classes (see the module docstring).
    `ordered`: identical nodes in decreasing order of a load, searched depth first in
    first-fit-decreasing order; else CP-SAT's own (LP-based) search with neither, which
    finds the last step's tight re-packings (greedy._topped) where that one does not: bench
    L seed 0's CPU partitions of 9-25 nodes, memory or CPUs full to within one job, none
    found in 0.1 deterministic s, most at once so. `linearization` (CP-SAT's LP
    linearization level; 2 puts every capacity row in its LP) and `seed` (CP-SAT's random
    seed): the last step's deep tries (greedy._deepened), short searches restarted with
    other seeds. `cells`: node × kind pairs at most (node_model)."""
    from ortools.sat.python import cp_model

    built = node_model(cap, entries, cells=cells)
    if built is None:
        return Answer(None, False)
    model, x, top = built.model, built.x, built.top
    kinds, keys, nodes = built.kinds, built.keys, built.nodes
    for k, key in enumerate(keys):
        item = key[0]
        assert isinstance(item, Item)
        total = sum(e.members for e in kinds[key])
        ks = [(k, n) for n in range(len(nodes)) if (k, n) in x]
        need = total * (item.whole or item.pods)
        if sum(top[c] for c in ks) < need:
            return Answer(None, True)
        model.add(sum(x[c] for c in ks) == need)
    # Identical nodes of a class in decreasing order of a load: no two permutations of one
    # packing are both searched.
    weights = [1 + k for k in range(len(keys))]
    for n in range(len(nodes) - 1 if ordered else 0):
        if nodes[n][0] != nodes[n + 1][0]:
            continue
        this = [(weights[k], x[k, n]) for k in range(len(keys)) if (k, n) in x]
        then = [(weights[k], x[k, n + 1]) for k in range(len(keys)) if (k, n + 1) in x]
        model.add(sum(w * v for w, v in this) >= sum(w * v for w, v in then))
    # Largest kinds first, each onto the first node that takes it, as many as fit: a
    # depth-first search in first-fit-decreasing order, which finds tight packings that
    # the default search did not (4 nodes, 22 CPU jobs filling 1016 of 1024 GiB: none in
    # 5 s, found at once so).
    scale = [f or 1 for f in cap.full]

    def share(k: int) -> tuple[float, int]:
        item = keys[k][0]
        assert isinstance(item, Item)
        return -max(d / c for d, c in zip(item.usage(cap.full), scale, strict=True)), k

    order = [
        x[k, n]
        for k in sorted(range(len(keys)), key=share)
        for n in range(len(nodes))
        if (k, n) in x
    ]
    if ordered:
        model.add_decision_strategy(order, cp_model.CHOOSE_FIRST, cp_model.SELECT_MAX_VALUE)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    solver.parameters.max_deterministic_time = limit
    solver.parameters.linearization_level = linearization
    if ordered:
        solver.parameters.search_branching = cp_model.FIXED_SEARCH
    status = solver.solve(model)
    spent = solver.deterministic_time
    if status == cp_model.INFEASIBLE:
        return Answer(None, True, spent)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Answer(None, False, spent)
    values = {c: int(solver.value(v)) for c, v in x.items()}
    return Answer(witness(cap, entries, built, values), True, spent)


def witness(
    cap: Capacity, entries: list[Entry], built: NodeModel, values: Mapping[tuple[int, int], int]
) -> Packing:
    """A solution's per-node counts of `built` (values of its x) as a Packing, members of a
    kind given out in key order."""
    kinds, keys, nodes = built.kinds, built.keys, built.nodes
    p = Packing.fresh(cap)
    per_node: list[list[tuple[int, int]]] = [[] for _ in nodes]
    for k, key in enumerate(keys):
        item = key[0]
        assert isinstance(item, Item)
        queue = []  # (entry key, pods or whole nodes still to put) in key order
        for e in sorted(kinds[key], key=lambda e: e.key):
            queue.append([e.key, e.members * (item.whole or item.pods)])
            p.placed[e.key] = p.placed.get(e.key, 0) + e.members
        for n in range(len(nodes)):
            got = values.get((k, n), 0)
            while got:
                take = min(got, queue[0][1]) if not item.whole else 1
                per_node[n].append((queue[0][0], -1 if item.whole else take))
                queue[0][1] -= take
                got -= take
                if not queue[0][1]:
                    queue.pop(0)
    # Blocks: one per node used, the rest of each class as it was.
    blocks: list[Block] = []
    for g, grp in enumerate(cap.groups):
        used = [n for n in range(len(nodes)) if nodes[n][0] == g]
        for n in used:
            content = tuple(per_node[n])
            free = list(grp.free)
            whole = any(per < 0 for _, per in content)
            if whole:
                free = [0] * len(free)
            for owner, per in content:
                if per > 0:
                    item = next(e.item for e in entries if e.key == owner)
                    free = [f - per * d for f, d in zip(free, item.demand, strict=True)]
            blocks.append(Block(g, nodes[n][1], 1, tuple(free), grp.empty and not content, content))
        lo = len(used)
        if lo < grp.count:
            blocks.append(Block(g, lo, grp.count - lo, grp.free, grp.empty))
    p.blocks = blocks
    return p


# Vector-aware re-packing of a whole component (the last fill's, greedy.py): at most this
# many node × pod steps per packing, so that it stays a few milliseconds.
BALANCED_STEPS = 80_000


def balanced(
    cap: Capacity,
    must: list[Entry],
    extra: list[tuple[int, Item, frozenset[str]]],
    allow: Callable[[int], bool],
    took: Callable[[int], None],
    aligned: bool,
) -> tuple[Packing, list[int]] | None:
    """All of `must` and as many `extra` members (key, item, allowed; in the order given)
    as fit, packed node by node: each pod (largest share first) on the node that fits it
    best, by the dot product of its demand with the node's free amounts (`aligned`: a
    CPU-heavy pod goes where CPUs are free and memory is not) or by the smallest free
    amounts left (sum of squares: best fit that keeps nodes balanced), both over shares of
    a node. First fit by one axis strands the other: nodes with CPUs but no memory free
    beside nodes with memory but no CPUs. `allow(key)`: whether one more member of key may
    go (quotas and spreads), asked before each extra member is tried; `took(key)`: it went.
    Returns the packing and the keys of the extra members placed, or None if `must` does
    not fit (or the component is too large to pack so)."""
    nodes = [(g, j) for g, grp in enumerate(cap.groups) for j in range(grp.count)]
    pods_total = sum(e.members * max(1, e.item.whole or e.item.pods) for e in must)
    pods_total += sum(max(1, item.whole or item.pods) for _, item, _ in extra)
    if not nodes or len(nodes) * pods_total > BALANCED_STEPS:
        return None
    scale = [f or 1 for f in cap.full]
    free = [list(cap.groups[g].free) for g, _ in nodes]
    empty = [cap.groups[g].empty for g, _ in nodes]
    taken = [False] * len(nodes)  # by a whole member
    content: list[dict[int, int]] = [{} for _ in nodes]
    sets = [cap.groups[g].node_set for g, _ in nodes]

    square = [c * c for c in scale]
    dims = range(len(scale))
    on: dict[frozenset[str], list[int]] = {}  # allowed node sets -> the nodes in them

    def best(d: tuple[int, ...], allowed: frozenset[str]) -> int:
        # The scores summed axis by axis in order, as sum() did: the same floats, the same pick.
        where = on.get(allowed)
        if where is None:
            where = on[allowed] = [n for n in range(len(nodes)) if sets[n] in allowed]
        pick, score = -1, 0.0
        for n in where:
            if taken[n]:
                continue
            f = free[n]
            s: float = 0
            if aligned:
                for a in dims:
                    x, y = d[a], f[a]
                    if x > y:
                        break
                    s += x * y / square[a]
                else:
                    if pick < 0 or s > score:
                        pick, score = n, s
            else:
                for a in dims:
                    x, y = d[a], f[a]
                    if x > y:
                        break
                    s += ((y - x) / scale[a]) ** 2
                else:
                    s = -s
                    if pick < 0 or s > score:
                        pick, score = n, s
        return pick

    def put(key: int, item: Item, allowed: frozenset[str]) -> list[int] | None:
        """One member on nodes; the nodes used (undone by the caller), or None."""
        used: list[int] = []
        if item.whole:
            for n in range(len(nodes)):
                if len(used) == item.whole:
                    break
                if empty[n] and not content[n] and not taken[n] and sets[n] in allowed:
                    used.append(n)
            if len(used) < item.whole:
                return None
            for n in used:
                taken[n] = True
                content[n][key] = -1
            return used
        for _ in range(item.pods):
            n = best(item.demand, allowed)
            if n < 0:
                undo(key, item, used)
                return None
            free[n] = [f - x for f, x in zip(free[n], item.demand, strict=True)]
            content[n][key] = content[n].get(key, 0) + 1
            used.append(n)
        return used

    def undo(key: int, item: Item, used: list[int]) -> None:
        for n in used:
            if item.whole:
                taken[n] = False
                del content[n][key]
                continue
            free[n] = [f + x for f, x in zip(free[n], item.demand, strict=True)]
            content[n][key] -= 1
            if not content[n][key]:
                del content[n][key]

    def size(item: Item) -> tuple[float, ...]:
        shares = [x / c for x, c in zip(item.demand, scale, strict=True)]
        return (-item.whole, -max(shares, default=0.0), -sum(shares))

    for e in sorted(must, key=lambda e: (*size(e.item), e.key)):
        for _ in range(e.members):
            if put(e.key, e.item, e.allowed) is None:
                return None
    placed: list[int] = []
    for key, item, allowed in extra:
        if allow(key) and put(key, item, allowed) is not None:
            placed.append(key)
            took(key)
    p = Packing.fresh(cap)
    p.placed = {e.key: e.members for e in must if e.members}
    for key in placed:
        p.placed[key] = p.placed.get(key, 0) + 1
    blocks: list[Block] = []
    for n, (g, j) in enumerate(nodes):
        c = tuple(sorted(content[n].items()))
        f = (0,) * len(free[n]) if taken[n] else tuple(free[n])
        blocks.append(Block(g, j, 1, f, empty[n] and not c, c))
    p.blocks = blocks
    return p, placed
