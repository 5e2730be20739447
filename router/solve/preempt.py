"""Priority preemption: which planned work a new plan may take a place from.

Re-planning with a previous plan, a workload that plan placed and that is still routed is
*planned* work. Planned work keeps a place (it may move, as the stability level allows)
unless

  * it is `preemptible: true`: any work the objective prefers may take its place; or
  * a workload of strictly higher priority that the previous plan did not place competes
    with it, for one of its candidate targets or for a quota or spread both count in: then
    it may be preempted. Equal or lower priority waits, as with Kubernetes PriorityClasses,
    Slurm's QOS preemption and Kueue's preemption within a quota.

Protection is a floor on a planned class's placed count (Σ_j y_kj ≥ f_k). A floor must be
satisfiable, and an inventory that shrank or a workload that grew may not leave room for all
planned work: planned classes are put back where they were (protected ones first, then by
weight) as far as every row allows, then first-fit on their other candidates; a protected
class's floor is what that start placed. The start, completed first-fit decreasing, is the
solver's hint, so the search begins from the plan it should disturb least.
"""

from __future__ import annotations

from router.solve.aggregate import Aggregate
from router.solve.greedy import first_fit_decreasing, rows_of


def protected(agg: Aggregate, touches: list[list[tuple[int, int]]]) -> list[bool]:
    """Per class: planned, not preemptible, and no newcomer of higher priority competes with
    it: for one of its targets, or for a quota or spread row it counts in (a team's quota
    is contended like a target). `touches`: the rows of each variable (greedy.rows_of)."""
    waiting_on_target: dict[str, int] = {}  # target id -> highest newcomer priority
    waiting_on_row: dict[int, int] = {}  # row -> highest newcomer priority
    for g, group in enumerate(agg.groups):
        if group.previous is not None:
            continue
        for v in agg.choices[g]:
            t = agg.candidate(v).target.id
            waiting_on_target[t] = max(waiting_on_target.get(t, 0), group.priority_weight)
            for r, _ in touches[v]:
                waiting_on_row[r] = max(waiting_on_row.get(r, 0), group.priority_weight)
    out = []
    for g, group in enumerate(agg.groups):
        p = group.priority_weight
        out.append(
            group.previous is not None
            and not group.preemptible
            and all(waiting_on_target.get(agg.candidate(v).target.id, 0) <= p
                    and all(waiting_on_row.get(r, 0) <= p for r, _ in touches[v])
                    for v in agg.choices[g])
        )
    return out


def planned_start(agg: Aggregate) -> tuple[list[int], list[int]] | None:
    """(hint counts, floor per class), or None when no class was planned."""
    planned = [g for g, group in enumerate(agg.groups) if group.previous is not None]
    if not planned:
        return None
    touches = rows_of(agg)
    safe = protected(agg, touches)
    start = [0] * len(agg.variables)
    slack = [row.rhs for row in agg.rows]
    order = sorted(planned, key=lambda g: (not safe[g], -agg.groups[g].weight, g))
    left = {g: len(agg.groups[g].members) for g in planned}

    def put(g: int, v: int) -> None:
        n = left[g]
        for r, coef in touches[v]:
            n = min(n, slack[r] // coef)
        if n <= 0:
            return
        start[v] += n
        left[g] -= n
        for r, coef in touches[v]:
            slack[r] -= coef * n

    for g in order:  # where they were
        for v in agg.choices[g]:
            if agg.candidate(v).target.id == agg.groups[g].previous:
                put(g, v)
    for g in order:  # what no longer fits there, elsewhere
        c = agg.candidate
        for v in sorted(agg.choices[g], key=lambda v: (c(v).rank, c(v).pref, c(v).target.id)):
            if left[g]:
                put(g, v)
    floors = [0] * len(agg.groups)
    for g in planned:
        if safe[g]:
            floors[g] = len(agg.groups[g].members) - left[g]
    return first_fit_decreasing(agg, start), floors
