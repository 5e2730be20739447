"""Services: a Deployment with its Service, HPA and PDB, or a KServe InferenceService.

Decisions:
- Port: the workload's `port`; an inference workload without one is served on 8080 (the port
  KServe and most model servers default to), so it still gets a Service and probes (startup,
  readiness, liveness: HTTP on `kubernetes.probe.path` when given, else TCP). Any other service
  without a port gets neither: router cannot guess what it listens on.
- More than one replica: soft topology spread over nodes and zones (k8s/pod.py).
- With an HPA, the Deployment leaves `replicas` out. The HPA owns the count; a `replicas` in
  git would be re-applied on every GitOps sync and scale a busy service back down to `min`.
  The HPA starts at its `minReplicas`.
- HPA metrics: `cpu` and `memory` utilization as written in hpa(...); CPU at 80% when neither is
  given (a bare `with hpa`). Bounds: the plan's replicas (router.evaluate.shape.replica_range:
  the workload's replicas clamped by hpa(min, max)), so the manifest deploys what was counted.
- PDB: pdb(min_available) or pdb(max_unavailable); a bare `with pdb` is minAvailable 1. If both
  were given, min_available wins (a PDB may hold only one).
"""

from __future__ import annotations

from typing import Any

from router.emit.k8s import pod, security
from router.emit.k8s.context import Ctx
from router.emit.k8s.names import LABEL_MAX, dns1035_label

INFERENCE_PORT = 8080
DEFAULT_CPU_UTILIZATION = 80
KSERVE_CONTAINER = "kserve-container"  # the name KServe expects for a custom predictor


def serving_port(ctx: Ctx) -> int | None:
    w = ctx.workload
    if w.port is not None:
        return w.port
    return INFERENCE_PORT if w.kind == "inference" else None


def replica_bounds(ctx: Ctx) -> tuple[int, int]:
    """(min, max) replicas: the plan's, the numbers its capacity and quotas counted."""
    r, w = ctx.resources, ctx.workload
    low, high = (
        (r.replicas_min, r.replicas_max) if r.replicas_max else (w.min_replicas, w.max_replicas)
    )
    return low, max(high, low, 1)


def metrics(hpa: dict[str, Any]) -> list[dict[str, Any]]:
    """autoscaling/v2 Resource metrics (KServe's autoScaling takes the same shape)."""
    cpu, memory = hpa.get("cpu"), hpa.get("memory")
    if cpu is None and memory is None:
        cpu = DEFAULT_CPU_UTILIZATION
    out = []
    for name, percent in (("cpu", cpu), ("memory", memory)):
        if percent is not None:
            target = {"type": "Utilization", "averageUtilization": int(percent)}
            out.append({"type": "Resource", "resource": {"name": name, "target": target}})
    return out


def deployment(ctx: Ctx, name: str) -> dict[str, Any]:
    port = serving_port(ctx)
    c = pod.container(ctx, ctx.name, port=port, probe=True)
    spec: dict[str, Any] = {}
    if "hpa" not in ctx.options:
        spec["replicas"] = replica_bounds(ctx)[0]
    spec["selector"] = {"matchLabels": dict(ctx.selector)}
    spread = replica_bounds(ctx)[1] > 1  # more than one replica: not all on one node or zone
    spec["template"] = pod.template(ctx, pod.pod_spec(ctx, [c], spread=spread))
    meta = ctx.meta(name, annotations=security.skips(ctx, probed=port is not None))
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec}


def service(ctx: Ctx, name: str, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": ctx.meta(name),
        "spec": {
            "type": "ClusterIP",
            "selector": dict(ctx.selector),
            "ports": [{"port": port, "targetPort": port, "protocol": "TCP"}],
        },
    }


def autoscaler(ctx: Ctx, name: str) -> dict[str, Any]:
    low, high = replica_bounds(ctx)
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": ctx.meta(name),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": max(low, 1),  # minReplicas 0 is an alpha feature gate
            "maxReplicas": high,
            "metrics": metrics(ctx.call_args("hpa")),
        },
    }


def disruption_budget(ctx: Ctx, name: str) -> dict[str, Any]:
    args = ctx.call_args("pdb")
    spec: dict[str, Any] = {}
    if "min_available" in args or "max_unavailable" not in args:
        spec["minAvailable"] = int(args.get("min_available", 1))
    else:
        spec["maxUnavailable"] = int(args["max_unavailable"])
    spec["selector"] = {"matchLabels": dict(ctx.selector)}
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": ctx.meta(name),
        "spec": spec,
    }


def kserve_name_limit(namespace: str) -> int:
    """KServe names the predictor `<name>-predictor` and (serverless) its revisions
    `<name>-predictor-00001`, and its host `<name>-predictor-<namespace>` must be one DNS label."""
    revision = LABEL_MAX - len("-predictor-00001")
    host = LABEL_MAX - len("-predictor-") - len(namespace)
    return max(min(revision, host), 16)


def inference_service(ctx: Ctx, name: str) -> dict[str, Any]:
    low, high = replica_bounds(ctx)
    port = ctx.workload.port
    spec = pod.pod_spec(ctx, [pod.container(ctx, KSERVE_CONTAINER, port=port)], spread=high > 1)
    predictor: dict[str, Any] = {"minReplicas": low, "maxReplicas": high}
    # The predictor's `labels` go on its pods, so the PDB's selector finds them.
    predictor["labels"] = dict(ctx.pod_labels)
    if "hpa" in ctx.options:
        predictor["autoScaling"] = {"metrics": metrics(ctx.call_args("hpa"))}
    predictor.update(spec)
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": ctx.meta(name),
        "spec": {"predictor": predictor},
    }


def documents(ctx: Ctx) -> list[dict[str, Any]]:
    """The objects of one service placement, in apply order."""
    if ctx.options.get("serving") == "kserve":
        name = dns1035_label(ctx.name, kserve_name_limit(ctx.namespace))
        docs = [inference_service(ctx, name)]
    else:
        name = dns1035_label(ctx.name)
        docs = [deployment(ctx, name)]
        port = serving_port(ctx)
        if port is not None:
            docs.append(service(ctx, name, port))
        if "hpa" in ctx.options:
            docs.append(autoscaler(ctx, name))
    if "pdb" in ctx.options:
        docs.append(disruption_budget(ctx, name))
    return docs
