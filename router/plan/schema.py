"""The JSON Schema of plan.json, format_version "1" (what `router schema plan` prints)."""

from __future__ import annotations

from typing import Any

_STR = {"type": "string"}
_INT = {"type": "integer"}
_NUM = {"type": ["number", "null"]}


def _obj(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {**required, **(optional or {})},
        "required": sorted(required),
    }


def _list(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": item}


def plan_schema() -> dict[str, Any]:
    resources = _obj(
        {
            "nodes": _INT,
            "gpus": _INT,
            "gpus_per_node": _INT,
            "cpus": _INT,
            "cpus_per_node": _INT,
            "memory_mib": _INT,
            "memory_per_node_mib": _INT,
            "time_seconds": _INT,
            "exclusive": {"type": "boolean"},
            "whole_nodes": _INT,
        },
        {
            "gpu_type": _STR,
            "mig": _STR,
            "array_parallel": _INT,
            "replicas": _obj({"min": _INT, "max": _INT}),
        },
    )
    placement = _obj(
        {
            "workload": _STR,
            "kind": _STR,
            "team": _STR,
            "backend": {"enum": ["slurm", "kubernetes"]},
            "cluster": _STR,
            "target": _STR,
            "target_id": _STR,
            "rule": _STR,
            "rule_source": {"type": "string", "pattern": r"^.+:\d+$"},
            "rank": _INT,
            "options": {"type": "object"},
            "resources": resources,
            "artifacts": _list(_STR),
            # one entry per pod (service replica, job task) or per whole node taken
            "nodes": _list(_obj({"node_set": _STR, "node": _INT}, {"name": _STR})),
        },
        {
            "after": _list(
                _obj(
                    {"workload": _STR, "supported": {"type": "boolean"}},
                    {"backend": _STR, "cluster": _STR},
                )
            )
        },
    )
    nullable = {"type": ["string", "null"]}
    reasons = _obj({"workload": _STR, "reasons": _list(_STR)}, {"rule": nullable, "fix": nullable})
    usage = _obj({"capacity": _INT, "used": _INT})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "router plan.json",
        **_obj(
            {
                "format_version": {"const": "1"},
                "router_version": _STR,
                "policy": {"type": ["string", "null"]},
                "inputs": {
                    "type": "object",
                    "additionalProperties": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                },
                "summary": _obj(
                    {k: _INT for k in ("workloads", "placed", "denied", "unrouted", "unplaced")},
                    {"by_backend": {"type": "object"}},
                ),
                "placements": _list(placement),
                "denied": _list(
                    _obj({"workload": _STR, "message": _STR}, {"rule": _STR, "rule_source": _STR})
                ),
                "unrouted": _list(reasons),
                "unplaced": _list(reasons),
                "targets": _list(
                    _obj(
                        {
                            "id": _STR,
                            "backend": _STR,
                            "cluster": _STR,
                            "placements": _INT,
                            "gpus": usage,
                            "cpus": usage,
                            "memory_mib": usage,
                            "nodes": usage,
                        }
                    )
                ),
                "solver": _obj(
                    {
                        "status": {
                            "enum": [
                                "OPTIMAL",
                                "FEASIBLE",
                                "INFEASIBLE",
                                "UNKNOWN",
                                "MODEL_INVALID",
                                "EMPTY",
                            ]
                        },
                        "objective": _INT,
                        "bound": _INT,
                        "lp_bound": _NUM,
                        "gap": _NUM,
                        "seed": _INT,
                        "workers": {"const": "any"},
                        "levels": _list(
                            _obj({"name": _STR, "status": _STR, "value": _INT, "bound": _INT})
                        ),
                    }
                ),
            },
            {
                "diff": {"type": "object"},
                "scale_out": _list(
                    _obj(
                        {
                            "target_id": _STR,
                            "services": _INT,
                            "replicas_min": _INT,
                            "replicas_max": _INT,
                            "more_nodes": _INT,
                        }
                    )
                ),
                "preempted": _list(
                    _obj(
                        {
                            "workload": _STR,
                            "priority": _INT,
                            "target_id": _STR,
                            "by": _list(_STR),
                            "reason": _STR,
                        }
                    )
                ),
            },
        ),
    }
