"""JSON Schemas of the files users write, generated from the pydantic models.

Keys are sorted at every level, so the dumped schema is stable.
"""

from __future__ import annotations

from typing import Any, Literal

from router.models.inventory import Inventory
from router.models.workload import Workload

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def json_schema(kind: Literal["inventory", "workload"]) -> dict[str, Any]:
    """The JSON Schema of an inventory file, or of a workload file (one workload or a list)."""
    if kind == "inventory":
        schema = Inventory.model_json_schema(mode="validation")
        schema["title"] = "router inventory"
    elif kind == "workload":
        workload = Workload.model_json_schema(mode="validation")
        defs = workload.pop("$defs", {})
        defs["Workload"] = workload
        ref = {"$ref": "#/$defs/Workload"}
        schema = {
            "title": "router workloads",
            "description": "One workload, or a list of workloads (a file may also hold several"
            " YAML documents, each one of these).",
            "oneOf": [ref, {"type": "array", "items": ref}],
            "$defs": defs,
        }
    else:
        raise ValueError(f"no schema for {kind!r}: choose inventory or workload")
    schema["$schema"] = DIALECT
    out: dict[str, Any] = sorted_keys(schema)
    return out


def sorted_keys(value: Any) -> Any:
    """`value` with every mapping's keys in sorted order, at every level (the schemas here;
    plan.json's placement options, plan/document.py)."""
    if isinstance(value, dict):
        return {k: sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sorted_keys(v) for v in value]
    return value
