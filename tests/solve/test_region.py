"""solve/region.py: one more member by re-packing a few nodes, on bench XL's large partitions.

The reproducers (tests/solve/data/patterns, README there) are XL seed 0's hpc-r9-4/cpu (43
nodes: past the exact try's TOPPED_NODES, and the node patterns' LP is degenerate there) and
hpc-r17-2/cpu (31 nodes, 13 shapes: past configs.MAX_SHAPES), planned from the XL plan's own
counts and nodes. Without the regional re-packing the referee (router/plan/admits.py,
independent of router/solve) admits left-out jobs on both; with it, none.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import router
from router.solve import configs, region
from router.solve.eject import Nodes
from router.solve.nodes import Capacity, Item, NodeGroup
from router.solve.pack import Block, Entry, Packing
from router.solve.region import regional
from tests.solve.patterns_repro import DATA, planned
from tests.solve.test_configs import _judged, judge_built

CASES = ["XL0-hpc-r9-4-cpu.json", "XL0-hpc-r17-2-cpu.json"]


@pytest.mark.parametrize("name", CASES)
def test_places_what_the_referee_admits(name: str) -> None:
    # Without the pattern step too: since it takes up to 40 shapes (A15) it takes these.
    real, region.regional = region.regional, lambda *_, **__: False
    patterns, configs.repacked = configs.repacked, lambda *_: False
    try:
        placed_before, falsely_before, *_ = _judged(DATA / name)
    finally:
        region.regional = real
        configs.repacked = patterns
    placed, falsely, errors, where, _ = _judged(DATA / name)
    assert falsely_before > 0  # the reproducer reproduces
    assert falsely == 0
    assert placed >= placed_before
    assert errors == []
    assert _judged(DATA / name)[3] == where  # deterministic


def _state(contents: list[dict[int, int]], items: dict[int, Item]) -> Nodes:
    """Nodes of (CPUs, memory) = (4, 8) holding `contents`."""
    cap = Capacity(
        "p",
        ("cpus", "memory"),
        (4, 8),
        [NodeGroup("p", len(contents), (4, 8), True, tuple(range(len(contents))))],
        {"t": frozenset({"p"})},
    )
    p = Packing(cap)
    for j, c in enumerate(contents):
        used = [sum(n * items[k].demand[a] for k, n in c.items()) for a in range(2)]
        p.blocks.append(Block(0, j, 1, (4 - used[0], 8 - used[1]), not c, tuple(sorted(c.items()))))
        for k, n in c.items():
            p.placed[k] = p.placed.get(k, 0) + n
    return Nodes(p, items, {k: frozenset({"p"}) for k in items})


def test_regional_repacks_three_nodes() -> None:
    """Three nodes, each with 1 CPU and 2 GiB free; a pod of (2, 4) fits only once the
    (1, 2) and (2, 4) pods trade places on two of them."""
    items = {0: Item(0, 1, (1, 2)), 1: Item(0, 1, (2, 4)), 2: Item(0, 1, (1, 2))}
    state = _state([{0: 1, 1: 1}, {0: 1, 1: 1}, {0: 3}], items)
    assert regional(state, 1)
    packing = state.packing()
    assert packing.placed == {0: 5, 1: 3}
    assert all(min(b.free) >= 0 for b in packing.blocks)
    assert sum(b.count * (4 - b.free[0]) for b in packing.blocks) == 5 + 6


def test_no_region_past_half_the_nodes_when_a_search_follows() -> None:
    """The three-node case again: its 2-node region is more than half of the nodes, so with
    `searched` (the exact search of all of them comes next) it is not tried."""
    items = {0: Item(0, 1, (1, 2)), 1: Item(0, 1, (2, 4)), 2: Item(0, 1, (1, 2))}
    state = _state([{0: 1, 1: 1}, {0: 1, 1: 1}, {0: 3}], items)
    before = (list(map(list, state.free)), [dict(c) for c in state.content], dict(state.placed))
    assert not regional(state, 1, searched=True)
    assert (state.free, state.content, state.placed) == before
    assert regional(state, 1, searched=False)


def test_a_region_before_the_per_node_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """On hpc-r17-2/cpu (31 nodes: the last step's exact tries apply) the member that only
    a re-packing takes is taken by a region, and the per-node search of the whole partition,
    which would come next, is not run (bench L seed 0: 0.18 s each time, undecided)."""
    greedy = importlib.import_module("router.solve.greedy")
    calls: list[tuple[str, bool]] = []
    per_node, real = greedy._per_node, region.regional

    def counted_search(cap: Capacity, entries: list[Entry]) -> tuple[Packing | None, bool]:
        found: tuple[Packing | None, bool] = per_node(cap, entries)
        calls.append(("per_node", found[0] is not None))
        return found

    def counted_region(
        state: Nodes,
        key: int,
        exact: bool = True,
        searched: bool = False,
        retry: region.Retry | None = None,
    ) -> bool:
        took = real(state, key, exact=exact, searched=searched, retry=retry)
        calls.append(("region", took))
        return took

    monkeypatch.setattr(greedy, "_per_node", counted_search)
    monkeypatch.setattr(region, "regional", counted_region)
    placed, falsely, errors, *_ = judge_built(planned(DATA / "XL0-hpc-r17-2-cpu.json").built)
    assert calls == [("region", True)]
    assert falsely == 0 and errors == []
    assert placed == 351


def test_regional_leaves_state_when_nothing_fits() -> None:
    items = {0: Item(0, 1, (3, 2)), 1: Item(0, 1, (2, 2))}
    state = _state([{0: 1}, {0: 1}, {0: 1}], items)
    before = (list(map(list, state.free)), [dict(c) for c in state.content], dict(state.placed))
    assert not regional(state, 1)  # 3 CPUs free in all, but every node holds a 3-CPU pod
    assert (state.free, state.content, state.placed) == before


AUDIT = Path(__file__).parent / "data" / "region" / "cpucomp-small-0"


def _audit_plan() -> router.Plan:
    return router.plan(router.load(AUDIT), workers=1)


def test_whole_node_members_get_idle_nodes() -> None:
    """The audit's cpucomp small seed 0 (data/region/README.md): exclusive jobs left out of
    36 nodes that all hold shared jobs; re-packing a few nodes frees whole ones for them.
    The node-pattern step (configs.py) takes them too since stop 31, so it is off here
    but for the last plan."""
    real, region.regional = region.regional, lambda *_, **__: False
    patterns, configs.repacked = configs.repacked, lambda *_: False
    try:
        before = len(_audit_plan().built.placements)
        region.regional = real
        built = _audit_plan().built
    finally:
        region.regional, configs.repacked = real, patterns
    placed, falsely, errors, _, undecided = judge_built(built)
    assert placed > before
    assert falsely == 0 and undecided == []
    assert errors == []
    exclusive = [q for q in built.placements if q.resources.whole_nodes]
    assert {q.workload.name for q in exclusive} >= {"c151", "c245"}
    placed, falsely, errors, _, undecided = judge_built(_audit_plan().built)  # all steps on
    assert placed >= len(built.placements) and falsely == 0 and errors == []
