"""`kubectl get nodes -o json` of real clusters (data/README.md) → node pools, then probes.

The last tests build nodes in the test itself (said so there): providers and GPU set-ups of
which no public node dump was found (GKE, AKS, Karpenter, k3s, MIG, time-slicing, vGPU).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from router.errors import LoadError
from router.importers import render_inventory
from router.importers.kubernetes import import_cluster
from router.models import Inventory, NodePool
from tests.importers.probe import held, placed, single_gpus

DATA = Path(__file__).parent / "data"


def load(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def pools(data: Any, **kw: Any) -> tuple[str, dict[str, NodePool]]:
    text = render_inventory(import_cluster(data, **kw))
    inv = Inventory.model_validate(yaml.safe_load(text))
    return text, {r.target.name: r.target for r in inv.targets() if isinstance(r.target, NodePool)}


def test_doks_pools_and_selectors(tmp_path: Path) -> None:
    text, got = pools(load("k8s-doks.json"))
    assert {n: (p.nodes, p.cpus_per_node, p.memory_per_node) for n, p in got.items()} == {
        "biggernode": (1, 8, 29222),
        "pool-yd23sqk7u": (3, 2, 3110),
        "smallnode": (1, 1, 1574),
    }
    for name, p in got.items():
        assert p.labels["doks.digitalocean.com/node-pool"] == name
        # the per-node id and the hostname would pin every pod to one node
        assert not any(k.endswith(("node-id", "hostname", "node-pool-id")) for k in p.labels)
    # 1-CPU/1GiB jobs: 8 + 3 × 2 + 1, each node once
    assert placed(tmp_path / "a", text, 20) == 15


def test_openshift_control_plane_left_out_workers_by_role(tmp_path: Path) -> None:
    cluster = import_cluster(load("k8s-openshift.json"))
    assert [line.split(":")[0] for line in cluster.exclusions] == [
        f"ci-ln-d53y532-f76d1-2btqq-master-{i}" for i in range(3)
    ]
    assert all(
        "control plane (taint node-role.kubernetes.io/master:NoSchedule)" in line
        for line in cluster.exclusions
    )
    text, got = pools(load("k8s-openshift.json"))
    (worker,) = got.values()
    assert (worker.name, worker.nodes, worker.cpus_per_node) == ("worker", 3, 3)
    assert worker.labels["node-role.kubernetes.io/worker"] == ""
    assert held(text) == 3
    assert placed(tmp_path / "a", text, 12) == 9  # 3 workers × 3 allocatable CPUs


def test_kubeadm_gpu_node_and_eks_node_group(tmp_path: Path) -> None:
    text, got = pools(load("k8s-kubeadm-kurl-gpu.json"))
    (pool,) = got.values()
    assert (pool.gpus_per_node, pool.gpu_type, pool.nodes) == (1, "t4", 1)
    assert pool.labels["nvidia.com/gpu.product"] == "Tesla-T4"
    assert single_gpus(tmp_path / "a", text, 3, "t4") == 1
    text, got = pools(load("k8s-eks-nodegroup.json"))
    (eks,) = got.values()
    assert eks.labels["eks.amazonaws.com/nodegroup"] == "qovery-dmubm9agk7sr8a8r-1"
    assert "eks.amazonaws.com/nodegroup-image" not in eks.labels
    assert (eks.nodes, eks.cpus_per_node, eks.memory_per_node) == (1, 1, 7408576 // 1024)


def test_gke_node_below_one_whole_cpu_is_left_out_saying_why() -> None:
    # 940m allocatable: router's workloads ask for whole CPUs, so none fits there
    with pytest.raises(LoadError) as e:
        import_cluster(load("k8s-gke.json"))
    assert (
        "gke-gar-1-pool-1-dce25db1-2mm5: less than one whole allocatable CPU or MiB (cpu 0.940"
    ) in e.value.message
    data = load("k8s-gke.json")
    data["items"][0]["status"]["allocatable"]["cpu"] = "1940m"  # were it a bigger machine
    _, got = pools(data)
    assert got["pool-1"].labels["cloud.google.com/gke-nodepool"] == "pool-1"
    assert got["pool-1"].labels["cloud.google.com/gke-preemptible"] == "true"


def test_aks_agent_pool(tmp_path: Path) -> None:
    text, got = pools(load("k8s-aks.json"))
    (pool,) = got.values()
    assert (pool.name, pool.nodes, pool.cpus_per_node, pool.memory_per_node) == (
        "agentpool",
        3,
        1,
        5497568 // 1024,
    )  # allocatable "1900m", "5497568Ki"
    assert pool.labels["agentpool"] == "agentpool"
    assert pool.labels["node.kubernetes.io/instance-type"] == "Standard_D2s_v3"
    assert "kubernetes.azure.com/node-image-version" not in pool.labels
    assert placed(tmp_path / "a", text, 5) == 3


def test_eksctl_node_group(tmp_path: Path) -> None:
    text, got = pools(load("k8s-eksctl.json"))
    (pool,) = got.values()
    assert (pool.name, pool.nodes, pool.cpus_per_node, pool.memory_per_node) == (
        "gil-standard-workers2",
        2,
        2,
        3875836 // 1024,
    )
    assert pool.labels == {
        "alpha.eksctl.io/nodegroup-name": "gil-standard-workers2",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
    }
    assert placed(tmp_path / "a", text, 6) == 4  # 2 nodes × 2 CPUs


# ---- nodes built here (no public dump of these found; see data/README.md) -------------------


def node(
    name: str,
    labels: dict[str, str],
    cpu: str = "8",
    memory: str = "32Gi",
    extra: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    ready: str = "True",
    cordoned: bool = False,
) -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": memory, **(extra or {})}
    spec: dict[str, Any] = {"taints": taints} if taints else {}
    if cordoned:
        spec["unschedulable"] = True
    return {
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **labels},
        },
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": ready, "reason": "KubeletNotReady"}],
        },
    }


def nodes(*items: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "List", "items": list(items)}


def test_eks_managed_node_groups_and_karpenter_side_by_side() -> None:
    _, got = pools(
        nodes(
            node("a", {"eks.amazonaws.com/nodegroup": "system"}),
            node(
                "b",
                {"karpenter.sh/nodepool": "gpu", "eks.amazonaws.com/capacityType": "x"},
                extra={"nvidia.com/gpu": "4"},
            ),
            node("c", {"karpenter.sh/nodepool": "gpu"}, extra={"nvidia.com/gpu": "4"}),
        )
    )
    assert set(got) == {"system", "gpu"}
    assert got["gpu"].nodes == 2 and got["gpu"].labels["karpenter.sh/nodepool"] == "gpu"
    assert "eks.amazonaws.com/nodegroup" not in got["gpu"].labels


@pytest.mark.parametrize(
    ("label", "value", "product", "gpu_type"),
    [
        (
            "cloud.google.com/gke-nodepool",
            "l4-pool",
            ("cloud.google.com/gke-accelerator", "nvidia-l4"),
            "l4",
        ),
        (
            "kubernetes.azure.com/agentpool",
            "gpunp",
            ("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"),
            "a100",
        ),
        ("agentpool", "gpunp", ("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"), "h100"),
        (
            "machine.openshift.io/cluster-api-machineset",
            "ocp-gpu-us-east-1a",
            ("nvidia.com/gpu.product", "Tesla-T4"),
            "t4",
        ),
    ],
)
def test_provider_pool_labels(
    label: str, value: str, product: tuple[str, str], gpu_type: str
) -> None:
    _, got = pools(
        nodes(node("n1", {label: value, product[0]: product[1]}, extra={"nvidia.com/gpu": "2"}))
    )
    (p,) = got.values()
    assert (p.name, p.labels[label], p.gpu_type, p.gpus_per_node) == (value, value, gpu_type, 2)


def test_k3s_server_and_agents_are_one_pool_by_instance_type() -> None:
    k3s = {"node.kubernetes.io/instance-type": "k3s"}
    _, got = pools(
        nodes(
            node("server", {**k3s, "node-role.kubernetes.io/control-plane": "true"}),
            node("agent-1", k3s),
            node("agent-2", k3s),
        )
    )
    assert {n: p.nodes for n, p in got.items()} == {"k3s": 3}


def test_states_taints_and_the_fallback_error() -> None:
    cluster = import_cluster(
        nodes(
            node("ok", {"router.dev/pool": "p"}),
            node("sick", {"router.dev/pool": "p"}, ready="False"),
            node("cordoned", {"router.dev/pool": "p"}, cordoned=True),
            node(
                "going",
                {"router.dev/pool": "p"},
                taints=[{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}],
            ),
            node(
                "gpu",
                {"router.dev/pool": "p"},
                taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
            ),
        )
    )
    assert cluster.exclusions == [
        "cordoned: cordoned (unschedulable), left out",
        "going: tainted node.kubernetes.io/unreachable:NoExecute, left out",
        "sick: not Ready (KubeletNotReady), left out",
    ]
    fields = {t.fields["name"]: t.fields for t in cluster.targets}
    assert {n: f["nodes"] for n, f in fields.items()} == {"p-cpu8": 1, "p-cpu8-gpu": 1}
    assert fields["p-cpu8-gpu"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    ]
    with pytest.raises(LoadError) as e:
        import_cluster(
            nodes(
                {
                    "kind": "Node",
                    "metadata": {"name": "bare"},
                    "status": {
                        "capacity": {"cpu": "1", "memory": "1Gi"},
                        "conditions": [{"type": "Ready", "status": "True"}],
                    },
                }
            )
        )
    assert "tried" in e.value.message and "doks.digitalocean.com/node-pool" in e.value.message


def test_mixed_pool_split_by_instance_type() -> None:
    _, got = pools(
        nodes(
            node(
                "a",
                {
                    "cloud.google.com/gke-nodepool": "p",
                    "node.kubernetes.io/instance-type": "a3-highgpu-8g",
                },
                cpu="208",
                extra={"nvidia.com/gpu": "8"},
            ),
            node(
                "b",
                {
                    "cloud.google.com/gke-nodepool": "p",
                    "node.kubernetes.io/instance-type": "a3-highgpu-4g",
                },
                cpu="104",
                extra={"nvidia.com/gpu": "4"},
            ),
        )
    )
    assert {
        n: (p.gpus_per_node, p.labels["node.kubernetes.io/instance-type"]) for n, p in got.items()
    } == {"p-a3-highgpu-8g": (8, "a3-highgpu-8g"), "p-a3-highgpu-4g": (4, "a3-highgpu-4g")}


def test_mig_time_slicing_and_vgpu_are_recognised() -> None:
    product = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "router.dev/pool": "mig"}
    _, got = pools(
        nodes(
            node(
                "m",
                product,
                extra={
                    "nvidia.com/gpu": "4",
                    "nvidia.com/mig-1g.10gb": "14",
                    "nvidia.com/mig-3g.40gb": "4",
                },
            )
        )
    )
    mig = got["mig"]
    assert (mig.gpus_per_node, mig.whole_gpus_per_node) == (8, 4)
    assert mig.slices_per_node == {"1g.10gb": 14, "3g.40gb": 4}
    single = {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb",
        "nvidia.com/gpu.count": "8",
        "router.dev/pool": "single",
    }
    _, got = pools(nodes(node("s", single, extra={"nvidia.com/gpu": "56"})))
    s = got["single"]
    assert (s.gpus_per_node, s.mig_strategy, s.slices_per_node) == (8, "single", {"1g.5gb": 56})
    shared = {
        "nvidia.com/gpu.product": "NVIDIA-A10G-SHARED",
        "nvidia.com/gpu.replicas": "4",
        "nvidia.com/gpu.count": "1",
        "router.dev/pool": "ts",
    }
    cluster = import_cluster(nodes(node("t", shared, extra={"nvidia.com/gpu": "4"})))
    (ts,) = cluster.targets
    assert (ts.fields["gpus_per_node"], ts.fields["gpu_type"]) == (1, "a10g")
    assert any("4 replicas per GPU" in n for n in ts.notes)
    vgpu = {
        "nvidia.com/gpu.product": "GRID-A100-4C",
        "nvidia.com/vgpu.present": "true",
        "router.dev/pool": "vg",
    }
    cluster = import_cluster(nodes(node("v", vgpu, extra={"nvidia.com/gpu": "1"})))
    (vg,) = cluster.targets
    assert vg.fields["gpu_type"] == "a100-vgpu-4c"
    assert any("vGPU profile" in n for n in vg.notes)


def test_unhealthy_gpus_fargate_and_system_pools_are_not_capacity() -> None:
    gpu = node(
        "g",
        {"router.dev/pool": "p", "nvidia.com/gpu.product": "NVIDIA-L4"},
        extra={"nvidia.com/gpu": "8"},
    )
    gpu["status"]["allocatable"] = {**gpu["status"]["capacity"], "nvidia.com/gpu": "6"}
    fargate = node(
        "fargate-ip-10-0-1-2", {"router.dev/pool": "p", "eks.amazonaws.com/compute-type": "fargate"}
    )
    system = node(
        "sys",
        {"router.dev/pool": "p"},
        taints=[{"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}],
    )
    cluster = import_cluster(nodes(gpu, fargate, system))
    (target,) = cluster.targets
    assert target.fields["gpus_per_node"] == 6  # two GPUs the device plugin took out
    assert cluster.exclusions == [
        "fargate-ip-10-0-1-2: an EKS Fargate virtual node (one pod each), left out",
        "sys: for system pods only (taint CriticalAddonsOnly=true:NoSchedule), left out",
    ]
