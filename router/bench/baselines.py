"""What the plan is compared with: greedy first-fit decreasing and a capacity-blind router.

Both read the aggregated model (router.solve.aggregate), so they see exactly the rows the
solver sees.

* Greedy first-fit decreasing (router.solve.greedy): the best simple capacity-aware packer.
* First match: what a job_submit.lua filter or an OPA rule does. Each workload goes to its
  first candidate (best rank, then preference, then target id) without looking at capacity;
  the target then runs what fits in submission order and the rest pends. Its objective is the
  work that runs; `overcommitted` counts the targets asked for more than they hold.
"""

from __future__ import annotations

from dataclasses import dataclass

from router.solve.aggregate import Aggregate
from router.solve.greedy import first_fit_decreasing, level_value, rows_of


@dataclass
class Baseline:
    objective: int
    counts: list[int]
    overcommitted: int = 0


def greedy(agg: Aggregate) -> Baseline:
    counts = first_fit_decreasing(agg)
    return Baseline(level_value(agg, 0, counts), counts)


def first_match(agg: Aggregate) -> Baseline:
    touches = rows_of(agg)
    slack = [row.rhs for row in agg.rows]
    asked = [0] * len(agg.rows)
    counts = [0] * len(agg.variables)
    first: list[int] = []
    for g in range(len(agg.groups)):
        first.append(
            min(
                agg.choices[g],
                key=lambda v: (
                    agg.candidate(v).rank,
                    agg.candidate(v).pref,
                    agg.candidate(v).target.id,
                ),
            )
        )
    group_of = [0] * len(agg.routed)
    for g, group in enumerate(agg.groups):
        for i in group.members:
            group_of[i] = g
    for i in range(len(agg.routed)):  # submission order
        v = first[group_of[i]]
        fits = True
        for r, coef in touches[v]:
            asked[r] += coef
            fits = fits and slack[r] >= coef
        if fits:
            counts[v] += 1
            for r, coef in touches[v]:
                slack[r] -= coef
    over = {
        agg.rows[r].subject
        for r in range(len(agg.rows))
        if agg.rows[r].kind in ("capacity", "nodes") and asked[r] > agg.rows[r].rhs
    }
    return Baseline(level_value(agg, 0, counts), counts, len(over))
