"""What the referees found in router/solve, kept as tests that fail until it is fixed.

Each is a platform from the long run of tests/pack/unseen.py, made smaller by hand while the
finding stayed. A test still marked xfail(strict=True) is a finding not fixed yet; the fix
makes it pass, which fails the run until the mark is removed. The first three were one
cause: the solver's exact packing read its variables' upper bounds as 0 (ortools 9.15's
proto wrapper, domain[-1]) and proved packable counts impossible.
"""

from __future__ import annotations

import random
from typing import Any

import router
from router.models.placement import Placement
from router.plan.admits import referee
from router.plan.packcheck import check_assignment, components, work_of
from router.plan.packing import Problem, check


def _left_out(
    policy: str,
    inventory: dict[str, Any],
    workloads: list[dict[str, Any]],
    running: dict[str, Any] | None = None,
) -> list[str]:
    """The workloads the plan leaves out that it could still take (router/plan/admits.py)."""
    p = router.Platform.from_objects(
        policy=policy, inventory=inventory, workloads=workloads, running=running
    )
    built = router.plan(p, workers=1).built
    i = built.inputs
    got = referee(i.policy, i.inventory, i.workloads, built.placements, i.running)
    return [str(a) for a in got.admitted]


def _job(name: str, gpus: int, cpus: int, memory: str, **kw: Any) -> dict[str, Any]:
    return {"name": name, "kind": "batch", "gpus": gpus, "cpus": cpus, "memory": memory,
            "command": "run", "image": "ghcr.io/acme/x:1", **kw}  # fmt: skip


def test_an_array_of_three_190gib_tasks_beside_four_gpu_jobs() -> None:
    inventory = {"clusters": [{"name": "hpc", "backend": "slurm", "partitions": [
        {"name": "p5", "nodes": 3, "gpus_per_node": 8, "gpu_type": "a100",
         "cpus_per_node": 48, "memory_per_node": "384GiB"}]}]}  # fmt: skip
    workloads = [
        _job("j1", 3, 33, "190GiB"),
        _job("j5", 2, 47, "120GiB"),
        _job("j9", 3, 30, "5GiB"),
        _job("j10", 0, 1, "190GiB", array={"count": 5, "parallel": 3}),
        _job("j12", 5, 7, "16GiB"),
    ]
    # node 0: j10, j9, j12 (38 CPUs, 211GiB, 8 GPUs); node 1: j10, j1 (34 CPUs, 380GiB);
    # node 2: j10, j5 (48 CPUs, 310GiB)
    assert _left_out("rule all:\n  route slurm\n", inventory, workloads) == []


def test_a_47_cpu_pod_beside_services_and_running_work_on_a_pool_with_headroom() -> None:
    inventory = {"clusters": [{"name": "k8s", "backend": "kubernetes", "node_pools": [
        {"name": "k1", "nodes": 2, "max_nodes": 4, "gpus_per_node": 4, "gpu_type": "a100",
         "cpus_per_node": 96, "memory_per_node": "192GiB"}]}]}  # fmt: skip

    def svc(name: str, gpus: int, cpus: int, memory: str, n: int, **kw: Any) -> dict[str, Any]:
        return _job(name, gpus, cpus, memory, kind="inference", replicas={"min": n, "max": n}, **kw)

    workloads = [
        svc("s1", 1, 33, "100GiB", 3),
        _job("j2", 2, 30, "5GiB", kind="training", priority="high"),
        svc("s5", 0, 30, "40GiB", 3, priority="high"),
        svc("s7", 1, 7, "4GiB", 2),
        _job("j8", 1, 47, "5GiB", kind="training"),
        _job("j12", 0, 95, "16GiB", priority="high"),
    ]
    running = {"running": [{"cluster": "k8s", "node_set": "k1", "node": 0, "cpus": 3,
                            "memory": "44GiB", "job": "r0"}]}  # fmt: skip
    # node 0 (93 CPUs free): s1, s5, j2; node 1: s1, s5, s5; node 2: s1, j8, s7, s7; node 3: j12
    assert _left_out("rule all:\n  route kubernetes\n", inventory, workloads, running) == []


def test_three_services_that_fill_twelve_gpus_exactly() -> None:
    pool = {"name": "k0", "nodes": 3, "gpus_per_node": 4, "gpu_type": "h100",
            "cpus_per_node": 96, "memory_per_node": "192GiB"}  # fmt: skip
    inventory = {"clusters": [{"name": "k8s", "backend": "kubernetes", "node_pools": [pool]}]}

    def svc(name: str, gpus: int, cpus: int, memory: str, n: int, **kw: Any) -> dict[str, Any]:
        return _job(name, gpus, cpus, memory, kind="inference", replicas={"min": n, "max": n}, **kw)

    workloads = [
        svc("s0", 1, 30, "16GiB", 4, priority="high"),
        svc("s7", 1, 7, "4GiB", 4, priority="high"),
        svc("s9", 2, 2, "40GiB", 2, priority="low"),
    ]
    # node 0: s0, 3 x s7; node 1: s0, s7, s9; node 2: 2 x s0, s9 (4 GPUs each)
    assert _left_out("rule all:\n  route kubernetes\n", inventory, workloads) == []


def _cpu_jobs(count: int, seed: int) -> list[dict[str, Any]]:
    """`count` CPU jobs of random small sizes (1-24 CPUs, 1-96 GiB), each its own class."""
    rng = random.Random(seed)
    return [
        _job(f"j{k:04d}", 0, rng.randint(1, 24), f"{rng.randint(1, 96)}GiB", team="a")
        for k in range(count)
    ]


def test_distinct_cpu_jobs_on_one_partition_leave_room_only_a_repack_finds() -> None:
    cpu = {"name": "cpu", "nodes": 8, "cpus_per_node": 128, "memory_per_node": "512GiB"}
    inventory = {"clusters": [{"name": "hpc", "backend": "slurm", "partitions": [cpu]}]}
    p = router.Platform.from_objects(
        policy="rule all:\n  route slurm\n", inventory=inventory, workloads=_cpu_jobs(150, 0)
    )
    built = router.plan(p, workers=1).built
    i = built.inputs
    (comp,) = components(i.inventory, i.running, built.placements)
    placed = {q.workload.name for q in built.placements}
    ev = p.evaluator()
    fits = []
    # The three the referee names (the whole referee run takes a minute here): each is placed,
    # or the plan's work with it added does not pack.
    for name in ("j0001", "j0088", "j0115"):
        if name in placed:
            continue
        c = ev.decide(p.workload(name)).candidates[0]
        work = work_of(Placement(p.workload(name), c.target, "", "", 0, c.options, c.resources))
        base = comp.problem
        problem = Problem(base.id, base.node_ids, base.nodes, base.reach, [*base.work, work])
        if check(problem, 2.0).packs is not False:
            fits.append(name)
    assert fits == []


def test_cpu_jobs_that_fill_four_nodes_to_8_gib_of_memory() -> None:
    # From a seeded run of small CPU platforms (random.Random(106)): 25 jobs on 4 nodes of
    # 64 CPUs and 256 GiB. The plan left j000 (1 CPU, 72 GiB) and j019 (3 CPUs, 95 GiB) out;
    # the referee packs j000 in with the 21 others, 1016 of 1024 GiB. The solver's exact
    # packing found no such packing in 5 s with its default search; depth first in
    # first-fit-decreasing order it finds one at once.
    rng = random.Random(106)
    nodes, count = rng.randint(2, 4), rng.randint(10, 30)
    jobs = [
        _job(f"j{k:03d}", 0, rng.randint(1, 24), f"{rng.randint(1, 96)}GiB", team="a")
        for k in range(count)
    ]
    cpu = {"name": "cpu", "nodes": nodes, "cpus_per_node": 64, "memory_per_node": "256GiB"}
    inventory = {"clusters": [{"name": "hpc", "backend": "slurm", "partitions": [cpu]}]}
    assert (nodes, count) == (4, 25)
    assert _left_out("rule all:\n  route slurm\n", inventory, jobs) == []
    p = router.Platform.from_objects(
        policy="rule all:\n  route slurm\n", inventory=inventory, workloads=jobs
    )
    built = router.plan(p, workers=1).built
    assert "j000" in {q.workload.name for q in built.placements}
    # The plan's own node assignment is a packing, node by node.
    units = {q.workload.name: [[n] for n in q.nodes] for q in built.placements}
    i = built.inputs
    assert check_assignment(i.inventory, i.running, built.placements, units) == []
