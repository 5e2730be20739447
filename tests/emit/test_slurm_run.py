"""How an emitted sbatch script runs: launchers, containers, arrays, setup lines, logs,
checkpoint signals and priority (issue 13). The allocation-dependent parts are executed by
bash with fake `srun` / `scontrol` / `apptainer` on PATH, so what the program would receive is
checked, not only the text; every script here also passes shellcheck.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from router.emit.slurm import SlurmEmitter
from router.evaluate.shape import shape
from router.models import Partition, TargetRef, Workload
from router.models.inventory import SlurmSettings
from router.models.placement import Placement, Resources
from tests.emit.test_slurm_emit import CPU, H100, body, directives, place, srun_line

SETTINGS = SlurmSettings(
    log_dir="/shared/logs/",
    setup=["module load slurm-site"],
    mounts=["/lustre", "/models:/models:ro"],
    qos_by_priority={"high": "prio", "low": "scavenger"},
    nice_by_priority={"low": 500},
)
LUSTRE = H100.model_copy(
    update={"mounts": ["/lustre", "/scratch"], "setup": ["module load cuda/12.4"]}
)


def on(p: Placement, settings: SlurmSettings | None = SETTINGS) -> Placement:
    p.target = TargetRef(p.target.cluster, "slurm", p.target.target, p.target.id, slurm=settings)
    return p


def script(p: Placement) -> str:
    (text,) = SlurmEmitter().emit(p).values()
    return text


def shellcheck(text: str, tmp_path: Path) -> None:
    if shutil.which("shellcheck") is None:
        if os.environ.get("CI"):
            pytest.fail("shellcheck missing; CI must run .ci/slurm-setup.sh", pytrace=False)
        pytest.skip("shellcheck missing")
    path = tmp_path / "check.sbatch"
    path.write_text(text)
    proc = subprocess.run(["shellcheck", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def fake_bin(tmp_path: Path) -> dict[str, str]:
    """PATH with recording `srun`, `apptainer`, and an `scontrol show hostnames` of n7,n8."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    record = '#!/bin/sh\nprintf \'%s\\0\' "$@" > "$OUT/$(basename "$0")"\nenv -0 > "$OUT/env"\n'
    for name in ("srun", "apptainer"):
        (bin_dir / name).write_text(record)
    (bin_dir / "module").write_text("#!/bin/sh\n")  # Environment Modules' `module`, a no-op
    (bin_dir / "scontrol").write_text('#!/bin/sh\nprintf "n7\\nn8\\n"\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    return {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "OUT": str(out),
        "HOME": str(tmp_path),
        "SLURM_JOB_ID": "1042",
        "SLURM_JOB_NODELIST": "n[7-8]",
    }


def run(text: str, tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """Run the script under fake Slurm; srun's argv and environment."""
    path = tmp_path / "job.sbatch"
    path.write_text(text)
    env = fake_bin(tmp_path)
    proc = subprocess.run(
        ["bash", str(path)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    out = Path(env["OUT"])
    argv = (out / "srun").read_bytes().decode().split("\0")[:-1]
    pairs = (out / "env").read_bytes().decode().split("\0")[:-1]
    return argv, dict(pair.split("=", 1) for pair in pairs)


# ---- torchrun -----------------------------------------------------------------------------


def test_torchrun_rendezvous_comes_from_the_allocation(tmp_path: Path) -> None:
    p = place(gpus=8, nodes=2, launcher="torchrun", command=["python", "train.py", "--lr", "1"])
    text = script(p)
    assert "--ntasks-per-node=1" in directives(text)
    argv, _ = run(text, tmp_path)
    assert argv == [
        "--nodes=2", "--ntasks=2", "--cpus-per-task=8", "torchrun", "--nnodes=2",
        "--nproc-per-node=8", "--rdzv-backend=c10d", "--rdzv-endpoint=n7:29542",
        "--rdzv-id=1042", "train.py", "--lr", "1",
    ]  # fmt: skip
    shellcheck(text, tmp_path)


@pytest.mark.parametrize(
    ("command", "tail"),
    [
        (["train.py", "--x"], ["train.py", "--x"]),
        (["python3", "-m", "pkg.train"], ["-m", "pkg.train"]),
        (["python", "-u", "t.py"], ["--no-python", "python", "-u", "t.py"]),
        (["./run.sh", "a b"], ["--no-python", "./run.sh", "a b"]),
        ("python train.py $X", ["--no-python", "bash", "-c", "python train.py $X"]),
    ],
)
def test_torchrun_starts_python_itself_or_runs_the_program(
    command: Any, tail: list[str], tmp_path: Path
) -> None:
    p = place(nodes=2, launcher="torchrun", procs_per_node=3, command=command)
    text = script(p)
    argv, _ = run(text, tmp_path)
    assert "--nproc-per-node=3" in argv  # stated, and no GPUs to default to
    assert argv[argv.index("--rdzv-id=1042") + 1 :] == tail
    shellcheck(text, tmp_path)


def test_torchrun_in_a_container_gets_the_address_from_outside(tmp_path: Path) -> None:
    p = place(
        nodes=2,
        gpus=8,
        launcher="torchrun",
        image="nvcr.io/nvidia/pytorch:24.01-py3",
        options={"container": "pyxis"},
    )
    text = script(p)
    lines = body(text)
    assert lines.index('job_nodes=$(scontrol show hostnames "$SLURM_JOB_NODELIST")') < lines.index(
        srun_line(text)
    )
    argv, _ = run(text, tmp_path)
    assert argv[3].startswith("--container-image=") and argv[4] == "torchrun"
    assert "--rdzv-endpoint=n7:29542" in argv  # expanded by the batch shell, not in the image


def test_the_rule_option_chooses_the_launcher_and_the_workload_field_wins() -> None:
    assert " torchrun " in srun_line(script(place(nodes=2, options={"launcher": "torchrun"})))
    p = place(nodes=2, launcher="plain", options={"launcher": "torchrun"})
    assert " torchrun " not in srun_line(script(p))


# ---- mpi ----------------------------------------------------------------------------------


def test_mpi_starts_ranks_with_srun_and_pmix(tmp_path: Path) -> None:
    p = place(
        CPU,
        nodes=4,
        cpus=64,
        launcher="mpi",
        ranks_per_node=16,
        threads_per_rank=4,
        command=["./solver", "-i", "in.dat"],
    )
    text = script(p)
    d = directives(text)
    assert "--ntasks-per-node=16" in d and "--cpus-per-task=4" in d
    argv, env = run(text, tmp_path)
    assert argv == [
        "--nodes=4",
        "--ntasks=64",
        "--ntasks-per-node=16",
        "--cpus-per-task=4",
        "--mpi=pmix",
        "./solver",
        "-i",
        "in.dat",
    ]
    assert env["OMP_NUM_THREADS"] == "4"
    assert "mpirun" not in text
    shellcheck(text, tmp_path)


def test_mpi_threads_default_to_the_cpus_per_rank_and_pmi2_is_selectable() -> None:
    p = place(CPU, nodes=2, cpus=32, launcher="mpi", ranks_per_node=8, options={"mpi": "pmi2"})
    text = script(p)
    assert "--cpus-per-task=4" in directives(text)
    assert " --mpi=pmi2 " in srun_line(text)


def _ref(part: Partition) -> TargetRef:
    return TargetRef("hpc", "slurm", part, f"hpc/{part.name}")


def test_shape_refuses_more_ranks_times_threads_than_a_node_has() -> None:
    w = Workload(
        name="x",
        command="a",
        launcher="mpi",
        nodes=2,
        cpus=128,
        ranks_per_node=32,
        threads_per_rank=4,
    )
    assert shape(w, _ref(CPU), {}) == "64 CPUs per node < 32 ranks × 4 threads per node"
    ok = Workload(
        name="x",
        command="a",
        launcher="mpi",
        nodes=2,
        cpus=16,
        ranks_per_node=16,
        threads_per_rank=4,
    )
    res = shape(ok, _ref(CPU), {})
    assert isinstance(res, Resources) and res.cpus_per_node == 64  # what the ranks take
    # The rule's option counts too: the same workload without a launcher field.
    w2 = Workload(name="x", command="a", nodes=2, cpus=16, ranks_per_node=32, threads_per_rank=4)
    assert isinstance(shape(w2, _ref(CPU), {}), Resources)
    assert isinstance(shape(w2, _ref(CPU), {"launcher": "mpi"}), str)


# ---- containers ---------------------------------------------------------------------------


def test_pyxis_gets_mounts_from_cluster_partition_and_workload_and_a_workdir() -> None:
    p = on(
        place(
            LUSTRE,
            image="ghcr.io/acme/t:1",
            options={"container": "pyxis"},
            mounts=["/lustre", "/home/me/data:/data:ro"],
            workdir="/home/me",
            container_workdir="/work",
        )
    )
    line = srun_line(script(p))
    assert (
        "--container-mounts=/lustre,/models:/models:ro,/scratch,/home/me/data:/data:ro"
        " --container-workdir=/work python train.py"
    ) in line
    assert "--chdir=/home/me" in directives(script(p))


def test_apptainer_binds_and_pwd_and_pulls_once_before_srun(tmp_path: Path) -> None:
    p = on(place(LUSTRE, gpus=8, image="ghcr.io/acme/t:1", workdir="/lustre/me"))
    text = script(p)
    argv, _ = run(text, tmp_path)
    sif = f"{tmp_path}/.train-1042.sif"
    assert argv[3:] == [
        "apptainer",
        "exec",
        "--nv",
        "--bind=/lustre,/models:/models:ro,/scratch",
        "--pwd=/lustre/me",
        sif,
        "python",
        "train.py",
    ]
    pulled = (tmp_path / "out" / "apptainer").read_bytes().decode().split("\0")[:-1]
    assert pulled == ["pull", "--force", sif, "docker://ghcr.io/acme/t:1"]
    shellcheck(text, tmp_path)


def test_a_sif_image_is_used_as_it_is() -> None:
    text = script(place(image="/lustre/images/t.sif", mounts=["/lustre"]))
    assert "apptainer pull" not in text
    assert srun_line(text).endswith(
        " apptainer exec --bind=/lustre /lustre/images/t.sif python train.py"
    )


@pytest.mark.parametrize(
    "mount", ["lustre", "/a b", "/a,b", "/a:/b:rx", "/a:/b:ro:x", "/a/../etc", "/a;rm", "/$HOME"]
)
def test_bad_mounts_are_refused(mount: str) -> None:
    with pytest.raises(ValueError, match="mount"):
        Workload(name="x", command="a", mounts=[mount])


# ---- arrays, logs, setup, checkpoint, priority --------------------------------------------


def test_array_directive_and_capacity_in_flight() -> None:
    d = directives(script(place(array={"count": 10, "parallel": 3})))
    assert "--array=0-9%3" in d and "--output=%x-%A_%a.out" in d
    assert "--array=0-3" in directives(script(place(array={"count": 4})))
    w = Workload(name="x", command="a", gpus=2, array={"count": 100, "parallel": 4})
    res = shape(w, _ref(H100), {})
    assert isinstance(res, Resources)
    assert res.array_parallel == 4 and res.gpus == 8 and res.nodes == 1  # 4 tasks of 2 GPUs


def test_array_of_whole_nodes_counts_every_task_in_flight() -> None:
    w = Workload(name="x", command="a", gpus=16, array={"count": 6, "parallel": 2})
    res = shape(w, _ref(H100), {})
    assert isinstance(res, Resources) and res.whole_nodes == 4
    w = Workload(name="x", command="a", gpus=16, array={"count": 6, "parallel": 3})
    assert shape(w, _ref(H100), {}) == "4 nodes < 2 × 3 array tasks in flight"


def test_logs_go_to_the_cluster_log_dir() -> None:
    d = directives(script(on(place())))
    assert "--output=/shared/logs/%x-%j.out" in d and "--error=/shared/logs/%x-%j.err" in d


def test_setup_lines_run_in_order_and_cannot_reach_the_next_line(tmp_path: Path) -> None:
    hostile = "cat <<EOF"  # unquoted, this would swallow the srun line as a here-document
    p = on(
        place(
            LUSTRE, setup=["export FROM_WORKLOAD=1", hostile, "#SBATCH --qos=evil"], env={"A": "b"}
        )
    )
    text = script(p)
    lines = body(text)
    assert lines[1:6] == [
        "export A=b",
        "eval 'module load slurm-site'",
        "eval 'module load cuda/12.4'",
        "eval 'export FROM_WORKLOAD=1'",
        "eval 'cat <<EOF'",
    ]
    assert "--qos=evil" not in directives(text)
    argv, env = run(text, tmp_path)
    assert argv[-2:] == ["python", "train.py"] and env["FROM_WORKLOAD"] == "1"
    shellcheck(text, tmp_path)


def test_setup_lines_are_one_line() -> None:
    with pytest.raises(ValueError, match="one line"):
        Workload(name="x", command="a", setup=["module load a\nsrun evil"])


def test_checkpoint_signal_is_forwarded_to_the_step(tmp_path: Path) -> None:
    p = place(checkpoint={"signal_lead": "5min"})
    text = script(p)
    assert "--signal=B:USR1@300" in directives(text)
    shellcheck(text, tmp_path)
    env = fake_bin(tmp_path)
    ready, got = tmp_path / "ready", tmp_path / "got"
    # A step that checkpoints on USR1 and exits 3 (what srun would pass on to the tasks).
    (tmp_path / "bin" / "srun").write_text(
        f"#!/bin/bash\ntrap 'echo checkpoint > {got}; exit 3' USR1\ntouch {ready}\n"
        "while :; do sleep 0.05; done\n"
    )
    path = tmp_path / "job.sbatch"
    path.write_text(text)
    job = subprocess.Popen(["bash", str(path)], env=env, cwd=tmp_path)
    try:
        for _ in range(400):  # until the step runs, at most ~20 s
            if ready.exists():
                break
            time.sleep(0.05)
        assert ready.exists()
        job.send_signal(signal.SIGUSR1)  # what Slurm does signal_lead before the limit
        assert job.wait(timeout=30) == 3  # the step's own exit status, after the checkpoint
    finally:
        job.kill()
    assert got.read_text() == "checkpoint\n"


@pytest.mark.parametrize(
    ("priority", "qos", "nice"),
    [
        ("high", "prio", None),
        ("critical", "normal", None),
        (3, "normal", None),
        ("low", "scavenger", "500"),
        (0, "normal", None),
    ],
)
def test_priority_maps_to_qos_and_nice(priority: Any, qos: str, nice: str | None) -> None:
    d = directives(script(on(place(CPU, priority=priority))))
    assert f"--qos={qos}" in d  # CPU's own qos is "normal"
    assert (
        ([x for x in d if x.startswith("--nice")] == [f"--nice={nice}"])
        if nice
        else not [x for x in d if x.startswith("--nice")]
    )
    # The rule's qos option still wins over the table.
    assert "--qos=rule" in directives(
        script(on(place(CPU, priority="high", options={"qos": "rule"})))
    )


def test_requeue_policy_is_always_stated() -> None:
    for p in (place(), place(preemptible=True), place(array={"count": 2})):
        d = directives(script(p))
        assert ("--requeue" in d) != ("--no-requeue" in d)


def test_every_shape_passes_shellcheck(tmp_path: Path) -> None:
    shapes = [
        on(
            place(
                LUSTRE,
                gpus=8,
                nodes=2,
                launcher="torchrun",
                image="ghcr.io/a/b:1",
                checkpoint={"signal_lead": 120},
                setup=["source /etc/profile.d/modules.sh"],
                env={"TEMPLATE": "${HOME}/x", "TICK": "`date`"},
            )
        ),
        on(
            place(
                CPU,
                nodes=2,
                cpus=32,
                launcher="mpi",
                ranks_per_node=8,
                image="/images/x.sif",
                array={"count": 3, "parallel": 1},
            )
        ),
        place(
            kind="inference",
            replicas=(2, 4),
            gpus=1,
            image="ghcr.io/acme/serve:1",
            options={"container": "pyxis"},
            command=["serve", "--port", "$PORT"],
        ),
        place(
            command='for i in 1 2; do echo "$i" `hostname`; done', workdir="/w", preemptible=True
        ),
    ]
    for p in shapes:
        shellcheck(script(p), tmp_path)


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ml-platform"


def test_every_script_of_the_example_platform_passes_shellcheck(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from router.cli.main import cli

    result = CliRunner().invoke(cli, ["plan", str(EXAMPLE), "-o", str(tmp_path / "out")])
    assert result.exit_code in (0, 3), result.output
    scripts = sorted((tmp_path / "out" / "slurm").glob("*/*.sbatch"))
    assert len(scripts) >= 10
    if shutil.which("shellcheck") is None:
        shellcheck("", tmp_path)  # skips, or fails under CI
    proc = subprocess.run(["shellcheck", *map(str, scripts)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
    pretrain = (tmp_path / "out" / "slurm" / "hpc-east" / "llm-pretrain-70b.sbatch").read_text()
    assert "torchrun --nnodes=16 --nproc-per-node=8 --rdzv-backend=c10d" in pretrain
    assert "#SBATCH --signal=B:USR1@600" in pretrain


@pytest.mark.parametrize("runtime", ["pyxis", "apptainer"])
def test_a_hostile_container_workdir_arrives_as_one_word(runtime: str, tmp_path: Path) -> None:
    pwned = tmp_path / "pwned"
    workdir = f"/w/$(touch {pwned}) 'x' `id`"
    p = place(image="/images/t.sif", container_workdir=workdir, options={"container": runtime})
    argv, _ = run(script(p), tmp_path)
    flag = "--container-workdir=" if runtime == "pyxis" else "--pwd="
    assert f"{flag}{workdir}" in argv
    assert not pwned.exists()


def test_a_target_that_is_one_node_type_of_a_partition() -> None:
    part = H100.model_copy(update={"partition": "gpu", "constraint": "h100|h100nvl",
                                   "nodelist": "gpu[01-04]"})  # fmt: skip
    text = script(place(part, options={"constraint": "ib"}))
    d = directives(text)
    assert "--partition=gpu" in d and "--nodelist=gpu[01-04]" in d
    assert "--constraint=(h100|h100nvl)&ib" in d
    assert "# cluster: hpc-east, partition: gpu (target gpu-h100)" in text
