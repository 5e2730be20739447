"""Re-packs the referee left undecided at XL (bench seed 0, components hpc-r2-2/cpu and
hpc-r17-2/cpu: 427 (workload, target) pairs), now decided both ways by generated node patterns
(router/plan/columns.py): a "no" proved by the LP bound, a "yes" with a packing that
packcheck accepts. The job mixes are those components' own (CPUs, GiB) -> jobs, on identical
128-CPU, 512 GiB nodes; the per-node search alone leaves both undecided."""

from __future__ import annotations

from typing import Any

import router
from router.models.placement import Placement
from router.plan import columns
from router.plan.admits import CANDIDATE, Verdicts, referee, settle
from router.plan.packcheck import check_assignment, components, recorded, work_of
from router.plan.packing import Node, Problem, Work, check
from router.plan.patterns import pattern_check
from tests.pack.test_admits import job

NODE = Node(0, 128, 512 * 1024)
# 21 nodes, 2,686 of 2,688 CPUs used: one more (2 CPUs, 32 GiB) job fits the totals, not a node.
FULL = {(2, 8): 39, (2, 32): 26, (4, 16): 4, (4, 32): 247, (8, 8): 18, (16, 16): 2, (32, 32): 43}
# 31 nodes, 8 GiB short of full memory with one more (2 CPUs, 64 GiB) job: it fits, re-packed.
ROOM = {
    (2, 8): 19,
    (2, 32): 7,
    (2, 64): 54,
    (4, 16): 4,
    (4, 64): 33,
    (8, 8): 16,
    (8, 16): 34,
    (8, 32): 1,
    (8, 64): 117,
    (16, 8): 8,
    (16, 32): 39,
    (32, 16): 18,
}
CASES = {"a": (21, FULL, (2, 32), False), "b": (31, ROOM, (2, 64), True)}


def problem(nodes: int, mix: dict[tuple[int, int], int], extra: tuple[int, int]) -> Problem:
    work = [
        Work(f"{c}-{g}-{k}", "t", 1, 1, 0, c, g * 1024)
        for (c, g), n in sorted(mix.items())
        for k in range(n)
    ]
    work.append(Work("extra", "t", 1, 1, 0, extra[0], extra[1] * 1024))
    return Problem(
        "t", [f"n{i}" for i in range(nodes)], [NODE] * nodes, {"t": tuple(range(nodes))}, work
    )


def test_the_checker_decides_what_the_per_node_search_does_not() -> None:
    for nodes, mix, extra, packs in CASES.values():
        p = problem(nodes, mix, extra)
        assert check(p, 0.5, patterns=False).packs is None  # the search alone: undecided
        verdict = check(p, 2.0)
        assert verdict.packs is packs, (nodes, extra)
        if packs:
            from router.plan.packing import check_assignment as valid

            assert valid(p, verdict.assignment) == []
        else:
            assert "no assignment onto its 21 nodes exists" in verdict.reason
        # The same verdict from node patterns alone, without the search (cheap: the LP).
        alone = pattern_check(p, p.work, 2.0, search=False)
        assert alone is not None and alone.packs is packs


def test_farleys_bound_is_exact_in_integers() -> None:
    """The proof of "no" holds for any duals: 3 tasks of 60 CPUs on 128-CPU nodes need 2
    nodes (LP 1.5 > 1), and with one node's room for two the LP says 1.5, so 2 nodes pack
    and 1 does not, whatever GLOP's rounding."""
    kinds = [columns.Kind((0, 60, 1), 2, 3, False)]
    few = pattern_check.__globals__["_few"]
    assert columns.decide((0, 128, 10), kinds, 1, 1.0, few).packs is False
    got = columns.decide((0, 128, 10), kinds, 2, 1.0, few)
    assert got.packs is True and sum(p.get(0, 0) for p in got.nodes) >= 3 and len(got.nodes) <= 2


def platform() -> tuple[router.Platform, dict[str, list[tuple[str, int]]], list[str]]:
    """Both cases as Slurm partitions a (21 nodes) and b (31 nodes), each mix placed on the
    nodes of a packing the checker finds, one extra job unplaced on each."""
    parts = [
        {"name": s, "nodes": n, "cpus_per_node": 128, "memory_per_node": "512GiB"}
        for s, (n, *_) in CASES.items()
    ]
    inv = {"clusters": [{"name": "hpc", "backend": "slurm", "partitions": parts}]}
    policy = "rule all:\n  route slurm where name == workload.labels.part\n"
    jobs: list[dict[str, Any]] = []
    hand: dict[str, list[tuple[str, int]]] = {}
    extras = []
    for s, (nodes, mix, extra, _) in CASES.items():
        base = problem(nodes, mix, extra)
        base.work = base.work[:-1]
        packing = check(base, 5.0)
        assert packing.packs
        for w in base.work:
            name = f"{s}{w.name}"
            jobs.append(job(name, 0, w.cpus, f"{w.memory // 1024}GiB", labels={"part": s}))
            hand[name] = [(f"hpc/{s}", packing.assignment[w.name][0][0])]
        extras.append(f"{s}extra")
        jobs.append(job(f"{s}extra", 0, extra[0], f"{extra[1]}GiB", labels={"part": s}))
    p = router.Platform.from_objects(policy=policy, inventory=inv, workloads=jobs)
    return p, hand, extras


def placed(p: router.Platform, hand: dict[str, list[tuple[str, int]]]) -> list[Placement]:
    ev = p.evaluator()
    out = []
    for w in p.workloads:
        if w.name in hand:
            c = ev.decide(w).candidates[0]
            out.append(
                Placement(w, c.target, "all", "p:1", 0, c.options, c.resources, [], hand[w.name])
            )
    return out


def test_the_referee_decides_both_the_same_whatever_the_workers() -> None:
    p, hand, extras = platform()
    placements = placed(p, hand)
    got: list[Verdicts] = [
        referee(p.policy, p.inventory, p.workloads, placements, p.running, workers=w)
        for w in (1, 2)
    ]
    assert got[0] == got[1]
    v = got[0]
    assert v.checked == extras and v.undecided == []
    assert [(a.workload, a.target, a.how) for a in v.admitted] == [("bextra", "hpc/b", "re-packed")]
    assert v.kept["nodes"] == 1 and v.together == 1
    # The witness of "yes", as the referee found it, is a packing by packcheck's own check.
    ev = p.evaluator()
    d = ev.decide(next(w for w in p.workloads if w.name == "bextra"))
    c = d.candidates[0]
    extra = Placement(d.workload, c.target, "", "", c.rank, c.options, c.resources)
    comps = components(p.inventory, p.running, placements)
    k = next(i for i, comp in enumerate(comps) if comp.targets == ("hpc/b",))
    start = recorded(comps[k], placements)
    work = work_of(extra)
    found = settle(comps, {k: [work]}, {k: start}, 2.0)[k]
    assert found.verdicts == {(work.shape, work.units): True}
    witness = found.witness[work.shape, work.units]
    nodes = comps[k].nodes
    given = {
        ("bextra" if name == CANDIDATE else name): [
            [(nodes[i].node_set, nodes[i].index) for i in u] for u in units
        ]
        for name, units in witness.items()
    }
    # Every job of b (moved or not) and the extra one; a's jobs stay where they are.
    assert set(given) == {n for n in hand if n.startswith("b")} | {"bextra"}
    given |= {n: [nodes] for n, nodes in hand.items() if n.startswith("a")}
    assert check_assignment(p.inventory, p.running, [*placements, extra], given) == []


def test_generated_patterns_agree_with_the_per_node_search_on_small_cases() -> None:
    """Seeded small identical-node cases, whole-node tasks and jobs of 2 nodes among them:
    column generation's verdict, when it gives one, is the exact per-node search's, and its
    packing is one (within each node, at most the units per node, every task placed)."""
    import random

    few = pattern_check.__globals__["_few"]
    decided = {True: 0, False: 0}
    for seed in range(60):
        rng = random.Random(seed)
        count = rng.randint(2, 5)
        cap = (rng.choice([0, 4, 8]), rng.choice([16, 32, 64]), rng.choice([64, 128]))
        work = []
        for k in range(rng.randint(2, 5)):
            need = (
                rng.randint(0, cap[0]),
                rng.randint(1, cap[1] // 2),
                rng.randint(1, cap[2] // 2),
            )
            work.append(
                Work(
                    f"w{k}",
                    "t",
                    rng.randint(1, 4),
                    rng.choice([1, 1, 2]),
                    *need,
                    whole=rng.random() < 0.15,
                )
            )
        node = Node(*cap)
        p = Problem(
            "t", [f"n{i}" for i in range(count)], [node] * count, {"t": tuple(range(count))}, work
        )
        kinds = [
            columns.Kind(
                (w.gpus, w.cpus, w.memory),
                min(
                    w.units,
                    min(
                        (c // a for a, c in zip((w.gpus, w.cpus, w.memory), cap, strict=True) if a),
                        default=w.units,
                    ),
                ),
                w.units * w.tasks,
                w.whole,
            )
            for w in work
        ]
        got = columns.decide(cap, kinds, count, 1.0, few)
        want = check(p, 10.0, patterns=False).packs
        assert want is not None, seed
        if got.packs is None:
            continue
        assert got.packs is want, seed
        decided[want] += 1
        if got.packs:
            assert len(got.nodes) <= count, seed
            placed = [0] * len(kinds)
            for pattern in got.nodes:
                for d in range(3):
                    assert sum(kinds[k].need[d] * n for k, n in pattern.items()) <= cap[d], seed
                assert all(
                    n <= (1 if kinds[k].whole else kinds[k].most) for k, n in pattern.items()
                )
                assert len(pattern) == 1 or not any(kinds[k].whole for k in pattern), seed
                for k, n in pattern.items():
                    placed[k] += n
            assert all(placed[k] >= kinds[k].demand for k in range(len(kinds))), seed
    assert decided[True] > 10 and decided[False] > 10, decided
