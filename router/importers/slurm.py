"""Slurm → inventory: `sinfo --json` nodes (+ `scontrol show partition -o`) → one cluster.

Pure: the caller runs the commands (or reads saved output). Slurm 22.05's `sinfo --json` lists
nodes, each with its `partitions`, `gres` ("gpu:h100:8(S:0-1)"), `cpus`, `real_memory` (MB,
which Slurm means as MiB) and `features`; partition limits (MaxTime, Default) are only in
`scontrol show partition -o`. Later Slurm releases' node records (lists for `features`) work too.

Decisions:

* One target per Slurm partition, named as the partition: router's sbatch scripts say
  `--partition=<target name>`, so an invented name (`gpu-a100` for part of partition `gpu`)
  would give scripts Slurm rejects. A partition whose name is not a DNS-1123 label cannot be a
  target and is left out, with a comment.
* Heterogeneous partitions (nodes of different GPU type, GPU count, CPUs, memory or features):
  router models a target as N identical nodes, and its scripts pin the GPU type. The target
  keeps the GPU type most of the partition's nodes have (ties: more GPUs per node, then the
  type's name) — the nodes with that type, or every node when that type is "no GPUs" — and the
  *smallest* shape among them: fewest GPUs, CPUs and memory, and only the features all of them
  have. Every job router places there then fits on any of those nodes; capacity is understated,
  never overstated. A comment above the target lists every shape and what was left out, and
  the command line repeats it as a warning. (To use all of a mixed partition, split it in
  slurm.conf, or edit the file: it is a starting point.)
* GPUs come from the `gpu` GRES. A node with several GPU types uses whole GPUs before MIG
  slices (a type like "1g.10gb" or "a100_3g.40gb"), then the most GPUs, then the type's name,
  and typed GPUs before untyped ones. Untyped GPUs ("gpu:8", gres.conf without Type=) become
  `gpu_type: any`, GPUs of no stated type: router's scripts ask for them untyped
  (`--gpus-per-node=8`) and only workloads with gpu_type any go there. Slurm matches GRES
  types case-sensitively, so a type that is not a lowercase slug ("A100") cannot be requested
  by router: such nodes count as having no GPUs, with a comment saying so.
* `nodes` counts every node of the partition whatever its state (down, drained): an inventory
  is installed capacity; planning against the moment's availability would churn plans.
  A node in several partitions counts in each, with a comment.
* Features are the node's configured `features` (available), else `active_features`.
* MaxTime UNLIMITED → no max_time; without the partition text, max_time and default are
  unknown and the header says so.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from router.errors import LoadError
from router.importers import ImportedCluster, ImportedTarget
from router.quantity import format_duration, format_memory

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
GPU_TYPE = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")  # the inventory's gpu_type (a slug)
FEATURE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
MIG = re.compile(r"(?:^|[_-])\d+g\.\d+gb$")
# A key of `scontrol show ... -o`: CamelCase, may hold '/', ':' or '_' (e.g. "Socks/Node",
# "NtasksPerN:B:S:C", "MCS_label"). A space followed by anything else continues the value.
_KEY = re.compile(r"^([A-Z][A-Za-z0-9_:/]*)=(.*)$", re.S)
_CLOCK = re.compile(r"(?:(\d+)-)?(\d+):(\d+):(\d+)")
UNLIMITED = frozenset({"UNLIMITED", "INFINITE", "NONE"})


@dataclass(frozen=True)
class Gres:
    name: str
    type: str | None
    count: int


@dataclass(frozen=True)
class Shape:
    """A node as router sees it. gpu_type None: no GPUs router can ask for; "any": untyped."""

    gpu_type: str | None
    gpus: int
    cpus: int
    memory: int  # MiB
    features: tuple[str, ...]

    def key(self) -> tuple[str, int, int, int, tuple[str, ...]]:
        return (self.gpu_type or "", self.gpus, self.cpus, self.memory, self.features)

    def gpus_text(self) -> str:
        return f"{_type_text(self.gpu_type)} GPUs" if self.gpu_type else "no GPUs"

    def describe(self) -> str:
        gpus = f"{self.gpus} {self.gpus_text()}" if self.gpu_type else "no GPUs"
        feats = ",".join(self.features) or "none"
        return f"{gpus}, {self.cpus} CPUs, {format_memory(self.memory)}, features {feats}"


def _type_text(gpu_type: str | None) -> str:
    return "untyped" if gpu_type == "any" else str(gpu_type)


# ---- parsing --------------------------------------------------------------------------------


def _split_top(text: str) -> list[str]:
    """Split on commas outside parentheses: "gpu:a:4(S:0,2),gpu:b:2" has two entries."""
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return [p.strip() for p in [*parts, current] if p.strip()]


def parse_gres(text: str | None) -> list[Gres]:
    """GRES entries: "gpu:h100:8", "gpu:h100:8(S:0-1)", "gpu:8", "gpu", "gpu:a100:4,gpu:a10:2"."""
    found: list[Gres] = []
    if not text or text in ("(null)", "N/A"):
        return found
    for entry in _split_top(text):
        parts = entry.split("(", 1)[0].split(":")
        name, rest = parts[0], parts[1:]
        count, kind = 1, None
        if rest and re.fullmatch(r"\d+", rest[-1]):
            count = int(rest.pop())
        if rest:
            kind = ":".join(rest)
        found.append(Gres(name, kind, count))
    return found


def parse_scontrol_lines(text: str) -> list[dict[str, str]]:
    """`scontrol show ... -o` output, one record a line. A token that is not `Key=` continues
    the previous value (values may hold spaces and '=')."""
    records = []
    for line in text.splitlines():
        if not line.strip():
            continue
        record: dict[str, str] = {}
        key: str | None = None
        for token in line.strip().split(" "):
            m = _KEY.match(token)
            if m:
                key = m.group(1)
                record[key] = m.group(2)
            elif key is not None:
                record[key] += " " + token
        records.append({k: v.rstrip(" ") for k, v in record.items()})
    return records


def parse_max_time(text: str) -> int | None:
    """Seconds from Slurm's "3-00:00:00", "01:00:00" or minutes; None when unlimited."""
    text = text.strip()
    if text.upper() in UNLIMITED:
        return None
    if text.isdigit():
        return int(text) * 60
    m = _CLOCK.fullmatch(text)
    if not m:
        raise ValueError(f"MaxTime {text!r} is not a Slurm time")
    days, hours, minutes, seconds = (int(g) if g else 0 for g in m.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def cluster_name_of(sinfo: Any) -> str | None:
    """The cluster name, where the JSON carries one (Slurm 23.11+ `meta.slurm.cluster`)."""
    meta = sinfo.get("meta") if isinstance(sinfo, dict) else None
    for key in ("slurm", "Slurm"):
        part = meta.get(key) if isinstance(meta, dict) else None
        if isinstance(part, dict) and isinstance(part.get("cluster"), str) and part["cluster"]:
            return str(part["cluster"])
    return None


def _release(sinfo: dict[str, Any]) -> str | None:
    meta = sinfo.get("meta")
    for key in ("Slurm", "slurm"):
        part = meta.get(key) if isinstance(meta, dict) else None
        if isinstance(part, dict) and isinstance(part.get("release"), str):
            return str(part["release"])
    return None


def _words(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value if str(v)]
    if isinstance(value, str) and value not in ("(null)", "N/A"):
        return [w for w in value.split(",") if w]
    return []


# ---- nodes → shapes -------------------------------------------------------------------------


@dataclass(frozen=True)
class Node:
    name: str
    partitions: tuple[str, ...]
    shape: Shape
    gres: str
    gpu_note: str | None  # why GPUs were set aside, or which of several types was used


def _gpu_of(gres_text: str) -> tuple[str | None, int, str | None]:
    """(gpu_type, gpus per node, note) from a node's GRES."""
    per_type: Counter[str | None] = Counter()
    for g in parse_gres(gres_text):
        if g.name == "gpu":
            per_type[g.type] += g.count
    if not per_type:
        return None, 0, None
    ranked = sorted(
        per_type.items(),
        key=lambda kv: (kv[0] is None, bool(kv[0] and MIG.search(kv[0])), -kv[1], kv[0] or ""),
    )
    kind, count = ranked[0]
    note = None
    if kind is None:  # untyped: scripts ask for them without a type
        kind = "any"
        note = (
            f"GPUs without a type (GRES {gres_text}): gpu_type any, so only workloads "
            "asking for any GPU type go here; Type= in gres.conf would name the model"
        )
    elif not GPU_TYPE.fullmatch(kind):
        return (
            None,
            0,
            (
                f'GPU type "{kind}" (GRES {gres_text}) is left out: router needs a '
                "lowercase type name and Slurm matches types case-sensitively"
            ),
        )
    if len(per_type) > 1:
        note = (
            f"nodes with several GPU types (GRES {gres_text}) are used as {count} × "
            + _type_text(kind)
        )
    return kind, count, note


def _node(raw: dict[str, Any]) -> Node:
    name = str(raw.get("name") or raw.get("hostname") or "?")
    gres = raw.get("gres") or ""
    gres_text = gres if isinstance(gres, str) else ",".join(_words(gres))
    kind, gpus, note = _gpu_of(gres_text)
    features = _words(raw.get("features")) or _words(raw.get("active_features"))
    try:
        cpus, memory = int(raw.get("cpus") or 0), int(raw.get("real_memory") or 0)
    except (TypeError, ValueError):
        raise LoadError(f"node {name}: cpus and real_memory must be numbers") from None
    shape = Shape(kind, gpus, max(cpus, 1), max(memory, 1), tuple(sorted(set(features))))
    return Node(name, tuple(_words(raw.get("partitions"))), shape, gres_text, note)


def _choose(nodes: list[Node]) -> tuple[list[Node], Shape]:
    """The nodes a partition's target keeps, and their smallest shape (see the docstring)."""
    by_type: dict[str | None, list[Node]] = defaultdict(list)
    for n in nodes:
        by_type[n.shape.gpu_type].append(n)
    kind = min(
        by_type, key=lambda k: (-len(by_type[k]), -max(n.shape.gpus for n in by_type[k]), k or "")
    )
    kept = nodes if kind is None else by_type[kind]
    shapes = [n.shape for n in kept]
    common = set(shapes[0].features).intersection(*(s.features for s in shapes))
    smallest = Shape(
        kind,
        min(s.gpus for s in shapes) if kind else 0,
        min(s.cpus for s in shapes),
        min(s.memory for s in shapes),
        tuple(sorted(common)),
    )
    return kept, smallest


def _shape_notes(partition: str, nodes: list[Node], kept: list[Node], shape: Shape) -> list[str]:
    shapes = Counter(n.shape for n in nodes)
    if len(shapes) == 1:
        return []
    kept_names = {n.name for n in kept}
    lines = [
        f"Heterogeneous partition {partition}: {len(shapes)} node shapes. router models a "
        f"partition as identical nodes, so this target has the {len(kept)} "
        + ("node" if len(kept) == 1 else "nodes")
        + (f" with {shape.gpus_text()}" if shape.gpu_type else "")
        + " and the smallest of their shapes (any job placed here fits every one of them):"
    ]
    for s, count in sorted(shapes.items(), key=lambda kv: (-kv[1], kv[0].key())):
        example = min(n.name for n in nodes if n.shape == s)
        left_out = ""
        if example not in kept_names:
            left_out = f" (left out: {s.gpus_text()})"
        lines.append(f"  {count} × {s.describe()}, e.g. {example}{left_out}")
    return lines


# ---- the cluster ----------------------------------------------------------------------------


def import_sinfo(
    sinfo: Any,
    partitions_text: str | None = None,
    *,
    cluster: str = "slurm",
    source: str = "sinfo --json",
) -> ImportedCluster:
    """The inventory cluster for `sinfo --json` output (+ `scontrol show partition -o` text)."""
    if not DNS_LABEL.fullmatch(cluster):
        raise LoadError(
            f"cluster name {cluster!r} is not a DNS-1123 label",
            hint="give --cluster NAME: lowercase letters, digits and '-' (hpc-east)",
        )
    if not isinstance(sinfo, dict) or not isinstance(sinfo.get("nodes"), list):
        raise LoadError('expected the output of `sinfo --json` (a mapping with a "nodes" list)')
    nodes = [_node(raw) for raw in sinfo["nodes"] if isinstance(raw, dict)]
    limits = {
        r["PartitionName"]: r
        for r in parse_scontrol_lines(partitions_text or "")
        if "PartitionName" in r
    }
    members: dict[str, list[Node]] = defaultdict(list)
    for n in nodes:
        for p in n.partitions:
            members[p].append(n)
    notes: list[str] = []
    chosen: dict[str, tuple[list[Node], Shape]] = {}
    for name in sorted(set(members) | set(limits)):
        if not DNS_LABEL.fullmatch(name):
            notes.append(
                f'Partition "{name}" left out: a target name must be a DNS-1123 label '
                "(lowercase letters, digits, '-'), and router's scripts use it as is"
            )
        elif not members[name]:
            notes.append(f"Partition {name} left out: sinfo lists no nodes in it")
        else:
            chosen[name] = _choose(members[name])
    kept_in: dict[str, list[str]] = defaultdict(list)  # node → the targets that count it
    for name, (kept, _) in chosen.items():
        for n in kept:
            kept_in[n.name].append(name)
    targets = []
    for name, (kept, shape) in chosen.items():
        shared = Counter(p for n in kept for p in kept_in[n.name] if p != name)
        targets.append(
            _target(name, members[name], kept, shape, limits.get(name), partitions_text, shared)
        )
    if not targets:
        raise LoadError("no partition could be imported: " + ("; ".join(notes) or "no nodes"))
    release = _release(sinfo)
    header = [
        f'Inventory of Slurm cluster "{cluster}", imported by `router inventory import slurm`',
        f"from {source}" + (f" (Slurm {release})." if release else "."),
        "Node counts include every node of a partition, whatever its state. Slurm does not know",
        "costs, qos or accounts: add them here (a new import writes the file afresh).",
    ]
    if partitions_text is None:
        header.append(
            "No partition limits were read (scontrol show partition -o): max_time "
            "and default are unknown."
        )
    return ImportedCluster(cluster, "slurm", targets, header, notes)


def _target(
    name: str,
    nodes: list[Node],
    kept: list[Node],
    shape: Shape,
    limits: dict[str, str] | None,
    partitions_text: str | None,
    shared: Counter[str],
) -> ImportedTarget:
    fields: dict[str, Any] = {"name": name, "nodes": len(kept)}
    if shape.gpu_type:
        fields["gpus_per_node"] = shape.gpus
        fields["gpu_type"] = shape.gpu_type
    fields["cpus_per_node"] = shape.cpus
    fields["memory_per_node"] = format_memory(shape.memory)
    notes = _shape_notes(name, nodes, kept, shape)
    notes += sorted({n.gpu_note for n in nodes if n.gpu_note})
    if limits is not None:
        raw = limits.get("MaxTime", "UNLIMITED")
        try:
            seconds = parse_max_time(raw)
        except ValueError as e:
            notes.append(f"{e}: max_time left out")
            seconds = None
        if seconds:
            fields["max_time"] = format_duration(seconds)
        if limits.get("State", "UP") != "UP":
            notes.append(f"Slurm has this partition in State={limits['State']}")
    elif partitions_text is not None:
        notes.append("scontrol does not list this partition: max_time unknown")
    features = [f for f in shape.features if FEATURE.fullmatch(f)]
    bad = [f for f in shape.features if not FEATURE.fullmatch(f)]
    if bad:
        notes.append(f"features left out (not valid names): {', '.join(bad)}")
    if features:
        fields["features"] = features
    if limits is not None and limits.get("Default") == "YES":
        fields["default"] = True
    if shared:
        with_ = ", ".join(f"{p} ({c})" for p, c in sorted(shared.items()))
        notes.append(f"Nodes shared with partition(s) {with_}: router counts them in each")
    if any(n.shape.memory <= 1 for n in kept):
        notes.append("Some nodes report RealMemory=1 (not configured in slurm.conf)")
    return ImportedTarget(fields, notes)
