"""tests/pack/audit_dive.py: the audit's second witness finder (router's own dive, asked from
a plan), whose "fits" rests on its sums, not on the dive."""

from __future__ import annotations

import router
from router.models.placement import Placement
from tests.pack.audit_dive import Asked, ask_plan, packs, valid
from tests.pack.test_admits import POLICY, job, slurm

FREE = (0, 48, 192)


def test_a_pod_that_fits_once_another_moves_is_packed_and_checked() -> None:
    """Two nodes of 48 CPUs and 192 memory, 22 pods of 4 CPUs: the (8 CPUs, 10) pod fits only
    where the pods are dealt by memory (tests/solve/test_configs.py's one-more case)."""
    pods = {(0, 4, m, False): 1 for m in [*range(4, 25), 74]}
    pods[0, 8, 10, False] = 1
    verdict, got = packs(FREE, 2, pods)
    assert verdict == "fits" and valid(FREE, 2, pods, got) == []
    assert sum(n for _, n in got) <= 2


def test_more_than_the_nodes_hold_is_a_proof_of_no() -> None:
    assert packs(FREE, 2, {(0, 30, 16, False): 3}) == ("no", [])
    assert packs(FREE, 2, {(0, 30, 16, False): 2})[0] == "fits"
    assert packs(FREE, 2, {(0, 49, 16, False): 1}) == ("no", [])  # larger than a node


def test_the_sums_catch_what_a_witness_gets_wrong() -> None:
    pods = {(0, 30, 16, False): 2, (0, 0, 0, True): 1}
    assert valid(FREE, 2, pods, [((0, 2), 1), ((1, 0), 1)]) == [
        "pattern (0, 2): 60 of 48 on axis 1"
    ]
    assert valid(FREE, 1, pods, [((1, 1), 1)]) == [
        "pattern (1, 1): a whole node shares",
        "(0, 30, 16, False): 1 of 2 pods held",
    ]
    assert valid(FREE, 2, pods, [((1, 0), 1), ((0, 1), 1), ((0, 1), 1)])[0] == "3 nodes of 2"


def test_a_plan_is_asked_job_by_job() -> None:
    """4 + 4 GPUs on two nodes of 8, an 8-GPU job left out: it fits once they share a node;
    with a third 4-GPU job placed, it does not (20 of 16 GPUs)."""
    p = router.Platform.from_objects(
        policy=POLICY,
        inventory=slurm(2, 8, 96, "1TiB"),
        workloads=[job("a", 4), job("b", 4), job("c", 8), job("d", 4)],
    )
    ev = p.evaluator()

    def placed(*names: str) -> list[Placement]:
        out = []
        for w in p.workloads:
            if w.name in names:
                c = ev.decide(w).candidates[0]
                out.append(Placement(w, c.target, "all", "p:1", 0, c.options, c.resources))
        return out

    assert ask_plan(p, placed("a", "b")) == [
        Asked("c", "hpc/gpu", "fits"),
        Asked("d", "hpc/gpu", "fits"),
    ]
    assert ask_plan(p, placed("a", "b", "d")) == [Asked("c", "hpc/gpu", "no")]
