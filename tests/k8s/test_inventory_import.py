"""`router inventory import kubernetes`: `kubectl get nodes -o json` → inventory YAML → a plan.

The fixture, data/gke-nodes.json, is HAND-MADE in the layout `kubectl get nodes -o json` prints
(real clusters' outputs are in tests/importers/data): an L4 pool of 3 nodes across three zones
with the nvidia.com/gpu taint (one node cordoned: left out), an A100 pool with MIG slices (GPU
operator, mixed strategy), a CPU pool, an H100 pool whose two nodes differ (8 GPUs and 4: two
pools, by instance type), and a node joined by hand without a pool label (left out). The
imported YAML is loaded as `router plan` loads it, compared value by value, and planned
against: every manifest validates and selects exactly the imported pool.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from router.errors import LoadError
from router.importers.kubernetes import (
    gpu_type_of,
    import_cluster,
    import_nodes,
    parse_quantity,
    pool_name,
)
from router.models import Inventory, NodePool, load_inventory
from tests.helpers import make_project
from tests.k8s.test_plan_manifests import check_plan, plan_of

DATA = Path(__file__).parent / "data" / "gke-nodes.json"
POOL = "cloud.google.com/gke-nodepool"
TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
BASE = {
    "kubernetes.io/arch": "amd64",
    "kubernetes.io/os": "linux",
    "topology.kubernetes.io/region": "us-central1",
}


def nodes() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text())
    return data


def imported(tmp_path: Path, data: dict[str, Any] | None = None, **kw: Any) -> Inventory:
    path = tmp_path / "inventory.yaml"
    path.write_text(import_nodes(data or nodes(), **kw))
    return load_inventory(path)


def pools(inv: Inventory) -> dict[str, NodePool]:
    (cluster,) = inv.clusters
    return {p.name: p for p in cluster.node_pools}


def test_gke_cluster_imports_exact_values(tmp_path: Path) -> None:
    inv = imported(tmp_path, cluster="gke-prod")
    (cluster,) = inv.clusters
    assert (cluster.name, cluster.backend) == ("gke-prod", "kubernetes")
    got = pools(inv)
    assert sorted(got) == [
        "a100-mig",
        "cpu-pool",
        "h100-train-a3-highgpu-4g",
        "h100-train-a3-highgpu-8g",
        "l4-pool",
    ]

    l4 = got["l4-pool"]
    assert (l4.nodes, l4.gpus_per_node, l4.gpu_type) == (2, 4, "l4")  # one is cordoned
    assert l4.cpus_per_node == 47  # allocatable "47810m", rounded down
    assert l4.memory_per_node == 183309532 // 1024  # allocatable Ki → MiB
    assert l4.mig == []
    # Three zones: no zone label. The cordon's taint is the node's, not the pool's.
    assert l4.labels == {
        **BASE,
        POOL: "l4-pool",
        "node.kubernetes.io/instance-type": "g2-standard-48",
        "nvidia.com/gpu.product": "NVIDIA-L4",
        "cloud.google.com/gke-accelerator": "nvidia-l4",
        "team": "ml-serving",
    }
    assert [t.model_dump() for t in l4.taints] == [TAINT]

    a100 = got["a100-mig"]
    # 4 whole GPUs (nvidia.com/gpu) + 2 cut into 7 x 1g.10gb + 2 into 2 x 3g.40gb: 8 in all
    assert (a100.nodes, a100.gpus_per_node, a100.gpu_type) == (2, 8, "a100")
    assert (a100.cpus_per_node, a100.memory_per_node) == (95, 1361479516 // 1024)
    assert a100.slices_per_node == {"1g.10gb": 14, "3g.40gb": 4}
    assert a100.whole_gpus_per_node == 4
    assert a100.labels == {
        **BASE,
        POOL: "a100-mig",
        "node.kubernetes.io/instance-type": "a2-ultragpu-8g",
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
        "cloud.google.com/gke-accelerator": "nvidia-a100-80gb",
        "topology.kubernetes.io/zone": "us-central1-a",
    }  # one zone: kept
    assert [t.model_dump() for t in a100.taints] == [TAINT]

    cpu = got["cpu-pool"]
    assert (cpu.nodes, cpu.gpus_per_node, cpu.gpu_type) == (2, 0, None)
    assert (cpu.cpus_per_node, cpu.memory_per_node) == (31, 126869712 // 1024)
    assert cpu.labels == {
        **BASE,
        POOL: "cpu-pool",
        "node.kubernetes.io/instance-type": "n2-standard-32",
    }
    assert cpu.taints == [] and cpu.mig == []

    # Two kinds of node: 8 GPUs / 207 CPUs / 1839328 MiB and 4 GPUs / "95500m" / 928957 MiB,
    # each a pool of its own, told apart by the instance type (nothing shrunk to the smaller).
    h8, h4 = got["h100-train-a3-highgpu-8g"], got["h100-train-a3-highgpu-4g"]
    assert (h8.nodes, h8.gpus_per_node, h8.cpus_per_node, h8.memory_per_node) == (
        1,
        8,
        207,
        1839328,
    )
    assert (h4.nodes, h4.gpus_per_node, h4.cpus_per_node, h4.memory_per_node) == (
        1,
        4,
        95,
        951252052 // 1024,
    )
    for pool, kind in ((h8, "a3-highgpu-8g"), (h4, "a3-highgpu-4g")):
        assert pool.labels == {
            **BASE,
            POOL: "h100-train",
            "team": "research",
            "node.kubernetes.io/instance-type": kind,
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "cloud.google.com/gke-accelerator": "nvidia-h100-80gb",
            "topology.kubernetes.io/zone": "us-central1-c",
        }
    assert [t.model_dump() for t in h4.taints] == [TAINT]
    assert [t.model_dump() for t in h8.taints] == [
        {"key": "dedicated", "value": "research", "effect": "NoExecute"},
        TAINT,
    ]

    for pool in got.values():  # nothing imported can go stale under a running node
        assert not any(
            k.startswith(("beta.", "failure-domain.", "feature.node."))
            or k in ("kubernetes.io/hostname", "nvidia.com/cuda.driver.major")
            or k.startswith("cloud.google.com/gke-boot")
            for k in pool.labels
        )
        assert pool.max_nodes is None and pool.cost_per_gpu_hour == 0


def test_comments_say_what_was_left_out_and_why() -> None:
    text = import_nodes(nodes(), cluster="gke-prod")
    comments = " ".join(
        line.strip().lstrip("#").strip()
        for line in text.splitlines()
        if line.lstrip().startswith("#")
    )
    assert "grouped into pools by the provider's pool label" in comments and POOL in comments
    assert "build-runner-1: no pool label" in comments  # left out, not a "default" pool
    assert "h100-train has 2 kinds of node: one pool per kind" in comments
    assert "1 × 8 × h100, 207 CPUs, 1839328MiB" in comments
    assert "1 × 4 × h100, 95 CPUs, 928957MiB" in comments
    assert "gke-prod-l4-pool-3f2a9c1e-7xqv: cordoned (unschedulable), left out" in comments
    assert "build-runner-1" not in yaml.safe_dump(yaml.safe_load(text))


def test_same_input_same_bytes() -> None:
    data = nodes()
    shuffled = copy.deepcopy(data)
    shuffled["items"].reverse()
    assert import_nodes(data) == import_nodes(shuffled)


def test_pool_label_option_and_names_that_are_not_dns_labels(tmp_path: Path) -> None:
    got = pools(imported(tmp_path, pool_label="node.kubernetes.io/instance-type"))
    # g2-standard-48 is a DNS label already; the hand-joined node now has a pool of its own.
    assert sorted(got) == [
        "a2-ultragpu-8g",
        "a3-highgpu-4g",
        "a3-highgpu-8g",
        "g2-standard-48",
        "n2-standard-32",
        "n2-standard-8",
    ]
    assert got["n2-standard-8"].labels["node.kubernetes.io/instance-type"] == "n2-standard-8"
    data = nodes()
    for item in data["items"]:
        item["metadata"]["labels"]["node.kubernetes.io/instance-type"] = "g5.12xlarge"
    text = import_nodes(data, pool_label="node.kubernetes.io/instance-type")
    got = pools(Inventory.model_validate(yaml.safe_load(text)))
    assert got and all(name.startswith("g5-12xlarge-") for name in got)  # split by kind
    for pool in got.values():
        assert pool.labels["node.kubernetes.io/instance-type"] == "g5.12xlarge"  # the real value
    assert 'named "g5-12xlarge' in text


def test_default_pool_label_order() -> None:
    data = nodes()
    for item in data["items"]:
        labels = item["metadata"]["labels"]
        if POOL in labels:
            labels["router.dev/pool"] = "p-" + labels[POOL]
    got = pools(Inventory.model_validate(yaml.safe_load(import_nodes(data))))
    assert sorted(got) == [
        "p-a100-mig",
        "p-cpu-pool",
        "p-h100-train-a3-highgpu-4g",
        "p-h100-train-a3-highgpu-8g",
        "p-l4-pool",
    ]
    assert got["p-l4-pool"].labels[POOL] == "l4-pool"  # still common, still kept


def node(
    name: str,
    labels: dict[str, str],
    capacity: dict[str, str],
    allocatable: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints or []},
        "status": {
            "capacity": capacity,
            "allocatable": allocatable or capacity,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def test_every_gpu_in_mig_mode_and_the_single_strategy() -> None:
    mixed_all = node(
        "m1",
        {
            "agentpool": "migall",
            "nvidia.com/gpu.count": "8",
            "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
        },
        {"cpu": "96", "memory": "1000Gi", "nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "56"},
    )
    single = node(
        "s1",
        {"agentpool": "single", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"},
        {"cpu": "64", "memory": "500Gi", "nvidia.com/gpu": "56"},
    )
    cluster = import_cluster({"items": [mixed_all, single]})
    fields = {t.fields["name"]: t for t in cluster.targets}
    assert fields["migall"].fields["gpus_per_node"] == 8
    assert fields["migall"].fields["mig"] == [{"gpus": 8, "slices": {"1g.10gb": 7}}]
    assert any("every GPU is in MIG mode" in n for n in fields["migall"].notes)
    # single strategy: each nvidia.com/gpu is a slice; 56 × 1g.5gb is 8 GPUs of 7
    assert fields["single"].fields["gpus_per_node"] == 8
    assert fields["single"].fields["gpu_type"] == "a100"
    assert fields["single"].fields["mig"] == [{"gpus": 8, "slices": {"1g.5gb": 7}}]
    assert fields["single"].fields["mig_strategy"] == "single"
    assert any("single strategy" in n for n in fields["single"].notes)
    assert cluster.targets and Inventory.model_validate(
        yaml.safe_load(import_nodes({"items": [mixed_all, single]}))
    )


def test_lifecycle_taints_leave_nodes_out_and_quantities_parsed() -> None:
    kept = [{"key": "dedicated", "effect": "NoSchedule"}]
    going = [
        *kept,
        {"key": "ToBeDeletedByClusterAutoscaler", "value": "1717", "effect": "NoSchedule"},
    ]
    items = [
        node(
            f"n{i}",
            {
                "eks.amazonaws.com/nodegroup": "ng",
                "eks.amazonaws.com/nodegroup-image": "ami-0abc",
                "karpenter.sh/capacity-type": "spot",
            },
            {"cpu": "16", "memory": "64Gi"},
            {"cpu": cpu, "memory": mem},
            kept if i < 3 else going,
        )
        for i, (cpu, mem) in enumerate(
            [("15890m", "62Gi"), ("16", "64000Mi"), ("15.5", "66000000000"), ("16", "64Gi")]
        )
    ]
    cluster = import_cluster({"apiVersion": "v1", "kind": "NodeList", "items": items})
    assert cluster.exclusions == [
        "n3: tainted ToBeDeletedByClusterAutoscaler=1717:NoSchedule, left out"
    ]
    fields = [t.fields for t in cluster.targets]  # three kinds of node: three pools
    assert {(f["cpus_per_node"], f["memory_per_node"]) for f in fields} == {
        (15, "62GiB"),
        (15, f"{66000000000 // (1 << 20)}MiB"),
        (16, "64000MiB"),
    }
    assert all(f["taints"] == [{"key": "dedicated", "effect": "NoSchedule"}] for f in fields)
    assert all(
        f["labels"]["eks.amazonaws.com/nodegroup"] == "ng"
        and "eks.amazonaws.com/nodegroup-image" not in f["labels"]
        for f in fields
    )


@pytest.mark.parametrize(
    ("product", "short"),
    [
        ("NVIDIA-H100-80GB-HBM3", "h100"),
        ("NVIDIA-H200", "h200"),
        ("NVIDIA-GH200-480GB", "gh200"),
        ("NVIDIA-A100-SXM4-80GB", "a100"),
        ("NVIDIA-A100-PCIE-40GB", "a100"),
        ("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "a100"),
        ("NVIDIA-A10G", "a10g"),
        ("NVIDIA-A10", "a10"),
        ("NVIDIA-L4", "l4"),
        ("NVIDIA-L40S", "l40s"),
        ("Tesla-T4", "t4"),
        ("Tesla-V100-SXM2-16GB", "v100"),
        ("NVIDIA-B200", "b200"),
        ("nvidia-tesla-a100", "a100"),
        ("nvidia-h100-mega-80gb", "h100"),
        ("NVIDIA-RTX-A6000", "rtx-a6000"),
        ("NVIDIA-GeForce-RTX-4090", "rtx-4090"),
    ],
)
def test_gpu_type_mapping(product: str, short: str) -> None:
    assert gpu_type_of(product) == short


def test_quantities_and_pool_names() -> None:
    assert int(parse_quantity("95500m")) == 95
    assert int(parse_quantity("96")) == 96
    assert parse_quantity("1Ki") == 1024 and parse_quantity("1e3") == 1000
    assert parse_quantity("2G") == 2 * 10**9
    with pytest.raises(ValueError):
        parse_quantity("12 cores")
    assert pool_name("l4-pool") == "l4-pool"
    assert pool_name("Standard_ND96asr_v4") == "standard-nd96asr-v4"
    long = pool_name("x" * 80)
    assert len(long) <= 63 and long.startswith("x")


@pytest.mark.parametrize(
    ("data", "kw", "message"),
    [
        ({"items": []}, {}, "empty"),
        ({"nodes": []}, {}, "kubectl get nodes -o json"),
        (None, {"pool_label": "nope"}, "no node has the label nope"),
        (None, {"cluster": "GKE_Prod"}, "not a DNS-1123 label"),
        ({"items": [node("n", {}, {"cpu": "4", "memory": "8Gi"})]}, {}, "no node carries a pool"),
        (
            {"items": [node("n", {"agentpool": "a"}, {"cpu": "four", "memory": "8Gi"})]},
            {},
            "not a Kubernetes quantity",
        ),
    ],
)
def test_errors(data: Any, kw: dict[str, Any], message: str) -> None:
    with pytest.raises(LoadError, match=message):
        import_nodes(nodes() if data is None else data, **kw)


def test_cli_writes_the_file(tmp_path: Path) -> None:
    from router.cli.main import cli

    out = tmp_path / "inv" / "inventory.yaml"
    result = CliRunner().invoke(
        cli,
        [
            "inventory",
            "import",
            "kubernetes",
            "--from-json",
            str(DATA),
            "--cluster",
            "gke-prod",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "5 targets, 8 usable nodes, each counted once" in result.output
    assert out.read_text() == import_nodes(nodes(), cluster="gke-prod")
    result = CliRunner().invoke(
        cli,
        [
            "inventory",
            "import",
            "kubernetes",
            "--from-json",
            str(DATA),
            "--pool-label",
            "agentpool",
        ],
    )
    assert result.exit_code == 1 and "no node has the label agentpool" in result.output


# ---------------------------------------------------------------- and then a plan

POLICY = """
policy imported
rule mig_serving:
  when kind == "inference" and labels.mig == "yes"
  route kubernetes with mig = "1g.10gb", hpa where "1g.10gb" in mig
rule serving:
  when kind == "inference"
  route kubernetes with hpa(min = 2, max = 9), pdb where gpu_type == "l4"
rule training:
  when kind == "training"
  route kubernetes with operator = "jobset", queue = "research", tolerate = ["dedicated"]
    where gpu_type == "h100"
rule batch:
  route kubernetes where gpus_per_node == 0
"""


def test_plan_against_the_imported_inventory(tmp_path: Path) -> None:
    inventory = yaml.safe_load(import_nodes(nodes(), cluster="gke-prod"))
    serve = {
        "kind": "inference",
        "image": "ghcr.io/acme/serve:1",
        "gpus": 1,
        "cpus": 8,
        "memory": "32GiB",
        "port": 8080,
    }
    workloads = [
        {"name": "chat", **serve, "replicas": {"min": 3, "max": 9}},
        {"name": "embed", **serve, "labels": {"mig": "yes"}, "replicas": {"min": 4, "max": 8}},
        {
            "name": "sft",
            "kind": "training",
            "image": "nvcr.io/nvidia/pytorch:24.05-py3",
            "gpus": 8,
            "cpus": 64,
            "memory": "512GiB",
            "duration": "8h",
            "command": "torchrun t.py",
        },
        {
            "name": "etl",
            "kind": "batch",
            "image": "ghcr.io/acme/etl:1",
            "cpus": 24,
            "memory": "96GiB",
            "duration": "1h",
            "command": ["etl"],
        },
    ]
    root = make_project(tmp_path / "p", workloads, POLICY, inventory)
    plan = plan_of(root)
    assert not plan.unplaced and not plan.unrouted
    where = {p.workload.name: p.target.id for p in plan.placements}
    assert where == {
        "chat": "gke-prod/l4-pool",
        "embed": "gke-prod/a100-mig",
        "sft": "gke-prod/h100-train-a3-highgpu-8g",
        "etl": "gke-prod/cpu-pool",
    }
    sft = next(p for p in plan.placements if p.workload.name == "sft").resources
    assert (sft.nodes, sft.gpus_per_node) == (1, 8)  # the 8-GPU node, not shrunk to 4
    check_plan(plan, tmp_path / "out")  # validates, builds, and compares with the pools


def test_gpus_without_a_product_label_are_untyped_and_plan_as_such(tmp_path: Path) -> None:
    plain = [
        node(
            f"p{i}",
            {"agentpool": "plain", "team": "ml"},
            {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "4"},
            taints=[TAINT],
        )
        for i in range(2)
    ]
    cpu = node("c1", {"agentpool": "cpu"}, {"cpu": "16", "memory": "64Gi"})
    data = {"items": [*plain, cpu]}
    text = import_nodes(data, cluster="onprem")
    assert "GPUs without a product label (nvidia.com/gpu.product): gpu_type any" in text
    pool = pools(Inventory.model_validate(yaml.safe_load(text)))["plain"]
    assert (pool.nodes, pool.gpus_per_node, pool.gpu_type) == (2, 4, "any")
    assert pool.labels == {"agentpool": "plain", "team": "ml"}  # no product label to select on
    assert gpu_type_of("NVIDIA") == "any"  # a product label naming no model

    wl = {
        "kind": "training",
        "image": "ghcr.io/acme/t:1",
        "cpus": 16,
        "memory": "64GiB",
        "duration": "1h",
        "command": ["t"],
    }
    workloads = [
        {"name": "any-gpu", **wl, "gpus": 8},
        {"name": "h100-job", **wl, "gpus": 4, "gpu_type": "h100"},
    ]
    policy = "rule gpu: when gpus > 0 route kubernetes\n"
    root = make_project(
        tmp_path / "p", workloads, policy, {"clusters": [yaml.safe_load(text)["clusters"][0]]}
    )
    plan = plan_of(root)
    (placed,) = plan.placements
    assert (placed.workload.name, placed.target.id) == ("any-gpu", "onprem/plain")
    assert (placed.resources.nodes, placed.resources.gpus_per_node) == (2, 4)
    (unplaced,) = plan.unplaced
    assert unplaced.decision.workload.name == "h100-job"
    assert any(
        "has GPUs of no stated type, the workload asks for h100" in r for r in unplaced.reasons
    )
    check_plan(plan, tmp_path / "out")  # validates, and the selector selects exactly the pool
