"""Emitters, registered in one place: backend name -> emitter."""

from __future__ import annotations

from collections import defaultdict

from router.config import KubernetesSettings
from router.emit.base import Emitter
from router.emit.kubernetes import KubernetesEmitter
from router.emit.slurm import SlurmEmitter
from router.gcpause import paused_gc
from router.models.placement import Placement

EMITTERS: dict[str, Emitter] = {e.backend: e for e in (SlurmEmitter(), KubernetesEmitter())}


def assign_artifacts(placements: list[Placement]) -> None:
    """Fill in each placement's artifact paths (plan.json lists them before they are written)."""
    for p in placements:
        p.artifacts = sorted(EMITTERS[p.backend].paths(p))


@paused_gc()
def emit_all(
    placements: list[Placement], kubernetes: KubernetesSettings | None = None
) -> dict[str, str]:
    """Every file of a plan, {relative path under out/: content}, in a stable order;
    `kubernetes` is router.yaml's `kubernetes:` settings (default: none set)."""
    # A Slurm emitter of its own: it keeps each workload class's script for this plan only.
    emitters: dict[str, Emitter] = {**EMITTERS, "slurm": SlurmEmitter()}
    if kubernetes is not None:
        emitters["kubernetes"] = KubernetesEmitter(kubernetes)
    files: dict[str, str] = {}
    by_cluster: dict[tuple[str, str], list[Placement]] = defaultdict(list)
    for p in sorted(placements, key=lambda p: (p.backend, p.cluster, p.workload.name)):
        files.update(emitters[p.backend].emit(p))
        by_cluster[(p.backend, p.cluster)].append(p)
    for (backend, cluster), group in sorted(by_cluster.items()):
        files.update(emitters[backend].finish(cluster, group))
    return dict(sorted(files.items()))
