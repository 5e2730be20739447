"""Containers and pod templates: resources, placement on the pool, and the user's command.

Placement fidelity comes from the inventory, not from guesses: the node selector is exactly
the pool's declared labels, and there is one toleration per declared taint. Router does not add
a GPU-type label (such as nvidia.com/gpu.product) that the pool did not declare, since its
value differs per cluster and a wrong guess leaves pods Pending forever; a pool that wants GPU
type selection declares that label. Likewise the usual `nvidia.com/gpu` NoSchedule toleration
appears only when the pool declares that taint.
"""

from __future__ import annotations

from typing import Any

from router.emit.k8s.context import Ctx
from router.models import NodePool

GPU = "nvidia.com/gpu"
SHELL = ["/bin/sh", "-c"]


def gpu_request(ctx: Ctx) -> tuple[str, int] | None:
    """The GPU resource name and count one pod asks for, or None for a CPU-only pod.

    With a MIG profile (the rule's `mig` option, else the plan's) that the pool offers, the pod
    asks for `nvidia.com/mig-<profile>` (the GPU operator's "mixed" strategy) instead of whole
    GPUs: as many slices as the plan counted for it, its GPUs per node (one for a one-GPU
    workload). A profile the pool does not offer (the planner never routes there) falls back
    to whole GPUs; a CPU-only workload asks for neither, even under a `mig` rule.
    """
    r = ctx.resources
    if r.gpus_per_node <= 0:
        return None
    profile = ctx.options.get("mig") or r.mig
    if profile and str(profile) in ctx.pool.slices_per_node:
        return f"nvidia.com/mig-{profile}", r.gpus_per_node
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


def tolerations(pool: NodePool) -> list[dict[str, str]]:
    """One toleration per pool taint: Equal on its value, or Exists when it has none."""
    out: list[dict[str, str]] = []
    for t in sorted(pool.taints, key=lambda t: (t.key, t.value, t.effect)):
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
    """The workload's env plus what router provides (rank, peers); the user's value wins."""
    merged: dict[str, dict[str, Any]] = {e["name"]: e for e in provided or []}
    for name, value in ctx.workload.env.items():
        merged[name] = {"name": name, "value": value}
    return [merged[name] for name in sorted(merged)]


def container(
    ctx: Ctx,
    name: str,
    *,
    port: int | None = None,
    probe: bool = False,
    provided_env: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The one container of the workload's pods."""
    w = ctx.workload
    if not w.image:
        raise ctx.error(f"workload {w.name} has no image; a Kubernetes pod needs one")
    c: dict[str, Any] = {"name": name, "image": w.image}
    command = argv(w.command)
    if command:
        c["command"] = command
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
        # A TCP check: router cannot know the server's health path, but an open port is
        # what a Service needs before it sends traffic to the pod.
        c["readinessProbe"] = {"tcpSocket": {"port": port}, "periodSeconds": 10}
    return c


def pod_spec(
    ctx: Ctx,
    containers: list[dict[str, Any]],
    *,
    restart_policy: str | None = None,
    one_per_node: bool = False,
    subdomain: str | None = None,
) -> dict[str, Any]:
    """A pod spec on the placement's pool: priority, node selector, tolerations."""
    spec: dict[str, Any] = {}
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    if subdomain:
        spec["subdomain"] = subdomain
    priority_class = ctx.name_option("priority_class")
    if priority_class:
        spec["priorityClassName"] = priority_class
    selector = node_selector(ctx.pool)
    if selector:
        spec["nodeSelector"] = selector
    tols = tolerations(ctx.pool)
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
    spec["containers"] = containers
    return spec


def template(ctx: Ctx, spec: dict[str, Any]) -> dict[str, Any]:
    """A pod template with the pod labels."""
    return {"metadata": {"labels": dict(ctx.pod_labels)}, "spec": spec}
