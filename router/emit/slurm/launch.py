"""The body of an sbatch script after the setup lines: what runs, under which launcher and
container, and the values taken from the allocation.

Launchers (the workload's `launcher`, else the rule's `launcher` option, else plain):

* plain — one task per node (`srun --ntasks=<nodes>`), the command as given.
* torchrun — one torchrun per node; the rendezvous comes from the allocation: the first node
  of `scontrol show hostnames "$SLURM_JOB_NODELIST"` and a port from the job id, computed by
  the batch shell, outside any container (scontrol is not in images). `--nproc-per-node` is
  `procs_per_node`, else the GPUs per node, else 1; `--rdzv-backend=c10d
  --rdzv-id=$SLURM_JOB_ID`. A list command starting with python/python3 has that word dropped
  (torchrun starts Python itself) unless a Python flag other than -m follows; other programs
  and shell strings get `--no-python`.
* mpi — `srun --mpi=pmix` (the rule's `mpi` option may say pmi2) straight to the program, with
  `--ntasks-per-node=<ranks_per_node>` and `--cpus-per-task=<threads_per_rank>`, and
  OMP_NUM_THREADS set to the threads. No mpirun: srun starts the ranks and PMIx wires them.

MIG slices (the `mig` option, more than one per node): CUDA enumerates one MIG device per
process, the first of CUDA_VISIBLE_DEVICES, so every process must be given its own. Slurm sets
a step's CUDA_VISIBLE_DEVICES to all its slices on the node; then
* mpi: `srun --gpu-bind=single:<ranks per slice>` (slurmd 22.05 gives each task one distinct
  slice, tests/slurm/test_mig_multinode.py; `--gpus-per-task` would ask untyped GPUs);
* torchrun: its workers are not Slurm tasks, so each runs through `sh -c NARROW sh argv`
  (router/emit/narrow.py, POSIX sh, in the image too, shared with Kubernetes), which keeps
  field `LOCAL_RANK % slices + 1` of CUDA_VISIBLE_DEVICES; torchrun's world, RANK and
  rendezvous are untouched;
* plain: one process per node uses one slice; `router check` warns (router/assure/mig.py).

Containers: pyxis (`--container-image`, `--container-mounts`, `--container-workdir` on srun)
or apptainer (`apptainer exec|run [--nv] [--bind ...] [--pwd ...] IMAGE`). Mounts are the
cluster's, then the partition's, then the workload's, each once. A `docker://` (or registry)
image under apptainer is pulled once per job, by the batch shell before srun, to a .sif in the
job's working folder (which every node sees), and removed when the job ends; a .sif path or
another URI is used as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from router.emit.narrow import slices, torchrun_program
from router.errors import PlanError
from router.models.placement import Placement

from .shell import Raw, quote

RDZV_PORT_BASE = 29500  # torchrun's default port; + job id % 1000 keeps two jobs apart


@dataclass
class Launch:
    """What the script runs: lines before srun, srun's argv, and the task shape."""

    launcher: str
    tasks_per_node: int
    cpus_per_task: int
    before: list[str] = field(default_factory=list)  # body lines, router's own shell
    argv: list[str] = field(default_factory=list)


def launcher_of(p: Placement) -> str:
    chosen = p.workload.launcher or p.options.get("launcher") or "plain"
    if chosen not in ("plain", "torchrun", "mpi"):
        raise PlanError(f"workload {p.workload.name}: unknown launcher {chosen!r}")
    return str(chosen)


def task_shape(p: Placement) -> tuple[str, int, int]:
    """(launcher, tasks per node, CPUs per task)."""
    w, r = p.workload, p.resources
    launcher = launcher_of(p)
    if launcher != "mpi":
        return launcher, 1, r.cpus_per_node
    ranks = w.ranks_per_node or 1
    threads = w.threads_per_rank or max(1, r.cpus_per_node // ranks)
    return launcher, ranks, threads


def nodes_of(p: Placement) -> int:
    return 1 if p.resources.replicas_max else p.resources.nodes


def launch(p: Placement, mounts: list[str]) -> Launch:
    w, o = p.workload, p.options
    launcher, per_node, cpus = task_shape(p)
    nodes = nodes_of(p)
    out = Launch(launcher, per_node, cpus)
    srun = ["srun", f"--nodes={nodes}", f"--ntasks={nodes * per_node}"]
    if launcher == "mpi":
        srun.append(f"--ntasks-per-node={per_node}")
    if cpus:  # Slurm 22.05 steps do not inherit --cpus-per-task from the job
        srun.append(f"--cpus-per-task={cpus}")
    mpi = o.get("mpi") or ("pmix" if launcher == "mpi" else None)
    if mpi:
        srun.append(f"--mpi={mpi}")
    count = slices(p.resources)
    if launcher == "mpi" and count and per_node > 1:
        srun.append(f"--gpu-bind=single:{-(-per_node // count)}")  # ranks per slice, rounded up
    if launcher == "mpi":
        out.before.append(f"export OMP_NUM_THREADS={cpus}")
    command = _command(w.command)
    if launcher == "torchrun":
        if command is None:
            raise PlanError(f"workload {w.name}: torchrun needs a command to start")
        out.before += [
            "# The rendezvous host: the allocation's first node, found outside any container.",
            'job_nodes=$(scontrol show hostnames "$SLURM_JOB_NODELIST")',
            "head_node=${job_nodes%%$'\\n'*}",
            f"rdzv_port=$(({RDZV_PORT_BASE} + SLURM_JOB_ID % 1000))",
        ]
        command = _torchrun(p, nodes, command)
    out.argv = _contained(p, srun, command, mounts, out.before)
    return out


def _torchrun(p: Placement, nodes: int, command: list[str]) -> list[str]:
    w, r = p.workload, p.resources
    procs = w.procs_per_node or r.gpus_per_node or 1
    run = [
        "torchrun",
        f"--nnodes={nodes}",
        f"--nproc-per-node={procs}",
        "--rdzv-backend=c10d",
        Raw('--rdzv-endpoint="$head_node:$rdzv_port"'),
        Raw('--rdzv-id="$SLURM_JOB_ID"'),
    ]
    count = slices(r) if procs > 1 else 0  # each worker narrowed to its slice
    return [*run, *torchrun_program(command, count)]


def _contained(
    p: Placement, srun: list[str], command: list[str] | None, mounts: list[str], before: list[str]
) -> list[str]:
    w, r, o = p.workload, p.resources, p.options
    if not w.image:
        if command is None:
            raise PlanError(f"workload {w.name} has neither a command nor an image to run")
        return [*srun, *command]
    workdir = w.container_workdir or w.workdir
    container = o.get("container") or "apptainer"
    if container == "pyxis":
        if command is None:
            raise PlanError(
                f"workload {w.name}: pyxis needs a command (srun cannot run an image's entrypoint"
                ' without one); add a command or use container = "apptainer"'
            )
        opts = [f"--container-image={_pyxis_image(w.image)}"]
        if mounts:
            opts.append(f"--container-mounts={','.join(mounts)}")
        if workdir:
            opts.append(f"--container-workdir={workdir}")
        return [*srun, *opts, *command]
    if container != "apptainer":
        raise PlanError(f"workload {w.name}: unknown container runtime {container!r}")
    opts = ["--nv"] if r.gpus_per_node else []
    if mounts:
        opts.append(f"--bind={','.join(mounts)}")
    if workdir:
        opts.append(f"--pwd={workdir}")
    image: str = _apptainer_image(w.image)
    if image.startswith("docker://"):
        # Pulled once here, not by every node at start; removed when the job ends.
        before += [
            "# The image, pulled once for the job to a file every node reads.",
            f'sif="$PWD/.{w.name}-$SLURM_JOB_ID.sif"',
            "trap 'rm -f \"$sif\"' EXIT",
            f'apptainer pull --force "$sif" {quote(image)}',
        ]
        image = Raw('"$sif"')
    if command is None:
        return [*srun, "apptainer", "run", *opts, image]
    return [*srun, "apptainer", "exec", *opts, image, *command]


def _command(command: Any) -> list[str] | None:
    """A list is argv as is; a string is a shell command, run by bash -c."""
    if not command:
        return None
    if isinstance(command, str):
        return ["bash", "-c", command]
    return [str(arg) for arg in command]


def _pyxis_image(image: str) -> str:
    """pyxis/enroot spell a registry with '#': nvcr.io/nvidia/pytorch -> nvcr.io#nvidia/pytorch."""
    image = image.removeprefix("docker://")
    head, slash, rest = image.partition("/")
    # Docker's rule: a first component with '.' or ':' (or localhost) is a registry host.
    if slash and "#" not in image and ("." in head or ":" in head or head == "localhost"):
        return f"{head}#{rest}"
    return image


def _apptainer_image(image: str) -> str:
    """A local file (.sif, a path) or a URI stays; a registry reference becomes docker://."""
    if "://" in image or image.startswith(("/", "./", "../")) or image.endswith(".sif"):
        return image
    return f"docker://{image}"
