"""Insertion with ejection: one more member onto a component's nodes, others moved to make room.

A member left out after the last fill often fits once a pod or two of the plan move: its
node has the CPUs but not the memory, another node has memory to spare for one of the pods
already there. Each pod of the new member goes beside the plan if a node has room (first
fit); else onto a node n from which one pod q of the plan is ejected, enough for the new pod
to fit, q itself placed on another node the same way, one level further at most (a chain
of depth 2: new -> n, q -> m, r -> k beside; k may be n, which makes it a swap of q and r:
a CPU-heavy and a memory-heavy pod trading nodes, what bench L's CPU partitions needed).
Pods move between nodes of their own targets' node sets only; whole-node members are never
moved. The search is in node and key order with a bounded number of steps, so it is
deterministic; a member that does not go in leaves the nodes as they were.
"""

from __future__ import annotations

from router.solve.nodes import Capacity, Item
from router.solve.pack import Block, Packing

DEPTH = 2
STEPS = 20_000  # node checks per member tried


class Nodes:
    """A component's packing node by node, for moves one pod at a time."""

    def __init__(
        self, packing: Packing, items: dict[int, Item], allowed: dict[int, frozenset[str]]
    ) -> None:
        self.cap: Capacity = packing.cap
        self.items, self.allowed = items, allowed
        self.placed = dict(packing.placed)
        self.group: list[int] = []
        self.offset: list[int] = []
        self.free: list[list[int]] = []
        self.content: list[dict[int, int]] = []
        self.whole: list[bool] = []  # a whole member has the node
        for b in sorted(packing.blocks, key=lambda b: (b.group, b.lo)):
            for j in range(b.lo, b.lo + b.count):
                self.group.append(b.group)
                self.offset.append(j)
                self.free.append(list(b.free))
                self.content.append(dict(b.content))
                self.whole.append(any(p < 0 for _, p in b.content))
        self.sets = [self.cap.groups[g].node_set for g in self.group]
        # Keys of one kind (same pods, demand, node sets) are interchangeable, and so are
        # nodes of one signature: each is tried once per ejection (a symmetry, nothing lost).
        kinds: dict[tuple[object, ...], int] = {}
        self.kind = {
            k: kinds.setdefault((it.whole, it.pods, it.demand, allowed[k]), len(kinds))
            for k, it in sorted(items.items())
        }
        self.steps = 0
        self.log: list[tuple[int, int, int]] = []  # (node, key, +1 put / -1 taken)
        self.open: dict[frozenset[str], list[int]] = {}  # _open_to, per node sets

    def _put(self, n: int, key: int) -> None:
        d = self.items[key].demand
        self.free[n] = [f - x for f, x in zip(self.free[n], d, strict=True)]
        self.content[n][key] = self.content[n].get(key, 0) + 1
        self.log.append((n, key, 1))

    def _take(self, n: int, key: int) -> None:
        d = self.items[key].demand
        self.free[n] = [f + x for f, x in zip(self.free[n], d, strict=True)]
        self.content[n][key] -= 1
        if not self.content[n][key]:
            del self.content[n][key]
        self.log.append((n, key, -1))

    def _undo(self, mark: int) -> None:
        while len(self.log) > mark:
            n, key, sign = self.log.pop()
            d = self.items[key].demand
            self.free[n] = [f + sign * x for f, x in zip(self.free[n], d, strict=True)]
            self.content[n][key] = self.content[n].get(key, 0) - sign
            if not self.content[n][key]:
                del self.content[n][key]

    def _open_to(self, allowed: frozenset[str]) -> list[int]:
        """The nodes that pods of these node sets may go on (no whole member there), in
        node order; a node's whole member never moves, so this holds for the whole search."""
        found = self.open.get(allowed)
        if found is None:
            found = self.open[allowed] = [
                n for n, s in enumerate(self.sets) if s in allowed and not self.whole[n]
            ]
        return found

    def _open(self, n: int, allowed: frozenset[str], away: tuple[int, ...]) -> bool:
        return not self.whole[n] and self.sets[n] in allowed and n not in away

    def _pod(self, key: int, away: tuple[int, ...], depth: int) -> bool:
        """One pod of `key` onto some node not in `away`, ejecting (module docstring)."""
        d = self.items[key].demand
        allowed = self.allowed[key]
        nodes = range(len(self.free))
        free = self.free
        dims = range(len(d))
        # First fit beside the plan, over the nodes open to the key (the fill's hottest loop).
        for n in self._open_to(allowed):
            if n in away:
                continue
            f = free[n]
            for a in dims:
                if d[a] > f[a]:
                    break
            else:
                self.steps += n + 1  # a step per node checked, open or not
                self._put(n, key)
                return True
        self.steps += len(free)
        if not depth:
            return False
        seen: set[tuple[object, ...]] = set()
        for n in nodes:
            if not self._open(n, allowed, away):
                continue
            sign = (self.sets[n], tuple(self.free[n]), self._kinds(n))
            if sign in seen:
                continue
            seen.add(sign)
            tried: set[int] = set()
            for q in sorted(self.content[n]):
                self.steps += 1
                if self.steps > STEPS:
                    return False
                if self.kind[q] in tried:
                    continue
                tried.add(self.kind[q])
                dq = self.items[q].demand
                if self.items[q].whole or any(
                    x > f + y for x, f, y in zip(d, self.free[n], dq, strict=True)
                ):
                    continue
                mark = len(self.log)
                self._take(n, q)
                self._put(n, key)
                if self._pod(q, (n,), depth - 1):
                    return True
                self._undo(mark)
        return False

    def _kinds(self, n: int) -> tuple[tuple[int, int], ...]:
        out: dict[int, int] = {}
        for q, c in self.content[n].items():
            out[self.kind[q]] = out.get(self.kind[q], 0) + c
        return tuple(sorted(out.items()))

    def insert(self, key: int) -> bool:
        """One more member of `key` (pods only), moving others; False leaves all as it was."""
        item = self.items[key]
        if item.whole:
            return False
        mark = len(self.log)
        self.steps = 0
        for _ in range(item.pods):
            if not self._pod(key, (), DEPTH):
                self._undo(mark)
                return False
        self.placed[key] = self.placed.get(key, 0) + 1
        return True

    def packing(self) -> Packing:
        p = Packing(self.cap)
        p.placed = {k: n for k, n in self.placed.items() if n}
        for n, g in enumerate(self.group):
            c = tuple(sorted(self.content[n].items()))
            empty = self.cap.groups[g].empty and not c
            p.blocks.append(Block(g, self.offset[n], 1, tuple(self.free[n]), empty, c))
        return p
