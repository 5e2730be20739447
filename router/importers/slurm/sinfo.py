"""`sinfo --json`, both layouts, → nodes and (from 23.02 on) partitions.

* 21.08 and 22.05 (openapi v0.0.37/v0.0.38): {"nodes": [...]} with one entry per node: its
  `partitions`, `cpus`, `real_memory`, `gres`, `features`, `state` ("idle") and `state_flags`.
  Partition limits are not in it: they come from `scontrol show partition -o`.
* 23.02 and later (data_parser v0.0.39 to v0.0.44): {"sinfo": [...]}, one entry per group of
  nodes that look alike in one partition: `nodes.nodes` (their names), `node.state`, `cpus`,
  `memory`, `gres.total`, `features.total`, `reason.description`, and the whole partition
  record (`partition`) with its limits. A node in several partitions is in several entries;
  they are merged back into one node here.
"""

from __future__ import annotations

from typing import Any

from router.errors import LoadError
from router.importers.slurm.records import SlurmNode, SlurmPartition, number, states, words
from router.importers.slurm.restd import node_from_json, partition_from_json


def release_of(data: Any) -> str | None:
    meta = data.get("meta") if isinstance(data, dict) else None
    for key in ("slurm", "Slurm"):
        part = meta.get(key) if isinstance(meta, dict) else None
        if isinstance(part, dict) and isinstance(part.get("release"), str):
            return str(part["release"])
    return None


def cluster_name_of(data: Any) -> str | None:
    """The cluster name, where the JSON carries one (Slurm 23.11+ `meta.slurm.cluster`)."""
    meta = data.get("meta") if isinstance(data, dict) else None
    for key in ("slurm", "Slurm"):
        part = meta.get(key) if isinstance(meta, dict) else None
        if isinstance(part, dict) and isinstance(part.get("cluster"), str) and part["cluster"]:
            return str(part["cluster"])
    return None


def from_sinfo_blocks(
    data: dict[str, Any], source: str
) -> tuple[list[SlurmNode], list[SlurmPartition]]:
    """Nodes and partitions of the 23.02+ layout."""
    blocks = data["sinfo"]
    seen: dict[str, dict[str, Any]] = {}
    partitions: dict[str, SlurmPartition] = {}
    for i, block in enumerate(blocks):
        if not isinstance(block, dict):
            raise LoadError(f"{source}: sinfo entry {i} is not a mapping")
        part_raw = block.get("partition")
        part = partition_from_json(part_raw, f"{source}: sinfo entry {i}")
        partitions.setdefault(part.name, part)
        listed = block.get("nodes") or {}
        names = listed.get("nodes") or listed.get("hostnames")
        if not isinstance(names, list):
            raise LoadError(f"{source}: sinfo entry {i} has no nodes.nodes list")
        cpus = block.get("cpus") or {}
        memory = block.get("memory") or {}
        # sinfo groups nodes that look alike; min and max differ only when it did not split
        # them, and then the smaller is what every one of them has.
        cpu = number(cpus.get("minimum"))
        mem = number(memory.get("minimum"))
        reason = (block.get("reason") or {}).get("description") or ""
        for name in names:
            entry = seen.setdefault(
                str(name),
                {
                    "name": str(name),
                    "partitions": [],
                    "cpus": cpu,
                    "real_memory": mem,
                    "gres": (block.get("gres") or {}).get("total") or "",
                    "features": list(words((block.get("features") or {}).get("total"))),
                    "state": sorted(states((block.get("node") or {}).get("state"))),
                    "reason": reason,
                    "reservation": block.get("reservation") or "",
                },
            )
            if part.name not in entry["partitions"]:
                entry["partitions"].append(part.name)
    nodes = [node_from_json(raw, source) for raw in seen.values()]
    return nodes, list(partitions.values())


def from_sinfo(data: Any, source: str) -> tuple[list[SlurmNode], list[SlurmPartition] | None]:
    """Nodes, and partitions where the layout has them (None: 21.08/22.05, ask scontrol)."""
    if isinstance(data, dict) and isinstance(data.get("sinfo"), list):
        return from_sinfo_blocks(data, source)
    if isinstance(data, dict) and isinstance(data.get("nodes"), list):
        return [node_from_json(raw, source) for raw in data["nodes"]], None
    raise LoadError(
        f'{source}: expected the output of `sinfo --json` (a mapping with a "sinfo" list, '
        'Slurm 23.02 and later, or a "nodes" list, 21.08 and 22.05), `scontrol show nodes '
        "--json` or slurmrestd's /nodes"
    )
