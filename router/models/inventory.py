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

from pydantic import BeforeValidator, Field, PrivateAttr, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from router.errors import did_you_mean
from router.hostlist import expand
from router.models import mig_geometry
from router.models.fields import (
    MAX_COUNT,
    SLURM_NAME,
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
    show,
)
from router.models.k8s import KubernetesCluster
from router.models.run import AbsPath, Mount, SetupLine

# NVIDIA's MIG profile names: <g>g.<memory>gb, a compute-instance form <c>c.<g>g.<memory>gb,
# and suffixes such as +me; so a typo (1g.10g, 1g.10gbb) is refused, not a profile of its own.
MIG_PROFILE = re.compile(r"(?:[1-7]c\.)?[1-7]g\.[0-9]+gb(?:\+[a-z]+(?:\.[a-z]+)*)*")
MIG_COMPUTE_SLICES = 7  # the most compute slices of a MIG GPU (A100, H100, H200, B200; A30 has 4)
FEATURE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _cross(
    field: str, message: str, hint: str | None = None, path: list[str | int] | None = None
) -> PydanticCustomError:
    """An error about several fields, located at `field` (or at `path` below the model) by
    the loader, with an optional hint the loader prints under it (ctx["hint"])."""
    ctx: dict[str, Any] = {"field": field} | ({"hint": hint} if hint else {})
    if path:
        ctx["path"] = path
    return PydanticCustomError("router_cross", message, ctx)


Feature = Annotated[
    str,
    BeforeValidator(
        pattern(FEATURE, "a feature name (letters, digits, '.', '_' and '-', at most 63)")
    ),
]
# Slurm's constraint syntax (features joined by & | , with brackets, counts and parentheses) and
# hostlists: nothing a shell or an #SBATCH line could read as more than one word.
Constraint = Annotated[
    str,
    BeforeValidator(
        pattern(
            re.compile(r"[A-Za-z0-9_.|&*\[\]()!:,-]+"), "a Slurm constraint such as ib&h100", 256
        )
    ),
]
NodeList = Annotated[
    str,
    BeforeValidator(
        pattern(re.compile(r"[A-Za-z0-9_.,\[\]-]+"), "a Slurm node list such as gpu[01-08]", 4096)
    ),
]


def _node_names(value: Any) -> Any:
    # A Slurm hostlist ("gpu[001-512],login1"), or a list of names and hostlists: the names.
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        return value  # the list type's own error says what is wrong
    try:
        return [name for item in items for name in expand(item)]
    except ValueError as e:
        raise PydanticCustomError("router", str(e)) from None


NodeNames = Annotated[
    list[SlurmName],
    BeforeValidator(_node_names),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "description": "a Slurm hostlist"},
                {"type": "array", "items": {"type": "string"}},
            ]
        }
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


class MigGroup(Frozen):
    """`gpus` of each node's GPUs, each cut into `slices` (MIG profile → slices per GPU).

    On Slurm, `gres_types` names each profile's GRES type as slurm.conf / gres.conf spell it
    (NVML autodetect: `nvidia_a100_1g.10gb`); a profile not listed is its own type name
    (`Type=1g.10gb`, the form of hand-written gres.conf files). Kubernetes ignores it.

    Profiles are NVIDIA's names (`1g.10gb`, `3g.40gb`, `1c.3g.20gb`, `1g.10gb+me`), and one
    GPU's slices take at most its 7 compute slices (`1g.10gb: 8` is refused). The node's
    `gpu_type` then says which GPU models the cut must fit (router/models/mig_geometry.py,
    NVIDIA's placement tables): memory slices and start slots (`3g.20gb: 2` and `1g.5gb: 1`
    take 9 of an A100-40GB's 8 memory slices), profiles of one model (`1g.5gb` is an
    A100-40GB's, `1g.20gb` an A100-80GB's or H100-80GB's), and a gpu_type that has the
    profiles (an a30 has no `1g.10gb`). Profiles or GPU types with no table there (compute
    instance forms such as `1c.3g.20gb`, GPU models not listed) keep the compute-slice check
    only."""

    gpus: PositiveCount = Field(description="how many GPUs of each node are cut this way")
    slices: dict[MigProfile, PositiveCount] = Field(
        min_length=1, description="MIG profile → slices of it on each of those GPUs"
    )
    gres_types: dict[MigProfile, SlurmName] = Field(
        default_factory=dict,
        description="Slurm only: MIG profile → its GRES type (a100_1g.10gb), scripted as"
        " --gres=gpu:<type>:N; default: the profile itself",
    )

    @model_validator(mode="after")
    def _possible_cut(self) -> MigGroup:
        used = sum(_compute_slices(p) * n for p, n in self.slices.items())
        if used > MIG_COMPUTE_SLICES:
            cut = " + ".join(f"{n} × {p}" for p, n in self.slices.items())
            # at the count to fix when the cut has one profile, else at slices:
            only = [next(iter(self.slices))] if len(self.slices) == 1 else None
            raise _cross(
                "slices",
                f"no GPU can be cut into {cut}: that takes {used} compute slices, and a MIG GPU"
                f" has at most {MIG_COMPUTE_SLICES} (slices are per GPU, not per node)",
                path=["slices", *only] if only else None,
            )
        return self

    @model_validator(mode="after")
    def _typed_profiles(self) -> MigGroup:
        stray = sorted(set(self.gres_types) - set(self.slices))
        if stray:
            raise _cross(
                "gres_types",
                f"gres_types names {stray[0]}, which these GPUs are not cut into",
                hint=did_you_mean(stray[0], self.slices) or f"profiles: {', '.join(self.slices)}",
            )
        return self


def _compute_slices(profile: str) -> int:
    """Compute slices one slice of `profile` takes: c of <c>c.<g>g.., else g of <g>g.. ."""
    head = profile.split(".", 1)[0]
    return int(head[:-1])


def _mig_form(value: Any) -> Any:
    # The old form, {profile: slices per node}, cannot say which GPUs are cut: refuse it.
    if isinstance(value, dict) and value:
        profile = next(iter(value))
        raise PydanticCustomError(
            "router",
            "mig must say how the GPUs are cut: a list of {gpus, slices}, e.g."
            f" [{{gpus: 4, slices: {{{profile}: 7}}}}] (4 GPUs of each node, each cut into 7"
            f" slices of {profile}; the other GPUs stay whole)",
        )
    return value


HARDWARE = (
    "gpus_per_node",
    "gpu_type",
    "gres_type",
    "cpus_per_node",
    "memory_per_node",
    "mig",
    "mig_strategy",
)
NODE_FIELDS = ("nodes", "max_nodes", "node_names", *HARDWARE)


class NodeSpec(Frozen):
    """A set of identical nodes: how many, and what each one has."""

    nodes: Count
    max_nodes: Count | None = Field(
        None,
        description="the most nodes there can be: the autoscaler's ceiling, or Slurm"
        " CLOUD / POWERED_DOWN nodes that can be powered up; default: nodes",
    )
    gpus_per_node: Count = 0
    gpu_type: Slug | None = Field(
        None,
        description="a GPU model such as h100, or any for GPUs of no stated type; required"
        " when gpus_per_node > 0",
    )
    gres_type: SlurmName | None = Field(
        None,
        description="the exact Slurm GRES type (nvidia_h100_80gb_hbm3) when it is not"
        " gpu_type; scripted in --gres / --gpus-per-node",
    )
    cpus_per_node: PositiveCount
    memory_per_node: Memory = Field(description='MiB; input "2TiB" or a number of MiB')
    mig: Annotated[list[MigGroup], BeforeValidator(_mig_form)] = Field(
        default_factory=list,
        description="how each node's GPUs are partitioned: [{gpus: 4, slices: {1g.10gb: 7}}]"
        " cuts 4 GPUs of every node into 7 slices each; the others stay whole",
    )
    mig_strategy: Literal["mixed", "single"] = Field(
        "mixed", description="the GPU operator's MIG strategy: single cuts every GPU alike"
    )
    node_names: NodeNames = Field(
        default_factory=list,
        description="the nodes' real names, in index order (optional): a list, or a Slurm"
        ' hostlist such as "gpu[001-512]" (the form imported inventories use)',
    )
    features: list[Feature] = Field(default_factory=list)
    labels: Labels = Field(default_factory=dict)

    @model_validator(mode="after")
    def _node_shape(self) -> NodeSpec:
        if self.gpus_per_node > 0 and self.gpu_type is None:
            raise _cross(
                "gpus_per_node",
                f"gpus_per_node is {self.gpus_per_node}: a target with GPUs must state gpu_type",
                hint="give the GPU model (gpu_type: h100), or gpu_type: any for GPUs of no"
                " stated type (untyped Slurm GRES gpu:8, no GPU product label)",
            )
        if self.max_nodes is not None and self.max_nodes < self.nodes:
            raise _cross(
                "max_nodes", f"max_nodes ({self.max_nodes}) must be ≥ nodes ({self.nodes})"
            )
        cut = sum(g.gpus for g in self.mig)
        if cut > self.gpus_per_node:
            raise _cross(
                "mig", f"mig cuts {cut} GPUs per node, but gpus_per_node is {self.gpus_per_node}"
            )
        if (
            self.mig_strategy == "single"
            and self.mig
            and (
                cut != self.gpus_per_node
                or len({p for g in self.mig for p in g.slices}) > 1
                or len(self.mig) > 1
            )
        ):
            raise _cross(
                "mig_strategy",
                "the single MIG strategy cuts every GPU of a node into"
                " slices of one profile: give one mig group with all gpus_per_node",
            )
        if len(self.node_names) > self.capacity_nodes:
            raise _cross(
                "node_names", f"{len(self.node_names)} node names for {self.capacity_nodes} nodes"
            )
        if len(set(self.node_names)) != len(self.node_names):
            raise _cross("node_names", f'node "{_unique(self.node_names)}" is named twice')
        return self

    @model_validator(mode="after")
    def _realisable_mig(self) -> NodeSpec:
        # Each group's cut on the GPU models gpu_type allows (router/models/mig_geometry.py).
        for i, g in enumerate(self.mig):
            verdict = mig_geometry.check(g.slices, self.gpu_type)
            if verdict is not None and not verdict.ok:
                # at the count to fix when the cut has one profile, else at slices (a GPU
                # type without MIG: at the cut, whatever its counts):
                one = len(g.slices) == 1 and not mig_geometry.no_mig(self.gpu_type)
                only = [next(iter(g.slices))] if one else []
                raise _cross("mig", verdict.reason, verdict.hint, path=["mig", i, "slices", *only])
        # A node's GPUs are one model: its groups' cuts must fit one model together.
        mixed = mig_geometry.check_node([g.slices for g in self.mig], self.gpu_type)
        if mixed is not None:
            i, verdict = mixed
            raise _cross("mig", verdict.reason, verdict.hint, path=["mig", i, "slices"])
        return self

    @property
    def untyped_gpus(self) -> bool:
        """GPUs of no stated type (`gpu_type: any`): only workloads asking for any fit."""
        return self.gpus_per_node > 0 and self.gpu_type == "any"

    @property
    def capacity_nodes(self) -> int:
        """The most nodes there can be: max_nodes, else nodes."""
        return self.max_nodes if self.max_nodes is not None else self.nodes

    @property
    def whole_gpus_per_node(self) -> int:
        """GPUs of a node that are not cut into MIG slices: what a whole-GPU workload sees."""
        return self.gpus_per_node - sum(g.gpus for g in self.mig)

    @property
    def slices_per_node(self) -> dict[str, int]:
        """MIG profile → slices of it on each node, over all of the node's partitioned GPUs."""
        out: dict[str, int] = {}
        for g in self.mig:
            for profile, n in g.slices.items():
                out[profile] = out.get(profile, 0) + g.gpus * n
        return dict(sorted(out.items()))

    def mig_gres_type(self, profile: str) -> str:
        """The Slurm GRES type of a profile's slices: the group's `gres_types`, else the
        profile itself (hand-written gres.conf `Type=1g.10gb`)."""
        for g in self.mig:
            if profile in g.gres_types:
                return g.gres_types[profile]
        return profile

    def hardware(self) -> tuple[Any, ...]:
        """What one node has, to compare node sets a target draws on."""
        return tuple(getattr(self, f) for f in HARDWARE)


class NodeSet(NodeSpec):
    """Identical nodes of a cluster that several targets can name (`node_sets: [name]`): one
    capacity, however many partitions or pools draw on it."""

    name: DnsLabel


class Target(NodeSpec):
    """What partitions and node pools have in common: a set of identical nodes, its own
    (inline node fields) or drawn from the cluster's `node_sets` (shared with other targets)."""

    name: DnsLabel
    node_sets: list[DnsLabel] = Field(
        default_factory=list,
        description="the cluster's node sets this target draws on (instead of inline node"
        " fields); nodes shared by several targets are one capacity",
    )
    max_time: Duration | None = Field(None, description='seconds; input "72h"')
    cost_per_gpu_hour: Money = 0.0
    cost_per_node_hour: Money = 0.0


UNLIMITED_TIME = MAX_COUNT  # MaxTime=UNLIMITED: longer than any duration router accepts


def _partition_time(value: Any) -> Any:
    # Slurm's MaxTime=UNLIMITED: `where max_time >= 3d` must hold, and every job fits.
    if isinstance(value, str) and value.strip().lower() in ("unlimited", "infinite"):
        return f"{UNLIMITED_TIME}s"
    return value


SlurmAccess = list[SlurmName] | None  # None: every account / group / QOS (Slurm's ALL)


class Partition(Target):
    """A Slurm partition (or, for a partition of mixed nodes, the part of one node type).

    Its limits, as `scontrol show partition` states them, are attributes rules can read and
    the shape check respects: `max_time` (`unlimited` for MaxTime=UNLIMITED), `default_time`,
    `max_nodes_per_job` (MaxNodes), `oversubscribe`, `allow_accounts` / `allow_groups` /
    `allow_qos` (unset: all), `deny_accounts` / `deny_qos` (as Slurm: only where the allow
    list is unset), `preempt_mode`.
    """

    max_time: Annotated[Duration | None, BeforeValidator(_partition_time)] = Field(
        None, description='seconds; input "72h", or unlimited (Slurm MaxTime=UNLIMITED)'
    )
    default_time: Duration | None = Field(None, description="Slurm DefaultTime, seconds")
    max_nodes_per_job: PositiveCount | None = Field(
        None, description="Slurm MaxNodes: the most nodes one job may have here"
    )
    oversubscribe: (
        Annotated[
            str,
            BeforeValidator(
                pattern(
                    re.compile(r"(no|yes|force|exclusive)(:[0-9]+)?"),
                    "no, yes, force or exclusive, optionally :N (Slurm OverSubscribe)",
                )
            ),
        ]
        | None
    ) = Field(
        None,
        description="Slurm OverSubscribe: exclusive gives every job whole nodes (the plan"
        " counts them so, and takes no service there); force shares nodes whatever a job"
        " asks (a rule's exclusive is refused there); no and yes change nothing (router's"
        " jobs never ask to share)",
    )
    allow_accounts: SlurmAccess = Field(
        None, description="Slurm AllowAccounts: only these accounts may run here (unset: all)"
    )
    allow_groups: SlurmAccess = Field(
        None, description="Slurm AllowGroups, checked against the workload's team"
    )
    allow_qos: SlurmAccess = Field(None, description="Slurm AllowQos (unset: all)")
    deny_accounts: list[SlurmName] = Field(
        default_factory=list,
        description="Slurm DenyAccounts: accounts that may not run here (as Slurm, ignored"
        " when allow_accounts is set); a workload that states no account passes",
    )
    deny_qos: list[SlurmName] = Field(
        default_factory=list,
        description="Slurm DenyQos: QOS that may not run here (ignored when allow_qos is"
        " set); a job that states no QOS passes",
    )
    preempt_mode: (
        Annotated[
            str,
            BeforeValidator(
                pattern(re.compile(r"[a-z]+(,[a-z]+)*"), "a Slurm PreemptMode such as requeue")
            ),
        ]
        | None
    ) = Field(None, description="Slurm PreemptMode: what happens to its preempted jobs")

    partition: SlurmName | None = Field(
        None, description="the real Slurm partition name, scripted as --partition; default: name"
    )
    constraint: Constraint | None = Field(
        None,
        description="a Slurm constraint that lands jobs on this target's node type (--constraint)",
    )
    nodelist: NodeList | None = Field(
        None, description="a Slurm node list for this target (--nodelist)"
    )
    qos: SlurmName | None = None
    account: SlurmName | None = None
    default: Flag = False
    # How jobs run here (issue 13): shared filesystems containers see, setup lines (modules).
    mounts: list[Mount] = Field(default_factory=list, description='"SRC[:DST[:ro|rw]]"')
    setup: list[SetupLine] = Field(default_factory=list, description="shell lines, in order")

    @model_validator(mode="after")
    def _mig_gres(self) -> Partition:
        # A slice is asked for as --gres=gpu:<type>:N: every profile needs a type Slurm takes.
        for i, g in enumerate(self.mig):
            for profile in g.slices:
                if profile not in g.gres_types and not SLURM_NAME.fullmatch(profile):
                    raise _cross(
                        "mig",
                        f"MIG profile {profile} is no Slurm GRES type name (letters, digits,"
                        " '.', '_' and '-'): give the type slurm.conf uses",
                        hint=f"e.g. mig: [{{gpus: {g.gpus}, slices: {{{profile}: "
                        f"{g.slices[profile]}}}, gres_types: {{{profile}: "
                        f"{self.gpu_type}_{re.sub(r'[^A-Za-z0-9_.-]', '_', profile)}}}}}]",
                        path=["mig", i, "gres_types"],
                    )
        return self

    @property
    def slurm_name(self) -> str:
        """The partition name Slurm knows."""
        return self.partition or self.name


PriorityName = Literal["low", "normal", "high", "critical"]


class SlurmSettings(Frozen):
    """How a Slurm cluster's jobs are written: where logs go (an absolute folder that exists
    on the compute nodes), setup lines and container mounts for every partition, and the
    QOS / nice value for each priority (a workload's number maps to the highest name at or
    below it)."""

    log_dir: AbsPath | None = None
    setup: list[SetupLine] = Field(default_factory=list)
    mounts: list[Mount] = Field(default_factory=list)
    qos_by_priority: dict[PriorityName, SlurmName] = Field(default_factory=dict)
    nice_by_priority: dict[PriorityName, Count] = Field(default_factory=dict)


class NodePool(Target):
    """A Kubernetes node pool; `max_nodes` is the cluster autoscaler's ceiling."""

    taints: list[Taint] = Field(default_factory=list)
    namespace: DnsLabel | None = None


def _resolve(cluster: dict[str, Any]) -> dict[str, Any]:
    """Fill the node fields of targets that name `node_sets` from those sets (raw values; the
    target's validation then checks them), so a target always knows its nodes."""
    sets = {s.get("name"): s for s in cluster.get("node_sets") or [] if isinstance(s, dict)}
    out = dict(cluster)
    for kind in ("partitions", "node_pools"):
        targets = cluster.get(kind)
        if not isinstance(targets, list):
            continue
        resolved: list[Any] = []
        for t in targets:
            named = t.get("node_sets") if isinstance(t, dict) else None
            where: list[str | int] = [kind, len(resolved)]
            if isinstance(t, dict) and "node_sets" in t and not (named and isinstance(named, list)):
                # said first: the node fields it would have given are missing only because of it
                got = "an empty list" if named == [] else show(named)
                raise _cross(
                    "node_sets",
                    f"{t.get('name')}: node_sets is a list of the cluster's node set names,"
                    f" got {got}",
                    hint=f"e.g. node_sets: [{show(next(iter(sets), 'gpus'))}]",
                    path=[*where, "node_sets"],
                )
            if not named or not isinstance(named, list):
                resolved.append(t)
                continue
            missing = [n for n in named if not (isinstance(n, str) and n in sets)]
            if missing:
                raise _cross(
                    "node_sets",
                    f"{t.get('name')}: no node set {show(missing[0])} in"
                    f" cluster {show(cluster.get('name'))}",
                    hint=did_you_mean(str(missing[0]), sorted(map(str, sets))),
                    path=[*where, "node_sets", named.index(missing[0])],
                )
            inline = [f for f in NODE_FIELDS if f in t]
            if inline:
                raise _cross(
                    "node_sets",
                    f"{t.get('name')}: give either node_sets or the node"
                    f" fields, not both ({inline[0]} is given)",
                    path=[*where, inline[0]],
                )
            found = [sets[n] for n in named]
            t = dict(t)
            for f in HARDWARE:
                if f in found[0]:
                    t[f] = found[0][f]
            counts = [s.get("nodes", 0) for s in found]
            ceilings = [s.get("max_nodes", s.get("nodes", 0)) for s in found]
            if all(isinstance(c, int) for c in counts + ceilings):
                t["nodes"] = sum(counts)
                if ceilings != counts:
                    t["max_nodes"] = sum(ceilings)
            else:
                t["nodes"] = 0  # the node set's own error says what is wrong
            feats = [set(s.get("features") or []) for s in found]
            common = sorted(set.intersection(*feats)) if feats else []
            t["features"] = [*common, *(f for f in t.get("features") or [] if f not in common)]
            labels: dict[Any, Any] = {}
            for s in found:
                labels.update(s.get("labels") or {})
            labels.update(t.get("labels") or {})
            t["labels"] = labels
            names = [n for s in found for n in _raw_names(s.get("node_names"))]
            if names:
                t["node_names"] = names
            resolved.append(t)
        out[kind] = resolved
    return out


def _raw_names(value: Any) -> list[Any]:
    """A node set's names before validation; none when they are bad (its own error says so)."""
    try:
        names = _node_names(value or [])
    except PydanticCustomError:
        return []
    return names if isinstance(names, list) else []


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
    node_sets: list[NodeSet] = Field(
        default_factory=list, description="identical nodes that several targets draw on"
    )
    partitions: list[Partition] = Field(default_factory=list)
    node_pools: list[NodePool] = Field(default_factory=list)
    labels: Labels = Field(default_factory=dict)
    slurm: SlurmSettings | None = Field(
        None,
        description="Slurm only: log folder, setup lines, mounts and the priority → QOS"
        " / nice tables the scripts use",
    )
    kubernetes: KubernetesCluster = Field(
        default_factory=KubernetesCluster, description="Kubernetes only: priority classes"
    )

    @model_validator(mode="before")
    @classmethod
    def _fill_from_node_sets(cls, data: Any) -> Any:
        return _resolve(data) if isinstance(data, dict) else data

    @model_validator(mode="after")
    def _targets_match_backend(self) -> Cluster:
        if self.slurm is not None and self.backend != "slurm":
            raise _cross("slurm", "slurm: settings are for a slurm cluster")
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
        self._check_node_sets()
        return self

    def _check_node_sets(self) -> None:
        sets = {s.name: s for s in self.node_sets}
        duplicate = _unique([s.name for s in self.node_sets])
        if duplicate:
            second = [i for i, s in enumerate(self.node_sets) if s.name == duplicate][1]
            raise _cross(
                "node_sets",
                f'two node sets are named "{duplicate}"',
                path=["node_sets", second, "name"],
            )
        kind = "partitions" if self.backend == "slurm" else "node_pools"
        inline = {t.name for t in self.targets if not t.node_sets}
        clash = sorted(inline & set(sets))
        if clash:
            raise _cross(
                "node_sets",
                f'node set "{clash[0]}" has the name of a target with'
                " nodes of its own; name it otherwise",
                path=self._set_name(clash[0]),
            )
        used: set[str] = set()
        for i, t in enumerate(self.targets):
            if not t.node_sets:
                continue
            where: list[str | int] = [kind, i, "node_sets"]
            if len(set(t.node_sets)) != len(t.node_sets):
                raise _cross("node_sets", f"{t.name}: a node set is named twice", path=where)
            found = [sets[n] for n in t.node_sets]
            if any(s.hardware() != found[0].hardware() for s in found):
                raise _cross(
                    "node_sets",
                    f"{t.name}: node sets {', '.join(t.node_sets)} have"
                    " different nodes; a target is one kind of node (split it into"
                    " one target per node type)",
                    path=where,
                )
            used.update(t.node_sets)
        unused = sorted(set(sets) - used)
        if unused:
            raise _cross(
                "node_sets",
                f'node set "{unused[0]}" is named by no target',
                path=self._set_name(unused[0]),
            )

    def _set_name(self, name: str) -> list[str | int]:
        """Where a node set's name is: an error about the set points there, not at the list."""
        return [
            "node_sets",
            next(i for i, s in enumerate(self.node_sets) if s.name == name),
            "name",
        ]

    def node_set_of(self, target: Partition | NodePool) -> tuple[str, ...]:
        """The node set ids ("cluster/set") a target of this cluster draws on."""
        names = target.node_sets or [target.name]
        return tuple(f"{self.name}/{n}" for n in names)

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
    node_sets: tuple[str, ...] = ()  # node set ids ("cluster/set") it draws on
    slurm: SlurmSettings | None = None  # the cluster's, for the Slurm emitter
    # The cluster's Kubernetes settings (priority classes), for the emitter.
    kubernetes: KubernetesCluster = field(default_factory=KubernetesCluster, compare=False)


@dataclass(frozen=True)
class NodeSetRef:
    """A node set with its cluster and the targets that draw on it; `id` is "cluster/set".
    A target with inline node fields is a node set of its own, with the target's id."""

    id: str
    cluster: str
    backend: str
    spec: NodeSpec
    targets: tuple[str, ...]  # target ids, sorted


class Inventory(Frozen):
    """Every cluster router may place workloads on."""

    clusters: list[Cluster]

    _refs: dict[str, TargetRef] = PrivateAttr(default_factory=dict)
    _sets: dict[str, NodeSetRef] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _unique_clusters(self) -> Inventory:
        duplicate = _unique([c.name for c in self.clusters])
        if duplicate:
            raise _cross("clusters", f'two clusters are named "{duplicate}"')
        return self

    def model_post_init(self, context: Any, /) -> None:
        refs = [
            TargetRef(
                c.name,
                c.backend,
                t,
                f"{c.name}/{t.name}",
                c.node_set_of(t),
                c.slurm,
                kubernetes=c.kubernetes,
            )
            for c in self.clusters
            for t in c.targets
        ]
        self._refs = {r.id: r for r in sorted(refs, key=lambda r: r.id)}
        users: dict[str, list[str]] = {}
        for r in refs:
            for s in r.node_sets:
                users.setdefault(s, []).append(r.id)
        sets: list[NodeSetRef] = []
        for c in self.clusters:
            for t in c.targets:
                if not t.node_sets:
                    sid = f"{c.name}/{t.name}"
                    sets.append(NodeSetRef(sid, c.name, c.backend, t, (sid,)))
            for ns in c.node_sets:
                sid = f"{c.name}/{ns.name}"
                sets.append(
                    NodeSetRef(sid, c.name, c.backend, ns, tuple(sorted(users.get(sid, ()))))
                )
        self._sets = {s.id: s for s in sorted(sets, key=lambda s: s.id)}

    def targets(self) -> list[TargetRef]:
        """Every target of every cluster, sorted by id."""
        return list(self._refs.values())

    def target(self, id: str) -> TargetRef:
        """The target with this "cluster/target" id; KeyError if there is none."""
        try:
            return self._refs[id]
        except KeyError:
            raise KeyError(f'no target "{id}" in the inventory') from None

    def node_sets(self) -> list[NodeSetRef]:
        """Every node set (shared or a target's own), sorted by id: each node counted once."""
        return list(self._sets.values())

    def node_set(self, id: str) -> NodeSetRef:
        """The node set with this "cluster/set" id; KeyError if there is none."""
        try:
            return self._sets[id]
        except KeyError:
            raise KeyError(f'no node set "{id}" in the inventory') from None

    def with_log_dir(self, log_dir: str | None) -> Inventory:
        """The inventory with `log_dir` (router.yaml's `slurm.log_dir`) as the log folder of
        every Slurm cluster that names none of its own; itself when there is nothing to do."""
        bare = [
            c for c in self.clusters if c.backend == "slurm" and not (c.slurm and c.slurm.log_dir)
        ]
        if log_dir is None or not bare:
            return self

        def filled(c: Cluster) -> Cluster:
            if c not in bare:
                return c
            settings = (c.slurm or SlurmSettings()).model_copy(update={"log_dir": log_dir})
            return c.model_copy(update={"slurm": settings})

        return Inventory(clusters=[filled(c) for c in self.clusters])

    def cluster(self, name: str) -> Cluster:
        for c in self.clusters:
            if c.name == name:
                return c
        raise KeyError(f'no cluster "{name}" in the inventory')
