"""The Kubernetes emitter: one multi-document manifest per workload, one kustomization per cluster.

Files: `kubernetes/<cluster>/<workload>.yaml` and `kubernetes/<cluster>/kustomization.yaml`,
for a GitOps tool (Argo CD, Flux) to apply; router needs no cluster to plan. A service becomes
a Deployment (+ Service, HPA, PDB) or a KServe InferenceService (k8s/serving.py); a notebook a
StatefulSet + headless Service or a Kubeflow Notebook (k8s/notebook.py); a job a Job, Indexed
Job, JobSet, PyTorchJob, MPIJob or Volcano Job (k8s/jobs.py).

The kustomization stays minimal (apiVersion, kind, the sorted resources). Every object already
carries the common labels itself (k8s/context.py) rather than through a kustomize `labels:`
transformer, because then a file reads the same whether or not kustomize builds it (`kubectl
apply -f`, review in a pull request), and no transformer can touch an immutable selector.
Namespaces: with router.yaml's `kubernetes: {create_namespaces: true}`, each cluster's folder
also gets `namespaces.yaml`, one Namespace per namespace its workloads use, labelled with the
Pod Security level to enforce: `restricted`, or `baseline` when a rule there opted out. The
objects are marked so Argo CD and Flux never prune them: a plan that drops a namespace's last
workload must not delete the namespace and whatever else lives in it. Off (the default), the
platform owns its namespaces (see k8s/context.py).
"""

from __future__ import annotations

from typing import Any, ClassVar

from router.config import KubernetesSettings
from router.emit.k8s import jobs, notebook, security, serving
from router.emit.k8s.context import MANAGED_BY, context
from router.emit.k8s.notebook import NO_PRUNE
from router.emit.k8s.yamlio import dump_documents
from router.models.placement import Placement

KUSTOMIZATION = "kustomization.yaml"
NAMESPACES = "namespaces.yaml"
ENFORCE = "pod-security.kubernetes.io/enforce"


def folder(cluster: str) -> str:
    return f"kubernetes/{cluster}"


def manifests(p: Placement) -> list[dict[str, Any]]:
    """The Kubernetes objects of one placement, as plain data, in apply order."""
    ctx = context(p)
    if p.workload.kind == "notebook":
        return notebook.documents(ctx)
    return serving.documents(ctx) if p.workload.is_service else jobs.documents(ctx)


def namespaces(placements: list[Placement]) -> list[dict[str, Any]]:
    """A Namespace per namespace used, with the Pod Security level its workloads need."""
    levels: dict[str, str] = {}
    for p in placements:
        ctx = context(p)
        level = security.level(ctx)
        if levels.get(ctx.namespace) != security.BASELINE:
            levels[ctx.namespace] = level
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": name,
                "labels": {
                    MANAGED_BY: "router",
                    ENFORCE: levels[name],
                    "pod-security.kubernetes.io/warn": security.RESTRICTED,
                },
                "annotations": dict(NO_PRUNE),
            },
        }
        for name in sorted(levels)
    ]


class KubernetesEmitter:
    backend: ClassVar[str] = "kubernetes"

    def __init__(self, settings: KubernetesSettings | None = None) -> None:
        self.settings = settings or KubernetesSettings()

    def paths(self, placement: Placement) -> list[str]:
        return [f"{folder(placement.cluster)}/{placement.workload.name}.yaml"]

    def emit(self, placement: Placement) -> dict[str, str]:
        (path,) = self.paths(placement)
        return {path: dump_documents(manifests(placement))}

    def finish(self, cluster: str, placements: list[Placement]) -> dict[str, str]:
        prefix = folder(cluster) + "/"
        mine = [p for p in placements if p.backend == self.backend and p.cluster == cluster]
        files = sorted(path[len(prefix) :] for p in mine for path in self.paths(p))
        out: dict[str, str] = {}
        if self.settings.create_namespaces and mine:
            # Listed first: kustomize orders Namespaces first anyway, and so do readers.
            out[prefix + NAMESPACES] = dump_documents(namespaces(mine))
            files = [NAMESPACES, *files]
        kustomization = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": files,
        }
        out[prefix + KUSTOMIZATION] = dump_documents([kustomization])
        return out
