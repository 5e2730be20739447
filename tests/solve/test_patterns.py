"""solve/patterns.py on hand-made identical nodes: the last step's packing by node patterns."""

from __future__ import annotations

from typing import Any

import pytest

from router.solve.nodes import Capacity, Item, NodeGroup
from router.solve.pack import Entry, Packing, plain_first_fit
from router.solve.patterns import maximal, pattern_packing

SETS = frozenset({"k"})


def _cap(groups: list[NodeGroup]) -> Capacity:
    return Capacity("k", ("gpus", "cpus", "memory"), groups[0].free, groups, {"k": SETS})


def _nodes(count: int, free: tuple[int, ...], node_set: str = "k") -> NodeGroup:
    return NodeGroup(node_set, count, free, True, tuple(range(count)))


def _within(p: Packing, entries: list[Entry]) -> bool:
    """Every node holds what its content says within its free amounts; a whole-node member's
    node holds nothing else and has nothing left."""
    demand = {e.key: e.item.demand for e in entries}
    for b in p.blocks:
        if any(per < 0 for _, per in b.content):
            if len(b.content) != 1 or any(b.free):
                return False
            continue
        used = [0] * len(b.free)
        for key, per in b.content:
            used = [u + per * d for u, d in zip(used, demand[key], strict=True)]
        full = p.cap.groups[b.group].free
        if any(f < 0 for f in b.free):
            return False
        if [f - u for f, u in zip(full, used, strict=True)] != list(b.free):
            return False
    return True


def test_maximal_patterns_are_those_no_pod_can_be_added_to() -> None:
    # One node of 10 CPUs: pods of 6 and of 3 CPUs (at most 2 of each): 6+3, and 3+3.
    got = maximal((0, 10, 100), [(0, 6, 1), (0, 3, 1)], [2, 2])
    assert got == [(1, 1), (0, 2)]


def test_patterns_pack_what_plain_first_fit_strands() -> None:
    # Two nodes of 16 CPUs and 64 GiB (tests/solve/test_pack.py): first fit by CPUs or by
    # memory strands one job; 10+3 CPUs and 4+9 CPUs pack.
    cap = _cap([_nodes(2, (0, 16, 64))])
    jobs = [(4, 17), (10, 2), (3, 38), (9, 28)]
    entries = [Entry(k, Item(0, 1, (0, c, m)), SETS, 1) for k, (c, m) in enumerate(jobs)]
    assert plain_first_fit(cap, entries) is None
    answer = pattern_packing(cap, entries, 1.0)
    assert answer is not None and answer.packing is not None and answer.proven
    assert answer.packing.placed == {0: 1, 1: 1, 2: 1, 3: 1}
    assert _within(answer.packing, entries)
    assert sum(b.count for b in answer.packing.blocks) == 2


def test_pods_of_one_kind_from_several_entries_and_whole_nodes() -> None:
    # Four nodes: one whole-node job takes one; three services' pods of one kind (2 + 3 + 4
    # pods of 5 CPUs) fill the other three at 3 a node.
    cap = _cap([_nodes(4, (0, 16, 64))])
    pod = (0, 5, 10)
    entries = [
        Entry(7, Item(1, 0, (0, 0, 0)), SETS, 1),
        Entry(1, Item(0, 2, pod), SETS, 1),
        Entry(2, Item(0, 3, pod), SETS, 1),
        Entry(3, Item(0, 4, pod), SETS, 1),
    ]
    answer = pattern_packing(cap, entries, 1.0)
    assert answer is not None and answer.packing is not None
    p = answer.packing
    assert p.placed == {7: 1, 1: 1, 2: 1, 3: 1}
    assert _within(p, entries)
    assert dict(p.blocks[0].content) == {7: -1}
    pods = {k: len(p.nodes_of(k)) for k in (1, 2, 3)}
    assert pods == {1: 2, 2: 3, 3: 4}
    assert all(node != p.nodes_of(7)[0] for k in (1, 2, 3) for node in p.nodes_of(k))


def test_a_packing_that_the_totals_admit_is_proven_impossible() -> None:
    # Three pods of 6 CPUs and 6 GiB on two nodes of 10 and 10: 18 of 20 in total, but no
    # node holds two.
    cap = _cap([_nodes(2, (0, 10, 10))])
    entries = [Entry(0, Item(0, 3, (0, 6, 6)), SETS, 1)]
    answer = pattern_packing(cap, entries, 1.0)
    assert answer is not None and answer.packing is None and answer.proven


def test_no_verdict_where_the_nodes_are_not_alike() -> None:
    entries = [Entry(0, Item(0, 1, (0, 6, 6)), SETS, 1)]
    two = _cap([_nodes(1, (0, 10, 10)), _nodes(1, (0, 8, 10))])
    assert pattern_packing(two, entries, 1.0) is None
    elsewhere = [Entry(0, Item(0, 1, (0, 6, 6)), frozenset({"other"}), 1)]
    assert pattern_packing(_cap([_nodes(2, (0, 10, 10))]), elsewhere, 1.0) is None


def _brute_maximal(
    free: tuple[int, ...], demands: list[tuple[int, ...]], most: list[int]
) -> list[tuple[int, ...]]:
    """Every pattern within free and most, kept when no kind can take one more; the search
    lists them depth first from the most of kind 0 down: lexicographically descending."""
    import itertools

    def fits(p: tuple[int, ...]) -> bool:
        return all(
            sum(n * d[a] for n, d in zip(p, demands, strict=True)) <= free[a]
            for a in range(len(free))
        )

    out = []
    for p in itertools.product(*(range(m + 1) for m in most)):
        if not fits(p):
            continue
        bigger = (tuple(n + (j == k) for j, n in enumerate(p)) for k in range(len(p)))
        if not any(q[k] <= most[k] and fits(q) for k, q in enumerate(bigger)):
            out.append(p)
    return sorted(out, reverse=True)


def test_maximal_lists_every_maximal_pattern_in_search_order() -> None:
    import random

    rng = random.Random(7)  # fixed cases: the order of the patterns is the CP model's
    for _ in range(300):
        dims = rng.randint(1, 3)
        free = tuple(rng.randint(0, 24) for _ in range(dims))
        picks = [tuple(rng.choice([0, 1, 2, 3, 5, 8]) for _ in range(dims)) for _ in range(4)]
        demands = sorted({d for d in picks if any(d)}, reverse=True)[: rng.randint(1, 4)]
        most = [rng.randint(0, 6) for _ in demands]
        assert maximal(free, demands, most) == _brute_maximal(free, demands, most)


def test_maximal_answers_again_from_what_it_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # The last step asks again for the same arguments (a component after each class it
    # could not top up): the search runs once, and a search past its steps stays None.
    from router.solve import patterns

    monkeypatch.setattr(patterns, "_FOUND", {})
    calls: list[int] = []
    real = patterns._maximal

    def counted(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(patterns, "_maximal", counted)
    free: tuple[int, ...] = (10, 10)
    demands: list[tuple[int, ...]] = [(3, 2), (1, 4)]
    most = [3, 2]
    first = maximal(free, demands, most)
    assert maximal(free, list(demands), list(most)) is first and len(calls) == 1
    assert first == _brute_maximal(free, demands, most)
    monkeypatch.setattr(patterns, "STEPS", 2)
    assert maximal((40, 40), [(1, 1), (2, 1)], [9, 9]) is None
    assert maximal((40, 40), [(1, 1), (2, 1)], [9, 9]) is None and len(calls) == 2
