"""The last fill's moves (greedy.moved_up through completed) and Packing.remove, which they
take members off with."""

from __future__ import annotations

import random
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from router.solve.greedy import completed
from router.solve.nodes import Capacity, Item, NodeGroup
from router.solve.pack import Packing
from tests.profiles import BOUNDED
from tests.solve.handmade import Cls, aggregate, var

AXES = ("gpus", "cpus", "memory")


def cap(*groups: tuple[int, tuple[int, int, int], bool]) -> Capacity:
    """A component of one node set `s` with classes (count, free, idle)."""
    out, lo = [], 0
    for count, free, idle in groups:
        out.append(NodeGroup("s", count, free, idle, tuple(range(lo, lo + count))))
        lo += count
    return Capacity("s", AXES, (8, 64, 256), out, {"t": frozenset({"s"})})


def frees(p: Packing) -> list[tuple[int, ...]]:
    """Each node's free capacity, in node order."""
    return [b.free for b in sorted(p.blocks, key=lambda b: (b.group, b.lo)) for _ in range(b.count)]


def test_removing_pods_from_the_last_nodes_gives_back_what_placing_fewer_leaves() -> None:
    c, pod, s = cap((4, (8, 64, 256), True)), Item(0, 1, (0, 16, 32)), frozenset({"s"})
    p = Packing.fresh(c)
    assert p.place(1, pod, s, 10) == 10  # 4 + 4 + 2 pods on the first three nodes
    assert p.remove(1, pod, 3) == 3
    q = Packing.fresh(c)
    q.place(1, pod, s, 7)
    assert frees(p) == frees(q) and p.placed == q.placed == {1: 7}
    assert len(p.nodes_of(1)) == 7
    assert p.remove(1, pod, 99) == 7 and frees(p) == [(8, 64, 256)] * 4


def test_a_node_a_whole_job_leaves_is_idle_again() -> None:
    c, s = cap((2, (8, 64, 256), True)), frozenset({"s"})
    whole, pod = Item(1, 0, (0, 0, 0)), Item(0, 1, (0, 8, 8))
    p = Packing.fresh(c)
    assert p.place(1, whole, s, 2) == 2
    assert p.room(whole, s) == 0 and p.room(pod, s) == 0
    assert p.remove(1, whole, 1) == 1
    assert p.room(whole, s) == 1 and p.room(pod, s) == 8
    assert p.nodes_of(1) == [("s", 0)]


def test_a_node_with_running_work_never_becomes_idle() -> None:
    c, s = cap((1, (8, 32, 128), False)), frozenset({"s"})
    pod = Item(0, 1, (0, 8, 8))
    p = Packing.fresh(c)
    p.place(1, pod, s, 4)
    p.remove(1, pod, 4)
    assert [b.empty for b in p.blocks] == [False] and frees(p) == [(8, 32, 128)]


@settings(BOUNDED, max_examples=40)
@given(st.integers(0, 10_000))
def test_placing_and_removing_at_random_keeps_every_node_exact(seed: int) -> None:
    rng = random.Random(seed)
    c = cap((3, (8, 64, 256), True), (2, (4, 40, 100), False), (3, (8, 64, 256), True))
    s = frozenset({"s"})
    items = {
        1: Item(0, 1, (1, 8, 16)),
        2: Item(0, 2, (0, 12, 40)),
        3: Item(1, 0, (0, 0, 0)),
        4: Item(0, 1, (2, 4, 64)),
    }
    p, placed = Packing.fresh(c), {k: 0 for k in items}
    for _ in range(12):
        k = rng.choice(sorted(items))
        n = rng.randint(1, 4)
        if rng.random() < 0.6:
            placed[k] += p.place(k, items[k], s, n)
        else:
            placed[k] -= p.remove(k, items[k], n)
        assert {k: n for k, n in p.placed.items() if n} == {k: n for k, n in placed.items() if n}
        for b in p.blocks:
            g = c.groups[b.group]
            if any(per < 0 for _, per in b.content):
                assert b.free == (0, 0, 0) and len(b.content) == 1
                continue
            used = [0, 0, 0]
            for key, per in b.content:
                used = [u + per * d for u, d in zip(used, items[key].demand, strict=True)]
            assert b.free == tuple(f - u for f, u in zip(g.free, used, strict=True))
            assert min(b.free) >= 0 and b.empty == (g.empty and not b.content)
        for k, item in items.items():
            assert len(p.nodes_of(k)) == placed[k] * (item.whole or item.pods)


def test_the_last_fill_moves_members_up_to_their_primary_route_where_it_has_room() -> None:
    # Three members on their fallback t2; t1 (rank 0) has room for two of them.
    agg = aggregate([Cls(3, 5, [("t1", 0), ("t2", 1)])], {"t1": 2, "t2": 5})
    t1, t2 = var(agg, 0, "t1"), var(agg, 0, "t2")
    start = [0, 0]
    start[t2] = 3
    plain, _ = completed(agg, list(start))
    assert plain[t1] == 0 and plain[t2] == 3
    moved, _ = completed(agg, list(start), frozenset({0}))
    assert moved[t1] == 2 and moved[t2] == 1


def test_moves_respect_rows_shared_with_the_target_they_leave() -> None:
    # A quota over both targets, full: the move frees on t2 what it takes on t1, so it holds.
    agg = aggregate(
        [Cls(2, 5, [("t1", 0), ("t2", 1)])],
        {"t1": 9, "t2": 9},
        extra_rows=[([(0, "t1"), (0, "t2")], 2)],
    )
    t1, t2 = var(agg, 0, "t1"), var(agg, 0, "t2")
    start = [0, 0]
    start[t2] = 2
    moved, _ = completed(agg, list(start), frozenset({0}))
    assert moved[t1] == 2 and moved[t2] == 0
    for row in agg.rows:
        assert sum(c * moved[v] for c, v in row.terms) <= row.rhs


def test_a_member_at_its_previous_target_moves_only_for_a_better_rank() -> None:
    # Same rank, t1 preferred (`prefer` place 0 against 1): members move to t1, unless the
    # previous plan had them on t2 (stability comes before preference).
    for previous, expected in ((None, (2, 0)), ("t2", (0, 2))):
        agg = aggregate([Cls(2, 5, [("t1", 0), ("t2", 0)], previous=previous)], {"t1": 5, "t2": 5})
        group = agg.groups[0]
        group.candidates = [group.candidates[0], replace(group.candidates[1], pref=1)]
        t1, t2 = var(agg, 0, "t1"), var(agg, 0, "t2")
        start = [0, 0]
        start[t2] = 2
        moved, _ = completed(agg, list(start), frozenset({0}))
        assert (moved[t1], moved[t2]) == expected
