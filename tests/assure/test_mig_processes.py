"""`router check` warns when MIG work's processes cannot each use a slice of their own (CUDA
enumerates one MIG device per process): at the workload's file:line:column (its `gpus`, or the
`command` router cannot narrow), naming the rule and its `mig` option."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

import router
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


def pointed(f: dict[str, Any]) -> str:
    """The text the finding points at: from its column to the end of its line."""
    lines = Path(f["file"]).read_text().splitlines()
    line, column = int(f["line"]), int(f["column"])
    return lines[line - 1][column - 1 :]


def test_processes_that_cannot_each_have_a_slice_are_warned_at_the_workload(
    tmp_path: Path,
) -> None:
    shell = "torchrun --nproc-per-node=2 t.py"
    jobs = [
        work("plain2", "batch", 2),  # one process, 2 slices: one idle
        work("few", "batch", 3, launcher="torchrun", procs_per_node=2),  # 2 of 3
        work("shell", "training", 2, launcher="torchrun", command=shell),  # run as written
        work("own", "training", 2, launcher="torchrun", command=["torchrun", "t.py"]),
        work("podfew", "training", 3, launcher="torchrun", procs_per_node=2),
        work("podplain", "training", 3),
    ]
    code, found, text = check(tmp_path, jobs)
    assert code == 0  # warnings only
    got = {f["message"].split(":", 1)[0]: f for f in found}
    assert sorted(got) == sorted(w["name"] for w in jobs)
    assert all(f["file"].endswith("all.yaml") for f in found), found
    for name, at in [("plain2", "2"), ("few", "3"), ("podfew", "3"), ("podplain", "3"),
                     ("shell", shell), ("own", "- torchrun")]:  # fmt: skip
        assert pointed(got[name]) == at, (name, got[name])
    messages = {name: f["message"].split(": ", 1)[1] for name, f in got.items()}
    assert messages["plain2"].startswith(
        "launcher plain starts one process per node, which uses one of its 2 MIG slices (rule"
        " sliced, "
    ) and messages["plain2"].endswith("policy.route:1:52)")
    assert messages["few"].startswith("2 torchrun process(es) per node use 2 of its 3 MIG slices")
    assert messages["podfew"].startswith("2 torchrun process(es) per pod use 2 of its 3 MIG slices")
    assert messages["podplain"].startswith(
        "launcher plain runs one process per pod, which uses one of its 3 MIG slices"
    )
    for name in ("shell", "own"):
        assert messages[name].startswith(
            "a pod's 2 torchrun processes all use the first of its 2 MIG slices (its command is"
            " run as written"
        ), messages[name]
        assert "(rule pods, " in messages[name] and "policy.route:2:58)" in messages[name]
        assert got[name]["hint"].startswith("give the command as a list")
    caret = f"command: {shell}\n      |            {'^' * len(shell)}\n"
    assert caret in text, text  # the source line and a caret under the command


def test_one_slice_per_process_is_not_warned(tmp_path: Path) -> None:
    jobs = [
        work("one", "batch", 1),
        work("ddp", "batch", 3, launcher="torchrun"),  # the emitter narrows each worker
        work("ranks", "batch", 2, launcher="mpi", ranks_per_node=2),  # --gpu-bind=single:1
        work("pod1", "training", 1, launcher="torchrun"),
        work("pod", "training", 2, launcher="torchrun"),  # narrowed in the pod too
        work("podranks", "training", 3, launcher="mpi", ranks_per_node=3),  # under mpirun
    ]
    code, found, _ = check(tmp_path, jobs)
    assert (code, found) == (0, [])


def test_each_workload_is_warned_at_its_own_line(tmp_path: Path) -> None:
    code, found, _ = check(tmp_path, [work(f"p{i}", "batch", 2) for i in range(5)])
    assert code == 0
    assert [f["message"].split(":", 1)[0] for f in found] == [f"p{i}" for i in range(5)]
    assert len({f["line"] for f in found}) == 5 and all(pointed(f) == "2" for f in found)


def test_a_workload_of_no_file_is_warned_at_the_mig_option() -> None:
    inv = platform(slurm(a100("a100")), kubernetes(a100("pool")))
    shell = work("shell", "training", 2, launcher="torchrun", command="torchrun t.py")
    p = router.Platform.from_objects(policy=POLICY, inventory=inv, workloads=[shell])
    (f,) = [f for f in router.check(p) if f.code == "mig-processes"]
    assert (f.path, f.line, f.column) == ("policy.route", 2, 58), f
    assert f.message.startswith("shell: a pod's 2 torchrun processes all use the first")
