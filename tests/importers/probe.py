"""Probes of an imported inventory through `router plan`: how many of N identical jobs fit.

`router plan` places each job on real nodes (per node, a node shared by partitions counted
once), so the number placed is what the imported inventory claims the cluster can hold. The
probes ask for more than can fit; the count placed must be exactly the cluster's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from router.config import load_project
from router.models import Inventory
from router.models.capacity import node_classes
from router.plan.build import build_plan
from tests.helpers import make_project

POLICY = """
policy probe
rule whole: when labels.probe == "whole" route any exclusive
rule rest: route any
"""


def placed(tmp: Path, inventory_yaml: str, count: int, **fields: Any) -> int:
    """How many of `count` jobs with these fields `router plan` places on the inventory."""
    base: dict[str, Any] = {
        "kind": "batch",
        "gpus": 0,
        "cpus": 1,
        "memory": "1GiB",
        "duration": "1h",
        "command": ["sleep", "1"],
        "image": "busybox:1",
    }
    base.update(fields)
    jobs = [{**base, "name": f"probe-{i}"} for i in range(count)]
    root = make_project(tmp, jobs, policy=POLICY, inventory=yaml.safe_load(inventory_yaml))
    plan = build_plan(load_project(root))
    return len(plan.placements)


def whole_nodes(tmp: Path, inventory_yaml: str, count: int, duration: str = "1h") -> int:
    """Jobs that each take a whole node (Slurm --exclusive)."""
    return placed(tmp, inventory_yaml, count, labels={"probe": "whole"}, duration=duration)


def single_gpus(tmp: Path, inventory_yaml: str, count: int, gpu_type: str) -> int:
    return placed(tmp, inventory_yaml, count, gpus=1, gpu_type=gpu_type)


def held(inventory_yaml: str, gpu_type: str | None = None) -> int:
    """What the inventory says the cluster holds, node by node, each node once: its nodes
    (counting powered-down headroom), or with `gpu_type` its whole GPUs of that type."""
    inv = Inventory.model_validate(yaml.safe_load(inventory_yaml))
    total = 0
    for sid, classes in node_classes(inv).items():
        spec = inv.node_set(sid).spec
        for c in classes:
            if gpu_type is None:
                total += c.count
            elif spec.gpus_per_node and gpu_type in ("any", spec.gpu_type):
                total += c.count * c.free.gpus
    return total
