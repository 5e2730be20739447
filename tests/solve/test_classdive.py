"""solve/classdive.py: pods packed onto nodes of several classes by diving on the LP of node
patterns per class, checked here by arithmetic on the patterns it returns; and the planner
using it (configs.by_classes in the last step) on the audit's running family, judged by
router's referee (router/plan/admits.py, which shares nothing with the solver)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from router.solve import classdive, configs
from tests.profiles import BOUNDED

# Two classes of two nodes each, (gpus, cpus, GiB) free: CPU-rich and memory-rich ones.
FREE = [(0, 40, 32), (0, 8, 160)]
NODES = [2, 2]
DIMS = (1, 2)
# Pods that fit only by pairing a CPU-heavy with a memory-light one and the reverse.
SHAPES: list[tuple[int, ...]] = [(0, 30, 8), (0, 6, 100), (0, 8, 24), (0, 2, 56)]


def _price(
    c: int, caps: dict[int, int], duals: dict[int, float], above: float
) -> tuple[float, classdive.Pattern] | None:
    return configs._priced(DIMS, FREE[c], SHAPES, caps, duals)


def _most() -> list[list[int]]:
    return [[min(f[a] // s[a] for a in DIMS) for s in SHAPES] for f in FREE]


def _valid(got: list[dict[classdive.Pattern, int]], demand: list[int]) -> bool:
    covered = [0] * len(SHAPES)
    for c, patterns in enumerate(got):
        if sum(patterns.values()) > NODES[c]:
            return False
        for p, n in patterns.items():
            for a in DIMS:
                if sum(k * SHAPES[s][a] for s, k in enumerate(p)) > FREE[c][a]:
                    return False
            for s, k in enumerate(p):
                covered[s] += k * n
    return all(x >= d for x, d in zip(covered, demand, strict=True))


def test_pods_over_two_classes_pack_and_too_many_do_not() -> None:
    """2 CPU-heavy, 2 memory-heavy and a few small pods over a CPU-rich and a memory-rich
    class: the dive packs them (checked here); one more memory-heavy pod (2 x 160 GiB of
    the memory-rich nodes and 32 GiB on the others cannot hold 3 of 100 GiB) it refuses."""
    demand = [2, 2, 2, 2]
    got = classdive.packed(demand, NODES, _most(), set(), [True, True], [[], []], _price, [50])
    assert got is not None and _valid(got, demand)
    more = [2, 3, 2, 2]
    none = classdive.packed(more, NODES, _most(), set(), [True, True], [[], []], _price, [50])
    assert none is None


def test_a_whole_node_shape_takes_an_idle_node_alone() -> None:
    """A whole-node shape (one node alone, idle classes only) beside pods: its node holds
    nothing else, and it goes where nothing runs."""
    shapes = [*SHAPES, (0, 0, 0)]
    most = [[*row, int(idle)] for row, idle in zip(_most(), [False, True], strict=True)]
    demand = [1, 1, 0, 0, 1]

    def price(
        c: int, caps: dict[int, int], duals: dict[int, float], above: float
    ) -> tuple[float, classdive.Pattern] | None:
        return configs._priced(DIMS, FREE[c], shapes, caps, duals)

    got = classdive.packed(demand, NODES, most, {4}, [False, True], [[], []], price, [50])
    assert got is not None
    whole = [(c, p) for c, ps in enumerate(got) for p in ps if p[4]]
    assert whole and all(c == 1 and sum(p) == 1 for c, p in whole)


def test_whole_columns_are_fixed_at_once() -> None:
    """20 classes of one node each, one pod a node: the LP's z are all whole, and the dive
    takes them in one step (1 LP), not a class a step (20)."""
    free = [(0, 10 + c, 10) for c in range(20)]  # 20 classes: each its own free CPUs
    shapes: list[tuple[int, ...]] = [(0, 10, 10)]

    def price(
        c: int, caps: dict[int, int], duals: dict[int, float], above: float
    ) -> tuple[float, classdive.Pattern] | None:
        return configs._priced(DIMS, free[c], shapes, caps, duals)

    most = [[1] for _ in free]
    lps = [50]
    got = classdive.packed([20], [1] * 20, most, set(), [True] * 20, [[]] * 20, price, lps)
    assert got is not None and all(sum(ps.values()) == 1 for ps in got)
    assert lps == [49], lps


def test_a_try_started_from_the_last_ones_columns_prices_less() -> None:
    """`kept` receives the LP's columns; given back as `start` (what the last step does
    from one try to the next, configs.Carried), the next try with one pod more packs as
    well (checked here) and asks the knapsack for fewer columns."""
    asked: list[int] = []

    def price(
        c: int, caps: dict[int, int], duals: dict[int, float], above: float
    ) -> tuple[float, classdive.Pattern] | None:
        asked.append(c)
        return _price(c, caps, duals, above)

    kept: list[tuple[int, classdive.Pattern]] = []
    first = classdive.packed(
        [2, 2, 1, 1], NODES, _most(), set(), [True] * 2, [[], []], price, [50], kept
    )
    assert first is not None and _valid(first, [2, 2, 1, 1]) and kept
    cold = len(asked)
    start: list[list[classdive.Pattern]] = [[p for c, p in kept if c == k] for k in range(2)]
    asked.clear()
    demand = [2, 2, 2, 1]
    warm = classdive.packed(demand, NODES, _most(), set(), [True] * 2, start, price, [50])
    assert warm is not None and _valid(warm, demand)
    assert len(asked) < cold, (len(asked), cold)


@settings(BOUNDED, max_examples=80)
@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 200), st.integers(0, 4), st.floats(0.01, 9)),
        min_size=1,
        max_size=6,
    ),
    st.tuples(st.integers(1, 96), st.integers(1, 512)),
)
def test_the_worth_bound_is_never_below_the_knapsacks_best(
    items: list[tuple[int, int, int, float]], room: tuple[int, int]
) -> None:
    """configs._worth_bound (the Lagrangian bound that spares the exact knapsack of a
    class whose best cannot beat its node's worth): at least what _priced finds."""
    shapes: list[tuple[int, ...]] = [(0, cpus, mem) for cpus, mem, _, _ in items]
    caps = {s: n for s, (_, _, n, _) in enumerate(items)}
    duals = {s: d for s, (_, _, _, d) in enumerate(items)}
    free = (0, *room)
    best = configs._priced(DIMS, free, shapes, caps, duals)
    bound = configs._worth_bound(DIMS, free, shapes, caps, duals)
    assert bound >= (best[0] if best else 0.0) - 1e-9


def test_the_worth_bound_of_one_axis_is_the_fractional_knapsack() -> None:
    """Memory never binds: the bound is CPUs' fractional knapsack (24 + 16 of the 40 CPUs:
    3 + 16/12 x 2), below the sum over the caps (5, its value at λ = 0)."""
    shapes: list[tuple[int, ...]] = [(0, 8, 1), (0, 12, 1)]
    bound = configs._worth_bound(DIMS, (0, 40, 512), shapes, {0: 3, 1: 2}, {0: 1.0, 1: 1.0})
    assert abs(bound - (3 + 16 / 12)) < 1e-9, bound


def test_the_running_family_leaves_out_nothing_the_referee_re_packs(tmp_path: Path) -> None:
    """The audit's running family at its CI size, seed 1 (hpc/p0 under running work: nodes
    of many classes, 40-odd job shapes): before the dive over classes, router's referee
    re-packed 5 of the jobs left out (w119, w126, w151, w153, w49) one at a time; now the
    planner takes what fits and the referee, asked about those, admits none."""
    import router
    from router.plan.admits import referee
    from tests.pack.audit import build
    from tests.pack.audit_parts import write

    write(build("running", "ci", 1), tmp_path / "p")
    planned = router.plan(router.load(tmp_path / "p"), workers=1, share_candidates=True)
    i = planned.built.inputs
    placed = {p.workload.name for p in planned.built.placements}
    assert len(placed) >= 139  # 138 before
    asked = {"w119", "w126", "w151", "w153", "w49"}
    judged = referee(
        i.policy,
        i.inventory,
        [w for w in i.workloads if w.name in placed | asked],
        planned.built.placements,
        i.running,
    )
    assert judged.admitted == [] and judged.undecided == []
