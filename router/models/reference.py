"""The inventory and workload reference pages (docs/reference/*.md), generated from the
pydantic models and their JSON Schemas, so the pages say what the loader accepts.

    python -m router.models.reference            # rewrite docs/reference/
    python -m router.models.reference --check    # exit 1 if a page is out of date

tests/docs checks that the pages in the repository are what this writes.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from router.models.inventory import Cluster, Inventory, MigGroup, NodePool, Partition, Taint
from router.models.workload import Replicas, Workload

PAGES: dict[str, tuple[str, list[type[BaseModel]]]] = {
    "inventory": (
        "inventory.yaml: the clusters router places work on",
        [Inventory, Cluster, Partition, NodePool, MigGroup, Taint],
    ),
    "workload": ("workloads/*.yaml: what users ask to run", [Workload, Replicas]),
}
INTRO = {
    "inventory": (
        "An inventory file holds one mapping with `clusters:`. Each cluster is a Slurm cluster\n"
        "(with `partitions`) or a Kubernetes cluster (with `node_pools`); both are *targets*:\n"
        "a set of identical nodes. Quantities take units (`2TiB`, `72h`); see\n"
        "[the language reference](../language.md#quantities-and-units). `router schema\n"
        "inventory` prints the JSON Schema; `router inventory import` writes one from a live\n"
        "cluster."
    ),
    "workload": (
        "A workload file holds one workload (a mapping), a list of them, or several YAML\n"
        "documents. Names are unique across all files. A *job* (anything that is not a\n"
        "service) states `gpus`, `cpus` and `memory` in total across its nodes; a *service*\n"
        "(`kind: inference`, or anything with `replicas`) states them per replica. `router\n"
        "schema workload` prints the JSON Schema."
    ),
}

# Words for the fields whose model gives no description. Kept here so the models (which
# other work is changing) stay as they are; a test fails when a field has neither, so a
# new field cannot reach the page without one. Moving these into Field(description=...)
# is the next step.
NOTES: dict[tuple[str, str], str] = {
    ("Inventory", "clusters"): "every cluster, Slurm and Kubernetes alike",
    ("Cluster", "name"): "the cluster's name, as policies read `cluster` (DNS-1123 label)",
    ("Cluster", "backend"): "which scheduler runs it",
    ("Cluster", "partitions"): "a Slurm cluster's partitions (at least one)",
    ("Cluster", "node_pools"): "a Kubernetes cluster's node pools (at least one)",
    ("Cluster", "labels"): "labels of the cluster, for people and tools",
    ("Target", "name"): "its name in the cluster, as policies read `name`; its target id is "
    "`cluster/name`",
    ("Target", "nodes"): "how many identical nodes it has",
    ("Target", "gpus_per_node"): "GPUs on each node",
    ("Target", "cpus_per_node"): "CPUs on each node",
    ("Target", "features"): 'Slurm node features (`"ib" in features` in a policy)',
    ("Target", "labels"): "node labels (`labels.zone` in a policy); a pool's become its "
    "manifests' node selector",
    ("Target", "cost_per_gpu_hour"): "what a GPU hour costs, as policies read `cost`",
    ("Target", "cost_per_node_hour"): "what a node hour costs",
    ("Partition", "qos"): "the QOS scripts ask for when the route sets none",
    ("Partition", "account"): "the account scripts charge when the route sets none",
    ("Partition", "default"): "the cluster's default partition (at most one)",
    ("NodePool", "max_nodes"): "the cluster autoscaler's ceiling: capacity counts this many",
    ("NodePool", "taints"): "taints of its nodes; placed workloads get the tolerations",
    ("NodePool", "namespace"): "the namespace of its workloads when the route sets none",
    ("Taint", "key"): "the taint's key",
    ("Taint", "value"): "its value",
    ("Taint", "effect"): "what it does to pods without the toleration",
    ("Workload", "team"): "who owns it: quotas and namespaces are often per team",
    ("Workload", "labels"): "labels (`labels.app` in a policy), copied to manifests",
    ("Workload", "image"): "the container image it runs",
    ("Workload", "env"): "environment variables",
    ("Workload", "workdir"): "the working folder (an absolute path)",
    ("Workload", "nodes"): "nodes of a multi-node job; without it, derived from the "
    "target (64 GPUs on 8-GPU nodes is 8 nodes); a job of more than one node takes its nodes "
    "whole (Slurm `--exclusive`)",
    ("Workload", "gpus_per_node"): "GPUs on each node, when not all on one",
    ("Workload", "cpus"): "CPUs (jobs: total across nodes; services: per replica)",
    ("Workload", "preemptible"): "planned work that any better plan may take the place of",
    ("Replicas", "min"): "replicas that always run (they count against capacity)",
    ("Replicas", "max"): "the most replicas an autoscaler may add",
}


def description(model: type[BaseModel], name: str) -> str:
    """The field's description: the model's own, else NOTES (looked up by the classes the
    model inherits the field from, nearest first)."""
    own = model.model_fields[name].description
    if own:
        return own
    for cls in model.__mro__:
        if (cls.__name__, name) in NOTES:
            return NOTES[(cls.__name__, name)]
    return ""


def _type(prop: dict[str, Any]) -> str:
    """A property's JSON Schema type in a few words."""
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    if "enum" in prop:
        return " \\| ".join(f"`{v}`" for v in prop["enum"])
    if "const" in prop:
        return f"`{prop['const']}`"
    if "anyOf" in prop or "oneOf" in prop:
        parts = [_type(p) for p in prop.get("anyOf", prop.get("oneOf", []))]
        return " or ".join(dict.fromkeys(p for p in parts if p != "null")) + (
            " (optional)" if "null" in parts else ""
        )
    kind = prop.get("type")
    if isinstance(kind, list):
        return " or ".join(k for k in kind if k != "null")
    if kind == "array":
        return f"list of {_type(prop.get('items', {}))}"
    if kind == "object":
        extra = prop.get("additionalProperties")
        return f"map of {_type(extra)}" if isinstance(extra, dict) else "mapping"
    return {
        "integer": "whole number",
        "number": "number",
        "string": "string",
        "boolean": "true or false",
        "null": "null",
    }.get(str(kind), "any")


def _limits(prop: dict[str, Any]) -> str:
    out = []
    for p in [prop, *prop.get("anyOf", [])]:
        if "minimum" in p:
            out.append(f"≥ {p['minimum']}")
        if "maximum" in p:
            out.append(f"≤ {p['maximum']}")
        if "maxLength" in p:
            out.append(f"at most {p['maxLength']} characters")
    return ", ".join(dict.fromkeys(out))


def _default(model: type[BaseModel], name: str) -> str:
    f = model.model_fields[name]
    if f.is_required():
        return "**required**"
    if f.default_factory is not None:
        value = f.default_factory()  # type: ignore[call-arg]
        return "empty" if not value else f"`{value}`"
    if f.default is None:
        return "—"
    if f.default == "":
        return '`""`'
    if isinstance(f.default, bool):
        return f"`{str(f.default).lower()}`"
    return f"`{f.default}`"


def _section(model: type[BaseModel]) -> list[str]:
    schema = model.model_json_schema(mode="validation")
    doc = " ".join(inspect.cleandoc(model.__doc__ or "").split("\n"))
    lines = [
        f"## {model.__name__}",
        "",
        *([doc, ""] if doc else []),
        "| field | type | default | |",
        "|---|---|---|---|",
    ]
    for name, prop in schema.get("properties", {}).items():
        described = description(model, name)
        limits = _limits(prop)
        text = described + (f" ({limits})" if limits and limits not in described else "")
        cell = text.replace("|", "\\|")
        lines.append(f"| `{name}` | {_type(prop)} | {_default(model, name)} | {cell} |")
    return [*lines, ""]


def render(kind: str) -> str:
    """The Markdown page for `kind` ("inventory" or "workload")."""
    title, models = PAGES[kind]
    lines = [
        f"# {title}",
        "",
        "<!-- Generated by `python -m router.models.reference` from router/models; "
        "do not edit. -->",
        "",
        INTRO[kind],
        "",
    ]
    for model in models:
        lines += _section(model)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str]) -> int:
    folder = Path(__file__).resolve().parents[2] / "docs" / "reference"
    stale = []
    for kind in PAGES:
        path = folder / f"{kind}.md"
        text = render(kind)
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path)
        if "--check" not in argv:
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{'out of date' if '--check' in argv else 'wrote'}: {path}")
    return 1 if stale and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
