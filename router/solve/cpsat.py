"""The assignment problem as one CP-SAT model, solved lexicographically and deterministically.

Notation
--------
W             workloads that were routed (have at least one candidate target)
T             targets (Slurm partitions, Kubernetes node pools); N_t nodes (max_nodes for
              autoscaled pools), per node G_t GPUs, C_t CPUs, M_t MiB
C(w) ⊆ T      the candidate targets of w, with rank r_wt (0 = `route`, 1.. = `else route`)
              and preference place p_wt (0 = best by the clause's `prefer` terms)
x_wt ∈ {0,1}  w is placed on t, for t ∈ C(w)
On t, w takes either whole nodes n_wt (exclusive or multi-node jobs: all their GPUs, CPUs
and memory) or shared amounts g_wt, c_wt, m_wt (per-replica × min replicas for services).

Constraints
-----------
  Σ_t x_wt ≤ 1                                                  each workload placed once at most
  Σ_w g_wt x_wt + G_t Σ_w n_wt x_wt ≤ G_t N_t                   GPUs of t (same for C_t, M_t)
  Σ_w n_wt x_wt + Σ_{w big on t} x_wt ≤ N_t                     nodes of t
     where "big" shared placements need more than half a node in some resource, so no two
     of them share a node: a valid cut that keeps the aggregate model honest for large jobs
  Σ_{w ∈ q, t ∈ q} u_qwt x_wt ≤ L_q                             every quota limit q

Objective (lexicographic, each level solved to the end before the next is fixed)
---------
  1. maximise  Σ prio_w · work_w · x_wt     work_w = 100·GPUs + CPUs (+1 so every placement counts)
  2. minimise  Σ prio_w · r_wt x_wt         primary routes over fallbacks, first for the
                                            higher priorities
  3. minimise  Σ p_wt x_wt                  `prefer` terms
  4. maximise  Σ_{t = prev(w)} x_wt         stay where the previous plan put it
  5. minimise  Σ s_wt x_wt                  stable tie-break: s_wt = place of t in w's
                                            candidates sorted by target id

Determinism: interleaved search (its result does not depend on the number of workers), a
fixed seed, and deterministic time limits, never wall-clock ones. A level that stops at its
limit keeps the value it reached (≥ for maximisation) and the status says FEASIBLE.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from router.evaluate.evaluate import Candidate
from router.solve.problem import Problem

SEED = 0
DEFAULT_WORKERS = 4


@dataclass
class SolveOptions:
    workers: int = DEFAULT_WORKERS
    deterministic_limit: float = 20.0  # per level, in CP-SAT's deterministic seconds
    previous: dict[str, str] = field(default_factory=dict)  # workload -> target id


@dataclass
class LevelReport:
    name: str
    status: str
    value: int
    bound: int


@dataclass
class SolveResult:
    assignment: dict[str, Candidate]  # workload name -> chosen candidate
    status: str  # OPTIMAL | FEASIBLE | INFEASIBLE | MODEL_INVALID | UNKNOWN | EMPTY
    objective: int
    bound: int
    levels: list[LevelReport]
    workers: int
    seed: int
    wall_seconds: float
    deterministic_time: float

    @property
    def gap(self) -> float:
        if self.bound <= 0:
            return 0.0
        return max(0.0, (self.bound - self.objective) / self.bound)


def solve(problem: Problem, options: SolveOptions | None = None) -> SolveResult:
    """Solve `problem` level by level; see the module docstring."""
    from ortools.sat.python import cp_model  # imported here: it alone costs ~0.75 s

    opts = options or SolveOptions()
    started = time.perf_counter()
    model = cp_model.CpModel()
    x = [model.new_bool_var(f"x{v}") for v in range(len(problem.variables))]
    for vs in problem.choices:
        model.add_at_most_one(x[v] for v in vs)
    for row in problem.rows:
        model.add(
            cp_model.LinearExpr.weighted_sum([x[v] for _, v in row.terms],
                                             [c for c, _ in row.terms])
            <= row.rhs
        )

    solver = cp_model.CpSolver()
    p = solver.parameters
    p.random_seed = SEED
    p.num_workers = max(1, opts.workers)
    # Interleaved search makes the result independent of the number of workers.
    p.interleave_search = True
    p.max_deterministic_time = opts.deterministic_limit

    reports: list[LevelReport] = []
    values: list[int] = []
    det_time = 0.0
    overall = "OPTIMAL" if problem.variables else "EMPTY"
    for level in problem.levels:
        if not level.terms or overall not in ("OPTIMAL", "FEASIBLE"):
            reports.append(LevelReport(level.name, "OPTIMAL", 0, 0))
            continue
        expr = cp_model.LinearExpr.weighted_sum([x[v] for _, v in level.terms],
                                                [c for c, _ in level.terms])
        if level.sense > 0:
            model.maximize(expr)
        else:
            model.minimize(expr)
        if values:
            model.clear_hints()
            for var, val in zip(x, values, strict=True):
                model.add_hint(var, val)
        status = solver.solve(model)
        det_time += solver.deterministic_time
        name = solver.status_name(status)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            reports.append(LevelReport(level.name, name, 0, 0))
            # Without any solution there is nothing to report but the status; after one,
            # the plan keeps the last solution and is only FEASIBLE.
            overall = name if not values else "FEASIBLE"
            continue
        value, bound = round(solver.objective_value), round(solver.best_objective_bound)
        reports.append(LevelReport(level.name, name, value, bound))
        if name != "OPTIMAL":
            overall = "FEASIBLE"
        values = [int(solver.value(var)) for var in x]
        # Fix this level at what it reached before optimising the next one.
        model.clear_objective()
        model.add(expr >= value if level.sense > 0 else expr <= value)

    assignment: dict[str, Candidate] = {}
    for v, val in enumerate(values):
        if val:
            i, c = problem.variables[v]
            assignment[problem.decisions[i].workload.name] = c
    first = reports[0] if reports else LevelReport("placed_work", overall, 0, 0)
    return SolveResult(
        assignment=assignment,
        status=overall,
        objective=first.value,
        bound=max(first.bound, first.value),
        levels=reports,
        workers=p.num_workers,
        seed=SEED,
        wall_seconds=time.perf_counter() - started,
        deterministic_time=det_time,
    )
