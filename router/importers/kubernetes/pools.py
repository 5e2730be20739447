"""Usable nodes of one pool label value → node pools (targets) with exact node selectors.

* A pool whose nodes are alike (GPUs, MIG layout, CPUs, memory) and carry the same taints is
  one target. Otherwise it is split, one target per kind of node, so nothing is shrunk to the
  smallest node; each part's selector adds a stable label only its nodes have (the instance
  type, typically). Where no label tells the parts apart a comment says so.
* Labels: the pool label, plus the labels common to the part's nodes that make a stable node
  selector: users' own labels, and of the platform's domains only `KEEP_LABELS`. Per-node
  labels (hostname, DigitalOcean's node-id) and driver/image state never go in a selector.
* Taints: a part's NoSchedule/NoExecute/PreferNoSchedule taints (the lifecycle ones aside)
  are its `taints`, a target attribute: workloads routed there get the tolerations.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from typing import Any

from router.importers import ImportedTarget
from router.importers.kubernetes.nodes import GPU_PRODUCT, Node, Shape, Taint
from router.importers.kubernetes.providers import POOL_LABELS, ROLE
from router.quantity import format_memory

HOSTNAME = "kubernetes.io/hostname"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
KEEP_LABELS = frozenset(
    {
        "kubernetes.io/arch",
        "kubernetes.io/os",
        INSTANCE_TYPE,
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/zone",
        GPU_PRODUCT,
        "cloud.google.com/gke-accelerator",
        "cloud.google.com/gke-spot",
        "cloud.google.com/gke-preemptible",
        "eks.amazonaws.com/capacityType",
        "karpenter.sh/capacity-type",
        "kubernetes.azure.com/scalesetpriority",
        *(k for k, _ in POOL_LABELS),
    }
)
SYSTEM_DOMAINS = (
    "kubernetes.io",
    "k8s.io",
    "nvidia.com",
    "cloud.google.com",
    "gke.io",
    "amazonaws.com",
    "azure.com",
    "karpenter.sh",
    "karpenter.k8s.aws",
    "digitalocean.com",
    "openshift.io",
    "eksctl.io",
    "cattle.io",
    "k3s.io",
    "rke2.io",
    "x-k8s.io",
    "amd.com",
    "intel.com",
)
PER_NODE = re.compile(r"(^|[/.-])(node-?id|hostname|instance-?id|machine-?id|node-?name)$", re.I)
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # the inventory's node_names
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?")


def pool_name(value: str) -> str:
    """A DNS-1123 label for a pool label value: unchanged when valid."""
    if DNS_LABEL.fullmatch(value):
        return value
    clean = re.sub(r"[^a-z0-9-]+", "-", value.lower()).strip("-")
    if clean and len(clean) <= 63:
        return clean
    digest = hashlib.sha256(value.encode("utf-8")).hexdigest()[:8]
    head = clean[:54].strip("-")
    return f"{head}-{digest}" if head else f"pool-{digest}"


def _system(key: str) -> bool:
    prefix, slash, _ = key.rpartition("/")
    return bool(slash) and any(prefix == d or prefix.endswith("." + d) for d in SYSTEM_DOMAINS)


def selector_label(key: str, pool_label: str) -> bool:
    if key == pool_label:
        return True
    if key == HOSTNAME or PER_NODE.search(key) or key.startswith(ROLE):
        return False
    return key in KEEP_LABELS or not _system(key)


def common_labels(nodes: list[Node], pool_label: str) -> dict[str, str]:
    first = nodes[0].labels
    common = {k: v for k, v in first.items() if all(n.labels.get(k) == v for n in nodes[1:])}
    return {
        k: v
        for k, v in sorted(common.items())
        if selector_label(k, pool_label) and LABEL_VALUE.fullmatch(v)
    }


def _taints(taints: frozenset[Taint]) -> list[dict[str, str]]:
    out = []
    for key, value, effect in sorted(taints):
        taint = {"key": key}
        if value:
            taint["value"] = value
        taint["effect"] = effect
        out.append(taint)
    return out


def pools_of(label: str, value: str, nodes: list[Node], taken: set[str]) -> list[ImportedTarget]:
    """The targets for the usable nodes of one pool (label=value)."""
    base = pool_name(value or label.rpartition("/")[2])
    kinds: dict[tuple[Shape, frozenset[Taint]], list[Node]] = defaultdict(list)
    for n in nodes:
        kinds[(n.shape, n.taints)].append(n)
    if len(kinds) == 1:
        return [_pool(_unique(base, taken), label, value, nodes, {}, [])]
    out = []
    ordered = sorted(kinds.items(), key=lambda kv: (repr(kv[0][0]), sorted(kv[0][1])))
    note = (
        f"{label}={value} has {len(kinds)} kinds of node: one pool per kind, so nothing is"
        " shrunk to the smallest node"
    )
    for (shape, taints), members in ordered:
        others = [m for k, m in ordered if m is not members]
        extra = _telling_label(members, others, label)
        suffix = pool_name(extra[1]) if extra else shape.label()
        if taints and not extra:
            suffix += "-" + pool_name(sorted(taints)[0][0].rpartition("/")[2])
        notes = [note]
        if not extra:
            notes.append(
                "no stable label tells these nodes apart from the pool's others: "
                "pods sent here may also run on those"
            )
        name = _unique(f"{base[:40]}-{suffix}"[:63].strip("-"), taken)
        out.append(_pool(name, label, value, members, dict([extra]) if extra else {}, notes))
    return out


def _telling_label(
    members: list[Node], others: list[list[Node]], pool_label: str
) -> tuple[str, str] | None:
    """A selector label common to `members` that no node of the other kinds has."""
    common = common_labels(members, pool_label)
    ranked = sorted(common.items(), key=lambda kv: (kv[0] != INSTANCE_TYPE, kv[0]))
    for key, v in ranked:
        if all(n.labels.get(key) != v for group in others for n in group):
            return key, v
    return None


def _unique(name: str, taken: set[str]) -> str:
    out, i = name, 2
    while out in taken:
        out = f"{name[:58]}-{i}"
        i += 1
    taken.add(out)
    return out


def _pool(
    name: str, label: str, value: str, nodes: list[Node], extra: dict[str, str], notes: list[str]
) -> ImportedTarget:
    shape = nodes[0].shape
    fields: dict[str, Any] = {"name": name, "nodes": len(nodes)}
    if shape.gpus:
        fields["gpus_per_node"] = shape.gpus
        fields["gpu_type"] = shape.gpu_type
    fields["cpus_per_node"] = shape.cpus
    fields["memory_per_node"] = format_memory(shape.memory)
    if shape.mig:
        fields["mig"] = [{"gpus": g, "slices": dict(cut)} for g, cut in shape.mig]
        if shape.mig_single:
            fields["mig_strategy"] = "single"
    labels = common_labels(nodes, label)
    labels[label] = value  # the pool label always selects the pool, whatever the filters
    labels.update(extra)
    fields["labels"] = dict(sorted(labels.items()))
    if nodes[0].taints:
        fields["taints"] = _taints(nodes[0].taints)
    names = sorted(n.name for n in nodes)
    if all(NODE_NAME.fullmatch(n) for n in names):
        fields["node_names"] = names
    notes = [f"{len(nodes)} × {shape.describe()}", *notes]
    if value and pool_name(value) != value:
        notes.append(f'{label}={value}: named "{name}" (a pool name must be a DNS-1123 label)')
    notes += sorted({note for n in nodes for note in n.notes})
    return ImportedTarget(fields, notes)
