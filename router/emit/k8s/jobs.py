"""Jobs: a batch/v1 Job, or for multi-node work an Indexed Job, JobSet, PyTorchJob or Volcano Job.

The plan gives a job `nodes` pods, one per node, each with the per-node GPUs, CPUs and memory.
`operator` picks the kind; the default "job" is a plain Job on one node and an Indexed Job with
a headless Service (stable pod DNS names for rendezvous) on several. An operator named
explicitly is honoured on one node too: a Volcano queue or a PyTorchJob's environment is what
the rule asked for, whatever the size.

Decisions:
- restartPolicy Never, backoffLimit 3, and a podFailurePolicy that ignores disruptions, so a
  preempted or drained pod is retried without using up the retries its own failures get.
- activeDeadlineSeconds is the plan's time limit (the workload's duration).
- No ttlSecondsAfterFinished: with GitOps, a Job deleted by its TTL is re-created by the next
  sync and runs again. Finished Jobs stay until the plan drops them, and prune removes them.
- Queues: `queue` is a Kueue LocalQueue, the `kueue.x-k8s.io/queue-name` label on the top-level
  object (Job, JobSet, PyTorchJob), which Kueue reads there; a batch Job is also created
  suspended, as Kueue's docs ask (Argo CD users should ignore /spec/suspend differences, since
  Kueue flips it on admission). Kueue does not manage Volcano Jobs: with operator "volcano" the
  queue is the Volcano Queue, `spec.queue`.
- Router adds NNODES, NODE_RANK, MASTER_ADDR (rank 0's DNS name) and MASTER_PORT where the
  kind gives pods stable DNS names and does not set them itself; PyTorchJob sets its own,
  Volcano gives VC_TASK_INDEX (env plugin) and hostnames (svc plugin). A variable in the
  workload's env wins. Launchers (torchrun's arguments, MPI ranks): k8s/launch.py.
- TrainJob (trainer.kubeflow.org/v1alpha1, operator "trainjob"): Kubeflow Trainer v2 on its
  torch-distributed runtime; the pool, security and volumes as a runtime patch.
- MPIJob (kubeflow.org/v1, operator "mpijob", or launcher mpi): a Launcher pod running mpirun
  and `nodes` Worker pods, slotsPerWorker = ranks per node. The launcher (1 CPU, 1 GiB, no
  GPU) is counted by the plan: the CRD here is the training operator's kubeflow.org/v1 MPIJob,
  which has no `runLauncherAsWorker` (mpi-operator's v2beta1 field), so it is a pod of its own,
  and every worker's node in the plan keeps room for it (Resources.mpi_launcher: the plan's
  CPUs and memory per node include it, the workers request the rest). It runs on the
  placement's pool (the workers' node selector and tolerations) and prefers a worker's node
  (pod affinity to the workers, who tell themselves apart from it by `router.dev/mpi-role`),
  so it never takes room the plan gave other work on other pools.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from router.emit.k8s import launch, pod, security
from router.emit.k8s.context import KUEUE_QUEUE, Ctx
from router.emit.k8s.names import LABEL_MAX, dns1035_label
from router.models.placement import MPI_LAUNCHER_CPUS, MPI_LAUNCHER_MEMORY

BACKOFF_LIMIT = 3
RESTARTS = 3  # whole-job restarts of a gang (JobSet, Volcano)
IGNORE_DISRUPTIONS = {
    "rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
    ]
}
JOBSET_JOB = "node"  # the one replicated job of a JobSet
WORKER = "worker"  # the Volcano task, and the PyTorchJob replica type (lowercased in names)


def node_count(ctx: Ctx) -> int:
    return max(ctx.resources.nodes, 1)


def deadline(ctx: Ctx) -> int | None:
    seconds = ctx.resources.time or ctx.workload.duration
    return seconds if seconds > 0 else None


def kueue(ctx: Ctx) -> dict[str, str]:
    queue = ctx.name_option("queue")
    return {KUEUE_QUEUE: queue} if queue else {}


def fitted(ctx: Ctx, suffix: str) -> str:
    """The object name, short enough that `<name><suffix>` (a pod hostname) is a DNS label."""
    return dns1035_label(ctx.name, LABEL_MAX - len(suffix))


def skip_annotations(ctx: Ctx) -> dict[str, str]:
    return security.skips(ctx, probed=False)


def job_spec(
    ctx: Ctx, spec: dict[str, Any], *, nodes: int = 1, backoff: int = BACKOFF_LIMIT
) -> dict[str, Any]:
    """A batch/v1 JobSpec running `nodes` indexed pods (a plain Job when nodes is 1)."""
    out: dict[str, Any] = {}
    if nodes > 1:
        out.update(completionMode="Indexed", completions=nodes, parallelism=nodes)
    out["backoffLimit"] = backoff
    seconds = deadline(ctx)
    if seconds:
        out["activeDeadlineSeconds"] = seconds
    out["podFailurePolicy"] = IGNORE_DISRUPTIONS
    out["template"] = pod.template(ctx, spec)
    return out


def batch_job(ctx: Ctx) -> list[dict[str, Any]]:
    """A Job on one node, or an Indexed Job and its headless Service on several."""
    nodes = node_count(ctx)
    queue = kueue(ctx)
    if nodes == 1:
        name = fitted(ctx, "")
        command = launch.torchrun_command(ctx, 1)
        spec = pod.pod_spec(
            ctx, [pod.container(ctx, ctx.name, command=command)], restart_policy="Never"
        )
        docs: list[dict[str, Any]] = []
    else:
        name = fitted(ctx, f"-{nodes - 1}")  # pod hostnames are <job>-<index>
        provided = launch.rank_env(ctx, nodes, f"{name}-0.{name}")
        command = launch.torchrun_command(ctx, nodes)
        spec = pod.pod_spec(
            ctx,
            [pod.container(ctx, ctx.name, provided_env=provided, command=command)],
            restart_policy="Never",
            one_per_node=True,
            subdomain=name,
        )
        docs = [headless_service(ctx, name)]
    body = job_spec(ctx, spec, nodes=nodes)
    if queue:
        body = {"suspend": True, **body}
    meta = ctx.meta(name, queue, skip_annotations(ctx))
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": body}
    return [*docs, job]


def headless_service(ctx: Ctx, name: str) -> dict[str, Any]:
    """Gives each pod of an Indexed Job the DNS name <job>-<index>.<service>."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": ctx.meta(name),
        "spec": {
            "clusterIP": "None",
            "selector": dict(ctx.selector),
            # Peers must resolve each other while they start, before any is Ready.
            "publishNotReadyAddresses": True,
        },
    }


def jobset(ctx: Ctx) -> list[dict[str, Any]]:
    nodes = node_count(ctx)
    name = fitted(ctx, f"-{JOBSET_JOB}-0-{nodes - 1}")  # pods are <jobset>-<job>-<i>-<index>
    provided = launch.rank_env(ctx, nodes, f"{name}-{JOBSET_JOB}-0-0.{name}")
    command = launch.torchrun_command(ctx, nodes)
    spec = pod.pod_spec(
        ctx,
        [pod.container(ctx, ctx.name, provided_env=provided, command=command)],
        restart_policy="Never",
        one_per_node=nodes > 1,
    )
    replicated = {
        "name": JOBSET_JOB,
        "replicas": 1,
        # A failed pod fails its Job at once; the JobSet then restarts every pod together.
        "template": {"spec": job_spec(ctx, spec, nodes=nodes, backoff=0)},
    }
    body = {
        "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
        "failurePolicy": {"maxRestarts": RESTARTS},
        "replicatedJobs": [replicated],
    }
    return [
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": ctx.meta(name, kueue(ctx), skip_annotations(ctx)),
            "spec": body,
        }
    ]


def pytorchjob(ctx: Ctx) -> list[dict[str, Any]]:
    """Master 1 + Worker nodes-1; the operator sets MASTER_ADDR, RANK and WORLD_SIZE in the
    container named "pytorch"."""
    nodes = node_count(ctx)
    name = fitted(ctx, f"-{WORKER}-{max(nodes - 2, 0)}")
    command = launch.operator_torchrun(ctx)
    spec = pod.pod_spec(
        ctx, [pod.container(ctx, "pytorch", command=command)], one_per_node=nodes > 1
    )
    replica = {"restartPolicy": "OnFailure", "template": pod.template(ctx, spec)}
    replicas: dict[str, Any] = {"Master": {"replicas": 1, **replica}}
    if nodes > 1:
        replicas["Worker"] = {"replicas": nodes - 1, **replica}
    body: dict[str, Any] = {}
    if pod.gpu_request(ctx) or ctx.workload.procs_per_node:
        body["nprocPerNode"] = str(launch.procs_per_node(ctx))  # one process per GPU
    run_policy: dict[str, Any] = {"backoffLimit": BACKOFF_LIMIT}
    seconds = deadline(ctx)
    if seconds:
        run_policy["activeDeadlineSeconds"] = seconds
    body["runPolicy"] = run_policy
    body["pytorchReplicaSpecs"] = replicas
    return [
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": ctx.meta(name, kueue(ctx), skip_annotations(ctx)),
            "spec": body,
        }
    ]


# checkov takes any kind "Job" for a batch/v1 Job and looks for spec.template, which a Volcano
# Job does not have (its pods are spec.tasks[].template, hardened like every other pod), so
# the pod checks cannot see them. Said on the object, not in the repo-wide skip list.
_UNSEEN = "checkov reads a Volcano Job as batch/v1; its pods are in spec.tasks"
VOLCANO_SKIPS = {
    f"checkov.io/skip{90 + i}": f"{check}={_UNSEEN}"
    for i, check in enumerate(
        ("CKV_K8S_23", "CKV_K8S_29", "CKV_K8S_31", "CKV_K8S_38", "CKV_K8S_40")
    )
}


def volcano_job(ctx: Ctx) -> list[dict[str, Any]]:
    """A gang: Volcano starts the job only when all `nodes` pods can be placed at once."""
    nodes = node_count(ctx)
    name = fitted(ctx, f"-{WORKER}-{nodes - 1}")  # pods are <job>-<task>-<index>
    provided = [
        {"name": "MASTER_ADDR", "value": f"{name}-{WORKER}-0.{name}"},
        {"name": "MASTER_PORT", "value": str(launch.RDZV_PORT)},
        {"name": "NNODES", "value": str(nodes)},
    ]
    command = launch.torchrun_command(ctx, nodes, rank="VC_TASK_INDEX")
    spec = pod.pod_spec(
        ctx,
        [pod.container(ctx, ctx.name, provided_env=provided, command=command)],
        restart_policy="Never",
        one_per_node=nodes > 1,
    )
    seconds = deadline(ctx)
    if seconds:
        spec = {"activeDeadlineSeconds": seconds, **spec}  # Volcano Jobs have no job deadline
    body: dict[str, Any] = {"schedulerName": "volcano", "minAvailable": nodes}
    queue = ctx.name_option("queue")
    if queue:
        body["queue"] = queue
    priority_class = ctx.name_option("priority_class")
    if priority_class:
        body["priorityClassName"] = priority_class  # the PodGroup's priority
    body["maxRetry"] = RESTARTS
    body["plugins"] = {"env": [], "svc": []}
    body["policies"] = [{"events": ["PodEvicted", "PodFailed"], "action": "RestartJob"}]
    body["tasks"] = [{"name": WORKER, "replicas": nodes, "template": pod.template(ctx, spec)}]
    return [
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": ctx.meta(name, annotations={**skip_annotations(ctx), **VOLCANO_SKIPS}),
            "spec": body,
        }
    ]


_MEMORY = f"{MPI_LAUNCHER_MEMORY}Mi"
LAUNCHER_RESOURCES = {
    "requests": {"cpu": str(MPI_LAUNCHER_CPUS), "memory": _MEMORY},
    "limits": {"memory": _MEMORY},
}
MPI_ROLE = "router.dev/mpi-role"  # pod label: "launcher" or "worker"


def _worker_ctx(ctx: Ctx) -> Ctx:
    """The context of the Worker pods: the plan's per-node numbers less the launcher's."""
    r = ctx.resources
    if not r.mpi_launcher:
        return ctx
    less = replace(
        r,
        cpus_per_node=r.cpus_per_node - MPI_LAUNCHER_CPUS,
        memory_per_node=r.memory_per_node - MPI_LAUNCHER_MEMORY,
    )
    return replace(ctx, placement=replace(ctx.placement, resources=less))


def _with_role(ctx: Ctx, role: str) -> Ctx:
    return replace(ctx, pod_labels={**ctx.pod_labels, MPI_ROLE: role})


def mpijob(ctx: Ctx) -> list[dict[str, Any]]:
    """Launcher 1 (mpirun) + Worker nodes, slotsPerWorker ranks each; the launcher on the
    pool, counted beside a worker (see the module docstring)."""
    nodes = node_count(ctx)
    name = fitted(ctx, f"-{WORKER}-{nodes - 1}")  # pods are <job>-worker-<index>
    wctx = _with_role(_worker_ctx(ctx), WORKER)
    workers = {**ctx.selector, MPI_ROLE: WORKER}
    threads = {"name": "OMP_NUM_THREADS", "value": str(launch.threads_per_rank(wctx))}
    worker = pod.container(wctx, "worker", provided_env=[threads], command=[])
    worker.pop("command", None)  # the operator gives workers their own command
    worker_spec = pod.pod_spec(replace(wctx, selector=workers), [worker], one_per_node=nodes > 1)
    lctx = _with_role(ctx, "launcher")
    runner = pod.container(
        lctx, "launcher", provided_env=[threads], command=launch.mpirun_command(ctx, nodes)
    )
    runner["resources"] = LAUNCHER_RESOURCES
    runner_spec = pod.pod_spec(lctx, [runner])
    # The launcher reaches the workers through the API (kubectl exec) with the service account
    # the operator gives it, so its token is mounted. It keeps the pool's node selector and
    # tolerations: the plan counted it there.
    for key in ("automountServiceAccountToken", "volumes"):
        runner_spec.pop(key, None)
    runner.pop("volumeMounts", None)
    runner_spec["affinity"] = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": workers},
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        }
    }
    run_policy: dict[str, Any] = {"backoffLimit": BACKOFF_LIMIT, "cleanPodPolicy": "Running"}
    seconds = deadline(ctx)
    if seconds:
        run_policy["activeDeadlineSeconds"] = seconds
    body = {
        "slotsPerWorker": launch.ranks_per_node(ctx),
        "runPolicy": run_policy,
        "mpiReplicaSpecs": {
            "Launcher": {
                "replicas": 1,
                "restartPolicy": "OnFailure",
                "template": pod.template(lctx, runner_spec),
            },
            "Worker": {
                "replicas": nodes,
                "restartPolicy": "OnFailure",
                "template": pod.template(wctx, worker_spec),
            },
        },
    }
    return [
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "MPIJob",
            "metadata": ctx.meta(name, kueue(ctx), skip_annotations(ctx)),
            "spec": body,
        }
    ]


TRAIN_RUNTIME = "torch-distributed"  # the ClusterTrainingRuntime Kubeflow Trainer v2 installs
TRAIN_NODE = "node"  # its replicated job and container
PATCH_FIELDS = (
    "serviceAccountName",
    "automountServiceAccountToken",
    "imagePullSecrets",
    "securityContext",
    "nodeSelector",
    "tolerations",
    "affinity",
    "volumes",
)


def trainjob(ctx: Ctx) -> list[dict[str, Any]]:
    """A Kubeflow Trainer v2 TrainJob on the torch-distributed runtime, which sets torchrun's
    PET_ variables; the pool placement and pod security go in as a runtime patch (the fields
    a TrainJob lets a manager set). The patch has no priorityClassName: a priority class needs
    the runtime's own template."""
    nodes = node_count(ctx)
    name = fitted(ctx, f"-{TRAIN_NODE}-0-{nodes - 1}")
    c = pod.container(ctx, TRAIN_NODE, command=launch.operator_torchrun(ctx))
    spec = pod.pod_spec(ctx, [c], one_per_node=nodes > 1)
    patch_spec = {
        k: spec[k] for k in PATCH_FIELDS if k in spec and k != "automountServiceAccountToken"
    }
    patch_container: dict[str, Any] = {"name": TRAIN_NODE, "securityContext": c["securityContext"]}
    if "volumeMounts" in c:
        patch_container["volumeMounts"] = c["volumeMounts"]
    patch_spec["containers"] = [patch_container]
    trainer: dict[str, Any] = {"image": c["image"]}
    if "command" in c:
        trainer["command"] = c["command"]
    if "env" in c:
        trainer["env"] = c["env"]
    trainer["numNodes"] = nodes
    trainer["numProcPerNode"] = launch.procs_per_node(ctx)
    if "resources" in c:
        trainer["resourcesPerNode"] = c["resources"]
    replicated = {"name": TRAIN_NODE, "template": {"spec": {"template": {"spec": patch_spec}}}}
    body: dict[str, Any] = {"runtimeRef": {"name": TRAIN_RUNTIME}, "trainer": trainer}
    seconds = deadline(ctx)
    if seconds:
        body["activeDeadlineSeconds"] = seconds
    body["runtimePatches"] = [
        {
            "manager": "router.dev/router",
            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [replicated]}}},
        }
    ]
    return [
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": ctx.meta(name, kueue(ctx), skip_annotations(ctx)),
            "spec": body,
        }
    ]


OPERATORS = {
    "job": batch_job,
    "trainjob": trainjob,
    "jobset": jobset,
    "pytorchjob": pytorchjob,
    "mpijob": mpijob,
    "volcano": volcano_job,
}


def documents(ctx: Ctx) -> list[dict[str, Any]]:
    """The objects of one job placement, in apply order. Launcher mpi means an MPIJob, the
    one kind that starts MPI ranks across pods; another operator with it is an error."""
    default = "mpijob" if launch.launcher(ctx) == "mpi" else "job"
    operator = str(ctx.options.get("operator", default))
    if launch.launcher(ctx) == "mpi" and operator != "mpijob":
        raise ctx.error(
            f'workload {ctx.name} has launcher mpi: on Kubernetes that needs operator = "mpijob",'
            f' not "{operator}"'
        )
    if operator not in OPERATORS:
        raise ctx.error(f'unknown operator "{operator}"; expected one of {", ".join(OPERATORS)}')
    return OPERATORS[operator](ctx)
