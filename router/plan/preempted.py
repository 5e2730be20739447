"""Planned work that lost its place: who took it, in words and in plan.json's `preempted`.

A workload the previous plan placed that is still routed but unplaced now was preempted
(router/solve/preempt.py says when the solver may do that) when others took its place:
workloads placed now on its previous target that were not there before and have a higher
priority (any priority when it is preemptible). Without such takers it left for another
reason (a quota, a target that shrank), which the minimal reasons of `router explain` say.
"""

from __future__ import annotations

from dataclasses import dataclass

from router.evaluate.evaluate import Candidate, Decision
from router.explain.reasons import priority_name


@dataclass
class Preempted:
    workload: str
    priority: int
    target_id: str  # where the previous plan put it
    by: list[str]  # workloads now on that target that pushed it out
    reason: str

    def to_json(self) -> dict[str, object]:
        return {"by": self.by, "priority": self.priority, "reason": self.reason,
                "target_id": self.target_id, "workload": self.workload}


def preempted(decisions: list[Decision], assignment: dict[str, Candidate],
              previous: dict[str, str]) -> list[Preempted]:
    by_name = {d.workload.name: d for d in decisions}
    out = []
    for name in sorted(previous):
        d = by_name.get(name)
        if d is None or d.status != "routed" or name in assignment:
            continue
        w, was = d.workload, previous[name]
        takers = sorted(
            (by_name[n].workload for n, c in assignment.items()
             if c.target.id == was and previous.get(n) != was
             and (w.preemptible or by_name[n].workload.priority_weight > w.priority_weight)),
            key=lambda x: (-x.priority, x.name))
        if not takers:  # it left for another reason (a quota, a smaller target): explain says
            continue
        shown = ", ".join(f"{x.name} (priority {priority_name(x.priority)})" for x in takers[:3])
        more = f" and {len(takers) - 3} more" if len(takers) > 3 else ""
        why = "it is preemptible" if w.preemptible else (
            f"priority {priority_name(w.priority)} yields to higher priority")
        reason = f"preempted on {was} by {shown}{more}: {why}"
        out.append(Preempted(name, w.priority, was, [x.name for x in takers], reason))
    return out


def not_preempted(d: Decision, reasons: list[str], assignment: dict[str, Candidate],
                  previous: dict[str, str], decisions: list[Decision]) -> str | None:
    """For a workload the previous plan did not place and that is unplaced now: the planned
    work it could not preempt (equal or higher priority) on the full targets its reasons
    name ("hpc/gpu is full: …"); None when planned work is not what keeps it out."""
    w = d.workload
    if w.name in previous:
        return None
    targets = {c.target.id for c in d.candidates
               if any(r.startswith(c.target.id + " ") for r in reasons)}
    by_name = {x.workload.name: x.workload for x in decisions}
    kept = sorted(n for n, c in assignment.items()
                  if c.target.id in targets and n in previous
                  and not by_name[n].preemptible
                  and by_name[n].priority_weight >= w.priority_weight)
    if not kept:
        return None
    where = ", ".join(sorted({assignment[n].target.id for n in kept}))
    more = f" and {len(kept) - 3} more" if len(kept) > 3 else ""
    return (f"not preempted for it on {where}: planned {', '.join(kept[:3])}{more} "
            f"(priority {priority_name(w.priority)} or higher; only higher priority preempts)")
