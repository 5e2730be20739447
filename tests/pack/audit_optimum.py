"""The audit's own optimum of router's first level (placed work) on a small planned folder,
from the audit's reading only (tests/pack/audit_check.py; no router code): every workload
placed on one of its candidate targets or not, every unit on a node of that target, and
maximise sum(priority weight x (100 x GPUs and slices + CPUs + 1)), the docs' level 1.

    python -m tests.pack.audit_optimum FOLDER...

prints, per folder, router's level-1 value and status beside the audit's optimum; a plan
reported OPTIMAL below the audit's optimum is a finding (exit 1).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.pack.audit_check import (
    Platform,
    Unit,
    _fresh,
    _limit,
    _member,
    _quota_key,
    _quota_use,
    node_rows,
)

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


def _quotas_and_spreads(p: Platform, m: Any, picks: list[tuple[str, str, Any]]) -> None:
    """The audit's quotas (each `per` group within its limit) and spreads (at most `max`
    members of a group on one target or cluster), read from audit.json as the checker does."""
    meta = p.meta.get("_platform", {})
    for q in meta.get("quotas", []):
        groups: dict[str | None, list[Any]] = {}
        for name, tid, x in picks:
            w = p.workloads[name]
            if _member(q, w):
                groups.setdefault(_quota_key(q, w, tid), []).append(_quota_use(p, q, name, tid) * x)
        for terms in groups.values():
            m.add(sum(terms) <= _limit(q))
    for s in meta.get("spreads", []):
        where: dict[tuple[str, str], list[Any]] = {}
        for name, tid, x in picks:
            w = p.workloads[name]
            app = (w.get("labels") or {}).get(s["by"])
            if app is None or w.get("kind") != s.get("kind", w.get("kind")):
                continue
            at = tid if s["across"] == "target" else tid.split("/")[0]
            where.setdefault((str(app), at), []).append(x)
        for xs in where.values():
            m.add(sum(xs) <= s["max"])


def optimum(
    folder: Path, limit: float = 20.0, chosen: dict[str, str] | None = None
) -> tuple[int | None, str]:
    """The optimum and its status; `chosen` (if given) gets workload -> target of it."""
    from ortools.sat.python import cp_model

    p = Platform(folder)
    m = cp_model.CpModel()
    nodes = {n.key: n for n in p.all_nodes()}  # free after what runs
    on: dict[tuple[str, int], list[tuple[Any, Unit]]] = {k: [] for k in nodes}
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
                ys = []
                for k in allowed:
                    n = nodes[k]
                    if n.blocked or (u.whole and n.busy) or not _fresh(n).take(u):
                        continue
                    y = m.new_bool_var("")
                    ys.append(y)
                    on[k].append((y, u))
                    if u.group:
                        groups.setdefault(u.group, {}).setdefault(k, []).append(y)
                m.add(sum(ys) == x)
            for per in groups.values():
                for ys in per.values():
                    m.add(sum(ys) <= 1)  # a job's tasks on distinct nodes
        if xs:
            m.add(sum(xs) <= 1)
    _quotas_and_spreads(p, m, picks)
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
    m.maximize(sum(goal))
    s = cp_model.CpSolver()
    s.parameters.max_time_in_seconds = limit
    s.parameters.num_workers = 1
    st = s.solve(m)
    if st == cp_model.OPTIMAL:
        if chosen is not None:
            chosen.update({n: t for n, t, x in picks if s.value(x)})
        return int(s.objective_value), "OPTIMAL"
    return None, s.status_name(st)


def main(argv: list[str]) -> int:
    bad = 0
    for arg in argv:
        folder = Path(arg)
        plan = json.loads((folder / "out" / "plan.json").read_text())
        level = plan["solver"]["levels"][0]
        best, status = optimum(folder)
        low = best is not None and level["status"] == "OPTIMAL" and level["value"] < best
        # a bound below what the audit places is a proof of something false
        under = best is not None and level.get("bound", best) < best - 5
        bad += low or under
        print(
            f"{folder}: router {level['value']} {level['status']} bound {level.get('bound')},"
            f" audit {best} {status}"
            + ("  FINDING: below the audit's optimum" if low else "")
            + ("  FINDING: bound below the audit's optimum" if under else ""),
            flush=True,
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
