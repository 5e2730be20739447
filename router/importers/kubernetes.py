"""Kubernetes → inventory: `kubectl get nodes -o json` → one cluster of node pools.

Pure: the caller runs kubectl (or reads a saved copy). The result is inventory YAML that
`router plan` accepts, written by the shared `render_inventory`, with this importer's notes as
comments above what they are about.

Decisions:

* Pools. Nodes are grouped by one pool label: `--pool-label`, else the first of `POOL_LABELS`
  that any node carries (`router.dev/pool`, then the GKE, EKS, Karpenter and AKS pool labels,
  then `node.kubernetes.io/instance-type`). One label for the whole cluster, not a fallback per
  node: mixing keys would give pools whose node selectors overlap (an instance-type "pool"
  would also select nodes of a named pool of that type). Nodes without the label are left out
  with a comment rather than grouped into a "default" pool: such a pool has no label that
  selects only its nodes (its common labels, such as kubernetes.io/os, match every node), so
  pods router sends there could land anywhere and its capacity would be counted twice. The
  pool label is always one of the pool's labels, so the node selector router writes selects
  exactly that pool. A label value that is not a DNS-1123 label (`g5.12xlarge`) becomes the
  pool's name with other characters as '-'; the selector keeps the real value.
* Labels: the pool's common labels (same value on every node), less those that would make a
  bad node selector: `kubernetes.io/hostname` (per node), the deprecated `beta.kubernetes.io/*`
  and `failure-domain.beta.kubernetes.io/*` copies, and labels of the platform's own domains
  (kubernetes.io, k8s.io, nvidia.com, the clouds' and Karpenter's) apart from `KEEP_LABELS`:
  those carry driver, image and feature-discovery state (`nvidia.com/cuda.driver.major`,
  `eks.amazonaws.com/nodegroup-image`, NFD's `feature.node.kubernetes.io/*`) that changes
  under running nodes and would leave pods Pending after an upgrade. A zone label is kept when
  the whole pool is in one zone. Users' own labels (other domains, or none) are all kept.
* Taints: those on every node of the pool (same key, value and effect), except the ones the
  node lifecycle puts on and takes off by itself (`node.kubernetes.io/*` such as unschedulable
  or not-ready, the cloud provider's `uninitialized`, the autoscalers' deletion marks). A taint
  on only some nodes is left out with a comment: router's pods will not tolerate it, so they
  avoid those nodes while the pool's capacity counts them.
* Resources per node: GPUs from `status.capacity["nvidia.com/gpu"]` (installed capacity; a
  cordoned node counts too, like Slurm's importer); CPUs from allocatable (else capacity),
  rounded down to whole CPUs ("95500m" → 95); memory from allocatable, in MiB, rounded down.
  MIG: each `nvidia.com/mig-<profile>` capacity is that profile's slices per node (the GPU
  operator's "mixed" strategy). With every GPU in MIG mode `nvidia.com/gpu` is 0; the pool then
  takes its GPU count from the `nvidia.com/gpu.count` label (GPU feature discovery), else 1,
  with a comment, since an inventory with MIG slices needs GPUs. With the "single" strategy
  (a product like "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb") each `nvidia.com/gpu` is one slice and is
  imported as such.
* Heterogeneous pools (nodes that differ in GPUs, CPUs, memory, MIG slices or GPU type): router
  models a pool as identical nodes, so the pool gets the minimum per resource (a profile some
  node lacks is dropped) and the most common GPU type; a comment lists every node shape.
  Anything placed there then fits any of its nodes; capacity is understated, never overstated.
* GPU type: the `nvidia.com/gpu.product` label (else GKE's `cloud.google.com/gke-accelerator`,
  else EKS's `k8s.amazonaws.com/accelerator`), reduced to a short type where one is
  recognisable: the first word of the product, after the vendor words "nvidia", "tesla" and
  "geforce", that is one of `GPU_MODELS` ("NVIDIA-H100-80GB-HBM3" → h100, "NVIDIA-A100-SXM4-80GB"
  → a100, "Tesla-T4" → t4, "NVIDIA-A10G" → a10g, "NVIDIA-L40S" → l40s, "nvidia-tesla-a100" →
  a100). Memory size and form factor are dropped: a100 40GB and 80GB are both "a100", which is
  what workloads ask for. Anything else becomes a slug of the product without the vendor words
  ("NVIDIA-RTX-A6000" → rtx-a6000). GPUs without any product label (the plain `nvidia.com/gpu`
  resource, no GPU feature discovery) get `gpu_type: any`, GPUs of no stated type (only
  workloads asking for any GPU type go there), and a comment; so does a label that names no
  model ("NVIDIA"), without the comment.
* Not in a node list, so not imported: the autoscaler's ceiling (max_nodes), costs, namespaces.
  The header says to add them.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from router.errors import LoadError
from router.importers import ImportedCluster, ImportedTarget, render_inventory
from router.quantity import format_memory

POOL_LABELS = (
    "router.dev/pool",
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "agentpool",
    "node.kubernetes.io/instance-type",
)
GPU = "nvidia.com/gpu"
GPU_PRODUCT = "nvidia.com/gpu.product"
GPU_COUNT = "nvidia.com/gpu.count"
PRODUCT_LABELS = (GPU_PRODUCT, "cloud.google.com/gke-accelerator", "k8s.amazonaws.com/accelerator")
MIG_RESOURCE = "nvidia.com/mig-"
HOSTNAME = "kubernetes.io/hostname"

# Short GPU types, by the product's model word. Longer names that share a prefix (a10g, l40s)
# are separate entries: the match is on the whole word.
GPU_MODELS = frozenset(
    {
        "gb200",
        "b200",
        "b100",
        "gh200",
        "h200",
        "h100",
        "h800",
        "h20",
        "a800",
        "a100",
        "a40",
        "a30",
        "a16",
        "a10g",
        "a10",
        "a2",
        "l40s",
        "l40",
        "l20",
        "l4",
        "t4",
        "v100",
        "p100",
        "p40",
        "p4",
        "k80",
    }
)
VENDOR_WORDS = frozenset({"nvidia", "tesla", "geforce"})

# Labels of the platform's own domains that make a good node selector: stable for a node's
# life and meaningful for placement. Every other label of those domains is left out.
KEEP_LABELS = frozenset(
    {
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/zone",
        GPU_PRODUCT,
        "cloud.google.com/gke-accelerator",
        "cloud.google.com/gke-spot",
        "cloud.google.com/gke-preemptible",
        "eks.amazonaws.com/capacityType",
        "karpenter.sh/capacity-type",
        "kubernetes.azure.com/scalesetpriority",
        *POOL_LABELS,
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
)
# Taints the node lifecycle and the autoscalers add and remove by themselves.
TRANSIENT_TAINT_PREFIXES = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/")
TRANSIENT_TAINTS = frozenset(
    {
        "ToBeDeletedByClusterAutoscaler",
        "DeletionCandidateOfClusterAutoscaler",
        "karpenter.sh/disrupted",
        "karpenter.sh/disruption",
    }
)
EFFECTS = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?")
MIB = 1 << 20
_SUFFIX: dict[str, Decimal] = {
    k: Decimal(str(v))
    for k, v in {
        "Ki": 1 << 10,
        "Mi": 1 << 20,
        "Gi": 1 << 30,
        "Ti": 1 << 40,
        "Pi": 1 << 50,
        "Ei": 1 << 60,
        "n": Decimal("1e-9"),
        "u": Decimal("1e-6"),
        "m": Decimal("1e-3"),
        "": 1,
        "k": 10**3,
        "M": 10**6,
        "G": 10**9,
        "T": 10**12,
        "P": 10**15,
        "E": 10**18,
    }.items()
}
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)([A-Za-z]*)")

Taint = tuple[str, str, str]  # key, value, effect


# ---- parsing --------------------------------------------------------------------------------


def parse_quantity(text: Any) -> Decimal:
    """A Kubernetes resource quantity ("95500m", "1056896024Ki", "8", "1e3") as a number."""
    m = _QUANTITY.fullmatch(str(text).strip())
    if not m or m.group(2) not in _SUFFIX:
        raise ValueError(f"{text!r} is not a Kubernetes quantity")
    try:
        return Decimal(m.group(1)) * _SUFFIX[m.group(2)]
    except InvalidOperation:
        raise ValueError(f"{text!r} is not a Kubernetes quantity") from None


def gpu_type_of(product: str) -> str:
    """The short GPU type for a product label value (see the module docstring)."""
    words = [w for w in re.split(r"[^a-z0-9.]+", product.lower()) if w]
    words = [w for w in words if w not in VENDOR_WORDS]
    for w in words:
        if w in GPU_MODELS:
            return w
    slug = re.sub(r"[^a-z0-9.]+", "-", "-".join(words)).strip("-.")[:63].strip("-.")
    return slug or "any"  # a label that names no model: GPUs of no stated type


@dataclass(frozen=True, order=True)
class Shape:
    """One node as a pool member: what router reads of it."""

    gpus: int
    gpu_type: str | None
    cpus: int
    memory: int  # MiB
    mig: tuple[tuple[str, int], ...]
    all_mig: bool = False  # nvidia.com/gpu is 0: every GPU is cut into slices

    def describe(self) -> str:
        kind = "untyped" if self.gpu_type == "any" else self.gpu_type
        gpus = f"{self.gpus} {kind} GPUs" if self.gpus else "no GPUs"
        mig = "".join(f", {n} × mig {p}" for p, n in self.mig)
        return f"{gpus}{mig}, {self.cpus} CPUs, {format_memory(self.memory)}"


@dataclass(frozen=True)
class Node:
    name: str
    labels: dict[str, str]
    taints: frozenset[Taint]
    shape: Shape
    notes: tuple[str, ...]
    cordoned: bool


def _resource(resources: dict[str, Any], key: str, node: str) -> Decimal | None:
    if key not in resources:
        return None
    try:
        return parse_quantity(resources[key])
    except ValueError as e:
        raise LoadError(f"node {node}: {key}: {e}") from None


def _node(raw: dict[str, Any]) -> Node:
    meta = raw.get("metadata") or {}
    name = str(meta.get("name") or "?")
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    status = raw.get("status") or {}
    capacity = status.get("capacity") or {}
    allocatable = status.get("allocatable") or {}
    notes: list[str] = []

    def amount(key: str) -> Decimal:
        value = _resource(allocatable, key, name)
        if value is None:
            value = _resource(capacity, key, name)
        return value if value is not None else Decimal(0)

    cpus = int(amount("cpu"))  # int() of a Decimal rounds toward zero: floor for these
    memory = int(amount("memory") // MIB)
    gpus = int(_resource(capacity, GPU, name) or 0)
    mig = {
        key[len(MIG_RESOURCE) :]: int(_resource(capacity, key, name) or 0)
        for key in capacity
        if key.startswith(MIG_RESOURCE)
    }
    mig = {p: n for p, n in mig.items() if n > 0}
    product = next((labels[k] for k in PRODUCT_LABELS if labels.get(k)), None)
    gpu_type: str | None = None
    if gpus or mig:
        if product:
            gpu_type = gpu_type_of(product)
            if "-mig-" in product.lower():
                notes.append(
                    f"MIG single strategy ({product}): each nvidia.com/gpu is one MIG "
                    "slice, imported as a GPU"
                )
        else:
            gpu_type = "any"
            notes.append(
                f"GPUs without a product label ({GPU_PRODUCT}): gpu_type any, so only "
                "workloads asking for any GPU type go here; run GPU feature discovery "
                "or set gpu_type here"
            )
    if mig and not gpus:
        count = labels.get(GPU_COUNT, "")
        gpus = int(count) if count.isdigit() and int(count) > 0 else 1
        notes.append(
            f"every GPU is in MIG mode (nvidia.com/gpu is 0); gpus_per_node "
            f"is {gpus} from "
            + (f"the {GPU_COUNT} label" if count.isdigit() else "a guess")
            + ", but only MIG work can run here"
        )
    taints = frozenset(
        (str(t.get("key", "")), str(t.get("value") or ""), str(t.get("effect", "")))
        for t in (raw.get("spec") or {}).get("taints") or []
        if isinstance(t, dict)
    )
    shape = Shape(
        gpus,
        gpu_type,
        cpus,
        memory,
        tuple(sorted(mig.items())),
        bool(mig) and not int(_resource(capacity, GPU, name) or 0),
    )
    cordoned = bool((raw.get("spec") or {}).get("unschedulable"))
    return Node(name, labels, taints, shape, tuple(notes), cordoned)


# ---- pools ----------------------------------------------------------------------------------


def _transient(taint: Taint) -> bool:
    key = taint[0]
    return key in TRANSIENT_TAINTS or key.startswith(TRANSIENT_TAINT_PREFIXES)


def _system(key: str) -> bool:
    prefix, slash, _ = key.rpartition("/")
    return bool(slash) and any(prefix == d or prefix.endswith("." + d) for d in SYSTEM_DOMAINS)


def _selector_label(key: str, pool_label: str) -> bool:
    """Whether a label common to a pool belongs in its node selector (module docstring)."""
    if key == pool_label:
        return True
    if key == HOSTNAME:
        return False
    return key in KEEP_LABELS or not _system(key)


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


def _common_labels(nodes: list[Node], pool_label: str) -> dict[str, str]:
    first = nodes[0].labels
    common = {k: v for k, v in first.items() if all(n.labels.get(k) == v for n in nodes[1:])}
    return {
        k: v
        for k, v in sorted(common.items())
        if _selector_label(k, pool_label) and LABEL_VALUE.fullmatch(v)
    }


def _taints(pool: str, nodes: list[Node]) -> tuple[list[dict[str, str]], list[str]]:
    every = frozenset.intersection(*(n.taints for n in nodes))
    notes = []
    out = []
    for key, value, effect in sorted(every):
        if _transient((key, value, effect)):
            continue
        if effect not in EFFECTS or not LABEL_VALUE.fullmatch(value):
            notes.append(f"taint {key}={value}:{effect} left out: not a valid taint")
            continue
        taint = {"key": key}
        if value:
            taint["value"] = value
        taint["effect"] = effect
        out.append(taint)
    partial = Counter(t for n in nodes for t in n.taints - every if not _transient(t))
    for (key, value, effect), count in sorted(partial.items()):
        shown = f"{key}={value}:{effect}" if value else f"{key}:{effect}"
        notes.append(
            f"taint {shown} is on {count} of {len(nodes)} nodes only: left out, so "
            "router's pods avoid those nodes while the pool counts them"
        )
    return out, notes


def _shape(pool: str, nodes: list[Node]) -> tuple[Shape, list[str]]:
    """The pool's shape (minimum per resource) and, when nodes differ, comments saying so."""
    shapes = [n.shape for n in nodes]
    types = Counter(s.gpu_type for s in shapes if s.gpu_type)
    gpu_type = min(types, key=lambda t: (-types[t], t)) if types else None
    gpus = min(s.gpus for s in shapes)
    profiles = set(dict(shapes[0].mig)).intersection(*(dict(s.mig) for s in shapes[1:]))
    mig = tuple((p, min(dict(s.mig)[p] for s in shapes)) for p in sorted(profiles))
    if not gpus:
        gpu_type, mig = None, ()
    shape = Shape(
        gpus,
        gpu_type,
        min(s.cpus for s in shapes),
        min(s.memory for s in shapes),
        mig,
        any(s.all_mig for s in shapes),
    )
    counts = Counter(shapes)
    if len(counts) == 1:
        return shape, []
    lines = [
        f"Heterogeneous pool {pool}: {len(counts)} node shapes. router models a pool as "
        "identical nodes, so this pool has the minimum of each resource"
        + (" and the most common GPU type" if len(types) > 1 else "")
        + " (anything placed here fits every node):"
    ]
    for s, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        example = min(n.name for n in nodes if n.shape == s)
        lines.append(f"  {count} × {s.describe()}, e.g. {example}")
    return shape, lines


def _pool(name: str, label: str, value: str, nodes: list[Node]) -> ImportedTarget:
    shape, notes = _shape(name, nodes)
    fields: dict[str, Any] = {"name": name, "nodes": len(nodes)}
    if shape.gpus:
        fields["gpus_per_node"] = shape.gpus
        fields["gpu_type"] = shape.gpu_type
    if shape.cpus < 1 or shape.memory < 1:
        raise LoadError(f"node pool {name}: a node has less than one allocatable CPU or MiB")
    fields["cpus_per_node"] = shape.cpus
    fields["memory_per_node"] = format_memory(shape.memory)
    if shape.mig:
        # nvidia.com/gpu counts the whole GPUs only; each slice count comes from GPUs cut into
        # slices of that profile (7 // compute slices per GPU on A100/H100: 1g → 7, 3g → 2).
        groups: list[dict[str, Any]] = []
        cut = 0
        for profile, n in shape.mig:
            lead = profile.split("g", 1)[0]
            per_gpu = max(1, 7 // int(lead)) if lead.isdigit() and int(lead) else 1
            groups.append({"gpus": -(-n // per_gpu), "slices": {profile: min(n, per_gpu)}})
            cut += -(-n // per_gpu)
        fields["mig"] = groups
        whole = 0 if shape.all_mig else shape.gpus
        fields["gpus_per_node"] = max(shape.gpus, whole + cut)
    labels = _common_labels(nodes, label)
    labels[label] = value  # the pool label always selects the pool, whatever the filters
    fields["labels"] = dict(sorted(labels.items()))
    taints, taint_notes = _taints(name, nodes)
    if taints:
        fields["taints"] = taints
    if name != value:
        notes.append(f'{label}={value}: named "{name}" (a pool name must be a DNS-1123 label)')
    notes += sorted({note for n in nodes for note in n.notes})
    notes += taint_notes
    cordoned = sorted(n.name for n in nodes if n.cordoned)
    if cordoned:
        notes.append(f"cordoned, but counted: {', '.join(cordoned)}")
    return ImportedTarget(fields, notes)


def _choose_label(nodes: list[Node], pool_label: str | None) -> str:
    if pool_label:
        return pool_label
    for label in POOL_LABELS:
        if any(label in n.labels for n in nodes):
            return label
    raise LoadError(
        "no node carries a pool label (" + ", ".join(POOL_LABELS) + ")",
        hint="name the label that groups nodes into pools with --pool-label KEY",
    )


def import_cluster(
    data: Any, pool_label: str | None = None, cluster: str = "kubernetes"
) -> ImportedCluster:
    """The inventory cluster for `kubectl get nodes -o json` output, with notes."""
    if not DNS_LABEL.fullmatch(cluster):
        raise LoadError(
            f"cluster name {cluster!r} is not a DNS-1123 label",
            hint="name the cluster with --cluster NAME (e.g. gke-prod)",
        )
    if isinstance(data, dict) and data.get("kind") == "Node":
        data = {"items": [data]}
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        raise LoadError(
            'expected the output of `kubectl get nodes -o json` (a mapping with an "items" list)'
        )
    nodes = [_node(raw) for raw in data["items"] if isinstance(raw, dict)]
    if not nodes:
        raise LoadError("the node list is empty")
    label = _choose_label(nodes, pool_label)
    groups: dict[str, list[Node]] = defaultdict(list)
    notes: list[str] = []
    for n in nodes:
        if label in n.labels:
            groups[n.labels[label]].append(n)
    if not groups:
        raise LoadError(
            f"no node has the label {label}",
            hint="name the label that groups nodes into pools with --pool-label KEY",
        )
    unlabelled = sorted(n.name for n in nodes if label not in n.labels)
    if unlabelled:
        shown = ", ".join(unlabelled[:10]) + (
            f" and {len(unlabelled) - 10} more" if len(unlabelled) > 10 else ""
        )
        notes.append(
            f"{len(unlabelled)} node(s) without the label {label} left out (no label "
            f"selects them apart from other pools): {shown}"
        )
    targets: list[ImportedTarget] = []
    used: set[str] = set()
    for value in sorted(groups):
        name = pool_name(value)
        if name in used:  # two values that clean up alike ("a.b", "a-b")
            digest = hashlib.sha256(value.encode("utf-8")).hexdigest()[:8]
            name = f"{name[:54].strip('-')}-{digest}"
        used.add(name)
        if not LABEL_VALUE.fullmatch(value):
            notes.append(f"pool {label}={value!r} left out: not a valid label value")
            continue
        targets.append(_pool(name, label, value, groups[value]))
    if not targets:
        raise LoadError(f"no node pool could be imported: {'; '.join(notes) or 'no nodes'}")
    header = [
        f'Inventory of Kubernetes cluster "{cluster}", imported by `router inventory import '
        "kubernetes`",
        f"from `kubectl get nodes -o json`: {len(nodes)} nodes, grouped into pools by the "
        f"label {label}.",
        "Node counts include every node, cordoned or not. A node list does not say the "
        "autoscaler's ceiling, costs or namespaces: add max_nodes, cost_per_gpu_hour and "
        "namespace here (a new import writes the file afresh).",
    ]
    return ImportedCluster(cluster, "kubernetes", targets, header, notes)


def import_nodes(
    data: dict[str, Any], pool_label: str | None = None, cluster: str = "kubernetes"
) -> str:
    """Inventory YAML for `kubectl get nodes -o json` output (see the module docstring)."""
    return render_inventory(import_cluster(data, pool_label=pool_label, cluster=cluster))
