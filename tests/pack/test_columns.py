"""Column generation of node patterns (router/plan/columns.py) on many task types: an awkward
medium audit component of 120 identical nodes and 200 job shapes (tests/pack/data/README.md).
At 400 patterns an LP of that many types had not converged, so its bound proved nothing."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from router.plan import columns, patterns
from router.plan.packing import Node, Problem, Work
from router.plan.patterns import _seed, _types, lp_patterns, pattern_check

DATA = Path(__file__).parent / "data" / "awkward-m1-p0.json"


def problem(nodes: int) -> Problem:
    doc = json.loads(DATA.read_text())
    node = Node(*doc["node"])
    work = [
        Work(f"j{k}", "p0", count, 1, gpus, cpus, memory)
        for k, (gpus, cpus, memory, count) in enumerate(doc["jobs"])
    ]
    ids = [f"p0[{i}]" for i in range(nodes)]
    return Problem("p0", ids, [node] * nodes, {"p0": tuple(range(nodes))}, work)


def test_the_lp_converges_proves_fewer_nodes_short_and_is_made_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Priced until no pattern improves it, the LP of the 201 types is 120 (the node count)
    and Farley's bound meets it, where 400 exact knapsacks stopped at 120.64 and a bound of
    102. So 110, 115 and 119 nodes are "no" from the LP alone (no search; the patterns are
    too many to list). And that LP does not depend on the node count: a search over counts
    (packcheck.scale_out's) generates it once, where on awkward medium seed 2 three checks
    of one pool cost 22 s each."""
    columns._relaxed.cache_clear()
    calls: list[int] = []
    generate = columns._generate

    def counted(*args: Any) -> Any:
        calls.append(len(args[3]))  # the columns it starts from
        return generate(*args)

    monkeypatch.setattr(columns, "_generate", counted)
    verdicts = []
    for n in (110, 115, 119):
        p = problem(n)
        verdicts.append(pattern_check(p, p.work, 2.0, search=False))
    assert [v.packs if v else None for v in verdicts] == [False, False, False]
    assert len(calls) == 1
    cap, _, _, kinds = _types(p, p.work)
    assert len(kinds) == 201
    _, lp = columns._relaxed(cap, tuple(kinds), ())  # the one made above
    assert len(calls) == 1
    assert abs(lp.value - 120) < 1e-6
    assert lp.proof_needs == 120


def test_a_seed_of_the_components_own_lp_patterns_spares_the_generation() -> None:
    """The referee's re-pack asks one more job of a component: started from the LP patterns
    of the component's own work (patterns.lp_patterns, as Problem.seed), the LP with the job
    converges to the same bound in a few priced patterns, where it priced ~800 from scratch."""
    p = problem(120)
    asked = (0, 1, 187392)  # the job the referee asked (tests/pack/data/README.md)
    base = replace(p, work=[w for w in p.work if (w.gpus, w.cpus, w.memory) != asked])
    seed = lp_patterns(base)
    assert len(seed) > 500
    cap, _, keys, kinds = _types(p, p.work)
    fresh, cold = columns._relaxed(cap, tuple(kinds), ())  # made above, if run in order
    known = _seed(replace(p, seed=seed), keys)
    columns._relaxed.cache_clear()
    given, warm = columns._relaxed(cap, tuple(kinds), known)
    assert (cold.proof_needs, warm.proof_needs) == (120, 120)
    assert abs(cold.value - 120) < 1e-6 and abs(warm.value - 120) < 1e-6
    started = len(columns._start(cap, kinds))
    assert len(fresh) - started > 500  # priced in from scratch
    assert len(given) - started - len(known) < 50  # priced in beyond the seed


def test_seed_patterns_that_do_not_fit_the_nodes_are_dropped() -> None:
    """A seed is a hint: a pattern beyond the node's capacity (say, of other nodes) never
    joins the columns, whose patterns must all fit one node; one that fits does."""
    p = problem(10)
    p = replace(p, work=p.work[:30])  # 30 of the types: the LP in a fraction of the time
    cap, _, _, kinds = _types(p, p.work)

    def fits(pattern: dict[int, int]) -> bool:
        used = [sum(kinds[k].need[d] * n for k, n in pattern.items()) for d in range(len(cap))]
        return all(u <= c for u, c in zip(used, cap, strict=True))

    over = tuple((k, kinds[k].most) for k, kind in enumerate(kinds) if not kind.whole)
    small = ((0, 1), (1, 1))  # one task of each of two small types: no start column
    assert not fits(dict(over)) and fits(dict(small))
    columns._relaxed.cache_clear()
    cols, _ = columns._relaxed(cap, tuple(kinds), (over, small))
    assert all(fits(col) for col in cols)
    assert dict(small) in cols


def test_the_dive_takes_a_batch_where_most_z_are_below_one() -> None:
    """100 jobs of distinct sizes, 2-3 to a node (97 CPUs, 1,000 units of memory), on one
    node more than their LP asks (47.25 -> 49 nodes). Every z is below 1, so one node a
    step needs 46 steps and ran out of DIVE_STEPS (40); the batch step packs it, and the
    packing is checked here by arithmetic on its patterns."""
    rng = random.Random(3)
    cap = (0, 97, 1000)
    kinds = [
        columns.Kind((0, rng.randint(25, 60), rng.randint(250, 600)), 1, 1, False)
        for _ in range(100)
    ]
    columns._relaxed.cache_clear()
    _, lp = columns._relaxed(cap, tuple(kinds), ())
    nodes = math.ceil(lp.value - 1e-6) + 1
    assert nodes - columns.LAST_NODES > columns.DIVE_STEPS  # one node a step cannot do it
    got = columns.witness(cap, kinds, nodes)
    assert got is not None and len(got) <= nodes
    for pattern in got:
        used = [sum(kinds[k].need[d] * n for k, n in pattern.items()) for d in range(3)]
        assert all(u <= c for u, c in zip(used, cap, strict=True)), pattern
    assert all(sum(p.get(k, 0) for p in got) >= kind.demand for k, kind in enumerate(kinds))


def test_a_listing_that_gave_up_is_not_searched_again_with_a_type_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """40 small job types on a node of 97 CPUs: more maximal patterns than FEW, so the
    listing gives up; with a type more (the referee's next ask) it gives up again, and
    now without a search (maximal_patterns is not called). Types not holding those given
    up on are still searched."""
    rng = random.Random(5)
    cap = (0, 97, 1000)
    types = tuple(sorted(((0, rng.randint(3, 9), rng.randint(20, 90)), 4) for _ in range(40)))
    patterns._cached.cache_clear()
    patterns._TOO_MANY.clear()
    assert patterns._cached(cap, types, patterns.FEW) is None
    calls: list[int] = []
    real = patterns.maximal_patterns

    def counted(*args: Any) -> list[tuple[int, ...]] | None:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(patterns, "maximal_patterns", counted)
    more = tuple(sorted((*types, ((0, 11, 95), 2))))
    assert patterns._cached(cap, more, patterns.FEW) is None and calls == []
    few = types[:3]
    assert patterns._cached(cap, few, patterns.FEW) is not None and calls == [1]
