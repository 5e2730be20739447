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

from tests.pack.audit_check import (
    Node,
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
    """The optimum and its status; `chosen` (if given) gets workload -> target of it.
    Solved by SCIP, a branch-and-bound MIP solver, over node patterns where every unit is a
    single one (_by_patterns), else over per-node variables with alike nodes ordered. On
    slow-awkward-20 (54 routed jobs, 20 alike nodes) CP-SAT on per-node variables had not
    proven it in 120 s (eight workers: 18,180 against a bound of 18,727 in 40 s), nor SCIP
    in 20 s; SCIP on its 1,463 maximal patterns proves 18,188 in 0.2 s."""
    p = Platform(folder)
    by_patterns = _by_patterns(p, limit, chosen)
    if by_patterns is not None:
        return by_patterns
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
    for keys, _ in _classes(p, nodes):
        for before, k in itertools.pairwise(keys):
            for j, y in slot[k].items():
                m.add(y <= sum(z for i, z in slot[before].items() if i < j))


def _classes(
    p: Platform, nodes: dict[tuple[str, int], Node]
) -> list[tuple[list[tuple[str, int]], tuple[str, ...]]]:
    """Identical nodes: the same free room and running state, in the same targets; each
    class's node keys in order, and its targets."""
    member: dict[tuple[str, int], list[str]] = {k: [] for k in nodes}
    for tid in sorted(p.targets):
        for n in p.target_nodes(tid):
            member[n.key].append(tid)
    classes: dict[tuple[Any, ...], list[tuple[str, int]]] = {}
    for k in sorted(nodes):
        n = nodes[k]
        sig = (n.cap, n.gpus, n.cpus, n.mem, tuple(sorted(n.slices.items())), n.busy, n.blocked)
        classes.setdefault((sig, tuple(member[k])), []).append(k)
    return [(keys, sig[1]) for sig, keys in classes.items()]


PATTERNS = 50_000  # maximal patterns per class past which the per-node model is used


def _by_patterns(
    p: Platform, limit: float, chosen: dict[str, str] | None
) -> tuple[int | None, str] | None:
    """Where every candidate's units are one unit that is not a whole node: per class of
    identical nodes, its maximal patterns (sets of workloads whose units fit one node
    together, no other fitting beside them), λ_p nodes of each, a_wc = w on class c:
    a_wc <= Σ_{p ∋ w} λ_p, Σ_c a_wc <= 1 (a node holding more than it is given leaves the
    rest free). None where it does not apply (the caller's per-node model then)."""
    meta = p.meta.get("_platform", {})
    if meta.get("quotas") or meta.get("spreads"):
        return None  # their rows read the target of each pick, which patterns do not name
    nodes = {n.key: n for n in p.all_nodes()}
    fit: dict[int, list[tuple[str, Unit]]] = {}  # class -> (workload, its unit there)
    classes = _classes(p, nodes)
    tid_of: dict[tuple[str, int], str] = {}
    weights: dict[str, int] = {}
    for name in sorted(p.workloads):
        if name not in p.meta:
            continue
        for tid in p.candidates(name):
            units = p.units(name, tid)
            if len(units) != 1 or units[0].whole:
                return None
            weights[name] = weight(p, name, units)
            for c, (keys, tids) in enumerate(classes):
                n = nodes[keys[0]]
                if tid not in tids or n.blocked or not n.copy().take(units[0]):
                    continue
                have = [u for w, u in fit.get(c, []) if w == name]
                if have and have[0].shape() != units[0].shape():
                    return None  # two targets over these nodes asking different units
                if not have:
                    fit.setdefault(c, []).append((name, units[0]))
                    tid_of[name, c] = tid
    m = _Mip()
    s = m.s
    a: dict[tuple[str, int], Any] = {}
    for c, got in fit.items():
        pats = _maximal(nodes[classes[c][0][0]], got)
        if pats is None:
            return None
        lam = [s.IntVar(0, len(classes[c][0]), "") for _ in pats]
        s.Add(s.Sum(lam) <= len(classes[c][0]))
        for i, (name, _) in enumerate(got):
            a[name, c] = m.new_bool_var("")
            s.Add(a[name, c] <= s.Sum([x for x, pat in zip(lam, pats, strict=True) if i in pat]))
    for name in weights:
        s.Add(s.Sum([x for (w, _), x in a.items() if w == name]) <= 1)
    s.Maximize(s.Sum([weights[w] * x for (w, _), x in a.items()]))
    s.SetTimeLimit(int(limit * 1000))
    if s.Solve() != s.OPTIMAL:
        return None
    if chosen is not None:
        chosen.update({w: tid_of[w, c] for (w, c), x in a.items() if x.solution_value() > 0.5})
    return round(s.Objective().Value()), "OPTIMAL"


def _maximal(n: Node, got: list[tuple[str, Unit]]) -> list[set[int]] | None:
    """Every maximal set of `got`'s units (by index) that node n holds at once, depth first;
    None past PATTERNS."""
    out: list[set[int]] = []

    def room_for(room: Node, i: int) -> bool:
        return room.copy().take(got[i][1])

    def dfs(i: int, room: Node, chosen: list[int]) -> bool:
        if len(out) > PATTERNS:
            return False
        if i == len(got):
            if not any(j not in chosen and room_for(room, j) for j in range(len(got))):
                out.append(set(chosen))
            return True
        if room_for(room, i):
            after = room.copy()
            after.take(got[i][1])
            if not dfs(i + 1, after, [*chosen, i]):
                return False
        return dfs(i + 1, room, chosen)

    fresh = n.copy()
    return out if dfs(0, fresh, []) else None


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
