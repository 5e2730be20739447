"""Quotas as hard limits: which workloads and targets each limit covers, and its amount.

`quota q: for <workload condition> on <target condition> limit gpus <= 64` limits the sum of
GPUs of placed workloads that satisfy `for`, counted on targets that satisfy `on`. A percentage
is a share of the capacity of the targets the quota is `on` (all targets without `on`).
Usage counts what a placement takes from its target: a job that takes whole nodes uses all of
their GPUs, CPUs and memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from router.evaluate.expr import Compiled, compile_expr, constant_value
from router.evaluate.views import target_view
from router.language import ast
from router.models import Inventory, TargetRef
from router.plan.model import Resources
from router.quantity import format_memory


@dataclass
class QuotaLimit:
    quota: ast.Quota
    limit: ast.Limit
    resource: str
    amount: int
    targets: frozenset[str]  # target ids the limit counts on
    members: Compiled | None  # over the workload view
    described: str  # "gpus <= 80% (76 of 96)"

    @property
    def name(self) -> str:
        return self.quota.name

    @property
    def source(self) -> str:
        return self.limit.span.location()


def capacity(ref: TargetRef, resource: str) -> int:
    t = ref.target
    nodes = getattr(t, "max_nodes", None) or t.nodes
    per_node = {
        "gpus": t.gpus_per_node,
        "cpus": t.cpus_per_node,
        "memory": t.memory_per_node,
        "nodes": 1,
    }
    if resource.startswith("mig-"):
        return nodes * int((getattr(t, "mig", {}) or {}).get(resource[4:], 0))
    return nodes * per_node.get(resource, 0)


def mig_prefix(profile: str) -> str:
    """The capacity row of a MIG profile: "mig-1g.10gb", as the resource nvidia.com/mig-…"""
    return f"mig-{profile}"


def per_node_gpus(ref: TargetRef, res: Resources) -> int:
    """What a node of `ref` has of the GPUs `res` asks for: slices of its MIG profile, or
    whole GPUs."""
    if res.mig:
        return int((getattr(ref.target, "mig", {}) or {}).get(res.mig, 0))
    return ref.target.gpus_per_node


def capacity_resources(ref: TargetRef) -> list[str]:
    """The capacity rows of a target: GPUs, CPUs, memory, and one per MIG profile it offers."""
    return ["gpus", "cpus", "memory",
            *(mig_prefix(p) for p in sorted(getattr(ref.target, "mig", {}) or {}))]


def capacity_usage(resource: str, res: Resources, ref: TargetRef) -> int:
    """What a placement takes of a target's capacity row `resource`.

    Like `usage`, except for MIG: the kubelet accounts `nvidia.com/gpu` and each
    `nvidia.com/mig-<profile>` as separate resources, so a MIG placement counts its slices
    against its profile's row and no whole GPUs, and a placement that takes whole nodes takes
    every slice of them too. (Quotas on `gpus` still count a slice as a GPU: `usage`.)
    """
    if resource.startswith("mig-"):
        t = ref.target
        if res.whole_nodes:
            return res.whole_nodes * int((getattr(t, "mig", {}) or {}).get(resource[4:], 0))
        return res.gpus if res.mig and mig_prefix(res.mig) == resource else 0
    if resource == "gpus" and res.mig and not res.whole_nodes:
        return 0
    return usage(resource, res, ref)


def usage(resource: str, res: Resources, ref: TargetRef) -> int:
    """What a placement counts against a quota or a target's capacity for `resource`."""
    if resource == "workloads":
        return 1
    t = ref.target
    whole = res.whole_nodes
    if resource == "nodes":
        return whole if whole else res.nodes
    if resource == "gpus":
        return whole * t.gpus_per_node if whole else res.gpus
    if resource == "cpus":
        return whole * t.cpus_per_node if whole else res.cpus
    if resource == "memory":
        return whole * t.memory_per_node if whole else res.memory
    raise ValueError(resource)


def _fmt(resource: str, amount: int) -> str:
    return format_memory(amount) if resource == "memory" else str(amount)


def compile_quotas(policy: ast.Policy, inventory: Inventory) -> list[QuotaLimit]:
    c: dict[str, Any] = policy.constants
    refs = inventory.targets()
    out: list[QuotaLimit] = []
    for q in policy.quotas:
        on = compile_expr(q.on, c) if q.on is not None else None
        covered = frozenset(
            r.id for r in refs if on is None or on({}, target_view(r))
        )
        members = compile_expr(q.for_, c) if q.for_ is not None else None
        for lim in q.limits:
            value = constant_value(lim.amount, c)
            percent = isinstance(lim.amount, ast.Literal) and lim.amount.unit == "percent"
            if percent:
                total = sum(capacity(r, lim.resource) for r in refs if r.id in covered)
                amount = int(float(value) * total)
                text = f"{lim.resource} {lim.op} {round(float(value) * 100)}% "
                text += f"({_fmt(lim.resource, amount)} of {_fmt(lim.resource, total)})"
            else:
                amount = int(value)
                text = f"{lim.resource} {lim.op} {_fmt(lim.resource, amount)}"
            if lim.op == "<":
                amount -= 1
            out.append(QuotaLimit(q, lim, lim.resource, amount, covered, members, text))
    return out
