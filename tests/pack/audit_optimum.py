"""The audit's own optimum of router's first level (placed work) on a small planned folder,
from the audit's reading only (tests/pack/audit_check.py; no router code): every workload
placed on one of its candidate targets or not, every unit on a node of that target, and
maximise sum(priority weight x (100 x GPUs and slices + CPUs + 1)), the docs' level 1.

    python -m tests.pack.audit_optimum FOLDER...

prints, per folder, router's level-1 value and status beside the audit's optimum; a plan
reported OPTIMAL below the audit's optimum is a finding (exit 1).
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

from tests.pack.audit_check import Node, Platform, Unit, _fresh, node_rows

PRIORITIES = {"low": 1, "normal": 2, "high": 4, "critical": 8}  # docs/language.md


def weight(p: Platform, name: str, units: list[Unit]) -> int:
    """Level 1 of one placement: the workload's totals (a service's at its min replicas), not
    the units' sums, which round a job split over nodes up."""
    w = p.workloads[name]
    pr = w.get("priority", "normal")
    pw = PRIORITIES[pr] if isinstance(pr, str) else int(pr)
    reps = p.replicas(name)
    times = reps[0] if reps else max(1, int((w.get("array") or {}).get("parallel", 0)))
    return pw * (100 * int(w.get("gpus", 0)) * times + int(w.get("cpus", 1)) * times + 1)


def optimum(
    folder: Path, limit: float = 20.0, chosen: dict[str, str] | None = None
) -> tuple[int | None, str]:
    """The optimum and its status; `chosen` (if given) gets workload -> target of it.
    Solved by SCIP, a branch-and-bound MIP solver: CP-SAT with one worker had not proven
    slow-awkward-20 (54 routed jobs, 20 alike nodes) in 120 s, with its nodes ordered too
    (eight workers: 18,180 against a bound of 18,727 in 40 s); SCIP proves 18,188 at once."""
    p = Platform(folder)
    m = _Mip()
    nodes = {n.key: n for n in p.all_nodes()}  # free after what runs
    on: dict[tuple[str, int], list[tuple[Any, Unit]]] = {k: [] for k in nodes}
    slot: dict[tuple[str, int], dict[int, Any]] = {k: {} for k in nodes}  # unit index -> y
    count = 0  # units made so far: each unit's index in one fixed order
    goal = []
    picks: list[tuple[str, str, Any]] = []
    for name in sorted(p.workloads):
        if name not in p.meta:
            continue
        xs = []
        for tid in p.candidates(name):
            units = p.units(name, tid)
            x = m.new_bool_var(f"{name}@{tid}")
            xs.append(x)
            picks.append((name, tid, x))
            goal.append(weight(p, name, units) * x)
            allowed = [n.key for n in p.target_nodes(tid)]
            groups: dict[str, dict[tuple[str, int], list[Any]]] = {}
            for u in units:
                count += 1
                ys = []
                for k in allowed:
                    n = nodes[k]
                    if n.blocked or (u.whole and n.busy) or not _fresh(n).take(u):
                        continue
                    y = m.new_bool_var("")
                    ys.append(y)
                    on[k].append((y, u))
                    slot[k][count] = y
                    if u.group:
                        groups.setdefault(u.group, {}).setdefault(k, []).append(y)
                m.add(sum(ys) == x)
            for per in groups.values():
                for ys in per.values():
                    m.add(sum(ys) <= 1)  # a job's tasks on distinct nodes
        if xs:
            m.add(sum(xs) <= 1)
    for k, got in on.items():
        n = nodes[k]
        if not got:
            continue
        node_rows(m, n, got)
        for i, (y, u) in enumerate(got):
            if u.whole:
                for j, (z, _) in enumerate(got):
                    if j != i:
                        m.add(y + z <= 1)
    _order_alike(m, p, nodes, slot)
    s = m.s
    s.Maximize(sum(goal))
    s.SetTimeLimit(int(limit * 1000))
    st = s.Solve()
    if st == s.OPTIMAL:
        if chosen is not None:
            chosen.update({n: t for n, t, x in picks if x.solution_value() > 0.5})
        return round(s.Objective().Value()), "OPTIMAL"
    return None, "FEASIBLE" if st == s.FEASIBLE else "UNKNOWN"


class _Mip:
    """The two calls of CP-SAT's CpModel that this model and node_rows make, on SCIP."""

    def __init__(self) -> None:
        from ortools.linear_solver import pywraplp  # type: ignore[import-untyped]

        self.s = pywraplp.Solver.CreateSolver("SCIP")
        self.s.SetNumThreads(1)

    def new_bool_var(self, name: str) -> Any:
        return self.s.BoolVar(name)

    def add(self, ct: Any) -> None:
        if isinstance(ct, bool):  # a sum over no variables
            if not ct:
                self.s.Add(self.s.Sum([]) >= 1)
            return
        self.s.Add(ct)


def _order_alike(
    m: Any,
    p: Platform,
    nodes: dict[tuple[str, int], Node],
    slot: dict[tuple[str, int], dict[int, Any]],
) -> None:
    """Identical nodes (the same free room, running state and targets) are interchangeable,
    so any solution can have them ordered by the first unit each holds: a node holds unit j
    only if the node before it in its class holds some unit before j. Without it the search
    tries every permutation of a class (slow-awkward-20, 20 alike nodes: not proven in 120 s)."""
    member: dict[tuple[str, int], list[str]] = {k: [] for k in nodes}
    for tid in sorted(p.targets):
        for n in p.target_nodes(tid):
            member[n.key].append(tid)
    classes: dict[tuple[Any, ...], list[tuple[str, int]]] = {}
    for k in sorted(nodes):
        n = nodes[k]
        sig = (n.cap, n.gpus, n.cpus, n.mem, tuple(sorted(n.slices.items())), n.busy, n.blocked)
        classes.setdefault((sig, tuple(member[k])), []).append(k)
    for keys in classes.values():
        for before, k in itertools.pairwise(keys):
            for j, y in slot[k].items():
                m.add(y <= sum(z for i, z in slot[before].items() if i < j))


def main(argv: list[str]) -> int:
    bad = 0
    for arg in argv:
        folder = Path(arg)
        plan = json.loads((folder / "out" / "plan.json").read_text())
        level = plan["solver"]["levels"][0]
        best, status = optimum(folder)
        low = best is not None and level["status"] == "OPTIMAL" and level["value"] < best
        bad += low
        print(
            f"{folder}: router {level['value']} {level['status']}, audit {best} {status}"
            + ("  FINDING: below the audit's optimum" if low else ""),
            flush=True,
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
