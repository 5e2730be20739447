"""Planned work that lost its place: who took it, in words and in plan.json's `preempted`.

A workload the previous plan placed that is still routed but unplaced now was preempted
(router/solve/preempt.py says when the solver may do that) when others took its place:
workloads that were not where they are before, have a higher priority (any priority when it
is preemptible) and count in a row that keeps it off its previous target now (that target's
capacity, or a quota or spread they share). Without such takers it left for another reason (a quota
of its own, a target that shrank or no longer fits it), which the minimal reasons say.
"""

from __future__ import annotations

from dataclasses import dataclass

from router.evaluate.evaluate import Candidate, Decision
from router.explain.blocking import Key, Overflow, PlanState, overflows_at
from router.explain.reasons import priority_name
from router.models import Workload
from router.models.workload import keeps_its_place


@dataclass
class Preempted:
    workload: str
    priority: int
    target_id: str  # where the previous plan put it
    by: list[str]  # workloads now on that target that pushed it out
    reason: str

    def to_json(self) -> dict[str, object]:
        return {
            "by": self.by,
            "priority": self.priority,
            "reason": self.reason,
            "target_id": self.target_id,
            "workload": self.workload,
        }


def holds_its_place(planned: Workload, newcomer: Workload) -> bool:
    """Whether planned work keeps its place against `newcomer`: only higher priority preempts,
    and a preemptible workload yields to anyone."""
    return keeps_its_place(planned.priority_weight, planned.preemptible, newcomer.priority_weight)


def _in_the_way(state: PlanState, name: str, was: str) -> set[str] | None:
    """Workloads counted in the rows that keep `name` off target `was` now; None when it is
    no longer a candidate there (it grew, the target shrank or left the inventory)."""
    i = state.index.get(name)
    v = (
        next(
            (v for v in state.problem.choices[i] if state.problem.variables[v][1].target.id == was),
            None,
        )
        if i is not None
        else None
    )
    if v is None:
        return None
    rows = {o.row for os in overflows_at(state, v).values() for o in os}
    return {state.workload_of(u).name for r in rows for u, _ in state.members(r)}


def preempted(
    decisions: list[Decision],
    assignment: dict[str, Candidate],
    previous: dict[str, str],
    state: PlanState,
) -> list[Preempted]:
    """Who lost its place to whom: only workloads in a row that keeps it off its previous
    target count as takers (a newcomer in the free room beside a workload that a quota of its
    own keeps out preempted nothing)."""
    by_name = {d.workload.name: d for d in decisions}
    moved = {n for n, c in assignment.items() if previous.get(n) != c.target.id}
    out = []
    for name in sorted(previous):
        d = by_name.get(name)
        if d is None or d.status != "routed" or name in assignment:
            continue
        w, was = d.workload, previous[name]
        # Whoever arrived (new, or from elsewhere) in a row that keeps it out now.
        pool = (_in_the_way(state, name, was) or set()) & moved
        takers = sorted(
            (by_name[n].workload for n in pool if not holds_its_place(w, by_name[n].workload)),
            key=lambda x: (-x.priority, x.name),
        )
        if not takers:  # it left for another reason (a quota, a smaller target): explain says
            continue
        shown = ", ".join(f"{x.name} (priority {priority_name(x.priority)})" for x in takers[:3])
        more = f" and {len(takers) - 3} more" if len(takers) > 3 else ""
        why = (
            "it is preemptible"
            if w.preemptible
            else (f"priority {priority_name(w.priority)} yields to higher priority")
        )
        reason = f"preempted on {was} by {shown}{more}: {why}"
        out.append(Preempted(name, w.priority, was, [x.name for x in takers], reason))
    return out


def _cheap_displacement(
    state: PlanState,
    over: dict[Key, list[Overflow]],
) -> tuple[list[int], int] | None:
    """Placed work whose removal makes room, lightest first: an upper bound on the least
    (blocking.displacement finds that with CP-SAT, too slow for every unplaced workload of a
    large plan). None when removing everything in the way is not enough."""
    short = {o.row: o.used + o.need - o.rhs for os in over.values() for o in os}
    occupants = sorted(
        {m for r in short for m, _ in state.members(r)}, key=lambda m: (state.weight(m), m)
    )
    chosen: list[int] = []
    for m in occupants:
        if all(left <= 0 for left in short.values()):
            break
        frees = [(r, c) for r, c in state.rows(m) if short.get(r, 0) > 0]
        if frees:
            chosen.append(m)
            for r, c in frees:
                short[r] -= c
    if any(left > 0 for left in short.values()):
        return None
    return chosen, sum(state.weight(m) for m in chosen)


def not_preempted(
    d: Decision,
    state: PlanState,
    assignment: dict[str, Candidate],
    previous: dict[str, str],
    workloads: dict[str, Workload],
    cache: dict[tuple[int, int], str | None] | None = None,
) -> str | None:
    """For a workload the previous plan did not place and that is unplaced now, when
    protection keeps it out: on some candidate, placed work whose removal would make room
    (lightest first) is worth less than it, so without protection the objective would take
    it, and holds planned work of equal or higher priority. None otherwise. With a `cache`
    (one per state, assignment and previous plan), workloads of one class of reasons and one
    priority (all that is read of them) share the answer."""
    w = d.workload
    i = state.index.get(w.name)
    if w.name in previous or i is None:
        return None
    if cache is None:
        return _not_preempted(w, i, state, assignment, previous, workloads)
    key = (state.class_key(i), w.priority)  # its weight and its name in words follow
    if key not in cache:
        cache[key] = _not_preempted(w, i, state, assignment, previous, workloads)
    return cache[key]


def _not_preempted(
    w: Workload,
    i: int,
    state: PlanState,
    assignment: dict[str, Candidate],
    previous: dict[str, str],
    workloads: dict[str, Workload],
) -> str | None:
    kept: set[str] = set()
    for v in state.problem.choices[i]:
        over = overflows_at(state, v)
        found = _cheap_displacement(state, over) if over else None
        if found is None or found[1] >= state.weight(v, 0):
            continue
        kept |= {
            n
            for u in found[0]
            if (n := state.workload_of(u).name) in previous and holds_its_place(workloads[n], w)
        }
    if not kept:
        return None
    names = sorted(kept)
    where = ", ".join(sorted({assignment[n].target.id for n in names}))
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return (
        f"not preempted for it on {where}: planned {', '.join(names[:3])}{more} "
        f"(priority {priority_name(w.priority)} or higher; only higher priority preempts)"
    )
