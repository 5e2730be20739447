"""Platforms nobody tuned for (tests/pack/unseen.py), planned and judged: every target packs,
the plan's node assignment is valid, and nothing is unplaced that the plan could still take.

Bounded for CI (derandomized Hypothesis, and a fixed range of seeded platforms); the long
run is `python -m tests.pack.unseen --minutes N`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.pack.audit import FAMILIES
from tests.pack.unseen import Judged, Seeded, judge, judge_audited, platform
from tests.profiles import BOUNDED

T = TypeVar("T")


class Drawn:
    """A Draw from Hypothesis, which then shrinks a failing platform."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    def pick(self, options: Sequence[T]) -> T:
        return self.data.draw(st.sampled_from(options))

    def number(self, low: int, high: int) -> int:
        return self.data.draw(st.integers(low, high))


@settings(BOUNDED, max_examples=120)
@given(st.data())
def test_unseen_platforms_pack_and_leave_nothing_out(data: st.DataObject) -> None:
    got = judge(platform(Drawn(data)))
    assert got.findings == []
    assert got.undecided == []


def test_seeded_platforms_reach_what_they_are_for() -> None:
    """300 seeded platforms: no finding, and the platforms hold what the checks are about
    (so that a pass means something): MIG placements, whole nodes, arrays, services, running
    work, and workloads kept out by nodes, quotas and spreads."""
    total = Judged()
    seen: Counter[str] = Counter()
    for seed in range(300):
        data = platform(Seeded(seed))
        got = judge(data)
        total.findings += [f"seed {seed}: {f}" for f in got.findings]
        total.undecided += [f"seed {seed}: {u}" for u in got.undecided]
        total.unplaced += got.unplaced
        built = got.built
        assert built is not None
        inventory = built.inputs.inventory
        for q in built.placements:
            r = q.resources
            seen["mig"] += bool(r.mig)
            seen["whole"] += bool(r.whole_nodes)
            seen["multi-node"] += r.nodes > 1
            seen["array"] += bool(r.array_parallel)
            seen["service"] += bool(r.replicas_max)
            seen["shared node set"] += len(inventory.node_set(q.target.node_sets[0]).targets) > 1
        seen["running"] += data["running"] is not None
        seen.update(got.kept)
    assert total.findings == [] and total.undecided == []
    assert total.unplaced > 300
    for what in ("mig", "whole", "multi-node", "array", "service", "shared node set", "running"):
        assert seen[what] >= 10, (what, seen)
    for what in ("nodes", "quota", "spread"):
        assert seen[what] >= 10, (what, seen)


@pytest.mark.parametrize("family", FAMILIES)
def test_audit_family(family: str, tmp_path: Path) -> None:
    """The audit's families (tests/pack/audit.py), one small seeded platform each: the
    referees and the audit's own checker find nothing, and the platform holds placed and
    unplaced work for them to judge. Medium sizes (20-150 nodes per component, 200-3,000
    workloads) take minutes each and stay the long run:
    `python -m tests.pack.unseen --family all --size medium --minutes N`."""
    got = judge_audited(family, "small", 1, tmp_path / family)
    assert got.findings == [] and got.undecided == []
    assert got.targets > 0 and got.placed > 0
