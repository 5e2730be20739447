"""Preemption against brute force: on small generated platforms re-planned with new
workloads, the plan keeps every protected planned workload placed and its placed work equals
the best any assignment reaches under the same rule, computed here from the rule's words:
planned work stays unless it is preemptible or a newcomer of higher priority wants one of
its targets."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from router.evaluate.evaluate import Evaluator
from router.evaluate.quota import compile_quotas
from router.language import load_policy
from router.models import Inventory, Workload
from router.solve.cpsat import SolveOptions, solve
from router.solve.problem import Problem, build_problem
from tests.bench import exact
from tests.bench.test_bruteforce import POLICY, _platform
from tests.helpers import write_policy


def _protected(problem: Problem, previous: dict[str, str]) -> set[int]:
    """Planned, not preemptible, and no newcomer of higher priority shares a target."""
    ds = problem.decisions
    targets = [{c.target.id for c in d.candidates} for d in ds]
    out = set()
    for i, d in enumerate(ds):
        w = d.workload
        if w.name not in previous or w.preemptible:
            continue
        if not any(
            ds[j].workload.name not in previous
            and ds[j].workload.priority_weight > w.priority_weight
            and targets[i] & targets[j]
            for j in range(len(ds))
        ):
            out.add(i)
    return out


@pytest.fixture(scope="module")
def policy_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_policy(tmp_path_factory, POLICY, "small.route")


def test_replanning_keeps_protected_work_and_is_optimal_under_the_rule(policy_path: Path) -> None:
    policy = load_policy(policy_path)
    rng = random.Random(20261130)
    options = SolveOptions(workers=1, deterministic_limit=5.0)
    preempting = checked = 0
    for _ in range(150):
        inv_doc, docs = _platform(rng)
        inventory = Inventory.model_validate(inv_doc)
        ev = Evaluator(policy, inventory)
        quotas = compile_quotas(policy, inventory)
        first = solve(
            build_problem(
                [ev.decide(Workload.model_validate(w)) for w in docs], ev.targets, quotas
            ),
            options,
        )
        previous = {n: c.target.id for n, c in first.assignment.items()}
        if not previous:
            continue
        for w in docs:
            w["preemptible"] = rng.random() < 0.2
        _, extra = _platform(rng)
        for k, w in enumerate(extra[: rng.randint(1, 3)]):
            docs.append(w | {"name": f"n{k}"})
        decisions = [ev.decide(Workload.model_validate(w)) for w in docs]
        problem = build_problem(decisions, ev.targets, quotas, previous)
        result = solve(problem, SolveOptions(workers=1, deterministic_limit=5.0, previous=previous))
        must = _protected(problem, previous)
        placed = {problem.decisions[i].workload.name for i in must}
        assert placed <= set(result.assignment), (inv_doc, docs, previous)
        assert result.status == "OPTIMAL"
        best = exact.best(problem, inventory, frozenset(must))
        assert result.objective == best, (inv_doc, docs, previous)
        preempting += len(must) < sum(1 for d in problem.decisions if d.workload.name in previous)
        checked += 1
    assert checked >= 100 and preempting >= 10  # the rule was exercised both ways
