"""One Kubernetes node as capacity: usable or left out (and why), its GPUs, CPUs, memory.

* Usable: Ready, schedulable (not cordoned), and without a taint that keeps ordinary pods off
  for reasons of its own: the node lifecycle's (not-ready, unreachable, unschedulable, ...),
  the autoscalers' deletion marks and the control plane's. Other NoSchedule/NoExecute taints
  (nvidia.com/gpu, dedicated=...) stay: such nodes form a pool of their own whose taints are a
  target attribute, and only workloads a rule sends there get the tolerations.
* CPUs and memory are allocatable (else capacity), rounded down to whole CPUs and MiB.
* GPUs: `nvidia.com/gpu` (or `amd.com/gpu`) capacity, typed by the GPU operator's product label
  (else GKE's or EKS's accelerator label), normalised by router.importers.gpu. MIG: the "mixed"
  strategy's `nvidia.com/mig-<profile>` counts become a layout of cut GPUs (the fewest that
  hold them, one GPU carrying several profiles where NVIDIA's tables allow, or as many as
  `nvidia.com/gpu.count` less `nvidia.com/gpu` leaves in MIG mode: GPU feature discovery
  counts every physical GPU there, cut or not); the "single"
  strategy (product "...-MIG-1g.5gb") cuts every GPU alike. Time-sliced or MPS-shared GPUs
  (`nvidia.com/gpu.replicas` > 1) count as the physical GPUs, flagged; a vGPU profile
  ("GRID-A100-4C") is a slice of a GPU, so its gpu_type says vgpu and whole-GPU work does not
  go there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from router.errors import LoadError
from router.importers import one_line
from router.importers.gpu import cut_text, gpu_type_of, mig_layout, mig_profile, slices_per_gpu
from router.importers.kubernetes.quantity import parse_quantity
from router.models.mig_geometry import Cut
from router.quantity import format_memory

GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
GPU_PRODUCT = "nvidia.com/gpu.product"
GPU_COUNT = "nvidia.com/gpu.count"
PRODUCT_LABELS = (
    GPU_PRODUCT,
    "cloud.google.com/gke-accelerator",
    "k8s.amazonaws.com/accelerator",
    "karpenter.k8s.aws/instance-gpu-name",
)
MIG_RESOURCE = "nvidia.com/mig-"
MIB = 1 << 20
VGPU = re.compile(r"(?i)(?:grid[- _])?(?:nvidia[- _])?([a-z]+\d+[a-z]?)[- _](\d+[abcq])$")

Taint = tuple[str, str, str]  # key, value, effect
# Taints that say the node cannot take pods now, whatever the pool: the node is left out.
LIFECYCLE_PREFIXES = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/")
LIFECYCLE = frozenset(
    {
        "ToBeDeletedByClusterAutoscaler",
        "DeletionCandidateOfClusterAutoscaler",
        "karpenter.sh/disrupted",
        "karpenter.sh/disruption",
        "karpenter.sh/unregistered",
    }
)
CONTROL_PLANE = frozenset(
    {
        "node-role.kubernetes.io/control-plane",
        "node-role.kubernetes.io/master",
        "node-role.kubernetes.io/etcd",
    }
)
# Nodes for system pods only (AKS system pools), and virtual nodes that are not machines
# (EKS Fargate, virtual-kubelet): ordinary pods do not run there as on a node.
SYSTEM_ONLY = frozenset({"CriticalAddonsOnly"})
VIRTUAL = ("eks.amazonaws.com/compute-type", "virtual-kubelet.io/provider")


@dataclass(frozen=True, order=True)
class Shape:
    gpus: int  # physical GPUs, whole or cut
    gpu_type: str | None
    cpus: int
    memory: int  # MiB
    mig: tuple[tuple[int, Cut], ...] = ()  # (gpus, the cut of each)
    mig_single: bool = False

    def describe(self) -> str:
        gpus = f"{self.gpus} × {self.gpu_type}" if self.gpus else "no GPUs"
        mig = "".join(f", {g} cut into {cut_text(c)}" for g, c in self.mig)
        return f"{gpus}{mig}, {self.cpus} CPUs, {format_memory(self.memory)}"

    def label(self) -> str:
        if self.gpus:
            kind = "gpu" if self.gpu_type == "any" else str(self.gpu_type)
            return f"{kind}x{self.gpus}"
        return f"cpu{self.cpus}"


@dataclass(frozen=True)
class Node:
    name: str
    labels: dict[str, str]
    taints: frozenset[Taint]  # the ones that stay (pool taints)
    shape: Shape
    notes: tuple[str, ...]
    problem: str | None  # why it is left out; None: usable


def _resource(resources: dict[str, Any], key: str, node: str) -> Decimal | None:
    if key not in resources:
        return None
    try:
        return parse_quantity(resources[key])
    except ValueError as e:
        raise LoadError(f"node {node}: {key}: {e}") from None


def _ready(status: dict[str, Any]) -> str | None:
    for c in status.get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == "Ready":
            if str(c.get("status")) == "True":
                return None
            why = c.get("reason") or c.get("message") or f"Ready={c.get('status')}"
            return f"not Ready ({one_line(str(why), 80)})"
    return "not Ready (no Ready condition)"


def _problem(raw: dict[str, Any], taints: frozenset[Taint]) -> str | None:
    status = raw.get("status") or {}
    not_ready = _ready(status)
    if not_ready:
        return not_ready
    if (raw.get("spec") or {}).get("unschedulable"):
        return "cordoned (unschedulable)"
    for key, value, effect in sorted(taints):
        if effect not in ("NoSchedule", "NoExecute"):
            continue
        shown = f"{key}={value}:{effect}" if value else f"{key}:{effect}"
        if key in LIFECYCLE or key.startswith(LIFECYCLE_PREFIXES):
            return f"tainted {shown}"
        if key in CONTROL_PLANE:
            return f"control plane (taint {shown})"
        if key in SYSTEM_ONLY:
            return f"for system pods only (taint {shown})"
        if key in VIRTUAL:
            return f"a virtual node (taint {shown})"
    return None


def _gpus(
    name: str, labels: dict[str, str], capacity: dict[str, Any], allocatable: dict[str, Any]
) -> tuple[int, str | None, tuple[tuple[int, Cut], ...], bool, list[str]]:
    notes: list[str] = []

    # Allocatable: the device plugin takes unhealthy GPUs out of it; capacity keeps them.
    def usable(key: str) -> int:
        found = allocatable if key in allocatable else capacity
        return int(_resource(found, key, name) or 0)

    count = sum(usable(key) for key in GPU_RESOURCES)
    slices = {
        key[len(MIG_RESOURCE) :]: usable(key)
        for key in sorted({*capacity, *allocatable})
        if key.startswith(MIG_RESOURCE)
    }
    slices = {p: n for p, n in slices.items() if n > 0}
    if not count and not slices:
        return 0, None, (), False, notes
    product = next((labels[k] for k in PRODUCT_LABELS if labels.get(k)), "")
    physical = labels.get(GPU_COUNT, "")
    replicas = labels.get("nvidia.com/gpu.replicas", "1")
    sharing = labels.get("nvidia.com/gpu.sharing-strategy", "")
    base = re.sub(r"(?i)-shared$", "", product)
    single = mig_profile(base) if "-mig-" in base.lower() else None
    card = re.sub(r"(?i)-mig-.*$", "", base)  # the GPU's own name: its memory says the model
    gpu_type = gpu_type_of(card) if product else "any"
    if not product:
        notes.append(
            f"GPUs without a product label ({GPU_PRODUCT}): gpu_type any, so only "
            "workloads asking for any GPU type go here"
        )
    if single:  # every GPU cut alike: nvidia.com/gpu counts slices
        gpus = int(physical) if physical.isdigit() and int(physical) > 0 else 0
        per = count // gpus if gpus and count % gpus == 0 else 0
        if not per:  # no GPU count label: as many GPUs as the profile's slices need
            per = min(slices_per_gpu(single, card), count)
            gpus = -(-count // per)
            notes.append(
                f"MIG single strategy ({product}) without {GPU_COUNT}: {count} "
                f"slices taken as {gpus} GPUs of {per}"
            )
        notes.append(f"MIG single strategy: every GPU cut into {per} × {single}")
        return gpus, gpu_type, ((gpus, ((single, per),)),), True, notes
    shared_gpus = (replicas.isdigit() and int(replicas) > 1) or sharing in ("time-slicing", "mps")
    # GPUs in MIG mode: the physical ones the feature discovery counts, less the whole ones
    # the device plugin offers (not when shared: nvidia.com/gpu then counts replicas)
    # (capacity: a GPU the device plugin finds unhealthy leaves allocatable, not the count)
    whole = sum(int(_resource(capacity, k, name) or 0) for k in GPU_RESOURCES) or count
    in_mig = int(physical) - whole if physical.isdigit() and not shared_gpus else None
    if shared_gpus:
        shared = int(replicas) if replicas.isdigit() and int(replicas) > 1 else 1
        gpus = int(physical) if physical.isdigit() else max(1, count // shared)
        notes.append(
            f"GPUs shared by {sharing or 'time-slicing'} ({shared} replicas per GPU,"
            f" nvidia.com/gpu {count}): counted as the {gpus} physical GPUs"
        )
        count = gpus
    vgpu = (
        VGPU.search(base)
        if labels.get("nvidia.com/vgpu.present") == "true"
        or (product and VGPU.search(base) and "grid" in base.lower())
        else None
    )
    if vgpu:
        gpu_type = f"{gpu_type_of(vgpu.group(1))}-vgpu-{vgpu.group(2).lower()}"
        notes.append(
            f"vGPU profile {product}: a slice of a GPU, so gpu_type {gpu_type} "
            "(workloads asking for a whole GPU model do not go here)"
        )
    layout, mig_notes = (
        mig_layout(
            slices, card, in_mig if in_mig and in_mig > 0 else None, f"{GPU_COUNT} {physical}"
        )
        if slices
        else ([], [])
    )
    if slices and in_mig is not None and in_mig <= 0:
        mig_notes.append(
            f"{GPU_COUNT} {physical} leaves no GPU in MIG mode beside nvidia.com/gpu {count},"
            " yet the node has MIG slices: the slices' GPUs counted from the slices"
        )
    notes += mig_notes
    mig = tuple(layout)
    if mig and not count:
        notes.append("every GPU is in MIG mode (nvidia.com/gpu is 0): only MIG work runs here")
    return count + sum(g for g, _ in mig), gpu_type, mig, False, notes


def parse_node(raw: Any) -> Node:
    if not isinstance(raw, dict):
        raise LoadError(f"a node must be a mapping, got {type(raw).__name__}")
    meta = raw.get("metadata") or {}
    name = str(meta.get("name") or "")
    if not name:
        raise LoadError("a node without metadata.name")
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    status = raw.get("status") or {}
    capacity = status.get("capacity") or {}
    allocatable = status.get("allocatable") or {}

    def amount(key: str) -> Decimal:
        value = _resource(allocatable, key, name)
        if value is None:
            value = _resource(capacity, key, name)
        return value if value is not None else Decimal(0)

    taints = frozenset(
        (str(t.get("key", "")), str(t.get("value") or ""), str(t.get("effect", "")))
        for t in (raw.get("spec") or {}).get("taints") or []
        if isinstance(t, dict)
    )
    gpus, gpu_type, mig, single, notes = _gpus(name, labels, capacity, allocatable)
    shape = Shape(gpus, gpu_type, int(amount("cpu")), int(amount("memory") // MIB), mig, single)
    problem = _problem(raw, taints)
    if problem is None and labels.get("eks.amazonaws.com/compute-type") == "fargate":
        problem = "an EKS Fargate virtual node (one pod each)"
    if problem is None and labels.get("type") == "virtual-kubelet":
        problem = "a virtual-kubelet node, not a machine"
    if problem is None and (shape.cpus < 1 or shape.memory < 1):
        # router's workloads ask for whole CPUs: none fits on 940m
        problem = (
            f"less than one whole allocatable CPU or MiB (cpu {amount('cpu')}, memory "
            f"{amount('memory') // MIB}Mi): no workload fits"
        )
    kept = frozenset(
        t for t in taints if not (t[0] in LIFECYCLE or t[0].startswith(LIFECYCLE_PREFIXES))
    )
    return Node(name, labels, kept, shape, tuple(notes), problem)
