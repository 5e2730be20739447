"""`router apply` against the live Slurm cluster: submit, record, skip what is in Slurm already.

Every test plans a small project with `router plan` (CliRunner), then applies it with `--hold`
so no job runs, and reads the jobs back with `scontrol show job`. Workload names differ from
test to test: apply finds a workload's earlier jobs by name in the (shared) session cluster.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from router.cli.main import cli
from tests.helpers import INVENTORY, job, make_project

from .harness import ROUTERTEST_PARTITIONS, SlurmCluster

pytestmark = pytest.mark.slurm

POLICY = """
rule big: when gpus >= 8 route slurm exclusive
rule serve: when kind == "inference" route kubernetes with hpa
rule jobs: route slurm
"""


def routertest(extra: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The session cluster as an inventory cluster (what `router inventory import` writes)."""
    parts = [
        {
            "name": s.name,
            "nodes": s.nodes,
            "cpus_per_node": s.cpus_per_node,
            "memory_per_node": s.memory_mb,
            "features": s.features,
            "default": s.default,
        }
        | (
            {"gpus_per_node": s.gpus_per_node, "gpu_type": s.router_gpu_type}
            if s.gpus_per_node
            else {}
        )
        | ({"max_time": f"{s.max_time_minutes}min"} if s.max_time_minutes else {})
        for s in ROUTERTEST_PARTITIONS
    ]
    return {"name": "routertest", "backend": "slurm", "partitions": parts + (extra or [])}


@pytest.fixture
def slurm_env(
    slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[SlurmCluster]:
    """The harness's Slurm environment; jobs (were they to run) write into tmp_path."""
    for key, value in slurm_cluster.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    yield slurm_cluster
    slurm_cluster.cancel_all()


def project(
    root: Path, prefix: str, *, train_gpus: int = 16, inventory: dict[str, Any] | None = None
) -> Path:
    workloads = [
        job(f"{prefix}-train", gpus=train_gpus, gpu_type="h100", cpus=64, memory="512GiB"),
        job(f"{prefix}-eval", gpus=4, gpu_type="a100", cpus=16, memory="64GiB", duration="2h"),
        job(f"{prefix}-prep", kind="batch", gpus=0, cpus=8, memory="16GiB", duration="1h"),
        job(
            f"{prefix}-web",
            kind="inference",
            gpus=1,
            gpu_type="l4",
            cpus=4,
            memory="16GiB",
            replicas={"min": 1, "max": 2},
            image="nginx:1.27",
            command=None,
        ),
    ]
    inv = inventory or {"clusters": [routertest(), INVENTORY["clusters"][1]]}
    return make_project(root, workloads, policy=POLICY, inventory=inv)


def plan(root: Path) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["plan", str(root)])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads((root / "out" / "plan.json").read_text())
    return doc


def apply(root: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["apply", str(root), "--hold", *args])


def record(root: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((root / "out" / "apply.json").read_text())
    return doc


def test_apply_submits_records_and_is_idempotent(slurm_env: SlurmCluster, tmp_path: Path) -> None:
    root = project(tmp_path / "p", "idem")
    doc = plan(root)
    slurm = {p["workload"]: p for p in doc["placements"] if p["backend"] == "slurm"}
    assert sorted(slurm) == ["idem-eval", "idem-prep", "idem-train"]

    first = apply(root)
    assert first.exit_code == 0, first.output
    assert first.stdout.splitlines()[-1] == (
        "Apply: 3 submitted, 0 unchanged, 0 failed; 1 Kubernetes placement not applied "
        f"(GitOps tools apply {root / 'out' / 'kubernetes'}/)"
    )
    rec = record(root)
    plan_sha = hashlib.sha256((root / "out" / "plan.json").read_bytes()).hexdigest()
    assert rec["plan_sha256"] == plan_sha and rec["failed"] == {}
    assert rec["kubernetes_not_applied"] == ["idem-web"]
    assert list(rec["jobs"]) == sorted(rec["jobs"]) == sorted(slurm)
    for name, entry in rec["jobs"].items():
        script = root / "out" / slurm[name]["artifacts"][0]
        sha = hashlib.sha256(script.read_bytes()).hexdigest()
        assert entry["cluster"] == "routertest" and entry["action"] == "submit"
        assert entry["script_sha256"] == sha and entry["plan_sha256"] == plan_sha
        shown = slurm_env.show_job(entry["job_id"])
        assert shown["JobName"] == name
        assert shown["Partition"] == slurm[name]["target"]
        assert shown["JobState"] == "PENDING" and shown["Reason"] == "JobHeldUser"
        assert shown["Comment"] == f"router:script={sha},plan={plan_sha}"
        assert shown["WorkDir"] == str(tmp_path)  # where apply ran, not out/
    assert slurm_env.show_job(rec["jobs"]["idem-train"]["job_id"])["NumNodes"].split("-")[0] == "2"

    jobs_before = sorted(slurm_env.job_ids())
    second = apply(root)
    assert second.exit_code == 0, second.output
    assert "Apply: 0 submitted, 3 unchanged, 0 failed" in second.stdout
    assert sorted(slurm_env.job_ids()) == jobs_before
    assert {n: e["job_id"] for n, e in record(root)["jobs"].items()} == {
        n: e["job_id"] for n, e in rec["jobs"].items()
    }

    # `router plan` replaces out/ (apply.json with it): Slurm still knows what was submitted.
    plan(root)
    assert not (root / "out" / "apply.json").exists()
    third = apply(root)
    assert "Apply: 0 submitted, 3 unchanged, 0 failed" in third.stdout, third.output
    assert sorted(slurm_env.job_ids()) == jobs_before


def test_a_changed_workload_is_submitted_again(slurm_env: SlurmCluster, tmp_path: Path) -> None:
    root = project(tmp_path / "p", "chg")
    plan(root)
    assert apply(root).exit_code == 0
    old = {n: e["job_id"] for n, e in record(root)["jobs"].items()}

    project(tmp_path / "p", "chg", train_gpus=8)  # one workload changes
    plan(root)
    dry = apply(root, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert (
        "would submit chg-train (routertest/gpu-h100) slurm/routertest/chg-train.sbatch "
        f"(changed: was job {old['chg-train']})" in dry.stdout
    )
    assert "Apply (dry run): 1 to submit, 2 unchanged, 0 failed; nothing submitted" in dry.stdout
    assert not (root / "out" / "apply.json").exists()
    assert sorted(slurm_env.job_ids()) == sorted(old.values())

    result = apply(root)
    assert result.exit_code == 0, result.output
    assert "Apply: 1 submitted, 2 unchanged, 0 failed" in result.stdout
    new = record(root)["jobs"]["chg-train"]
    assert new["action"] == "replace" and new["previous_job_id"] == old["chg-train"]
    assert (
        f"changed    chg-train (routertest/gpu-h100): was job {old['chg-train']}, "
        f"submitted {new['job_id']}\n" in result.stdout
    )
    assert slurm_env.show_job(new["job_id"])["NumNodes"].split("-")[0] == "1"
    assert slurm_env.job_state(old["chg-train"]) == "PENDING"  # not cancelled without --replace
    assert {n: e["job_id"] for n, e in record(root)["jobs"].items() if n != "chg-train"} == {
        n: i for n, i in old.items() if n != "chg-train"
    }

    project(tmp_path / "p", "chg", train_gpus=24)
    plan(root)
    replaced = apply(root, "--replace")
    assert "Apply: 1 submitted, 2 unchanged, 0 failed" in replaced.stdout, replaced.output
    assert f"was job {new['job_id']}, submitted " in replaced.stdout
    assert ", cancelled it" in replaced.stdout
    assert slurm_env.job_state(new["job_id"]) == "CANCELLED"
    newest = record(root)["jobs"]["chg-train"]
    assert newest["previous_cancelled"] is True
    assert slurm_env.job_state(newest["job_id"]) == "PENDING"


def test_a_cancelled_job_is_submitted_again(slurm_env: SlurmCluster, tmp_path: Path) -> None:
    root = project(tmp_path / "p", "cxl")
    plan(root)
    assert apply(root).exit_code == 0
    gone = record(root)["jobs"]["cxl-prep"]["job_id"]
    slurm_env.run(["scancel", str(gone)])
    result = apply(root)
    assert "Apply: 1 submitted, 2 unchanged, 0 failed" in result.stdout, result.output
    assert record(root)["jobs"]["cxl-prep"]["job_id"] != gone


def test_rejected_submission_fails_with_sbatchs_error(
    slurm_env: SlurmCluster, tmp_path: Path
) -> None:
    # The inventory has drifted: it lists a partition Slurm does not have.
    ghost = {"name": "ghost", "nodes": 2, "cpus_per_node": 8, "memory_per_node": "32GiB"}
    inv = {"clusters": [routertest([ghost]), INVENTORY["clusters"][1]]}
    policy = (
        'rule g: when team == "ghost" route slurm where name == "ghost"\nrule jobs: route slurm\n'
    )
    workloads = [
        job("bad-ghost", kind="batch", team="ghost", gpus=0, cpus=4, memory="8GiB"),
        job("bad-fine", kind="batch", gpus=0, cpus=4, memory="8GiB"),
    ]
    root = make_project(tmp_path / "p", workloads, policy=policy, inventory=inv)
    plan(root)
    result = apply(root)
    assert result.exit_code == 1
    assert "Apply: 1 submitted, 0 unchanged, 1 failed" in result.stdout
    assert result.stderr == (
        "failed     bad-ghost (routertest/ghost):\n"
        "  sbatch: error: invalid partition specified: ghost\n"
        "  sbatch: error: Batch job submission failed: Invalid partition name specified\n"
    )
    rec = record(root)
    assert list(rec["failed"]) == ["bad-ghost"] and list(rec["jobs"]) == ["bad-fine"]


def test_slurm_conf_per_cluster(
    slurm_env: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path / "p", "conf")
    plan(root)
    monkeypatch.delenv("SLURM_CONF")
    conf = slurm_env.env["SLURM_CONF"]
    result = apply(root, "--slurm-conf", f"routertest={conf}", "--slurm-conf", f"other={conf}")
    assert result.exit_code == 0, result.output
    assert "Apply: 3 submitted, 0 unchanged, 0 failed" in result.stdout
    assert "warning: --slurm-conf other=...: no Slurm placement on that cluster" in result.stderr
    bad = apply(root, "--slurm-conf", "routertest")
    assert bad.exit_code == 2 and "expected CLUSTER=PATH" in bad.output


def test_apply_needs_a_plan(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["apply", str(tmp_path)])
    assert result.exit_code == 1
    assert "no plan to apply: run `router plan` first" in result.output
    assert str(tmp_path / "out" / "plan.json") in result.output


def test_apply_refuses_a_plan_its_model_does_not_read(tmp_path: Path) -> None:
    root = make_project(tmp_path, [job("train")])
    assert CliRunner().invoke(cli, ["plan", str(root)]).exit_code == 0
    path = root / "out" / "plan.json"
    doc = json.loads(path.read_text())
    doc["placements"][0]["after"] = [{"workload": "prep"}]  # `supported` is missing
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(cli, ["apply", str(root), "--dry-run"])
    assert result.exit_code == 1, result.output
    assert "is not a plan router writes (placements.0.after.0.supported" in result.output
    assert "Traceback" not in result.output
