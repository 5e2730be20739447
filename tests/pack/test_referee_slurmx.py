"""slurmx-m2 (tests/pack/audit_s22.py's slurmx family, medium seed 2: 67 + 26 GPU nodes under
gpu, gpu-long, whole and preempt, 35 CPU nodes under cpu and debug, running work by node
name, 448 jobs). Router placed 271, and the referee (router/plan/admits.py) re-packed the
CPU component with a277 (17 CPUs, 43 GiB) added by plain first fit in node order (stop 23,
FINDINGS.md): 11 of 1,789 CPUs were left, and neither the solver's first fit over node
classes nor its exact searches in their limits found room for one more 17-CPU job. Best
fit (router/solve/pack.py best_fit, the last step of greedy._topped) packs one (272
placed), after which no unplaced job fits the CPU nodes: the smallest asks 17 CPUs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

DATA = Path(__file__).parent / "data" / "audit"
CPU_TARGETS = {"hpc/cpu", "hpc/debug"}


def test_slurmx_m2_leaves_out_no_job_the_cpu_nodes_take() -> None:
    import router
    from router.evaluate.evaluate import Evaluator
    from router.plan.admits import referee

    built = router.plan(router.load(DATA / "slurmx-m2"), workers=1, share_candidates=True).built
    i = built.inputs
    # Each workload's candidates on the CPU partitions only: the GPU component's re-packs
    # are what make the whole referee take minutes, and they are not what this is about.
    ev = Evaluator(i.policy, i.inventory)
    decisions = [ev.decide(w) for w in i.workloads]
    decisions = [
        replace(d, candidates=[c for c in d.candidates if c.target.id in CPU_TARGETS])
        for d in decisions
    ]
    judged = referee(
        i.policy, i.inventory, i.workloads, built.placements, i.running, decisions, together=False
    )
    placed = {p.workload.name for p in built.placements}
    left_out = {d.workload.name for d in decisions if d.candidates} - placed
    assert len(left_out) >= 20 and set(judged.checked) == left_out  # all looked at
    assert [a.workload for a in judged.admitted] == [], judged.admitted
    assert judged.undecided == [], judged.undecided
    on_cpu = sum(1 for p in built.placements if p.target.id in CPU_TARGETS)
    assert on_cpu >= 87, on_cpu  # 86 before best fit
