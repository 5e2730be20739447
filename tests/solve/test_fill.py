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


def test_big_s2_reaches_the_bound() -> None:
    """Seed 2's pattern LP bound is integral: the plan proves nothing more fits."""
    level = _built("big-s2").solve.levels[0]
    assert level.value == level.bound
