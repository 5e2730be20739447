"""The nodes a plan can use, node by node: each node set's nodes grouped into classes of
identical free capacity, after what is already running.

A node set's nodes are indexed 0 .. capacity_nodes - 1 (indices ≥ nodes are headroom: the
autoscaler's or Slurm's powered-down nodes). Nodes with nothing running are one class; a node
with running work is a class of its residual capacity (nodes left with the same residual share
one). A whole-node (exclusive) item leaves its node with nothing. Running work never lands on
headroom nodes: they do not exist until something needs them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from router.errors import LoadError
from router.models.inventory import Inventory, NodeSetRef
from router.models.running import Running, RunningItem


@dataclass(frozen=True, order=True)
class NodeShape:
    """What one node has free: whole GPUs, MIG slices per profile, CPUs, memory (MiB)."""

    gpus: int
    slices: tuple[tuple[str, int], ...]
    cpus: int
    memory: int

    @property
    def empty(self) -> bool:
        return not (self.gpus or self.cpus or self.memory or any(n for _, n in self.slices))


@dataclass(frozen=True)
class NodeClass:
    """`count` nodes of one node set with the same free capacity; `indices` name them."""

    node_set: str
    count: int
    free: NodeShape
    indices: tuple[int, ...]
    idle: bool  # nothing runs on these nodes (whole-node work may take them)


def full_shape(ref: NodeSetRef) -> NodeShape:
    s = ref.spec
    return NodeShape(
        s.whole_gpus_per_node, tuple(s.slices_per_node.items()), s.cpus_per_node, s.memory_per_node
    )


def node_classes(
    inventory: Inventory,
    running: Running | None = None,
) -> dict[str, list[NodeClass]]:
    """Per node set id, its node classes: idle nodes first, then partly used ones by index."""
    by_node: dict[tuple[str, int], list[RunningItem]] = defaultdict(list)
    # (set id, node name) -> index, built once: a lookup per running item, not a scan.
    named: dict[tuple[str, str], int] = {}
    for ref in inventory.node_sets():
        for index, name in enumerate(ref.spec.node_names):
            named.setdefault((ref.id, name), index)
    for item in running.running if running else []:
        sid, index = _node_of(inventory, item, named)
        by_node[sid, index].append(item)
    out: dict[str, list[NodeClass]] = {}
    for ref in inventory.node_sets():
        full = full_shape(ref)
        used: dict[NodeShape, list[int]] = defaultdict(list)
        idle: list[int] = []
        for index in range(ref.spec.capacity_nodes):
            items = by_node.get((ref.id, index))
            if not items:
                idle.append(index)
                continue
            used[_residual(ref, index, full, items)].append(index)
        classes = [NodeClass(ref.id, len(idle), full, tuple(idle), True)] if idle else []
        for shape, indices in sorted(used.items(), key=lambda kv: kv[1][0]):
            classes.append(NodeClass(ref.id, len(indices), shape, tuple(indices), False))
        out[ref.id] = classes
    return out


def _node_of(
    inventory: Inventory, item: RunningItem, named: dict[tuple[str, str], int]
) -> tuple[str, int]:
    """(node set id, node index) of a running item; LoadError when it names no node."""
    sets = [s for s in inventory.node_sets() if s.cluster == item.cluster]
    if not sets:
        raise LoadError(f'running work on cluster "{item.cluster}", which the inventory lacks')
    if item.node_set is not None:
        sid = f"{item.cluster}/{item.node_set}"
        sets = [s for s in sets if s.id == sid]
        if not sets:
            raise LoadError(f'running work on node set "{sid}", which the inventory lacks')
    if isinstance(item.node, int):
        ref = sets[0]
        if item.node >= ref.spec.nodes:
            raise LoadError(
                f"running work on node {item.node} of {ref.id}, which has {ref.spec.nodes} nodes"
            )
        return ref.id, item.node
    for ref in sets:
        index = named.get((ref.id, item.node))
        if index is not None:
            return ref.id, index
    raise LoadError(
        f'running work on node "{item.node}", which no node set of cluster'
        f' "{item.cluster}" names (node_names)'
    )


def _residual(
    ref: NodeSetRef,
    index: int,
    full: NodeShape,
    items: list[RunningItem],
) -> NodeShape:
    if any(i.whole for i in items):
        return NodeShape(0, tuple((p, 0) for p, _ in full.slices), 0, 0)
    gpus = full.gpus - sum(i.gpus for i in items)
    slices = dict(full.slices)
    for i in items:
        for p, n in i.mig.items():
            slices[p] = slices.get(p, 0) - n
    cpus = full.cpus - sum(i.cpus for i in items)
    memory = full.memory - sum(i.memory for i in items)
    short = [
        what
        for what, left in (
            ("GPUs", gpus),
            ("CPUs", cpus),
            ("memory", memory),
            *((f"{p} slices", n) for p, n in slices.items()),
        )
        if left < 0
    ]
    if short:
        jobs = ", ".join(sorted(i.job or "?" for i in items))
        raise LoadError(
            f"running work ({jobs}) on node {index} of {ref.id} takes more {short[0]}"
            " than the node has"
        )
    return NodeShape(gpus, tuple(sorted(slices.items())), cpus, memory)
