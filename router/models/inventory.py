"""The inventory: clusters and their targets — Slurm partitions and Kubernetes node pools.

Per-node quantities are in base units: memory in MiB, max_time in seconds. `gpu_type: any`
states GPUs of no stated type (untyped Slurm GRES `gpu:8`, a Kubernetes pool without a GPU
product label): only workloads with gpu_type `any` fit there. A target does not know its
cluster; `Inventory.targets()` pairs them as `TargetRef`s with a stable id "cluster/target".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, PrivateAttr, model_validator
from pydantic_core import PydanticCustomError

from router.models.fields import (
    Count,
    DnsLabel,
    Duration,
    Flag,
    Frozen,
    LabelKey,
    Labels,
    LabelValue,
    Memory,
    Money,
    PositiveCount,
    Slug,
    SlurmName,
    pattern,
)
from router.models.k8s import KubernetesCluster

MIG_PROFILE = re.compile(r"[0-9][a-z0-9.+-]*")
FEATURE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _cross(field: str, message: str, hint: str | None = None) -> PydanticCustomError:
    """An error about several fields, located at `field` by the loader (ctx["field"]), with
    an optional hint the loader prints under it (ctx["hint"])."""
    ctx = {"field": field} | ({"hint": hint} if hint else {})
    return PydanticCustomError("router_cross", message, ctx)


Feature = Annotated[
    str,
    BeforeValidator(
        pattern(FEATURE, "a feature name (letters, digits, '.', '_' and '-', at most 63)")
    ),
]
MigProfile = Annotated[
    str, BeforeValidator(pattern(MIG_PROFILE, 'a MIG profile such as "1g.10gb"', 32))
]


GPU_TAINT_KEYS = frozenset({"nvidia.com/gpu", "amd.com/gpu"})


class Taint(Frozen):
    """A Kubernetes node taint. A workload tolerates only taints it is entitled to: the GPU
    taint when it uses GPUs, others when its rule says `tolerate = ["key", ...]`."""

    key: LabelKey
    value: LabelValue = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]

    @property
    def gpu(self) -> bool:
        """The taint GPU nodes carry (GKE, EKS: nvidia.com/gpu; AMD: amd.com/gpu; AKS: sku=gpu)."""
        return self.key in GPU_TAINT_KEYS or (self.key == "sku" and self.value == "gpu")

    def entitled(self, gpus: bool, tolerate: Iterable[str]) -> bool:
        """Whether a workload (using GPUs or not, under a rule tolerating these keys) may
        tolerate this taint."""
        return (gpus and self.gpu) or self.key in tolerate


def untolerated(taints: Iterable[Taint], gpus: bool, tolerate: Iterable[str]) -> list[Taint]:
    """The taints that keep such a workload off a pool: NoSchedule and NoExecute ones it is not
    entitled to (PreferNoSchedule only steers the scheduler, so it never keeps one off)."""
    keys = set(tolerate)
    return [t for t in taints if t.effect != "PreferNoSchedule" and not t.entitled(gpus, keys)]


class Target(Frozen):
    """What partitions and node pools have in common: a set of identical nodes."""

    name: DnsLabel
    nodes: Count
    gpus_per_node: Count = 0
    gpu_type: Slug | None = Field(
        None,
        description="a GPU model such as h100, or any for GPUs of no stated type; required"
        " when gpus_per_node > 0",
    )
    cpus_per_node: PositiveCount
    memory_per_node: Memory = Field(description='MiB; input "2TiB" or a number of MiB')
    max_time: Duration | None = Field(None, description='seconds; input "72h"')
    features: list[Feature] = Field(default_factory=list)
    labels: Labels = Field(default_factory=dict)
    cost_per_gpu_hour: Money = 0.0
    cost_per_node_hour: Money = 0.0

    @model_validator(mode="after")
    def _gpu_type_given(self) -> Target:
        if self.gpus_per_node > 0 and self.gpu_type is None:
            raise _cross(
                "gpus_per_node",
                f"gpus_per_node is {self.gpus_per_node}: a target with GPUs must state gpu_type",
                hint="give the GPU model (gpu_type: h100), or gpu_type: any for GPUs of no"
                " stated type (untyped Slurm GRES gpu:8, no GPU product label)",
            )
        return self

    @property
    def untyped_gpus(self) -> bool:
        """GPUs of no stated type (`gpu_type: any`): only workloads asking for any fit."""
        return self.gpus_per_node > 0 and self.gpu_type == "any"

    @property
    def capacity_nodes(self) -> int:
        """The most nodes the target can have: the autoscaler's ceiling, else its nodes."""
        return self.nodes


class Partition(Target):
    """A Slurm partition."""

    qos: SlurmName | None = None
    account: SlurmName | None = None
    default: Flag = False


class NodePool(Target):
    """A Kubernetes node pool; `max_nodes` is the cluster autoscaler's ceiling."""

    max_nodes: Count | None = None
    taints: list[Taint] = Field(default_factory=list)
    mig: dict[MigProfile, PositiveCount] = Field(
        default_factory=dict, description='MIG profile such as "1g.10gb" → slices per node'
    )
    namespace: DnsLabel | None = None

    @model_validator(mode="after")
    def _pool_shape(self) -> NodePool:
        if self.max_nodes is not None and self.max_nodes < self.nodes:
            raise _cross(
                "max_nodes", f"max_nodes ({self.max_nodes}) must be ≥ nodes ({self.nodes})"
            )
        if self.mig and self.gpus_per_node == 0:
            raise _cross("mig", "mig slices need GPUs, but gpus_per_node is 0")
        return self

    @property
    def capacity_nodes(self) -> int:
        return self.max_nodes if self.max_nodes is not None else self.nodes


def _unique(names: list[str]) -> str | None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


class Cluster(Frozen):
    """A Slurm cluster (partitions) or a Kubernetes cluster (node pools)."""

    name: DnsLabel
    backend: Literal["slurm", "kubernetes"]
    partitions: list[Partition] = Field(default_factory=list)
    node_pools: list[NodePool] = Field(default_factory=list)
    labels: Labels = Field(default_factory=dict)
    kubernetes: KubernetesCluster = Field(
        default_factory=KubernetesCluster, description="Kubernetes only: priority classes"
    )

    @model_validator(mode="after")
    def _targets_match_backend(self) -> Cluster:
        if self.backend == "slurm":
            if self.node_pools:
                raise _cross("node_pools", "a slurm cluster has partitions, not node_pools")
            if not self.partitions:
                raise _cross("backend", "a slurm cluster must list at least one partition")
            if sum(p.default for p in self.partitions) > 1:
                raise _cross("partitions", "at most one partition may be the default")
        else:
            if self.partitions:
                raise _cross("partitions", "a kubernetes cluster has node_pools, not partitions")
            if not self.node_pools:
                raise _cross("backend", "a kubernetes cluster must list at least one node pool")
        duplicate = _unique([t.name for t in self.targets])
        if duplicate:
            field = "partitions" if self.backend == "slurm" else "node_pools"
            raise _cross(field, f'two targets are named "{duplicate}" in cluster "{self.name}"')
        return self

    @property
    def targets(self) -> list[Partition | NodePool]:
        return [*self.partitions, *self.node_pools]


@dataclass(frozen=True)
class TargetRef:
    """A target with the cluster it belongs to; `id` is "cluster/target"."""

    cluster: str
    backend: str
    target: Partition | NodePool
    id: str
    # The cluster's Kubernetes settings (priority classes), for the emitter.
    kubernetes: KubernetesCluster = field(default_factory=KubernetesCluster, compare=False)


class Inventory(Frozen):
    """Every cluster router may place workloads on."""

    clusters: list[Cluster]

    _refs: dict[str, TargetRef] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _unique_clusters(self) -> Inventory:
        duplicate = _unique([c.name for c in self.clusters])
        if duplicate:
            raise _cross("clusters", f'two clusters are named "{duplicate}"')
        return self

    def model_post_init(self, context: Any, /) -> None:
        refs = [
            TargetRef(c.name, c.backend, t, f"{c.name}/{t.name}", kubernetes=c.kubernetes)
            for c in self.clusters
            for t in c.targets
        ]
        self._refs = {r.id: r for r in sorted(refs, key=lambda r: r.id)}

    def targets(self) -> list[TargetRef]:
        """Every target of every cluster, sorted by id."""
        return list(self._refs.values())

    def target(self, id: str) -> TargetRef:
        """The target with this "cluster/target" id; KeyError if there is none."""
        try:
            return self._refs[id]
        except KeyError:
            raise KeyError(f'no target "{id}" in the inventory') from None

    def cluster(self, name: str) -> Cluster:
        for c in self.clusters:
            if c.name == name:
                return c
        raise KeyError(f'no cluster "{name}" in the inventory')
