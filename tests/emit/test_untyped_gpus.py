"""Targets with GPUs of no stated type (`gpu_type: any`): the inventory, the shape check, and
what both emitters write for them.

Placements come from the real shape check (router.evaluate.shape), not hand-built resources,
so the emitters see what a plan would give them.
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from router.emit.kubernetes import KubernetesEmitter
from router.emit.slurm import SlurmEmitter
from router.evaluate.shape import shape
from router.evaluate.views import target_view
from router.models import NodePool, Partition, TargetRef, Workload
from router.models.placement import Placement, Resources
from tests.k8s.validate import validate_manifest

UNTYPED = Partition(
    name="gpu-legacy",
    nodes=4,
    gpus_per_node=4,
    gpu_type="any",
    cpus_per_node=64,
    memory_per_node=512 * 1024,
)
H100 = Partition(
    name="gpu-h100",
    nodes=4,
    gpus_per_node=8,
    gpu_type="h100",
    cpus_per_node=96,
    memory_per_node=1024 * 1024,
)
POOL = NodePool(
    name="gpu-plain",
    nodes=2,
    max_nodes=4,
    gpus_per_node=4,
    gpu_type="any",
    cpus_per_node=32,
    memory_per_node=256 * 1024,
    labels={"pool": "gpu-plain"},
)


def ref(t: Partition | NodePool) -> TargetRef:
    if isinstance(t, NodePool):
        return TargetRef("k8s", "kubernetes", t, f"k8s/{t.name}")
    return TargetRef("hpc", "slurm", t, f"hpc/{t.name}")


def workload(**fields: Any) -> Workload:
    base: dict[str, Any] = {
        "name": "train",
        "kind": "training",
        "gpus": 8,
        "cpus": 32,
        "memory": "128GiB",
        "duration": "2h",
        "command": ["python", "t.py"],
        "image": "ghcr.io/acme/train:1",
    }
    return Workload(**(base | fields))


def placed(w: Workload, t: Partition | NodePool) -> Placement:
    r = shape(w, ref(t), {})
    assert isinstance(r, Resources), r
    return Placement(w, ref(t), "gpu", "policies/p.route:1", 0, {}, r)


# ---- inventory ------------------------------------------------------------------------------


def test_gpu_type_any_states_untyped_gpus() -> None:
    assert UNTYPED.untyped_gpus and POOL.untyped_gpus
    assert not H100.untyped_gpus
    cpu = Partition(name="cpu", nodes=1, cpus_per_node=8, memory_per_node=1024, gpu_type="any")
    assert not cpu.untyped_gpus  # no GPUs: nothing to type


def test_gpus_without_gpu_type_is_still_an_error_that_suggests_any() -> None:
    with pytest.raises(ValidationError) as info:
        Partition(name="p", nodes=1, gpus_per_node=8, cpus_per_node=8, memory_per_node=1024)
    (error,) = info.value.errors()
    assert "must state gpu_type" in error["msg"]
    assert "gpu_type: any" in error["ctx"]["hint"]


# ---- shape ----------------------------------------------------------------------------------


def test_a_typed_workload_never_fits_untyped_gpus() -> None:
    for t in (UNTYPED, POOL):
        assert shape(workload(gpu_type="h100", gpus=4), ref(t), {}) == (
            "has GPUs of no stated type, the workload asks for h100"
        )


def test_an_any_workload_fits_by_count_and_carries_no_gpu_type() -> None:
    r = shape(workload(gpus=16), ref(UNTYPED), {})
    assert isinstance(r, Resources)
    assert (r.nodes, r.gpus_per_node, r.gpu_type) == (4, 4, None)
    assert "gpu_type" not in r.to_json()  # plan.json: GPUs, no type
    assert shape(workload(gpus=32), ref(UNTYPED), {}) == "4 nodes < 8 needed"
    service = shape(
        workload(kind="inference", gpus=2, replicas={"min": 1, "max": 3}), ref(POOL), {}
    )
    assert isinstance(service, Resources) and service.gpu_type is None
    assert shape(workload(gpus=8, nodes=1), ref(POOL), {}) == "4 GPUs per node < 8 asked per node"


def test_typed_targets_are_unchanged() -> None:
    r = shape(workload(gpus=16), ref(H100), {})
    assert isinstance(r, Resources) and r.gpu_type == "h100"
    assert shape(workload(gpu_type="a100"), ref(H100), {}) == (
        "has h100 GPUs, the workload asks for a100"
    )


def test_the_policy_reads_an_untyped_targets_gpu_type_as_any() -> None:
    assert target_view(ref(UNTYPED))["gpu_type"] == "any"


# ---- Slurm ----------------------------------------------------------------------------------


def sbatch(p: Placement) -> str:
    (text,) = SlurmEmitter().emit(p).values()
    return text


def directives(text: str) -> list[str]:
    return [
        line.removeprefix("#SBATCH ") for line in text.splitlines() if line.startswith("#SBATCH ")
    ]


def test_slurm_asks_an_untyped_partition_for_untyped_gpus(tmp_path: Path) -> None:
    text = sbatch(placed(workload(gpus=16), UNTYPED))
    found = directives(text)
    assert "--gpus-per-node=4" in found and "--nodes=4" in found
    assert not [d for d in found if "any" in d]
    path = tmp_path / "train.sbatch"
    path.write_text(text)
    subprocess.run(["bash", "-n", str(path)], check=True)


def test_slurm_untyped_even_when_resources_say_any() -> None:
    # A plan.json written by hand (or an older router) may carry gpu_type "any".
    p = placed(workload(gpus=4), UNTYPED)
    resources = dataclasses.replace(p.resources, gpu_type="any")
    text = sbatch(Placement(p.workload, p.target, p.rule, p.rule_source, 0, {}, resources))
    assert "--gpus-per-node=4" in directives(text)


def test_slurm_typed_partition_still_pins_the_type() -> None:
    assert "--gpus-per-node=h100:8" in directives(sbatch(placed(workload(gpus=16), H100)))


def test_slurm_untyped_script_still_quotes_user_strings() -> None:
    hostile = "x'; rm -rf / # $(id)\n#SBATCH --gpus-per-node=h100:8"
    w = workload(gpus=4, command=["echo", hostile.replace("\n", " ")], env={"X": hostile})
    text = sbatch(placed(w, UNTYPED))
    assert [d for d in directives(text) if d.startswith("--gpus")] == ["--gpus-per-node=4"]
    assert "\n#SBATCH --gpus-per-node=h100" not in text


# ---- Kubernetes -----------------------------------------------------------------------------


def test_kubernetes_untyped_pool_asks_for_plain_gpus_without_a_product_selector() -> None:
    (text,) = KubernetesEmitter().emit(placed(workload(gpus=4), POOL)).values()
    (job,) = [d for d in yaml.safe_load_all(text) if d]
    assert validate_manifest(job) == []
    spec = job["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"pool": "gpu-plain"}  # the pool's labels, nothing added
    (container,) = spec["containers"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "4"
    assert container["resources"]["requests"]["nvidia.com/gpu"] == "4"
    assert "gpu.product" not in text and ": any" not in text
