"""The last fill (greedy.completed) per solver component: in forked children when workers > 1,
in this process otherwise, and the same counts, packings and plan either way."""

from __future__ import annotations

import os
from typing import Any

import router
from router.solve.aggregate import Aggregate
from router.solve.decompose import components
from router.solve.greedy import _buckets, completed, solved_and_completed

# Three partitions that no job shape shares, so three solver components: wide CPU jobs fit
# only `many` (small memory), memory-heavy ones only `fat`, GPU jobs only `gpu`.
PARTS = [
    {"name": "fat", "nodes": 3, "cpus_per_node": 16, "memory_per_node": "256GiB"},
    {"name": "many", "nodes": 4, "cpus_per_node": 64, "memory_per_node": "32GiB"},
    {"name": "gpu", "nodes": 2, "cpus_per_node": 8, "memory_per_node": "16GiB",
     "gpus_per_node": 4, "gpu_type": "h100"},
]  # fmt: skip
SHAPES = [  # (cpus, memory GiB, gpus, how many)
    (4, 100, 0, 9),
    (6, 70, 0, 5),
    (20, 8, 0, 9),
    (28, 6, 0, 6),
    (2, 4, 1, 7),
    (3, 5, 2, 3),
]


def _platform() -> router.Platform:
    workloads: list[dict[str, Any]] = []
    for s, (cpus, mem, gpus, n) in enumerate(SHAPES):
        for i in range(n):
            workloads.append(
                {"name": f"s{s}-{i}", "kind": "batch", "cpus": cpus, "memory": f"{mem}GiB",
                 "gpus": gpus, "nodes": 1, "command": "run", "image": "ghcr.io/acme/x:1",
                 "priority": 1 + (s + i) % 3}
            )  # fmt: skip
    inventory = {"clusters": [{"name": "hpc", "backend": "slurm", "partitions": PARTS}]}
    return router.Platform.from_objects(
        policy="rule all:\n  route slurm\n", inventory=inventory, workloads=workloads
    )


def _aggregate() -> Aggregate:
    agg = router.plan(_platform(), workers=1).built.problem.aggregate
    assert agg is not None and agg.nodes is not None
    return agg


def _layout(packings: dict[int, Any]) -> list[tuple[int, list[Any], dict[int, int]]]:
    return [(ci, list(p.blocks), dict(p.placed)) for ci, p in packings.items()]


def test_the_platform_has_several_components_and_more_work_than_room() -> None:
    agg = _aggregate()
    assert len(components(agg)) == 3
    counts, _ = completed(agg, [0] * len(agg.variables))
    placed = sum(counts)
    assert 0 < placed < len(agg.routed)  # the fill decides who is left out


def test_forked_parts_give_what_the_parts_in_this_process_and_the_whole_give() -> None:
    agg = _aggregate()
    parts = [c.groups for c in components(agg)]
    polish = frozenset(g for c in components(agg) for g in c.groups)
    start = [0] * len(agg.variables)
    whole = completed(agg, list(start), polish)
    here = completed(agg, list(start), polish, parts, workers=1)
    for workers in (2, 4):
        forked = completed(agg, list(start), polish, parts, workers=workers)
        assert forked[0] == here[0] == whole[0]
        assert _layout(forked[1]) == _layout(here[1]) == _layout(whole[1])
    # Every component took members, so the children's results did come back.
    for c in components(agg):
        assert any(here[0][v] for v in c.variables)
    # And their packings are the Nodes' witnesses, here as in the children's case.
    for ci, pack in here[1].items():
        assert agg.nodes is not None
        assert agg.nodes.packs(ci, here[0]).packing == pack


def test_the_plan_is_the_same_whatever_the_worker_count() -> None:
    plans = []
    for workers in (1, 2, 4):
        built = router.plan(_platform(), workers=workers).built
        plans.append(
            sorted((p.workload.name, p.target.id, tuple(p.nodes)) for p in built.placements)
        )
    assert plans[0] == plans[1] == plans[2]
    assert {t for _, t, _ in plans[0]} == {"hpc/fat", "hpc/many", "hpc/gpu"}


def test_buckets_deal_every_part_once_largest_first() -> None:
    agg = _aggregate()
    parts = [c.groups for c in components(agg)]
    for workers in (1, 2, 3, 8):
        got = _buckets(agg, parts, workers)
        assert sorted(k for b in got for k in b) == list(range(len(parts)))
        assert len(got) == min(workers, len(parts))
        assert all(b == sorted(b) for b in got)


def test_each_part_is_solved_then_completed_in_the_process_that_completes_it() -> None:
    # `solve(k)` stands for the solver's levels (cpsat.py): it sets part k's counts to one
    # member on its first variable and returns k with the pid it ran in.
    agg = _aggregate()
    comps = components(agg)
    parts = [c.groups for c in comps]

    def solve(k: int) -> tuple[int, int]:
        first = min(comps[k].variables)
        counts[first] = 1
        return k, os.getpid()

    outcomes = []
    for workers in (1, 3):
        counts = [0] * len(agg.variables)
        filled, packings, got = solved_and_completed(
            agg, counts, frozenset(), parts, workers, solve
        )
        # Results in part order; with 3 workers, two parts were solved in children.
        assert [k for k, _ in got] == list(range(len(parts)))
        pids = {pid for _, pid in got}
        assert len(pids) == (1 if workers == 1 else 3)
        # `counts` holds every part's solved counts, even those solved in a child.
        assert [counts[min(c.variables)] for c in comps] == [1] * len(comps)
        assert sum(counts) == len(comps)
        # The fill started from them and only added members.
        assert all(f >= c for f, c in zip(filled, counts, strict=True))
        outcomes.append((filled, _layout(packings)))
    assert outcomes[0] == outcomes[1]
