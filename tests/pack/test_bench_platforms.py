"""The bench platforms (router/bench/generator.py) carry what the model must handle: MIG pools,
services whose replicas hpa(...) clamps, spreads and `per` quotas; the same seed, the same
platform."""

from __future__ import annotations

from collections import Counter

import router
from router.bench.generator import generate
from router.evaluate.evaluate import Evaluator
from router.evaluate.quota import compile_quotas
from router.evaluate.spread import compile_spreads


def test_same_seed_same_platform_other_seed_another() -> None:
    a, b, c = generate("M", 1), generate("M", 1), generate("M", 2)
    assert (a.policy, a.inventory, a.workloads) == (b.policy, b.inventory, b.workloads)
    assert a.workloads != c.workloads


def test_platform_has_mig_pools_spreads_per_quotas_and_clamped_replicas() -> None:
    g = generate("M", 1)
    p = router.Platform.from_objects(policy=g.policy, inventory=g.inventory, workloads=g.workloads)
    policy, inventory, workloads = p.policy, p.inventory, p.workloads
    assert policy is not None
    mig = [t for t in inventory.targets() if t.target.mig]
    assert mig and all(
        t.target.slices_per_node == {"1g.10gb": 28} and t.target.whole_gpus_per_node == 4
        for t in mig
    )
    ev = Evaluator(policy, inventory)
    decisions = [ev.decide(w) for w in workloads]
    rules = Counter(d.rule.name for d in decisions if d.rule is not None and d.candidates)
    assert rules["small_inference"] > 0 and rules["inference"] > 0
    sliced = [
        c.resources
        for d in decisions
        if d.rule and d.rule.name == "small_inference"
        for c in d.candidates
    ]
    assert sliced and all(r.mig == "1g.10gb" and r.replicas_max <= 16 for r in sliced)
    # hpa(max = 16) clamps services asking for more
    asked = {w.name: w.max_replicas for w in workloads}
    clamped = [
        d
        for d in decisions
        if d.candidates and d.workload.is_service and asked[d.workload.name] > 16
    ]
    assert clamped and all(c.resources.replicas_max == 16 for d in clamped for c in d.candidates)
    spreads = compile_spreads(policy, inventory)
    assert [s.name for s in spreads] == ["app_replicas"]
    quotas = compile_quotas(policy, inventory, workloads=workloads)
    per_cluster = [q for q in quotas if q.name == "cluster_cpus"]
    assert len(per_cluster) == len(inventory.clusters)  # one part per cluster
