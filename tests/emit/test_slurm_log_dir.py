"""router.yaml's `slurm: {log_dir}`: where every Slurm cluster's jobs write their logs unless
the inventory gives the cluster a `slurm.log_dir` of its own; absolute paths only, and a bad
value is an error at its line and column in router.yaml."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import router
from router.cli.main import cli
from router.config import load_project
from router.emit.slurm import SlurmEmitter
from router.errors import LoadError
from router.plan.build import build_plan
from tests.helpers import INVENTORY, job, make_project

POLICY = 'rule r: route slurm where name == "h100"\n'


def project(tmp_path: Path, settings: str, inventory: dict[str, Any] | None = None) -> Path:
    root = make_project(tmp_path, [job("w")], policy=POLICY, inventory=inventory)
    with (root / "router.yaml").open("a") as f:
        f.write(settings)
    return root


def script(root: Path) -> str:
    (p,) = build_plan(load_project(root)).placements
    (text,) = SlurmEmitter().emit(p).values()
    return text


def with_cluster_log_dir(log_dir: str) -> dict[str, Any]:
    inv = copy.deepcopy(INVENTORY)
    inv["clusters"][0]["slurm"] = {"log_dir": log_dir}
    return inv


def test_router_yaml_log_dir_is_where_jobs_log(tmp_path: Path) -> None:
    text = script(project(tmp_path, "slurm:\n  log_dir: /shared/logs/\n"))
    assert "#SBATCH --output=/shared/logs/%x-%j.out" in text
    assert "#SBATCH --error=/shared/logs/%x-%j.err" in text


def test_the_clusters_own_log_dir_wins(tmp_path: Path) -> None:
    inv = with_cluster_log_dir("/hpc/logs")
    text = script(project(tmp_path, "slurm: {log_dir: /shared/logs}\n", inv))
    assert "#SBATCH --output=/hpc/logs/%x-%j.out" in text and "/shared/logs" not in text


def test_without_one_jobs_log_in_their_working_directory(tmp_path: Path) -> None:
    text = script(project(tmp_path, "slurm: {}\n"))
    assert "#SBATCH --output=%x-%j.out" in text


def test_the_api_reads_it_too(tmp_path: Path) -> None:
    root = project(tmp_path, "slurm: {log_dir: /shared/logs}\n")
    files = router.plan(router.load(root)).files()
    assert any(
        "--output=/shared/logs/%x-%j.out" in t for p, t in files.items() if p.endswith(".sbatch")
    )


@pytest.mark.parametrize(
    ("settings", "where", "says"),
    [
        (
            "slurm:\n  log_dir: logs/here\n",
            ":6:12:",
            "slurm.log_dir: the folder must be an absolute path",
        ),
        (
            "slurm:\n  log_dir: /a/../etc\n",
            ":6:12:",
            "slurm.log_dir: the folder must be an absolute path",
        ),
        (
            'slurm:\n  log_dir: "/a;rm -rf /"\n',
            ":6:12:",
            "slurm.log_dir: the folder must be an absolute path",
        ),
        ("slurm:\n  log_dri: /x\n", ":6:3:", 'slurm: unknown key "log_dri" (expected log_dir)'),
        ("slurm: /x\n", ":5:8:", "slurm: expected a mapping"),
    ],
)
def test_bad_settings_are_errors_at_their_place(
    tmp_path: Path, settings: str, where: str, says: str
) -> None:
    root = project(tmp_path, settings)
    with pytest.raises(LoadError) as caught:
        load_project(root)
    text = str(caught.value)
    assert f"router.yaml{where} error: {says}" in text, text
    assert "^" in text
    if "log_dri" in settings:
        assert 'did you mean "log_dir"?' in text
    r = CliRunner().invoke(cli, ["plan", str(root)])
    assert r.exit_code == 1 and "Traceback" not in r.output and says in r.output
