"""solve/pack.py on hand-made nodes: the exact packing and the vector-aware re-packing."""

from __future__ import annotations

import pytest

from router.solve.nodes import Capacity, Item, NodeGroup
from router.solve.pack import Entry, Packing, balanced, best_fit, first_fit, pack, plain_first_fit

SETS = frozenset({"k"})


def _cap(nodes: int, free: tuple[int, ...]) -> Capacity:
    group = NodeGroup("k", nodes, free, True, tuple(range(nodes)))
    return Capacity("k", ("gpus", "cpus", "memory"), free, [group], {"k": SETS})


def _within(p: Packing, entries: list[Entry]) -> bool:
    """Every node of the packing holds what its content says and stays within its node."""
    demand = {e.key: e.item.demand for e in entries}
    for b in p.blocks:
        used = [0] * len(b.free)
        for key, per in b.content:
            used = [u + per * d for u, d in zip(used, demand[key], strict=True)]
        full = p.cap.groups[b.group].free
        if any(f < 0 for f in b.free) or [f - u for f, u in zip(full, used, strict=True)] != list(
            b.free
        ):
            return False
    return True


@pytest.mark.parametrize(
    ("first", "fits"),
    [
        # tests/pack/test_found.py's three services, twelve GPU pods on three 4-GPU nodes:
        # first fit strands a GPU in every order; the exact search read its bounds as 0
        # (ortools 9.15, domain[-1]) and "proved" it impossible.
        (4, True),
        (5, False),  # a thirteenth pod: proven not to fit
    ],
)
def test_the_exact_packing_of_gpu_pods_on_three_four_gpu_nodes(first: int, fits: bool) -> None:
    cap = _cap(3, (4, 96, 196608))
    entries = [
        Entry(0, Item(0, first, (1, 30, 16384)), SETS, 1),
        Entry(1, Item(0, 4, (1, 7, 4096)), SETS, 1),
        Entry(2, Item(0, 2, (2, 2, 40960)), SETS, 1),
    ]
    answer = pack(cap, entries)
    assert answer.proven
    if not fits:
        assert answer.packing is None
        return
    assert answer.packing is not None and _within(answer.packing, entries)
    assert answer.packing.placed == {0: 1, 1: 1, 2: 1}


def test_best_fit_packs_what_first_fit_strands_on_unlike_nodes() -> None:
    # A node with 7 CPUs free before one with 5: first fit puts the 5-CPU job on the first
    # and then has no room for the 3; best fit puts it where it leaves least (the 5).
    groups = [
        NodeGroup("k", 1, (0, 7, 64), False, (0,)),
        NodeGroup("k", 1, (0, 5, 64), False, (1,)),
    ]
    cap = Capacity("k", ("gpus", "cpus", "memory"), (0, 8, 64), groups, {"k": SETS})
    entries = [Entry(k, Item(0, 1, (0, c, 1)), SETS, 1) for k, c in enumerate((5, 4, 3))]
    assert first_fit(cap, entries) is None
    got = best_fit(cap, entries)
    assert got is not None and _within(got, entries)
    assert got.placed == {0: 1, 1: 1, 2: 1}
    assert got.nodes_of(0) == [("k", 1)] and sorted(got.nodes_of(1) + got.nodes_of(2)) == [
        ("k", 0),
        ("k", 0),
    ]
    # One CPU more than the nodes have: best fit says so (nothing half placed).
    assert best_fit(cap, [*entries, Entry(3, Item(0, 1, (0, 1, 1)), SETS, 1)]) is None


def test_best_fit_fills_a_node_with_identical_pods_before_the_next() -> None:
    cap = _cap(3, (0, 10, 100))
    entries = [Entry(0, Item(0, 2, (0, 3, 10)), SETS, 2), Entry(1, Item(0, 1, (0, 4, 1)), SETS, 2)]
    got = best_fit(cap, entries)
    assert got is not None and _within(got, entries)
    # The 4-CPU jobs first, both on the node the first took (2 CPUs left there); then the
    # four pods of 3 CPUs: three on the next node (9 of 10), one on the last.
    assert got.nodes_of(1) == [("k", 0)] * 2
    assert got.nodes_of(0) == [("k", 1)] * 3 + [("k", 2)]
    assert got.placed == {0: 2, 1: 2}


def test_balanced_packs_what_plain_first_fit_strands() -> None:
    # Two nodes of 16 CPUs and 64 GiB: CPU-first (and memory-first) first fit strands one
    # job; best fit that keeps nodes balanced packs all four (10+3 CPUs, 4+9 CPUs).
    cap = _cap(2, (0, 16, 64))
    jobs = [(4, 17), (10, 2), (3, 38), (9, 28)]
    entries = [Entry(k, Item(0, 1, (0, c, m)), SETS, 1) for k, (c, m) in enumerate(jobs)]
    assert plain_first_fit(cap, entries) is None
    got = balanced(cap, entries, [], lambda k: True, lambda k: None, aligned=False)
    assert got is not None
    packing, added = got
    assert added == [] and packing.placed == {0: 1, 1: 1, 2: 1, 3: 1}
    assert _within(packing, entries)


def test_balanced_adds_the_extra_members_that_fit_and_asks_before_each() -> None:
    cap = _cap(2, (0, 16, 64))
    jobs = [(4, 17), (10, 2), (3, 38)]
    must = [Entry(k, Item(0, 1, (0, c, m)), SETS, 1) for k, (c, m) in enumerate(jobs)]
    extra = [(3, Item(0, 1, (0, 9, 28)), SETS), (4, Item(0, 1, (0, 1, 1)), SETS)]
    asked: list[int] = []
    went: list[int] = []

    def allow(k: int) -> bool:
        asked.append(k)
        return k != 4  # a quota full for key 4

    got = balanced(cap, must, extra, allow, went.append, aligned=False)
    assert got is not None
    packing, added = got
    assert added == [3] == went and asked == [3, 4]
    assert packing.placed == {0: 1, 1: 1, 2: 1, 3: 1}


def test_balanced_gives_up_when_what_is_placed_does_not_fit() -> None:
    cap = _cap(1, (0, 16, 64))
    must = [Entry(0, Item(0, 3, (0, 6, 1)), SETS, 1)]
    assert balanced(cap, must, [], lambda k: True, lambda k: None, aligned=True) is None


def test_the_last_fill_re_packs_a_partition_to_add_a_job_first_fit_strands() -> None:
    import router
    from router.solve.greedy import completed

    part = {"name": "cpu", "nodes": 3, "cpus_per_node": 16, "memory_per_node": "64GiB"}
    inventory = {"clusters": [{"name": "hpc", "backend": "slurm", "partitions": [part]}]}
    jobs = [(6, 33), (3, 20), (4, 48), (8, 5), (5, 17), (2, 13), (11, 37)]
    workloads = [
        {"name": f"j{k}", "kind": "batch", "cpus": c, "memory": f"{m}GiB", "command": "run",
         "image": "ghcr.io/acme/x:1"}
        for k, (c, m) in enumerate(jobs)
    ]  # fmt: skip
    p = router.Platform.from_objects(
        policy="rule all:\n  route slurm\n", inventory=inventory, workloads=workloads
    )
    agg = router.plan(p, workers=1).built.problem.aggregate
    assert agg is not None
    var = {
        agg.routed[agg.groups[g].members[0]].workload.name: v
        for v, (g, _) in enumerate(agg.variables)
    }
    start = [0] * len(agg.variables)
    for k in (0, 1, 2, 3, 4, 6):  # what first fit packs, leaving no room for j5 beside
        start[var[f"j{k}"]] = 1
    counts, packings = completed(agg, start)
    assert counts[var["j5"]] == 1 and sum(counts) == 7
    (packing,) = packings.values()
    entries = [Entry(v, agg.items[v], agg.allowed[v], counts[v]) for v in range(len(counts))]
    assert _within(packing, entries) and packing.placed == {v: 1 for v in range(7)}
