"""One more member by re-packing a few nodes: the last step's search on large components.

Where insertion with ejection (eject.py) finds no room for a member and the component is too
large for an exact packing of all of it (greedy.TOPPED_NODES), a packing with the member added
often differs from the plan's on a few nodes only: the member and the pods on 2, 3, 4 ... of
the nodes with most room for it, packed exactly onto those nodes alone, everything else
staying where it is (a large neighbourhood of the plan's packing). Bench XL seed 0's
hpc-r9-4/cpu (43 nodes of 128 CPUs and 512 GiB, memory full to within a few GiB on every
node, 10 shapes of batch jobs) takes 3 more that way, which neither the node patterns
(configs.py: their LP is degenerate there, too many patterns of reduced cost 0) nor ejection
found. The nodes are chosen two ways: the roomiest over every axis the member asks (each axis
as a share of the component's free amount), and turn by turn the roomiest on each axis (room
for CPUs on one node and memory on another is room for both once pods trade places). Nodes
the member may not go on come last (pods moved off its nodes may go there). Each region is
packed by first fit, else by CP-SAT's own search over per-node counts within REGION_LIMIT
deterministic s; every pod moves only between nodes of its own node sets, whole-node members
and nodes they hold never. A whole-node member (an exclusive job) is added the same way: a
few idle-capable nodes, their pods packed onto the others of the region (the audit's
cpucomp small seed 0: 36 nodes, shared jobs on every one, two exclusive 1-CPU jobs left
out). Regions whose exact packing decided nothing are recorded and may be tried again,
longer (retried, RETRY_LIMIT), within the caller's budget. Deterministic: node order and
fixed limits, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from router.solve.eject import Nodes
from router.solve.nodes import Capacity, Item, NodeGroup
from router.solve.pack import Entry, aggregate_fits, exact_packing, first_fit

SIZES = (2, 3, 4, 6, 8, 12)  # nodes re-packed together, tried in turn
REGION_LIMIT = 0.02  # deterministic s per region's exact packing
# Regions whose exact packing decided nothing in REGION_LIMIT are recorded (Retry) and tried
# again, longer, within a budget the caller gives (retried; greedy._retried, after the last
# step's passes and the pattern step). The audit's manyparts medium seed 0: a 1-CPU, 346-GiB
# job fits a 12-node region of 33 kinds at 0.27 deterministic s, none at 0.02 or 0.1.
RETRY_LIMIT = 0.4


@dataclass
class Retry:
    """The regions' second tries: deterministic s left for them, and per member key the
    regions of its last regional() that decided nothing in REGION_LIMIT."""

    budget: float = 0.0
    regions: dict[int, list[tuple[int, ...]]] = field(default_factory=dict)


def regional(
    state: Nodes,
    key: int,
    exact: bool = True,
    searched: bool = False,
    retry: Retry | None = None,
) -> bool:
    """One more member of `key` on `state` by re-packing a few of its nodes (module
    docstring); False leaves `state` as it was. `exact=False`: each region by first fit
    only (a fraction of the cost; most regions that pack, first fit packs). `searched`: an
    exact search of all the nodes comes next, so no region is more than half of them (bench
    L seed 0: on a 15-node partition the regions of 8 and 12 took 0.3 of the 0.44 s of a
    failing try, and every region that packed there had at most 6 nodes). `retry`: where
    the regions that decided nothing are recorded (a second try is retried()'s)."""
    item = state.items[key]
    allowed = state.allowed[key]
    groups = state.cap.groups
    nodes = [n for n in range(len(state.free)) if not state.whole[n]]
    # A whole-node member needs nodes where nothing runs (their pods may move off).
    reach = [
        n
        for n in nodes
        if state.sets[n] in allowed and (not item.whole or groups[state.group[n]].empty)
    ]
    mine = set(reach)
    others = [n for n in nodes if n not in mine]
    asked = [a for a, x in enumerate(item.demand if not item.whole else state.cap.full) if x]
    total = [max(1, sum(state.free[n][a] for n in nodes)) for a in range(len(item.demand))]

    def room(n: int) -> tuple[float, int]:
        return (-sum(state.free[n][a] / total[a] for a in asked), n)

    def most(a: int) -> list[int]:
        return sorted(reach, key=lambda n: (-state.free[n][a], n))

    by_axis = [most(a) for a in asked]
    turns = list(dict.fromkeys(n for row in zip(*by_axis, strict=True) for n in row))
    rankings = (sorted(reach, key=room), turns)
    others.sort(key=room)
    need = [item.pods * x for x in item.demand]
    tried: set[tuple[int, ...]] = set()
    undecided: list[tuple[int, ...]] = []
    for size in SIZES:
        if size >= len(nodes) or (searched and 2 * size > len(nodes)):
            break  # the whole component: the exact try's (or nobody's) business
        if size <= item.whole:
            continue  # its nodes and at least one to take the pods there
        for ranked in rankings:
            chosen = tuple(sorted(ranked[:size] + others[: max(0, size - len(ranked))]))
            if chosen in tried:
                continue
            tried.add(chosen)
            free = [sum(state.free[n][a] for n in chosen) for a in range(len(need))]
            if any(f < x for f, x in zip(free, need, strict=True)):
                continue  # not even in total
            got = _repacked(state, key, chosen, exact)
            if got:
                return True
            if got is None:
                undecided.append(chosen)
    if retry is not None:
        if undecided:
            retry.regions[key] = undecided
        else:
            retry.regions.pop(key, None)
    return False


def retried(state: Nodes, key: int, regions: list[tuple[int, ...]], budget: Retry) -> bool:
    """One more member of `key` on `state` by the exact packing of one of `regions` again,
    for up to RETRY_LIMIT deterministic s each within `budget` (spent here); False leaves
    `state` as it was."""
    for chosen in regions:
        if budget.budget <= 0:
            break
        if any(state.whole[n] for n in chosen):
            continue  # a whole-node member took one of its nodes since: not a region now
        spent = [0.0]
        got = _repacked(state, key, chosen, True, min(RETRY_LIMIT, budget.budget), spent)
        budget.budget -= spent[0]
        if got:
            return True
    return False


def _repacked(
    state: Nodes,
    key: int,
    chosen: tuple[int, ...],
    exact: bool = True,
    limit: float = REGION_LIMIT,
    spent: list[float] | None = None,
) -> bool | None:
    """The pods on `chosen` and one more member of `key`, packed onto `chosen` alone; True
    (and `state` changed) if they fit, None if the exact packing decided nothing within
    `limit` deterministic s (added to `spent`)."""
    cap = state.cap
    # The chosen nodes as classes of their own capacity (their class's free amounts).
    by_class: dict[tuple[str, tuple[int, ...]], list[int]] = {}
    for n in chosen:
        grp = cap.groups[state.group[n]]
        by_class.setdefault((grp.node_set, grp.free), []).append(n)
    classes = sorted(by_class)
    empty = {(g.node_set, g.free): g.empty for g in cap.groups}
    sub = Capacity(
        cap.id,
        cap.axes,
        cap.full,
        [
            NodeGroup(s, len(by_class[s, f]), f, empty[s, f], tuple(range(len(by_class[s, f]))))
            for s, f in classes
        ],
        dict(cap.sets_of),
    )
    item = state.items[key]
    pods: dict[int, int] = {} if item.whole else {key: item.pods}
    for n in chosen:
        for q, per in state.content[n].items():
            pods[q] = pods.get(q, 0) + per
    entries = [
        Entry(q, Item(0, 1, state.items[q].demand), state.allowed[q], k)
        for q, k in sorted(pods.items())
    ]
    if item.whole:
        entries.append(Entry(key, item, state.allowed[key], 1))
    if not aggregate_fits(sub, entries) or not _few_large(sub, entries):
        return False
    found = first_fit(sub, entries)
    if found is None and exact:
        answer = exact_packing(sub, entries, limit, ordered=False)
        if spent is not None:
            spent[0] += answer.spent
        if answer.packing is None and not answer.proven:
            return None
        found = answer.packing
    if found is None:
        return False
    content: list[dict[int, int]] = [{} for _ in chosen]
    at = {n: k for k, n in enumerate(chosen)}
    for b in found.blocks:
        members = by_class[classes[b.group]]
        for j in range(b.lo, b.lo + b.count):
            content[at[members[j]]] = dict(b.content)
    # Checked node by node before it is kept (the region's packing is the witness).
    frees: list[list[int]] = []
    for n, held in zip(chosen, content, strict=True):
        grp = cap.groups[state.group[n]]
        if any(per < 0 for per in held.values()):  # the whole member: alone, on an idle node
            if held != {key: -1} or not item.whole or not grp.empty:
                return False
            if state.sets[n] not in state.allowed[key]:
                return False
            frees.append([0] * len(grp.free))
            continue
        left = list(grp.free)
        for q, per in held.items():
            if per <= 0 or state.sets[n] not in state.allowed[q]:
                return False
            left = [f - per * x for f, x in zip(left, state.items[q].demand, strict=True)]
        if any(f < 0 for f in left):
            return False
        frees.append(left)
    moved = {q: sum(held.get(q, 0) for held in content if q in held and held[q] > 0) for q in pods}
    wholes = sum(1 for held in content if held.get(key) == -1)
    if moved != pods or wholes != item.whole:
        return False
    for n, held, left in zip(chosen, content, frees, strict=True):
        state.free[n] = left
        state.content[n] = held
        state.whole[n] = any(per < 0 for per in held.values())
    state.placed[key] = state.placed.get(key, 0) + 1
    return True


def _few_large(sub: Capacity, entries: list[Entry]) -> bool:
    """A necessary condition that the exact search would otherwise prove at some cost
    (bench L seed 0: 15 of 22 regions tried): per axis and k = 1, 2, 3, pods of more than
    1/(k+1) of the most any node has free go k to a node at most."""
    pods = [e for e in entries if not e.item.whole]
    nodes = sum(g.count for g in sub.groups)
    for a in range(len(sub.axes)):
        top = max(g.free[a] for g in sub.groups)
        for k in (1, 2, 3):
            large = sum(e.members for e in pods if e.item.demand[a] * (k + 1) > top)
            if large > k * nodes:
                return False
    return True
