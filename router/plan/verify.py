"""An independent check of a plan against the inventory and the policy.

It recomputes everything from the placements and the inputs, sharing nothing with the
solver's model but the evaluator: every placement is on one of its workload's candidate
targets, its recorded nodes hold it (verify_nodes: every pod or whole node on a node of the
target's node sets, whole nodes idle and alone, no node over its free GPUs, MIG slices, CPUs
or memory after what already runs), no quota is exceeded (each part of a quota with `per` on
its own), and no spread group has more members on one attribute value than it allows.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable

from router.evaluate.evaluate import Decision, Evaluator
from router.evaluate.quota import compile_quotas, usage
from router.evaluate.spread import compile_spreads, order, show
from router.evaluate.views import workload_view
from router.language import ast
from router.models import Inventory, Running, Workload, node_classes
from router.models.placement import Placement


def verify_plan(
    policy: ast.Policy,
    inventory: Inventory,
    workloads: list[Workload],
    placements: list[Placement],
    running: Running | None = None,
) -> list[str]:
    """Violations in words; an empty list means the plan is sound."""
    problems: list[str] = []
    ev = Evaluator(policy, inventory)
    names = [p.workload.name for p in placements]
    if len(names) != len(set(names)):
        problems.append("a workload is placed more than once")
    decisions = {w.name: ev.decide(w) for w in workloads}
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
    problems += verify_nodes(inventory, running, placements)
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


def verify_nodes(
    inventory: Inventory, running: Running | None, placements: list[Placement]
) -> list[str]:
    """Each placement's recorded nodes against the nodes' free capacity; [] if all fit.
    Problems are named in workload order; a plan that fits (all but always) is checked in
    the order given, without sorting 100k placements and nodes first."""
    problems = _verify_nodes(inventory, running, placements)
    if problems:  # the same check in name order: which one is named follows the order
        problems = _verify_nodes(
            inventory, running, sorted(placements, key=lambda p: p.workload.name)
        )
    return problems


def _verify_nodes(
    inventory: Inventory, running: Running | None, placements: list[Placement]
) -> list[str]:
    problems: list[str] = []
    free: dict[tuple[str, int], list[int]] = {}  # [gpus, cpus, memory, slices...]
    idle: dict[tuple[str, int], bool] = {}
    profiles: dict[str, list[str]] = {}
    for sid, classes in node_classes(inventory, running).items():
        profiles[sid] = [p for p, _ in inventory.node_set(sid).spec.slices_per_node.items()]
        for c in classes:
            sl = dict(c.free.slices)
            for i in c.indices:
                free[sid, i] = [
                    c.free.gpus,
                    c.free.cpus,
                    c.free.memory,
                    *(sl.get(p, 0) for p in profiles[sid]),
                ]
                idle[sid, i] = c.idle
    overfull: list[tuple[tuple[str, int], str]] = []
    whole_of: dict[tuple[str, int], str] = {}
    pods_on: dict[tuple[str, int], list[str]] = defaultdict(list)
    for p in placements:
        name, r = p.workload.name, p.resources
        want = r.whole_nodes or r.units
        if len(p.nodes) != want:
            problems.append(f"{name}: {len(p.nodes)} nodes recorded, needs {want}")
            continue
        for sid, i in p.nodes:
            node = (sid, i)
            if sid not in p.target.node_sets or node not in free:
                problems.append(f"{name}: node {i} of {sid} is not a node of {p.target.id}")
                continue
            if r.whole_nodes:
                if not idle[node] or node in whole_of or pods_on[node]:
                    problems.append(f"{name}: node {i} of {sid} is not free for a whole node")
                whole_of[node] = name
                continue
            if node in whole_of:
                problems.append(f"{name}: node {i} of {sid} is taken whole by {whole_of[node]}")
            pods_on[node].append(name)
            f = free[node]
            f[0] -= 0 if r.mig else r.gpus_per_node
            f[1] -= r.cpus_per_node
            f[2] -= r.memory_per_node
            if r.mig:
                if r.mig not in profiles[sid]:
                    problems.append(f"{name}: node {i} of {sid} has no {r.mig} slices")
                else:
                    f[3 + profiles[sid].index(r.mig)] -= r.gpus_per_node
    for (sid, i), f in free.items():
        if min(f) >= 0:
            continue
        over = [
            what
            for what, left in zip(
                ["GPUs", "CPUs", "memory", *(f"{p} slices" for p in profiles[sid])], f, strict=True
            )
            if left < 0
        ]
        if over:
            who = ", ".join(sorted(set(pods_on[sid, i])))
            overfull.append(((sid, i), f"node {i} of {sid}: over its free {over[0]} ({who})"))
    return problems + [text for _, text in sorted(overfull)]


def _spreads(
    policy: ast.Policy, inventory: Inventory, decisions: list[Decision], placements: list[Placement]
) -> list[str]:
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
            on = Counter(
                s.values[target_of[d.workload.name]]
                for d in members
                if d.workload.name in target_of
            )
            for value in sorted(on, key=order):
                if on[value] > most:
                    problems.append(
                        f"spread {s.name} ({s.source}): {s.group_text(key)} has "
                        f"{on[value]} > {most} on {s.attribute} {show(value)}"
                    )
    return problems
