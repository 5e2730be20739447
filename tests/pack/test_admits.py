"""The referee of what a plan leaves out (router/plan/admits.py), on placements made by hand
(so that the plan's node assignment is exactly the one under test) and on real plans."""

from __future__ import annotations

from typing import Any

import router
from router.models import Running
from router.models.placement import Placement
from router.plan.admits import Verdicts, referee
from router.plan.packcheck import check_assignment, unpackable
from tests.pack.unseen import Seeded, platform, platform_of, units

POLICY = """\
rule all:
  route any
"""


def slurm(nodes: int, gpus: int, cpus: int, memory: str, **kw: Any) -> dict[str, Any]:
    part = {"name": "gpu", "nodes": nodes, "cpus_per_node": cpus, "memory_per_node": memory}
    if gpus:
        part |= {"gpus_per_node": gpus, "gpu_type": "h100"}
    return {"clusters": [{"name": "hpc", "backend": "slurm", "partitions": [part | kw]}]}


def job(name: str, gpus: int, cpus: int = 8, memory: str = "32GiB", **kw: Any) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "batch",
        "gpus": gpus,
        "cpus": cpus,
        "memory": memory,
        "command": "run",
        "image": "ghcr.io/acme/x:1",
        **kw,
    }


def judge(
    policy: str,
    inventory: dict[str, Any],
    workloads: list[dict[str, Any]],
    placed: dict[str, list[tuple[str, int]]],
    running: dict[str, Any] | None = None,
    repack: bool = True,
    workers: int = 1,
) -> Verdicts:
    """The referee on a plan given by hand: workload -> its (node set, index) per pod or job
    node, on its first candidate."""
    p = router.Platform.from_objects(
        policy=policy, inventory=inventory, workloads=workloads, running=running
    )
    ev = p.evaluator()
    placements = []
    for w in p.workloads:
        if w.name in placed:
            c = ev.decide(w).candidates[0]
            placements.append(
                Placement(w, c.target, "all", "p:1", 0, c.options, c.resources, [], placed[w.name])
            )
    assert not unpackable(p.inventory, p.running, placements)
    given = {q.workload.name: units(q) for q in placements}
    assert check_assignment(p.inventory, p.running, placements, given) == []
    return referee(
        p.policy, p.inventory, p.workloads, placements, p.running, repack=repack, workers=workers
    )


def test_a_job_that_fits_beside_the_plan_is_falsely_unplaced() -> None:
    inv = slurm(2, 8, 96, "1TiB")
    jobs = [job("a", 4), job("b", 4), job("c", 4)]
    got = judge(POLICY, inv, jobs, {"a": [("hpc/gpu", 0)], "b": [("hpc/gpu", 0)]})
    assert got.checked == ["c"] and got.falsely_unplaced == 1
    (a,) = got.admitted
    assert (a.workload, a.target, a.how, a.nodes) == ("c", "hpc/gpu", "beside", (("hpc/gpu", 1),))


def test_a_job_that_fits_only_if_the_plan_moves_a_pod_is_falsely_unplaced_by_repacking() -> None:
    # 4 + 4 GPUs recorded on two nodes leave no node for an 8-GPU job, but both fit one node.
    inv = slurm(2, 8, 96, "1TiB")
    jobs = [job("a", 4), job("b", 4), job("c", 8)]
    hand = {"a": [("hpc/gpu", 0)], "b": [("hpc/gpu", 1)]}
    got = judge(POLICY, inv, jobs, hand)
    assert [(a.workload, a.how) for a in got.admitted] == [("c", "re-packed")]
    assert judge(POLICY, inv, jobs, hand, repack=False).admitted == []
    # Three 4-GPU jobs and an 8-GPU one need 20 of 16 GPUs: nothing admits it.
    four = [*jobs, job("d", 4)]
    got = judge(POLICY, inv, four, {**hand, "d": [("hpc/gpu", 0)]})
    assert got.checked == ["c"] and got.admitted == [] and got.kept["nodes"] == 1


def test_alike_jobs_fit_beside_one_at_a_time_but_not_together() -> None:
    """`beside` keeps its answers per shape while nothing is taken; taking one job's node
    (`together`) must drop them, or the second alike job would be taken on the same room."""
    inv = slurm(2, 8, 96, "1TiB")
    jobs = [job("a", 8), job("b", 8), job("c", 8)]
    got = judge(POLICY, inv, jobs, {"a": [("hpc/gpu", 0)]})
    assert [(a.workload, a.nodes) for a in got.admitted] == [
        ("b", (("hpc/gpu", 1),)),
        ("c", (("hpc/gpu", 1),)),
    ]
    assert got.together == 1


def test_quotas_and_spreads_keep_out_what_the_nodes_would_take() -> None:
    inv = slurm(2, 8, 96, "1TiB")
    jobs = [job("a", 4, team="x"), job("b", 4, team="x")]
    quota = POLICY + '\nquota x_gpus:\n  for team == "x"\n  limit gpus <= 7\n'
    got = judge(quota, inv, jobs, {"a": [("hpc/gpu", 0)]})
    assert got.checked == ["b"] and got.admitted == [] and got.kept == {"quota": 1}
    roomy = quota.replace("<= 7", "<= 8")
    assert judge(roomy, inv, jobs, {"a": [("hpc/gpu", 0)]}).falsely_unplaced == 1
    # `per team`: another team's usage does not count.
    per = POLICY + "\nquota each:\n  per team\n  limit gpus <= 4\n"
    other = [job("a", 4, team="x"), job("b", 4, team="y")]
    assert judge(per, inv, other, {"a": [("hpc/gpu", 0)]}).falsely_unplaced == 1
    assert judge(per, inv, jobs, {"a": [("hpc/gpu", 0)]}).kept == {"quota": 1}
    spread = POLICY + "\nspread apps:\n  by labels.app\n  across cluster\n  max 1\n"
    apps = [job(n, 4, labels={"app": "web"}) for n in ("a", "b")]
    got = judge(spread, inv, apps, {"a": [("hpc/gpu", 0)]})
    assert got.admitted == [] and got.kept == {"spread": 1}
    assert judge(spread.replace("max 1", "max 2"), inv, apps, {"a": [("hpc/gpu", 0)]}).admitted


def test_whole_nodes_need_idle_nodes_and_running_work_counts() -> None:
    inv = slurm(2, 8, 96, "1TiB")
    excl = "rule all:\n  route slurm with exclusive\n"
    jobs = [job("a", 1), job("b", 1)]
    got = judge(excl, inv, jobs, {"a": [("hpc/gpu", 0)]})
    assert [a.nodes for a in got.admitted] == [(("hpc/gpu", 1),)]
    busy = {"running": [{"cluster": "hpc", "node_set": "gpu", "node": 1, "cpus": 1}]}
    got = judge(excl, inv, jobs, {"a": [("hpc/gpu", 0)]}, running=busy)
    assert got.admitted == [] and got.kept == {"nodes": 1}
    # Not exclusive, the running CPU leaves room: admitted beside it.
    assert judge(POLICY, inv, [job("a", 8), job("b", 8)], {"a": [("hpc/gpu", 0)]}, busy).admitted


def test_services_count_every_replica_on_distinct_room() -> None:
    inv = {
        "clusters": [
            {
                "name": "k8s",
                "backend": "kubernetes",
                "node_pools": [
                    {
                        "name": "gpu",
                        "nodes": 2,
                        "gpus_per_node": 8,
                        "gpu_type": "h100",
                        "cpus_per_node": 48,
                        "memory_per_node": "384GiB",
                    }
                ],
            }
        ]
    }

    def svc(name: str, replicas: int) -> dict[str, Any]:
        return job(name, 2, 30, "16GiB", kind="inference", replicas={"min": replicas, "max": 4})

    placed = {"a": [("k8s/gpu", 0)]}
    # One 30-CPU pod per 48-CPU node: a second service of one replica fits, of two does not.
    assert judge(POLICY, inv, [svc("a", 1), svc("b", 1)], placed).falsely_unplaced == 1
    assert judge(POLICY, inv, [svc("a", 1), svc("b", 2)], placed).admitted == []


def test_mig_slices_and_whole_gpus_are_apart() -> None:
    mig = [{"gpus": 4, "slices": {"1g.10gb": 7}}]
    inv = {
        "clusters": [
            {
                "name": "k8s",
                "backend": "kubernetes",
                "node_pools": [
                    {
                        "name": "a100",
                        "nodes": 1,
                        "gpus_per_node": 8,
                        "gpu_type": "a100",
                        "cpus_per_node": 96,
                        "memory_per_node": "1TiB",
                        "mig": mig,
                    }
                ],
            }
        ]
    }
    sliced = 'rule all:\n  route kubernetes with mig = "1g.10gb"\n'

    def svc(name: str, replicas: int) -> dict[str, Any]:
        return job(name, 1, 1, "1GiB", kind="inference", replicas={"min": replicas, "max": 28})

    twenty = [("k8s/a100", 0)] * 20
    assert judge(sliced, inv, [svc("a", 20), svc("b", 8)], {"a": twenty}).falsely_unplaced == 1
    assert judge(sliced, inv, [svc("a", 20), svc("b", 9)], {"a": twenty}).admitted == []


def test_a_job_array_counts_its_tasks_in_flight() -> None:
    # 33 CPUs per task, one task per 64-CPU node: 3 tasks in flight need 3 nodes.
    inv = slurm(2, 0, 64, "512GiB")
    three = job("arr", 0, 33, "100GiB", array={"count": 5, "parallel": 3})
    two = job("arr", 0, 33, "100GiB", array={"count": 5, "parallel": 2})
    assert judge(POLICY, inv, [three], {}).admitted == []
    got = judge(POLICY, inv, [two], {})
    assert [a.nodes for a in got.admitted] == [(("hpc/gpu", 0), ("hpc/gpu", 1))]


def test_a_placement_taken_out_of_a_real_plan_is_found_again() -> None:
    """On generated platforms, every placement removed from the plan is falsely unplaced, and
    the nodes the referee names are a valid packing beside the rest."""
    tried = 0
    for seed in range(25):
        data = platform(Seeded(seed))
        built = router.plan(platform_of(data), workers=1).built
        i = built.inputs
        running = i.running or Running()
        for k, gone in enumerate(built.placements):
            rest = built.placements[:k] + built.placements[k + 1 :]
            got = referee(i.policy, i.inventory, i.workloads, rest, running, built.decisions)
            found = {a.workload: a for a in got.admitted}
            assert gone.workload.name in found, (seed, gone.workload.name)
            a = found[gone.workload.name]
            if a.how != "beside":
                continue
            back = [
                Placement(
                    gone.workload,
                    i.inventory.target(a.target),
                    "",
                    "",
                    0,
                    {},
                    next(
                        c.resources
                        for d in built.decisions
                        if d.workload.name == a.workload
                        for c in d.candidates
                        if c.target.id == a.target
                    ),
                    [],
                    list(a.nodes),
                )
            ]
            placed = rest + back
            given = {q.workload.name: units(q) for q in placed}
            assert check_assignment(i.inventory, running, placed, given) == [], (seed, a)
            tried += 1
    assert tried > 50
