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

from router.models import Inventory, TargetRef
from router.plan.model import Resources

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
    return tuple(getattr(ref, "node_sets", ()) or (ref.id,))


def _hardware(ref: TargetRef) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The axes and an empty node's capacity of a target's nodes."""
    t = ref.target
    slices = getattr(t, "slices_per_node", None)
    if slices is None:  # an inventory without the MIG layout: slices as the old field says
        slices = dict(getattr(t, "mig", {}) or {})
    whole = getattr(t, "whole_gpus_per_node", t.gpus_per_node)
    profiles = sorted(slices)
    axes = (*BASE_AXES, *(f"mig-{p}" for p in profiles))
    return axes, (whole, t.cpus_per_node, t.memory_per_node, *(slices[p] for p in profiles))


def _classes(inventory: Inventory | None, running: object | None,
             ) -> dict[str, list[tuple[int, dict[str, int], int, dict[str, int], tuple[int, ...]]]]:
    """Per node set id: (count, free slices, free whole GPUs..) as plain tuples from
    router.models.capacity.node_classes when the inventory knows node sets; {} otherwise."""
    if inventory is None or not hasattr(inventory, "node_sets"):
        return {}
    from router.models.capacity import node_classes  # type: ignore[import-not-found,unused-ignore]

    out: dict[str, list[tuple[int, dict[str, int], int, dict[str, int], tuple[int, ...]]]] = {}
    for set_id, classes in node_classes(inventory, running).items():
        rows = []
        for c in classes:
            f = c.free
            rows.append((c.count, dict(f.slices), f.gpus, {"cpus": f.cpus, "memory": f.memory},
                         tuple(c.indices)))
        out[set_id] = rows
    return out


def capacities(targets: list[TargetRef], inventory: Inventory | None = None,
               running: object | None = None) -> list[Capacity]:
    """The capacity components of `targets`, sorted by id."""
    parent: dict[str, str] = {}

    def find(a: str) -> str:
        while parent.setdefault(a, a) != a:
            a = parent[a]
        return a

    for ref in targets:
        sets = sorted(_node_sets(ref))
        for s in sets[1:]:
            a, b = find(sets[0]), find(s)
            if a != b:
                parent[max(a, b)] = min(a, b)
    classes = _classes(inventory, running)
    by_root: dict[str, Capacity] = {}
    sizes: dict[str, int] = {}  # node set -> capacity nodes, for sets without classes
    for ref in sorted(targets, key=lambda r: r.id):
        sets = _node_sets(ref)
        root = find(sets[0])
        axes, full = _hardware(ref)
        cap = by_root.get(root)
        if cap is None:
            cap = by_root[root] = Capacity(root, axes, full, [])
        cap.sets_of[ref.id] = frozenset(sets)
        if len(sets) == 1 and sets[0] == ref.id:  # an inline target: its own node set
            sizes[ref.id] = getattr(ref.target, "max_nodes", None) or ref.target.nodes
    for cap in by_root.values():
        all_sets = sorted({s for ss in cap.sets_of.values() for s in ss})
        cap.id = all_sets[0]
        for s in all_sets:
            if s in classes:
                for count, slices, gpus, rest, indices in classes[s]:
                    free = (gpus, rest["cpus"], rest["memory"],
                            *(slices.get(a[4:], 0) for a in cap.axes[3:]))
                    cap.groups.append(NodeGroup(s, count, free, free == cap.full, indices))
            else:
                n = sizes.get(s, 0)
                if n:
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
