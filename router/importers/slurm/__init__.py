"""Slurm → inventory, from what any Slurm release prints (pure: the caller runs the commands).

Nodes come from `sinfo --json` (21.08/22.05 layout or the 23.02+ data_parser layout),
`scontrol show nodes --json`, slurmrestd `/nodes`, or `scontrol show node -o` text; partition
limits from `scontrol show partition -o` text, `scontrol show partitions --json` or slurmrestd
`/partitions` (sinfo 23.02+ carries them too). `read_nodes` and `read_partitions` tell the
layouts apart by their content; what they cannot read is an error naming the file and what
was expected, never an empty inventory. build.py turns the records into node sets and targets.
"""

from __future__ import annotations

import json
from typing import Any

from router.errors import LoadError
from router.importers import ImportedCluster
from router.importers.slurm.build import build_cluster, dns_name
from router.importers.slurm.nodes import parse_gres
from router.importers.slurm.records import SlurmNode, SlurmPartition, slurm_minutes
from router.importers.slurm.restd import nodes_from_json, partitions_from_json
from router.importers.slurm.sinfo import cluster_name_of, from_sinfo, release_of
from router.importers.slurm.text import (
    nodes_from_text,
    parse_scontrol_lines,
    partitions_from_text,
)

__all__ = [
    "SlurmInput",
    "cluster_name_of",
    "dns_name",
    "import_slurm",
    "parse_gres",
    "parse_scontrol_lines",
    "read_nodes",
    "read_partitions",
    "slurm_minutes",
]

NODES_EXPECTED = (
    "expected `sinfo --json`, `scontrol show nodes --json`, slurmrestd's /nodes (JSON) or "
    "`scontrol show node -o` (text, one NodeName= line a node)"
)
PARTITIONS_EXPECTED = (
    "expected `scontrol show partition -o` (text, one PartitionName= line a partition), "
    "`scontrol show partitions --json` or slurmrestd's /partitions (JSON)"
)


class SlurmInput:
    """What one nodes document said: its nodes, partitions if it has them, release, name."""

    def __init__(
        self,
        nodes: list[SlurmNode],
        partitions: list[SlurmPartition] | None,
        release: str | None,
        cluster: str | None,
        layout: str,
    ) -> None:
        self.nodes, self.partitions = nodes, partitions
        self.release, self.cluster, self.layout = release, cluster, layout


def _json(text: str, source: str, expected: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise LoadError(f"not JSON ({e.msg}); {expected}", path=source, line=e.lineno) from None


def read_nodes(text: str, source: str) -> SlurmInput:
    """Nodes (and partitions, where the layout has them) from any nodes layout."""
    stripped = text.lstrip()
    if stripped.startswith("NodeName="):
        return SlurmInput(nodes_from_text(text, source), None, None, None, "scontrol show node -o")
    if stripped.startswith("PartitionName="):
        raise LoadError(
            "this is `scontrol show partition -o` output: give it to "
            "--partitions-from; " + NODES_EXPECTED,
            path=source,
        )
    if not stripped.startswith("{"):
        raise LoadError(NODES_EXPECTED, path=source, line=1)
    data = _json(text, source, NODES_EXPECTED)
    release, name = release_of(data), cluster_name_of(data)
    if isinstance(data, dict) and isinstance(data.get("sinfo"), list):
        nodes, parts = from_sinfo(data, source)
        return SlurmInput(nodes, parts, release, name, "sinfo --json (data_parser)")
    if isinstance(data, dict) and isinstance(data.get("nodes"), list):
        layout = "sinfo --json" if release and release < "23" else "nodes JSON"
        if (
            data["nodes"]
            and isinstance(data["nodes"][0], dict)
            and isinstance(data["nodes"][0].get("state"), list)
        ):
            layout = "scontrol show nodes --json / slurmrestd /nodes"
        return SlurmInput(nodes_from_json(data, source), None, release, name, layout)
    if isinstance(data, dict) and isinstance(data.get("partitions"), list):
        raise LoadError(
            "this is a partitions document: give it to --partitions-from; " + NODES_EXPECTED,
            path=source,
        )
    errors = data.get("errors") if isinstance(data, dict) else None
    if errors:
        raise LoadError(f"the JSON reports errors: {json.dumps(errors)[:300]}", path=source)
    raise LoadError(NODES_EXPECTED, path=source)


def read_partitions(text: str, source: str) -> list[SlurmPartition]:
    stripped = text.lstrip()
    if stripped.startswith("PartitionName="):
        return partitions_from_text(text, source)
    if stripped.startswith("{"):
        data = _json(text, source, PARTITIONS_EXPECTED)
        if isinstance(data, dict) and isinstance(data.get("partitions"), list):
            return partitions_from_json(data, source)
        if isinstance(data, dict) and isinstance(data.get("sinfo"), list):
            return from_sinfo(data, source)[1] or []
    raise LoadError(PARTITIONS_EXPECTED, path=source, line=1)


def import_slurm(
    nodes: SlurmInput,
    partitions: list[SlurmPartition] | None = None,
    *,
    cluster: str | None = None,
    source: str = "sinfo --json",
    partitions_source: str | None = None,
) -> ImportedCluster:
    """The inventory cluster for one nodes document (+ a partitions document)."""
    parts = partitions if partitions is not None else nodes.partitions
    if partitions is not None and nodes.partitions:
        known = {p.name for p in partitions}
        parts = partitions + [p for p in nodes.partitions if p.name not in known]
    name = cluster or nodes.cluster or "slurm"
    header = [
        f'Inventory of Slurm cluster "{name}", imported by `router inventory import slurm`',
        f"from {source}"
        + (f" and {partitions_source}" if partitions_source else "")
        + (f" (Slurm {nodes.release})." if nodes.release else "."),
        "Usable nodes only: nodes that are down, drained, failed, in maintenance or reserved",
        "are left out (listed below); powered-down nodes Slurm can power up are max_nodes.",
        "Slurm does not know costs: add them here (a new import writes the file afresh).",
    ]
    if parts is None:
        header.append(
            "No partition limits were read (scontrol show partition -o): max_time "
            "and the partitions' other limits are unknown."
        )
    return build_cluster(nodes.nodes, parts, cluster=name, source=header)
