"""The sbatch router writes for imported targets: the real partition name, the sub-target's
constraint or nodelist, and the exact GRES type (tests/slurm/test_inventory_import.py submits
such scripts to a live slurmctld)."""

from __future__ import annotations

from pathlib import Path

import yaml

from router.config import load_project
from router.emit.slurm import render
from router.plan.build import build_plan
from tests.helpers import job, make_project
from tests.importers.test_slurm_fixtures import inventory


def scripts(
    tmp: Path, nodes: str, partitions: str | None, target: str, **fields: object
) -> list[str]:
    text, _ = inventory(nodes, partitions)
    policy = f'rule only: route slurm where name == "{target}"\n'
    root = make_project(tmp, [job("w", **fields)], policy=policy, inventory=yaml.safe_load(text))
    plan = build_plan(load_project(root))
    (placement,) = plan.placements
    return [line for line in render(placement).splitlines() if line.startswith("#SBATCH")]


def test_nodelist_and_exact_gres_type(tmp_path: Path) -> None:
    lines = scripts(
        tmp_path,
        "restd-nodes-23.11.1.json",
        "restd-partitions-23.11.1.json",
        "gpu-a100x1",
        gpus=1,
        gpu_type="a100",
        cpus=8,
        memory="32GiB",
        duration="2h",
    )
    assert "#SBATCH --partition=gpu" in lines
    assert "#SBATCH --nodelist=n0160" in lines
    assert "#SBATCH --gpus-per-node=nvidia_a100_80gb_pcie:1" in lines


def test_constraint_of_a_mixed_partition(tmp_path: Path) -> None:
    lines = scripts(
        tmp_path,
        "restd-nodes-23.11.1.json",
        "restd-partitions-23.11.1.json",
        "preempt-h100x8",
        gpus=8,
        gpu_type="h100",
        cpus=64,
        memory="512GiB",
        duration="2d",
    )
    assert "#SBATCH --partition=preempt" in lines
    assert "#SBATCH --constraint=8480cl" in lines
    assert "#SBATCH --gpus-per-node=nvidia_h100_80gb_hbm3:8" in lines
