"""A workload's routing signature: the values that decide its routing, and nothing else.

Two workloads with the same signature get the same decision (denied, unrouted, or the same
candidates with the same resources), so the evaluator decides once per signature and reuses
the answer. The signature holds every field the shape check reads (shape.py) and every
workload field or label the policy names anywhere (deny, rule, where, prefer, quota, check,
spread), so quota memberships and spread groups are a function of it too. Names the evaluator
does not know turn the cache off rather than risk a wrong answer.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from operator import attrgetter

from router.language import ast
from router.models import Workload

Signature = Callable[[Workload], Hashable]

# What shape.py reads (image and command only as present / absent; the rest: _shape_extra).
_SHAPE = ("kind", "gpus", "gpu_type", "nodes", "gpus_per_node", "cpus", "memory", "duration")
# Fields of the workload view (views.py) that are plain attributes or follow from _SHAPE and
# replicas; `image` and `labels` are handled apart.
_PLAIN = {
    "name",
    "kind",
    "team",
    "gpus",
    "gpu_type",
    "nodes",
    "gpus_per_node",
    "cpus",
    "memory",
    "duration",
    "priority",
    "preemptible",
}
_DERIVED = {"min_replicas", "max_replicas", "service"}


def signature_of(policy: ast.Policy, access_lists: bool = True) -> Signature | None:
    """The signature function for `policy`, or None when it reads a field not known here.
    `access_lists`: some partition has AllowAccounts/AllowGroups, so the shape check reads
    the workload's account and team (else they stay out, and such workloads share a class)."""
    attrs = list(_SHAPE)
    label_keys: list[str] = []
    all_labels = image = False
    for n in ast.find(
        [policy.denies, policy.rules, policy.quotas, policy.checks, policy.spreads], ast.Name
    ):
        if n.scope != "workload":
            continue
        if n.field == "labels":
            if n.key is None:
                all_labels = True
            elif n.key not in label_keys:
                label_keys.append(n.key)
        elif n.field == "image":
            image = True
        elif n.field in _PLAIN:
            if n.field not in attrs:
                attrs.append(n.field)
        elif n.field not in _DERIVED:
            return None
    base = attrgetter(*attrs)
    keys = tuple(label_keys)

    def signature(w: Workload) -> Hashable:
        r = w.replicas
        labels = w.labels
        return (
            base(w),
            _shape_extra(w, access_lists),
            w.image if image else w.image is not None,
            bool(w.command),
            (r.min, r.max) if r is not None else None,
            tuple(sorted(labels.items())) if all_labels else tuple(labels.get(k) for k in keys),
        )

    return signature


def _shape_extra(w: Workload, access_lists: bool) -> Hashable:
    """The rest of what shape.py reads: the partition access lists (team, account), the MPI
    shape, arrays and dependencies (Slurm only), and whether the image is a file."""
    return (
        (w.team, w.account) if access_lists else None,
        w.launcher,
        w.ranks_per_node,
        w.threads_per_rank,
        w.array.in_flight if w.array else None,
        bool(w.after),
        bool(w.image and w.image.startswith("/")),
    )
