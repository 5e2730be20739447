"""The assignment problem as plain data: variables, constraint rows and objective levels.

Built once from the evaluated decisions; the CP-SAT model (cpsat.py), the LP relaxation
(lp.py) and the plan's explanations read the same rows, so they cannot drift apart.
This per-workload form (one 0/1 variable per workload and candidate) is expanded from the
aggregated one (aggregate.py: one count per class of identical workloads and candidate),
which is what the solver solves; see cpsat.py for the notation and the objective.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cached_property
from itertools import chain, repeat

from router.evaluate.evaluate import Candidate, Decision
from router.evaluate.quota import QuotaLimit
from router.evaluate.spread import SpreadLimit
from router.gcpause import paused_gc
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


class Problem:
    """The per-workload form of `aggregate`. Its rows and levels (680k and 350k terms at
    bench L) are expanded when first read: the solver and the plan's reasons read the
    aggregate's, so a plan that never asks for them does not pay for them."""

    def __init__(
        self,
        decisions: list[Decision],
        variables: list[tuple[int, Candidate]],
        choices: list[list[int]],
        aggregate: Aggregate,
        members: list[list[int]],
    ) -> None:
        self.decisions = decisions  # the routed ones, index = workload index i
        self.variables = variables  # index -> (workload index, candidate)
        self.choices = choices  # per workload, its variable indices
        self.aggregate = aggregate  # what the solver solves
        # per aggregate variable, the per-workload variables of its class's members, by slot
        self._members = members

    def _terms(self, ts: list[tuple[int, int]]) -> list[tuple[int, int]]:
        members = self._members
        return list(chain.from_iterable(zip(repeat(c), members[av]) for c, av in ts))

    @cached_property
    def rows(self) -> list[Row]:
        return [replace(r, terms=self._terms(r.terms)) for r in self.aggregate.rows]

    @cached_property
    def levels(self) -> list[Level]:
        return [Level(lv.name, lv.sense, self._terms(lv.terms)) for lv in self.aggregate.levels]


@paused_gc()
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
    # Workload i's variables are base[i] .. base[i] + its candidates - 1 (built with
    # comprehensions and zip: 144k of them at bench L).
    base = [0] * (len(routed) + 1)
    for i, d in enumerate(routed):
        base[i + 1] = base[i] + len(d.candidates)
    variables: list[tuple[int, Candidate]] = []
    for i, d in enumerate(routed):
        variables.extend(zip(repeat(i), d.candidates))
    choices = [list(range(base[i], base[i + 1])) for i in range(len(routed))]
    members: list[list[int]] = [[] for _ in agg.variables]
    for g, group in enumerate(agg.groups):
        starts = [base[i] for i in group.members]
        for j, av in enumerate(agg.choices[g]):
            members[av] = [b + j for b in starts]

    return Problem(routed, variables, choices, agg, members)
