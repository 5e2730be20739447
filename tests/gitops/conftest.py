"""Helpers for the GitOps tests: a copy of the example platform, and a git repo of it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ml-platform"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}


def copy_example(dest: Path) -> Path:
    shutil.copytree(
        EXAMPLE,
        dest,
        ignore=shutil.ignore_patterns("out", ".github", "schemas", ".pre-commit-config.yaml"),
    )
    return dest


def git(repo: Path, *args: str) -> str:
    import os

    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
        check=True,
    )
    return done.stdout


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def edit_workloads(project: Path, file: str, fn: object) -> None:
    """Apply fn(list of workload dicts) -> list to one workloads file."""
    path = project / "workloads" / file
    data = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump(fn(data), sort_keys=False))  # type: ignore[operator]


def change_platform(project: Path) -> None:
    """A change with every kind of diff: one workload removed, one added, batch jobs moved
    (hpc-east's CPU partition shrinks), and a notebook newly denied (asks for 2 GPUs)."""

    def vision(ws: list[dict[str, Any]]) -> list[dict[str, Any]]:
        ws = [w for w in ws if w["name"] != "vit-pretrain"]
        ws.append(
            {
                "name": "vision-new-train",
                "kind": "training",
                "team": "vision",
                "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                "gpus": 2,
                "duration": "2h",
            }
        )
        return ws

    def research(ws: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for w in ws:
            if w["name"] == "notebook-alice":
                w["gpus"] = 2
        return ws

    edit_workloads(project, "vision.yaml", vision)
    edit_workloads(project, "research.yaml", research)
    inv = project / "inventory.yaml"
    text = inv.read_text()
    assert "{name: cpu, nodes: 64," in text
    inv.write_text(text.replace("{name: cpu, nodes: 64,", "{name: cpu, nodes: 3,"))


@pytest.fixture
def has_git() -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
