"""The referee's grouping (one verdict per component, work shape and units, counts by
bisection, dominance), its forked workers and its `together` count, against a plain referee
that checks every (workload, candidate) pair on its own with the exact checker."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import router
from router.evaluate.evaluate import Decision
from router.models import Running
from router.models.placement import Placement
from router.plan.admits import _Free, _Limits, referee
from router.plan.packcheck import components, work_of
from router.plan.packing import check
from tests.pack.test_admits import POLICY, job, judge, slurm
from tests.pack.unseen import Seeded, platform, platform_of


def plain(
    built: Any, placements: list[Placement], decisions: list[Decision]
) -> dict[str, bool | None]:
    """Per unplaced workload: True if a candidate takes it, None if one is undecided and
    none takes it, False if every candidate is proved to keep it out. No grouping, no
    caching, no start: each pair beside the plan, else one exact check of its component."""
    i = built.inputs
    running = i.running or Running()
    placed = {p.workload.name for p in placements}
    limits = _Limits(i.policy, i.inventory, i.workloads, decisions, placements)
    free = _Free(i.inventory, running, placements)
    comps = {t: c for c in components(i.inventory, running, placements) for t in c.targets}
    out: dict[str, bool | None] = {}
    for d in decisions:
        if not d.candidates or d.workload.name in placed:
            continue
        verdict: bool | None = False
        for cand in d.candidates:
            if limits.keeps_out(d, cand):
                continue
            p = Placement(d.workload, cand.target, "", "", cand.rank, cand.options, cand.resources)
            work = work_of(p)
            if free.beside(work, cand.target.node_sets) is not None:
                verdict = True
                break
            base = comps[cand.target.id].problem
            added = replace(work, name="\0plain")
            packs = check(replace(base, work=[*base.work, added]), 20.0).packs
            if packs:
                verdict = True
                break
            if packs is None:
                verdict = None
        out[d.workload.name] = verdict
    return out


def test_verdicts_match_a_plain_referee_on_seeded_platforms() -> None:
    """Seeded small platforms, planned, then with every third placement taken out (so that
    there is room to find): the same workloads admitted, none undecided."""
    compared = admitted = repacked = 0
    for seed in range(40):
        built = router.plan(platform_of(platform(Seeded(seed), most=20)), workers=1).built
        i = built.inputs
        for placements in (built.placements, built.placements[::3] + built.placements[2::3]):
            got = referee(i.policy, i.inventory, i.workloads, placements, i.running)
            want = plain(built, placements, built.decisions)
            assert got.undecided == [] and None not in want.values(), seed
            assert sorted(got.checked) == sorted(want), seed
            assert {a.workload for a in got.admitted} == {n for n, v in want.items() if v}, seed
            compared += len(want)
            admitted += got.falsely_unplaced
            repacked += sum(a.how == "re-packed" for a in got.admitted)
            assert got.together <= got.falsely_unplaced
    assert compared > 300 and admitted > 50 and repacked > 0, (compared, admitted, repacked)


def test_the_same_verdicts_whatever_the_worker_count() -> None:
    """Four partitions, each of two 8-GPU nodes holding 4 + 4 GPUs recorded apart: an 8-GPU
    job fits each only by re-packing, a 12-GPU pair of jobs in none. Forked or not, the
    same verdicts (and the seeded platforms' too)."""
    parts = [
        {"name": f"p{k}", "nodes": 2, "cpus_per_node": 96, "memory_per_node": "1TiB"}
        | {"gpus_per_node": 8, "gpu_type": "h100"}
        for k in range(4)
    ]
    inv = {"clusters": [{"name": "hpc", "backend": "slurm", "partitions": parts}]}
    policy = "rule all:\n  route slurm where name == workload.labels.part\n"
    jobs: list[dict[str, Any]] = []
    hand: dict[str, list[tuple[str, int]]] = {}
    for k in range(4):
        part = {"part": f"p{k}"}
        jobs += [job(f"{n}{k}", g, labels=part) for n, g in (("a", 4), ("b", 4), ("c", 8))]
        jobs += [job(f"d{k}", 8, labels=part)] if k % 2 else [job(f"e{k}", 6, labels=part)]
        hand |= {f"a{k}": [(f"hpc/p{k}", 0)], f"b{k}": [(f"hpc/p{k}", 1)]}
    one, three = (judge(policy, inv, jobs, hand, workers=w) for w in (1, 3))
    assert {a.how for a in one.admitted} == {"re-packed"} and one.falsely_unplaced == 8
    assert one == three and one.together == 4
    for seed in (17, 23):
        built = router.plan(platform_of(platform(Seeded(seed), most=20)), workers=1).built
        i = built.inputs
        rest = built.placements[::2]
        a, b = (
            referee(i.policy, i.inventory, i.workloads, rest, i.running, workers=w) for w in (1, 3)
        )
        assert a == b and a.checked


def test_each_fits_alone_but_not_together() -> None:
    # One 8-GPU node free: each of two 8-GPU jobs fits there alone, one of them together.
    inv = slurm(2, 8, 96, "1TiB")
    jobs = [job("a", 8), job("b", 8), job("c", 8)]
    got = judge(POLICY, inv, jobs, {"a": [("hpc/gpu", 0)]})
    assert got.falsely_unplaced == 2 and got.together == 1
    assert got.together_by_component == {"hpc/gpu": 1}
    # Two free nodes: both together.
    got = judge(POLICY, slurm(3, 8, 96, "1TiB"), jobs, {"a": [("hpc/gpu", 0)]})
    assert (got.falsely_unplaced, got.together) == (2, 2)


def test_together_counts_the_quota_the_ones_before_took() -> None:
    inv = slurm(3, 8, 96, "1TiB")
    jobs = [job("a", 4, team="x"), job("b", 4, team="x"), job("c", 4, team="x")]
    quota = POLICY + '\nquota x_gpus:\n  for team == "x"\n  limit gpus <= 8\n'
    got = judge(quota, inv, jobs, {"a": [("hpc/gpu", 0)]})
    assert got.falsely_unplaced == 2 and got.together == 1


def test_together_by_re_packing_what_does_not_fit_beside() -> None:
    # 4 + 4 GPUs on two nodes: an 8-GPU job fits only if one 4 moves; then nothing else does.
    inv = slurm(2, 8, 96, "1TiB")
    jobs = [job("a", 4), job("b", 4), job("c", 8), job("d", 8)]
    got = judge(POLICY, inv, jobs, {"a": [("hpc/gpu", 0)], "b": [("hpc/gpu", 1)]})
    assert [a.how for a in got.admitted] == ["re-packed", "re-packed"]
    assert got.together == 1
    assert (
        judge(
            POLICY, inv, jobs, {"a": [("hpc/gpu", 0)], "b": [("hpc/gpu", 1)]}, repack=False
        ).together
        == 0
    )
