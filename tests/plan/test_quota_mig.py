"""A quota on `gpus` over MIG targets counts GPU devices (a whole GPU or a slice each) in its
usage and in the capacity a percentage is of: the audit's A1 and A2 (a whole node counted
as its 4 physical GPUs against a capacity of its 1 whole GPU; 56 slices against 0)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from router.cli.main import cli
from tests.helpers import job, kubernetes, make_project, platform, slurm, target

CUT = [{"gpus": 3, "slices": {"1g.10gb": 7}}]  # of 4 A100s: 1 whole, 21 slices


def plan_of(root: Path) -> dict[str, Any]:
    r = CliRunner().invoke(cli, ["plan", str(root), "--out", str(root / "out"), "-q"])
    assert r.exit_code == 0, r.output
    doc: dict[str, Any] = json.loads((root / "out" / "plan.json").read_text())
    return doc


def test_exclusive_jobs_on_a_mig_partition_within_100_percent(tmp_path: Path) -> None:
    inventory = platform(
        slurm(target("a100", 4, 4, 48, "256GiB", gpu_type="a100", mig=CUT)),
    )
    policy = """
    rule excl: when kind == "training" route slurm with exclusive
    quota whole_cluster:
      on cluster == "hpc"
      limit gpus <= 100%
    """
    jobs = [job(f"t{i}", gpus=1, cpus=8, memory="32GiB", duration="2h") for i in (1, 2, 3)]
    doc = plan_of(make_project(tmp_path, jobs, policy, inventory))
    assert sorted(p["workload"] for p in doc["placements"]) == ["t1", "t2", "t3"]
    (row,) = doc["targets"]
    # 3 whole nodes of 22 devices each, of 4 x 22.
    assert row["gpus"] == {"capacity": 88, "used": 66}


def test_slice_service_on_a_mig_only_pool_within_100_percent(tmp_path: Path) -> None:
    pool = target(
        "a100", 1, 8, 128, "1TiB", gpu_type="a100",
        mig=[{"gpus": 8, "slices": {"1g.10gb": 7}}], mig_strategy="single",
    )  # fmt: skip
    policy = """
    rule sliced: when kind == "inference" route kubernetes with mig = "1g.10gb"
    quota k8s_gpus:
      on cluster == "k8s"
      limit gpus <= 100%
    """
    service = job(
        "sliced", kind="inference", gpus=1, cpus=1, memory="4GiB",
        replicas={"min": 56, "max": 56},
    )  # fmt: skip
    del service["duration"]
    doc = plan_of(make_project(tmp_path, [service], policy, platform(kubernetes(pool))))
    assert [p["workload"] for p in doc["placements"]] == ["sliced"]
    (row,) = doc["targets"]
    assert row["gpus"] == {"capacity": 56, "used": 56}


def test_a_quota_of_devices_still_binds(tmp_path: Path) -> None:
    """The same partition with `gpus <= 50%` (44 of 88 devices) takes 2 whole nodes, not 3."""
    inventory = platform(
        slurm(target("a100", 4, 4, 48, "256GiB", gpu_type="a100", mig=CUT)),
    )
    policy = """
    rule excl: when kind == "training" route slurm with exclusive
    quota half:
      limit gpus <= 50%
    """
    jobs = [job(f"t{i}", gpus=1, cpus=8, memory="32GiB", duration="2h") for i in (1, 2, 3)]
    root = make_project(tmp_path, jobs, policy, inventory)
    r = CliRunner().invoke(cli, ["plan", str(root), "--out", str(root / "out"), "-q"])
    assert r.exit_code == 3, r.output
    doc = json.loads((root / "out" / "plan.json").read_text())
    assert len(doc["placements"]) == 2
    assert doc["targets"][0]["gpus"] == {"capacity": 88, "used": 44}
