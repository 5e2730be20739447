"""Small platforms written to a temporary folder, for tests of the whole pipeline."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "ml-platform"


def target(
    name: str, nodes: int, gpus: int, cpus: int, memory: str | int, **fields: Any
) -> dict[str, Any]:
    """A Slurm partition, node pool or node set of `nodes` identical nodes, as inventory.yaml
    writes it (gpu_type h100 when it has GPUs); `fields` add to it or override."""
    out: dict[str, Any] = {"name": name, "nodes": nodes}
    if gpus:
        out |= {"gpus_per_node": gpus, "gpu_type": "h100"}
    out |= {"cpus_per_node": cpus, "memory_per_node": memory}
    return out | fields


def slurm(*partitions: dict[str, Any], name: str = "hpc", **fields: Any) -> dict[str, Any]:
    """A Slurm cluster of these partitions; `fields` such as node_sets=[target(...)]."""
    return {"name": name, "backend": "slurm", **fields, "partitions": list(partitions)}


def kubernetes(*pools: dict[str, Any], name: str = "k8s", **fields: Any) -> dict[str, Any]:
    """A Kubernetes cluster of these node pools."""
    return {"name": name, "backend": "kubernetes", **fields, "node_pools": list(pools)}


def platform(*clusters: dict[str, Any]) -> dict[str, Any]:
    """An inventory document of these clusters."""
    return {"clusters": list(clusters)}


def write_policy(factory: pytest.TempPathFactory, text: str, name: str) -> Path:
    """A policy file `name` in a fresh folder (for module-scoped fixtures)."""
    path = factory.mktemp("policy") / name
    path.write_text(text)
    return path


GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
INVENTORY: dict[str, Any] = platform(
    slurm(
        target("h100", 2, 8, 96, "1TiB", max_time="72h", features=["ib"], cost_per_gpu_hour=2.5),
        target("a100", 2, 8, 64, "512GiB", gpu_type="a100", max_time="48h", features=["ib"],
               cost_per_gpu_hour=1.5),
        target("cpu", 4, 0, 64, "256GiB", max_time="24h"),
    ),
    kubernetes(
        target("l4", 2, 4, 48, "192GiB", gpu_type="l4", max_nodes=4, cost_per_gpu_hour=0.8,
               labels={"pool": "l4"}, taints=[GPU_TAINT]),
        target("cpu", 4, 0, 32, "128GiB", labels={"pool": "cpu"}),
    ),
)  # fmt: skip

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


def inventory_error(path: Path, text: str) -> str:
    """The message of loading `text`, written to the inventory file `path`, which must fail."""
    from router.errors import RouterError
    from router.models import load_inventory

    path.write_text(text)
    with pytest.raises(RouterError) as e:
        load_inventory(path)
    return str(e.value)
