"""Launchers on Kubernetes: how the pods of a multi-node job find each other.

The launcher is the workload's `launcher`, else the rule's `launcher` option, else none
(`plain`: the command runs as written, one process per pod).

- torchrun. Pods of an Indexed Job or JobSet get MASTER_ADDR (rank 0's DNS name),
  MASTER_PORT (29500), NNODES and NODE_RANK (the completion index), and the same values as
  PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT, PET_NPROC_PER_NODE, which
  torchrun reads as its defaults. A command given as a list is wrapped:
  `torchrun --nnodes=N --nproc-per-node=P --node-rank=$(NODE_RANK) --master-addr=$(MASTER_ADDR)
  --master-port=$(MASTER_PORT) train.py ...` (static rendezvous: the completion index is the
  node rank, so a restarted gang comes back with the same ranks; Kubernetes expands `$(VAR)`
  from the container's env). `python train.py` drops the `python`; another program runs with
  `--no-python`; a command that already starts with torchrun is left alone, as is a shell
  string (which sees the PET_ variables). P is `procs_per_node`, else the pod's GPUs, else 1.
  On one node: `torchrun --standalone --nproc-per-node=P train.py`.
  A PyTorchJob's operator sets the PET_ variables itself (from nprocPerNode), so there the
  command is only prefixed with `torchrun`; a Volcano Job's pods get MASTER_ADDR, MASTER_PORT
  and NNODES, and the node rank from VC_TASK_INDEX (its env plugin) in torchrun's arguments.
- mpi. Only an MPIJob (operator "mpijob") can start MPI ranks across pods: its launcher runs
  `mpirun -np N×R` over the workers' `slotsPerWorker` R = `ranks_per_node` (default 1), with
  OMP_NUM_THREADS = `threads_per_rank`, else the worker's CPUs / R.
- MIG. A pod of several MIG slices running several processes (torchrun's P > 1, MPI's R > 1)
  has each process run through router/emit/narrow.py's sh wrapper, as on Slurm: torchrun
  starts `sh -c NARROW sh <slices> <program>` (`--no-python`; python gets -u), mpirun starts
  it before the program, and it keeps the process's own MIG-<uuid> of the pod's device list
  (NVIDIA_VISIBLE_DEVICES from the device plugin) in CUDA_VISIBLE_DEVICES. A command router
  does not write (a shell string, one already starting torchrun) cannot be narrowed: `router
  check` warns of it (router/assure/mig.py, through `narrows` below).
"""

from __future__ import annotations

from typing import Any

from router.emit.k8s.context import Ctx
from router.emit.narrow import narrowed, slices, torchrun_program

RDZV_PORT = 29500
COMPLETION_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"


def launcher(ctx: Ctx) -> str:
    return str(ctx.workload.launcher or ctx.options.get("launcher") or "plain")


def procs_per_node(ctx: Ctx) -> int:
    return ctx.workload.procs_per_node or ctx.resources.gpus_per_node or 1


def ranks_per_node(ctx: Ctx) -> int:
    return ctx.workload.ranks_per_node or 1


def threads_per_rank(ctx: Ctx) -> int:
    if ctx.workload.threads_per_rank:
        return ctx.workload.threads_per_rank
    return max(ctx.resources.cpus_per_node // ranks_per_node(ctx), 1)


def rank_env(ctx: Ctx, nodes: int, master: str) -> list[dict[str, Any]]:
    """What a pod of an indexed gang needs to find rank 0 (and torchrun's PET_ defaults)."""
    rank = {"fieldRef": {"fieldPath": COMPLETION_INDEX}}
    out: list[dict[str, Any]] = [
        {"name": "MASTER_ADDR", "value": master},
        {"name": "MASTER_PORT", "value": str(RDZV_PORT)},
        {"name": "NNODES", "value": str(nodes)},
        {"name": "NODE_RANK", "valueFrom": rank},
    ]
    if launcher(ctx) == "torchrun":
        out += [
            {"name": "PET_MASTER_ADDR", "value": master},
            {"name": "PET_MASTER_PORT", "value": str(RDZV_PORT)},
            {"name": "PET_NNODES", "value": str(nodes)},
            {"name": "PET_NODE_RANK", "valueFrom": rank},
            {"name": "PET_NPROC_PER_NODE", "value": str(procs_per_node(ctx))},
        ]
    return out


def _is_torchrun(command: list[str]) -> bool:
    head = command[0].rsplit("/", 1)[-1]
    return head == "torchrun" or command[:3] in (
        ["python", "-m", "torch.distributed.run"],
        ["python3", "-m", "torch.distributed.run"],
    )


def writes_torchrun(launcher: str, command: object) -> bool:
    """Whether router writes the torchrun command line: launcher torchrun and a command given
    as a list that does not already start torchrun."""
    return launcher == "torchrun" and isinstance(command, list) and not _is_torchrun(command)


def narrows(launcher: str, command: object) -> bool:
    """Whether each local process of a pod is narrowed to its own MIG slice (given more than
    one process and slice): when router writes the torchrun line, and always under mpirun."""
    return launcher == "mpi" or writes_torchrun(launcher, command)


def _count(ctx: Ctx, processes: int) -> int:
    """MIG slices per pod to share out among `processes`, or 0 when nothing is narrowed."""
    return slices(ctx.resources) if processes > 1 else 0


def _program(ctx: Ctx, command: list[str]) -> list[str]:
    return torchrun_program(command, _count(ctx, procs_per_node(ctx)))


def torchrun_command(ctx: Ctx, nodes: int, rank: str = "NODE_RANK") -> list[str] | None:
    """The container command for launcher torchrun on an indexed gang, or None to keep the
    workload's own (not torchrun, a shell string, no command, or already torchrun). `rank`
    names the variable holding the node rank (Volcano's env plugin sets VC_TASK_INDEX)."""
    command = ctx.workload.command
    if not isinstance(command, list) or not writes_torchrun(launcher(ctx), command):
        return None
    if nodes == 1:  # no peers: torchrun's own local rendezvous
        return ["torchrun", "--standalone", f"--nproc-per-node={procs_per_node(ctx)}",
                *_program(ctx, command)]  # fmt: skip
    return [
        "torchrun",
        f"--nnodes={nodes}",
        f"--nproc-per-node={procs_per_node(ctx)}",
        f"--node-rank=$({rank})",
        "--master-addr=$(MASTER_ADDR)",
        "--master-port=$(MASTER_PORT)",
        *_program(ctx, command),
    ]


def operator_torchrun(ctx: Ctx) -> list[str] | None:
    """For PyTorchJob, which sets the PET_ variables: `torchrun <program>`, or None."""
    command = ctx.workload.command
    if not isinstance(command, list) or not writes_torchrun(launcher(ctx), command):
        return None
    return ["torchrun", *_program(ctx, command)]


def mpirun_command(ctx: Ctx, nodes: int) -> list[str]:
    """The MPIJob launcher's command: every rank of every worker, the program as written (run
    by NARROW when a worker's ranks share its MIG slices out)."""
    command = ctx.workload.command
    if command is None:
        raise ctx.error(f"workload {ctx.name}: an MPI job needs a command (the program to run)")
    program = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    count = _count(ctx, ranks_per_node(ctx))
    if count:
        program = narrowed(count, program)
    total = nodes * ranks_per_node(ctx)
    return ["mpirun", "-np", str(total), "-x", "OMP_NUM_THREADS", *program]
