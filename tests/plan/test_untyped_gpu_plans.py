"""Plans over a partition with GPUs of no stated type (`gpu_type: any`): only workloads asking
for any GPU type land there, a typed one is told why not, and the policy reads the partition's
gpu_type as "any"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from router.cli.main import cli
from router.config import load_project
from router.plan.build import build_plan
from tests.helpers import job, make_project, plan_json_twice, platform, slurm, target

INVENTORY: dict[str, Any] = platform(
    slurm(
        target("h100", 2, 8, 96, "1TiB", cost_per_gpu_hour=2.5),
        target("plain", 2, 4, 64, "512GiB", gpu_type="any", cost_per_gpu_hour=0.5),
    )
)
POLICY = "rule gpu: when gpus > 0 route slurm prefer lower cost\n"
UNTYPED_REASON = "hpc/plain: has GPUs of no stated type, the workload asks for h100"


def test_any_job_lands_on_the_untyped_partition_and_h100_does_not(tmp_path: Path) -> None:
    workloads = [
        job("any-job", gpus=8, cpus=16, memory="64GiB"),
        job("h100-job", gpus=8, gpu_type="h100", cpus=16, memory="64GiB"),
        job("too-big", gpus=32, gpu_type="h100", cpus=16, memory="64GiB"),
    ]
    root = make_project(tmp_path / "p", workloads, POLICY, INVENTORY)
    plan = build_plan(load_project(root))
    where = {p.workload.name: p for p in plan.placements}
    assert {n: p.target.id for n, p in where.items()} == {
        "any-job": "hpc/plain",
        "h100-job": "hpc/h100",
    }
    r = where["any-job"].resources
    assert (r.nodes, r.gpus_per_node, r.gpu_type) == (2, 4, None)
    assert where["h100-job"].resources.gpu_type == "h100"
    (unplaced,) = plan.unplaced
    assert unplaced.decision.workload.name == "too-big"
    assert UNTYPED_REASON in unplaced.reasons

    doc = json.loads(plan_json_twice(root, tmp_path))
    (any_job,) = [p for p in doc["placements"] if p["workload"] == "any-job"]
    assert "gpu_type" not in any_job["resources"] and any_job["resources"]["gpus"] == 8
    (too_big,) = doc["unplaced"]
    assert UNTYPED_REASON in too_big["reasons"]

    result = CliRunner().invoke(cli, ["plan", str(root)])
    assert result.exit_code == 3, result.output
    assert "any-job   training  plain   2× 4 gpu, 8 cpu, 32GiB excl" in result.output
    script = (root / "out" / "slurm" / "hpc" / "any-job.sbatch").read_text()
    assert "#SBATCH --partition=plain\n#SBATCH --nodes=2\n" in script
    assert "#SBATCH --gpus-per-node=4\n" in script
    typed = (root / "out" / "slurm" / "hpc" / "h100-job.sbatch").read_text()
    assert "#SBATCH --gpus-per-node=h100:8\n" in typed

    explain = CliRunner().invoke(cli, ["explain", "too-big", str(root), "--format", "json"])
    assert explain.exit_code == 0, explain.output
    assert UNTYPED_REASON in json.loads(explain.output)["reasons"]


def test_where_reads_an_untyped_partitions_gpu_type_as_any(tmp_path: Path) -> None:
    policy = (
        'rule typed: when labels.want == "h100" route slurm where gpu_type == "h100"\n'
        'rule plain: when labels.want == "plain" route slurm where gpu_type == "any"\n'
        "rule same: route slurm where gpu_type == workload.gpu_type\n"
    )
    workloads = [
        job("wants-h100", gpus=4, cpus=8, memory="32GiB", labels={"want": "h100"}),
        job("wants-plain", gpus=4, cpus=8, memory="32GiB", labels={"want": "plain"}),
        job("same-any", gpus=4, cpus=8, memory="32GiB"),
        job("same-h100", gpus=4, gpu_type="h100", cpus=8, memory="32GiB"),
    ]
    root = make_project(tmp_path / "p", workloads, policy, INVENTORY)
    plan = build_plan(load_project(root))
    assert {p.workload.name: p.target.id for p in plan.placements} == {
        "wants-h100": "hpc/h100",
        "wants-plain": "hpc/plain",
        "same-any": "hpc/plain",
        "same-h100": "hpc/h100",
    }
