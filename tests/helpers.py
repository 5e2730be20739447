"""Small platforms written to a temporary folder, for tests of the whole pipeline."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import yaml

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "ml-platform"

INVENTORY: dict[str, Any] = {
    "clusters": [
        {
            "name": "hpc",
            "backend": "slurm",
            "partitions": [
                {
                    "name": "h100",
                    "nodes": 2,
                    "gpus_per_node": 8,
                    "gpu_type": "h100",
                    "cpus_per_node": 96,
                    "memory_per_node": "1TiB",
                    "max_time": "72h",
                    "features": ["ib"],
                    "cost_per_gpu_hour": 2.5,
                },
                {
                    "name": "a100",
                    "nodes": 2,
                    "gpus_per_node": 8,
                    "gpu_type": "a100",
                    "cpus_per_node": 64,
                    "memory_per_node": "512GiB",
                    "max_time": "48h",
                    "features": ["ib"],
                    "cost_per_gpu_hour": 1.5,
                },
                {
                    "name": "cpu",
                    "nodes": 4,
                    "cpus_per_node": 64,
                    "memory_per_node": "256GiB",
                    "max_time": "24h",
                },
            ],
        },
        {
            "name": "k8s",
            "backend": "kubernetes",
            "node_pools": [
                {
                    "name": "l4",
                    "nodes": 2,
                    "max_nodes": 4,
                    "gpus_per_node": 4,
                    "gpu_type": "l4",
                    "cpus_per_node": 48,
                    "memory_per_node": "192GiB",
                    "cost_per_gpu_hour": 0.8,
                    "labels": {"pool": "l4"},
                    "taints": [
                        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
                    ],
                },
                {
                    "name": "cpu",
                    "nodes": 4,
                    "cpus_per_node": 32,
                    "memory_per_node": "128GiB",
                    "labels": {"pool": "cpu"},
                },
            ],
        },
    ]
}

POLICY = """
policy test
rule big: when kind == "training" and gpus >= 8 → slurm exclusive
rule small: when kind == "training" route slurm else route kubernetes
rule serve: when kind == "inference" route kubernetes with hpa
rule rest: route any prefer lower cost
"""


def make_project(
    root: Path,
    workloads: list[dict[str, Any]],
    policy: str = POLICY,
    inventory: dict[str, Any] | None = None,
) -> Path:
    """Write router.yaml, policies/policy.route, inventory.yaml and workloads/all.yaml."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "router.yaml").write_text(
        "policy: policies\ninventory: inventory.yaml\nworkloads: workloads\nout: out\n"
    )
    (root / "policies").mkdir(exist_ok=True)
    (root / "policies" / "policy.route").write_text(textwrap.dedent(policy).lstrip())
    (root / "inventory.yaml").write_text(yaml.safe_dump(inventory or INVENTORY, sort_keys=False))
    (root / "workloads").mkdir(exist_ok=True)
    (root / "workloads" / "all.yaml").write_text(yaml.safe_dump(workloads, sort_keys=False))
    return root


def job(name: str, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": name,
        "kind": "training",
        "gpus": 8,
        "cpus": 32,
        "memory": "256GiB",
        "duration": "12h",
        "command": ["python", "t.py"],
        "image": "ghcr.io/example/train:1.0",
    }
    base.update(fields)
    return base


def plan_json_twice(root: Path, tmp_path: Path) -> bytes:
    """plan.json of two `router plan` runs of `root`; asserts they are the same bytes."""
    from click.testing import CliRunner

    from router.cli.main import cli

    outs = []
    for run in ("one", "two"):
        r = CliRunner().invoke(cli, ["plan", str(root), "--out", str(tmp_path / run)])
        assert r.exit_code in (0, 3), r.output
        outs.append((tmp_path / run / "plan.json").read_bytes())
    assert outs[0] == outs[1]
    return outs[0]
