"""One benchmark run: generate, then plan through router's API as `router plan` does
(router.Platform.from_objects, router.plan, Plan.files); compare; report.

Stages (seconds are wall time; the plan itself depends only on deterministic limits):
  parse     the generated policy text through router.language, the inventory and every
            workload validated by the pydantic models
  evaluate  Evaluator.decide for every workload (decisions cached per routing signature),
            and the quotas and spreads compiled
  model     the aggregated model (classes of identical workloads × candidate targets)
  solve     the LP bound (GLOP) whose optimum rounded down and completed greedily is a
            candidate hint, CP-SAT level by level per component
  reasons   the rest of router.plan: placements, and why each unplaced workload is
  emit      every file of out/ (Slurm scripts, Kubernetes manifests, plan.json), not written
The greedy and first-match baselines are computed afterwards, outside these stages.

Churn (--churn), for stability: after the plan, 1% of the workloads change — half of them
are removed and as many new ones are added — and the platform is planned again with the first
plan as `previous`. `moves_after_1pct_change` counts the workloads of both plans that the
first plan placed and the second puts elsewhere (or leaves out). `min_moves_needed` is the
least any plan can move while reaching the same placed work and rank (levels 1 and 2):
the number of those workloads minus the stability level's proven bound on how many can stay.
Moves beyond it would be the solver stopping at its limit, not the model.
"""

from __future__ import annotations

import math
import random
import resource
import statistics
import time
from typing import Any

import router
from router.bench.baselines import first_match, greedy
from router.bench.generator import Platform, generate
from router.evaluate.evaluate import Evaluator
from router.models import Workload
from router.models.placement import Placement
from router.plan.admits import referee
from router.plan.packcheck import check_plan, recorded_errors
from router.solve.lp import lp_level_bound


def _units(p: Placement) -> list[list[tuple[str, int]]]:
    """A placement's recorded nodes as the checker's units: a pod each, or a job's nodes
    (tests/solve reads a plan's assignment with it)."""
    per = p.resources.nodes if p.resources.whole_nodes else 1
    return [p.nodes[k : k + per] for k in range(0, len(p.nodes), max(1, per))]


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _parse(platform: Platform, workloads: list[dict[str, Any]]) -> router.Platform:
    """The platform through router's API, parsed and validated now (not when first used)."""
    p = router.Platform.from_objects(
        policy=platform.policy, inventory=platform.inventory, workloads=workloads
    )
    assert p.policy is not None
    return p


def _decide(ev: Evaluator, workloads: list[Workload]) -> list[int]:
    """Nanoseconds of each workload's decision."""
    clock = time.perf_counter_ns
    ns: list[int] = []
    for w in workloads:
        t = clock()
        ev.decide(w)
        ns.append(clock() - t)
    return ns


def run(
    size: str, seed: int = 0, churn: bool = False, workers: int = 2, emit: bool = True
) -> dict[str, Any]:
    platform = generate(size, seed)
    t0 = time.perf_counter()
    p = _parse(platform, platform.workloads)
    t1 = time.perf_counter()
    # Each decision timed here; the plan below reuses the evaluator, whose cache holds them.
    ev = p.evaluator(share_candidates=True)
    ns = _decide(ev, p.workloads)
    t2 = time.perf_counter()
    planned = router.plan(p, workers=workers, share_candidates=True)
    planned.built.later()  # the reasons, made on first use: counted in "reasons"
    t3 = time.perf_counter()
    built = planned.built
    result, agg, lp = built.solve, built.problem.aggregate, built.lp_bound
    assert agg is not None
    files = len(planned.files()) if emit else 0
    t4 = time.perf_counter()
    base = greedy(agg)
    fm = first_match(agg)
    # The independent exact checker (router/plan/packcheck.py, sharing nothing with
    # router/solve): targets whose planned work does not pack, and what is wrong with the
    # plan's own node assignment. Not part of the plan's time: it is the referee.
    t5 = time.perf_counter()
    i = built.inputs
    # The independent checker proves a component packs (True), cannot pack (False), or does
    # not decide in its limit (None); the plan's own node assignment, checked node by node, is
    # a packing of its own when it has no errors.
    checked = check_plan(i.inventory, i.running, built.placements, workers=workers)
    errors = recorded_errors(checked, built.placements)
    by_search = [t for c in checked if c.verdict.packs is True for t in c.component.targets]
    unpackable_targets = sorted(
        t for c in checked if c.verdict.packs is False for t in c.component.targets
    )
    searched_undecided = sorted(
        t for c in checked if c.verdict.packs is None for t in c.component.targets
    )
    by_recorded = [
        t for c, e in zip(checked, errors, strict=True) if not e for t in c.component.targets
    ]
    assignment_errors = [e for es in errors for e in es]
    # A target is undecided only when neither the checker's own search nor the plan's
    # assignment (checked node by node by the checker's code) shows that it packs.
    undecided_targets = sorted(set(searched_undecided) - set(by_recorded))
    packcheck_seconds = time.perf_counter() - t5
    # Workloads left out for capacity that the plan could still take, within every quota and
    # spread, on the nodes (router/plan/admits.py, independent of router/solve too).
    t6 = time.perf_counter()
    judged = referee(
        i.policy,
        i.inventory,
        i.workloads,
        built.placements,
        i.running,
        built.decisions,
        workers=workers,
    )
    check_seconds = time.perf_counter() - t5
    referee_seconds = time.perf_counter() - t6
    # router.plan's own stages; "reasons" is the rest of it (why each unplaced workload is).
    stages = {
        "parse": t1 - t0,
        "evaluate": t2 - t1 + built.seconds["evaluate"],
        "model": built.seconds["model"],
        "solve": built.seconds["solve"],
    }
    stages["reasons"] = t3 - t2 - sum(built.seconds[k] for k in ("evaluate", "model", "solve"))
    stages |= {"emit": t4 - t3, "total": t4 - t0}

    def ratio(a: float, b: float | None) -> float | None:
        return round(a / b, 6) if b else None

    out: dict[str, Any] = {
        "size": size,
        "seed": seed,
        "workloads": len(p.workloads),
        "targets": len(p.targets),
        "routed": len(agg.routed),
        "classes": len(agg.groups),
        "variables": len(agg.variables),
        "components": result.components,
        "hint_objective": result.hint_objective,
        "status": result.status,
        "levels": {
            lv.name: {"status": lv.status, "value": lv.value, "bound": lv.bound}
            for lv in result.levels
        },
        "workers": result.workers,
        "deterministic_limit_level_1": result.deterministic_limit,
        "deterministic_time": round(result.deterministic_time, 3),
        "seconds": {k: round(v, 3) for k, v in stages.items()},
        "files_emitted": files,
        "peak_rss_mb": round(_peak_rss_mb(), 1),
        "objective": result.objective,
        "cp_bound": result.bound,
        "lp_bound": round(lp, 3) if lp is not None else None,
        "greedy_objective": base.objective,
        "first_match_objective": fm.objective,
        "first_match_overcommitted": fm.overcommitted,
        "ratio_to_lp": ratio(result.objective, lp),
        "ratio_to_greedy": ratio(result.objective, base.objective),
        "decision_us_median": round(statistics.median(ns) / 1000.0, 3) if ns else 0.0,
        "decision_us_mean": round(sum(ns) / max(1, len(ns)) / 1000.0, 3),
        "unpackable_targets": len(unpackable_targets),
        "undecided_targets": len(undecided_targets),
        "undecided_by_search": len(searched_undecided),
        # The two witnesses apart, so that "0 unpackable" is never read as "the search
        # found them all": targets the checker's search packed, and those whose component
        # the plan's own node assignment packs.
        "packed_by_search": len(by_search),
        "packed_by_recorded_assignment": len(by_recorded),
        "assignment_errors": len(assignment_errors),
        "unplaced_checked": len(judged.checked),
        "falsely_unplaced": judged.falsely_unplaced,
        # How many of those fit together (greedy, per component: admits.py `_together`).
        "falsely_unplaced_together": judged.together,
        "unplaced_undecided": len(judged.undecided),
        "check_seconds": round(check_seconds, 3),
        "packcheck_seconds": round(packcheck_seconds, 3),
        "referee_seconds": round(referee_seconds, 3),
    }
    if churn:
        out |= _churn(platform, planned, workers, seed)
        out["peak_rss_mb"] = round(_peak_rss_mb(), 1)
    return out


def _churn(platform: Platform, first: router.Plan, workers: int, seed: int) -> dict[str, Any]:
    rng = random.Random(f"churn:{platform.size}:{seed}")
    workloads = platform.workloads
    change = max(2, round(0.01 * len(workloads)))
    removed = set(rng.sample(range(len(workloads)), change // 2))
    added = []
    for k in range(change - change // 2):
        like = dict(workloads[rng.randrange(len(workloads))])
        like["name"] = f"n{k:06d}-{like['kind']}"
        like["priority"] = rng.choice(["low", "normal", "high", "critical"])
        added.append(like)
    kept = [w for i, w in enumerate(workloads) if i not in removed]
    names = {w["name"] for w in kept}
    previous = {n: t for n, t in first.assignment.items() if n in names}
    started = time.perf_counter()
    # A new platform: a `per team` quota gets parts for teams that only the new workloads
    # bring. The previous plan is given as a plan document of the workloads still there.
    p2 = _parse(platform, kept + added)
    doc = {"placements": [{"workload": n, "target_id": t} for n, t in sorted(previous.items())]}
    second = router.plan(p2, doc, workers=workers, share_candidates=True)
    result, agg2 = second.built.solve, second.built.problem.aggregate
    assert agg2 is not None
    moves = sum(
        1
        for n, t in previous.items()
        if (c := result.assignment.get(n)) is None or c.target.id != t
    )
    # A lower bound on the moves of any plan with the same placed work and rank: the best of
    # CP-SAT's bound on the stability level and the LP of "most stays" under those two.
    reached = {lv.name: lv.value for lv in result.levels if lv.name in ("placed_work", "rank")}
    stays = lp_level_bound(agg2, "stability", reached)
    stay = next(lv for lv in result.levels if lv.name == "stability")
    most = min(stay.bound, math.floor(stays + 1e-6)) if stays is not None else stay.bound
    return {
        "changed_workloads": change,
        "moves_after_1pct_change": moves,
        "min_moves_needed": len(previous) - most,
        "churn_status": result.status,
        "churn_seconds": round(time.perf_counter() - started, 3),
    }
