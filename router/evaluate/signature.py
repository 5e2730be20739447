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

# What shape.py reads (image and command only as present / absent; the rest: `extra`).
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
    # The rest of what shape.py reads: the partition access lists (team, account), the MPI
    # shape, arrays and dependencies (Slurm only), and whether the image is a file.
    extra = attrgetter(
        *(("team", "account") if access_lists else ()),
        "launcher",
        "ranks_per_node",
        "threads_per_rank",
    )
    keys = tuple(label_keys)

    def signature(w: Workload) -> Hashable:
        # Called once per workload (100,000 at bench XL): attribute getters, few calls.
        r = w.replicas
        labels = w.labels
        img = w.image
        a = w.array
        return (
            base(w),
            extra(w),
            a.in_flight if a else None,
            bool(w.after),
            bool(img and img.startswith("/")),
            img if image else img is not None,
            bool(w.command),
            (r.min, r.max) if r is not None else None,
            tuple(sorted(labels.items())) if all_labels else tuple(map(labels.get, keys)),
        )

    return signature
