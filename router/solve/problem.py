"""The assignment problem as plain data: variables, constraint rows and objective levels.

Built once from the evaluated decisions; the CP-SAT model (cpsat.py), the LP relaxation
(lp.py) and the plan's explanations read the same rows, so they cannot drift apart.
See cpsat.py for the notation and the objective.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from router.evaluate.evaluate import Candidate, Decision
from router.evaluate.quota import QuotaLimit, usage
from router.evaluate.views import workload_view
from router.models import TargetRef

RESOURCES = ("gpus", "cpus", "memory")


@dataclass
class Row:
    """Σ coef · x[var] ≤ rhs, with what it stands for (for reports and explanations)."""

    terms: list[tuple[int, int]]  # (coefficient, variable index)
    rhs: int
    kind: str  # "capacity" | "nodes" | "quota"
    subject: str  # target id or quota name
    resource: str
    source: str = ""  # file:line for quotas


@dataclass
class Level:
    name: str
    sense: int  # +1 maximise, -1 minimise
    terms: list[tuple[int, int]]


@dataclass
class Problem:
    decisions: list[Decision]  # the routed ones, index = workload index i
    variables: list[tuple[int, Candidate]]  # index -> (workload index, candidate)
    choices: list[list[int]]  # per workload, its variable indices
    rows: list[Row] = field(default_factory=list)
    levels: list[Level] = field(default_factory=list)


def work(d: Decision) -> int:
    """Placed work of a workload (level 1), before its priority weight: one GPU weighs as
    100 CPUs, and every placement counts at least 1."""
    c = d.candidates[0].resources
    return 100 * c.gpus + c.cpus + 1


def node_capacity(ref: TargetRef) -> int:
    return getattr(ref.target, "max_nodes", None) or ref.target.nodes


def _big(c: Candidate) -> bool:
    """More than half a node in some resource: two such placements never share a node."""
    t, r = c.target.target, c.resources
    return bool(
        (t.gpus_per_node and 2 * r.gpus_per_node > t.gpus_per_node)
        or 2 * r.cpus_per_node > t.cpus_per_node
        or 2 * r.memory_per_node > t.memory_per_node
    )


def build_problem(
    decisions: list[Decision],
    targets: list[TargetRef],
    quotas: list[QuotaLimit],
    previous: dict[str, str] | None = None,
) -> Problem:
    routed = [d for d in decisions if d.candidates]
    variables: list[tuple[int, Candidate]] = []
    choices: list[list[int]] = []
    by_target: dict[str, list[int]] = {t.id: [] for t in targets}
    for i, d in enumerate(routed):
        mine = []
        for c in d.candidates:
            by_target[c.target.id].append(len(variables))
            mine.append(len(variables))
            variables.append((i, c))
        choices.append(mine)
    problem = Problem(routed, variables, choices)

    for ref in targets:
        vs = by_target[ref.id]
        if not vs:
            continue
        t, nodes = ref.target, node_capacity(ref)
        per_node = {"gpus": t.gpus_per_node, "cpus": t.cpus_per_node, "memory": t.memory_per_node}
        for resource in RESOURCES:
            terms = [(usage(resource, variables[v][1].resources, ref), v) for v in vs]
            terms = [(u, v) for u, v in terms if u]
            if terms:
                problem.rows.append(
                    Row(terms, per_node[resource] * nodes, "capacity", ref.id, resource)
                )
        node_terms = []
        for v in vs:
            c = variables[v][1]
            n = c.resources.whole_nodes or (1 if _big(c) else 0)
            if n:
                node_terms.append((n, v))
        if node_terms:
            problem.rows.append(Row(node_terms, nodes, "nodes", ref.id, "nodes"))

    views = [workload_view(d.workload) for d in routed] if quotas else []
    for q in quotas:
        terms = []
        for i, d in enumerate(routed):
            if q.members is not None and not q.members(views[i], {}):
                continue
            for v in choices[i]:
                c = variables[v][1]
                if c.target.id in q.targets:
                    u = usage(q.resource, c.resources, c.target)
                    if u:
                        terms.append((u, v))
        if terms:
            problem.rows.append(Row(terms, q.amount, "quota", q.name, q.resource, q.source))

    prev = previous or {}
    weight = [d.workload.priority_weight * work(d) for d in routed]
    weight_rank = [d.workload.priority_weight for d in routed]
    tie: dict[int, int] = {}
    for i, vs in enumerate(choices):
        for s, v in enumerate(sorted(vs, key=lambda v: variables[v][1].target.id)):
            tie[v] = s
    problem.levels = [
        Level("placed_work", 1, [(weight[i], v) for v, (i, _) in enumerate(variables)]),
        Level("rank", -1, [(weight_rank[i] * c.rank, v) for v, (i, c) in enumerate(variables)
                           if c.rank]),
        Level("preference", -1, [(c.pref, v) for v, (_, c) in enumerate(variables) if c.pref]),
        Level(
            "stability",
            1,
            [
                (1, v)
                for v, (i, c) in enumerate(variables)
                if prev.get(routed[i].workload.name) == c.target.id
            ],
        ),
        Level("tie_break", -1, [(tie[v], v) for v in range(len(variables)) if tie[v]]),
    ]
    return problem
