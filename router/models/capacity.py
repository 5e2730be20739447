"""The nodes a plan can use, node by node: each node set's nodes grouped into classes of
identical free capacity, after what is already running.

A node set's nodes are indexed 0 .. capacity_nodes - 1 (indices ≥ nodes are headroom: the
autoscaler's or Slurm's powered-down nodes). Nodes with nothing running are one class; a node
with running work is a class of its residual capacity (nodes left with the same residual share
one). A whole-node (exclusive) item leaves its node with nothing. Running work never lands on
headroom nodes: they do not exist until something needs them.

Running work may hold more of a node than it has: a Slurm partition with OverSubscribe=FORCE
(or YES, for jobs that ask) puts two jobs on the same CPUs, and `scontrol show node` then shows
CPUAlloc at CPUTot while the jobs' CPUs add up to more. Such a node is full on that axis
(nothing more is planned there: slurmctld holds an unshared job back until the CPUs are free)
and its class says so in `over`, a note per node that reasons and `router inventory running`
print.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from router.errors import LoadError, did_you_mean
from router.models.inventory import Inventory, NodeSetRef
from router.models.running import Running, RunningItem
from router.quantity import format_memory


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
    over: tuple[str, ...] = ()  # a note per node whose running work holds more than it has


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
    for i, item in enumerate(running.running if running else []):
        sid, index = _node_of(inventory, i, item, named)
        _check_slices(inventory, i, item, sid, index)
        by_node[sid, index].append(item)
    out: dict[str, list[NodeClass]] = {}
    for ref in inventory.node_sets():
        full = full_shape(ref)
        used: dict[NodeShape, list[int]] = defaultdict(list)
        notes: dict[NodeShape, list[str]] = defaultdict(list)
        idle: list[int] = []
        for index in range(ref.spec.capacity_nodes):
            items = by_node.get((ref.id, index))
            if not items:
                idle.append(index)
                continue
            shape, note = _residual(inventory, ref, index, full, items)
            used[shape].append(index)
            if note:
                notes[shape].append(note)
        classes = [NodeClass(ref.id, len(idle), full, tuple(idle), True)] if idle else []
        for shape, indices in sorted(used.items(), key=lambda kv: kv[1][0]):
            classes.append(
                NodeClass(ref.id, len(indices), shape, tuple(indices), False, tuple(notes[shape]))
            )
        out[ref.id] = classes
    return out


class UnknownNode(LoadError):
    """A running item names no node of the inventory: `index` is the item's place in
    `running:` and `field` the key at fault, for the loader to give the error its line
    (loader.check_running)."""

    def __init__(
        self, message: str, index: int, field: str, hint: str | None = None, key: str = ""
    ) -> None:
        super().__init__(message, hint=hint)
        self.index, self.field, self.key = index, field, key


def _node_of(
    inventory: Inventory, i: int, item: RunningItem, named: dict[tuple[str, str], int]
) -> tuple[str, int]:
    """(node set id, node index) of running item i; UnknownNode when it names no node."""
    sets = [s for s in inventory.node_sets() if s.cluster == item.cluster]
    if not sets:
        clusters = sorted({s.cluster for s in inventory.node_sets()})
        raise UnknownNode(
            f'running work on cluster "{item.cluster}", which the inventory lacks',
            i,
            "cluster",
            did_you_mean(item.cluster, clusters),
        )
    if item.node_set is not None:
        sid = f"{item.cluster}/{item.node_set}"
        names = [s.id.split("/", 1)[1] for s in sets]
        sets = [s for s in sets if s.id == sid]
        if not sets:
            raise UnknownNode(
                f'running work on node set "{sid}", which the inventory lacks',
                i,
                "node_set",
                did_you_mean(item.node_set, names),
            )
    if isinstance(item.node, int):
        ref = sets[0]
        if item.node >= ref.spec.nodes:
            raise UnknownNode(
                f"running work on node {item.node} of {ref.id}, which has {ref.spec.nodes} nodes",
                i,
                "node",
            )
        return ref.id, item.node
    for ref in sets:
        index = named.get((ref.id, item.node))
        if index is not None:
            return ref.id, index
    raise UnknownNode(
        f'running work on node "{item.node}", which no node set of cluster'
        f' "{item.cluster}" names (node_names)',
        i,
        "node",
    )


def _check_slices(inventory: Inventory, i: int, item: RunningItem, sid: str, index: int) -> None:
    """Running work holds slices only of a profile its node is cut into: slices of another
    profile sit on GPUs the inventory counts whole or cut otherwise, so dropping them would
    let the plan put new pods on what is taken (the audit's A17)."""
    if not item.mig:
        return
    ref = inventory.node_set(sid)
    has = sorted(p for p, n in ref.spec.slices_per_node.items() if n)
    for profile in sorted(item.mig):
        if profile in has:
            continue
        names = ref.spec.node_names
        node = names[index] if index < len(names) else str(index)
        cut = f"cut into {', '.join(has)} only" if has else "not cut into MIG slices"
        raise UnknownNode(
            f"running work holds {profile} MIG slices on {sid} node {node}, whose GPUs are {cut}"
            " (is the inventory up to date?)",
            i,
            "mig",
            # profiles look alike (3g.40gb vs 1g.10gb): only a near miss is a typo
            did_you_mean(profile, has, cutoff=0.85),
            key=profile,
        )


def oversubscribed(classes: dict[str, list[NodeClass]]) -> list[str]:
    """The notes of every node whose running work holds more than it has, in node set order."""
    return [n for sid in sorted(classes) for c in classes[sid] for n in c.over]


def _residual(
    inventory: Inventory,
    ref: NodeSetRef,
    index: int,
    full: NodeShape,
    items: list[RunningItem],
) -> tuple[NodeShape, str | None]:
    """What the node has left (never below zero on any axis), and a note when its running
    work holds more than it has."""
    if any(i.whole for i in items):
        return NodeShape(0, tuple((p, 0) for p, _ in full.slices), 0, 0), None
    used_slices: dict[str, int] = {}
    for i in items:
        for p, n in i.mig.items():
            used_slices[p] = used_slices.get(p, 0) + n
    slices = dict(full.slices)
    axes = [
        ("GPUs", full.gpus, sum(i.gpus for i in items)),
        ("CPUs", full.cpus, sum(i.cpus for i in items)),
        ("memory", full.memory, sum(i.memory for i in items)),
        *((f"{p} slices", slices.get(p, 0), n) for p, n in sorted(used_slices.items())),
    ]
    left = {what: has - held for what, has, held in axes}
    shape = NodeShape(
        max(0, left["GPUs"]),
        tuple(sorted((p, max(0, n - used_slices.get(p, 0))) for p, n in slices.items())),
        max(0, left["CPUs"]),
        max(0, left["memory"]),
    )
    over = [(what, has, held) for what, has, held in axes if held > has]
    if not over:
        return shape, None
    return shape, _over_note(inventory, ref, index, items, over)


def _over_note(
    inventory: Inventory,
    ref: NodeSetRef,
    index: int,
    items: list[RunningItem],
    over: list[tuple[str, int, int]],
) -> str:
    """E.g. 'slurm/h100x4 node gpu-n1 is counted full on CPUs: its running work (1, 2) holds
    12 of its 8 CPUs, shared by partition shared (OverSubscribe=FORCE:2)'."""
    names = ref.spec.node_names
    node = names[index] if index < len(names) else str(index)
    jobs = ", ".join(sorted({i.job or "?" for i in items}))
    held = " and ".join(f"{_amount(w, n)} of its {_amount(w, has)} {w}" for w, has, n in over)
    sharing = [
        f"{t.rsplit('/', 1)[-1]} (OverSubscribe={mode.upper()})"
        for t in ref.targets
        if (mode := getattr(inventory.target(t).target, "oversubscribe", None) or "")
        and mode.partition(":")[0] in ("force", "yes")
    ]
    why = (
        f", shared by partition {', '.join(sharing)}"
        if sharing
        else ", more than the inventory says it has (is the inventory up to date?)"
    )
    axes = " and ".join(w for w, _, _ in over)
    return (
        f"{ref.id} node {node} is counted full on {axes}: its running work ({jobs}) holds"
        f" {held}{why}"
    )


def _amount(what: str, n: int) -> str:
    return format_memory(n) if what == "memory" else str(n)
