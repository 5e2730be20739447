"""A second witness finder for the audit: router's own one-more dive, asked from a plan.

Router's referee (router/plan/admits.py) leaves an ask undecided when its exact check runs out
of its 2 s; on awkward medium seed 1's p1 (120 alike nodes, 247 job shapes) that is 170 asks,
and some of them fit (stop 42). Here every job left out for capacity is asked, one at a time,
of each candidate target whose component is one class of alike nodes that every target of it
reaches: the plan's pods there and the job's, as pod counts per shape, packed onto the nodes
by router/solve/dive.py (the planner's one-more dive), its first columns the plan's own
node patterns (placements[].nodes): nothing but the plan's output is read. A
packing found is checked here by plain sums (each node pattern within one node on every
axis, a whole-node job's pattern alone, every shape's pods held, no more nodes than there
are), so a "fits" does not rest on the dive. "no": the dive's first LP needs more nodes than
there are (a proof); "open": neither. Quotas and spreads are the referee's (`_Limits`).
Multi-node jobs, MIG slices and components of several node classes are not asked.

    python -m tests.pack.audit_dive FOLDER [--lps 1000]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import router
from router.api import Platform
from router.evaluate.evaluate import Decision, Evaluator
from router.models.placement import Placement
from router.plan.admits import _Limits
from router.plan.packcheck import Component, components, recorded, work_of
from router.plan.packdata import Work
from router.solve import configs, dive
from router.solve.pack import fits_count

Shape = tuple[int, int, int, bool]  # gpus, cpus, memory per pod; a whole node


@dataclass(frozen=True)
class Asked:
    workload: str
    target: str
    verdict: str  # "fits", "no", "open"


def _askable(comp: Component) -> bool:
    nodes = comp.problem.nodes
    every = tuple(range(len(nodes)))
    return (
        bool(nodes)
        and all(n == nodes[0] and not n.slices for n in nodes)
        and all(tuple(sorted(r)) == every for r in comp.problem.reach.values())
    )


def _shape(w: Work) -> Shape | None:
    if w.slices or (w.tasks > 1 and not w.whole):
        return None
    return (w.gpus, w.cpus, w.memory, w.whole)


def packs(
    free: tuple[int, int, int],
    count: int,
    pods: dict[Shape, int],
    lps: int = 1_000,
    start: list[dict[Shape, int]] | None = None,
) -> tuple[str, list[tuple[dive.Pattern, int]]]:
    """Whether `pods` (count per shape) pack onto `count` nodes of `free` by the dive: the
    verdict and, where it fits, the node patterns (checked by `valid`). `start`: node
    patterns to begin from (the plan's own nodes: the first LP converges from them where
    it does not from nothing in dive.MANY_ROUNDS rounds); a first LP that ran out of rounds
    is solved again from the columns so far, while `lps` last."""
    shapes = sorted(pods)
    flat: list[tuple[int, ...]] = [s[:3] for s in shapes]
    whole = {k for k, s in enumerate(shapes) if s[3]}
    demand = [pods[s] for s in shapes]
    dims = tuple(a for a in range(3) if free[a] > 0 or any(s[a] for s in flat))
    many = len(shapes) > configs.MAX_SHAPES
    price = configs._dive_price(dims, free, flat, many)
    most = [0 if k in whole else fits_count(free, s) for k, s in enumerate(flat)]
    if any(m == 0 and k not in whole and demand[k] for k, m in enumerate(most)):
        return "no", []
    columns = [tuple(int(j == k) for j in range(len(shapes))) for k in sorted(whole)]
    for node in start or []:
        p = tuple(node.get(x, 0) for x in shapes)
        if any(p) and p not in columns:
            columns.append(p)
    left = [lps]
    rounds = dive.MANY_ROUNDS  # an audit: LPs that converge, however few the shapes
    while left[0] > 0:
        said: list[str] = []
        kept: list[dive.Pattern] = []
        got = dive.packed(
            demand, count, most, whole, columns, price, _unlisted, left, rounds, kept, said
        )
        if got is not None:
            return "fits", got
        if said != ["open"]:
            break
        columns = kept
    return ("no" if said == ["no"] else "open"), []


def _unlisted(caps: dict[int, int]) -> None:
    """No listing of every pattern (dive._rest, exact but silent on why it fails): the LP's
    steps to the end, so that the first LP's "no" is said."""
    return None


def valid(
    free: tuple[int, int, int],
    count: int,
    pods: dict[Shape, int],
    got: list[tuple[dive.Pattern, int]],
) -> list[str]:
    """What is wrong with node patterns `got` for `pods` on `count` nodes of `free` ([])."""
    shapes = sorted(pods)
    errors = []
    if sum(n for _, n in got) > count:
        errors.append(f"{sum(n for _, n in got)} nodes of {count}")
    for p, _ in got:
        for a in range(3):
            used = sum(k * s[a] for k, s in zip(p, shapes, strict=True))
            if used > free[a]:
                errors.append(f"pattern {p}: {used} of {free[a]} on axis {a}")
        if any(k and s[3] for k, s in zip(p, shapes, strict=True)) and sum(p) != 1:
            errors.append(f"pattern {p}: a whole node shares")
    for k, s in enumerate(shapes):
        held = sum(p[k] * n for p, n in got)
        if held < pods[s]:
            errors.append(f"{s}: {held} of {pods[s]} pods held")
    return errors


def ask(folder: Path, lps: int = 1_000) -> list[Asked]:
    """Plan `folder` and ask every job left out for capacity (module docstring)."""
    plat = router.load(folder)
    plan = router.plan(plat, workers=1)
    return ask_plan(plat, list(plan.placements), lps)


def ask_plan(plat: Platform, placements: list[Placement], lps: int = 1_000) -> list[Asked]:
    ev = Evaluator(plat.policy, plat.inventory)
    decisions = [ev.decide(w) for w in plat.workloads]
    placed = {p.workload.name for p in placements}
    limits = _Limits(plat.policy, plat.inventory, plat.workloads, decisions, placements)
    comps = {t: c for c in components(plat.inventory, None, []) for t in c.targets}
    base: dict[str, dict[Shape, int] | None] = {}

    nodes: dict[str, list[dict[Shape, int]]] = {}

    def pods_of(comp: Component) -> dict[Shape, int] | None:
        key = comp.problem.id
        if key not in base:
            mine = [p for p in placements if p.target.id in comp.targets]
            counts: dict[Shape, int] | None = {}
            at: list[dict[Shape, int]] = [{} for _ in comp.problem.nodes]
            where = recorded(comp, mine) or {}
            for p in mine:
                w = work_of(p)
                s = _shape(w)
                if s is None or counts is None:
                    counts = None
                    continue
                counts[s] = counts.get(s, 0) + w.units * w.tasks
                for unit in where.get(w.name, []):
                    for i in unit:
                        at[i][s] = at[i].get(s, 0) + 1
            base[key], nodes[key] = counts, at
        return base[key]

    out: list[Asked] = []
    known: dict[tuple[str, Shape, int], str] = {}
    left = [d for d in decisions if d.candidates and d.workload.name not in placed]
    for d in sorted(left, key=lambda d: d.workload.name):
        out += _asked(d, comps, limits, pods_of, lambda c: nodes[c.problem.id], known, lps)
    return out


def _asked(
    d: Decision,
    comps: dict[str, Component],
    limits: _Limits,
    pods_of: Callable[[Component], dict[Shape, int] | None],
    nodes_of: Callable[[Component], list[dict[Shape, int]]],
    known: dict[tuple[str, Shape, int], str],
    lps: int,
) -> list[Asked]:
    out = []
    for cand in d.candidates:
        comp = comps.get(cand.target.id)
        if comp is None or not _askable(comp) or limits.keeps_out(d, cand):
            continue
        p = Placement(d.workload, cand.target, "", "", cand.rank, cand.options, cand.resources)
        w = work_of(p)
        s = _shape(w)
        pods = pods_of(comp)
        if s is None or pods is None:
            continue
        key = (comp.problem.id, s, w.units * w.tasks)
        if key not in known:
            n = comp.problem.nodes[0]
            free = (n.gpus, n.cpus, n.memory)
            more = {**pods, s: pods.get(s, 0) + w.units * w.tasks}
            start = nodes_of(comp)
            verdict, got = packs(free, len(comp.problem.nodes), more, lps, start)
            if verdict == "fits" and valid(free, len(comp.problem.nodes), more, got):
                verdict = "open"  # a witness that does not hold proves nothing
            known[key] = verdict
        out.append(Asked(d.workload.name, cand.target.id, known[key]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--lps", type=int, default=1_000)
    args = ap.parse_args(argv)
    asked = ask(args.folder, args.lps)
    for a in asked:
        print(f"{a.workload} {a.target} {a.verdict}")
    fits = sorted({a.workload for a in asked if a.verdict == "fits"})
    print(f"left out that fit: {len(fits)} ({', '.join(fits)}); asks {len(asked)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
