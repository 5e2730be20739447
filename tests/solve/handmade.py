"""Small aggregated models written by hand: classes of identical workloads, their candidate
targets and the rows that limit them, without the evaluator. What each solver module is
given, so each can be tested alone on a problem whose answer is worked out in the test."""

from __future__ import annotations

from dataclasses import dataclass, field

from router.evaluate.evaluate import Candidate, Decision
from router.models import Inventory, Resources, TargetRef, Workload
from router.solve.aggregate import Aggregate, Group, Level, Row

RES = Resources(
    nodes=1,
    gpus_per_node=0,
    cpus_per_node=1,
    memory_per_node=1024,
    time=3600,
    exclusive=False,
    whole_nodes=0,
)


def targets(*names: str) -> dict[str, TargetRef]:
    """Slurm partitions `hpc/<name>` (their sizes do not matter: rows say the capacity)."""
    inv = Inventory.model_validate({"clusters": [{"name": "hpc", "backend": "slurm",
        "partitions": [{"name": n, "nodes": 1, "cpus_per_node": 8, "memory_per_node": "8GiB"}
                       for n in names]}]})  # fmt: skip
    return {ref.target.name: ref for ref in inv.targets()}


@dataclass
class Cls:
    """A class: `n` identical workloads worth `weight` each, on these (target, rank) pairs."""

    n: int
    weight: int
    on: list[tuple[str, int]]
    priority: int = 2
    previous: str | None = None  # target name the previous plan put them on
    preemptible: bool = False
    use: dict[str, int] = field(default_factory=dict)  # target -> capacity use per member


def aggregate(
    classes: list[Cls],
    capacity: dict[str, int],
    extra_rows: list[tuple[list[tuple[int, str]], int]] | None = None,
) -> Aggregate:
    """One capacity row per target (`capacity`), each member using `use[target]` (default 1);
    `extra_rows` are quota-like rows over (class index, target) pairs: ([(k, t)], rhs)."""
    refs = targets(*sorted({t for c in classes for t, _ in c.on} | set(capacity)))
    routed: list[Decision] = []
    groups: list[Group] = []
    variables: list[tuple[int, int]] = []
    choices: list[list[int]] = []
    for k, c in enumerate(classes):
        cands = [Candidate(refs[t], rank, 0, {}, RES) for t, rank in c.on]
        members = []
        for i in range(c.n):
            w = Workload.model_validate(
                {"name": f"c{k}-{i}", "priority": c.priority, "preemptible": c.preemptible}
            )
            members.append(len(routed))
            routed.append(Decision(w, "routed", candidates=cands))
        prev = refs[c.previous].id if c.previous else None
        groups.append(
            Group(members, cands, c.weight, c.priority, prev, (), (), bool(prev and c.preemptible))
        )
        choices.append(list(range(len(variables), len(variables) + len(cands))))
        variables += [(k, j) for j in range(len(cands))]
    agg = Aggregate(routed, groups, variables, choices)
    for t, rhs in sorted(capacity.items()):
        terms = [
            (classes[k].use.get(t, 1), v)
            for v, (k, j) in enumerate(variables)
            if groups[k].candidates[j].target.target.name == t
        ]
        agg.rows.append(Row(terms, rhs, "capacity", refs[t].id, "cpus"))
    for pairs, rhs in extra_rows or []:
        terms = [
            (1, v)
            for v, (k, j) in enumerate(variables)
            if (k, groups[k].candidates[j].target.target.name) in pairs
        ]
        agg.rows.append(Row(terms, rhs, "quota", "q", "gpus"))
    agg.levels = [
        Level("placed_work", 1, [(groups[k].weight, v) for v, (k, _) in enumerate(variables)])
    ]
    agg.floors = [0] * len(groups)
    return agg


def var(agg: Aggregate, k: int, target: str) -> int:
    """The variable of class k on `target`."""
    return next(v for v in agg.choices[k] if agg.candidate(v).target.target.name == target)
