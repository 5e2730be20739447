"""Can this target's nodes hold this workload, and in what shape?

A job states totals (GPUs, CPUs, memory across its nodes); when it does not say how many
nodes, the target decides: 64 GPUs on 8-GPU nodes is 8 nodes of 8, 12 GPUs is 2 nodes of 6.
A service states one replica; each replica must fit one node. The answer is either the
`Resources` the placement would take, or the reason it cannot fit, in words.

A target with `gpu_type: any` has GPUs of no stated type: a workload asking for a model (h100)
never fits there, since nothing says the GPUs are that model; one asking for `any` fits by
count. Its placements carry no GPU type (the Slurm script asks for untyped GPUs). A policy
reads the target's gpu_type as "any", the inventory's word: `where gpu_type == "h100"` excludes
it, and `gpu_type == workload.gpu_type` holds there exactly for workloads asking for any.

A Kubernetes pool's NoSchedule/NoExecute taints protect it: a workload fits there only when it
is entitled to every one (the GPU taint when it uses GPUs; any other key only when the rule
says `tolerate = ["key"]`), since the emitter writes tolerations for exactly those taints and
a pod without one would stay Pending. A pool tainted `research-only` takes only the work of
rules that tolerate it.

A service's replicas are decided here, once, by `replica_range`; the table, plan.json, quotas,
capacity and the manifests all read the numbers from the placement's `Resources`.
"""

from __future__ import annotations

from typing import Any

from router.errors import did_you_mean
from router.models import NodePool, Partition, TargetRef, Workload
from router.models.inventory import Taint, untolerated
from router.models.placement import (
    MPI_LAUNCHER_CPUS,
    MPI_LAUNCHER_MEMORY,
    Resources,
    runs_as_mpijob,
)
from router.quantity import format_duration, format_memory


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _spread(gpus: int, per_node: int) -> tuple[int, int]:
    """(nodes, gpus per node) for `gpus` GPUs on nodes of `per_node`: fewest nodes, even split
    where one exists (12 on 8-GPU nodes → 2 × 6), else the fewest nodes rounded up."""
    least = _ceil(gpus, per_node)
    for n in range(least, min(gpus, least * 2) + 1):
        if gpus % n == 0 and gpus // n <= per_node:
            return n, gpus // n
    return least, _ceil(gpus, least)


def _taint_reason(blocked: list[Taint]) -> str:
    others = sorted({t.key for t in blocked if not t.gpu})
    if others:
        listed = ", ".join(f'"{k}"' for k in others)
        return f"tainted {', '.join(others)}; the rule does not tolerate it (tolerate = [{listed}])"
    keys = ", ".join(sorted({t.key for t in blocked}))
    return f"tainted {keys} for GPU work; the workload uses no GPUs"


def replica_range(w: Workload, options: dict[str, Any]) -> tuple[int, int] | str:
    """(min, max) replicas of service `w` under a route's options, or why none is possible.

    The rule: the workload's `replicas` bound the HPA; the rule's `hpa(min, max)` gives
    defaults and platform limits, and clamps, never widens:
      min = max(workload min, hpa min),  max = min(workload max, hpa max).
    A workload without `replicas` takes hpa's (min default 1, max default min). With an HPA
    the min is at least 1 (minReplicas 0 is an alpha feature gate). Without `hpa`, the
    workload's replicas as written. min > max: no count satisfies both, a reason in words.
    """
    low, high = w.min_replicas, w.max_replicas
    if "hpa" not in options:
        return low, high
    hpa = options["hpa"] if isinstance(options["hpa"], dict) else {}
    if w.replicas is None:
        low = int(hpa.get("min", 1))
        return low, max(int(hpa.get("max", low)), low)
    if "min" in hpa:
        low = max(low, int(hpa["min"]))
    if "max" in hpa:
        high = min(high, int(hpa["max"]))
    low = max(low, 1)
    if low > high:
        bounds = ", ".join(f"{k} = {hpa[k]}" for k in ("min", "max") if k in hpa)
        return (
            f"replicas {w.min_replicas}-{w.max_replicas} and the rule's hpa({bounds}) "
            f"leave no replica count: min {low} > max {high} (hpa clamps the workload's "
            f"replicas, never widens them)"
        )
    return low, high


def _needs_command(w: Workload, backend: str, options: dict[str, Any]) -> str | None:
    """What the emitters cannot write without a command, refused here: so `router check`,
    `router plan` and `router explain` give it as the reason, not an error at writing time."""
    if w.command:
        return None
    if backend == "slurm":
        if (w.launcher or options.get("launcher")) == "torchrun":
            return (
                "torchrun on Slurm needs a command (the program it starts); the workload has none"
            )
        if w.image and options.get("container") == "pyxis":
            return (
                "pyxis needs a command (srun cannot run an image's entrypoint without one);"
                ' the workload has none (or use container = "apptainer")'
            )
    elif runs_as_mpijob(w, options):
        return "an MPIJob needs a command (mpirun starts it on every rank); the workload has none"
    return None


def shape(w: Workload, ref: TargetRef, options: dict[str, Any]) -> Resources | str:
    """The resources `w` takes on `ref`, or why it cannot fit there."""
    t = ref.target
    if ref.backend == "kubernetes" and not w.image:
        return "a Kubernetes pod needs an image; the workload has none"
    if ref.backend == "kubernetes" and w.image and w.image.startswith("/"):
        return f"a Kubernetes pod needs a registry image, not the file {w.image}"
    if ref.backend == "slurm" and not (w.command or w.image):
        return "a Slurm job needs a command or an image; the workload has neither"
    refused = (
        _needs_command(w, ref.backend, options)
        or _partition_access(w, t, options)
        or _oversubscribe(w, t, options)
    )
    if refused:
        return refused
    if isinstance(t, NodePool) and t.taints:
        blocked = untolerated(t.taints, w.gpus > 0, options.get("tolerate") or ())
        if blocked:
            return _taint_reason(blocked)
    capacity_nodes = getattr(t, "max_nodes", None) or t.nodes
    gpu_type = t.gpu_type if w.gpus and not t.untyped_gpus else None
    mig = options.get("mig")
    if w.gpus:
        if mig:
            offered = t.slices_per_node
            if mig not in offered:
                close = did_you_mean(mig, offered)
                return f"offers no MIG profile {mig}" + (
                    f" (has {', '.join(sorted(offered))}{'; ' + close if close else ''})"
                    if offered
                    else ""
                )
        elif t.whole_gpus_per_node == 0:
            return (
                "has no whole GPUs (all are cut into MIG slices)"
                if t.gpus_per_node
                else ("has no GPUs")
            )
        if w.gpu_type != "any" and t.untyped_gpus:
            return f"has GPUs of no stated type, the workload asks for {w.gpu_type}"
        if w.gpu_type not in ("any", t.gpu_type):
            return f"has {t.gpu_type} GPUs, the workload asks for {w.gpu_type}"
    # A whole-GPU workload sees only the GPUs not cut into MIG slices, a MIG one only slices.
    per_node_gpus = t.slices_per_node.get(mig, 0) if mig else t.whole_gpus_per_node

    time = int(options.get("time") or w.duration)
    if t.max_time is not None and time > t.max_time:
        return f"max time {format_duration(t.max_time)} < {format_duration(time)}"

    if w.is_service:
        replicas = replica_range(w, options)
        if isinstance(replicas, str):
            return replicas
        gpn, cpn, mpn = w.gpus, w.cpus, w.memory
        if gpn > per_node_gpus:
            return f"{per_node_gpus} GPUs per node < {gpn} per replica"
        if cpn > t.cpus_per_node:
            return f"{t.cpus_per_node} CPUs per node < {cpn} per replica"
        if mpn > t.memory_per_node:
            return f"{format_memory(t.memory_per_node)} per node < {format_memory(mpn)} per replica"
        return Resources(
            nodes=0,
            gpus_per_node=gpn,
            cpus_per_node=cpn,
            memory_per_node=mpn,
            time=time,
            exclusive=False,
            whole_nodes=0,
            replicas_min=replicas[0],
            replicas_max=replicas[1],
            gpu_type=gpu_type,
            mig=mig,
        )

    if w.nodes is not None:
        nodes = w.nodes
        gpn = w.gpus_per_node if w.gpus_per_node is not None else _ceil(w.gpus, nodes)
    elif w.gpus_per_node is not None and w.gpus_per_node > 0:
        gpn = w.gpus_per_node
        nodes = max(1, _ceil(w.gpus, gpn))
    elif w.gpus:
        nodes, gpn = _spread(w.gpus, per_node_gpus)
    else:
        # A CPU job spreads only when one node cannot hold its CPUs or memory.
        nodes = max(1, _ceil(w.cpus, t.cpus_per_node), _ceil(w.memory, t.memory_per_node))
        gpn = 0
    if gpn > per_node_gpus:
        return f"{per_node_gpus} GPUs per node < {gpn} asked per node"
    cpn, mpn = _ceil(w.cpus, nodes), _ceil(w.memory, nodes)
    if cpn > t.cpus_per_node:
        return f"{t.cpus_per_node} CPUs per node < {cpn} asked per node"
    if mpn > t.memory_per_node:
        return f"{format_memory(t.memory_per_node)} per node < {format_memory(mpn)} asked per node"
    if nodes > capacity_nodes:
        return f"{capacity_nodes} nodes < {nodes} needed"
    # isinstance, not getattr with a default: a name missing on a pydantic model raises
    # inside it (~2 µs, on every candidate of 10,000 workloads).
    per_job = t.max_nodes_per_job if isinstance(t, Partition) else None
    if per_job is not None and nodes > per_job:
        return f"the partition allows {per_job} nodes per job (MaxNodes) < {nodes} needed"
    if (options.get("launcher") or w.launcher) == "mpi" and w.ranks_per_node:
        # ranks x threads CPUs per node: what `--ntasks-per-node` x `--cpus-per-task` asks.
        threads = w.threads_per_rank or max(1, cpn // w.ranks_per_node)
        if w.ranks_per_node * threads > t.cpus_per_node:
            return (
                f"{t.cpus_per_node} CPUs per node < {w.ranks_per_node} ranks × {threads}"
                " threads per node"
            )
        cpn = max(cpn, w.ranks_per_node * threads)
    launcher = ref.backend == "kubernetes" and runs_as_mpijob(w, options)
    if launcher:
        # The MPIJob's Launcher pod runs beside a worker: the plan counts it on every worker's
        # node (models/placement.py Resources.mpi_launcher), so it has room wherever it lands.
        cpn, mpn = cpn + MPI_LAUNCHER_CPUS, mpn + MPI_LAUNCHER_MEMORY
        if cpn > t.cpus_per_node:
            return (
                f"{t.cpus_per_node} CPUs per node < {cpn} asked per node with the MPIJob"
                f" launcher's {MPI_LAUNCHER_CPUS} beside a worker"
            )
        if mpn > t.memory_per_node:
            return (
                f"{format_memory(t.memory_per_node)} per node < {format_memory(mpn)} asked per"
                f" node with the MPIJob launcher's {format_memory(MPI_LAUNCHER_MEMORY)} beside"
                " a worker"
            )
    # OverSubscribe=EXCLUSIVE: Slurm gives every job its nodes whole, asked or not.
    whole = isinstance(t, Partition) and (t.oversubscribe or "").startswith("exclusive")
    exclusive = bool(options.get("exclusive")) or nodes > 1 or whole
    # A job array holds `in_flight` tasks of this shape at once: capacity counts them all.
    parallel = w.array.in_flight if w.array else 0
    if ref.backend != "slurm" and (w.array or w.after):
        return "job arrays and `after` dependencies run on Slurm only"
    if parallel and exclusive and nodes * parallel > capacity_nodes:
        return f"{capacity_nodes} nodes < {nodes} × {parallel} array tasks in flight"
    return Resources(
        nodes=nodes,
        gpus_per_node=gpn,
        cpus_per_node=cpn,
        memory_per_node=mpn,
        time=time,
        exclusive=exclusive,
        whole_nodes=nodes * max(1, parallel) if exclusive else 0,
        gpu_type=gpu_type,
        mig=mig,
        array_parallel=parallel,
        mpi_launcher=launcher,
    )


def _oversubscribe(w: Workload, t: object, options: dict[str, Any]) -> str | None:
    """Why a partition's OverSubscribe breaks the plan's promise, or None (as slurmctld 22.05
    showed live). NO and YES (sharing only for jobs that ask, which router's never do) change
    nothing; EXCLUSIVE gives every job whole nodes (counted so in `shape`), which a service's
    array tasks, planned per replica, would not get; FORCE shares nodes and cores whatever a
    job asks, so `exclusive` is not honoured there (capacity counted unshared stays safe)."""
    mode = ((t.oversubscribe or "") if isinstance(t, Partition) else "").partition(":")[0]
    if mode == "force" and options.get("exclusive"):
        return (
            "the partition shares nodes whatever a job asks (OverSubscribe=FORCE):"
            " exclusive is not honoured"
        )
    if mode == "exclusive" and w.is_service:
        return (
            "every job takes whole nodes here (OverSubscribe=EXCLUSIVE); a service's"
            " replicas are planned per replica"
        )
    return None


def _partition_access(w: Workload, t: object, options: dict[str, Any]) -> str | None:
    """Why Slurm would refuse the job on this partition (AllowAccounts/AllowQos/AllowGroups,
    DenyAccounts/DenyQos), or None. Unset lists allow all; a job that states no account or
    QOS where the partition allows only some is refused too, since its default could be any
    of them."""
    if not isinstance(t, Partition):
        return None
    asked = (
        ("accounts", "account", t.allow_accounts, options.get("account") or w.account or t.account),
        ("QOS", "QOS", t.allow_qos, options.get("qos") or t.qos),
        ("groups", "team", t.allow_groups, w.team),
    )
    for what, one, allowed, value in asked:
        if allowed is not None and value not in allowed:
            got = f"the workload's {one} is {value}" if value else f"the workload states no {one}"
            return f"the partition allows {what} {', '.join(allowed)}; {got}"
    # DenyAccounts/DenyQos count only where the allow list is unset (as in Slurm); an unstated
    # account or QOS passes: Slurm uses the user's default, which is rarely a denied one.
    for slurm, allowed, denied, value in (
        ("DenyAccounts", t.allow_accounts, t.deny_accounts, asked[0][3]),
        ("DenyQos", t.allow_qos, t.deny_qos, asked[1][3]),
    ):
        if allowed is None and value in denied:
            return f"the partition denies {value} ({slurm}={','.join(denied)})"
    return None
