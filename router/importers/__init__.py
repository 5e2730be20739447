"""Inventory importers: what a live cluster (or its saved JSON) says → an inventory YAML.

Each backend's importer is pure (data in, `ImportedCluster` out; the command line runs
`sinfo`, `scontrol` or `kubectl`) and every importer shares one YAML writer,
`render_inventory`, so all imported inventories look alike: a comment saying where the data
came from, one cluster, the nodes left out (one comment line each, the same lines the command
prints on stderr), its node sets and then its targets in name order, and the importer's notes
as comments above what they are about. No timestamps: importing the same data twice gives the
same bytes, so the file diffs cleanly.

Contract for another backend: return an `ImportedCluster` whose node sets' and targets'
`fields` are the inventory fields in the order they should be written.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Any

import yaml

__all__ = ["ImportedCluster", "ImportedTarget", "one_line", "render_inventory"]


@dataclass
class ImportedTarget:
    """One partition or node pool: its inventory fields, and notes for the reader."""

    fields: dict[str, Any]
    notes: list[str] = field(default_factory=list)


@dataclass
class ImportedCluster:
    name: str
    backend: str  # "slurm" or "kubernetes"
    targets: list[ImportedTarget]
    source: list[str]  # header lines: what was read, and how
    notes: list[str] = field(default_factory=list)  # about the cluster, e.g. skipped targets
    node_sets: list[ImportedTarget] = field(default_factory=list)
    # One line per node left out: "h100-04: drained (reason: bad GPU), left out"
    exclusions: list[str] = field(default_factory=list)

    @property
    def targets_key(self) -> str:
        return "partitions" if self.backend == "slurm" else "node_pools"


def one_line(text: str, limit: int = 300) -> str:
    """Text from a cluster reduced to one printable line, safe inside a YAML comment."""
    return "".join(ch if ch.isprintable() else "?" for ch in text)[:limit]


def _comments(lines: list[str], indent: str, width: int = 100) -> list[str]:
    """Comment lines, wrapped; a line's leading spaces are kept on its continuation lines."""
    out = []
    for line in lines:
        text = one_line(line)
        lead = " " * (len(text) - len(text.lstrip(" ")))
        wrapped = textwrap.wrap(
            text,
            width - len(indent) - 2,
            initial_indent="",
            subsequent_indent=lead + "  ",
            break_on_hyphens=False,
            drop_whitespace=True,
        ) or [""]
        out += [
            f"{indent}# {lead if i == 0 else ''}{part}".rstrip() for i, part in enumerate(wrapped)
        ]
    return out


def render_inventory(cluster: ImportedCluster) -> str:
    """The inventory YAML: deterministic, block style, leaf lists in flow style."""
    out = _comments(cluster.source, "")
    out += ["clusters:", f"  - name: {_scalar(cluster.name)}", f"    backend: {cluster.backend}"]
    out += _comments(cluster.notes, "    ")
    if cluster.exclusions:  # one line each, unwrapped: the same lines as on stderr
        out.append(f"    # Left out ({len(cluster.exclusions)}):")
        out += [f"    #   {one_line(line)}" for line in cluster.exclusions]
    if cluster.node_sets:
        out.append("    node_sets:")
        out += _items(cluster.node_sets)
    out.append(f"    {cluster.targets_key}:")
    out += _items(cluster.targets)
    return "\n".join(out) + "\n"


def _items(items: list[ImportedTarget]) -> list[str]:
    out: list[str] = []
    for item in sorted(items, key=lambda t: str(t.fields["name"])):
        out += _comments(item.notes, "      ")
        body = [line for key, value in item.fields.items() for line in _field(key, value)]
        out += [("      - " if i == 0 else "        ") + line for i, line in enumerate(body)]
    return out


def _field(key: str, value: Any) -> list[str]:
    """`key: value`; a list or mapping of scalars in flow style ([ib, lustre]), keys sorted."""
    if not isinstance(value, (list, dict)):
        return [f"{key}: {_scalar(value)}"]
    text: str = yaml.safe_dump(
        {key: value}, sort_keys=True, default_flow_style=None, width=10_000, allow_unicode=True
    )
    return text.splitlines()


def _scalar(value: Any) -> str:
    text: str = yaml.safe_dump(value, default_flow_style=True, width=10_000, allow_unicode=True)
    return text.removesuffix("\n...\n").strip()
