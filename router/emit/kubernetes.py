"""The Kubernetes emitter: one multi-document manifest per workload, one kustomization per cluster.

Files: `kubernetes/<cluster>/<workload>.yaml` and `kubernetes/<cluster>/kustomization.yaml`,
for a GitOps tool (Argo CD, Flux) to apply; router needs no cluster to plan. A service becomes
a Deployment (+ Service, HPA, PDB) or a KServe InferenceService (k8s/serving.py); a job a Job,
Indexed Job, JobSet, PyTorchJob or Volcano Job (k8s/jobs.py).

The kustomization stays minimal (apiVersion, kind, the sorted resources). Every object already
carries the common labels itself (k8s/context.py) rather than through a kustomize `labels:`
transformer, because then a file reads the same whether or not kustomize builds it (`kubectl
apply -f`, review in a pull request), and no transformer can touch an immutable selector.
Router never writes Namespace objects: see k8s/context.py.
"""

from __future__ import annotations

from typing import Any, ClassVar

from router.emit.k8s import jobs, serving
from router.emit.k8s.context import context
from router.emit.k8s.yamlio import dump_documents
from router.models.placement import Placement

KUSTOMIZATION = "kustomization.yaml"


def folder(cluster: str) -> str:
    return f"kubernetes/{cluster}"


def manifests(p: Placement) -> list[dict[str, Any]]:
    """The Kubernetes objects of one placement, as plain data, in apply order."""
    ctx = context(p)
    return serving.documents(ctx) if p.workload.is_service else jobs.documents(ctx)


class KubernetesEmitter:
    backend: ClassVar[str] = "kubernetes"

    def paths(self, placement: Placement) -> list[str]:
        return [f"{folder(placement.cluster)}/{placement.workload.name}.yaml"]

    def emit(self, placement: Placement) -> dict[str, str]:
        (path,) = self.paths(placement)
        return {path: dump_documents(manifests(placement))}

    def finish(self, cluster: str, placements: list[Placement]) -> dict[str, str]:
        prefix = folder(cluster) + "/"
        files = sorted(
            path[len(prefix) :]
            for p in placements
            if p.backend == self.backend and p.cluster == cluster
            for path in self.paths(p)
        )
        kustomization = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": files,
        }
        return {prefix + KUSTOMIZATION: dump_documents([kustomization])}
