"""One MIG slice per process, for Slurm and Kubernetes alike.

CUDA uses one MIG device per process, the first it is given (NVIDIA MIG user guide, "CUDA
Device Enumeration": https://docs.nvidia.com/datacenter/tesla/mig-user-guide/), so a process
of a multi-process job that holds several slices on its node must be given its own. NARROW is
a POSIX sh program run as `sh -c NARROW sh <slices> argv...`: it sets CUDA_VISIBLE_DEVICES to
field `local rank % slices + 1` of the node's slice list, then execs argv.

The slice list, first found of:
* CUDA_VISIBLE_DEVICES: what Slurm sets for a step's slices on the node (indices);
* NVIDIA_VISIBLE_DEVICES holding MIG-<uuid>s: the NVIDIA device plugin's "envvar" device list
  strategy joins the pod's device IDs with commas into it (k8s-device-plugin
  internal/plugin/server.go, getAllocateResponse/apiEnvs), as MIG UUIDs under its default
  deviceIDStrategy uuid;
* the MIG-<uuid> entries of the folder NVIDIA_VISIBLE_DEVICES names: its "volume-mounts"
  strategy (which GPU operator installs may set) sets it to /var/run/nvidia-container-devices
  and mounts one file per device ID there (apiMounts).
With none (no GPUs bound, the plugin's `index` IDs such as `0:1`, which CUDA does not take, or
CDI-only injection) nothing is changed and the processes share the first slice, as without it.

The local rank: LOCAL_RANK (torchrun sets it for every worker:
https://pytorch.org/docs/stable/elastic/run.html#environment-variables), else Open MPI's
OMPI_COMM_WORLD_LOCAL_RANK, else MPICH's and Intel MPI's MPI_LOCALRANKID, else 0.

The kubelet expands `$(NAME)` in a container's command and turns `$$` into `$`: NARROW has no
`$$`, and what follows its `$((` is no variable name, so sh gets it as written.
"""

from __future__ import annotations

from router.models.placement import Resources

PYTHONS = ("python", "python3")
NARROW = (
    'd=${CUDA_VISIBLE_DEVICES:-}; if [ -z "$d" ]; then case ${NVIDIA_VISIBLE_DEVICES:-} in '
    "MIG-*) d=$NVIDIA_VISIBLE_DEVICES;; "
    '/*) for f in "$NVIDIA_VISIBLE_DEVICES"/MIG-*; do '
    '[ -e "$f" ] && d="$d${d:+,}${f##*/}"; done;; esac; fi; '
    'if [ -n "$d" ]; then '
    "n=$((${LOCAL_RANK:-${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-0}}} % $1 + 1)); "
    'v="$d,"; while [ "$n" -gt 1 ]; do v=${v#*,}; n=$((n - 1)); done; '
    # Fewer fields than the rank's (a list not of this job's slices): left as it was.
    'v=${v%%,*}; if [ -n "$v" ]; then CUDA_VISIBLE_DEVICES=$v; export CUDA_VISIBLE_DEVICES; fi; '
    'fi; shift; exec "$@"'
)


def slices(r: Resources) -> int:
    """MIG slices per node when a node's processes must share them out (more than one)."""
    return r.gpus_per_node if r.mig and r.gpus_per_node > 1 else 0


def narrowed(count: int, argv: list[str]) -> list[str]:
    """argv run by NARROW over `count` slices per node."""
    return ["sh", "-c", NARROW, "sh", str(count), *argv]


def torchrun_program(command: list[str], count: int = 0) -> list[str]:
    """What torchrun is given to start on each worker: a script or `-m module` (a leading
    python dropped), or `--no-python` and a program; with `count` slices per node (> 0, more
    than one process), sh running NARROW, which starts the Python that torchrun would have
    (unbuffered, -u, as torchrun runs it)."""
    # torchrun takes a script or `-m module`; other interpreter flags need --no-python.
    script = len(command) > 1 and (command[1] == "-m" or not command[1].startswith("-"))
    if count:
        if command[0] in PYTHONS and script:
            command = [command[0], "-u", *command[1:]]
        elif command[0].endswith(".py"):
            command = ["python3", "-u", *command]
        return ["--no-python", *narrowed(count, command)]
    if command[0] in PYTHONS and script:
        return command[1:]
    if command[0].endswith(".py"):
        return command
    return ["--no-python", *command]
