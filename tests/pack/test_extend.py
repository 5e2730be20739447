"""Extending a packing of the rest (router/plan/packing.py `extend`), against brute force, and
the referee's bisection over how many units of one shape fit (router/plan/admits.py)."""

from __future__ import annotations

import random

import pytest

from router.plan.admits import _monotone
from router.plan.packing import Node, Problem, Work, check, check_assignment, extend
from tests.pack.test_packing import _brute, job, problem, random_work, replicas


def test_extend_moves_pods_off_the_roomiest_nodes_to_make_room() -> None:
    # 4 nodes of 10 CPUs, each half full with a 5-CPU pod: no node takes the 8-CPU pod beside
    # them, and first fit (biggest first) does; from the start, two 5-CPU pods move together.
    nodes = [Node(0, 10, 100)] * 4
    rest = [replicas("a", 4, 0, 5, 1)]
    p = problem(nodes, [*rest, replicas("new", 1, 0, 8, 1)])
    start = {"a": [[0], [1], [2], [3]]}
    found = extend(p, start)
    assert found is not None and check_assignment(p, found) == []
    assert found["new"] != [] and sorted(found) == ["a", "new"]
    # Not a packing of the rest: nothing to extend.
    assert extend(p, {"a": [[0], [0], [0], [1]]}) is None
    # Three 8-CPU pods cannot all come (two 5-CPU pods per node, one 8 per node: 5 of 4 nodes).
    more = problem(nodes, [*rest, replicas("new", 3, 0, 8, 1)])
    assert extend(more, start) is None and check(more).packs is False


def test_extend_only_returns_valid_packings_and_finds_many() -> None:
    """Small random problems (brute force decides them): the last work added to a packing
    of the rest. Whatever extend returns packs; on three nodes it finds most that do."""
    found = packs = 0
    for seed in range(120):
        rng = random.Random(9000 + seed)
        nodes = [
            Node(rng.choice([2, 4]), rng.choice([8, 12]), rng.choice([16, 32]), (("1g", 3),))
            for _ in range(rng.randint(2, 3))
        ]
        work = random_work(rng, lambda: 1)
        base = check(problem(nodes, work[:-1]))
        if not base.packs:
            continue
        p = problem(nodes, work)
        got = extend(p, base.assignment)
        truth = _brute(p)
        packs += truth
        if got is not None:
            assert check_assignment(p, got) == [] and truth, seed
            found += 1
    assert packs == 60 and found >= 30


def test_a_job_whose_nodes_must_be_distinct_is_extended_onto_distinct_nodes() -> None:
    # Node 3 is taken whole; a and b fill node 0's GPUs, so one of them moves to node 2.
    nodes = [Node(8, 64, 512)] * 4
    rest = [job("a", 1, 4, 8, 8), job("b", 1, 4, 8, 8), job("c", 1, 4, 8, 8)]
    rest.append(job("d", 1, 1, 1, 1, whole=True))
    p = problem(nodes, [*rest, job("new", 3, 4, 8, 8)])
    found = extend(p, {"a": [[0]], "b": [[0]], "c": [[1]], "d": [[3]]})
    assert found is not None and check_assignment(p, found) == []
    assert sorted(found["new"][0]) == [0, 1, 2]


@pytest.mark.parametrize("fit", [0, 1, 5, 17, 40])
def test_bisection_over_unit_counts_asks_few_and_gets_all(fit: int) -> None:
    counts = list(range(1, 41))
    truth: dict[int, bool | None] = {u: u <= fit for u in counts}
    asked: list[int] = []

    def probe(u: int) -> bool | None:
        asked.append(u)
        return truth[u]

    assert _monotone(counts, probe) == truth
    assert asked[0] == 1 and len(asked) <= 8  # the smallest first, then halving


def test_an_undecided_count_is_reported_and_splits_the_search() -> None:
    counts = [1, 2, 3, 4, 5, 6, 7, 8]
    truth: dict[int, bool | None] = {1: True, 2: True, 3: True, 4: None, 5: False}
    truth |= {6: False, 7: False, 8: False}
    asked: list[int] = []

    def probe(u: int) -> bool | None:
        asked.append(u)
        return truth[u]

    assert _monotone(counts, probe) == truth
    assert len(set(asked)) == len(asked)  # nothing asked twice


def test_problem_reach_limits_extend_to_the_targets_nodes() -> None:
    # Two targets on one component: the new pod reaches node 1 only, which is full.
    # Node 2 (t0's only) is full as well.
    nodes = [Node(0, 10, 100)] * 3
    work = [
        Work("a", "t0", 1, 1, 0, 10, 1),
        Work("z", "t0", 1, 1, 0, 10, 1),
        Work("new", "t1", 1, 1, 0, 4, 1),
    ]
    ids = ["n0", "n1", "n2"]
    p = Problem("c", ids, nodes, {"t0": (0, 1, 2), "t1": (1,)}, work)
    found = extend(p, {"a": [[1]], "z": [[2]]})
    assert found is not None and found["a"] == [[0]] and found["new"] == [[1]]
    blocked = Problem("c", ids, nodes, {"t0": (1, 2), "t1": (1,)}, work)
    assert extend(blocked, {"a": [[1]], "z": [[2]]}) is None
