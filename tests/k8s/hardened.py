"""A test platform that uses every Kubernetes feature of issue 13: notebooks (StatefulSet and
Kubeflow, with storage), Namespace objects, the Pod Security opt-out, HTTP probes, volumes,
secrets, service accounts, pull secrets, priority classes from the inventory, a `research-only`
pool, MPIJob and torchrun launchers. Used by test_hardening.py and test_checkov.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import job, make_project

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
RESEARCH_ONLY = {"key": "research-only", "effect": "NoSchedule"}

INVENTORY: dict[str, Any] = {
    "clusters": [
        {
            "name": "k8s-lab",
            "backend": "kubernetes",
            "kubernetes": {
                "priority_classes": {"low": "batch-low", "normal": "standard", "high": "prod-high"}
            },
            "node_pools": [
                {
                    "name": "h100",
                    "nodes": 4,
                    "gpus_per_node": 8,
                    "gpu_type": "h100",
                    "cpus_per_node": 192,
                    "memory_per_node": "2TiB",
                    "cost_per_gpu_hour": 3.0,
                    "labels": {"pool": "h100"},
                    "taints": [GPU_TAINT, RESEARCH_ONLY],
                },
                {
                    "name": "l4",
                    "nodes": 4,
                    "max_nodes": 8,
                    "gpus_per_node": 4,
                    "gpu_type": "l4",
                    "cpus_per_node": 48,
                    "memory_per_node": "192GiB",
                    "cost_per_gpu_hour": 0.8,
                    "labels": {"pool": "l4"},
                    "taints": [GPU_TAINT],
                },
                {
                    "name": "cpu",
                    "nodes": 6,
                    "cpus_per_node": 32,
                    "memory_per_node": "128GiB",
                    "labels": {"pool": "cpu"},
                },
            ],
        },
    ]
}

POLICY = """
policy hardened
rule research_training:
  when kind == "training" and team == "research"
  route kubernetes with tolerate = ["research-only"], operator = "jobset", launcher = "torchrun"
    where gpu_type == "h100"
rule mpi:
  when kind == "hpc"
  route kubernetes with operator = "mpijob" where gpus_per_node == 0
rule trainjob:
  when kind == "training" and labels.trainer == "v2"
  route kubernetes with operator = "trainjob", queue = "team-v" where gpu_type == "l4"
rule other_training:
  when kind == "training"
  route kubernetes with operator = "pytorchjob" where gpu_type == "h100" or gpu_type == "l4"
rule kubeflow_notebooks:
  when kind == "notebook" and labels.ui == "kubeflow"
  route kubernetes with notebook = "kubeflow", namespace = "kubeflow-user"
rule notebooks:
  when kind == "notebook"
  route kubernetes with namespace = "notebooks"
rule legacy:
  when labels.legacy == "yes"
  route kubernetes with pod_security = "baseline", namespace = "legacy"
rule serve:
  when kind == "inference"
  route kubernetes with hpa(min = 2, max = 6), pdb
rule batch:
  route kubernetes
"""

IMAGE = "ghcr.io/acme/train:2.0"


def workloads() -> list[dict[str, Any]]:
    return [
        job(
            "llm-research",
            team="research",
            gpus=16,
            cpus=64,
            memory="512GiB",
            command=["python", "train.py", "--epochs", "3"],
            image=IMAGE,
        ),
        job(
            "llm-other",
            team="vision",
            gpus=16,
            cpus=64,
            memory="512GiB",
            launcher="torchrun",
            command=["train.py"],
            image=IMAGE,
        ),
        job(
            "vit-trainer",
            team="vision",
            gpus=8,
            cpus=32,
            memory="128GiB",
            labels={"trainer": "v2"},
            launcher="torchrun",
            command=["python", "vit.py"],
            image=IMAGE,
        ),
        {
            "name": "cfd",
            "kind": "hpc",
            "team": "hpc",
            "image": "ghcr.io/acme/cfd:1",
            "nodes": 2,
            "cpus": 48,
            "memory": "64GiB",
            "duration": "2h",
            "launcher": "mpi",
            "ranks_per_node": 8,
            "threads_per_rank": 3,
            "command": ["/opt/cfd/solver", "-i", "x"],
        },
        {
            "name": "nb-alice",
            "kind": "notebook",
            "team": "research",
            "image": "quay.io/jupyter/pytorch-notebook:2024-05",
            "gpus": 1,
            "cpus": 4,
            "memory": "32GiB",
            "kubernetes": {"run_as_user": 10000, "storage": {"size": "20GiB", "class": "fast"}},
        },
        {
            "name": "nb-kf",
            "kind": "notebook",
            "team": "research",
            "labels": {"ui": "kubeflow"},
            "image": "kubeflownotebookswg/jupyter-scipy:v1.9.0",
            "cpus": 2,
            "memory": "8GiB",
            "kubernetes": {"storage": {"size": "10GiB"}},
        },
        {
            "name": "legacy-api",
            "kind": "inference",
            "team": "ops",
            "labels": {"legacy": "yes"},
            "image": "ghcr.io/acme/legacy:0.9",
            "cpus": 2,
            "memory": "4GiB",
            "port": 8080,
            "replicas": {"min": 1, "max": 1},
        },
        {
            "name": "chat",
            "kind": "inference",
            "team": "serving",
            "priority": "high",
            "image": "ghcr.io/acme/chat@sha256:" + "a" * 64,
            "gpus": 1,
            "cpus": 8,
            "memory": "48GiB",
            "port": 8000,
            "replicas": {"min": 2, "max": 6},
            "env": {"MODEL": "llama"},
            "kubernetes": {
                "service_account": "chat-reader",
                "image_pull_secrets": ["regcred"],
                "volumes": [
                    {"pvc": "models", "mount": "/models", "read_only": True},
                    {"secret": "tls", "mount": "/etc/tls"},
                    {"config_map": "chat-config", "mount": "/etc/chat"},
                ],
                "secret_env": {"HF_TOKEN": {"secret": "hf", "key": "token"}},
                "probe": {"path": "/healthz", "startup": "15min"},
                "shm": "8GiB",
            },
        },
        {
            "name": "etl",
            "kind": "batch",
            "team": "data",
            "priority": "low",
            "image": "ghcr.io/acme/etl:3",
            "cpus": 8,
            "memory": "16GiB",
            "duration": "1h",
            "command": "run-etl --all",
        },
    ]


def project(root: Path, *, namespaces: bool = True) -> Path:
    make_project(root, workloads(), POLICY, INVENTORY)
    if namespaces:
        with (root / "router.yaml").open("a") as f:
            f.write("kubernetes:\n  create_namespaces: true\n")
    return root
