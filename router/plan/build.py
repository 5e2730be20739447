"""From a project to a Plan: load, evaluate, model, solve, and say what was not placed."""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from router.config import Project
from router.emit import assign_artifacts
from router.errors import PlanError
from router.evaluate.evaluate import Decision, Evaluator
from router.evaluate.quota import QuotaLimit, compile_quotas
from router.evaluate.spread import SpreadLimit, compile_spreads
from router.explain.blocking import PlanState
from router.explain.conditions import WhereValues
from router.explain.reasons import Summary, summarise
from router.gcpause import paused_gc
from router.language import ast, load_policy
from router.models import (
    Inventory,
    Running,
    TargetRef,
    Workload,
    load_inventory,
    load_running,
    load_workloads,
)
from router.models.loader import check_running
from router.models.placement import Placement
from router.plan.preempted import Preempted, not_preempted, preempted
from router.plan.verify import verify_nodes
from router.solve.cpsat import SolveOptions, SolveResult
from router.solve.nodes import capacities
from router.solve.problem import Problem, build_problem


@dataclass
class Inputs:
    policy: ast.Policy
    inventory: Inventory
    workloads: list[Workload]
    files: list[Path]  # every input file, for the plan's hashes
    running: Running | None = None  # what already runs on the nodes (models/running.py)
    # Inputs given as objects, not files (router.Platform.from_objects): name -> bytes hashed
    contents: dict[str, bytes] = field(default_factory=dict)


@dataclass
class Unplaced:
    decision: Decision
    reasons: list[str]
    fix: str | None = None  # the smallest change that would let it fit, in words


@dataclass
class Later:
    """What finish_plan makes only when first asked for (see Plan.unplaced): the reasons of
    every workload left out, what a previous plan lost, and the plan state they read."""

    unplaced: list[Unplaced]
    preempted: list[Preempted] | None
    state: PlanState | None


@dataclass
class Plan:
    project: Project
    inputs: Inputs
    decisions: list[Decision]
    placements: list[Placement]
    left_out: list[Decision]  # routed, not placed: each has an Unplaced with its reasons
    solve: SolveResult
    lp_bound: float | None
    problem: Problem
    quotas: list[QuotaLimit]
    seconds: dict[str, float] = field(default_factory=dict)
    spreads: list[SpreadLimit] = field(default_factory=list)
    # Makes the Later part; run once, on first use. The reasons are not needed to write
    # the emitters' files, so `router plan` forks those first and has them made meanwhile.
    make_later: Callable[[], Later] | None = field(default=None, repr=False)
    _later: Later | None = field(default=None, init=False, repr=False)

    def later(self) -> Later:
        if self._later is None:
            assert self.make_later is not None
            self._later, self.make_later = self.make_later(), None
        return self._later

    @property
    def unplaced(self) -> list[Unplaced]:
        return self.later().unplaced

    @property
    def preempted(self) -> list[Preempted] | None:
        """None: planned without a previous plan."""
        return self.later().preempted

    @property
    def state(self) -> PlanState | None:
        """The plan's row usage and node room that the reasons read (None when nothing
        needed it): `router explain` reads the same, without building it again."""
        return self.later().state

    @property
    def denied(self) -> list[Decision]:
        return [d for d in self.decisions if d.status == "denied"]

    @property
    def unrouted(self) -> list[Decision]:
        return [d for d in self.decisions if d.status == "unrouted"]

    @property
    def targets(self) -> list[TargetRef]:
        return self.inputs.inventory.targets()


def _files(path: Path, suffixes: tuple[str, ...]) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.suffix in suffixes and p.is_file())
    return [path]


def load_inputs(project: Project) -> Inputs:
    policy = load_policy(project.policy)
    inventory = load_inventory(project.inventory).with_log_dir(project.slurm.log_dir)
    workloads = load_workloads(project.workloads)
    running = load_running(project.running) if project.running else None
    check_running(inventory, running, project.running)
    files = [
        *_files(project.policy, (".route",)),
        project.inventory,
        *_files(project.workloads, (".yaml", ".yml")),
        *([project.running] if project.running else []),
    ]
    return Inputs(policy, inventory, workloads, files, running)


def input_hashes(
    project: Project, files: list[Path], contents: dict[str, bytes] | None = None
) -> dict[str, str]:
    hashes = {
        project.relative(f): hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(files)
    }
    hashes.update(
        (name, hashlib.sha256(data).hexdigest()) for name, data in (contents or {}).items()
    )
    return dict(sorted(hashes.items()))


def build_plan(
    project: Project,
    options: SolveOptions | None = None,
    inputs: Inputs | None = None,
    evaluator: Evaluator | None = None,
) -> Plan:
    """Evaluate, model and solve; placements carry their artifact paths. `evaluator` may be
    one already made for these inputs (its decisions are cached by signature)."""
    from router.solve.cpsat import solve_aggregate

    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    inputs = inputs or load_inputs(project)
    t1 = time.perf_counter()
    evaluator = evaluator or Evaluator(inputs.policy, inputs.inventory)
    with paused_gc():  # ~150k candidates at 10k workloads, none in a cycle
        decisions = [evaluator.decide(w) for w in inputs.workloads]
    quotas = compile_quotas(inputs.policy, inputs.inventory, workloads=inputs.workloads)
    spreads = compile_spreads(inputs.policy, inputs.inventory)
    t2 = time.perf_counter()
    problem = build_problem(
        decisions,
        evaluator.targets,
        quotas,
        (options or SolveOptions()).previous,
        spreads=spreads,
        capacity=capacities(evaluator.targets, inputs.inventory, inputs.running),
    )
    t3 = time.perf_counter()
    agg = problem.aggregate
    assert agg is not None
    # The LP (the bound reported) and, without a previous plan, the first hint are made per
    # component where it is solved (cpsat.solve_aggregate).
    result = solve_aggregate(agg, options)
    bound = result.lp_bound
    t4 = time.perf_counter()
    seconds.update(parse=t1 - t0, evaluate=t2 - t1, model=t3 - t2, solve=t4 - t3)

    return finish_plan(
        project, inputs, decisions, problem, result, bound, quotas, spreads, seconds, options
    )


# Placements, their checks and reasons: ~100k small objects at XL, none in a cycle; a pass
# of the collector there walks the whole plan (a third of the stage at XL).
@paused_gc()
def finish_plan(
    project: Project,
    inputs: Inputs,
    decisions: list[Decision],
    problem: Problem,
    result: SolveResult,
    bound: float | None,
    quotas: list[QuotaLimit],
    spreads: list[SpreadLimit],
    seconds: dict[str, float],
    options: SolveOptions | None = None,
) -> Plan:
    """Everything of build_plan after the solver: placements (checked against the nodes),
    and why each routed workload that is left out is (made on first use: Plan.later);
    `router bench` calls it "reasons"."""
    # One path cache per plan: a large plan names the same few policy files thousands of
    # times, and each project.relative resolves two paths on disk.
    relative = functools.lru_cache(maxsize=None)(project.relative)
    placements: list[Placement] = []
    by_name = {d.workload.name: d for d in decisions}
    for name, cand in sorted(result.assignment.items()):
        d = by_name[name]
        assert isinstance(d.rule, ast.Rule)
        placements.append(
            Placement(
                workload=d.workload,
                target=cand.target,
                rule=d.rule.name,
                rule_source=f"{relative(d.rule.span.path)}:{d.rule.span.line}",
                rank=cand.rank,
                options=cand.options,
                resources=cand.resources,
                nodes=result.nodes.get(name, []),
            )
        )
    # The plan is true node by node, or it is not written: checked against the nodes by
    # verify.py, which shares nothing with the solver's packing.
    wrong = verify_nodes(inputs.inventory, inputs.running, placements)
    if wrong:
        raise PlanError(
            "the plan does not fit its nodes (a bug in router): " + "; ".join(wrong[:5])
        )
    assign_artifacts(placements)  # plan.json lists them before they are written
    left_out = [
        d for d in decisions if d.status == "routed" and d.workload.name not in result.assignment
    ]
    previous = (options or SolveOptions()).previous

    def later() -> Later:
        # What each `where` read on the targets it kept out, for the reasons' words.
        values = WhereValues(inputs.policy.constants, inputs.inventory.targets())
        return _later(project, decisions, left_out, problem, result, previous, relative, values)

    return Plan(
        project,
        inputs,
        decisions,
        placements,
        left_out,
        result,
        bound,
        problem,
        quotas,
        seconds,
        spreads,
        later,
    )


@paused_gc()
def _later(
    project: Project,
    decisions: list[Decision],
    left_out: list[Decision],
    problem: Problem,
    result: SolveResult,
    previous: dict[str, str] | None,
    relative: Callable[[str], str],
    values: WhereValues | None = None,
) -> Later:
    """Why each workload left out is, and what a previous plan lost (Plan.later)."""
    # The plan's row usage, made once and shared by every reason below (when any needs it).
    needed = previous or any(d.candidates for d in left_out)
    state = PlanState(problem, result.assignment, result.nodes) if needed else None
    # Unplaced workloads of one class have the same reasons: computed once per class.
    cache: dict[int, Summary] = {}
    unplaced = [
        Unplaced(d, *unplaced_reasons(d, problem, result, project, state, relative, cache, values))
        for d in left_out
    ]
    lost = None
    if previous:
        assert state is not None
        lost = preempted(decisions, result.assignment, previous, state)
        said = {p.workload: p.reason for p in lost}
        named = {d.workload.name: d.workload for d in decisions}
        kept: dict[tuple[int, int], str | None] = {}  # one answer per class and priority
        for u in unplaced:
            name = u.decision.workload.name
            if name in said:  # first: what changed since the previous plan
                u.reasons.insert(0, said[name])
            elif note := not_preempted(u.decision, state, result.assignment, previous, named, kept):
                u.reasons.append(note)
    return Later(unplaced, lost, state)


def unplaced_reasons(
    d: Decision,
    problem: Problem,
    result: SolveResult,
    project: Project,
    state: PlanState | None = None,
    relative: Callable[[str], str] | None = None,
    cache: dict[int, Summary] | None = None,
    values: WhereValues | None = None,
) -> tuple[list[str], str | None]:
    """Why a routed workload has no target: the minimal set of reasons `router explain`
    prints (router/explain/reasons.py), so plan.json and explain always agree. With no
    candidate, the shape and `where` exclusions, identical reasons grouped; otherwise the
    minimal quotas and target capacities that keep it out next to the placed work."""
    if d.candidates and state is None:
        state = PlanState(problem, result.assignment, result.nodes)
    summary = summarise(
        d,
        state if d.candidates else None,
        relative or project.relative,
        result.status,
        cache,
        values,
    )
    return summary.reasons, summary.fix
