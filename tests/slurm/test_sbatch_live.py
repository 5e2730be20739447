"""Emitted sbatch scripts against a real Slurm 22.05: what `scontrol show job` reads back.

Every script is the emitter's output, unchanged, submitted with `sbatch` (held unless it must
run). The partitions are those of the session cluster (harness.ROUTERTEST_PARTITIONS); only
gpu-h100-n1 has a slurmd, so jobs that really run go there. QOS cannot be read back without
slurmdbd (`QOS=(null)`, see harness.py), so it is checked in the script text instead.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from router.emit.slurm import SlurmEmitter
from router.evaluate.shape import shape
from router.models import Partition, TargetRef, Workload
from router.models.placement import Placement, Resources
from router.quantity import slurm_time

from .harness import ROUTERTEST_PARTITIONS, SlurmCluster, SlurmError

pytestmark = pytest.mark.slurm

PARTITIONS = {
    spec.name: Partition(
        name=spec.name,
        nodes=spec.nodes,
        gpus_per_node=spec.gpus_per_node,
        gpu_type=spec.router_gpu_type,
        cpus_per_node=spec.cpus_per_node,
        memory_per_node=spec.memory_mb,
        max_time=spec.max_time_minutes * 60 if spec.max_time_minutes else None,
        features=spec.features,
    )
    for spec in ROUTERTEST_PARTITIONS
}


def place(
    partition: str,
    *,
    nodes: int = 1,
    gpus: int = 0,
    cpus: int = 1,
    memory: int = 1024,
    time: int = 3600,
    exclusive: bool = False,
    options: dict[str, Any] | None = None,
    target: Partition | None = None,
    workload: Workload | None = None,
    **fields: Any,
) -> Placement:
    part = target or PARTITIONS[partition]
    if workload is None:
        workload = Workload(**{"command": ["true"], **fields})
    resources = Resources(
        nodes=nodes,
        gpus_per_node=gpus,
        cpus_per_node=cpus,
        memory_per_node=memory,
        time=time,
        exclusive=exclusive,
        whole_nodes=nodes if exclusive or nodes > 1 else 0,
        gpu_type=part.gpu_type if gpus else None,
    )
    return Placement(
        workload=workload,
        target=TargetRef("routertest", "slurm", part, f"routertest/{part.name}"),
        rule="live",
        rule_source="tests/slurm/test_sbatch_live.py:1",
        rank=0,
        options=dict(options or {}),
        resources=resources,
    )


def write(p: Placement, folder: Path) -> Path:
    ((rel, text),) = SlurmEmitter().emit(p).items()
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def submit(cluster: SlurmCluster, p: Placement, folder: Path, hold: bool = True) -> dict[str, str]:
    job_id = cluster.sbatch(write(p, folder), hold=hold)
    job = cluster.show_job(job_id)
    job["_id"] = str(job_id)
    return job


def mib(value: str) -> int:
    """scontrol's memory ("512G", "1T", "100M") in MiB."""
    scale = {"M": 1, "G": 1024, "T": 1024 * 1024}
    return int(float(value[:-1]) * scale[value[-1]])


@pytest.mark.parametrize(("partition", "gpu_type"), [("gpu-h100", "h100"), ("gpu-a100", "a100")])
def test_single_node_gpu_job(
    slurm_cluster: SlurmCluster, tmp_path: Path, partition: str, gpu_type: str
) -> None:
    p = place(partition, name="sft", gpus=4, cpus=32, memory=512 * 1024, time=2 * 3600)
    job = submit(slurm_cluster, p, tmp_path)
    assert job["JobState"] == "PENDING"
    assert job["JobName"] == "sft"
    assert job["Partition"] == partition
    assert job["NumNodes"].split("-")[0] == "1"
    assert job["TresPerNode"] == f"gres:gpu:{gpu_type}:4"
    # Without slurmdbd TRES= (ReqTRES) never lists gres/gpu; the typed request is TresPerNode.
    assert job["TRES"] == "cpu=32,mem=512G,node=1,billing=32"
    assert job["CPUs/Task"] == "32"
    assert job["NumCPUs"] == "32"
    assert job["NumTasks"] == "1"
    assert mib(job["MinMemoryNode"]) == 512 * 1024
    assert job["TimeLimit"] == "02:00:00" == slurm_time(p.resources.time)
    assert job["OverSubscribe"] == "OK"
    assert job["Requeue"] == "0"
    assert job["StdOut"] == str(tmp_path / "slurm/routertest" / f"sft-{job['_id']}.out")
    assert job["StdErr"] == str(tmp_path / "slurm/routertest" / f"sft-{job['_id']}.err")


def test_two_node_exclusive_h100_job(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    p = place(
        "gpu-h100",
        name="pretrain",
        nodes=2,
        gpus=8,
        cpus=96,
        memory=1024 * 1024,
        exclusive=True,
        options={"time": 30 * 3600, "constraint": "ib&lustre", "mpi": "pmix"},
        preemptible=True,
        workdir=str(tmp_path),
    )
    job = submit(slurm_cluster, p, tmp_path / "out")
    assert job["JobName"] == "pretrain"
    assert job["Partition"] == "gpu-h100"
    assert job["NumNodes"].split("-")[0] == "2"
    assert job["NumTasks"] == "2"
    assert job["TresPerNode"] == "gres:gpu:h100:8"
    assert job["TRES"] == "cpu=192,mem=2T,node=2,billing=192"  # whole nodes: 2 x 96 CPUs
    assert job["CPUs/Task"] == "96"
    assert mib(job["MinMemoryNode"]) == 1024 * 1024
    assert job["TimeLimit"] == "1-06:00:00"
    assert job["OverSubscribe"] == "NO"
    assert job["Features"] == "ib&lustre"
    assert job["Requeue"] == "1"
    assert job["WorkDir"] == str(tmp_path)
    assert job["StdOut"] == str(tmp_path / f"pretrain-{job['_id']}.out")


def test_cpu_job_qos_and_account(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    cpu = PARTITIONS["cpu"].model_copy(update={"qos": "normal", "account": "hpc"})
    p = place("cpu", target=cpu, name="etl", cpus=16, memory=32 * 1024, time=45 * 60)
    job = submit(slurm_cluster, p, tmp_path)
    assert job["Partition"] == "cpu" and "TresPerNode" not in job
    assert job["Account"] == "hpc"  # the partition's default account
    assert job["QOS"] == "(null)"  # no QOS table without slurmdbd: check the script instead
    assert "#SBATCH --qos=normal\n" in write(p, tmp_path).read_text()
    assert job["NumCPUs"] == "16" and job["CPUs/Task"] == "16"
    assert mib(job["MinMemoryNode"]) == 32 * 1024
    assert job["TimeLimit"] == "00:45:00"

    p = place("cpu", target=cpu, name="etl2", options={"account": "ml", "qos": "high"})
    job = submit(slurm_cluster, p, tmp_path)
    assert job["Account"] == "ml"
    assert "#SBATCH --qos=high\n" in write(p, tmp_path).read_text()


HOSTILE_TEXT = (
    "x\n#SBATCH --partition=evil\n#SBATCH --job-name=evil\n#SBATCH --account=evil\n"
    "$(touch {pwned}) `touch {pwned}` '; touch {pwned}; echo ' \"; touch {pwned}\""
)


def test_hostile_workload_held(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    pwned = tmp_path / "pwned"
    text = HOSTILE_TEXT.format(pwned=pwned)
    p = place("cpu", name="hostile", command=text, env={"EVIL": text}, time=600)
    job = submit(slurm_cluster, p, tmp_path)
    assert job["JobName"] == "hostile"
    assert job["Partition"] == "cpu"
    assert job["Account"] == "(null)"
    assert job["TimeLimit"] == "00:10:00"
    assert job["StdOut"].endswith(f"/hostile-{job['_id']}.out")
    assert not pwned.exists()


def test_small_cpu_job_runs_to_completion(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    p = place(
        "gpu-h100",
        name="hello",
        command='echo "hello from $SLURM_JOB_NAME with $GREETING"',
        env={"GREETING": 'it\'s a "test"'},
        memory=100,
        time=120,
        workdir=str(tmp_path),
    )
    job_id = int(submit(slurm_cluster, p, tmp_path / "out", hold=False)["_id"])
    assert slurm_cluster.wait_job(job_id, timeout=90) == "COMPLETED"
    out = (tmp_path / f"hello-{job_id}.out").read_text()
    assert out == 'hello from hello with it\'s a "test"\n'
    assert (tmp_path / f"hello-{job_id}.err").read_text() == ""


def test_hostile_argv_survives_a_real_srun(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    pwned = tmp_path / "pwned"
    args = [f"$(touch {pwned})", f"`touch {pwned}`", "'; touch x; '", '" ; "', "a b\tc", "#x", ""]
    program = "import json, os, sys; print(json.dumps([sys.argv[1:], os.environ['MULTI']]))"
    p = place(
        "gpu-h100",
        name="argv",
        command=[sys.executable, "-c", program, *args],
        env={"MULTI": "line one\n#SBATCH --partition=evil\nline 'three'"},
        memory=100,
        time=120,
        workdir=str(tmp_path),
    )
    job_id = int(submit(slurm_cluster, p, tmp_path / "out", hold=False)["_id"])
    state = slurm_cluster.wait_job(job_id, timeout=90)
    err = (tmp_path / f"argv-{job_id}.err").read_text()
    assert state == "COMPLETED", err
    got = json.loads((tmp_path / f"argv-{job_id}.out").read_text())
    assert got == [args, "line one\n#SBATCH --partition=evil\nline 'three'"]
    assert not pwned.exists()


def test_untyped_partition_gets_untyped_gpus(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """gpu-plain's GPUs have no type: the plan's shape check and the emitter ask for untyped
    GPUs, which Slurm accepts; the same job asking for a type there is rejected by Slurm, which
    is why the shape check refuses typed workloads on such a partition."""
    part = PARTITIONS["gpu-plain"]
    assert part.gpu_type == "any"
    ref = TargetRef("routertest", "slurm", part, "routertest/gpu-plain")
    w = Workload(name="plain", command=["true"], gpus=8, cpus=32, memory="64GiB", duration="1h")
    resources = shape(w, ref, {})
    assert isinstance(resources, Resources) and resources.gpu_type is None
    p = Placement(w, ref, "live", "tests/slurm/test_sbatch_live.py:1", 0, {}, resources)
    assert "#SBATCH --gpus-per-node=4\n" in write(p, tmp_path).read_text()
    job = submit(slurm_cluster, p, tmp_path)
    assert job["Partition"] == "gpu-plain" and job["JobState"] == "PENDING"
    assert job["NumNodes"].split("-")[0] == "2"
    assert job["TresPerNode"] == "gres:gpu:4"
    assert shape(w.model_copy(update={"gpu_type": "h100"}), ref, {}) == (
        "has GPUs of no stated type, the workload asks for h100"
    )
    typed = PARTITIONS["gpu-plain"].model_copy(update={"gpu_type": "h100"})
    wrong = place("gpu-plain", target=typed, name="typed", nodes=2, gpus=4, exclusive=True)
    assert "#SBATCH --gpus-per-node=h100:4\n" in write(wrong, tmp_path).read_text()
    with pytest.raises(SlurmError, match="Requested node configuration is not available"):
        slurm_cluster.sbatch(write(wrong, tmp_path))


def test_issue_13_directives_read_back(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """MPI ranks, an array with a throttle, nice, a log dir, a node list, the checkpoint signal:
    what a real sbatch makes of them (held; nothing runs)."""
    from router.models.inventory import SlurmSettings

    settings = SlurmSettings(log_dir=str(tmp_path / "logs"), nice_by_priority={"low": 1000})
    part = PARTITIONS["cpu"].model_copy(update={"nodelist": "cpu-n[1-2]"})
    p = place("cpu", nodes=2, cpus=16, target=part, name="mpi-sweep", launcher="mpi",
              ranks_per_node=4, threads_per_rank=2, array={"count": 6, "parallel": 2},
              checkpoint={"signal_lead": "2min"}, priority="low", preemptible=True)  # fmt: skip
    p.target = TargetRef("routertest", "slurm", part, "routertest/cpu", slurm=settings)
    job = submit(slurm_cluster, p, tmp_path)
    assert job["ArrayTaskId"] == "0-5%2" and job["ArrayTaskThrottle"] == "2"
    assert job["NtasksPerN:B:S:C"].startswith("4:") and job["CPUs/Task"] == "2"
    assert job["NumTasks"] == "8" and job["NumNodes"].split("-")[0] == "2"
    assert job["Nice"] == "1000" and job["Requeue"] == "1"
    assert job["ReqNodeList"] == "cpu-n[1-2]"
    # %A_%a under the log dir; a pending array's not-yet-split record shows %a as NO_VAL.
    assert job["StdOut"] == f"{tmp_path}/logs/mpi-sweep-{job['_id']}_4294967294.out"
    assert "--signal=B:USR1@120" in write(p, tmp_path).read_text()
