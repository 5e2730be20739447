"""`after:` dependencies end to end: load errors at the entry, plan.json's record of each edge,
`router check` refusing the ones Slurm cannot keep, and `router apply` (live, held jobs)
submitting parents first and refusing a job whose parent is on Kubernetes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from router.cli.main import cli
from tests.helpers import INVENTORY, make_project

from .harness import SlurmCluster
from .test_apply import routertest

POLICY = """
rule serve: when kind == "inference" route kubernetes
rule anywhere: when labels.where == "any" route any
rule jobs: route slurm
"""


def batch(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "kind": "batch", "cpus": 1, "memory": "1GiB", "duration": "10min",
            "command": ["true"], **fields}  # fmt: skip


def test_a_cycle_is_an_error_at_the_entry_that_closes_it(tmp_path: Path) -> None:
    root = make_project(tmp_path, [batch("a", after=["b"]), batch("b", after=["c"]),
                                   batch("c", after=["a"])], POLICY)  # fmt: skip
    for command in ("plan", "check"):
        r = CliRunner().invoke(cli, [command, str(root)])
        assert r.exit_code == 1, r.output
        assert "all.yaml:" in r.output and "a dependency cycle: a -> b -> c -> a" in r.output
        assert "after:\n" in r.output or "after: [b]" in r.output or "^" in r.output
        assert "Traceback" not in r.output


def test_an_unknown_name_in_after_has_a_did_you_mean(tmp_path: Path) -> None:
    root = make_project(tmp_path, [batch("prepare"), batch("train", after=["prepar"])], POLICY)
    r = CliRunner().invoke(cli, ["plan", str(root)])
    assert r.exit_code == 1
    assert 'after[0]: no workload is named "prepar"' in r.output
    assert 'did you mean "prepare"?' in r.output


def test_check_refuses_a_slurm_job_after_a_kubernetes_one(tmp_path: Path) -> None:
    served = {
        "name": "serve",
        "kind": "inference",
        "image": "ghcr.io/a/s:1",
        "cpus": 1,
        "memory": "1GiB",
        "replicas": 1,
    }
    root = make_project(tmp_path, [served, batch("report", after=["serve"])], POLICY, INVENTORY)
    r = CliRunner().invoke(cli, ["check", str(root)])
    assert r.exit_code == 1, r.output
    assert "report starts after serve, which may run on Kubernetes (k8s/cpu" in r.output
    assert "dependencies from Slurm to Kubernetes are not supported yet" in r.output
    # plan still plans, and records the edge as unsupported for `router apply`.
    r = CliRunner().invoke(cli, ["plan", str(root)])
    assert r.exit_code == 0, r.output
    doc = json.loads((root / "out" / "plan.json").read_text())
    (report,) = [p for p in doc["placements"] if p["workload"] == "report"]
    assert report["after"] == [
        {"workload": "serve", "backend": "kubernetes", "cluster": "k8s", "supported": False}
    ]


def test_check_accepts_dependencies_within_one_slurm_cluster(tmp_path: Path) -> None:
    root = make_project(tmp_path, [batch("a"), batch("b", after=["a"])], POLICY, INVENTORY)
    r = CliRunner().invoke(cli, ["check", str(root)])
    assert r.exit_code == 0, r.output


def test_a_job_after_a_workload_that_may_go_anywhere_is_refused(tmp_path: Path) -> None:
    anywhere = batch("a", labels={"where": "any"}, image="ghcr.io/a/b:1")
    root = make_project(tmp_path, [anywhere, batch("b", after=["a"])], POLICY, INVENTORY)
    r = CliRunner().invoke(cli, ["check", str(root)])
    assert r.exit_code == 1 and "b starts after a, which may run on Kubernetes" in r.output


# ---- live: router apply ---------------------------------------------------------------------


@pytest.fixture
def slurm_env(slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch,
              tmp_path: Path) -> Iterator[SlurmCluster]:  # fmt: skip
    for key, value in slurm_cluster.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    yield slurm_cluster
    slurm_cluster.cancel_all()


@pytest.mark.slurm
def test_apply_submits_parents_first_with_afterok(slurm_env: SlurmCluster, tmp_path: Path) -> None:
    inventory = {"clusters": [routertest()]}
    work = [batch("dep-c", after=["dep-a", "dep-b"]), batch("dep-b", after=["dep-a"]),
            batch("dep-a")]  # fmt: skip
    root = make_project(tmp_path / "p", work, POLICY, inventory)
    assert CliRunner().invoke(cli, ["plan", str(root)]).exit_code == 0
    r = CliRunner().invoke(cli, ["apply", str(root), "--hold"])
    assert r.exit_code == 0, r.output
    jobs = json.loads((root / "out" / "apply.json").read_text())["jobs"]
    a, b, c = (jobs[n]["job_id"] for n in ("dep-a", "dep-b", "dep-c"))
    assert a < b < c  # parents first
    assert jobs["dep-b"]["after_job_ids"] == [a]
    assert sorted(jobs["dep-c"]["after_job_ids"]) == [a, b]
    assert slurm_env.show_job(c)["Dependency"].startswith(f"afterok:{a}")
    assert f"afterok:{b}" in slurm_env.show_job(c)["Dependency"]
    assert "after_job_ids" not in jobs["dep-a"]


@pytest.mark.slurm
def test_apply_refuses_a_job_whose_parent_is_on_kubernetes(
    slurm_env: SlurmCluster, tmp_path: Path
) -> None:
    served = {
        "name": "kserve-x",
        "kind": "inference",
        "image": "ghcr.io/a/s:1",
        "cpus": 1,
        "memory": "1GiB",
        "replicas": 1,
    }
    inventory = {"clusters": [routertest(), INVENTORY["clusters"][1]]}
    root = make_project(tmp_path / "p", [served, batch("kreport", after=["kserve-x"])],
                        POLICY, inventory)  # fmt: skip
    assert CliRunner().invoke(cli, ["plan", str(root)]).exit_code == 0
    r = CliRunner().invoke(cli, ["apply", str(root), "--hold"])
    assert r.exit_code == 1
    assert "failed     kreport" in r.output and "which is on kubernetes cluster k8s" in r.output
    doc = json.loads((root / "out" / "apply.json").read_text())
    assert "kreport" in doc["failed"] and not doc["jobs"]
    assert slurm_env.job_ids() == []
