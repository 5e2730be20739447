"""Containers and pod templates: resources, placement on the pool, and the user's command.

Placement fidelity comes from the inventory, not from guesses: the node selector is exactly
the pool's declared labels. Router does not add a GPU-type label (such as
nvidia.com/gpu.product) that the pool did not declare, since its value differs per cluster and
a wrong guess leaves pods Pending forever; a pool that wants GPU type selection declares it.

Tolerations: only for the pool's taints the workload is entitled to (models.inventory.Taint):
the GPU taint when it uses GPUs, other keys when its rule says `tolerate = [...]`. The planner
never places a workload on a pool with a NoSchedule/NoExecute taint it is not entitled to
(evaluate/shape.py), so every pod here tolerates what it must and nothing more.

Also here: the security context (k8s/security.py), probes, /dev/shm for GPU work, volumes,
env from secrets, the service account, image pull secrets and the priority class.
"""

from __future__ import annotations

from typing import Any

from router.emit.k8s import security
from router.emit.k8s.context import Ctx
from router.models import NodePool
from router.models.fields import PRIORITIES
from router.models.k8s import SHM, Probe

GPU = "nvidia.com/gpu"
SHELL = ["/bin/sh", "-c"]
SHM_VOLUME = "dshm"
PROBE_PERIOD = 10  # seconds between probes


def gpu_request(ctx: Ctx) -> tuple[str, int] | None:
    """The GPU resource name and count one pod asks for, or None for a CPU-only pod.

    With a MIG profile (the rule's `mig` option, else the plan's) that the pool offers, the pod
    asks for `nvidia.com/mig-<profile>` (the GPU operator's "mixed" strategy; under "single" the
    device plugin advertises every slice as `nvidia.com/gpu`, so it asks for that) instead of whole
    GPUs: as many slices as the plan counted for it, its GPUs per node (one for a one-GPU
    workload). A profile the pool does not offer (the planner never routes there) falls back
    to whole GPUs; a CPU-only workload asks for neither, even under a `mig` rule.
    """
    r = ctx.resources
    if r.gpus_per_node <= 0:
        return None
    profile = ctx.options.get("mig") or r.mig
    if profile and str(profile) in ctx.pool.slices_per_node:
        single = ctx.pool.mig_strategy == "single"  # the plugin's slices are then nvidia.com/gpu
        return (GPU if single else f"nvidia.com/mig-{profile}"), r.gpus_per_node
    return GPU, r.gpus_per_node


def resources(ctx: Ctx) -> dict[str, Any]:
    """Requests and limits of the one container of a pod.

    GPUs and memory: requests = limits (extended resources must be; for memory it gives the
    pod a fixed budget, so the OOM killer picks a pod that overran its own request). CPU:
    requests only, since a CPU limit throttles data loaders without protecting anyone.
    """
    r = ctx.resources
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    if r.cpus_per_node > 0:
        requests["cpu"] = str(r.cpus_per_node)
    if r.memory_per_node > 0:
        requests["memory"] = limits["memory"] = f"{r.memory_per_node}Mi"
    gpu = gpu_request(ctx)
    if gpu:
        requests[gpu[0]] = limits[gpu[0]] = str(gpu[1])
    out: dict[str, Any] = {}
    if requests:
        out["requests"] = requests
    if limits:
        out["limits"] = limits
    return out


def node_selector(pool: NodePool) -> dict[str, str]:
    return dict(sorted(pool.labels.items()))


def tolerate(ctx: Ctx) -> list[str]:
    """The taint keys the rule lets its workloads tolerate (`tolerate = [...]`)."""
    keys = ctx.options.get("tolerate") or []
    return [str(k) for k in keys]


def tolerations(ctx: Ctx) -> list[dict[str, str]]:
    """One toleration per pool taint the workload is entitled to: Equal on its value, or Exists
    when it has none."""
    gpus, keys = ctx.resources.gpus_per_node > 0, set(tolerate(ctx))
    out: list[dict[str, str]] = []
    for t in sorted(ctx.pool.taints, key=lambda t: (t.key, t.value, t.effect)):
        if not t.entitled(gpus, keys):
            continue
        if t.value:
            out.append({"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect})
        else:
            out.append({"key": t.key, "operator": "Exists", "effect": t.effect})
    return out


def argv(command: list[str] | str | None) -> list[str] | None:
    """A list runs as is; a string is a shell command; None keeps the image's entrypoint."""
    if command is None:
        return None
    if isinstance(command, str):
        return [*SHELL, command]
    return list(command)


def env(ctx: Ctx, provided: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The workload's env plus what router provides (rank, peers); the user's value wins.
    Variables from secrets (kubernetes.secret_env) come after, as secretKeyRef."""
    merged: dict[str, dict[str, Any]] = {e["name"]: e for e in provided or []}
    for name, value in ctx.workload.env.items():
        merged[name] = {"name": name, "value": value}
    secrets = ctx.workload.kubernetes.secret_env
    for name, ref in secrets.items():
        if name in ctx.workload.env:
            raise ctx.error(f"workload {ctx.name}: {name} is set in both env and secret_env")
        ref_ = {"name": ref.secret, "key": ref.key}
        merged[name] = {"name": name, "valueFrom": {"secretKeyRef": ref_}}
    return [merged[name] for name in sorted(merged)]


def shm_size(ctx: Ctx) -> int | None:
    """MiB of in-memory /dev/shm: the workload's `kubernetes.shm` (at most the pod's memory,
    which it counts against), else half the pod's memory for GPU work (NCCL and PyTorch data
    loaders need far more than the runtime's 64 MiB), else none."""
    size = ctx.workload.kubernetes.shm
    if size:
        return min(size, ctx.resources.memory_per_node or size)
    if ctx.resources.gpus_per_node > 0 and ctx.resources.memory_per_node > 0:
        return max(ctx.resources.memory_per_node // 2, 1)
    return None


def volumes(ctx: Ctx) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(pod volumes, container mounts): /dev/shm, then the workload's volumes in order."""
    vols: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    shm = shm_size(ctx)
    if shm:
        vols.append({"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": f"{shm}Mi"}})
        mounts.append({"name": SHM_VOLUME, "mountPath": SHM})
    for i, v in enumerate(ctx.workload.kubernetes.volumes):
        name = f"vol-{i}"
        kind, source = v.source
        if kind == "pvc":
            vols.append(
                {
                    "name": name,
                    "persistentVolumeClaim": {"claimName": source, "readOnly": v.read_only},
                }
            )
        elif kind == "secret":
            vols.append({"name": name, "secret": {"secretName": source}})
        else:
            vols.append({"name": name, "configMap": {"name": source}})
        mount: dict[str, Any] = {"name": name, "mountPath": v.mount}
        if v.read_only or kind != "pvc":  # secrets and config maps are read-only anyway
            mount["readOnly"] = True
        mounts.append(mount)
    return vols, mounts


def probes(probe: Probe | None, port: int) -> dict[str, Any]:
    """Startup, readiness and liveness probes: HTTP GET on the probe's path, else TCP.

    The startup probe gives a slow start (a model loading) `probe.startup` seconds, ten minutes
    by default; liveness only begins after it, so a long load is not killed, and a hung server
    is restarted after three failed checks.
    """
    target = probe.port if probe and probe.port else port
    handler: dict[str, Any] = (
        {"httpGet": {"path": probe.path, "port": target}}
        if probe and probe.path
        else {"tcpSocket": {"port": target}}
    )
    startup = probe.startup if probe else 600
    return {
        "startupProbe": {
            **handler,
            "periodSeconds": PROBE_PERIOD,
            "failureThreshold": max(-(-startup // PROBE_PERIOD), 1),
        },
        "readinessProbe": {**handler, "periodSeconds": PROBE_PERIOD, "failureThreshold": 3},
        "livenessProbe": {
            **handler,
            "periodSeconds": 2 * PROBE_PERIOD,
            "timeoutSeconds": 5,
            "failureThreshold": 3,
        },
    }


def pull_policy(image: str) -> str:
    """A digest never changes, so the node's copy is good; a tag may move, so ask the registry
    (only changed layers are pulled)."""
    return "IfNotPresent" if "@" in image else "Always"


def container(
    ctx: Ctx,
    name: str,
    *,
    port: int | None = None,
    probe: bool = False,
    provided_env: list[dict[str, Any]] | None = None,
    command: list[str] | None = None,
    extra_mounts: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The one container of the workload's pods; `command` replaces the workload's own (a
    launcher's)."""
    w = ctx.workload
    if not w.image:
        raise ctx.error(f"workload {w.name} has no image; a Kubernetes pod needs one")
    c: dict[str, Any] = {"name": name, "image": w.image, "imagePullPolicy": pull_policy(w.image)}
    argv_ = command if command is not None else argv(w.command)
    if argv_:
        c["command"] = argv_
    if w.workdir:
        c["workingDir"] = w.workdir
    variables = env(ctx, provided_env)
    if variables:
        c["env"] = variables
    if port is not None:
        c["ports"] = [{"containerPort": port, "protocol": "TCP"}]
    res = resources(ctx)
    if res:
        c["resources"] = res
    if probe and port is not None:
        c.update(probes(w.kubernetes.probe, port))
    mounts = volumes(ctx)[1] + (extra_mounts or [])
    if mounts:
        c["volumeMounts"] = mounts
    c["securityContext"] = security.container_context(ctx)
    return c


def priority_class(ctx: Ctx) -> str | None:
    """The rule's `priority_class`, else the cluster's table entry for the workload's priority
    (models.k8s.KubernetesCluster): the highest named priority at or below it."""
    chosen = ctx.name_option("priority_class")
    if chosen:
        return chosen
    table = ctx.placement.target.kubernetes.priority_classes
    best: tuple[int, str] | None = None
    for word, klass in table.items():
        value = PRIORITIES[word]
        if value <= ctx.workload.priority and (best is None or value > best[0]):
            best = (value, klass)
    return best[1] if best else None


def pod_spec(
    ctx: Ctx,
    containers: list[dict[str, Any]],
    *,
    restart_policy: str | None = None,
    one_per_node: bool = False,
    subdomain: str | None = None,
    spread: bool = False,
    extra_volumes: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A pod spec on the placement's pool: priority, node selector, tolerations, security,
    identity, volumes; `spread` spreads replicas over nodes and zones."""
    spec: dict[str, Any] = {}
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    if subdomain:
        spec["subdomain"] = subdomain
    klass = priority_class(ctx)
    if klass:
        spec["priorityClassName"] = klass
    k = ctx.workload.kubernetes
    if k.service_account:
        spec["serviceAccountName"] = k.service_account
    # No API token in pods that did not ask for an identity: nothing to steal from them.
    spec["automountServiceAccountToken"] = bool(k.service_account)
    if k.image_pull_secrets:
        spec["imagePullSecrets"] = [{"name": s} for s in k.image_pull_secrets]
    spec["securityContext"] = security.pod_context(ctx)
    selector = node_selector(ctx.pool)
    if selector:
        spec["nodeSelector"] = selector
    tols = tolerations(ctx)
    if tols:
        spec["tolerations"] = tols
    if one_per_node:
        # The plan gives a multi-node job one pod per node; without this two pods that ask for
        # fewer GPUs than a node has could share one and the job would take fewer nodes.
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": dict(ctx.selector)},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
    if spread:
        # Soft (ScheduleAnyway): the plan counted the pool's capacity, not its zones, so a hard
        # constraint could leave replicas Pending that the plan said fit.
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": key,
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": dict(ctx.selector)},
            }
            for key in ("kubernetes.io/hostname", "topology.kubernetes.io/zone")
        ]
    spec["containers"] = containers
    vols = volumes(ctx)[0] + (extra_volumes or [])
    if vols:
        spec["volumes"] = vols
    return spec


def template(ctx: Ctx, spec: dict[str, Any]) -> dict[str, Any]:
    """A pod template with the pod labels."""
    return {"metadata": {"labels": dict(ctx.pod_labels)}, "spec": spec}
