"""The values a policy reads: a workload's fields and a target's attributes, as plain dicts.

Built once per workload and once per target, so compiled expressions only index dicts.
"""

from __future__ import annotations

from typing import Any

from router.models import TargetRef, Workload
from router.models.inventory import Target


def workload_view(w: Workload) -> dict[str, Any]:
    """Workload fields by the names of names.WORKLOAD_FIELDS.

    `nodes` and `gpus_per_node` are what the user asked for; when not given they read as one
    node holding all GPUs (the target may still spread the job: see shape.py).
    """
    nodes = w.nodes or 1
    gpn = w.gpus_per_node if w.gpus_per_node is not None else -(-w.gpus // nodes)
    return {
        "name": w.name,
        "kind": w.kind,
        "team": w.team,
        "labels": dict(w.labels),
        "image": w.image,
        "gpus": w.gpus,
        "gpu_type": w.gpu_type,
        "nodes": nodes,
        "gpus_per_node": gpn,
        "cpus": w.cpus,
        "memory": w.memory,
        "duration": w.duration,
        "priority": w.priority,
        "preemptible": w.preemptible,
        "min_replicas": w.min_replicas,
        "max_replicas": w.max_replicas,
        "service": w.is_service,
    }


def target_view(ref: TargetRef) -> dict[str, Any]:
    """Target attributes by the names of names.TARGET_ATTRIBUTES."""
    t = ref.target
    return {
        "backend": ref.backend,
        "cluster": ref.cluster,
        "name": t.name,
        "id": ref.id,
        "gpu_type": t.gpu_type,
        "gpus_per_node": t.gpus_per_node,
        "cpus_per_node": t.cpus_per_node,
        "memory_per_node": t.memory_per_node,
        "nodes": t.nodes,
        "max_nodes": getattr(t, "max_nodes", None) or t.nodes,
        "max_time": t.max_time,
        "features": list(t.features),
        "labels": dict(t.labels),
        "cost": t.cost_per_gpu_hour,
        "mig": sorted(t.slices_per_node),
        **_partition_limits(t),
    }


_LIMITS = ("max_nodes_per_job", "default_time", "oversubscribe", "preempt_mode")
_ACCESS = ("allow_accounts", "allow_groups", "allow_qos")
_DENY = ("deny_accounts", "deny_qos")


def _partition_limits(t: Target) -> dict[str, Any]:
    """A partition's Slurm limits; None where unset and on node pools, so a rule reading one
    there is false, as for an absent label. `max_time` of an `unlimited` partition is already
    a number larger than any duration (inventory.UNLIMITED_TIME)."""
    out: dict[str, Any] = {n: getattr(t, n, None) for n in _LIMITS}
    for n in _ACCESS:
        allowed = getattr(t, n, None)
        out[n] = None if allowed is None else list(allowed)
    for n in _DENY:  # empty on node pools and where nothing is denied
        out[n] = list(getattr(t, n, None) or [])
    return out
