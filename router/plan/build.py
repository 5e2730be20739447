"""From a project to a Plan: load, evaluate, model, solve, and say what was not placed."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from router.config import Project
from router.evaluate.evaluate import Decision, Evaluator
from router.evaluate.quota import QuotaLimit, compile_quotas
from router.language import ast, load_policy
from router.models import Inventory, TargetRef, Workload, load_inventory, load_workloads
from router.plan.model import Placement
from router.solve.cpsat import SolveOptions, SolveResult
from router.solve.problem import Problem, build_problem


@dataclass
class Inputs:
    policy: ast.Policy
    inventory: Inventory
    workloads: list[Workload]
    files: list[Path]  # every input file, for the plan's hashes


@dataclass
class Unplaced:
    decision: Decision
    reasons: list[str]


@dataclass
class Plan:
    project: Project
    inputs: Inputs
    decisions: list[Decision]
    placements: list[Placement]
    unplaced: list[Unplaced]
    solve: SolveResult
    lp_bound: float | None
    problem: Problem
    quotas: list[QuotaLimit]
    seconds: dict[str, float] = field(default_factory=dict)

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
    inventory = load_inventory(project.inventory)
    workloads = load_workloads(project.workloads)
    files = (
        _files(project.policy, (".route",))
        + [project.inventory]
        + _files(project.workloads, (".yaml", ".yml"))
    )
    return Inputs(policy, inventory, workloads, files)


def input_hashes(project: Project, files: list[Path]) -> dict[str, str]:
    return {
        project.relative(f): hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(files)
    }


def build_plan(
    project: Project,
    options: SolveOptions | None = None,
    inputs: Inputs | None = None,
) -> Plan:
    from router.solve.cpsat import solve
    from router.solve.lp import lp_bound

    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    inputs = inputs or load_inputs(project)
    t1 = time.perf_counter()
    evaluator = Evaluator(inputs.policy, inputs.inventory)
    decisions = [evaluator.decide(w) for w in inputs.workloads]
    quotas = compile_quotas(inputs.policy, inputs.inventory)
    t2 = time.perf_counter()
    problem = build_problem(decisions, evaluator.targets, quotas,
                            (options or SolveOptions()).previous)
    t3 = time.perf_counter()
    result = solve(problem, options)
    bound = lp_bound(problem)
    t4 = time.perf_counter()
    seconds.update(parse=t1 - t0, evaluate=t2 - t1, model=t3 - t2, solve=t4 - t3)

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
                rule_source=f"{project.relative(d.rule.span.path)}:{d.rule.span.line}",
                rank=cand.rank,
                options=cand.options,
                resources=cand.resources,
            )
        )
    unplaced = [
        Unplaced(d, unplaced_reasons(d, problem, result, project))
        for d in decisions
        if d.status == "routed" and d.workload.name not in result.assignment
    ]
    return Plan(project, inputs, decisions, placements, unplaced, result, bound, problem,
                quotas, seconds)


def unplaced_reasons(
    d: Decision, problem: Problem, result: SolveResult, project: Project
) -> list[str]:
    """Why a routed workload has no target, in words: shape and `where` exclusions when it
    had no candidate; otherwise, per candidate, the capacity or quota rows it would break."""
    if not d.candidates:
        if not d.excluded:
            return ["no target of the rule's backend exists in the inventory"]
        assert isinstance(d.rule, ast.Rule)
        out = []
        for e in sorted(d.excluded, key=lambda e: (e.rank, e.target)):
            if e.kind == "where":
                where = d.rule.routes[e.rank].where
                at = f" ({project.relative(where.span.path)}:{where.span.line})" if where else ""
                out.append(f"{e.target}: excluded by the route's `where`{at}")
            else:
                out.append(f"{e.target}: {e.reason}")
        return out
    chosen = {id(c) for c in result.assignment.values()}
    used: dict[int, int] = {}
    var_of: dict[int, int] = {}
    for v, (_, c) in enumerate(problem.variables):
        var_of[id(c)] = v
    for r, row in enumerate(problem.rows):
        used[r] = sum(coef for coef, v in row.terms if id(problem.variables[v][1]) in chosen)
    reasons: list[str] = []
    for c in sorted(d.candidates, key=lambda c: (c.rank, c.target.id)):
        v = var_of[id(c)]
        blocked = False
        for r, row in enumerate(problem.rows):
            need = next((coef for coef, var in row.terms if var == v), 0)
            if need and used[r] + need > row.rhs:
                blocked = True
                reasons.append(_row_reason(c.target.id, row, used[r], need, project))
        if not blocked:
            reasons.append(f"{c.target.id}: fits alone, but the solver stopped at its limit "
                           f"({result.status}) before placing it")
    return reasons


def _row_reason(target: str, row: Any, used: int, need: int, project: Project) -> str:
    from router.quantity import format_memory

    def q(n: int) -> str:
        return format_memory(n) if row.resource == "memory" else str(n)

    if row.kind == "quota":
        path, _, line = row.source.partition(":")
        source = f"{project.relative(path)}:{line.split(':')[0]}"
        return (f"{target}: quota {row.subject} ({source}) on {row.resource}: "
                f"{q(used)} of {q(row.rhs)} used, needs {q(need)}")
    return (f"{target}: {row.resource} full: {q(used)} of {q(row.rhs)} used, "
            f"needs {q(need)}")
