"""Awkward sizes node by node: on small random platforms with shared node sets, MIG pools,
3-GPU jobs, CPU- and memory-heavy pods and multi-replica services, the plan's placed work
equals the exhaustive per-node optimum (exact.py), every target packs, and the recorded node
assignment passes the verifier."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from router.evaluate.evaluate import Evaluator
from router.evaluate.quota import compile_quotas
from router.language import load_policy
from router.models import Inventory, Workload
from router.solve.cpsat import SolveOptions, solve
from router.solve.nodes import capacities
from router.solve.problem import build_problem
from tests.bench import exact
from tests.helpers import kubernetes, platform, slurm, target, write_policy

POLICY = """
policy awkward
rule sliced: when labels.mig == "yes" route kubernetes with mig = "1g.10gb"
rule serve: when kind == "inference" route kubernetes
rule whole: when gpus >= 8 route slurm with exclusive
rule rest: route any
"""


def _platform(rng: random.Random) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    gpus = rng.choice([4, 8])
    cpus = rng.choice([16, 48])
    shared = target("g", rng.randint(1, 2), gpus, cpus, 64 * 1024)
    pool = target("mig", rng.randint(1, 2), 4, 48, 64 * 1024, gpu_type="a100")
    if rng.random() < 0.7:
        pool["mig"] = [{"gpus": rng.choice([2, 4]), "slices": {"1g.10gb": 7}}]
    inventory = platform(
        slurm(
            {"name": "gpu", "node_sets": ["g"]},
            {"name": "long", "node_sets": ["g"]},
            target("cpu", rng.randint(0, 1), 0, 32, 32 * 1024),
            node_sets=[shared],
        ),
        kubernetes(pool),
    )
    workloads = []
    for i in range(rng.randint(1, 6)):
        kind = rng.choice(["batch", "batch", "inference", "training"])
        w: dict[str, Any] = {
            "name": f"w{i}",
            "kind": kind,
            "image": "example.com/x:1",
            "command": "run",
            "gpus": rng.choice([0, 1, 3, 4, 8]),
            "cpus": rng.choice([2, 10, 20, 30]),
            "memory": rng.choice([4, 20, 40]) * 1024,
            "priority": rng.choice(["low", "normal", "high"]),
        }
        if kind == "inference":
            w["gpus"] = rng.choice([0, 1, 2, 3])
            w["replicas"] = {"min": rng.randint(1, 3), "max": 3}
            if rng.random() < 0.4:
                w["labels"] = {"mig": "yes"}
                w["gpus"] = rng.choice([1, 3])
        workloads.append(w)
    return inventory, workloads


@pytest.fixture(scope="module")
def policy_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_policy(tmp_path_factory, POLICY, "awkward.route")


def test_plan_equals_the_per_node_optimum(policy_path: Path) -> None:
    policy = load_policy(policy_path)
    rng = random.Random(20261201)
    differs = 0  # platforms where summing capacity per target would have said otherwise
    for _ in range(150):
        inv_doc, wl_docs = _platform(rng)
        inventory = Inventory.model_validate(inv_doc)
        workloads = [Workload.model_validate(w) for w in wl_docs]
        ev = Evaluator(policy, inventory)
        decisions = [ev.decide(w) for w in workloads]
        problem = build_problem(
            decisions,
            ev.targets,
            compile_quotas(policy, inventory),
            capacity=capacities(ev.targets, inventory),
        )
        result = solve(problem, SolveOptions(workers=1, deterministic_limit=5.0))
        best = exact.best(problem, inventory)
        assert result.objective == max(best, 0), (inv_doc, wl_docs)
        assert result.status in ("OPTIMAL", "EMPTY"), (inv_doc, wl_docs)
        exact.assert_plan_fits(policy, inventory, workloads, decisions, result, (inv_doc, wl_docs))
        # What summing capacity per target would have allowed: more than fits, at times.
        if exact.best(problem, inventory, sums=True) > best:
            differs += 1
    assert differs > 0
