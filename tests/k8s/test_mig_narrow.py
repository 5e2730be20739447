"""MIG on Kubernetes, one slice per process: a pod of 3 slices running 3 torchrun workers or
3 MPI ranks has each process run through router/emit/narrow.py's sh wrapper, in every kind
router emits for multi-process pods (Job, Indexed Job, JobSet, PyTorchJob, Volcano Job,
TrainJob, MPIJob). The manifests pass the strict validator, `kubectl kustomize` and checkov;
the emitted commands run for real (sh, and Open MPI's mpirun for the MPIJob) with the env the
NVIDIA device plugin gives a container, and each process sees exactly its own slice."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from router.emit.narrow import NARROW
from tests.helpers import job, make_project
from tests.k8s.test_checkov import check_folder
from tests.k8s.test_plan_manifests import check_plan, plan_of

POOL = {
    "name": "a100-mig",
    "nodes": 16,
    "gpus_per_node": 4,
    "gpu_type": "a100",
    "cpus_per_node": 64,
    "memory_per_node": "512GiB",
    "mig": [{"gpus": 4, "slices": {"1g.10gb": 7}}],
    "labels": {"pool": "a100-mig"},
}
INVENTORY = {"clusters": [{"name": "k8s", "backend": "kubernetes", "node_pools": [POOL]}]}
OPERATORS = ("job", "jobset", "pytorchjob", "volcano", "trainjob", "mpijob")
POLICY = (
    "".join(
        f'rule by_{op}: when labels.op == "{op}" route kubernetes with operator = "{op}",'
        ' mig = "1g.10gb"\n'
        for op in OPERATORS
    )
    + 'rule sliced: route kubernetes with mig = "1g.10gb"\n'
)
# The device plugin's "envvar" list of the pod's 3 slices (deviceIDStrategy uuid).
UUIDS = ("MIG-1f0e4a36-aaaa", "MIG-5b2c9d10-bbbb", "MIG-9e8d7c6b-cccc")
PROBE = ["sh", "-c", 'printf %s "${CUDA_VISIBLE_DEVICES-unset}"']


def work(name: str, op: str | None, **fields: Any) -> dict[str, Any]:
    base = {"kind": "training", "launcher": "torchrun", "gpus": 6, "nodes": 2, "cpus": 16,
            "memory": "64GiB", "duration": "1h", "team": "ml",
            "command": ["python", "train.py", "--lr", "1"]}  # fmt: skip
    return job(name, **base | ({"labels": {"op": op}} if op else {}) | fields)


WORKLOADS = [
    work("one-node", None, gpus=3, nodes=1),
    *(work(f"ddp-{op}", op) for op in OPERATORS if op != "mpijob"),
    work("ranks", "mpijob", launcher="mpi", ranks_per_node=3, command=["./solve", "--n", "8"]),
    work("shell", None, gpus=3, nodes=1, command="torchrun --nproc-per-node=3 train.py"),
    work("plain", None, gpus=3, nodes=1, launcher="plain"),
]


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("mig-narrow")
    plan = plan_of(make_project(tmp / "p", WORKLOADS, POLICY, INVENTORY))
    assert not plan.unplaced and not plan.unrouted and len(plan.placements) == len(WORKLOADS)
    assert {p.resources.mig for p in plan.placements} == {"1g.10gb"}
    check_plan(plan, tmp / "out")  # strict schemas, CRDs, kustomize, per-placement checks
    return tmp / "out" / "kubernetes" / "k8s"


def commands(out: Path, name: str) -> list[list[str]]:
    """The container commands in the workload's file, each once (a PyTorchJob's Master and
    Workers run the same; the TrainJob's is its trainer's)."""
    found: list[list[str]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("command"), list) and "image" in node:
                found.append([str(a) for a in node["command"]])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for doc in yaml.safe_load_all((out / f"{name}.yaml").read_text()):
        walk(doc)
    return [c for i, c in enumerate(found) if c not in found[:i]]


def expand(arg: str, names: set[str]) -> str:
    """What the kubelet makes of a command argument: `$(NAME)` of a defined variable is its
    value (here <NAME>), `$$` is `$`, anything else stays (k8s third_party/forked/golang/
    expansion/expand.go, Expand and tryReadVariableName)."""
    out, i = [], 0
    while i < len(arg):
        if arg[i] != "$" or i + 1 == len(arg):
            out.append(arg[i])
            i += 1
        elif arg[i + 1] == "$":
            out.append("$")
            i += 2
        elif arg[i + 1] == "(" and ")" in arg[i + 2 :]:
            end = arg.index(")", i + 2)
            name = arg[i + 2 : end]
            out.append(f"<{name}>" if name in names else arg[i : end + 1])
            i = end + 1
        else:
            out.append(arg[i : i + 2])
            i += 2
    return "".join(out)


def narrowed_tail(command: list[str]) -> list[str]:
    """What follows the wrapper: `sh -c NARROW sh <slices>` then the program."""
    at = command.index(NARROW)
    assert command[at - 2 : at] == ["sh", "-c"] and command[at + 1 : at + 3] == ["sh", "3"]
    return command[at + 3 :]


def run_wrapper(command: list[str], env: dict[str, str]) -> str:
    """The command's wrapper, run by a real sh with `env`, starting PROBE for the program."""
    at = command.index(NARROW)
    argv = [*command[at - 2 : at + 3], *PROBE]
    done = subprocess.run(argv, env={"PATH": os.environ["PATH"], **env}, capture_output=True,
                          text=True, timeout=30, check=True)  # fmt: skip
    return done.stdout


def test_every_multi_process_kind_narrows_each_worker(out: Path) -> None:
    expect = {
        "one-node": ["torchrun", "--standalone", "--nproc-per-node=3"],
        "ddp-job": ["torchrun", "--nnodes=2", "--nproc-per-node=3", "--node-rank=$(NODE_RANK)"],
        "ddp-jobset": ["torchrun", "--nnodes=2", "--nproc-per-node=3"],
        "ddp-volcano": ["torchrun", "--nnodes=2", "--nproc-per-node=3",
                        "--node-rank=$(VC_TASK_INDEX)"],
        "ddp-pytorchjob": ["torchrun"],  # the operator sets nproc from nprocPerNode
        "ddp-trainjob": ["torchrun"],  # and Trainer from numProcPerNode
    }  # fmt: skip
    for name, head in expect.items():
        (command,) = commands(out, name)
        assert command[: len(head)] == head, command
        at = command.index("--no-python")
        assert command[at + 1 : at + 3] == ["sh", "-c"], command
        assert narrowed_tail(command) == ["python", "-u", "train.py", "--lr", "1"]
    (launcher,) = commands(out, "ranks")  # the workers' command is the operator's
    assert launcher[:5] == ["mpirun", "-np", "6", "-x", "OMP_NUM_THREADS"]
    assert narrowed_tail(launcher) == ["./solve", "--n", "8"]
    # The kubelet's $(VAR) expansion leaves the wrapper as written, with any env defined.
    names = {"LOCAL_RANK", "n", "d", "v", "f", "NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"}
    assert expand(NARROW, names) == NARROW
    assert expand("$(NODE_RANK) $$(x) $(a", {"NODE_RANK"}) == "<NODE_RANK> $(x) $(a"
    pytorchjob = yaml.safe_load((out / "ddp-pytorchjob.yaml").read_text())
    assert pytorchjob["spec"]["nprocPerNode"] == "3"
    trainjob = yaml.safe_load((out / "ddp-trainjob.yaml").read_text())
    assert trainjob["spec"]["trainer"]["numProcPerNode"] == 3


def test_commands_router_does_not_write_are_left_alone(out: Path) -> None:
    (shell,) = commands(out, "shell")
    assert shell == ["/bin/sh", "-c", "torchrun --nproc-per-node=3 train.py"]
    (plain,) = commands(out, "plain")
    assert plain == ["python", "train.py", "--lr", "1"]


def test_each_torchrun_worker_sees_its_own_slice(out: Path, tmp_path: Path) -> None:
    (command,) = commands(out, "ddp-jobset")
    listed = {"NVIDIA_VISIBLE_DEVICES": ",".join(UUIDS)}  # the "envvar" device list
    seen = [run_wrapper(command, {**listed, "LOCAL_RANK": str(k)}) for k in range(3)]
    assert seen == list(UUIDS)
    # "volume-mounts": the variable names a folder of one (empty) file per device ID.
    folder = tmp_path / "nvidia-container-devices"
    folder.mkdir()
    for uuid in UUIDS:
        (folder / uuid).touch()
    mounted = {"NVIDIA_VISIBLE_DEVICES": str(folder)}
    seen = [run_wrapper(command, {**mounted, "LOCAL_RANK": str(k)}) for k in range(3)]
    assert seen == sorted(UUIDS)
    # Indices (deviceIDStrategy index: "0:1") are no CUDA device names: left unset.
    assert run_wrapper(command, {"NVIDIA_VISIBLE_DEVICES": "0:0,0:1,0:2", "LOCAL_RANK": "1"}) == (
        "unset"
    )


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs Open MPI's mpirun")
def test_each_mpi_rank_sees_its_own_slice(out: Path) -> None:
    # The MPIJob launcher's command as emitted, run by real Open MPI on one host (its 6 ranks
    # are local ranks 0-5, as 2 workers' 3 are 0-2 each), PROBE for the program.
    (launcher,) = commands(out, "ranks")
    at = launcher.index(NARROW)
    rank = 'printf "%s=%s\\n" "$OMPI_COMM_WORLD_LOCAL_RANK" "$CUDA_VISIBLE_DEVICES"'
    argv = [launcher[0], "--oversubscribe", *launcher[1 : at + 3], "sh", "-c", rank]
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"),
           "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMP_NUM_THREADS": "1", "NVIDIA_VISIBLE_DEVICES": ",".join(UUIDS)}  # fmt: skip
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = dict(line.split("=", 1) for line in done.stdout.split())
    assert seen == {str(k): UUIDS[k % 3] for k in range(6)}


def test_the_manifests_pass_checkov(out: Path) -> None:
    objects = check_folder(out.parent)
    assert any(name.startswith("Job.") for name in objects)
