"""Capacity as real nodes: node sets joined into capacity components, and what a placement
asks of them.

A *capacity component* is a set of node sets joined by the targets that draw on them (two
partitions over one node set are one capacity, however many targets name it). Its nodes are
grouped into classes of identical free capacity (router.models.capacity.node_classes: nodes
with running work become classes of what is left on them), so a component of 500 identical
nodes is one class of 500, not 500 nodes. Every node of a component has the same hardware
(a target's node sets must match), so the component has one vector of *axes*: whole GPUs,
CPUs, memory, then MIG slices per profile (a GPU is either whole or cut: the two never count
the same GPU).

A placement member is an `Item`: `pods` pods of one `demand` vector (a service's replicas,
a single-node job's one task) or `whole` nodes to itself (exclusive and multi-node jobs,
each node on a distinct node with nothing else on it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from router.models import Inventory, Running, TargetRef, node_classes
from router.models.placement import Resources

BASE_AXES = ("gpus", "cpus", "memory")


@dataclass(frozen=True)
class NodeGroup:
    """Identical nodes of one node set: `count` of them, each with `free` per axis."""

    node_set: str
    count: int
    free: tuple[int, ...]
    empty: bool  # nothing runs there: a whole-node job may take it
    indices: tuple[int, ...]  # the nodes' indices in their node set


@dataclass
class Capacity:
    """One capacity component: node sets joined by targets, as node classes."""

    id: str  # its first node set id
    axes: tuple[str, ...]
    full: tuple[int, ...]  # an empty node, per axis (the hardware)
    groups: list[NodeGroup]
    sets_of: dict[str, frozenset[str]] = field(default_factory=dict)  # target id -> node sets
    # node set -> a note per node whose running work holds more than it has (NodeClass.over)
    over: dict[str, list[str]] = field(default_factory=dict)

    @property
    def targets(self) -> list[str]:
        return sorted(self.sets_of)

    @property
    def nodes(self) -> int:
        return sum(g.count for g in self.groups)

    def groups_of(self, sets: frozenset[str]) -> list[NodeGroup]:
        return [g for g in self.groups if g.node_set in sets]


@dataclass(frozen=True)
class Item:
    """What one member of a placement takes of its capacity component."""

    whole: int  # nodes to itself (0: it runs as pods)
    pods: int
    demand: tuple[int, ...]  # per pod, per axis of the component

    def usage(self, full: tuple[int, ...]) -> tuple[int, ...]:
        """Its total per axis: whole nodes take everything on them."""
        if self.whole:
            return tuple(self.whole * f for f in full)
        return tuple(self.pods * d for d in self.demand)


def _node_sets(ref: TargetRef) -> tuple[str, ...]:
    return ref.node_sets or (ref.id,)


def _hardware(ref: TargetRef) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The axes and an empty node's capacity of a target's nodes."""
    t = ref.target
    slices = t.slices_per_node
    axes = (*BASE_AXES, *(f"mig-{p}" for p in slices))
    return axes, (t.whole_gpus_per_node, t.cpus_per_node, t.memory_per_node, *slices.values())


def _sizes(targets: list[TargetRef]) -> dict[str, int]:
    """Without the inventory: each node set's nodes, from the targets (a target with one set
    has all its nodes; a set only ever named with others gets an even share)."""
    out: dict[str, int] = {}
    for ref in targets:
        sets = _node_sets(ref)
        if len(sets) == 1:
            out[sets[0]] = ref.target.capacity_nodes
    for ref in targets:
        sets = _node_sets(ref)
        missing = [s for s in sets if s not in out]
        if missing:
            left = max(0, ref.target.capacity_nodes - sum(out.get(s, 0) for s in sets))
            for k, s in enumerate(missing):
                out[s] = left // len(missing) + (1 if k < left % len(missing) else 0)
    return out


def capacities(
    targets: list[TargetRef], inventory: Inventory | None = None, running: Running | None = None
) -> list[Capacity]:
    """The capacity components of `targets`, sorted by id: their node sets' node classes
    (router.models.capacity.node_classes, after `running` work) when the inventory is given,
    else every node of the targets' sets idle."""
    parent: dict[str, str] = {}

    def find(a: str) -> str:
        while parent.setdefault(a, a) != a:
            a = parent[a]
        return a

    for ref in targets:
        names = sorted(_node_sets(ref))
        for s in names[1:]:
            a, b = find(names[0]), find(s)
            if a != b:
                parent[max(a, b)] = min(a, b)
    classes = node_classes(inventory, running) if inventory is not None else {}
    sizes = _sizes(targets)
    by_root: dict[str, Capacity] = {}
    for ref in sorted(targets, key=lambda r: r.id):
        sets = _node_sets(ref)
        root = find(sets[0])
        cap = by_root.get(root)
        if cap is None:
            axes, full = _hardware(ref)
            cap = by_root[root] = Capacity(root, axes, full, [])
        cap.sets_of[ref.id] = frozenset(sets)
    for cap in by_root.values():
        all_sets = sorted({s for ss in cap.sets_of.values() for s in ss})
        cap.id = all_sets[0]
        for s in all_sets:
            if s in classes:
                for c in classes[s]:
                    slices = dict(c.free.slices)
                    free = (
                        c.free.gpus,
                        c.free.cpus,
                        c.free.memory,
                        *(slices.get(a[4:], 0) for a in cap.axes[3:]),
                    )
                    cap.groups.append(NodeGroup(s, c.count, free, c.idle, c.indices))
                    if c.over:
                        cap.over.setdefault(s, []).extend(c.over)
            elif sizes.get(s):
                n = sizes[s]
                cap.groups.append(NodeGroup(s, n, cap.full, True, tuple(range(n))))
    return [by_root[k] for k in sorted(by_root, key=lambda k: by_root[k].id)]


def item_of(res: Resources, cap: Capacity) -> Item:
    """What one placement member with `res` takes of `cap`."""
    if res.whole_nodes:
        return Item(res.whole_nodes, 0, tuple(0 for _ in cap.axes))
    gpus = 0 if res.mig else res.gpus_per_node
    demand = [gpus, res.cpus_per_node, res.memory_per_node]
    for a in cap.axes[3:]:
        demand.append(res.gpus_per_node if res.mig and a == f"mig-{res.mig}" else 0)
    return Item(0, res.units, tuple(demand))
