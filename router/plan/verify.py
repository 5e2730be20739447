"""An independent check of a plan against the inventory and the policy.

It recomputes everything from the placements and the inputs, sharing nothing with the
solver's model but the evaluator: every placement is on one of its workload's candidate
targets, no target is over capacity in GPUs, CPUs, memory or nodes, no quota is exceeded (each
part of a quota with `per` on its own), and no spread group has more members on one attribute
value than it allows.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable

from router.evaluate.evaluate import Decision, Evaluator
from router.evaluate.quota import (
    capacity,
    capacity_resources,
    capacity_usage,
    compile_quotas,
    usage,
)
from router.evaluate.spread import compile_spreads, order, show
from router.evaluate.views import workload_view
from router.language import ast
from router.models import Inventory, Workload
from router.plan.model import Placement


def verify_plan(
    policy: ast.Policy,
    inventory: Inventory,
    workloads: list[Workload],
    placements: list[Placement],
) -> list[str]:
    """Violations in words; an empty list means the plan is sound."""
    problems: list[str] = []
    ev = Evaluator(policy, inventory)
    names = [p.workload.name for p in placements]
    if len(names) != len(set(names)):
        problems.append("a workload is placed more than once")
    decisions = {w.name: ev.decide(w) for w in workloads}
    used: dict[tuple[str, str], int] = defaultdict(int)
    for p in placements:
        d = decisions.get(p.workload.name)
        if d is None:
            problems.append(f"{p.workload.name}: not a workload of the inputs")
            continue
        if d.status != "routed":
            problems.append(f"{p.workload.name}: placed but {d.status}")
            continue
        ids = {c.target.id: c for c in d.candidates}
        cand = ids.get(p.target.id)
        if cand is None:
            problems.append(f"{p.workload.name}: {p.target.id} is not a candidate")
            continue
        if cand.resources != p.resources or cand.rank != p.rank:
            problems.append(f"{p.workload.name}: resources or rank differ from the candidate")
        for resource in capacity_resources(p.target):
            used[p.target.id, resource] += capacity_usage(resource, p.resources, p.target)
        # Shared placements take no node to themselves; whole-node ones take theirs.
        used[p.target.id, "nodes"] += p.resources.whole_nodes
    for ref in inventory.targets():
        for resource in [*capacity_resources(ref), "nodes"]:
            cap = capacity(ref, resource)
            if used[ref.id, resource] > cap:
                problems.append(
                    f"{ref.id}: {resource} over capacity: {used[ref.id, resource]} > {cap}"
                )
    for q in compile_quotas(policy, inventory, workloads=workloads):
        total = 0
        for p in placements:
            if p.target.id not in q.targets:
                continue
            if q.members is not None and not q.members(workload_view(p.workload), {}):
                continue
            total += usage(q.resource, p.resources, p.target)
        if total > q.amount:
            problems.append(f"quota {q.label} ({q.source}): {q.resource} {total} > {q.amount}")
    problems += _spreads(policy, inventory, list(decisions.values()), placements)
    return problems


def _spreads(policy: ast.Policy, inventory: Inventory, decisions: list[Decision],
             placements: list[Placement]) -> list[str]:
    """Each spread group's placements per attribute value against its max (spread.py)."""
    problems: list[str] = []
    target_of = {p.workload.name: p.target.id for p in placements}
    for s in compile_spreads(policy, inventory):
        groups: dict[Hashable, list[Decision]] = {}
        for d in decisions:
            key = s.group(workload_view(d.workload)) if d.candidates else None
            if key is not None:
                groups.setdefault(key, []).append(d)
        for key in sorted(groups, key=order):
            members = groups[key]
            if len(members) < 2:
                continue
            places = {s.values[c.target.id] for d in members for c in d.candidates}
            most = s.limit(len(members), len(places))
            on = Counter(s.values[target_of[d.workload.name]] for d in members
                         if d.workload.name in target_of)
            for value in sorted(on, key=order):
                if on[value] > most:
                    problems.append(f"spread {s.name} ({s.source}): {s.group_text(key)} has "
                                    f"{on[value]} > {most} on {s.attribute} {show(value)}")
    return problems
