"""Emitted scripts, run for real on two Slurm nodes (multinode.py): what the ranks saw.

Each test plans a small platform with `router plan` (inventory = the two-node cluster), then
submits the script router wrote — unchanged — and reads what the program wrote: a job that
merely completes proves nothing (torchrun without a rendezvous "succeeds" as two worlds of 2).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from router.cli.main import cli
from tests.helpers import make_project

from .conftest import require_tool
from .harness import _pid_alive
from .multinode import CPUS_PER_NODE, MEMORY_MB, MultiNodeCluster

pytestmark = pytest.mark.slurm

POLICY = "rule all:\n  route slurm\n"

ALLREDUCE = """\
import json, os, socket, sys
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
total = torch.tensor([float(rank + 1)])
dist.all_reduce(total)
hosts = [None] * world
dist.all_gather_object(hosts, socket.gethostname())
out = {"rank": rank, "world": world, "sum": total.item(), "hosts": hosts,
       "host": socket.gethostname(), "local_rank": int(os.environ["LOCAL_RANK"])}
with open(os.path.join(sys.argv[1], f"rank{rank}.json"), "w") as f:
    json.dump(out, f)
dist.destroy_process_group()
"""

MPI_HELLO = r"""
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size, one, sum = 0;
    char host[256], path[4096];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gethostname(host, sizeof host);
    one = rank + 1;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    snprintf(path, sizeof path, "%s/rank%d.txt", argv[1], rank);
    FILE *f = fopen(path, "w");
    fprintf(f, "%d %d %d %s\n", rank, size, sum, host);
    fclose(f);
    MPI_Finalize();
    return 0;
}
"""


def inventory(logs: Path) -> dict[str, Any]:
    part = {
        "name": MultiNodeCluster.partition,
        "nodes": 2,
        "cpus_per_node": CPUS_PER_NODE,
        "memory_per_node": MEMORY_MB,
        "default": True,
        "setup": ["export ROUTER_PARTITION_SETUP=partition"],
    }
    return {"clusters": [{
        "name": "mn", "backend": "slurm", "partitions": [part],
        "slurm": {"log_dir": str(logs), "setup": ["export ROUTER_CLUSTER_SETUP=cluster"]},
    }]}  # fmt: skip


def plan(root: Path, workloads: list[dict[str, Any]]) -> Path:
    """Plan a project of these workloads on the two-node cluster; return its out/."""
    logs = root / "logs"
    logs.mkdir(parents=True)
    make_project(root, workloads, POLICY, inventory(logs))
    result = CliRunner().invoke(cli, ["plan", str(root)])
    assert result.exit_code == 0, result.output
    return root / "out"


def submit(cluster: MultiNodeCluster, out: Path, name: str, cwd: Path) -> int:
    script = out / "slurm" / "mn" / f"{name}.sbatch"
    check = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    return cluster.sbatch(script, cwd=cwd)


def router_apply(
    cluster: MultiNodeCluster, root: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """`router apply` in the hub namespace, where the controller is reachable."""
    return subprocess.run(
        cluster.ns_cmd([sys.executable, "-m", "router", "apply", str(root), *args]),
        env=cluster.env, cwd=root, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _log(root: Path, name: str) -> str:
    return "\n".join(p.read_text() for p in sorted((root / "logs").glob(f"{name}-*")))


def test_torchrun_all_reduces_across_two_nodes(
    multinode_cluster: MultiNodeCluster, tmp_path: Path
) -> None:
    require_tool("torch", _has_torch())
    results = tmp_path / "ranks"
    results.mkdir()
    (tmp_path / "allreduce.py").write_text(ALLREDUCE)
    w = {
        "name": "ddp",
        "kind": "training",
        "launcher": "torchrun",
        "nodes": 2,
        "cpus": 4,
        "memory": "4GiB",
        "duration": "10min",
        "procs_per_node": 2,
        "workdir": str(tmp_path),
        "command": ["python", str(tmp_path / "allreduce.py"), str(results)],
        "env": {"OMP_NUM_THREADS": "1"},
    }
    out = plan(tmp_path, [w])
    text = (out / "slurm" / "mn" / "ddp.sbatch").read_text()
    assert "--nnodes=2 --nproc-per-node=2 --rdzv-backend=c10d" in text
    job = submit(multinode_cluster, out, "ddp", tmp_path)
    state = multinode_cluster.wait_job(job, timeout=300)
    assert state == "COMPLETED", _log(tmp_path, "ddp") + multinode_cluster.logs()
    ranks = [json.loads((results / f"rank{r}.json").read_text()) for r in range(4)]
    assert {r["world"] for r in ranks} == {4}
    assert {r["sum"] for r in ranks} == {10.0}  # 1 + 2 + 3 + 4: every rank took part
    hosts = ranks[0]["hosts"]
    assert sorted(set(hosts)) == sorted(multinode_cluster.nodes)
    assert sorted(hosts.count(h) for h in set(hosts)) == [2, 2]  # two processes per node
    assert all(r["hosts"] == hosts and r["host"] == hosts[r["rank"]] for r in ranks)


def test_mpi_ranks_span_two_nodes(multinode_cluster: MultiNodeCluster, tmp_path: Path) -> None:
    require_tool("mpicc (libopenmpi-dev)", shutil.which("mpicc") is not None)
    (tmp_path / "hello.c").write_text(MPI_HELLO)
    binary = tmp_path / "mpi-hello"
    subprocess.run(["mpicc", "-o", str(binary), str(tmp_path / "hello.c")], check=True)
    results = tmp_path / "ranks"
    results.mkdir()
    w = {
        "name": "solver",
        "kind": "batch",
        "launcher": "mpi",
        "nodes": 2,
        "cpus": 4,
        "ranks_per_node": 2,
        "threads_per_rank": 1,
        "memory": "2GiB",
        "duration": "10min",
        "workdir": str(tmp_path),
        "command": [str(binary), str(results)],
    }
    out = plan(tmp_path, [w])
    text = (out / "slurm" / "mn" / "solver.sbatch").read_text()
    assert "srun --nodes=2 --ntasks=4 --ntasks-per-node=2 --cpus-per-task=1 --mpi=pmix" in text
    job = submit(multinode_cluster, out, "solver", tmp_path)
    state = multinode_cluster.wait_job(job, timeout=180)
    assert state == "COMPLETED", _log(tmp_path, "solver") + multinode_cluster.logs()
    rows = [(results / f"rank{r}.txt").read_text().split() for r in range(4)]
    assert [int(row[1]) for row in rows] == [4, 4, 4, 4]  # one world of 4, not singletons
    assert [int(row[2]) for row in rows] == [10, 10, 10, 10]  # the Allreduce crossed nodes
    hosts = [row[3] for row in rows]
    assert sorted(set(hosts)) == sorted(multinode_cluster.nodes)
    assert sorted(hosts.count(h) for h in set(hosts)) == [2, 2]


def test_array_runs_every_task_and_the_setup_lines(
    multinode_cluster: MultiNodeCluster, tmp_path: Path
) -> None:
    done = tmp_path / "tasks"
    done.mkdir()
    command = (
        f'echo "$ROUTER_CLUSTER_SETUP $ROUTER_PARTITION_SETUP $FROM_WORKLOAD"'
        f' > {done}/task-"$SLURM_ARRAY_TASK_ID"'
    )
    w = {
        "name": "sweep",
        "kind": "batch",
        "cpus": 1,
        "memory": "256MiB",
        "duration": "5min",
        "array": {"count": 5, "parallel": 2},
        "command": command,
        "setup": ["export FROM_WORKLOAD=workload"],
    }
    out = plan(tmp_path, [w])
    doc = json.loads((out / "plan.json").read_text())
    assert doc["placements"][0]["resources"]["array_parallel"] == 2
    text = (out / "slurm" / "mn" / "sweep.sbatch").read_text()
    assert "#SBATCH --array=0-4%2" in text
    job = submit(multinode_cluster, out, "sweep", tmp_path)
    assert multinode_cluster.wait_job(job, timeout=120) == "COMPLETED"
    assert sorted(p.name for p in done.iterdir()) == [f"task-{i}" for i in range(5)]
    assert {p.read_text() for p in done.iterdir()} == {"cluster partition workload\n"}
    # --output went to the inventory's log_dir, one file per array task.
    assert len(list((tmp_path / "logs").glob(f"sweep-{job}_*.out"))) == 5


def test_dependent_job_starts_after_its_parent_through_apply(
    multinode_cluster: MultiNodeCluster, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    parent = {
        "name": "prep",
        "kind": "batch",
        "cpus": 1,
        "memory": "256MiB",
        "duration": "5min",
        "command": f"sleep 3; date +%s.%N > {marks}/prep-end",
    }
    child = {
        "name": "serve-after",
        "kind": "batch",
        "cpus": 1,
        "memory": "256MiB",
        "duration": "5min",
        "after": ["prep"],
        "command": f"date +%s.%N > {marks}/child-start",
    }
    out = plan(tmp_path, [child, parent])
    doc = json.loads((out / "plan.json").read_text())
    (placed,) = [p for p in doc["placements"] if p["workload"] == "serve-after"]
    assert placed["after"] == [
        {"workload": "prep", "backend": "slurm", "cluster": "mn", "supported": True}
    ]
    apply = router_apply(multinode_cluster, tmp_path)
    assert apply.returncode == 0, apply.stdout + apply.stderr
    jobs = json.loads((out / "apply.json").read_text())["jobs"]
    prep, dependent = jobs["prep"]["job_id"], jobs["serve-after"]
    assert dependent["after_job_ids"] == [prep]
    shown = multinode_cluster.show_job(dependent["job_id"])
    assert shown["Dependency"].startswith(f"afterok:{prep}"), shown
    assert multinode_cluster.wait_job(dependent["job_id"], timeout=120) == "COMPLETED"
    ended = float((marks / "prep-end").read_text())
    started = float((marks / "child-start").read_text())
    assert started >= ended


def _has_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def test_checkpoint_signal_reaches_the_program_before_the_limit(
    multinode_cluster: MultiNodeCluster, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    # The program checkpoints on USR1 and exits 0; without the signal it would run into the
    # 1-minute limit and end TIMEOUT. Slurm sends it `signal_lead` (55 s) before the limit,
    # give or take its event resolution (up to a minute early), so within seconds here.
    command = f"trap 'echo checkpointed > {marks}/usr1; exit 0' USR1; while :; do sleep 0.2; done"
    w = {"name": "ckpt", "kind": "batch", "cpus": 1, "memory": "256MiB", "duration": "1min",
         "checkpoint": {"signal_lead": "55s"}, "command": command}  # fmt: skip
    out = plan(tmp_path, [w])
    text = (out / "slurm" / "mn" / "ckpt.sbatch").read_text()
    assert "#SBATCH --signal=B:USR1@55" in text
    job = submit(multinode_cluster, out, "ckpt", tmp_path)
    assert multinode_cluster.wait_job(job, timeout=120) == "COMPLETED", _log(tmp_path, "ckpt")
    assert (marks / "usr1").read_text() == "checkpointed\n"


def test_a_parent_that_failed_is_not_waited_for(
    multinode_cluster: MultiNodeCluster, tmp_path: Path
) -> None:
    failing = {"name": "fails", "kind": "batch", "cpus": 1, "memory": "256MiB",
               "duration": "5min", "command": ["false"]}  # fmt: skip
    plan(tmp_path, [failing])
    assert router_apply(multinode_cluster, tmp_path).returncode == 0
    out = tmp_path / "out"
    first = json.loads((out / "apply.json").read_text())["jobs"]["fails"]["job_id"]
    assert multinode_cluster.wait_job(first, timeout=60) == "FAILED"
    # A dependent job arrives; its parent is unchanged (Slurm still knows it) and FAILED:
    # afterok on it would leave the new job pending forever.
    child = {**failing, "name": "after-fails", "command": ["true"], "after": ["fails"]}
    make_project(tmp_path, [failing, child], POLICY, inventory(tmp_path / "logs"))
    assert CliRunner().invoke(cli, ["plan", str(tmp_path)]).exit_code == 0
    r = router_apply(multinode_cluster, tmp_path)
    assert r.returncode == 1
    assert f"unchanged  fails (mn/mn): job {first}" in r.stdout
    assert f"it starts after fails, whose job {first} ended FAILED" in r.stderr


def test_the_cluster_leaves_nothing_behind(
    multinode_cluster: MultiNodeCluster, tmp_path: Path
) -> None:
    """A second cluster beside the session one: its own names and addresses, and after stop()
    no namespace, /etc/hosts line, daemon or folder of it is left."""
    hosts_before = Path("/etc/hosts").read_text()
    second = MultiNodeCluster(tmp_path / "second")
    assert second.k != multinode_cluster.k
    with second:
        assert second._all_idle()
        names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert all(ns in names for ns in (second.hub, *second.node_ns))
        pids = [int(p.read_text()) for p in second._pidfiles()]
        rundir = second.rundir
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(ns in names for ns in (second.hub, *second.node_ns))
    assert multinode_cluster.hub in names  # the session cluster is untouched
    assert Path("/etc/hosts").read_text() == hosts_before
    assert not rundir.exists()
    assert not any(_pid_alive(pid) for pid in pids)  # gone, or a zombie init has to reap
