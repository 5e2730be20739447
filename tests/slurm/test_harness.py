"""The Slurm test harness itself: a real cluster accepts, reads back and runs jobs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .harness import PartitionSpec, SlurmCluster, SlurmError, parse_scontrol_line

pytestmark = pytest.mark.slurm


def _script(tmp_path: Path, body: str, name: str = "job.sbatch") -> Path:
    path = tmp_path / name
    path.write_text("#!/bin/bash\n" + body)
    return path


def test_held_multi_node_gpu_job_reads_back(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    script = _script(
        tmp_path,
        "#SBATCH --job-name=llm-pretrain\n#SBATCH --partition=gpu-h100\n#SBATCH --nodes=2\n"
        "#SBATCH --gres=gpu:h100:8\n#SBATCH --exclusive\n#SBATCH --time=02:00:00\n"
        "#SBATCH --account=ml-research\nsrun python train.py\n",
    )
    job = slurm_cluster.show_job(slurm_cluster.sbatch(script))
    assert job["JobState"] == "PENDING"
    assert job["JobName"] == "llm-pretrain"
    assert job["Partition"] == "gpu-h100"
    assert job["NumNodes"].split("-")[0] == "2"
    # Without slurmdbd, TRES= never carries gres/gpu; the typed GPU request is in TresPerNode.
    assert job["TresPerNode"] == "gres:gpu:h100:8"
    assert "node=2" in job["TRES"]
    assert job["TimeLimit"] == "02:00:00"
    assert job["OverSubscribe"] == "NO"
    assert job["Account"] == "ml-research"


@pytest.mark.parametrize(
    ("args", "key", "value"),
    [
        (["-N", "16", "--gpus-per-node=h100:8"], "TresPerNode", "gres:gpu:h100:8"),
        (["-N", "8", "--gpus=h100:64"], "TresPerJob", "gres:gpu:h100:64"),
    ],
)
@pytest.mark.parametrize("validate", [True, False])
def test_held_jobs_needing_absent_nodes_are_accepted(
    slurm_cluster: SlurmCluster,
    tmp_path: Path,
    args: list[str],
    key: str,
    value: str,
    validate: bool,
) -> None:
    script = _script(tmp_path, "srun true\n")
    job_id = slurm_cluster.sbatch(script, extra_args=["-p", "gpu-h100", *args], validate=validate)
    job = slurm_cluster.show_job(job_id)
    assert job["JobState"] == "PENDING"
    assert job[key] == value
    assert job["NumNodes"].split("-")[0] == args[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-p", "gpu-h100", "--gres=gpu:a100:1"], "Requested node configuration is not available"),
        (["-p", "gpu-h100", "--gres=gpu:h100:9"], "Requested node configuration is not available"),
        (["-p", "cpu", "--constraint=ib"], "Requested node configuration is not available"),
        (["-p", "cpu", "--mem=300G"], "Requested node configuration is not available"),
        (["-p", "gpu-h100", "-N", "17"], "Node count specification invalid"),
        (["-p", "cpu", "--time=25:00:00"], "Requested time limit is invalid"),
    ],
)
def test_impossible_requests_are_rejected(
    slurm_cluster: SlurmCluster, tmp_path: Path, args: list[str], message: str
) -> None:
    with pytest.raises(SlurmError, match=message):
        slurm_cluster.sbatch(_script(tmp_path, "true\n"), extra_args=args)


def test_qos_is_accepted_but_not_recorded_without_accounting(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    job = slurm_cluster.show_job(
        slurm_cluster.sbatch(_script(tmp_path, "#SBATCH --qos=high\ntrue\n"))
    )
    assert job["QOS"] == "(null)"
    assert job["Partition"] == "cpu"  # the Default=YES partition


def test_tiny_job_runs_to_completion(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    out = tmp_path / "hello.out"
    script = _script(tmp_path, "echo hello\n")
    job_id = slurm_cluster.sbatch(
        script,
        hold=False,
        extra_args=[
            "-p",
            "gpu-h100",
            "-w",
            slurm_cluster.run_node,
            "--gres=gpu:h100:1",
            f"--output={out}",
        ],
    )
    assert slurm_cluster.wait_job(job_id, timeout=30) == "COMPLETED"
    assert out.read_text().strip() == "hello"
    assert slurm_cluster.show_job(job_id)["NodeList"] == "gpu-h100-n1"


def test_held_job_runs_after_release(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    out = tmp_path / "released.out"
    script = _script(
        tmp_path, f"#SBATCH --output={out}\n#SBATCH --partition=gpu-h100\necho released\n"
    )
    job_id = slurm_cluster.sbatch(script, extra_args=["-w", slurm_cluster.run_node])
    assert slurm_cluster.show_job(job_id)["JobState"] == "PENDING"
    slurm_cluster.release(job_id)
    assert slurm_cluster.wait_job(job_id, timeout=30) == "COMPLETED"
    assert out.read_text().strip() == "released"


def test_sinfo_json_lists_partitions_with_gres(slurm_cluster: SlurmCluster) -> None:
    nodes = slurm_cluster.sinfo_json()["nodes"]
    by_partition: dict[str, list[dict[str, Any]]] = {}
    for node in nodes:
        for partition in node["partitions"]:
            by_partition.setdefault(partition, []).append(node)
    assert {p: len(n) for p, n in by_partition.items()} == {
        "gpu-h100": 16,
        "gpu-a100": 8,
        "gpu-plain": 2,
        "cpu": 4,
    }
    assert {n["gres"] for n in by_partition["gpu-h100"]} == {"gpu:h100:8"}
    assert {n["gres"] for n in by_partition["gpu-a100"]} == {"gpu:a100:8"}
    assert {n["gres"] for n in by_partition["gpu-plain"]} == {"gpu:4"}  # untyped
    assert {n["gres"] for n in by_partition["cpu"]} == {""}
    assert {n["cpus"] for n in by_partition["gpu-h100"]} == {96}
    assert {n["real_memory"] for n in by_partition["gpu-h100"]} == {2 * 1024 * 1024}
    assert "avx512" in by_partition["cpu"][0]["features"]
    states = {n["name"]: n["state"] for n in nodes}
    assert states["gpu-h100-n1"] == "idle" and states["gpu-h100-n2"] == "down"
    assert slurm_cluster.show_partitions()["cpu"]["MaxTime"] == "1-00:00:00"


def test_factory_restarts_with_another_layout(
    slurm_cluster_factory: Callable[..., SlurmCluster], tmp_path: Path
) -> None:
    layout = [
        PartitionSpec("cpu_small", 2, 0, None, 8, 16 * 1024, 60, []),
        PartitionSpec("debug", 2, 4, "t4", 16, 64 * 1024, 30, ["fast"], default=True),
    ]
    cluster = slurm_cluster_factory(layout, run_node_partition="debug")
    assert set(cluster.show_partitions()) == {"cpu_small", "debug"}
    assert cluster.run_node == "debug-n1"
    out = tmp_path / "debug.out"
    job_id = cluster.sbatch(
        _script(tmp_path, "echo on-debug\n"),
        hold=False,
        extra_args=["-w", "debug-n1", "--gpus=t4:4", f"-o{out}"],
    )
    assert cluster.wait_job(job_id, timeout=30) == "COMPLETED"
    assert out.read_text().strip() == "on-debug"
    assert cluster.show_job(job_id)["Partition"] == "debug"
    assert cluster.show_partitions()["cpu_small"]["Nodes"] == "cpu-small-n[1-2]"


def test_partition_names_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="partition names"):
        SlurmCluster([PartitionSpec("cpu small", 1, 0, None, 1, 1024)], tmp_path)
    with pytest.raises(ValueError, match="run_node_partition"):
        SlurmCluster(
            [PartitionSpec("cpu", 1, 0, None, 1, 1024)], tmp_path, run_node_partition="gpu"
        )


def test_parse_scontrol_line_keeps_spaces_and_equals() -> None:
    line = (
        "JobId=7 JobName=my job UserId=root(0) Reason=ReqNodeNotAvail,_UnavailableNodes:a-n[2-4] "
        "TRES=cpu=2,mem=200M,node=2 AllocNode:Sid=localhost:1 Socks/Node=* "
        "Command=/tmp/x.sh arg1 arg 2 Comment=two words  Power= TresPerNode=gres:gpu:h100:8 "
    )
    job = parse_scontrol_line(line)
    assert job["JobName"] == "my job"
    assert job["TRES"] == "cpu=2,mem=200M,node=2"
    assert job["AllocNode:Sid"] == "localhost:1"
    assert job["Socks/Node"] == "*"
    assert job["Command"] == "/tmp/x.sh arg1 arg 2"
    assert job["Comment"] == "two words"
    assert job["Power"] == ""
    assert job["TresPerNode"] == "gres:gpu:h100:8"


def test_kill_strays_takes_only_what_runs_under_that_cluster(tmp_path: Path) -> None:
    """What outlives a cluster (a stepd, a job's ranks) carries its SLURM_CONF; a process of
    another cluster does not, and stays."""
    import os
    import subprocess

    from .harness import kill_strays

    ours, theirs = tmp_path / "a" / "slurm.conf", tmp_path / "b" / "slurm.conf"
    started = [
        subprocess.Popen(["sleep", "60"], env={**os.environ, "SLURM_CONF": str(conf)})
        for conf in (ours, theirs)
    ]
    try:
        assert kill_strays(ours) == [started[0].pid]
        assert started[0].wait(timeout=5) == -9
        assert started[1].poll() is None
    finally:
        for p in started:
            p.kill()
            p.wait()
