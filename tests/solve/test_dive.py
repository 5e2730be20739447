"""solve/dive.py: pod counts packed onto identical nodes by diving on the node-pattern LP,
checked here by arithmetic on the patterns it returns (nothing of dive.py re-used)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from router.solve import configs, dive

# One node: no GPUs, 48 CPUs, 192 GiB (in GiB); shapes as (gpus, cpus, GiB) per pod.
FREE = (0, 48, 192)
DIMS = (1, 2)
SHAPES: list[tuple[int, ...]] = [(0, 1, 150), (0, 32, 16), (0, 4, 96), (0, 16, 8)]


def _price(caps: dict[int, int], duals: dict[int, float]) -> tuple[float, dive.Pattern] | None:
    return configs._priced(DIMS, FREE, SHAPES, caps, duals)


def _listed(caps: dict[int, int]) -> list[dive.Pattern] | None:
    flat = [tuple(s[a] for a in DIMS) for s in SHAPES]
    return configs._maximal(tuple(FREE[a] for a in DIMS), flat, sorted(caps), caps, [2_000])


def _most() -> list[int]:
    return [min(FREE[a] // s[a] for a in DIMS) for s in SHAPES]


def _valid(
    got: list[tuple[dive.Pattern, int]],
    demand: list[int],
    nodes: int,
    shapes: list[tuple[int, ...]] = SHAPES,
    free: tuple[int, ...] = FREE,
    dims: tuple[int, ...] = DIMS,
) -> bool:
    """At most `nodes` nodes, each pattern within one node, every shape's demand covered."""
    if sum(n for _, n in got) > nodes:
        return False
    for p, _ in got:
        for a in dims:
            if sum(k * s[a] for k, s in zip(p, shapes, strict=True)) > free[a]:
                return False
    held = [sum(p[s] * n for p, n in got) for s in range(len(shapes))]
    return all(h >= d for h, d in zip(held, demand, strict=True))


def test_a_tight_mix_is_packed() -> None:
    """Counts made from a packing of 12 nodes: 8 × (a 150-GiB pod, a 32-CPU pod), 2 × (two
    96-GiB pods), 2 × (a 32-CPU pod, a 16-CPU pod); the dive finds one as small."""
    demand = [8, 10, 4, 2]
    got = dive.packed(demand, 12, _most(), set(), [], _price, _listed, [1_000])
    assert got is not None and _valid(got, demand, 12), got


def test_past_the_lp_it_says_no() -> None:
    """Eleven 150-GiB pods on ten nodes: no node holds two (300 > 192)."""
    assert dive.packed([11, 0, 0, 0], 10, _most(), set(), [], _price, _listed, [1_000]) is None


def test_a_whole_node_shape_takes_its_own_pattern_only() -> None:
    """Shape 1 as a whole-node member: 3 of them take 3 of 6 nodes, the 3 left hold 9 pods
    of 16 CPUs (3 to a node), and a tenth does not fit."""
    whole = {1}
    alone: list[dive.Pattern] = [(0, 1, 0, 0)]
    most = _most()
    most[1] = 0
    ok = dive.packed([0, 3, 0, 9], 6, most, whole, list(alone), _price, _listed, [1_000])
    assert ok is not None and _valid(ok, [0, 3, 0, 9], 6), ok
    assert all(p == alone[0] or p[1] == 0 for p, _ in ok)  # a whole node holds nothing else
    assert dive.packed([0, 3, 0, 10], 6, most, whole, list(alone), _price, _listed, [1_000]) is None


def test_the_dive_alone_packs_a_larger_mix() -> None:
    """The same mix five times over, with no pattern listing (the dive's LPs to the end):
    58 nodes (the construction's 60 less two its patterns waste)."""
    demand = [40, 50, 20, 10]
    got = dive.packed(demand, 58, _most(), set(), [], _price, lambda caps: None, [1_000])
    assert got is not None and _valid(got, demand, 58), got


def test_a_dive_over_more_nodes_than_its_steps_back() -> None:
    """The first one-more dive on awkward medium seed 1's k8s/k2 (75 nodes, 73 shapes, 270
    pods and one more; tests/solve/data): the LP's z are mostly below 1, so the dive takes
    one node a step, and a budget of 40 steps in all ended it before the nodes did."""
    doc = json.loads((Path(__file__).parent / "data" / "dive-awkward-m1-k2.json").read_text())
    free, dims = tuple(doc["free"]), tuple(doc["dims"])
    shapes = [tuple(s) for s in doc["shapes"]]
    whole = set(doc["whole"])
    flat = [tuple(s[a] for a in dims) for s in shapes]

    def price(caps: dict[int, int], duals: dict[int, float]) -> tuple[float, dive.Pattern] | None:
        quick = configs._priced_greedy(dims, free, shapes, caps, duals)
        if quick is not None and quick[0] > 1 + dive.EPS:
            return quick
        return configs._priced(dims, free, shapes, caps, duals)

    def listed(caps: dict[int, int]) -> list[dive.Pattern] | None:
        if len(caps) > configs.REST_SHAPES:
            return None
        at = tuple(free[a] for a in dims)
        return configs._maximal(at, flat, sorted(caps), caps, [2_000], most=300)

    demand, nodes = doc["demand"], doc["nodes"]
    start = [tuple(p) for p in doc["start"]]
    got = dive.packed(demand, nodes, doc["most"], whole, start, price, listed, [1_000], 300)
    assert got is not None and _valid(got, demand, nodes, shapes, free, dims)
    # A whole node holds nothing else.
    assert all(not any(p[s] for s in whole) or sum(p) == 1 for p, _ in got)


def _distinct_jobs() -> tuple[list[tuple[int, ...]], tuple[int, ...]]:
    """100 jobs of distinct sizes, 2-3 to a node of 97 CPUs and 1,000 units of memory."""
    rng = random.Random(3)
    return [(0, rng.randint(25, 60), rng.randint(250, 600)) for _ in range(100)], (0, 97, 1000)


def test_a_batch_step_packs_where_most_z_are_below_one() -> None:
    """On 49 nodes (the LP asks 47.25), every z below 1: one node a step takes 46 LPs at
    least; from the columns of a converged LP (kept by a first dive), the batch step packs
    within 30, and `said` stays empty (the first LP fits)."""
    shapes, free = _distinct_jobs()

    def price(caps: dict[int, int], duals: dict[int, float]) -> tuple[float, dive.Pattern] | None:
        return configs._priced(DIMS, free, shapes, caps, duals)

    demand, most = [1] * len(shapes), [1] * len(shapes)
    kept: list[dive.Pattern] = []
    dive.packed(demand, 49, most, set(), [], price, lambda _: None, [5_000], 300, kept)
    assert len(kept) > len(shapes)  # the first LP's columns, priced in
    said: list[str] = []
    lps = [30]
    got = dive.packed(demand, 49, most, set(), kept, price, lambda _: None, lps, 300, None, said)
    assert got is not None and _valid(got, demand, 49, shapes, free), got
    assert said == [] and lps[0] >= 0


def test_said_tells_a_proof_from_an_lp_that_ran_out() -> None:
    """ "no" where the LP needs more nodes than there are (47.25 > 47), "open" where its
    pricing rounds ran out first: the caller may try the same member again from `kept`."""
    shapes, free = _distinct_jobs()

    def price(caps: dict[int, int], duals: dict[int, float]) -> tuple[float, dive.Pattern] | None:
        return configs._priced(DIMS, free, shapes, caps, duals)

    demand, most = [1] * len(shapes), [1] * len(shapes)
    said: list[str] = []
    none = dive.packed(demand, 47, most, set(), [], price, lambda _: None, [5_000], 300, None, said)
    assert none is None and said == ["no"]
    kept: list[dive.Pattern] = []
    few = dive.packed(demand, 49, most, set(), [], price, lambda _: None, [5_000], 5, kept, said)
    assert few is None and said == ["open"]
    assert len(kept) == len(shapes) + 5  # one column alone per job, and 5 priced in


def test_a_batch_never_takes_more_nodes_than_are_left() -> None:
    """Two columns of z 0.5 each on one node left: a batch of both would be two nodes."""
    z, left = [0.5, 0.5], [1, 1]
    assert dive._batch([(1, 0), (0, 1)], [0, 1], z, left, 1) == [(0, 1)]
    assert dive._batch([(1, 0), (0, 1)], [0, 1], z, left, 2) == [(0, 1), (1, 1)]


def _prime_jobs() -> tuple[list[tuple[int, ...]], tuple[int, ...]]:
    """30 jobs of distinct sizes, 2-3 to a node whose memory (in MiB, sizes of no common
    divisor) makes the pricing table too large: CP-SAT prices."""
    rng = random.Random(5)
    shapes: list[tuple[int, ...]] = [
        (0, rng.randint(25, 45), rng.randint(250_000, 450_000) | 1) for _ in range(30)
    ]
    return shapes, (0, 97, 999_983)


def test_cp_sat_pricing_tells_its_bound(monkeypatch: Any) -> None:
    """`upper` gets the worth found where CP-SAT proves it best, and a bound above it where
    CP-SAT stops at its limit (here one far too short)."""
    shapes, free = _prime_jobs()
    caps = dict.fromkeys(range(len(shapes)), 1)
    duals = {s: 0.3 + 0.01 * s for s in caps}
    upper = [0.0]
    best = configs._priced(DIMS, free, shapes, caps, duals, upper)
    assert best is not None and abs(upper[0] - best[0]) < 1e-9
    monkeypatch.setattr(configs, "LIMIT", 1e-9)
    short = configs._priced(DIMS, free, shapes, caps, duals, upper)
    assert upper[0] > best[0] + 1e-6
    assert short is None or short[0] <= best[0] + 1e-9


def test_an_lp_not_proven_optimal_never_says_no(monkeypatch: Any) -> None:
    """30 jobs that pack 2-3 a node onto 15 nodes, from columns of one job each (an LP of 30
    nodes). With CP-SAT stopped before it proves anything (most pricings find nothing),
    the pricing must not pass for converged: the bare knapsack, taken as converged where it
    finds nothing, says "no" here; the one-more dives' pricing does not (a "no" ends the
    tries of every member asking as much), and what the dive returns is a packing."""
    shapes, free = _prime_jobs()
    demand, most = [1] * len(shapes), [1] * len(shapes)
    monkeypatch.setattr(configs, "LIMIT", 1e-9)

    def bare(caps: dict[int, int], duals: dict[int, float]) -> tuple[float, dive.Pattern] | None:
        return configs._priced(DIMS, free, shapes, caps, duals)

    for price, says in ((bare, ["no"]), (configs._dive_price(DIMS, free, shapes, False), [])):
        verdict: list[str] = []
        got = dive.packed(
            demand, 15, most, set(), [], price, lambda _: None, [200], 5, None, verdict
        )
        assert verdict == says
        assert got is None or _valid(got, demand, 15, shapes, free, DIMS), got


def test_an_unproven_price_makes_the_value_farleys_bound() -> None:
    """A price that returns a column already in the LP with a worth of 2 (a bound it could
    not lower): the LP's value is halved, a lower bound whatever the true best pattern."""
    cols: list[dive.Pattern] = [(1, 0), (0, 1)]

    def price(caps: dict[int, int], duals: dict[int, float]) -> tuple[float, dive.Pattern]:
        return 2.0, (1, 0)

    got = dive._generated([4, 6], [9, 9], set(), cols, price, [10])
    assert got is not None and abs(got[0] - 5.0) < 1e-9  # the LP asks 10 nodes
