"""Standalone reproducers of bench platforms' falsely unplaced CPU work, for solve/configs.py.

`python -m tests.solve.patterns_repro SIZE SEED TARGET...` plans `generate(SIZE, SEED)` (XL:
minutes and ~3 GB), then for each TARGET (a capacity component's target, "hpc-r2-4/cpu")
writes tests/solve/data/patterns/<size><seed>-<target>.json: the bench policy, an inventory of
that one partition (its cluster with no other partition) and the workloads that the plan put
there or left unplaced with a candidate there (names and fields as generated). On that
platform the same memory-bound mix meets the same nodes, in seconds instead of minutes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path
from typing import Any

import router
from router.bench.generator import Platform, generate
from router.bench.run import _parse
from router.evaluate.quota import usage
from router.solve import configs, cpsat, greedy
from router.solve.pack import Block, Packing

DATA = Path(__file__).parent / "data" / "patterns"
QUOTA = "limit cpus <= 98%"


def cut(platform: Platform, planned: router.Plan, target: str) -> dict[str, Any]:
    built = planned.built
    placed = {p.workload.name for p in built.placements}
    names = {p.workload.name for p in built.placements if p.target.id == target}
    for d in built.decisions:
        if d.workload.name not in placed and any(c.target.id == target for c in d.candidates):
            names.add(d.workload.name)
    cluster_name, part = target.split("/")
    cluster = next(c for c in platform.inventory["clusters"] if c["name"] == cluster_name)
    key = "partitions" if "partitions" in cluster else "node_pools"
    kept = {**cluster, key: [p for p in cluster[key] if p["name"] == part]}
    # The per-cluster CPU quota as it stood for this partition: 98% of the whole cluster's
    # CPUs less what the plan put on its other partitions.
    total = sum(p["nodes"] * p["cpus_per_node"] for p in cluster[key])
    others = sum(
        usage("cpus", p.resources, p.target)
        for p in built.placements
        if p.target.cluster == cluster_name and p.target.id != target
    )
    left = int(Fraction("0.98") * total) - others
    assert QUOTA in platform.policy
    return {
        "source": f"router.bench.generator.generate({platform.size!r}, {platform.seed}), {target}",
        "policy": platform.policy.replace(QUOTA, f"limit cpus <= {left}"),
        "inventory": {"clusters": [kept]},
        "workloads": [w for w in platform.workloads if w["name"] in names],
        # What the full plan placed there: the state the last fill starts from (planned()).
        "placed": sorted(p.workload.name for p in built.placements if p.target.id == target),
        # ... and on which nodes (node set, index per pod): that state's packing.
        "nodes": {
            p.workload.name: [list(n) for n in p.nodes]
            for p in built.placements
            if p.target.id == target
        },
    }


Nodes = dict[str, list[tuple[str, int]]]


def load(path: Path) -> tuple[router.Platform, Nodes]:
    """The reproducer's platform, and the nodes of what its full plan placed, by name."""
    data = json.loads(path.read_text())
    platform = router.Platform.from_objects(
        policy=data["policy"], inventory=data["inventory"], workloads=data["workloads"]
    )
    return platform, {k: [(s, i) for s, i in v] for k, v in data["nodes"].items()}


@contextmanager
def from_full_plan(placed: Nodes) -> Iterator[None]:
    """The last fill (greedy.solved_and_completed) starts from the counts and nodes of the
    full plan, not from what the small platform's own exact solve found: alone, the
    component is small enough to be solved exactly, which the same nodes inside XL's large
    components are not."""
    real = greedy.solved_and_completed

    def completed(
        agg: Any,
        counts: list[int],
        polish: frozenset[int] = frozenset(),
        parts: list[list[int]] | None = None,
        workers: int = 1,
        solve: Callable[[int], Any] | None = None,
    ) -> tuple[list[int], dict[int, Any], list[Any]]:
        # The levels are solved as in the plan (their values are reported), then replaced.
        got = [solve(k) for k in range(len(parts or []))] if solve is not None else []
        start = [0] * len(agg.variables)
        content: dict[tuple[int, str, int], dict[int, int]] = {}
        for g, group in enumerate(agg.groups):
            mine = [agg.routed[i].workload.name for i in group.members]
            held = [placed[n] for n in mine if n in placed]
            if not held:
                continue
            (v,) = agg.choices[g]  # one candidate target per class here
            start[v] = len(held)
            for pods in held:
                for s, i in pods:
                    at = content.setdefault((agg.cap_of[v], s, i), {})
                    at[v] = at.get(v, 0) + 1
        for ci in sorted({agg.cap_of[v] for v, n in enumerate(start) if n}):
            cap = agg.capacity[ci]
            p = Packing.fresh(cap)
            p.blocks = []
            for gi, grp in enumerate(cap.groups):
                for j, i in enumerate(grp.indices):
                    c = tuple(sorted(content.get((ci, grp.node_set, i), {}).items()))
                    free = list(grp.free)
                    for v, per in c:
                        d = agg.items[v].demand
                        free = [f - per * x for f, x in zip(free, d, strict=True)]
                    p.blocks.append(Block(gi, j, 1, tuple(free), grp.empty and not c, c))
            p.placed = {v: start[v] for v in agg.nodes.by_cap[ci] if start[v]}
            agg.nodes.remember(ci, start, p)
        counts[:] = start
        filled, packings, _ = real(agg, counts, frozenset(), parts, workers)
        return filled, packings, got

    # Solved as a large component (one level-1 solve, no rounds of cuts: its counts are
    # replaced anyway), the last fill without the polish that the full plan already had.
    small, cpsat.SMALL_COMPONENT = cpsat.SMALL_COMPONENT, 0
    greedy.solved_and_completed = completed
    try:
        yield
    finally:
        greedy.solved_and_completed = real
        cpsat.SMALL_COMPONENT = small


def planned(path: Path, workers: int = 1) -> router.Plan:
    """The reproducer planned from its full plan's state (from_full_plan)."""
    platform, placed = load(path)
    with from_full_plan(placed):
        return router.plan(platform, workers=workers, share_candidates=True)


def main(argv: list[str]) -> None:
    size, seed, targets = argv[0], int(argv[1]), argv[2:]
    platform = generate(size, seed)
    # The state that the last fill reaches without the pattern step: what it must improve on.
    real, configs.repacked = configs.repacked, lambda *_: False
    try:
        planned = router.plan(
            _parse(platform, platform.workloads), workers=2, share_candidates=True
        )
    finally:
        configs.repacked = real
    DATA.mkdir(parents=True, exist_ok=True)
    for t in targets:
        out = DATA / f"{size}{seed}-{t.replace('/', '-')}.json"
        data = cut(platform, planned, t)
        out.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")
        print(out, len(data["workloads"]), "workloads")


if __name__ == "__main__":
    main(sys.argv[1:])
