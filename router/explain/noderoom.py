"""What the plan's nodes have left, and whether one more workload fits there, in words.

Built from the plan's node assignment (which node holds each pod or whole node): every node
of a capacity component starts with its free capacity (after running work), loses what the
plan put on it, and the rest is the room. A candidate is blocked by capacity when first fit
cannot put all its pods (or whole nodes) into that room. The words name the resource that
blocks on the real nodes: "k8s/gpu: 3 replicas need 30 CPUs each on a node, 1 fits; the most
free on any node is 18 CPUs".
"""

from __future__ import annotations

from typing import Any, Protocol

from router.evaluate.evaluate import Candidate
from router.models.placement import Resources
from router.quantity import format_memory
from router.solve.nodes import Capacity, Item, item_of
from router.solve.pack import Block, Packing
from router.solve.problem import Problem


class PlanState(Protocol):
    """What NodeRoom reads of blocking.PlanState (which builds it: imports flow one way)."""

    problem: Problem
    assignment: dict[str, Candidate]
    nodes: dict[str, list[tuple[str, int]]] | None

    def workload_of(self, v: int) -> Any: ...


def _amount(axis: str, n: int) -> str:
    if axis == "memory":
        return f"{_memory(n)} of memory"
    if axis == "gpus":
        return f"{n} GPU{'s' if n != 1 else ''}"
    if axis == "cpus":
        return f"{n} CPU{'s' if n != 1 else ''}"
    return f"{n} {axis[4:]} slice{'s' if n != 1 else ''}"


class NodeRoom:
    def __init__(self, state: PlanState) -> None:
        self.state = state
        self._rooms: dict[tuple[int, frozenset[str]], Packing] = {}
        # The answers by value (component, workloads left out, target, resources): thousands
        # of unplaced workloads of one class ask the same question of the same room.
        self._caps: dict[str, tuple[Capacity, int]] | None = None
        self._blocked: dict[tuple[int, frozenset[str], str, Resources], tuple[str, int] | None]
        self._blocked = {}
        self._by_comp: dict[int, list[tuple[str, Candidate]]] | None = None

    def _components(self) -> dict[str, tuple[Capacity, int]]:
        """Each target's capacity component (the first that has it), once."""
        if self._caps is None:
            agg = self.state.problem.aggregate
            self._caps = {}
            for ci, cap in enumerate(agg.capacity if agg else []):
                for tid in cap.sets_of:
                    self._caps.setdefault(tid, (cap, ci))
        return self._caps

    def _agg_cap(self, v: int) -> tuple[Capacity, int] | None:
        return self._components().get(self.state.problem.variables[v][1].target.id)

    def _placed_nodes(self) -> dict[str, list[tuple[str, int]]]:
        state = self.state
        if state.nodes is None:
            agg = state.problem.aggregate
            assert agg is not None and agg.nodes is not None
            counts = [0] * len(agg.variables)
            index = {d.workload.name: i for i, d in enumerate(agg.routed)}
            group_of = {i: g for g, grp in enumerate(agg.groups) for i in grp.members}
            for name, cand in state.assignment.items():
                g = group_of[index[name]]
                v = next(v for v in agg.choices[g] if agg.candidate(v).target.id == cand.target.id)
                counts[v] += 1
            state.nodes = {
                agg.routed[i].workload.name: n for i, n in agg.nodes.assign(counts).items()
            }
        return state.nodes

    def _placements(self, ci: int) -> list[tuple[str, Candidate]]:
        """The plan's placements on component ci, grouped once for every component."""
        if self._by_comp is None:
            comp = self._components()
            self._by_comp = {}
            for name, cand in self.state.assignment.items():
                found = comp.get(cand.target.id)
                if found is not None:
                    self._by_comp.setdefault(found[1], []).append((name, cand))
        return self._by_comp.get(ci, [])

    def _free(
        self, ci: int, cap: Capacity, minus: frozenset[str] = frozenset()
    ) -> tuple[dict[tuple[str, int], tuple[int, ...]], dict[tuple[str, int], bool]]:
        """Per node (node set, index) of component ci: what it has free after the plan (less
        the workloads `minus`), and whether it is idle."""
        free: dict[tuple[str, int], tuple[int, ...]] = {}
        idle: dict[tuple[str, int], bool] = {}
        for g in cap.groups:
            for j in g.indices:
                free[g.node_set, j], idle[g.node_set, j] = g.free, g.empty
        placed = self._placed_nodes()
        for name, cand in self._placements(ci):
            if name in minus:
                continue
            item = item_of(cand.resources, cap)
            for node in placed.get(name, []):
                idle[node] = False
                if item.whole:
                    free[node] = tuple(0 for _ in cap.axes)
                else:
                    free[node] = tuple(f - d for f, d in zip(free[node], item.demand, strict=True))
        return free, idle

    def room(self, ci: int, cap: Capacity, minus: frozenset[str] = frozenset()) -> Packing:
        """The component's nodes after the plan (less the workloads `minus`), as blocks."""
        key = (ci, minus)
        if key in self._rooms:
            return self._rooms[key]
        free, idle = self._free(ci, cap, minus)
        blocks: list[Block] = []
        for gi, g in enumerate(cap.groups):
            for lo, j in enumerate(g.indices):
                f, e = free[g.node_set, j], idle[g.node_set, j]
                last = blocks[-1] if blocks else None
                if last and last.group == gi and last.free == f and last.empty == e:
                    last.count += 1
                else:
                    blocks.append(Block(gi, lo, 1, f, e))
        self._rooms[key] = p = Packing(cap, blocks)
        return p

    def assigned(self, name: str, target: str) -> list[str]:
        """Where the plan put placed workload `name` on `target`, node by node, and the room
        left there: "hpc/cpu node 6 (1 pod): 120 CPUs and 496GiB of memory left"."""
        found = self._components().get(target)
        nodes = self._placed_nodes().get(name, [])
        if found is None or not nodes:
            return []
        cap, ci = found
        free, _ = self._free(ci, cap)
        full = {a: n for a, n in zip(cap.axes, cap.full, strict=True)}
        pods: dict[tuple[str, int], int] = {}
        for node in nodes:
            pods[node] = pods.get(node, 0) + 1
        if item_of(self.state.assignment[name].resources, cap).whole:
            by_set: dict[str, list[int]] = {}
            for node_set, j in sorted(pods):
                by_set.setdefault(node_set, []).append(j)
            return [
                f"{node_set} node{'s' if len(js) > 1 else ''} {_ranges(js)}: whole, "
                "nothing left there for other work"
                for node_set, js in by_set.items()
            ]
        out = []
        for (node_set, j), n in sorted(pods.items()):
            at = f"{node_set} node {j}"
            left = [
                _amount(a, f) for a, f in zip(cap.axes, free[node_set, j], strict=True) if full[a]
            ]
            has = [_amount(a, full[a]) for a in cap.axes if full[a]]
            count = f" ({n} pods)" if n > 1 else ""
            out.append(f"{at}{count}: left there {', '.join(left)} (of {', '.join(has)})")
        return out

    def blocked(
        self, v: int, minus: int | None = None, without: frozenset[str] = frozenset()
    ) -> tuple[str, int] | None:
        """None when (per-workload) variable v's workload fits in the room its target's
        nodes have (less variable `minus`'s workload, less the workloads `without`); else why
        not, in words, and how many more empty nodes would do."""
        found = self._agg_cap(v)
        if found is None:
            return None
        cap, ci = found
        cand = self.state.problem.variables[v][1]
        if minus is not None:
            without = without | {self.state.workload_of(minus).name}
        key = (ci, without, cand.target.id, cand.resources)
        if key not in self._blocked:
            room = self.room(ci, cap, without)
            item = item_of(cand.resources, cap)
            allowed = cap.sets_of[cand.target.id]
            fits = room.room(item, allowed) >= 1
            self._blocked[key] = None if fits else _words(cand.target.id, cap, room, item, allowed)
        return self._blocked[key]


def _ranges(js: list[int]) -> str:
    """Sorted node indices as ranges: [0, 1, 2, 5] -> "0-2, 5"."""
    runs: list[list[int]] = []
    for j in js:
        if runs and j == runs[-1][1] + 1:
            runs[-1][1] = j
        else:
            runs.append([j, j])
    return ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in runs)


def _words(
    tid: str, cap: Capacity, room: Packing, item: Item, allowed: frozenset[str]
) -> tuple[str, int]:
    """Why item does not fit the room, with the numbers of the real nodes: what it needs
    against the most any node has free (or, nodes whole, needed against idle)."""
    blocks = [b for b in room.blocks if cap.groups[b.group].node_set in allowed]
    nodes = sum(b.count for b in blocks)
    # Nodes that other targets name too (Slurm partitions over one node set) are one capacity.
    others = sorted(t for t, sets in cap.sets_of.items() if t != tid and sets & allowed)
    shared = f" (shared with {', '.join(others)})" if others else ""
    its = f"its {nodes} node{'s' if nodes != 1 else ''}{shared}"
    groups = [g for g in cap.groups if g.node_set in allowed]
    if item.whole:
        idle = sum(b.count for b in blocks if b.empty)
        running = sum(g.count for g in groups if not g.empty)
        held = f"; running work is on {running} of them" if running else ""
        return (
            f"{tid}: needs {item.whole} whole node{'s' if item.whole > 1 else ''}, "
            f"{idle} of {its} {'is' if idle == 1 else 'are'} idle{held}",
            item.whole - idle,
        )
    need = item.pods
    fit = sum(b.count * min(need, _fits(b.free, item.demand)) for b in blocks)
    axes = [a for a, d in enumerate(item.demand) if d]
    # The first axis on which the nodes, each alone, cannot hold the pods.
    short = next(
        (a for a in axes if sum(b.count * (b.free[a] // item.demand[a]) for b in blocks) < need),
        None,
    )
    per_empty = _fits(cap.full, item.demand)
    more = max(1, -(-(need - fit) // per_empty) if per_empty else need)
    if short is not None:
        axis, d = cap.axes[short], item.demand[short]
        most = max((b.free[short] for b in blocks), default=0)
        pods = "needs" if need == 1 else f"{need} pods need"
        each = "on one node" if need == 1 else "each"
        if nodes == 1:
            room_for = "" if need == 1 else f", room for {fit}"
            has = f"its 1 node has {_amount(axis, most)} free{room_for}"
        elif need == 1:
            has = f"the most free on any of {its} is {_amount(axis, most)}"
        else:
            most_free = _most(blocks, short, axis)
            has = f"{its} have room for {fit} (the most free on any node: {most_free})"
        # What already runs there (the inventory's occupancy), apart from what the plan put.
        run = sum(g.count * (cap.full[short] - g.free[short]) for g in groups)
        total = sum(g.count for g in groups) * cap.full[short]
        held = f"; running work holds {_number(axis, run)} of the {_amount(axis, total)} there"
        if not run or any(cap.over.get(s) for s in allowed):
            held = ""  # nothing runs, or the oversubscription note says it (reasons.py)
        return f"{tid}: {pods} {_amount(axis, d)} free {each}; {has}{held}", more
    wanted = [_amount(cap.axes[a], item.demand[a]) for a in axes]
    what = f"{', '.join(wanted[:-1])} and {wanted[-1]}"
    pods = "needs" if need == 1 else f"{need} pods need"
    if fit >= need:  # one by one they fit, not all together (first fit in node order)
        return f"{tid}: {pods} {what} each; they do not fit together on {its}", more
    room_for = "" if need == 1 else f", room for {fit}"
    if nodes == 1:
        free = " and ".join(_amount(cap.axes[a], blocks[0].free[a]) for a in axes)
        none, detail = "its 1 node does not have", f"it has {free} free"
    else:
        none, detail = f"none of {its} has", _best(blocks, cap.axes, axes)
    return (
        f"{tid}: {pods} {what} free on one node{'' if need == 1 else ' each'}; "
        f"{none} all of it{room_for} ({detail})",
        more,
    )


def _most(blocks: list[Block], a: int, axis: str, shown: int = 2) -> str:
    """The largest amounts free on axis a and on how many nodes: "48 CPUs on 1, 18 on 3"."""
    counts: dict[int, int] = {}
    for b in blocks:
        counts[b.free[a]] = counts.get(b.free[a], 0) + b.count
    top = sorted(counts.items(), reverse=True)[:shown]
    parts = [
        f"{_amount(axis, n) if i == 0 else _number(axis, n)} on {c}" for i, (n, c) in enumerate(top)
    ]
    return ", ".join(parts) if parts else "none"


def _best(blocks: list[Block], names: tuple[str, ...], axes: list[int]) -> str:
    """Per axis asked for, the node with the most of it free and what else it has."""
    parts = []
    for a in axes:
        top = max(blocks, key=lambda b: b.free[a], default=None)
        if top is None:
            continue
        others = " and ".join(_amount(names[o], top.free[o]) for o in axes if o != a)
        parts.append(
            f"the most {_noun(names[a])} free is {_number(names[a], top.free[a])}, "
            f"on a node with {others}"
        )
    return "; ".join(parts)


def _noun(axis: str) -> str:
    return {"gpus": "GPUs", "cpus": "CPUs", "memory": "memory"}.get(axis, f"{axis[4:]} slices")


def _number(axis: str, n: int) -> str:
    """An amount without its unit word where the word is already said (memory keeps GiB)."""
    return _memory(n) if axis == "memory" else str(n)


def _memory(n: int) -> str:
    return format_memory(n) if n else "0GiB"  # not "0MiB": the node has none left


def _fits(free: tuple[int, ...], demand: tuple[int, ...]) -> int:
    n = 1 << 30
    for f, d in zip(free, demand, strict=True):
        if d:
            n = min(n, f // d)
    return n
