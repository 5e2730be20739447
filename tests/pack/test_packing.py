"""The packing core (router/plan/packing.py) on hand-made nodes and against brute force."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from router.plan.packcheck import settle
from router.plan.packfill import LEANS, fill, identical, tight
from router.plan.packing import (
    _ORDERS,
    Node,
    Problem,
    Work,
    check,
    check_assignment,
    first_fit,
)
from router.plan.packing import _constructive as constructive
from router.plan.patterns import pattern_check, pattern_dive

GiB = 1024
DATA = Path(__file__).parent / "data"


def problem(nodes: list[Node], work: list[Work], target: str = "k8s/gpu") -> Problem:
    return Problem(
        target,
        [f"{target}[{i}]" for i in range(len(nodes))],
        nodes,
        {target: tuple(range(len(nodes)))},
        work,
    )


def replicas(
    name: str,
    n: int,
    gpus: int,
    cpus: int,
    memory: int,
    target: str = "k8s/gpu",
    slices: tuple[tuple[str, int], ...] = (),
) -> Work:
    return Work(name, target, units=n, tasks=1, gpus=gpus, cpus=cpus, memory=memory, slices=slices)


def job(
    name: str,
    nodes: int,
    gpus: int,
    cpus: int,
    memory: int,
    target: str = "k8s/gpu",
    whole: bool = False,
) -> Work:
    return Work(
        name, target, units=1, tasks=nodes, gpus=gpus, cpus=cpus, memory=memory, whole=whole
    )


def valid(p: Problem) -> bool:
    """The verdict with and without the constructive searches (the same), its packing checked."""
    v = check(p, constructive=True)
    if v.packs:
        assert check_assignment(p, v.assignment) == []
    assert check(p).packs == v.packs
    return bool(v.packs)


def test_three_30_cpu_replicas_do_not_pack_on_two_48_cpu_nodes() -> None:
    nodes = [Node(8, 48, 384 * GiB)] * 2
    v = check(problem(nodes, [replicas("api", 3, 2, 30, 16 * GiB)]))
    assert v.packs is False
    assert v.how == "exact"  # the totals (90 of 96 CPUs) allow it; only per node it fails
    assert "no assignment" in v.reason
    assert valid(problem(nodes, [replicas("api", 2, 2, 30, 16 * GiB)]))


def test_gpu_pod_and_cpu_job_share_one_node() -> None:
    nodes = [Node(4, 96, 192 * GiB)]
    work = [replicas("pod", 1, 3, 8, 16 * GiB), job("batch", 1, 0, 70, 150 * GiB)]
    v = check(problem(nodes, work))
    assert v.packs is True
    assert v.assignment == {"pod": [[0]], "batch": [[0]]}
    # One CPU more than the node has left and they no longer share it.
    assert check(problem(nodes, [*work[:1], job("batch", 1, 0, 89, 150 * GiB)])).packs is False


def test_five_3_gpu_jobs_do_not_pack_on_two_8_gpu_nodes() -> None:
    nodes = [Node(8, 96, 1024 * GiB)] * 2
    jobs = [job(f"j{k}", 1, 3, 8, 32 * GiB) for k in range(5)]
    v = check(problem(nodes, jobs))
    assert v.packs is False  # 15 of 16 GPUs, but at most 2 per node
    assert valid(problem(nodes, jobs[:4]))


def test_mig_whole_gpus_and_slices_are_separate() -> None:
    # 8 A100s per node: 4 whole, 4 cut into 7 x 1g.10gb = 28 slices.
    node = Node(4, 96, 1024 * GiB, slices=(("1g.10gb", 28),))
    whole = replicas("whole", 1, 4, 8, 16 * GiB)
    sliced = replicas("sliced", 28, 0, 2, 4 * GiB, slices=(("1g.10gb", 1),))
    assert valid(problem([node], [whole, sliced]))
    # A service wanting all 8 GPUs whole does not fit: only 4 are whole.
    eight = replicas("eight", 1, 8, 8, 16 * GiB)
    v = check(problem([node], [eight]))
    assert v.packs is False and "most free on any node is 4 GPUs" in v.reason
    # One slice too many.
    more = replicas("sliced", 29, 0, 2, 4 * GiB, slices=(("1g.10gb", 1),))
    assert check(problem([node], [whole, more])).packs is False


def test_a_job_needs_distinct_nodes() -> None:
    nodes = [Node(8, 96, 1024 * GiB)] * 3
    # 2 tasks of 4 GPUs would fit one node's 8 GPUs, but a job's nodes are distinct.
    assert valid(problem(nodes[:2], [job("j", 2, 4, 8, 8 * GiB)]))
    assert check(problem(nodes[:1], [job("j", 2, 4, 8, 8 * GiB)])).packs is False
    # Three 2-node jobs on 3 nodes of 8 GPUs, 4 GPUs per task: 6 tasks, 2 per node, distinct.
    jobs = [job(f"j{k}", 2, 4, 8, 8 * GiB) for k in range(3)]
    v = check(problem(nodes, jobs))
    assert v.packs is True
    assert all(len(set(u)) == 2 for name in v.assignment for u in v.assignment[name])


def test_whole_nodes_are_alone_and_only_idle() -> None:
    busy = Node(8, 96, 1024 * GiB, idle=False)
    idle = Node(8, 96, 1024 * GiB)
    excl = job("excl", 1, 1, 1, 1, whole=True)
    small = replicas("small", 1, 1, 1, 1)
    assert check(problem([busy], [excl])).packs is False
    assert valid(problem([busy, idle], [excl, small]))
    v = check(problem([idle], [excl, small]))
    assert v.packs is False and v.how == "bound"


def test_ffd_misses_but_the_constructive_search_finds_it() -> None:
    nodes = [Node(0, 10, 100)] * 2
    sizes = [5, 4, 4, 3, 2, 2]  # FFD: {5,4}, {4,3,2}, 2 left over; optimum {5,3,2}, {4,4,2}
    work = [job(f"b{k}", 1, 0, s, 1) for k, s in enumerate(sizes)]
    p = problem(nodes, work)
    assert first_fit(p, work, lambda w, _: (-w.cpus,)) is None
    v = check(p, constructive=True)
    assert v.packs is True and v.how == "constructive"
    assert check_assignment(p, v.assignment) == []


def test_shared_nodes_are_one_capacity() -> None:
    # Two targets on the same 2 nodes: each alone fits, together they do not.
    nodes = [Node(8, 96, 1024 * GiB)] * 2
    a = [job(f"a{k}", 1, 4, 8, 8 * GiB, target="hpc/gpu") for k in range(3)]
    b = [job(f"b{k}", 1, 4, 8, 8 * GiB, target="hpc/preempt") for k in range(2)]
    both = Problem(
        "hpc/h100", ["n0", "n1"], nodes, {"hpc/gpu": (0, 1), "hpc/preempt": (0, 1)}, a + b
    )
    assert check(both).packs is False
    # A target that reaches only node 1 leaves node 0 to the other.
    split = Problem(
        "hpc/h100", ["n0", "n1"], nodes, {"hpc/gpu": (0, 1), "hpc/preempt": (1,)}, a[:2] + b
    )
    assert check(split).packs is True


def test_check_assignment_names_what_is_wrong() -> None:
    nodes = [Node(8, 48, 384 * GiB)] * 2
    p = problem(nodes, [replicas("api", 3, 2, 30, 16 * GiB), job("excl", 1, 1, 1, 1, whole=True)])
    errors = check_assignment(p, {"api": [[0], [0], [1]], "excl": [[1]]})
    assert "k8s/gpu[0]: over in CPUs" in errors
    assert any("whole-node task shares it" in e for e in errors)
    assert check_assignment(p, {"api": [[0]]}) == [
        "api: 1 units assigned, 3 planned",
        "excl: not assigned",
    ]


def _brute(p: Problem) -> bool:
    """Every way of putting each task on a node, checked by check_assignment."""
    tasks = [(w, u) for w in p.work for u in range(w.units)]
    choices = []
    for w, _ in tasks:
        reach = p.reach[w.target]
        choices.append(list(itertools.combinations(reach, w.tasks)))
    for pick in itertools.product(*choices):
        assignment: dict[str, list[list[int]]] = {}
        for (w, _), nodes in zip(tasks, pick, strict=True):
            assignment.setdefault(w.name, []).append(list(nodes))
        if not check_assignment(p, assignment):
            return True
    return False


def random_work(rng: random.Random, mig_slices: Callable[[], int]) -> list[Work]:
    """Two to four pieces of work of random kinds and sizes: services, MIG services (each pod
    `mig_slices()` 1g slices), jobs and whole-node jobs."""
    work: list[Work] = []
    for k in range(rng.randint(2, 4)):
        kind = rng.choice(["svc", "job", "whole", "mig"])
        if kind == "svc":
            n, g, c, m = rng.randint(1, 3), rng.randint(0, 2), rng.randint(1, 6), rng.randint(2, 12)
            work.append(replicas(f"s{k}", n, g, c, m))
        elif kind == "mig":
            n, c, m = rng.randint(1, 3), rng.randint(1, 4), rng.randint(2, 8)
            work.append(replicas(f"m{k}", n, 0, c, m, slices=(("1g", mig_slices()),)))
        else:
            n, g, c, m = rng.randint(1, 2), rng.randint(0, 2), rng.randint(1, 8), rng.randint(2, 16)
            work.append(job(f"j{k}", n, g, c, m, whole=kind == "whole"))
    return work


@pytest.mark.parametrize("seed", range(150))
def test_verdicts_match_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(2, 3)
    nodes = [
        Node(
            rng.choice([2, 4]),
            rng.choice([8, 12]),
            rng.choice([16, 32]),
            slices=(("1g", rng.choice([0, 3])),),
            idle=rng.random() < 0.9,
        )
        for _ in range(n)
    ]
    work = random_work(rng, lambda: 1)
    p = problem(nodes, work)
    assert valid(p) == _brute(p)


@pytest.mark.parametrize("seed", range(80))
def test_node_patterns_match_brute_force_on_identical_nodes(seed: int) -> None:
    rng = random.Random(7000 + seed)
    node = Node(
        rng.choice([0, 2, 4]),
        rng.choice([8, 12]),
        rng.choice([16, 32]),
        slices=(("1g", rng.choice([0, 4])),),
    )
    nodes = [node] * rng.randint(2, 3)
    work = random_work(rng, lambda: rng.randint(1, 2))
    p = problem(nodes, work)
    v = pattern_check(p, [w for w in work if w.units and w.tasks], 5.0)
    assert v is not None and v.packs is not None
    assert v.packs == _brute(p)
    if v.packs:
        assert check_assignment(p, v.assignment) == []


def test_lp_of_node_patterns_proves_a_tight_mix_infeasible() -> None:
    # Totals fit (33 of 40 CPUs), but a node holds one 7-CPU task or two 4-CPU ones, never
    # both: 3 + 1.5 nodes even fractionally, of the 4.
    nodes = [Node(0, 10, 10)] * 4
    work = [replicas("a", 3, 0, 7, 2), replicas("b", 3, 0, 4, 2)]
    p = problem(nodes, work)
    v = check(p, constructive=True)
    assert v.packs is False and v.how == "exact"
    assert "fit the totals but no assignment" in v.reason


# --- the constructive searches (router/plan/packfill.py) ---------------------------------------


def _bench_component(name: str = "bench-L0-hpc-r0-2-cpu.json") -> Problem:
    """By default L seed 0's hpc-r0-2/cpu as planned on main 68207b7 (tests/pack/data/
    README.md): 23 identical nodes, 276 CPU jobs, all its CPUs planned. First fit leaves it,
    and per-node CP-SAT did not decide it within its 5 s."""
    data = json.loads((DATA / name).read_text())
    node = Node(data["node"]["gpus"], data["node"]["cpus"], data["node"]["memory"])
    work = [Work(n, data["id"], u, 1, 0, c, m) for n, u, c, m in data["work"]]
    return problem([node] * data["nodes"], work, target=data["id"])


def test_a_full_bench_partition_packs_by_the_constructive_search() -> None:
    p = _bench_component()
    work = [w for w in p.work if w.units]
    assert all(first_fit(p, work, order) is None for order in _ORDERS)
    assert sum(w.cpus * w.units for w in work) == 23 * 128  # every node full to the last CPU
    v = check(p, constructive=True)
    assert v.packs is True and v.how == "constructive"
    assert check_assignment(p, v.assignment) == []


def test_the_dive_on_node_patterns_packs_what_the_other_searches_miss() -> None:
    # XL seed 0's hpc-r6-0/cpu-long (tests/pack/data/README.md): 64 nodes of 64 CPUs, 4044
    # CPUs planned, 54 jobs of 2 CPUs and 64 GiB that no node can take more than four of.
    # The searches node after node and the knapsack fills find nothing, nor did CP-SAT over
    # its 1,455 maximal patterns or per node within 5 s each; the LP dive packs it.
    p = _bench_component("bench-XL0-hpc-r6-0-cpu-long.json")
    work = [w for w in p.work if w.units]
    assert len(p.nodes) == 64 and sum(w.cpus * w.units for w in work) == 4044
    assert identical(p, work) and all(first_fit(p, work, order) is None for order in _ORDERS)
    assert tight(p, work) is None and tight(p, work, ranked=1) is None
    assert all(fill(p, work, lean) is None for lean in LEANS)
    found = pattern_dive(p, work)
    assert found is not None and check_assignment(p, found) == []
    v = check(p, constructive=True)
    assert v.packs is True and v.how == "constructive"
    assert check_assignment(p, v.assignment) == []


def test_a_packing_only_a_non_greedy_order_finds_on_two_resources() -> None:
    # 2 nodes of (10 CPUs, 10 GiB): first fit by CPUs puts both 5-CPU tasks on one node and
    # strands a 5 GiB one; each node must take one of each (9 CPUs, 10 GiB).
    nodes = [Node(0, 10, 10 * GiB)] * 2
    work = [
        replicas("a", 2, 0, 2, 1 * GiB),
        replicas("b", 2, 0, 2, 5 * GiB),
        replicas("c", 2, 0, 5, 4 * GiB),
    ]
    p = problem(nodes, work)
    assert all(first_fit(p, work, order) is None for order in _ORDERS)
    assert identical(p, work)
    v = check(p, constructive=True)
    assert v.packs is True and v.how == "constructive"
    assert check_assignment(p, v.assignment) == []
    assert sorted(sorted(v.assignment[n][k][0] for n in "abc") for k in range(2)) == [
        [0, 0, 0],
        [1, 1, 1],
    ]


def test_the_knapsack_fill_on_nodes_that_differ() -> None:
    # Nodes of (10 CPUs, 10 GiB) and (12 CPUs, 8 GiB): `tight` does not apply, `fill` does.
    nodes = [Node(0, 10, 10 * GiB), Node(0, 12, 8 * GiB)]
    work = [
        replicas("a", 1, 0, 3, 6 * GiB),
        replicas("b", 2, 0, 3, 5 * GiB),
        replicas("c", 2, 0, 1, 1 * GiB),
    ]
    p = problem(nodes, work)
    assert all(first_fit(p, work, order) is None for order in _ORDERS)
    assert not identical(p, work) and tight(p, work) is None
    found = [fill(p, work, lean) for lean in LEANS]
    assert any(f is not None for f in found)
    assert all(check_assignment(p, f) == [] for f in found if f is not None)
    v = check(p, constructive=True)
    assert v.packs is True and v.how == "constructive"


def test_an_unpackable_tight_mix_is_still_proved_unpackable() -> None:
    # Totals fit (18 of 20 CPUs); no node holds two 6-CPU tasks: the searches find nothing,
    # and the exact check proves it.
    nodes = [Node(0, 10, 10 * GiB)] * 2
    work = [replicas("a", 3, 0, 6, 1 * GiB)]
    p = problem(nodes, work)
    assert constructive(p, work) is None
    v = check(p, constructive=True)
    assert v.packs is False and v.how == "exact"
    assert not _brute(p)


@pytest.mark.parametrize("seed", range(60))
def test_constructive_searches_never_claim_a_packing_that_is_not(seed: int) -> None:
    rng = random.Random(9000 + seed)
    node = Node(rng.choice([0, 2]), rng.choice([8, 12]), rng.choice([16, 32]))
    nodes = [node] * rng.randint(2, 3)
    if rng.random() < 0.5:  # nodes that differ: only `fill`
        nodes[0] = Node(node.gpus, node.cpus + 4, node.memory)
    work = [
        replicas(
            f"r{k}", rng.randint(1, 3), rng.randint(0, 1), rng.randint(1, 6), rng.randint(2, 12)
        )
        for k in range(rng.randint(2, 4))
    ]
    if rng.random() < 0.3:
        work.append(job("j", 2, 0, rng.randint(1, 4), rng.randint(1, 8)))
    p = problem(nodes, work)
    packs = _brute(p)
    tries = [tight(p, work), tight(p, work, ranked=1), *(fill(p, work, lean) for lean in LEANS)]
    for found in tries:
        if found is not None:
            assert packs and check_assignment(p, found) == []
    v = check(p, constructive=True)
    assert v.packs is packs


def test_verdicts_are_the_same_whatever_the_workers() -> None:
    two = [Node(0, 10, 10 * GiB)] * 2
    problems = [
        _bench_component(),  # constructive
        problem(two, [replicas("a", 3, 0, 6, 1 * GiB)]),  # no: exact
        problem(  # constructive
            two,
            [
                replicas("a", 2, 0, 2, 1 * GiB),
                replicas("b", 2, 0, 2, 5 * GiB),
                replicas("c", 2, 0, 5, 4 * GiB),
            ],
        ),
        problem(two, [replicas("a", 2, 0, 5, 5 * GiB)]),  # first fit
        problem([Node(0, 10, 10)] * 4, [replicas("a", 3, 0, 7, 2), replicas("b", 3, 0, 4, 2)]),
    ]
    one = settle(problems, 5.0, workers=1)
    more = settle(problems, 5.0, workers=2)
    assert [(v.packs, v.how) for v in one] == [
        (True, "constructive"),
        (False, "exact"),
        (True, "constructive"),
        (True, "first fit"),
        (False, "exact"),
    ]
    assert [(v.packs, v.how, v.reason, v.assignment) for v in one] == [
        (v.packs, v.how, v.reason, v.assignment) for v in more
    ]
