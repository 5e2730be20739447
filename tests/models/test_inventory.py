"""The inventory models: clusters, partitions, node pools, and target references."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from pydantic import ValidationError

from router.models import Cluster, Inventory, NodePool, Partition, Taint, TargetRef
from router.models.schema import json_schema

PARTITION: dict[str, Any] = {
    "name": "gpu-h100",
    "nodes": 32,
    "gpus_per_node": 8,
    "gpu_type": "h100",
    "cpus_per_node": 96,
    "memory_per_node": "2TiB",
    "max_time": "72h",
    "features": ["ib", "lustre"],
    "cost_per_gpu_hour": 2.5,
}
POOL: dict[str, Any] = {
    "name": "a10g",
    "nodes": 8,
    "max_nodes": 32,
    "gpus_per_node": 4,
    # a100, not the name's a10g: an A10G has no MIG, and the pool cuts a GPU (stop 24)
    "gpu_type": "a100",
    "cpus_per_node": 48,
    "memory_per_node": "192GiB",
    "labels": {"node.kubernetes.io/instance-type": "g5.12xlarge"},
    "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
    "mig": [{"gpus": 1, "slices": {"1g.10gb": 7}}],
    "namespace": "serving",
    "cost_per_gpu_hour": 1,
}


def inventory(**changes: Any) -> dict[str, Any]:
    data = {
        "clusters": [
            {"name": "hpc-east", "backend": "slurm", "partitions": [copy.deepcopy(PARTITION)]},
            {"name": "k8s-prod", "backend": "kubernetes", "node_pools": [copy.deepcopy(POOL)]},
        ]
    }
    data.update(changes)
    return data


def error_of(model: Any, data: Any) -> str:
    with pytest.raises(ValidationError) as info:
        model.model_validate(data)
    return str(info.value)


def test_good_inventory_values() -> None:
    inv = Inventory.model_validate(inventory())
    part = inv.clusters[0].partitions[0]
    assert isinstance(part, Partition)
    assert (part.memory_per_node, part.max_time, part.cpus_per_node) == (2097152, 259200, 96)
    assert part.features == ["ib", "lustre"] and part.cost_per_gpu_hour == 2.5
    assert (part.qos, part.account, part.default) == (None, None, False)
    pool = inv.clusters[1].node_pools[0]
    assert isinstance(pool, NodePool)
    assert pool.memory_per_node == 196608 and pool.max_time is None
    assert pool.taints == [Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule")]
    assert pool.slices_per_node == {"1g.10gb": 7} and pool.whole_gpus_per_node == 3
    assert pool.namespace == "serving"
    assert pool.cost_per_gpu_hour == 1.0 and pool.cost_per_node_hour == 0.0


def test_capacity_nodes() -> None:
    inv = Inventory.model_validate(inventory())
    assert inv.clusters[0].partitions[0].capacity_nodes == 32
    assert inv.clusters[1].node_pools[0].capacity_nodes == 32
    pool = NodePool.model_validate({**POOL, "max_nodes": None})
    assert pool.capacity_nodes == 8


def test_targets_sorted_by_id() -> None:
    data = inventory()
    data["clusters"][0]["partitions"].insert(0, {**PARTITION, "name": "zz-cpu", "gpus_per_node": 0})
    data["clusters"].insert(0, data["clusters"].pop())
    inv = Inventory.model_validate(data)
    refs = inv.targets()
    assert [r.id for r in refs] == ["hpc-east/gpu-h100", "hpc-east/zz-cpu", "k8s-prod/a10g"]
    assert refs[2] == TargetRef(
        "k8s-prod",
        "kubernetes",
        inv.clusters[0].node_pools[0],
        "k8s-prod/a10g",
        ("k8s-prod/a10g",),  # an inline target is a node set of its own
    )
    assert inv.target("hpc-east/zz-cpu").target.name == "zz-cpu"
    assert inv.target("k8s-prod/a10g").backend == "kubernetes"
    assert inv.cluster("hpc-east").backend == "slurm"
    with pytest.raises(KeyError, match="no target"):
        inv.target("nope/x")
    assert len(set(refs)) == 3  # hashable


def test_inventory_is_frozen_and_hashable() -> None:
    a, b = Inventory.model_validate(inventory()), Inventory.model_validate(inventory())
    assert a == b and hash(a) == hash(b)
    with pytest.raises(ValidationError):
        a.clusters = []  # type: ignore[misc]


@pytest.mark.parametrize(
    ("change", "text"),
    [
        ({"gpu_type": None}, "gpus_per_node is 8: a target with GPUs must state gpu_type"),
        ({"name": "GPU_H100"}, "DNS-1123 label"),
        ({"nodes": -1}, "whole number ≥ 0"),
        ({"cpus_per_node": 0}, "whole number ≥ 1"),
        ({"memory_per_node": "big"}, "memory size"),
        ({"max_time": "forever"}, "duration"),
        ({"features": ["ib;reboot"]}, "feature name"),
        ({"labels": {"#SBATCH": "x"}}, "label key"),
        ({"cost_per_gpu_hour": -1}, "number ≥ 0"),
        ({"cost_per_node_hour": "free"}, "number ≥ 0"),
        ({"cost_per_node_hour": float("nan")}, "number ≥ 0"),
        ({"qos": "high prio"}, "letters, digits"),
        ({"account": "$(id)"}, "letters, digits"),
        ({"default": "yes"}, "true or false"),
        ({"max_nodes": 4}, "max_nodes (4) must be ≥ nodes (32)"),
        ({"taints": []}, "Extra inputs"),
    ],
)
def test_partition_rules(change: dict[str, Any], text: str) -> None:
    assert text in error_of(Partition, {**PARTITION, **change})


def test_memory_per_node_required() -> None:
    data = dict(PARTITION)
    del data["memory_per_node"]
    assert "memory_per_node" in error_of(Partition, data)


@pytest.mark.parametrize(
    ("change", "text"),
    [
        ({"max_nodes": 4}, "max_nodes (4) must be ≥ nodes (8)"),
        ({"taints": [{"key": "a", "effect": "NoSchedul"}]}, "NoSchedule"),
        ({"taints": [{"key": "a b", "effect": "NoSchedule"}]}, "label key"),
        ({"mig": [{"gpus": 1, "slices": {"big slice": 1}}]}, "MIG profile"),
        ({"mig": [{"gpus": 1, "slices": {"1g.10gb": 0}}]}, "whole number ≥ 1"),
        ({"mig": {"1g.10gb": 7}}, "mig must say how the GPUs are cut"),
        ({"mig": [{"gpus": 5, "slices": {"1g.10gb": 7}}]}, "mig cuts 5 GPUs per node"),
        # typos of a profile name are not profiles of their own (the audit's A20)
        ({"mig": [{"gpus": 1, "slices": {"1g.10g": 7}}]}, "MIG profile"),
        ({"mig": [{"gpus": 1, "slices": {"1g.10gbb": 7}}]}, "MIG profile"),
        ({"mig": [{"gpus": 1, "slices": {"8g.80gb": 1}}]}, "MIG profile"),
        # a GPU has 7 compute slices: 8 one-slice instances is no cut at all
        ({"mig": [{"gpus": 1, "slices": {"1g.10gb": 8}}]}, "takes 8 compute slices"),
        (
            {"mig": [{"gpus": 1, "slices": {"3g.40gb": 2, "2g.20gb": 1}}]},
            "no GPU can be cut into 2 × 3g.40gb + 1 × 2g.20gb: that takes 8 compute slices",
        ),
        ({"mig": [{"gpus": 1, "slices": {"2c.3g.20gb": 2, "4g.40gb": 1}}]}, "takes 8 compute"),
        ({"gpus_per_node": 0, "gpu_type": None}, "mig cuts 1 GPUs per node, but gpus_per_"),
        ({"namespace": "Prod"}, "DNS-1123 label"),
        ({"qos": "x"}, "Extra inputs"),
    ],
)
def test_node_pool_rules(change: dict[str, Any], text: str) -> None:
    assert text in error_of(NodePool, {**POOL, **change})


@pytest.mark.parametrize(
    "slices",
    [
        {"1g.10gb": 7},
        {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2},  # 3 + 2 + 2 = 7
        {"4g.40gb": 1, "3g.40gb": 1},
        {"1c.3g.20gb": 3, "4g.40gb": 1},  # compute instances count their own slices
        {"1g.10gb+me": 1, "1g.10gb": 6},
        {"7g.80gb": 1},
    ],
)
def test_mig_cuts_a_gpu_can_have(slices: dict[str, int]) -> None:
    pool = NodePool.model_validate({**POOL, "mig": [{"gpus": 1, "slices": slices}]})
    assert pool.mig[0].slices == slices


@pytest.mark.parametrize(
    ("cluster", "text"),
    [
        (
            {"backend": "slurm", "node_pools": [POOL]},
            "a slurm cluster has partitions, not node_pools",
        ),
        ({"backend": "slurm"}, "a slurm cluster must list at least one partition"),
        ({"backend": "kubernetes", "partitions": [PARTITION]}, "has node_pools, not partitions"),
        ({"backend": "kubernetes"}, "must list at least one node pool"),
        ({"backend": "slrum", "partitions": [PARTITION]}, "'slurm' or 'kubernetes'"),
        (
            {"backend": "slurm", "partitions": [PARTITION, PARTITION]},
            'two targets are named "gpu-h100"',
        ),
        (
            {
                "backend": "slurm",
                "partitions": [
                    {**PARTITION, "default": True},
                    {**PARTITION, "name": "b", "default": True},
                ],
            },
            "at most one partition may be the default",
        ),
        ({"backend": "slurm", "partitions": [PARTITION], "labels": {"a": "b c"}}, "label value"),
    ],
)
def test_cluster_rules(cluster: dict[str, Any], text: str) -> None:
    assert text in error_of(Cluster, {"name": "c", **cluster})


def test_unique_cluster_names() -> None:
    data = inventory()
    data["clusters"][1]["name"] = "hpc-east"
    assert 'two clusters are named "hpc-east"' in error_of(Inventory, data)


def test_inventory_schema() -> None:
    schema = json_schema("inventory")
    assert schema["required"] == ["clusters"]
    defs = schema["$defs"]
    assert {"Cluster", "NodePool", "Partition", "Taint"} <= set(defs)
    assert defs["Cluster"]["properties"]["backend"]["enum"] == ["slurm", "kubernetes"]
    assert defs["NodePool"]["properties"]["nodes"]["minimum"] == 0
    assert list(schema) == sorted(schema)
    assert json.dumps(schema) == json.dumps(json_schema("inventory"), sort_keys=True)
    with pytest.raises(ValueError, match="no schema"):
        json_schema("plan")  # type: ignore[arg-type]
