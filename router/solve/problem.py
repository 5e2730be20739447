"""The assignment problem as plain data: variables, constraint rows and objective levels.

Built once from the evaluated decisions; the CP-SAT model (cpsat.py), the LP relaxation
(lp.py) and the plan's explanations read the same rows, so they cannot drift apart.
This per-workload form (one 0/1 variable per workload and candidate) is expanded from the
aggregated one (aggregate.py: one count per class of identical workloads and candidate),
which is what the solver solves; see cpsat.py for the notation and the objective.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from router.evaluate.evaluate import Candidate, Decision
from router.evaluate.quota import QuotaLimit
from router.evaluate.spread import SpreadLimit
from router.models import TargetRef
from router.solve.aggregate import (
    RESOURCES,
    Aggregate,
    Level,
    Row,
    build_aggregate,
    node_capacity,
    work,
)
from router.solve.nodes import Capacity
from router.solve.preempt import protect

__all__ = ["RESOURCES", "Level", "Problem", "Row", "build_problem", "node_capacity", "work"]


@dataclass
class Problem:
    decisions: list[Decision]  # the routed ones, index = workload index i
    variables: list[tuple[int, Candidate]]  # index -> (workload index, candidate)
    choices: list[list[int]]  # per workload, its variable indices
    rows: list[Row] = field(default_factory=list)
    levels: list[Level] = field(default_factory=list)
    aggregate: Aggregate | None = None  # what the solver solves; None: built on demand


def build_problem(
    decisions: list[Decision],
    targets: list[TargetRef],
    quotas: list[QuotaLimit],
    previous: dict[str, str] | None = None,
    spreads: list[SpreadLimit] | None = None,
    capacity: list[Capacity] | None = None,
) -> Problem:
    return expand(
        protect(
            build_aggregate(
                decisions, targets, quotas, previous, spreads=spreads, capacity=capacity
            )
        )
    )


def expand(agg: Aggregate) -> Problem:
    """One 0/1 variable per (workload, candidate), in workload then candidate order."""
    routed = agg.routed
    group_of = [0] * len(routed)
    slot = [0] * len(routed)
    for g, group in enumerate(agg.groups):
        for k, i in enumerate(group.members):
            group_of[i], slot[i] = g, k
    variables: list[tuple[int, Candidate]] = []
    choices: list[list[int]] = []
    # per aggregate variable, the per-workload variables of its class's members, by slot
    members: list[list[int]] = [[0] * agg.bound(v) for v in range(len(agg.variables))]
    for i, d in enumerate(routed):
        mine = []
        for j, c in enumerate(d.candidates):
            members[agg.choices[group_of[i]][j]][slot[i]] = len(variables)
            mine.append(len(variables))
            variables.append((i, c))
        choices.append(mine)

    def terms(ts: list[tuple[int, int]]) -> list[tuple[int, int]]:
        return [(c, v) for c, av in ts for v in members[av]]

    return Problem(
        decisions=routed,
        variables=variables,
        choices=choices,
        rows=[replace(r, terms=terms(r.terms)) for r in agg.rows],
        levels=[Level(lv.name, lv.sense, terms(lv.terms)) for lv in agg.levels],
        aggregate=agg,
    )
