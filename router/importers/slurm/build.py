"""Slurm nodes and partitions → one inventory cluster: node sets, then partitions over them.

* A node set is nodes of one type (GPUs, MIG layout, CPUs, memory, features) that belong to
  the same partitions, so a node in several partitions is in exactly one node set and counted
  once however many partitions name it. `nodes` counts the usable nodes, `max_nodes` adds the
  powered-down ones Slurm can power up; `node_names` lists them (usable first) as one Slurm
  hostlist, compact however many nodes there are (cn[001-080]).
* A partition whose nodes are all of one type is one target. A mixed partition becomes one
  sub-target per node type ("gpu-h100x8", "gpu-a100x4"), each with the real `partition` and a
  `constraint` (a feature only that type has) so the job lands on that type: nothing is dropped
  and nothing is shrunk to the smallest node. Where no feature tells a type apart, a one-node
  type gets `nodelist`; otherwise a comment says a feature is needed.
* Names: a partition name that is not a DNS-1123 label (EquityHighPriority, Legacy_GPU) gets
  a sanitised target name (equity-high-priority) and keeps the real one in `partition`.
* Limits: MaxTime (UNLIMITED → `unlimited`), DefaultTime, MaxNodes (→ max_nodes_per_job),
  OverSubscribe, AllowAccounts/AllowGroups/AllowQos, DenyAccounts/DenyQos, PreemptMode and
  Default=YES become target fields. A partition that is not UP is left out, with a comment.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from router.errors import LoadError
from router.hostlist import compress
from router.importers import ImportedCluster, ImportedTarget
from router.importers.slurm.nodes import NodeType, node_type, verdict
from router.importers.slurm.records import UNLIMITED, Limit, SlurmNode, SlurmPartition
from router.quantity import format_duration, format_memory

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
FEATURE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
CONSTRAINT_FEATURE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}")
SLURM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def dns_name(text: str) -> str:
    """A DNS-1123 label for a Slurm name: CamelCase → camel-case, other characters → '-'."""
    if DNS_LABEL.fullmatch(text):
        return text
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "-", text)
    clean = re.sub(r"[^a-z0-9]+", "-", spaced.lower()).strip("-")
    if clean and len(clean) <= 63:
        return clean
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    head = clean[:54].strip("-")
    return f"{head}-{digest}" if head else f"p-{digest}"


def _natural(name: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


@dataclass
class _Set:
    type: NodeType
    partitions: tuple[str, ...]
    usable: list[str] = field(default_factory=list)
    headroom: list[str] = field(default_factory=list)
    notes: set[str] = field(default_factory=set)
    name: str = ""


def build_cluster(
    nodes: list[SlurmNode],
    partitions: list[SlurmPartition] | None,
    *,
    cluster: str,
    source: list[str],
) -> ImportedCluster:
    """The inventory cluster (node sets and partitions) for these nodes and partitions."""
    if not DNS_LABEL.fullmatch(cluster):
        raise LoadError(
            f"cluster name {cluster!r} is not a DNS-1123 label",
            hint="give --cluster NAME: lowercase letters, digits and '-' (hpc-east)",
        )
    if not nodes:
        raise LoadError("the Slurm data lists no nodes")
    parts = {p.name: p for p in partitions or []}
    nodes = _merge(nodes, parts)
    for n in nodes:  # partitions only the nodes name (sinfo 22.05 without scontrol's text)
        for pname in n.partitions:
            parts.setdefault(pname, SlurmPartition(pname))
    notes: list[str] = []
    usable_parts = set()
    for pname, part in sorted(parts.items()):
        if part.state not in ("UP", ""):
            notes.append(f"partition {pname}: State={part.state}, left out (it takes no jobs)")
        else:
            usable_parts.add(pname)
    exclusions: list[str] = []
    sets: dict[tuple[NodeType, tuple[str, ...]], _Set] = {}
    # Every node type of each partition, usable or not: a job sent to one type must not land
    # on another when a down node comes back.
    every_type: dict[str, set[NodeType]] = defaultdict(set)
    for n in sorted(nodes, key=lambda n: _natural(n.name)):
        for p in n.partitions:
            every_type[p].add(node_type(n)[0])
        member = tuple(sorted(p for p in n.partitions if p in usable_parts))
        if not member:
            if not n.partitions:
                exclusions.append(f"{n.name}: in no partition, left out")
            continue  # its partitions are left out, and say so
        v = verdict(n, any(parts[p].power_up for p in member))
        if v.kind == "out":
            exclusions.append(f"{n.name}: {v.why}, left out")
            continue
        t, type_notes = node_type(n)
        s = sets.setdefault((t, member), _Set(t, member))
        (s.usable if v.kind == "usable" else s.headroom).append(n.name)
        s.notes.update(type_notes)
    _name_sets(list(sets.values()))
    targets: list[ImportedTarget] = []
    taken: set[str] = set()  # target names (a node set may share its name with a target)
    for pname in sorted(usable_parts):
        members = [s for s in sets.values() if pname in s.partitions]
        if not members:
            notes.append(f"partition {pname}: no usable node, left out")
            continue
        if not SLURM_NAME.fullmatch(pname):
            notes.append(f"partition {pname!r}: a name sbatch cannot take safely, left out")
            continue
        targets += _targets(parts[pname], members, taken, every_type[pname])
    if not targets:
        raise LoadError(
            "no partition could be imported: " + ("; ".join(notes + exclusions[:5]) or "no nodes")
        )
    node_sets = [_node_set(s) for s in sorted(sets.values(), key=lambda s: s.name)]
    return ImportedCluster(cluster, "slurm", targets, source, notes, node_sets, exclusions)


def _merge(nodes: list[SlurmNode], parts: dict[str, SlurmPartition]) -> list[SlurmNode]:
    """One record per node name; partitions that list a node the node does not name join it."""
    extra: dict[str, set[str]] = defaultdict(set)
    for part in parts.values():
        for name in part.nodes or ():
            extra[name].add(part.name)
    by_name: dict[str, SlurmNode] = {}
    for n in nodes:
        old = by_name.get(n.name)
        names = set(n.partitions) | extra.get(n.name, set()) | set(old.partitions if old else ())
        by_name[n.name] = SlurmNode(
            n.name,
            tuple(sorted(names)),
            n.cpus,
            n.memory,
            n.gres,
            n.features,
            n.states,
            n.reason,
            n.reservation,
        )
    return list(by_name.values())


def _name_sets(sets: list[_Set]) -> None:
    """Node set names from their type (h100x8, cpu64); alike ones numbered in a fixed order."""
    by_label: dict[str, list[_Set]] = defaultdict(list)
    for s in sets:
        by_label[dns_name(s.type.label().replace(".", "-"))].append(s)
    taken: set[str] = set()
    for label, group in sorted(by_label.items()):
        group.sort(key=lambda s: (s.type.sort_key(), s.partitions))
        for s in group:  # alike types apart: by their first partition, then a number
            name = label if len(group) == 1 else f"{dns_name(s.partitions[0])[:40]}-{label}"
            s.name = _unique(name, taken)


def _node_set(s: _Set) -> ImportedTarget:
    t = s.type
    fields: dict[str, Any] = {"name": s.name, "nodes": len(s.usable)}
    if s.headroom:
        fields["max_nodes"] = len(s.usable) + len(s.headroom)
    if t.gpu_type:
        fields["gpus_per_node"] = t.gpus
        fields["gpu_type"] = t.gpu_type
        if t.gres_type:
            fields["gres_type"] = t.gres_type
    fields["cpus_per_node"] = t.cpus
    fields["memory_per_node"] = format_memory(t.memory)
    feats = [f for f in t.features if FEATURE.fullmatch(f)]
    if feats:
        fields["features"] = feats
    if t.mig:
        typed = dict(t.mig_types)
        fields["mig"] = [
            {"gpus": g, "slices": dict(cut)}
            | ({"gres_types": {p: typed[p] for p, _ in cut if p in typed}} if named else {})
            for g, cut in t.mig
            for named in [any(p in typed for p, _ in cut)]
        ]
    names = s.usable + s.headroom
    if all(SLURM_NAME.fullmatch(n) for n in names):  # else no names rather than a bad file
        # One hostlist, in index order: 4,096 nodes gpu0001..gpu4096 are "gpu[0001-4096]".
        fields["node_names"] = compress(names)
    notes = [
        f"{len(s.usable) + len(s.headroom)} × {t.describe()}; in partition(s) "
        + ", ".join(s.partitions)
    ]
    if s.headroom:
        notes.append(f"{len(s.headroom)} powered down (max_nodes headroom: Slurm powers them up)")
    bad = [f for f in t.features if not FEATURE.fullmatch(f)]
    if bad:
        notes.append(f"features left out (not valid names): {', '.join(bad)}")
    notes += sorted(s.notes)
    return ImportedTarget(fields, notes)


def _targets(
    p: SlurmPartition, members: list[_Set], taken: set[str], every_type: set[NodeType]
) -> list[ImportedTarget]:
    by_type: dict[NodeType, list[_Set]] = defaultdict(list)
    for s in members:
        by_type[s.type].append(s)
    base = _unique(dns_name(p.name), taken)
    everything = sorted(every_type | set(by_type), key=NodeType.sort_key)
    if len(everything) == 1:
        return [_target(base, p, members, None, None, [])]
    out = []
    types = sorted(by_type, key=NodeType.sort_key)
    notes = [
        f"Partition {p.name} has {len(everything)} node types: one target per usable type,"
        " each sent to its nodes by --partition and --constraint"
    ]
    for t in types:
        name = (
            base
            if len(types) == 1
            else _unique(f"{base[:40]}-{dns_name(t.label().replace('.', '-'))}", taken)
        )
        others = [u for u in everything if u != t]
        constraint = _constraint(t, others)
        nodelist = None
        why: list[str] = list(notes)
        if constraint is None:
            names = [n for s in by_type[t] for n in s.usable + s.headroom]
            if len(names) == 1:
                nodelist = names[0]
            elif t.gpu_type and all(u.gpu_type != t.gpu_type for u in others):
                why.append(
                    f"no feature tells these nodes apart: GPU jobs land on them by "
                    f"their GPU type ({t.gres_type or t.gpu_type}); CPU-only jobs may "
                    "land on the partition's other nodes"
                )
            else:
                why.append(
                    "no feature tells these nodes apart from the partition's others: "
                    "a job sent here may run on those; give them a feature in "
                    "slurm.conf (Features=) and import again"
                )
        out.append(_target(name, p, by_type[t], constraint, nodelist, why, split=True))
    return out


def _constraint(t: NodeType, others: list[NodeType]) -> str | None:
    """A feature expression only nodes of type t satisfy among the partition's types. Slurm
    features such as CPU_GEN:MILAN count here, though the inventory's `features` cannot
    hold them."""
    feats = [f for f in t.features if CONSTRAINT_FEATURE.fullmatch(f)]
    unique = [f for f in feats if all(f not in u.features for u in others)]
    if unique:  # the plainest: a bare word before a KEY:VALUE one, short before long
        return min(unique, key=lambda f: (":" in f, len(f), f))
    if feats and all(not set(feats) <= set(u.features) for u in others):
        return "&".join(feats)
    return None


def _unique(name: str, taken: set[str]) -> str:
    out, i = name, 2
    while out in taken:
        out = f"{name[:60]}-{i}"
        i += 1
    taken.add(out)
    return out


def _time(value: Limit) -> str | None:
    if value == UNLIMITED:
        return "unlimited"
    return format_duration(value) if isinstance(value, int) and value > 0 else None


def _target(
    name: str,
    p: SlurmPartition,
    members: list[_Set],
    constraint: str | None,
    nodelist: str | None,
    notes: list[str],
    split: bool = False,
) -> ImportedTarget:
    fields: dict[str, Any] = {"name": name}
    notes = list(notes)
    if name != p.name:
        if SLURM_NAME.fullmatch(p.name):
            fields["partition"] = p.name
        else:
            raise LoadError(f"partition name {p.name!r} has characters sbatch cannot take")
    if constraint:
        fields["constraint"] = constraint
    if nodelist:
        fields["nodelist"] = nodelist
    fields["node_sets"] = sorted(s.name for s in members)
    max_time = _time(p.max_time)
    if max_time:
        fields["max_time"] = max_time
    default_time = _time(p.default_time)
    if default_time and default_time != "unlimited":
        fields["default_time"] = default_time
    if isinstance(p.max_nodes, int) and p.max_nodes > 0:
        fields["max_nodes_per_job"] = p.max_nodes
    if p.oversubscribe and p.oversubscribe != "no":
        fields["oversubscribe"] = p.oversubscribe
    for key, value in (
        ("allow_accounts", p.allow_accounts),
        ("allow_groups", p.allow_groups),
        ("allow_qos", p.allow_qos),
    ):
        if value is not None:
            fields[key] = sorted(value)
    # Slurm reads DenyAccounts / DenyQos only where AllowAccounts / AllowQos are unset.
    for key, deny, allow, what in (
        ("deny_accounts", p.deny_accounts, p.allow_accounts, "Accounts"),
        ("deny_qos", p.deny_qos, p.allow_qos, "Qos"),
    ):
        if deny and allow is None:
            fields[key] = sorted(deny)
        elif deny:
            notes.append(f"Deny{what}={','.join(deny)}: Slurm ignores it beside Allow{what}")
    if p.preempt_mode and p.preempt_mode != "off":
        fields["preempt_mode"] = p.preempt_mode
    if p.default and not split:
        fields["default"] = True
    elif p.default:  # one partition, several targets: none of them is the default alone
        notes.append(f"Default=YES: {p.name} is the cluster's default partition")
    if p.qos:
        notes.append(f"partition QOS {p.qos} applies to every job here (Slurm adds it)")
    shared = sorted({q for s in members for q in s.partitions if q != p.name})
    if shared:
        notes.append(
            f"nodes shared with partition(s) {', '.join(shared)}: one capacity, "
            "counted once (node_sets)"
        )
    return ImportedTarget(fields, notes)
