"""`router check` warns when MIG work's processes cannot each use a slice of their own (CUDA
enumerates one MIG device per process): at the route's `mig` option, naming the workloads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from router.cli.main import cli
from tests.helpers import job, kubernetes, make_project, platform, slurm, target

CUT = [{"gpus": 2, "slices": {"1g.10gb": 7}}]
POLICY = """\
rule sliced: when kind == "batch" route slurm with mig = "1g.10gb"
rule pods: when kind == "training" route kubernetes with mig = "1g.10gb"
"""


def a100(name: str) -> dict[str, Any]:
    return target(name, 2, 4, 64, "256GiB", gpu_type="a100", mig=CUT)


def work(name: str, kind: str, gpus: int, **fields: Any) -> dict[str, Any]:
    return job(name, kind=kind, gpus=gpus, cpus=4, memory="8GiB", duration="1h", **fields)


def check(tmp_path: Path, jobs: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]], str]:
    inv = platform(slurm(a100("a100")), kubernetes(a100("pool")))
    root = make_project(tmp_path, jobs, POLICY, inv)
    r = CliRunner().invoke(cli, ["check", str(root), "--format", "json"])
    doc = json.loads(r.output)
    found = [f for f in doc["findings"] if f["code"] == "mig-processes"]
    text = CliRunner().invoke(cli, ["check", str(root)]).output
    return r.exit_code, found, text


def test_processes_that_cannot_each_have_a_slice_are_warned_at_the_mig_option(
    tmp_path: Path,
) -> None:
    jobs = [
        work("plain2", "batch", 2),  # one process, 2 slices: one idle
        work("few", "batch", 3, launcher="torchrun", procs_per_node=2),  # 2 of 3
        work("pod", "training", 2, launcher="torchrun"),  # 2 processes share the first
        work("podplain", "training", 3),
    ]
    code, found, text = check(tmp_path, jobs)
    assert code == 0  # warnings only
    by_line = sorted((f["line"], f["column"], f["message"]) for f in found)
    assert by_line == [
        (1, 52, "few: 2 torchrun process(es) per node use 2 of its 3 MIG slices"),
        (1, 52, "plain2: launcher plain starts one process per node, which uses one of its 2"
                " MIG slices"),
        (2, 58, "pod: a pod's 2 torchrun processes all use the first of its 2 MIG slices"
                " (nothing gives each process its own on Kubernetes)"),
        (2, 58, "podplain: one process per pod uses one of its 3 MIG slices"),
    ]  # fmt: skip
    assert all(f["file"].endswith(".route") for f in found), found
    assert 'with mig = "1g.10gb"' in text and "^" in text, text


def test_one_slice_per_process_is_not_warned(tmp_path: Path) -> None:
    jobs = [
        work("one", "batch", 1),
        work("ddp", "batch", 3, launcher="torchrun"),  # the emitter narrows each worker
        work("ranks", "batch", 2, launcher="mpi", ranks_per_node=2),  # --gpu-bind=single:1
        work("pod1", "training", 1, launcher="torchrun"),
    ]
    code, found, _ = check(tmp_path, jobs)
    assert (code, found) == (0, [])


def test_many_workloads_of_one_route_are_one_warning(tmp_path: Path) -> None:
    code, found, _ = check(tmp_path, [work(f"p{i}", "batch", 2) for i in range(5)])
    assert code == 0
    (f,) = found
    assert f["message"].startswith("p0, p1, p2 and 2 more: launcher plain"), f
