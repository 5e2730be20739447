"""One benchmark run: generate, parse, evaluate, model, solve, emit; compare; report.

Stages (seconds are wall time; the plan itself depends only on deterministic limits):
  parse     the generated policy text through router.language (written to a temporary
            file and loaded as `router plan` loads it), the inventory and every workload
            validated by the pydantic models
  evaluate  Evaluator.decide for every workload (decisions cached per routing signature),
            and the quotas and spreads compiled
  model     the aggregated model (classes of identical workloads × candidate targets)
  solve     the greedy baseline, the LP bound (GLOP) whose optimum rounded down and completed
            greedily is the other candidate hint, CP-SAT level by level per component
  emit      placements and every emitted file (Slurm scripts, Kubernetes manifests)

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
import tempfile
import time
from pathlib import Path
from typing import Any

from router.bench.baselines import first_match, greedy
from router.bench.generator import Platform, generate
from router.evaluate.evaluate import Decision, Evaluator
from router.evaluate.quota import compile_quotas
from router.evaluate.spread import SpreadLimit, compile_spreads
from router.language import ast, load_policy
from router.models import Inventory, Workload
from router.plan.model import Placement
from router.solve.aggregate import Aggregate, build_aggregate
from router.solve.cpsat import SolveOptions, SolveResult, solve_aggregate
from router.solve.greedy import best_hint, previous_hint
from router.solve.lp import lp_level_bound, lp_solve
from router.solve.nodes import capacities


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _parse(platform: Platform) -> tuple[ast.Policy, Inventory, list[Workload]]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.route"
        path.write_text(platform.policy)
        policy = load_policy(path)
    inventory = Inventory.model_validate(platform.inventory)
    workloads = [Workload.model_validate(w) for w in platform.workloads]
    return policy, inventory, workloads


def _decide(ev: Evaluator, workloads: list[Workload]) -> tuple[list[Decision], list[int]]:
    clock = time.perf_counter_ns
    decisions: list[Decision] = []
    ns: list[int] = []
    for w in workloads:
        t = clock()
        decisions.append(ev.decide(w))
        ns.append(clock() - t)
    return decisions, ns


def _placements(result: SolveResult, decisions: list[Decision]) -> list[Placement]:
    out = []
    for d in decisions:
        c = result.assignment.get(d.workload.name)
        if c is None or not isinstance(d.rule, ast.Rule):
            continue
        out.append(
            Placement(
                d.workload,
                c.target,
                d.rule.name,
                f"bench.route:{d.rule.span.line}",
                c.rank,
                c.options,
                c.resources,
            )
        )
    return out


def run(
    size: str, seed: int = 0, churn: bool = False, workers: int = 2, emit: bool = True
) -> dict[str, Any]:
    from router.emit import assign_artifacts, emit_all

    # The budget `router plan` uses too: by the model's size (cpsat.auto_limit).
    options = SolveOptions(workers=workers)
    platform = generate(size, seed)
    t0 = time.perf_counter()
    policy, inventory, workloads = _parse(platform)
    t1 = time.perf_counter()
    ev = Evaluator(policy, inventory, share_candidates=True)
    decisions, ns = _decide(ev, workloads)
    quotas = compile_quotas(policy, inventory, workloads=workloads)
    spreads = compile_spreads(policy, inventory)
    t2 = time.perf_counter()
    caps = capacities(ev.targets, inventory)
    agg = build_aggregate(decisions, ev.targets, quotas, spreads=spreads, capacity=caps)
    t3 = time.perf_counter()
    base = greedy(agg)
    lp, lp_values = lp_solve(agg)
    result = solve_aggregate(agg, options, hint=best_hint(agg, lp_values))
    t4 = time.perf_counter()
    files = 0
    if emit:
        placements = _placements(result, decisions)
        assign_artifacts(placements)
        files = len(emit_all(placements))
    t5 = time.perf_counter()
    fm = first_match(agg)

    def ratio(a: float, b: float | None) -> float | None:
        return round(a / b, 6) if b else None

    out: dict[str, Any] = {
        "size": size,
        "seed": seed,
        "workloads": len(workloads),
        "targets": len(ev.targets),
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
        "seconds": {
            k: round(v, 3)
            for k, v in {
                "parse": t1 - t0,
                "evaluate": t2 - t1,
                "model": t3 - t2,
                "solve": t4 - t3,
                "emit": t5 - t4,
                "total": t5 - t0,
            }.items()
        },
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
    }
    if churn:
        out |= _churn(platform, inventory, ev, spreads, workloads, decisions, result, options, seed)
        out["peak_rss_mb"] = round(_peak_rss_mb(), 1)
    return out


def _churn(
    platform: Platform,
    inventory: Inventory,
    ev: Evaluator,
    spreads: list[SpreadLimit],
    workloads: list[Workload],
    decisions: list[Decision],
    first: SolveResult,
    options: SolveOptions,
    seed: int,
) -> dict[str, Any]:
    rng = random.Random(f"churn:{platform.size}:{seed}")
    change = max(2, round(0.01 * len(workloads)))
    removed = set(rng.sample(range(len(workloads)), change // 2))
    added = []
    for k in range(change - change // 2):
        like = dict(platform.workloads[rng.randrange(len(workloads))])
        like["name"] = f"n{k:06d}-{like['kind']}"
        like["priority"] = rng.choice(["low", "normal", "high", "critical"])
        added.append(Workload.model_validate(like))
    kept = [w for i, w in enumerate(workloads) if i not in removed]
    decisions2 = [d for i, d in enumerate(decisions) if i not in removed]
    decisions2 += [ev.decide(w) for w in added]
    previous = {n: c.target.id for n, c in first.assignment.items()}
    names = {w.name for w in kept}
    previous = {n: t for n, t in previous.items() if n in names}
    started = time.perf_counter()
    # Recompiled: a `per team` quota gets parts for teams that only the new workloads bring.
    quotas = compile_quotas(ev.policy, inventory, workloads=kept + added)
    agg2: Aggregate = build_aggregate(
        decisions2,
        ev.targets,
        quotas,
        previous,
        spreads=spreads,
        capacity=capacities(ev.targets, inventory),
    )
    hint = previous_hint(agg2) or best_hint(agg2, lp_solve(agg2)[1])
    result = solve_aggregate(
        agg2, SolveOptions(options.workers, options.deterministic_limit, previous), hint=hint
    )
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
