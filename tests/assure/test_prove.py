"""`check` blocks: proven over the whole workload space, or refuted with the smallest
counterexample; cross-checked against the evaluator on sampled workloads."""

from __future__ import annotations

import itertools
import random
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from router.assure.prove import CheckResult, prove_checks, runnable, violation
from router.evaluate.evaluate import Evaluator
from router.language import ast, load_policy
from router.models import Inventory, Workload, load_inventory
from tests.helpers import INVENTORY

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ml-platform"


def policy_of(text: str) -> ast.Policy:
    with tempfile.TemporaryDirectory(prefix="prove-") as folder:
        path = Path(folder) / "p.route"
        path.write_text(textwrap.dedent(text).lstrip())
        return load_policy(path)


def inventory() -> Inventory:
    return Inventory.model_validate(INVENTORY)


def prove(text: str, inv: Inventory | None = None) -> dict[str, CheckResult]:
    return {r.name: r for r in prove_checks(policy_of(text), inv or inventory())}


SHADOW = """
rule serve: when kind == "inference" route kubernetes
rule any_gpu: when gpus >= 1 and kind == "batch" route kubernetes
rule big: when gpus >= 8 route slurm with exclusive, qos = "high"
rule train: when kind == "training" route slurm
rule rest: route slurm

check gpu_jobs_on_slurm:
  for gpus > 0
  expect backend == "slurm"

check big_exclusive:
  for gpus >= 8
  expect exclusive

check big_training_exclusive:
  for gpus >= 8 and kind == "training"
  expect exclusive and qos == "high" and rule == "big"

check all_routed:
  for kind == "notebook"
  expect routed and not denied
"""


def test_example_properties_are_proven() -> None:
    results = prove_checks(load_policy(EXAMPLE / "policies"),
                           load_inventory(EXAMPLE / "inventory.yaml"))  # fmt: skip
    by_name = {r.name: r for r in results}
    assert by_name["big_training_is_exclusive_slurm"].status == "proven"
    assert by_name["inference_on_kubernetes"].status == "proven"
    assert all(r.status == "proven" and r.method == "cp-sat" for r in results), results


def test_false_property_gives_the_smallest_counterexample() -> None:
    r = prove(SHADOW)["gpu_jobs_on_slurm"]
    assert r.status == "refuted" and r.method == "cp-sat"
    assert r.counterexample == {"name": "gpu-jobs-on-slurm", "kind": "inference", "gpus": 1}
    assert r.decided_by is not None and r.decided_by[0] == "rule serve"
    assert str(r.decided_by[1]).endswith("p.route:1")
    assert r.outcome is not None and r.outcome["backend"] == "kubernetes"


def test_shadowed_rule_breaks_its_property() -> None:
    r = prove(SHADOW)["big_exclusive"]
    assert r.status == "refuted"
    # The inference rule comes first; 8 GPUs is the fewest the `for` allows.
    assert r.counterexample == {"name": "big-exclusive", "kind": "inference", "gpus": 8}
    assert r.decided_by is not None and r.decided_by[0] == "rule serve"
    assert str(r.decided_by[1]).endswith("p.route:1")


def test_true_properties_are_proven() -> None:
    results = prove(SHADOW)
    assert results["big_training_exclusive"].status == "proven"
    assert results["all_routed"].status == "proven"


def test_deny_rules_and_unrouted_workloads() -> None:
    text = """
    deny nb: when kind == "notebook" and gpus > 1 because "no"
    deny prod: when labels.tier == "prod" and team == "default" because "owner"
    rule train: when kind == "training" route slurm
    check notebooks_denied:
      for kind == "notebook" and gpus >= 2
      expect denied and rule == "nb"
    check prod_denied:
      for labels.tier == "prod"
      expect denied
    check routed:
      for kind == "training" or kind == "notebook"
      expect routed
    """
    r = prove(text)
    assert r["notebooks_denied"].status == "proven"
    prod = r["prod_denied"]
    assert prod.status == "refuted"
    assert prod.counterexample is not None
    assert prod.counterexample["labels"] == {"tier": "prod"}
    assert prod.counterexample["team"] not in ("default", None)
    routed = r["routed"]
    assert routed.status == "refuted"
    assert routed.counterexample == {"name": "routed", "kind": "notebook", "gpus": 0}
    assert routed.decided_by == ("no rule (unrouted)", None)


def test_target_semantics_every_admitted_target() -> None:
    text = """
    rule small: when kind == "training" route slurm where gpus_per_node >= workload.gpus
      else route kubernetes
    rule rest: route slurm
    check training_on_slurm:
      for kind == "training"
      expect backend == "slurm"
    check never_cpu_partition:
      for gpus >= 1
      expect target != "hpc/cpu"
    """
    r = prove(text)
    # The `else route` can send any training job to Kubernetes: refuted at 0 GPUs.
    t = r["training_on_slurm"]
    assert t.status == "refuted"
    assert t.counterexample == {"name": "training-on-slurm", "kind": "training", "gpus": 0}
    assert t.outcome is not None and t.outcome["backend"] == "kubernetes"
    # hpc/cpu (no GPUs) is still admitted by `rule rest` (no where): shape is not considered.
    assert r["never_cpu_partition"].status == "refuted"


def test_placed_is_shape_feasibility() -> None:
    text = """
    rule train: when kind == "training" route slurm else route kubernetes
    rule rest: route any
    check small_training_placed:
      for kind == "training" and gpus <= 8 and gpu_type == "any" and nodes == 1
        and gpus_per_node == gpus and duration <= 24h and memory <= 64GiB and cpus <= 32
      expect placed
    check spread_placed:
      for kind == "training" and gpus <= 8 and gpu_type == "any" and nodes == 1
        and duration <= 24h and memory <= 64GiB and cpus <= 32
      expect placed
    check training_placed:
      for kind == "training" and gpus <= 4
      expect placed
    """
    r = prove(text)
    assert r["small_training_placed"].status == "proven"
    # 5 GPUs at 1 per node need 5 nodes: no target has that many (the 4-GPU spread fits).
    assert r["spread_placed"].counterexample == {
        "name": "spread-placed",
        "kind": "training",
        "gpus": 5,
        "gpus_per_node": 1,
    }
    t = r["training_placed"]
    assert t.status == "refuted"
    # Fewest GPUs (0) and nodes (1), then closest to the default memory and duration: more
    # memory than Kubernetes' CPU pool, 4 x 128GiB (the GPU-tainted l4 pool takes no CPU
    # work), and longer than the 72h of the only Slurm partition with the memory.
    assert t.counterexample == {"name": "training-placed", "kind": "training", "gpus": 0,
                                "memory": "524289MiB", "duration": "259201s"}  # fmt: skip


def test_unencodable_condition_falls_back_to_enumeration() -> None:
    text = """
    rule heavy: when cpus * gpus > 100 route kubernetes
    rule serve: when kind == "inference" route kubernetes
    rule rest: route slurm
    check product_true:
      for cpus * gpus > 100
      expect backend == "kubernetes"
    check product_false:
      for cpus * gpus > 100
      expect backend == "slurm"
    """
    r = prove(text)
    true = r["product_true"]
    assert true.status == "enumerated" and not true.failed
    assert "checked by enumeration over" in true.note and "not proven" in true.note
    false = r["product_false"]
    assert false.status == "refuted" and false.method == "enumeration"
    assert false.counterexample is not None and false.counterexample["kind"] == "inference"
    assert false.counterexample["cpus"] * false.counterexample["gpus"] > 100


def test_enumeration_samples_a_huge_product_without_building_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 24 labels, each absent, "a" or another value: 3^24 (about 3 * 10^11) combinations with
    # the other axes. The sample is drawn by index; a list of the product would not fit in
    # memory (issue 15: `router test` was killed), so a product read past the limit fails here.
    from router.assure import prove as prove_module

    real = itertools.product

    def bounded(*axes: Any) -> Any:
        for n, combo in enumerate(real(*axes)):
            assert n <= prove_module.ENUMERATION_LIMIT, "the whole product is being built"
            yield combo

    monkeypatch.setattr(itertools, "product", bounded)  # the module prove.py reads it from
    labels = " or ".join(f'labels.l{i} == "a"' for i in range(24))
    text = f"""
    rule heavy: when cpus * gpus > 100 route kubernetes
    rule tagged: when {labels} route kubernetes
    rule rest: route slurm
    check product_true:
      for cpus * gpus > 100
      expect backend == "kubernetes"
    """
    result = prove(text)["product_true"]
    assert result.status == "enumerated" and not result.failed
    assert "checked by sampling over" in result.note


def test_combo_is_the_product_item_at_that_index() -> None:
    from router.assure.prove import _combo

    axes: list[tuple[str, list[Any]]] = [("a", [1, 2, 3]), ("b", ["x"]), ("c", [None, True])]
    axes.append(("d", [5, 6, 7, 8]))
    sizes = [len(v) for _, v in axes]
    every = list(itertools.product(*(v for _, v in axes)))
    assert [_combo(axes, sizes, i) for i in range(len(every))] == every


# -- cross-check against the evaluator ------------------------------------------------------
def _sample(rng: random.Random) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": "s"}
    doc["kind"] = rng.choice(["training", "inference", "notebook", "batch", "other"])
    doc["gpus"] = rng.choice([0, 0, 1, 2, 3, 4, 7, 8, 9, 16, 17, 64, 300])
    if rng.random() < 0.2 and doc["gpus"]:
        doc["nodes"] = rng.choice([1, 2, 4])
    doc["cpus"] = rng.choice([1, 4, 32, 48, 64, 100, 200])
    doc["memory"] = rng.choice(["1GiB", "4GiB", "64GiB", "65GiB", "200GiB", "1TiB", "3TiB"])
    doc["duration"] = rng.choice(["1h", "4h", "24h", "25h", "48h", "73h", "100h"])
    doc["team"] = rng.choice(["default", "research", "search", "x"])
    doc["gpu_type"] = rng.choice(["any", "any", "h100", "a100", "l4"])
    if rng.random() < 0.3:
        doc["labels"] = {"tier": rng.choice(["prod", "dev"])}
    return doc


POLICIES = [
    SHADOW,
    """
    deny nb: when kind == "notebook" and gpus > 1 because "no"
    rule big: when kind == "training" and gpus >= 8 route slurm with exclusive
      where gpu_type in ["h100", "a100"] and "ib" in features
    rule small: when kind == "training" route slurm where gpus_per_node >= workload.gpus
      else route kubernetes with queue = "t"
    rule serve: when kind == "inference" route kubernetes with hpa
    rule rest: route any
    check a: for kind == "training" and gpus >= 8 expect backend == "slurm" and exclusive
    check b: for kind == "training" expect backend == "slurm"
    check c: for gpus <= 4 and memory <= 64GiB and duration <= 24h expect placed or denied
    check d: for kind != "inference" expect cluster != "k8s" or denied
    check e: for gpus >= 2 expect denied or rule != "serve"
    """,
]


@pytest.mark.parametrize("text", POLICIES)
def test_cp_sat_agrees_with_the_evaluator(text: str) -> None:
    policy, inv = policy_of(text), inventory()
    ev = Evaluator(policy, inv)
    results = prove_checks(policy, inv)
    rng = random.Random(7)
    samples = [Workload.model_validate(runnable(_sample(rng))) for _ in range(400)]
    for check, result in zip(policy.checks, results, strict=True):
        broken = [w for w in samples if violation(ev, check, w) is not None]
        if result.status == "proven":
            assert not broken, (check.name, broken[:1])
        else:
            assert result.status == "refuted", result
            assert result.counterexample is not None
            w = Workload.model_validate(runnable(result.counterexample))
            assert violation(ev, check, w) is not None, (check.name, result.counterexample)
            # Smallest: no sampled violation has fewer GPUs.
            assert all(s.gpus >= w.gpus for s in broken), check.name
