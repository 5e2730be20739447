"""The independent packing checker: does every target's planned work fit its real nodes?

It reads only the inventory, what already runs (router.models.capacity.node_classes: each
node's free GPUs, MIG slices, CPUs and memory) and the plan's placements, and decides with its
own exact model (router/plan/packing.py), sharing nothing with router/solve. A capacity
component is a set of node sets joined by the targets that draw on them: partitions that share
nodes are checked together, as one capacity.

Each placement becomes work on its target's nodes:
  * a service: `replicas` separate pods (the min; `at_max=True` for the max), each with the
    per-replica GPUs (or MIG slices of its profile), CPUs and memory; pods may share a node;
  * a job of k nodes: k tasks on k distinct nodes; an exclusive or multi-node job (whole_nodes)
    takes each of its nodes alone, and only a node where nothing runs. A job array is one
    such unit per task in flight (`array_parallel`).

The search is router/plan/packing.py's `check` with its constructive searches on (most
components pack, and those searches find most packings that first fit misses); with
`workers` > 1, the components that the bounds, first fit and the constructive searches leave
open are checked in forked processes.

`unpackable(...)` lists the targets of every component that cannot be packed (or could not be
decided within the limit: the checker never says "fits" without an assignment in hand).
`scale_out(...)` says per target how many more nodes its services would need at max replicas.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from router.models import Inventory, Running
from router.models.capacity import node_classes
from router.models.placement import Placement
from router.plan.packing import (
    DEFAULT_LIMIT,
    Node,
    Problem,
    Verdict,
    Work,
    check,
    exact_check,
    quick_check,
)

SCALE_OUT_LIMIT = 1.0  # deterministic seconds per exact check while searching scale-out
SCALE_OUT_CAP = 1 << 14  # more nodes than any platform has: "more than 16384"


@dataclass(frozen=True)
class NodeId:
    node_set: str
    index: int

    def __str__(self) -> str:
        return f"{self.node_set}[{self.index}]"


@dataclass
class Component:
    """One capacity: its node sets, the targets drawing on them, and the packing problem."""

    targets: tuple[str, ...]
    node_sets: tuple[str, ...]
    problem: Problem
    nodes: list[NodeId]


def work_of(p: Placement, at_max: bool = False) -> Work:
    """What one placement asks of its target's nodes (see the module docstring)."""
    r = p.resources
    slices = ((r.mig, r.gpus_per_node),) if r.mig and r.gpus_per_node else ()
    gpus = 0 if r.mig else r.gpus_per_node
    if r.replicas_max:
        units = r.replicas_max if at_max else r.replicas_min
        return Work(
            p.workload.name, p.target.id, units, 1, gpus, r.cpus_per_node, r.memory_per_node, slices
        )
    return Work(
        p.workload.name,
        p.target.id,
        max(1, r.array_parallel),  # a job array: its tasks in flight, each a unit
        r.nodes,
        gpus,
        r.cpus_per_node,
        r.memory_per_node,
        slices,
        whole=r.whole_nodes > 0 or r.exclusive,
    )


def components(
    inventory: Inventory, running: Running | None, placements: list[Placement], at_max: bool = False
) -> list[Component]:
    """The capacity components of the inventory, each with its work, sorted by node set."""
    classes = node_classes(inventory, running)
    parent: dict[str, str] = {s.id: s.id for s in inventory.node_sets()}

    def root(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for ref in inventory.targets():
        for other in ref.node_sets[1:]:
            parent[root(other)] = root(ref.node_sets[0])
    groups: dict[str, list[str]] = {}
    for sid in sorted(parent):
        groups.setdefault(root(sid), []).append(sid)
    by_target: dict[str, list[Placement]] = {}
    for p in placements:
        by_target.setdefault(p.target.id, []).append(p)
    out = []
    for sets in sorted(groups.values()):
        nodes: list[Node] = []
        ids: list[NodeId] = []
        where: dict[str, list[int]] = {}
        for sid in sets:
            where[sid] = []
            # Nodes in index order, so an assignment reads as the nodes people know.
            per_index = sorted((i, c) for c in classes[sid] for i in c.indices)
            for index, c in per_index:
                where[sid].append(len(nodes))
                nodes.append(Node(c.free.gpus, c.free.cpus, c.free.memory, c.free.slices, c.idle))
                ids.append(NodeId(sid, index))
        targets = sorted({t for sid in sets for t in inventory.node_set(sid).targets})
        reach = {
            t: tuple(sorted(i for sid in inventory.target(t).node_sets for i in where[sid]))
            for t in targets
        }
        work = [work_of(p, at_max) for t in targets for p in by_target.get(t, [])]
        pid = targets[0] if len(targets) == 1 else " + ".join(sets)
        problem = Problem(pid, [str(i) for i in ids], nodes, reach, work)
        out.append(Component(tuple(targets), tuple(sets), problem, ids))
    return out


def recorded(comp: Component, placements: list[Placement]) -> dict[str, list[list[int]]] | None:
    """The plan's own node assignment of the component's work (its placements among
    `placements`), as node positions per unit; None when a placement has none recorded or
    it is not a packing."""
    from router.plan.packing import check_assignment as check_positions

    position = {(n.node_set, n.index): i for i, n in enumerate(comp.nodes)}
    mine = set(comp.targets)
    out: dict[str, list[list[int]]] = {}
    for p in placements:
        if p.target.id not in mine:
            continue
        w = work_of(p)
        if not (w.units and w.tasks):
            continue
        if len(p.nodes) != w.units * w.tasks or any(k not in position for k in p.nodes):
            return None
        at = [position[k] for k in p.nodes]
        out[w.name] = [at[u * w.tasks : (u + 1) * w.tasks] for u in range(w.units)]
    return None if check_positions(comp.problem, out) else out


@dataclass
class Checked:
    """One component's verdict, with the assignment (node ids per unit) when it packs."""

    component: Component
    verdict: Verdict

    @property
    def assignment(self) -> dict[str, list[list[NodeId]]]:
        ids = self.component.nodes
        return {
            name: [[ids[i] for i in unit] for unit in units]
            for name, units in sorted(self.verdict.assignment.items())
        }


def check_plan(
    inventory: Inventory,
    running: Running | None,
    placements: list[Placement],
    limit: float = DEFAULT_LIMIT,
    at_max: bool = False,
    workers: int = 1,
) -> list[Checked]:
    """Every component with work, checked. `workers` > 1: the components that the bounds,
    first fit and the constructive searches leave open are checked in forked processes, the
    largest first. The verdicts are
    the same whatever `workers` is: each component is checked on its own, within a
    deterministic limit."""
    comps = [c for c in components(inventory, running, placements, at_max) if c.problem.work]
    verdicts = settle([c.problem for c in comps], limit, workers)
    return [Checked(c, v) for c, v in zip(comps, verdicts, strict=True)]


def recorded_errors(checked: list[Checked], placements: list[Placement]) -> list[list[str]]:
    """Per checked component, what is wrong with the plan's own node assignment of its work
    (placements[].nodes, a unit per `tasks` nodes), by packing.check_assignment: [] when it
    is a packing, a witness of its own. The components are check_plan's, not built again."""
    from router.plan.packing import check_assignment as check_positions

    theirs: dict[str, list[Placement]] = {}
    for p in placements:
        theirs.setdefault(p.target.id, []).append(p)
    out = []
    for c in checked:
        comp = c.component
        position = {(n.node_set, n.index): i for i, n in enumerate(comp.nodes)}
        errors: list[str] = []
        mine: dict[str, list[list[int]]] = {}
        for p in (q for t in comp.targets for q in theirs.get(t, [])):
            w = work_of(p)
            if not (w.units and w.tasks):
                continue
            at = [position[k] for k in p.nodes if k in position]
            if len(at) < len(p.nodes):
                errors.append(f"{w.name}: a node outside {w.target}'s nodes")
            mine[w.name] = [at[u * w.tasks : (u + 1) * w.tasks] for u in range(w.units)]
        out.append(errors + check_positions(comp.problem, mine))
    return out


_FORKED: tuple[list[Problem], float] = ([], 0.0)  # what forked children read (not pickled)


def settle(problems: list[Problem], limit: float, workers: int = 1) -> list[Verdict]:
    """check() of every problem, in order; see check_plan for `workers`."""
    if workers <= 1:
        return [check(p, limit, constructive=True) for p in problems]
    # The bounds, first fit and the constructive searches here (a tenth of a second at most
    # each; forking a large plan's process costs more than they do: XL seed 0, 5.4 CPU s
    # forked against 3.7 in one process); only what they leave open is forked.
    out = [quick_check(p) for p in problems]
    rest = sorted(
        (k for k, v in enumerate(out) if v is None),
        key=lambda k: (-sum(w.units * w.tasks for w in problems[k].work), k),
    )
    if len(rest) <= 1:
        return [
            v if v is not None else exact_check(p, limit)
            for p, v in zip(problems, out, strict=True)
        ]
    import multiprocessing

    global _FORKED
    _FORKED = (problems, limit)
    try:
        with multiprocessing.get_context("fork").Pool(min(workers, len(rest))) as pool:
            for k, v in pool.imap_unordered(_check_forked, rest):
                out[k] = v
    finally:
        _FORKED = ([], 0.0)
    return [v for v in out if v is not None]


def _check_forked(k: int) -> tuple[int, Verdict]:
    problems, limit = _FORKED
    return k, exact_check(problems[k], limit)


def unpackable(
    inventory: Inventory,
    running: Running | None,
    placements: list[Placement],
    limit: float = DEFAULT_LIMIT,
) -> list[str]:
    """Target ids whose component cannot be packed (or was not decided), sorted."""
    bad = {
        t
        for c in check_plan(inventory, running, placements, limit)
        if c.verdict.packs is not True
        for t in c.component.targets
    }
    return sorted(bad)


def check_assignment(
    inventory: Inventory,
    running: Running | None,
    placements: list[Placement],
    assignment: dict[str, list[list[tuple[str, int]]]],
) -> list[str]:
    """What is wrong with a given assignment: workload -> per pod or job, the (node set id,
    index) of each of its nodes. [] when it is a valid packing of every placement."""
    from router.plan.packing import check_assignment as check_positions

    errors: list[str] = []
    for c in components(inventory, running, placements):
        if not c.problem.work:
            continue
        position = {(n.node_set, n.index): i for i, n in enumerate(c.nodes)}
        mine: dict[str, list[list[int]]] = {}
        for w in c.problem.work:
            if w.name not in assignment:
                continue
            units = []
            for unit in assignment[w.name]:
                try:
                    units.append([position[(s, i)] for s, i in unit])
                except KeyError:
                    errors.append(f"{w.name}: {unit} names a node outside {w.target}'s nodes")
                    units.append([])
            mine[w.name] = units
        errors += check_positions(c.problem, mine)
    return errors


def scale_out(
    inventory: Inventory,
    running: Running | None,
    placements: list[Placement],
) -> list[dict[str, Any]]:
    """Per target with services that can scale (max > min): the nodes it would need beyond
    its capacity for every service there at max replicas, all else as planned.

    The least number of nodes of the target's (first) node set added to its component that
    packs (binary search over exact checks, SCALE_OUT_LIMIT each; an undecided check counts
    as not packing, so the figure errs high, never low), `more_nodes`; and the least that
    is not proven short, `more_nodes_least` (by totals, or by a check's "no"): the same
    where every check decided, below it where some did not (awkward medium seed 2's k0:
    65 found to pack, checks at 52-64 undecided)."""
    out = []
    comps = components(inventory, running, placements)
    # Each target's and each component's placements, in plan order (the order the checks
    # have always read them in), gathered in one pass rather than once per target.
    comp_of = {t: k for k, c in enumerate(comps) for t in c.targets}
    by_target: dict[str, list[Placement]] = {}
    by_comp: dict[int, list[Placement]] = {}
    for p in placements:
        by_target.setdefault(p.target.id, []).append(p)
        if p.target.id in comp_of:
            by_comp.setdefault(comp_of[p.target.id], []).append(p)
    for k, comp in enumerate(comps):
        scalable = {
            t: [
                p
                for p in by_target.get(t, [])
                if p.resources.replicas_max > p.resources.replicas_min
            ]
            for t in comp.targets
        }
        if not any(scalable.values()):
            continue
        theirs = by_comp.get(k, [])
        as_planned = [work_of(p) for p in theirs]
        for t in comp.targets:
            mine = scalable[t]
            if not mine:
                continue
            scaled = {p.workload.name for p in mine}
            work = [
                work_of(p, at_max=True) if p.workload.name in scaled else w
                for p, w in zip(theirs, as_planned, strict=True)
            ]
            need, least = _more_nodes(inventory, comp, t, work)
            out.append(
                {
                    "more_nodes": need,
                    "more_nodes_least": least,
                    "replicas_max": sum(p.resources.replicas_max for p in mine),
                    "replicas_min": sum(p.resources.replicas_min for p in mine),
                    "services": len(mine),
                    "target_id": t,
                }
            )
    return sorted(out, key=lambda r: str(r["target_id"]))


def _more_nodes(
    inventory: Inventory, comp: Component, target: str, work: list[Work]
) -> tuple[int, int]:
    """The least count of added nodes found to pack, and the least not proven short."""
    base = comp.problem
    sid = inventory.target(target).node_sets[0]
    spec = inventory.node_set(sid).spec
    fresh = Node(
        spec.whole_gpus_per_node,
        spec.cpus_per_node,
        spec.memory_per_node,
        tuple(spec.slices_per_node.items()),
    )
    sharing = [t for t in comp.targets if sid in inventory.target(t).node_sets]

    def packs(extra: int) -> bool:
        added = range(len(base.nodes), len(base.nodes) + extra)
        reach = {t: base.reach[t] + (tuple(added) if t in sharing else ()) for t in base.reach}
        problem = Problem(
            base.id,
            base.node_ids + [f"{sid}[+{k}]" for k in range(extra)],
            base.nodes + [fresh] * extra,
            reach,
            work,
        )
        packed = check(problem, SCALE_OUT_LIMIT).packs
        if packed is False:
            short[0] = max(short[0], extra)
        return packed is True

    # No fewer than the totals need (each resource: what the work asks beyond the nodes' free
    # amount, in fresh nodes); from there up in growing steps, then halving back.
    fail = _total_bound(base.nodes, work, fresh) - 1  # every count up to `fail` fails
    short = [fail]  # every count up to this one proven not to pack
    if fail >= SCALE_OUT_CAP:
        return SCALE_OUT_CAP, SCALE_OUT_CAP
    step = 1
    high = fail + 1
    while not packs(high):
        fail, step = high, step * 2
        high = fail + step
        if high >= SCALE_OUT_CAP:
            return SCALE_OUT_CAP, short[0] + 1
    while high - fail > 1:
        mid = (fail + high) // 2
        if packs(mid):
            high = mid
        else:
            fail = mid
    return high, short[0] + 1


def _total_bound(nodes: list[Node], work: list[Work], fresh: Node) -> int:
    """The fewest fresh nodes by totals alone (a lower bound on any packing's need)."""

    def vec(n: Node) -> tuple[int, ...]:
        return (n.gpus, n.cpus, n.memory, *(k for _, k in n.slices))

    profiles = [p for p, _ in fresh.slices]
    need = [0] * (3 + len(profiles))
    for w in work:
        sl = dict(w.slices)
        for d, v in enumerate((w.gpus, w.cpus, w.memory, *(sl.get(p, 0) for p in profiles))):
            need[d] += v * w.units * w.tasks
    have = [sum(vec(n)[d] for n in nodes) for d in range(len(need))]
    most = 0
    for d, cap in enumerate(vec(fresh)):
        short = need[d] - have[d]
        if short > 0:
            if not cap:
                return SCALE_OUT_CAP
            most = max(most, -(-short // cap))
    return most
