"""Notebooks: a StatefulSet with a headless Service, or a Kubeflow `Notebook` (`notebook =
"kubeflow"`).

A notebook is interactive: it runs until the plan drops it, so it is never a batch Job with a
deadline (the plan's duration only sizes the plan). It keeps its port (the workload's, else
Jupyter's 8888), its probes, and with `kubernetes.storage` a PersistentVolumeClaim of its own,
mounted at `storage.path` (/home/jovyan by default) and kept across restarts.

- StatefulSet (default): one pod `<name>-0` with the stable DNS name `<name>-0.<name>` from the
  headless Service; the PVC comes from a volumeClaimTemplate and is retained when the
  StatefulSet is deleted or scaled down (persistentVolumeClaimRetentionPolicy Retain), so a
  notebook dropped from the plan by mistake loses no work.
- Kubeflow Notebook (kubeflow.org/v1, schema tests/k8s/crds/kubeflow.org_notebooks.yaml): the
  notebook controller makes the StatefulSet and Service itself. The PVC is a separate object,
  marked so that Argo CD and Flux never prune it.
"""

from __future__ import annotations

from typing import Any

from router.emit.k8s import pod, security
from router.emit.k8s.context import Ctx
from router.emit.k8s.names import dns1035_label

NOTEBOOK_PORT = 8888
HOME = "home"  # the claim template's name; pods get the claim home-<name>-0
NO_PRUNE = {
    "argocd.argoproj.io/sync-options": "Prune=false",
    "kustomize.toolkit.fluxcd.io/prune": "disabled",
}


def port(ctx: Ctx) -> int:
    return ctx.workload.port or NOTEBOOK_PORT


def replicas(ctx: Ctx) -> int:
    r = ctx.resources
    count = r.replicas_min if r.replicas_max else max(r.nodes, 1)
    if count > 1 and not r.replicas_max:
        raise ctx.error(f"notebook {ctx.name} is planned on {count} nodes; a notebook runs on one")
    return count


def storage_request(ctx: Ctx) -> dict[str, Any]:
    """A PVC spec for the notebook's storage (ReadWriteOnce: one pod mounts it)."""
    s = ctx.workload.kubernetes.storage
    assert s is not None
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": f"{s.size}Mi"}},
    }
    if s.storage_class:
        spec["storageClassName"] = s.storage_class
    return spec


def container(ctx: Ctx, name: str) -> dict[str, Any]:
    s = ctx.workload.kubernetes.storage
    mounts = [{"name": HOME, "mountPath": s.path}] if s else []
    return pod.container(ctx, name, port=port(ctx), probe=True, extra_mounts=mounts)


def stateful_set(ctx: Ctx) -> list[dict[str, Any]]:
    name = dns1035_label(ctx.name, 63 - len("-0"))
    spec = pod.pod_spec(ctx, [container(ctx, name)])
    body: dict[str, Any] = {
        "serviceName": name,
        "replicas": replicas(ctx),
        "selector": {"matchLabels": dict(ctx.selector)},
        "template": pod.template(ctx, spec),
    }
    if ctx.workload.kubernetes.storage:
        body["volumeClaimTemplates"] = [
            {"metadata": {"name": HOME, "labels": dict(ctx.selector)}, "spec": storage_request(ctx)}
        ]
        body["persistentVolumeClaimRetentionPolicy"] = {
            "whenDeleted": "Retain",
            "whenScaled": "Retain",
        }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": ctx.meta(name),
        "spec": {
            "clusterIP": "None",
            "selector": dict(ctx.selector),
            "ports": [{"name": "http", "port": port(ctx), "targetPort": port(ctx)}],
        },
    }
    annotations = security.skips(ctx, probed=True)
    return [
        service,
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": ctx.meta(name, annotations=annotations),
            "spec": body,
        },
    ]


def kubeflow_notebook(ctx: Ctx) -> list[dict[str, Any]]:
    name = dns1035_label(ctx.name, 52)  # the controller's Service and pod names add suffixes
    docs: list[dict[str, Any]] = []
    extra: list[dict[str, Any]] = []
    if ctx.workload.kubernetes.storage:
        claim = f"{name}-workspace"
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": ctx.meta(claim, annotations=NO_PRUNE),
                "spec": storage_request(ctx),
            }
        )
        extra.append({"name": HOME, "persistentVolumeClaim": {"claimName": claim}})
    # The controller sends traffic to the container named like the notebook, on its port.
    spec = pod.pod_spec(ctx, [container(ctx, name)], extra_volumes=extra)
    docs.append(
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "Notebook",
            "metadata": ctx.meta(name, annotations=security.skips(ctx, probed=True)),
            "spec": {"template": {"spec": spec}},
        }
    )
    return docs


def documents(ctx: Ctx) -> list[dict[str, Any]]:
    if ctx.options.get("notebook") == "kubeflow":
        replicas(ctx)  # one pod: the same check as a StatefulSet's
        return kubeflow_notebook(ctx)
    return stateful_set(ctx)
