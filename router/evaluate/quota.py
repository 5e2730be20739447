"""Quotas as hard limits: which workloads and targets each limit covers, and its amount.

`quota q: for <workload condition> on <target condition> limit gpus <= 64` limits the sum of
GPUs of placed workloads that satisfy `for`, counted on targets that satisfy `on`. A percentage
is a share of the capacity of the targets the quota is `on` (all targets without `on`).
Usage counts what a placement takes from its target: a job that takes whole nodes uses all of
their GPUs, CPUs and memory.

`per team, cluster` gives every distinct value of the keys a limit of its own (a "part"):
- a target key (`cluster`, `backend`, `name`, `gpu_type`, `target.labels.zone`, `target` for
  the target itself, ...) splits the targets the quota is `on` by their value; each part
  counts on its own targets only, and a percentage is of that part's capacity;
- a workload key (`team`, `kind`, `priority`, `workload.labels.app`, ...) splits the members
  (the workloads that satisfy `for`) by their value; there is one part per value found among
  the workloads given to `compile_quotas`, and a percentage is of the capacity of all the
  targets the quota is `on`, the same for every part. Without workloads, a quota with a
  workload key has no limits at all (no part is known);
- with both, a part per combination of values. A missing value (a label a workload or target
  does not have) is a value of its own, shown "none": workloads without the label share one
  limit rather than escape it.
The checker decides which keys are which (checker.py `per_key`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from router.evaluate.expr import Compiled, View, compile_expr, constant_value
from router.evaluate.spread import order, show
from router.evaluate.views import target_view, workload_view
from router.language import ast
from router.models import Inventory, TargetRef, Workload
from router.models.placement import Resources
from router.quantity import format_memory


@dataclass
class QuotaLimit:
    quota: ast.Quota
    limit: ast.Limit
    resource: str
    amount: int
    targets: frozenset[str]  # target ids the limit counts on
    members: Compiled | None  # over the workload view (`for` and the part's workload keys)
    described: str  # "gpus <= 80% (76 of 96)"
    part: str = ""  # the part's values, "team=research, cluster=hpc-east"; "" without `per`

    @property
    def name(self) -> str:
        return self.quota.name

    @property
    def share(self) -> str:
        """For a percentage, what it is of ("75% of 12"), for reasons; "" otherwise."""
        m = re.search(r" (\d+)% \(\S+ of (.+)\)$", self.described)
        return f"{m[1]}% of {m[2]}" if m else ""

    @property
    def label(self) -> str:
        """The quota and its part, as reasons name it: "team_gpus[team=research]"."""
        return f"{self.name}[{self.part}]" if self.part else self.name

    @property
    def source(self) -> str:
        return self.limit.span.location()


def gpu_devices_per_node(ref: TargetRef) -> int:
    """What a quota on `gpus` counts of a node: its GPU devices, a whole GPU or a MIG slice
    each (as Slurm's gres/gpu TRES counts MIG instances), so that a slice placed, a whole
    node taken and a percentage of capacity are all in one unit."""
    t = ref.target
    return t.whole_gpus_per_node + sum(t.slices_per_node.values())


def capacity(ref: TargetRef, resource: str) -> int:
    t = ref.target
    nodes = getattr(t, "max_nodes", None) or t.nodes
    per_node = {
        "gpus": gpu_devices_per_node(ref),
        "cpus": t.cpus_per_node,
        "memory": t.memory_per_node,
        "nodes": 1,
    }
    if resource.startswith("mig-"):
        return nodes * t.slices_per_node.get(resource[4:], 0)
    return nodes * per_node.get(resource, 0)


def mig_prefix(profile: str) -> str:
    """The capacity row of a MIG profile: "mig-1g.10gb", as the resource nvidia.com/mig-…"""
    return f"mig-{profile}"


def per_node_gpus(ref: TargetRef, res: Resources) -> int:
    """What a node of `ref` has of the GPUs `res` asks for: slices of its MIG profile, or
    whole GPUs."""
    if res.mig:
        return ref.target.slices_per_node.get(res.mig, 0)
    return ref.target.whole_gpus_per_node


def capacity_resources(ref: TargetRef) -> list[str]:
    """The capacity rows of a target: GPUs, CPUs, memory, and one per MIG profile it offers."""
    return ["gpus", "cpus", "memory", *(mig_prefix(p) for p in ref.target.slices_per_node)]


def capacity_usage(resource: str, res: Resources, ref: TargetRef) -> int:
    """What a placement takes of a target's capacity row `resource`.

    Like `usage`, except for MIG: the kubelet accounts `nvidia.com/gpu` and each
    `nvidia.com/mig-<profile>` as separate resources, so a MIG placement counts its slices
    against its profile's row and no whole GPUs, and a placement that takes whole nodes takes
    every slice of them too. (Quotas on `gpus` count GPU devices, a slice as one: `usage`.)
    """
    if resource.startswith("mig-"):
        t = ref.target
        if res.whole_nodes:
            return res.whole_nodes * t.slices_per_node.get(resource[4:], 0)
        return res.gpus if res.mig and mig_prefix(res.mig) == resource else 0
    if resource == "gpus" and res.mig and not res.whole_nodes:
        return 0
    if resource == "gpus" and res.whole_nodes:
        return res.whole_nodes * ref.target.whole_gpus_per_node
    return usage(resource, res, ref)


def usage(resource: str, res: Resources, ref: TargetRef) -> int:
    """What a placement counts against a quota or a target's capacity for `resource`: on
    `gpus`, GPU devices (gpu_devices_per_node), the whole GPUs or slices it asks for, or
    every device of the whole nodes it takes."""
    if resource == "workloads":
        return 1
    t = ref.target
    whole = res.whole_nodes
    if resource == "nodes":
        return whole if whole else res.nodes
    if resource == "gpus":
        return whole * gpu_devices_per_node(ref) if whole else res.gpus
    if resource == "cpus":
        return whole * t.cpus_per_node if whole else res.cpus
    if resource == "memory":
        return whole * t.memory_per_node if whole else res.memory
    raise ValueError(resource)


def _fmt(resource: str, amount: int) -> str:
    return format_memory(amount) if resource == "memory" else str(amount)


def compile_quotas(
    policy: ast.Policy,
    inventory: Inventory,
    workloads: list[Workload] | None = None,
    *,
    workload_keys: bool = True,
) -> list[QuotaLimit]:
    """One QuotaLimit per quota, part and limit, in policy order, parts in value order.

    `workloads` are those being planned: the values of a `per` workload key are taken from
    them (without them such quotas give no limits). With `workload_keys=False` the workload
    keys are ignored: one limit per target part over all members, which is what every
    workload part has in common (amount and targets), for an analysis without workloads.
    """
    c: dict[str, Any] = policy.constants
    refs = inventory.targets()
    views: list[View] | None = None  # built once, and only when a quota needs them
    t_views: dict[str, View] = {}  # the same: each target's view, for every quota

    def target_of(r: TargetRef) -> View:
        view = t_views.get(r.id)
        if view is None:
            view = t_views[r.id] = target_view(r)
        return view

    out: list[QuotaLimit] = []
    for q in policy.quotas:
        on = compile_expr(q.on, c) if q.on is not None else None
        covered = [r for r in refs if on is None or on({}, target_of(r))]
        members = compile_expr(q.for_, c) if q.for_ is not None else None
        keys = [k for k in q.per if k.scope == "target" or workload_keys]
        t_keys = [(k, compile_expr(k, c)) for k in keys if k.scope == "target"]
        w_keys = [(k, compile_expr(k, c)) for k in keys if k.scope != "target"]
        texts = [_key_text(k) for k in keys]
        t_parts: dict[tuple[Any, ...], list[TargetRef]] = {}
        for r in covered:
            view = target_of(r)
            t_parts.setdefault(tuple(f({}, view) for _, f in t_keys), []).append(r)
        if not t_keys:
            t_parts = {(): covered}  # one part, even when `on` covers no target
        w_values: list[tuple[Any, ...]] = [()]
        if w_keys:
            if workloads is None:
                continue
            if views is None:
                views = [workload_view(w) for w in workloads]
            w_values = list(
                {
                    tuple(f(v, {}) for _, f in w_keys): None
                    for v in views
                    if members is None or members(v, {})
                }
            )
        parts: list[tuple[tuple[Any, ...], tuple[Any, ...], list[TargetRef]]] = []
        for t_value, part_refs in t_parts.items():
            for w_value in w_values:
                t_iter, w_iter = iter(t_value), iter(w_value)
                written = tuple(next(t_iter if k.scope == "target" else w_iter) for k in keys)
                parts.append((written, w_value, part_refs))
        parts.sort(key=lambda p: _value_order(p[0]))  # by the values, keys in written order
        for written, w_value, part_refs in parts:
            ids = frozenset(r.id for r in part_refs)
            part = ", ".join(f"{t}={show(v)}" for t, v in zip(texts, written, strict=True))
            member = _member_of(members, [f for _, f in w_keys], w_value)
            for lim in q.limits:
                amount, described = _amount(lim, part_refs, c)
                out.append(QuotaLimit(q, lim, lim.resource, amount, ids, member, described, part))
    return out


def _amount(lim: ast.Limit, refs: list[TargetRef], c: dict[str, Any]) -> tuple[int, str]:
    """The limit's amount over `refs` (a percentage is of their capacity), and in words."""
    value = constant_value(lim.amount, c)
    percent = isinstance(lim.amount, ast.Literal) and lim.amount.unit == "percent"
    if percent:
        total = sum(capacity(r, lim.resource) for r in refs)
        # Exact: as a float, 29% of 100 GPUs is 28.999999999999996.
        amount = int(Fraction(repr(float(value))) * total)
        text = f"{lim.resource} {lim.op} {round(float(value) * 100)}% "
        text += f"({_fmt(lim.resource, amount)} of {_fmt(lim.resource, total)})"
    else:
        amount = int(value)
        text = f"{lim.resource} {lim.op} {_fmt(lim.resource, amount)}"
    return (amount - 1 if lim.op == "<" else amount), text


def _value_order(values: tuple[Any, ...]) -> tuple[tuple[bool, str, str], ...]:
    return tuple(order(v) for v in values)


def _key_text(key: ast.Name) -> str:
    from router.language.fmt import format_expr  # quotes a label key with dots

    return format_expr(key)


def _member_of(
    members: Compiled | None, keys: list[Compiled], values: tuple[Any, ...]
) -> Compiled | None:
    """`for`, and the workload keys equal to this part's values (None equals None here: the
    workloads without a value form one part)."""
    if not keys:
        return members

    def member(w: View, t: View) -> bool:
        if members is not None and not members(w, t):
            return False
        return all(f(w, t) == v for f, v in zip(keys, values, strict=True))

    return member
