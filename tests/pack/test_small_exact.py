"""Small platforms decided exactly (issue 11, points 1-2; the audit's A16): router's level 1
(placed work) against the audit's own exact optimum (tests/pack/audit_optimum.py: per-node
variables from the audit's reading of the folder, no router code). A plan reported OPTIMAL
must never be below it, and the A16 reproducers must reach it and say OPTIMAL."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.pack import audit
from tests.pack.audit_optimum import optimum
from tests.pack.audit_parts import write

DATA = Path(__file__).parent / "data" / "audit"
SLACK = 5  # the two readings of a multi-node job's units (test_audit_new.py)


def _level(folder: Path) -> dict[str, object]:
    done = audit.plan(folder)
    assert done.returncode in (0, 3), done.stderr
    level: dict[str, object] = json.loads((folder / "out/plan.json").read_text())["solver"][
        "levels"
    ][0]
    return level


@pytest.mark.parametrize("name", ["shared3-s19", "shared3-s16"])
def test_shared_node_set_platform_is_solved_to_the_optimum(name: str, tmp_path: Path) -> None:
    """gpu, gpu-long and preempt over one node set: the Benders cuts were per target, so the
    master moved the same counts to another target each round and stalled at FEASIBLE
    (s19: 2336 of 2358, s16: 9750 of 9778)."""
    folder = tmp_path / name
    shutil.copytree(DATA / name, folder)
    level = _level(folder)
    best, status = optimum(folder)
    assert status == "OPTIMAL" and best is not None
    assert level["status"] == "OPTIMAL", level
    assert level["value"] == best, (level, best)


def test_slow_awkward_is_solved_to_the_audit_optimum(tmp_path: Path) -> None:
    """60 awkward jobs on one partition of 20 alike nodes: the Benders rounds stalled at
    FEASIBLE 17,949 with a bound of 18,810; the node-pattern model (router/solve/exact.py)
    proves the optimum, which the audit computes on its own (patterns on SCIP)."""
    folder = tmp_path / "slow-awkward-20"
    shutil.copytree(DATA / "slow-awkward-20", folder)
    level = _level(folder)
    best, status = optimum(folder)
    assert status == "OPTIMAL" and best is not None
    assert level["status"] == "OPTIMAL", level
    assert level["value"] == level["bound"] == best, (level, best)


@pytest.mark.parametrize(
    ("family", "seed"), [(f, s) for f in ("shared", "awkward") for s in range(4)]
)
def test_optimal_is_never_below_the_exact_optimum(family: str, seed: int, tmp_path: Path) -> None:
    """Seeded small platforms of the audit's families (1-8 nodes per component): router's
    level 1 never claims more than the exact optimum (its value, and its bound where it says
    OPTIMAL), and where it says OPTIMAL the optimum is not above it. The audit rounds a
    multi-node job's units up, router per node: router may read up to SLACK above."""
    folder = tmp_path / f"{family}-{seed}"
    write(audit.build(family, "small", seed), folder)
    level = _level(folder)
    best, status = optimum(folder)
    assert status == "OPTIMAL" and best is not None, status
    value, bound = level["value"], level["bound"]
    assert isinstance(value, int) and isinstance(bound, int), level
    assert value <= best + SLACK, (level, best)  # a plan that packs cannot beat the optimum
    assert bound >= best, (level, best)  # a bound below the optimum is no bound
    if level["status"] == "OPTIMAL":
        assert value >= best, (level, best)
