"""solve/repair.py: one more member by CP-SAT's LNS from the plan's own packing.

The audit's platforms where it matters (justfit and mixed medium seed 1) are in
tests/pack/test_audit.py (A30, A31); these are the contract on small states.
"""

from __future__ import annotations

from router.solve.nodes import Item
from router.solve.pack import Packing
from router.solve.repair import repaired
from tests.solve.test_region import _state


def _per_node(p: Packing) -> list[tuple[tuple[int, ...], dict[int, int]]]:
    """(free, content) of each node, in node order."""
    out = []
    for b in sorted(p.blocks, key=lambda b: (b.group, b.lo)):
        out += [(b.free, dict(b.content))] * b.count
    return out


def _valid(p: Packing, items: dict[int, Item]) -> bool:
    """Every node within (4 CPUs, 8 GiB) with what it holds, and the free amounts right."""
    for free, content in _per_node(p):
        used = [sum(n * items[k].demand[a] for k, n in content.items()) for a in range(2)]
        if any(u > f for u, f in zip(used, (4, 8), strict=True)):
            return False
        if tuple(f - u for f, u in zip((4, 8), used, strict=True)) != free:
            return False
    return True


def test_a_member_fits_once_pods_trade_nodes() -> None:
    """Three nodes with 1 CPU free each; a (2, 4) pod fits once a (1, 2) pod moves off the
    third node onto another: every pod of the state kept, one more of key 1."""
    items = {0: Item(0, 1, (1, 2)), 1: Item(0, 1, (2, 4))}
    state = _state([{0: 1, 1: 1}, {0: 1, 1: 1}, {0: 3}], items)
    found, spent = repaired(state, 1)
    assert found is not None
    assert found.placed == {0: 5, 1: 3}
    assert _valid(found, items)
    assert sum(sum(c.values()) for _, c in _per_node(found)) == 8
    assert 0 < spent <= 1.0
    again, _ = repaired(_state([{0: 1, 1: 1}, {0: 1, 1: 1}, {0: 3}], items), 1)
    assert again is not None and _per_node(again) == _per_node(found)  # deterministic


def test_nothing_when_no_packing_holds_one_more() -> None:
    """3 CPUs free in all, but every node holds a 3-CPU pod: no (2, 2) pod fits however the
    pods move, and the state is left as it was."""
    items = {0: Item(0, 1, (3, 2)), 1: Item(0, 1, (2, 2))}
    state = _state([{0: 1}, {0: 1}, {0: 1}], items)
    before = (list(map(list, state.free)), [dict(c) for c in state.content], dict(state.placed))
    found, spent = repaired(state, 1, limit=0.2)
    assert found is None
    assert spent <= 0.2 + 0.05
    assert (state.free, state.content, state.placed) == before
