"""A15 (FINDINGS.md): large sets of identical CPU nodes, 20-30 shared job shapes.

The audit's `big` family (tests/pack/audit_new.py on s21-audit; the platforms are in
tests/pack/data/audit/big-s0 and big-s2): one partition of 72 × (47 CPUs, 191 GiB) or
84 × (128, 512 GiB). Past configs.py's old 12 shapes the pattern step did not run, and the
node-by-node steps left 33 and 39 jobs out that router's referee (router/plan/admits.py,
independent of router/solve) re-packs. Now the pattern model takes them: with priced
patterns that hold a few pods of each shape (configs._forced) as well as the LP's own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import router
from router.plan import build
from router.solve import configs
from tests.solve.test_configs import judge_built

DATA = Path(__file__).parents[1] / "pack" / "data" / "audit"


def _built(name: str) -> build.Plan:
    planned = router.plan(router.load(DATA / name), workers=1, share_candidates=True)
    built: build.Plan = planned.built
    return built


@pytest.mark.parametrize(("name", "before"), [("big-s0", 250), ("big-s2", 357)])
def test_big_identical_nodes_nothing_falsely_unplaced(name: str, before: int) -> None:
    """Main placed 250 and 357 with 33 and 25 falsely unplaced; now none, every node valid."""
    built = _built(name)
    placed, falsely, errors, _, undecided = judge_built(built)
    assert falsely == 0 and undecided == []
    assert errors == []
    assert placed > before


def test_big_gpu_nodes_nothing_falsely_unplaced() -> None:
    """A18: 60 × (8 h100, 96 CPUs, 1 TiB), 205 jobs of 22 shapes asking 0-8 whole GPUs
    (big-gpu-a18, shrunk from the audit's big medium seed 0). The pattern step took only
    CPU-and-memory pods: main placed 186 with 19 falsely unplaced; now the patterns are over
    GPUs too, the referee admits none and every node is valid."""
    built = _built("big-gpu-a18")
    placed, falsely, errors, _, undecided = judge_built(built)
    assert falsely == 0 and undecided == []
    assert errors == []
    assert placed > 186


def test_priced_by_cp_sat_is_the_tables_optimum() -> None:
    """The CP-SAT knapsack (where the table is too large) finds a pattern worth what the
    table finds, on a node where both apply, and the pattern fits."""
    shapes: list[tuple[int, ...]] = [
        (8, 6, 218),
        (3, 14, 126),
        (2, 5, 311),
        (1, 5, 31),
        (0, 22, 30),
        (0, 47, 221),
    ]
    free = (8, 96, 1024)
    caps = {
        s: min(8 if d[0] == 0 else 8 // d[0], 96 // d[1], 1024 // d[2])
        for s, d in enumerate(shapes)
    }
    for duals in ({0: 9.0, 1: 4.0, 2: 3.0, 3: 1.5, 4: 2.0, 5: 3.5}, {1: 1.0, 3: 0.25, 4: 0.75}):
        table = configs._priced((0, 1, 2), free, shapes, caps, duals)
        cp = configs._priced_cp((0, 1, 2), free, shapes, {s: caps[s] for s in duals}, duals)
        assert table is not None and cp is not None
        assert cp[0] == pytest.approx(table[0])
        assert all(sum(n * shapes[s][a] for s, n in enumerate(cp[1])) <= free[a] for a in range(3))


def test_big_s2_reaches_the_bound() -> None:
    """Seed 2's pattern LP bound is integral: the plan proves nothing more fits."""
    level = _built("big-s2").solve.levels[0]
    assert level.value == level.bound
