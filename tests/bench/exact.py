"""An exhaustive per-node optimum for tiny platforms, sharing nothing with the solver's
capacity model: every workload's choice (a candidate or nothing) is enumerated, quotas and
spreads are read from the problem's own quota and spread rows (policy, not capacity), and
capacity is decided by backtracking every pod and whole node onto the real nodes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from router.models import Inventory, TargetRef, Workload
from router.models.placement import Placement, Resources
from router.plan.verify import verify_plan
from router.solve.problem import Problem

if TYPE_CHECKING:  # the solver's types only: the search here shares no code with it
    from router.evaluate.evaluate import Decision
    from router.language import ast
    from router.solve.cpsat import SolveResult

Node = list[int]  # free: [whole gpus, cpus, memory, slices of each profile...]


def _sets(ref: TargetRef) -> tuple[str, ...]:
    return tuple(getattr(ref, "node_sets", ()) or (ref.id,))


def _hardware(ref: TargetRef, profiles: list[str]) -> list[int]:
    t = ref.target
    slices = getattr(t, "slices_per_node", None)
    if slices is None:
        slices = dict(getattr(t, "mig", {}) or {})
    whole = getattr(t, "whole_gpus_per_node", t.gpus_per_node)
    return [whole, t.cpus_per_node, t.memory_per_node, *(slices.get(p, 0) for p in profiles)]


def _nodes(
    refs: list[TargetRef],
    inventory: Any,
    profiles: list[str],
) -> dict[str, list[Node]]:
    """Per node set: its nodes' free capacity (all empty)."""
    out: dict[str, list[Node]] = {}
    sizes: dict[str, int] = {}
    if inventory is not None and hasattr(inventory, "node_sets"):
        for ns in inventory.node_sets():
            spec = ns.spec
            sizes[ns.id] = getattr(spec, "max_nodes", None) or spec.nodes
    for ref in refs:
        for s in _sets(ref):
            n = sizes.get(s, getattr(ref.target, "max_nodes", None) or ref.target.nodes)
            out.setdefault(s, [_hardware(ref, profiles) for _ in range(n)])
    return out


def packs(
    refs: list[TargetRef], placed: list[tuple[TargetRef, Resources]], inventory: Any = None
) -> bool:
    """Whether every placement fits node by node (backtracking, exhaustive)."""
    profiles = sorted(
        {r.mig for _, r in placed if r.mig}
        | {
            p
            for ref in refs
            for p in (getattr(ref.target, "mig", None) or {})
            if isinstance(p, str)
        }
    )
    nodes = _nodes(refs, inventory, profiles)
    taken: dict[tuple[str, int], bool] = {}
    pods: list[tuple[tuple[str, ...], list[int] | None]] = []  # None: a whole node
    for ref, r in placed:
        if r.whole_nodes:
            pods.extend((_sets(ref), None) for _ in range(r.whole_nodes))
            continue
        d = [
            0 if r.mig else r.gpus_per_node,
            r.cpus_per_node,
            r.memory_per_node,
            *(r.gpus_per_node if r.mig == p else 0 for p in profiles),
        ]
        pods.extend((_sets(ref), d) for _ in range(r.units))
    pods.sort(key=lambda p: (p[1] is not None, [-x for x in (p[1] or [])]))
    full = {s: list(ns[0]) for s, ns in nodes.items() if ns}

    def go(k: int) -> bool:
        if k == len(pods):
            return True
        sets, d = pods[k]
        for s in sets:
            tried_fresh = False
            for j, free in enumerate(nodes.get(s, [])):
                fresh = not taken.get((s, j)) and free == full[s]
                if fresh and tried_fresh:
                    continue  # identical to a fresh node already tried
                if taken.get((s, j)):
                    continue
                if d is None:
                    if not fresh:
                        continue
                    taken[s, j] = True
                    tried_fresh = True
                    if go(k + 1):
                        return True
                    del taken[s, j]
                    continue
                if all(f >= x for f, x in zip(free, d, strict=True)):
                    tried_fresh = tried_fresh or fresh
                    for a, x in enumerate(d):
                        free[a] -= x
                    ok = go(k + 1)
                    for a, x in enumerate(d):
                        free[a] += x
                    if ok:
                        return True
        return False

    return go(0)


def best(
    problem: Problem, inventory: Any = None, must: frozenset[int] = frozenset(), sums: bool = False
) -> int:
    """The most placed work (level 1) of any plan that packs node by node and keeps every
    quota and spread row; workloads in `must` are placed. -1 when none exists. With `sums`,
    capacity is only the per-axis totals (what summing per target would say), to compare."""
    weight = {v: c for c, v in problem.levels[0].terms}
    kinds = ("quota", "spread", "capacity") if sums else ("quota", "spread")
    policy_rows = [r for r in problem.rows if r.kind in kinds]
    refs = sorted(
        {c.target.id: c.target for _, c in problem.variables}.values(), key=lambda r: r.id
    )
    n = len(problem.choices)
    most = [max((weight[v] for v in vs), default=0) for vs in problem.choices]
    rest = [sum(most[i:]) for i in range(n + 1)]
    chosen: list[int] = []
    best_value = -1

    def rows_ok() -> bool:
        on = set(chosen)
        return all(sum(c for c, v in r.terms if v in on) <= r.rhs for r in policy_rows)

    def go(i: int, value: int) -> None:
        nonlocal best_value
        if value + rest[i] <= best_value:
            return
        if i == n:
            placed = [
                (problem.variables[v][1].target, problem.variables[v][1].resources) for v in chosen
            ]
            if sums or packs(refs, placed, inventory):
                best_value = value
            return
        for v in sorted(problem.choices[i], key=lambda v: -weight[v]):
            chosen.append(v)
            if rows_ok():
                go(i + 1, value + weight[v])
            chosen.pop()
        if i not in must:
            go(i + 1, value)

    go(0, 0)
    return best_value


def assert_plan_fits(
    policy: ast.Policy,
    inventory: Inventory,
    workloads: list[Workload],
    decisions: list[Decision],
    result: SolveResult,
    where: object = None,
) -> None:
    """The solver's placements (with its node assignment) pass verify_plan and pack on the
    nodes by exhaustive search (`packs`); `where` is shown when they do not."""
    placements = [
        Placement(
            d.workload,
            c.target,
            "r",
            "x:1",
            c.rank,
            c.options,
            c.resources,
            nodes=result.nodes[d.workload.name],
        )
        for d in decisions
        if (c := result.assignment.get(d.workload.name))
    ]
    assert verify_plan(policy, inventory, workloads, placements) == [], where
    assert packs(inventory.targets(), [(p.target, p.resources) for p in placements], inventory)
