"""The manifest validator must accept good manifests and catch the mistakes emitters make."""

from __future__ import annotations

import copy
import hashlib
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.k8s.validate import (
    CRD_DIR,
    K8S_VERSION,
    KustomizeError,
    kustomize_build,
    validate_file,
    validate_manifest,
)

LABELS = {"app.kubernetes.io/name": "trainer", "team": "ml"}


def container(**extra: Any) -> dict[str, Any]:
    return {
        "name": "main",
        "image": "registry.example.com/train:1.0",
        "resources": {
            "requests": {"cpu": "500m", "memory": "64Gi"},
            "limits": {"nvidia.com/gpu": 1},
        },
        **extra,
    }


def pod_template(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"labels": LABELS}, "spec": {"containers": [container()], **spec}}


DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "team-a", "labels": LABELS},
    "spec": {"replicas": 2, "selector": {"matchLabels": LABELS}, "template": pod_template()},
}
SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web", "namespace": "team-a"},
    "spec": {"selector": LABELS, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
}
HPA = {
    "apiVersion": "autoscaling/v2",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "web"},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 1,
        "maxReplicas": 4,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 70},
                },
            }
        ],
        "behavior": {
            "scaleDown": {
                "stabilizationWindowSeconds": 300,
                "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
            }
        },
    },
}
PDB = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "web"},
    "spec": {"minAvailable": "50%", "selector": {"matchLabels": LABELS}},
}
JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "train-1"},
    "spec": {"backoffLimit": 0, "completions": 1, "template": pod_template(restartPolicy="Never")},
}
PYTORCHJOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "train", "namespace": "team-a"},
    "spec": {
        "pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": pod_template()},
            "Worker": {"replicas": 3, "restartPolicy": "OnFailure", "template": pod_template()},
        }
    },
}
JOBSET = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "metadata": {"name": "train", "labels": {"kueue.x-k8s.io/queue-name": "team-a"}},
    "spec": {
        "replicatedJobs": [
            {
                "name": "workers",
                "replicas": 2,
                "template": {
                    "spec": {
                        "parallelism": 4,
                        "completions": 4,
                        "backoffLimit": 0,
                        "template": pod_template(restartPolicy="Never"),
                    }
                },
            }
        ]
    },
}
VOLCANO_JOB = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "train"},
    "spec": {
        "minAvailable": 4,
        "schedulerName": "volcano",
        "queue": "default",
        "tasks": [
            {"name": "worker", "replicas": 4, "template": pod_template(restartPolicy="Never")}
        ],
    },
}
INFERENCE_SERVICE = {
    "apiVersion": "serving.kserve.io/v1beta1",
    "kind": "InferenceService",
    "metadata": {"name": "llm"},
    "spec": {
        "predictor": {
            "minReplicas": 1,
            "maxReplicas": 2,
            "model": {
                "modelFormat": {"name": "huggingface"},
                "storageUri": "s3://models/llm",
                "resources": {"limits": {"nvidia.com/gpu": "1", "memory": "32Gi"}},
            },
        }
    },
}
LOCAL_QUEUE = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "LocalQueue",
    "metadata": {"name": "team-a", "namespace": "team-a"},
    "spec": {"clusterQueue": "cluster-gpu"},
}


def mutated(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of `doc` with `value` set at a dotted path (digits index lists)."""
    doc = copy.deepcopy(doc)
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    node: Any = doc
    for part in parents:
        node = node[part]
    node[last] = value
    return doc


def test_version_constant_is_pinned() -> None:
    assert re.fullmatch(r"1\.\d+", K8S_VERSION)


@pytest.mark.parametrize("doc", [DEPLOYMENT, SERVICE, HPA, PDB, JOB], ids=lambda d: d["kind"])
def test_good_builtin_manifests_pass(doc: dict[str, Any]) -> None:
    assert validate_manifest(doc) == []


@pytest.mark.parametrize(
    "doc",
    [PYTORCHJOB, JOBSET, VOLCANO_JOB, INFERENCE_SERVICE, LOCAL_QUEUE],
    ids=lambda d: d["kind"],
)
def test_good_operator_manifests_pass(doc: dict[str, Any]) -> None:
    assert validate_manifest(doc) == []


@pytest.mark.parametrize(
    ("doc", "path", "value", "expected"),
    [
        (
            DEPLOYMENT,
            "spec.template.spec.nodeSelectr",
            {"gpu": "h100"},
            "'nodeSelectr' was unexpected",
        ),
        (DEPLOYMENT, "spec.replicas", "two", "spec.replicas: 'two' is not of type 'integer'"),
        (
            DEPLOYMENT,
            "spec.template.spec.containers.0.resources.limits.memory",
            "64GiB",
            "limits.memory: '64GiB' is not a Kubernetes quantity",
        ),
        (HPA, "spec.behavior.scaleDwn", {}, "'scaleDwn' was unexpected"),
        (SERVICE, "metadata.name", "1-web", "RFC 1035 label"),
        (JOB, "metadata.labels", {"team": True}, "value True must be a string"),
        (JOB, "metadata.labels", {"team": "x" * 64}, "at most 63 characters"),
        (PYTORCHJOB, "spec.pytorchReplicaSpecs.Worker.replica", 3, "'replica' was unexpected"),
        (
            PYTORCHJOB,
            "spec.pytorchReplicaSpecs.Worker.replicas",
            "3",
            "'3' is not of type 'integer'",
        ),
        (JOBSET, "spec.replicatedJobs.0.replica", 2, "'replica' was unexpected"),
        (
            JOBSET,
            "spec.replicatedJobs.0.template.spec.template.spec.containers.0.resources.limits.cpu",
            "2 cpus",
            "does not match",
        ),
        (VOLCANO_JOB, "spec.minAvaliable", 4, "'minAvaliable' was unexpected"),
        (VOLCANO_JOB, "spec.minAvailable", "4", "'4' is not of type 'integer'"),
        (
            INFERENCE_SERVICE,
            "spec.predictor.model.storageURI",
            "s3://x",
            "'storageURI' was unexpected",
        ),
        (LOCAL_QUEUE, "spec.clusterqueue", "cluster-gpu", "'clusterqueue' was unexpected"),
        (LOCAL_QUEUE, "metadata.name", "Team_A", "RFC 1123 subdomain"),
        (LOCAL_QUEUE, "metadata.lables", {}, "unknown field 'lables'"),
        (LOCAL_QUEUE, "kindd", "x", "'kindd' was unexpected"),
    ],
)
def test_mistakes_are_caught(doc: dict[str, Any], path: str, value: Any, expected: str) -> None:
    errors = validate_manifest(mutated(doc, path, value))
    assert any(expected in e for e in errors), errors


def test_operator_errors_are_all_reported_with_kind_and_name() -> None:
    doc = mutated(mutated(VOLCANO_JOB, "spec.minAvaliable", 4), "spec.queue", 7)
    errors = validate_manifest(doc)
    assert len(errors) == 2, errors
    assert all(e.startswith("batch.volcano.sh/v1alpha1 Job/train: ") for e in errors)


def test_cr_metadata_name_is_required() -> None:
    doc = mutated(LOCAL_QUEUE, "metadata", {"namespace": "team-a"})
    assert any("metadata.name: required" in e for e in validate_manifest(doc))


def test_duplicate_list_map_keys_are_caught() -> None:
    doc = mutated(
        PYTORCHJOB,
        "spec.pytorchReplicaSpecs.Worker.template.spec.containers",
        [container(), container()],
    )
    assert any("duplicate entry" in e for e in validate_manifest(doc))


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [
        ("example.com/v1", "Widget"),  # unknown group
        ("apps/v1", "Deploymnt"),  # typo'd kind
        ("policy/v1beta1", "PodDisruptionBudget"),  # removed API
        ("kueue.x-k8s.io/v1alpha1", "LocalQueue"),  # version the CRD does not serve
        ("batch.volcano.sh/v1", "Job"),  # must not be mistaken for batch/v1 Job
    ],
)
def test_unknown_kinds_are_errors(api_version: str, kind: str) -> None:
    errors = validate_manifest(
        {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}, "spec": {}}
    )
    assert errors and ("no schema for" in errors[0] or "is not one of" in errors[0]), errors


def test_not_a_manifest() -> None:
    assert validate_manifest({"metadata": {"name": "x"}}) == [
        "apiVersion and kind are required strings"
    ]


def test_validate_file_reports_document_index(tmp_path: Path) -> None:
    path = tmp_path / "all.yaml"
    bad = mutated(SERVICE, "spec.prots", [])
    path.write_text(yaml.safe_dump_all([DEPLOYMENT, LOCAL_QUEUE, bad, None]))
    errors = validate_file(path)
    assert len(errors) == 1 and errors[0].startswith(f"{path}#2: v1 Service/web:"), errors


def test_validate_file_reports_yaml_errors(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("kind: [unclosed\n")
    assert "invalid YAML" in validate_file(path)[0]


def test_kustomize_build_returns_all_documents(tmp_path: Path) -> None:
    (tmp_path / "deployment.yaml").write_text(yaml.safe_dump(DEPLOYMENT))
    (tmp_path / "localqueue.yaml").write_text(yaml.safe_dump(LOCAL_QUEUE))
    (tmp_path / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "resources:\n- deployment.yaml\n- localqueue.yaml\n"
    )
    docs = kustomize_build(tmp_path)
    assert sorted(d["kind"] for d in docs) == ["Deployment", "LocalQueue"]
    assert [e for d in docs for e in validate_manifest(d)] == []


def test_kustomize_build_raises_with_stderr(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources:\n- missing.yaml\n")
    with pytest.raises(KustomizeError, match=r"missing\.yaml"):
        kustomize_build(tmp_path)


def test_crd_copies_match_sources_md() -> None:
    """crds/ must stay byte for byte what SOURCES.md records (provenance, Apache-2.0)."""
    recorded = dict(
        (name, digest)
        for digest, name in re.findall(
            r"^([0-9a-f]{64})  (\S+\.yaml)$", (CRD_DIR / "SOURCES.md").read_text(), re.M
        )
    )
    actual = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in CRD_DIR.glob("*.yaml")}
    assert recorded and actual == recorded
