"""The manifests the Kubernetes emitter writes: structure, placement fidelity, names, and validity.

Placements are built directly (no policy, no solver). Every manifest a test here emits is also
checked by tests/k8s/validate.py (kubernetes-validate --strict for built-in kinds, the real CRD
schemas for operator kinds): an invalid manifest fails the test, it is never skipped. A whole
cluster folder is written to tmp_path and built with `kubectl kustomize`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

import router
from router.emit.k8s.names import dns1035_label, dns_label, label_value, short_hash
from router.emit.kubernetes import KubernetesEmitter
from router.errors import PlanError
from router.evaluate.shape import replica_range
from router.models import MigGroup, NodePool, Taint, TargetRef, Workload
from router.models.placement import Placement, Resources
from tests.k8s.validate import kustomize_build, validate_file, validate_manifest

CLUSTER = "k8s-prod"
A100 = NodePool(
    name="a100",
    nodes=4,
    max_nodes=16,
    gpus_per_node=8,
    gpu_type="a100",
    cpus_per_node=96,
    memory_per_node=1024 * 1024,
    labels={"pool": "a100", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
    taints=[
        Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule"),
        Taint(key="dedicated", effect="NoExecute"),
    ],
    mig=[MigGroup(gpus=1, slices={"1g.10gb": 7}), MigGroup(gpus=1, slices={"3g.40gb": 2})],
)
CPU = NodePool(name="cpu", nodes=4, cpus_per_node=32, memory_per_node=128 * 1024)
NAMESPACED = NodePool(
    name="shared", nodes=2, cpus_per_node=32, memory_per_node=128 * 1024, namespace="shared-ns"
)
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
EMITTER = KubernetesEmitter()


def place(
    pool: NodePool = A100,
    *,
    options: dict[str, Any] | None = None,
    nodes: int = 1,
    gpus: int = 0,
    cpus: int = 8,
    memory: int = 65536,
    time: int = 3600,
    replicas: tuple[int, int] = (0, 0),
    rule: str = "serve",
    mig: str | None = None,
    **fields: Any,
) -> Placement:
    """A placement on `pool`; a service when `replicas` is given, else a job of `nodes` pods."""
    fields = {"name": "llm", "image": "ghcr.io/acme/serve:1.2", **fields}
    if replicas[1]:
        fields.setdefault("replicas", {"min": replicas[0], "max": replicas[1]})
    workload = Workload(**fields)
    if replicas[1]:  # as the plan has them: the workload's replicas clamped by hpa(...)
        bounds = replica_range(workload, options or {})
        assert not isinstance(bounds, str), bounds
        replicas = bounds
    resources = Resources(
        nodes=0 if replicas[1] else nodes,
        gpus_per_node=gpus,
        cpus_per_node=cpus,
        memory_per_node=memory,
        time=time,
        exclusive=False,
        whole_nodes=0 if replicas[1] else nodes,
        replicas_min=replicas[0],
        replicas_max=replicas[1],
        mig=mig,
    )
    target = TargetRef(CLUSTER, "kubernetes", pool, f"{CLUSTER}/{pool.name}")
    return Placement(workload, target, rule, "policies/p.route:7", 0, options or {}, resources)


def service(**kw: Any) -> Placement:
    base: dict[str, Any] = {"kind": "inference", "gpus": 1, "replicas": (2, 5), "port": 8000}
    return place(**{**base, **kw})


def job(nodes: int = 1, **kw: Any) -> Placement:
    """A training job of `nodes` pods, 8 GPUs each unless `gpus` (per pod) says otherwise."""
    base: dict[str, Any] = {
        "name": "train",
        "kind": "training",
        "command": ["torchrun", "train.py"],
        "gpus": 8,
        "rule": "train",
    }
    return place(nodes=nodes, **{**base, **kw})


def docs(p: Placement) -> list[dict[str, Any]]:
    """The emitted documents of one placement, each checked by the strict validator."""
    files = EMITTER.emit(p)
    assert list(files) == [f"kubernetes/{CLUSTER}/{p.workload.name}.yaml"]
    out = [d for d in yaml.safe_load_all(next(iter(files.values()))) if d is not None]
    for d in out:
        assert validate_manifest(d) == []
    return out


def kinds(objs: list[dict[str, Any]]) -> list[str]:
    return [d["kind"] for d in objs]


def one(objs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [d for d in objs if d["kind"] == kind]
    return found


def pod_specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """Every pod spec inside an object, whatever its kind."""
    spec = obj["spec"]
    kind = obj["kind"]
    if kind in ("Deployment", "StatefulSet", "Job") and obj["apiVersion"] in (
        "apps/v1",
        "batch/v1",
    ):
        return [spec["template"]["spec"]]
    if kind == "Notebook":
        return [spec["template"]["spec"]]
    if kind == "MPIJob":  # the Worker pods: the launcher runs on no GPU node
        return [spec["mpiReplicaSpecs"]["Worker"]["template"]["spec"]]
    if kind == "TrainJob":  # the pool placement is a runtime patch
        (patch,) = spec["runtimePatches"]
        (rjob,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
        return [rjob["template"]["spec"]["template"]["spec"]]
    if kind == "JobSet":
        return [r["template"]["spec"]["template"]["spec"] for r in spec["replicatedJobs"]]
    if kind == "PyTorchJob":
        return [r["template"]["spec"] for r in spec["pytorchReplicaSpecs"].values()]
    if kind == "Job":  # Volcano
        return [t["template"]["spec"] for t in spec["tasks"]]
    if kind == "InferenceService":
        return [spec["predictor"]]
    return []


# ---------------------------------------------------------------- services


def test_service_is_deployment_service_hpa_pdb() -> None:
    p = service(
        options={"hpa": {"min": 3, "max": 20, "cpu": 70, "memory": 80}, "pdb": {}},
        env={"B": "2", "A": "1"},
        command="python -m serve --port 8000",
        gpus=1,
        cpus=4,
        memory=16384,
        labels={"app": "chat"},
    )
    objs = docs(p)
    assert kinds(objs) == [
        "Deployment",
        "Service",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
    ]
    deploy, svc, hpa, pdb = objs
    selector = {"app.kubernetes.io/name": "llm", "app.kubernetes.io/managed-by": "router"}

    assert deploy["metadata"]["name"] == "llm"
    spec = deploy["spec"]
    assert "replicas" not in spec  # the HPA owns the count; see serving.py
    assert spec["selector"] == {"matchLabels": selector}
    template = spec["template"]
    assert template["metadata"]["labels"] == {
        "app": "chat",
        **selector,
        "router.dev/team": "default",
    }
    (c,) = template["spec"]["containers"]
    tcp = {"tcpSocket": {"port": 8000}}
    assert c == {
        "name": "llm",
        "image": "ghcr.io/acme/serve:1.2",
        "imagePullPolicy": "Always",  # a tag may move; a digest would be IfNotPresent
        "command": ["/bin/sh", "-c", "python -m serve --port 8000"],
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
        "ports": [{"containerPort": 8000, "protocol": "TCP"}],
        "resources": {
            "requests": {"cpu": "4", "memory": "16384Mi", "nvidia.com/gpu": "1"},
            "limits": {"memory": "16384Mi", "nvidia.com/gpu": "1"},
        },
        "startupProbe": {**tcp, "periodSeconds": 10, "failureThreshold": 60},
        "readinessProbe": {**tcp, "periodSeconds": 10, "failureThreshold": 3},
        "livenessProbe": {**tcp, "periodSeconds": 20, "timeoutSeconds": 5, "failureThreshold": 3},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "runAsNonRoot": True,
        },
    }
    pod_spec = template["spec"]
    assert pod_spec["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 65532,
        "runAsGroup": 65532,
        "fsGroup": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert pod_spec["automountServiceAccountToken"] is False
    # A GPU server gets an in-memory /dev/shm of half its memory.
    assert pod_spec["volumes"] == [
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8192Mi"}}
    ]
    # Up to 20 replicas: spread softly over nodes and zones.
    assert [t["topologyKey"] for t in pod_spec["topologySpreadConstraints"]] == [
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
    ]
    assert {t["whenUnsatisfiable"] for t in pod_spec["topologySpreadConstraints"]} == {
        "ScheduleAnyway"
    }

    assert svc["spec"] == {
        "type": "ClusterIP",
        "selector": selector,
        "ports": [{"port": 8000, "targetPort": 8000, "protocol": "TCP"}],
    }
    assert hpa["spec"] == {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "llm"},
        "minReplicas": 3,  # hpa(min = 3) raises the workload's 2; its max 5 bounds hpa's 20
        "maxReplicas": 5,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 70},
                },
            },
            {
                "type": "Resource",
                "resource": {
                    "name": "memory",
                    "target": {"type": "Utilization", "averageUtilization": 80},
                },
            },
        ],
    }
    assert pdb["spec"] == {"minAvailable": 1, "selector": {"matchLabels": selector}}


def test_service_without_hpa_runs_min_replicas_and_no_hpa() -> None:
    objs = docs(service(replicas=(3, 6)))
    assert kinds(objs) == ["Deployment", "Service"]
    assert objs[0]["spec"]["replicas"] == 3


def test_bare_hpa_takes_bounds_from_replicas_and_cpu_80() -> None:
    hpa = one(docs(service(replicas=(2, 7), options={"hpa": {}})), "HorizontalPodAutoscaler")
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 7)
    assert [m["resource"]["name"] for m in hpa["spec"]["metrics"]] == ["cpu"]
    assert hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 80


def test_hpa_memory_only_has_no_cpu_metric() -> None:
    hpa = one(docs(service(options={"hpa": {"memory": 75}})), "HorizontalPodAutoscaler")
    assert [m["resource"]["name"] for m in hpa["spec"]["metrics"]] == ["memory"]


def test_pdb_max_unavailable() -> None:
    pdb = one(docs(service(options={"pdb": {"max_unavailable": 2}})), "PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] == 2
    assert "minAvailable" not in pdb["spec"]


def test_inference_without_port_is_served_on_8080() -> None:
    objs = docs(service(port=None))
    (c,) = one(objs, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert c["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]
    assert c["readinessProbe"]["tcpSocket"]["port"] == 8080
    assert one(objs, "Service")["spec"]["ports"][0]["port"] == 8080


def test_other_service_without_port_has_no_service_or_probe() -> None:
    objs = docs(place(kind="worker", replicas=(2, 2), port=None))
    assert kinds(objs) == ["Deployment"]
    (c,) = objs[0]["spec"]["template"]["spec"]["containers"]
    assert "ports" not in c and "readinessProbe" not in c


def test_kserve_inference_service() -> None:
    p = service(
        options={"serving": "kserve", "hpa": {"max": 9, "cpu": 60}, "pdb": {}},
        gpus=1,
        cpus=4,
        memory=16384,
    )
    objs = docs(p)
    assert kinds(objs) == ["InferenceService", "PodDisruptionBudget"]
    isvc = objs[0]
    assert isvc["apiVersion"] == "serving.kserve.io/v1beta1"
    predictor = isvc["spec"]["predictor"]
    assert (predictor["minReplicas"], predictor["maxReplicas"]) == (2, 5)  # 5 bounds hpa's 9
    assert predictor["autoScaling"]["metrics"][0]["resource"] == {
        "name": "cpu",
        "target": {"type": "Utilization", "averageUtilization": 60},
    }
    (c,) = predictor["containers"]
    assert c["name"] == "kserve-container"
    assert c["resources"]["limits"] == {"memory": "16384Mi", "nvidia.com/gpu": "1"}
    # The PDB selects the predictor's pods through the labels KServe puts on them.
    selector = objs[1]["spec"]["selector"]["matchLabels"]
    assert selector.items() <= predictor["labels"].items()


# ---------------------------------------------------------------- jobs


def test_single_node_job() -> None:
    objs = docs(job(nodes=1, cpus=32, memory=262144, time=43200))
    assert kinds(objs) == ["Job"]
    (j,) = objs
    assert j["apiVersion"] == "batch/v1"
    spec = j["spec"]
    assert spec["backoffLimit"] == 3
    assert spec["activeDeadlineSeconds"] == 43200
    assert "completionMode" not in spec and "suspend" not in spec
    assert "ttlSecondsAfterFinished" not in spec  # GitOps would re-create and re-run it
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    (c,) = pod["containers"]
    assert c["command"] == ["torchrun", "train.py"]
    assert c["resources"]["limits"] == {"memory": "262144Mi", "nvidia.com/gpu": "8"}
    assert "env" not in c


def test_indexed_job_with_headless_service() -> None:
    objs = docs(job(nodes=4))
    assert kinds(objs) == ["Service", "Job"]
    svc, j = objs
    assert svc["spec"]["clusterIP"] == "None"
    spec = j["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == 4
    pod = spec["template"]["spec"]
    assert pod["subdomain"] == svc["metadata"]["name"]
    assert pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0][
        "topologyKey"
    ] == ("kubernetes.io/hostname")
    (c,) = pod["containers"]
    assert c["resources"]["requests"]["nvidia.com/gpu"] == "8"
    env = {e["name"]: e for e in c["env"]}
    assert env["MASTER_ADDR"]["value"] == "train-0.train"
    assert env["NNODES"]["value"] == "4"
    assert "job-completion-index" in env["NODE_RANK"]["valueFrom"]["fieldRef"]["fieldPath"]


def test_workload_env_wins_over_router_env() -> None:
    objs = docs(job(nodes=2, env={"MASTER_ADDR": "elsewhere"}))
    (c,) = one(objs, "Job")["spec"]["template"]["spec"]["containers"]
    assert {e["name"]: e.get("value") for e in c["env"]}["MASTER_ADDR"] == "elsewhere"


def test_jobset() -> None:
    (js,) = docs(job(nodes=4, options={"operator": "jobset"}))
    assert js["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
    (rj,) = js["spec"]["replicatedJobs"]
    assert rj["replicas"] == 1
    spec = rj["template"]["spec"]
    assert spec["completions"] == spec["parallelism"] == 4
    (c,) = spec["template"]["spec"]["containers"]
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "8"


def test_pytorchjob() -> None:
    (pj,) = docs(job(nodes=4, options={"operator": "pytorchjob"}))
    assert pj["apiVersion"] == "kubeflow.org/v1"
    spec = pj["spec"]
    assert spec["nprocPerNode"] == "8"
    replicas = spec["pytorchReplicaSpecs"]
    assert replicas["Master"]["replicas"] == 1
    assert replicas["Worker"]["replicas"] == 3
    for r in replicas.values():
        (c,) = r["template"]["spec"]["containers"]
        assert c["name"] == "pytorch"
        assert c["resources"]["limits"]["nvidia.com/gpu"] == "8"


def test_pytorchjob_on_one_node_has_no_workers() -> None:
    (pj,) = docs(job(nodes=1, options={"operator": "pytorchjob"}))
    assert list(pj["spec"]["pytorchReplicaSpecs"]) == ["Master"]


def test_volcano_gang_job() -> None:
    (vj,) = docs(job(nodes=4, options={"operator": "volcano", "queue": "research"}))
    assert vj["apiVersion"] == "batch.volcano.sh/v1alpha1"
    spec = vj["spec"]
    assert spec["schedulerName"] == "volcano"
    assert spec["minAvailable"] == 4
    assert spec["queue"] == "research"  # Volcano's own queue, not Kueue's label
    assert "kueue.x-k8s.io/queue-name" not in vj["metadata"]["labels"]
    (task,) = spec["tasks"]
    assert task["replicas"] == 4
    (c,) = task["template"]["spec"]["containers"]
    assert c["resources"]["requests"]["nvidia.com/gpu"] == "8"


@pytest.mark.parametrize("operator", ["job", "jobset", "pytorchjob"])
@pytest.mark.parametrize("nodes", [1, 3])
def test_kueue_queue_label_on_top_level_object(operator: str, nodes: int) -> None:
    p = job(nodes=nodes, options={"operator": operator, "queue": "training"})
    objs = docs(p)
    top = objs[-1]
    assert top["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "training"
    if top["apiVersion"] == "batch/v1":
        assert top["spec"]["suspend"] is True
    for other in objs[:-1]:  # the headless Service is not a Kueue workload
        assert "kueue.x-k8s.io/queue-name" not in other["metadata"]["labels"]


def test_priority_class() -> None:
    for p in (
        job(nodes=2, options={"priority_class": "high"}),
        service(options={"priority_class": "high"}),
    ):
        for obj in docs(p):
            for pod in pod_specs(obj):
                assert pod["priorityClassName"] == "high"


# ---------------------------------------------------------------- placement fidelity

ALL_KINDS: dict[str, Callable[[NodePool], Placement]] = {
    "deployment": lambda pool: service(pool=pool, gpus=0, options={"hpa": {}, "pdb": {}}),
    "kserve": lambda pool: service(pool=pool, gpus=0, options={"serving": "kserve"}),
    "job": lambda pool: job(pool=pool, nodes=1, gpus=0),
    "indexed": lambda pool: job(pool=pool, nodes=2, gpus=0),
    "jobset": lambda pool: job(pool=pool, nodes=2, gpus=0, options={"operator": "jobset"}),
    "pytorchjob": lambda pool: job(pool=pool, nodes=2, gpus=0, options={"operator": "pytorchjob"}),
    "volcano": lambda pool: job(pool=pool, nodes=2, gpus=0, options={"operator": "volcano"}),
    "mpijob": lambda pool: job(pool=pool, nodes=2, gpus=0, options={"operator": "mpijob"}),
    "trainjob": lambda pool: job(pool=pool, nodes=2, gpus=0, options={"operator": "trainjob"}),
    "notebook": lambda pool: job(pool=pool, nodes=1, gpus=0, kind="notebook", name="nb"),
    "kubeflow": lambda pool: job(
        pool=pool, nodes=1, gpus=0, kind="notebook", name="nb", options={"notebook": "kubeflow"}
    ),
}


DEDICATED = {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}
GPU_TOLERATION = {
    "key": "nvidia.com/gpu",
    "operator": "Equal",
    "value": "present",
    "effect": "NoSchedule",
}


@pytest.mark.parametrize("gpus", [0, 1])
@pytest.mark.parametrize("tolerate", [[], ["dedicated"]])
@pytest.mark.parametrize("kind", sorted(ALL_KINDS))
def test_tolerations_only_for_taints_the_workload_is_entitled_to(
    kind: str, tolerate: list[str], gpus: int
) -> None:
    """The GPU taint for GPU work; `dedicated` only when the rule says tolerate."""
    p = ALL_KINDS[kind](A100)
    p.options = {**p.options, "tolerate": tolerate}
    p.resources = replace(p.resources, gpus_per_node=gpus)
    specs = [s for obj in docs(p) for s in pod_specs(obj)]
    assert specs
    want = ([DEDICATED] if tolerate else []) + ([GPU_TOLERATION] if gpus else [])
    for spec in specs:
        assert spec["nodeSelector"] == dict(A100.labels)
        assert spec.get("tolerations", []) == want


@pytest.mark.parametrize("kind", sorted(ALL_KINDS))
def test_pool_without_labels_or_taints_adds_none(kind: str) -> None:
    for obj in docs(ALL_KINDS[kind](CPU)):
        for spec in pod_specs(obj):
            assert "nodeSelector" not in spec and "tolerations" not in spec


def test_mig_profile_from_option() -> None:
    objs = docs(service(gpus=1, options={"mig": "1g.10gb"}))
    (c,) = one(objs, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert c["resources"]["limits"] == {"memory": "65536Mi", "nvidia.com/mig-1g.10gb": "1"}
    assert "nvidia.com/gpu" not in c["resources"]["requests"]


def test_mig_profile_from_plan() -> None:
    (j,) = docs(job(nodes=1, gpus=1, mig="3g.40gb"))
    (c,) = j["spec"]["template"]["spec"]["containers"]
    assert c["resources"]["requests"]["nvidia.com/mig-3g.40gb"] == "1"


def test_mig_asks_for_the_slices_the_plan_counted() -> None:
    (j,) = docs(job(nodes=1, gpus=2, options={"mig": "1g.10gb"}))
    (c,) = j["spec"]["template"]["spec"]["containers"]
    assert c["resources"]["limits"]["nvidia.com/mig-1g.10gb"] == "2"


def test_cpu_only_workload_under_a_mig_rule_asks_for_no_gpu() -> None:
    (j,) = docs(job(nodes=1, gpus=0, options={"mig": "1g.10gb"}, mig="1g.10gb"))
    (c,) = j["spec"]["template"]["spec"]["containers"]
    assert not [r for r in c["resources"]["requests"] if r.startswith("nvidia.com/")]


def test_mig_profile_the_pool_lacks_falls_back_to_gpus() -> None:
    objs = docs(service(gpus=1, options={"mig": "2g.20gb"}))
    (c,) = one(objs, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "1"


# ---------------------------------------------------------------- names, labels, namespaces


def test_common_labels_on_every_object() -> None:
    for p in [f(A100) for f in ALL_KINDS.values()]:
        for obj in docs(p):
            labels = obj["metadata"]["labels"]
            assert labels["app.kubernetes.io/name"] == p.workload.name
            assert labels["app.kubernetes.io/managed-by"] == "router"
            assert labels["router.dev/team"] == p.workload.team
            assert labels["router.dev/rule"] == p.rule
            assert labels["router.dev/version"] == router.__version__


def test_pod_labels_keep_the_selector_and_skip_rule_and_version() -> None:
    p = service(labels={"app.kubernetes.io/name": "spoof", "tier": "gold"})
    deploy = one(docs(p), "Deployment")
    labels = deploy["spec"]["template"]["metadata"]["labels"]
    assert labels["app.kubernetes.io/name"] == "llm"
    assert labels["tier"] == "gold"
    assert "router.dev/rule" not in labels and "router.dev/version" not in labels


def test_namespace_option_then_pool_then_team() -> None:
    assert docs(service(options={"namespace": "ml"}))[0]["metadata"]["namespace"] == "ml"
    assert docs(service(pool=NAMESPACED, gpus=0))[0]["metadata"]["namespace"] == "shared-ns"
    objs = docs(service(team="ML_Research.EU"))
    assert {o["metadata"]["namespace"] for o in objs} == {"ml-research-eu"}
    assert objs[0]["metadata"]["labels"]["router.dev/team"] == "ML_Research.EU"


def test_no_namespace_objects() -> None:
    for p in [f(A100) for f in ALL_KINDS.values()]:
        assert "Namespace" not in kinds(docs(p))


@pytest.mark.parametrize(
    "options",
    [{"namespace": "Not_Valid"}, {"queue": "a queue"}, {"priority_class": "High_Prio"}],
)
def test_an_option_kubernetes_cannot_name_is_a_plan_error_at_the_rule(
    options: dict[str, str],
) -> None:
    with pytest.raises(PlanError, match=next(iter(options))) as e:
        EMITTER.emit(job(nodes=2, options=options))
    assert e.value.location() == "policies/p.route:7"


def test_workload_without_image_is_a_plan_error() -> None:
    with pytest.raises(PlanError, match="no image"):
        EMITTER.emit(job(image=None))


LONG = "a" * 30 + "-" + "b" * 32  # 63 characters, the longest workload name


@pytest.mark.parametrize("kind", sorted(ALL_KINDS))
def test_long_names_are_cut_with_a_hash_and_stay_valid(kind: str) -> None:
    assert len(LONG) == 63
    p = ALL_KINDS[kind](A100)
    p.workload = p.workload.model_copy(update={"name": LONG})
    objs = docs(p)
    for obj in objs:
        name = obj["metadata"]["name"]
        assert len(name) <= 63 and DNS1035.fullmatch(name), name
        assert obj["metadata"]["labels"]["app.kubernetes.io/name"] == LONG
        if name != LONG:
            assert name.endswith("-" + short_hash(LONG))
    # Names a controller derives must fit a DNS label too.
    top = objs[-1] if kind != "deployment" else objs[0]
    name = top["metadata"]["name"]
    derived = {
        "indexed": f"{name}-1",
        "jobset": f"{name}-node-0-1",
        "pytorchjob": f"{name}-worker-0",
        "volcano": f"{name}-worker-1",
        "kserve": f"{name}-predictor-00001",
    }.get(kind, name)
    assert len(derived) <= 63 and DNS_LABEL.fullmatch(derived), derived
    assert docs(p) == objs  # stable


def test_name_helpers() -> None:
    assert dns_label("llm") == "llm"
    assert dns_label("My_Team.EU") == "my-team-eu"
    cut = dns_label("x" * 80, 20)
    assert len(cut) == 20 and cut == "x" * 11 + "-" + short_hash("x" * 80)
    assert dns_label("x" * 80, 20) != dns_label("x" * 79, 20)
    assert dns1035_label("9b-model") == "w-9b-model"
    assert label_value("0.1.0") == "0.1.0"
    assert label_value("1.0+local") == "1.0-local"
    assert len(label_value("v" * 100)) == 63
    assert label_value("-x-") == "x"


def test_workload_name_starting_with_a_digit_gets_a_valid_service_name() -> None:
    objs = docs(service(name="9b-chat"))
    assert {o["metadata"]["name"] for o in objs} == {"w-9b-chat"}
    assert objs[0]["metadata"]["labels"]["app.kubernetes.io/name"] == "9b-chat"


# ---------------------------------------------------------------- text: determinism, injection


def test_same_inputs_same_bytes() -> None:
    a = service(env={"Z": "1", "A": "2"}, labels={"z": "1", "a": "2"}, options={"hpa": {}})
    b = service(env={"A": "2", "Z": "1"}, labels={"a": "2", "z": "1"}, options={"hpa": {}})
    assert EMITTER.emit(a) == EMITTER.emit(b) == EMITTER.emit(a)
    text = next(iter(EMITTER.emit(a).values()))
    assert text.startswith("# Generated by router")
    assert "&id" not in text and "*id" not in text  # no YAML anchors


HOSTILE = "x\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: pwned}\n"


def test_user_strings_cannot_inject_documents_or_keys() -> None:
    p = job(command=HOSTILE, env={"EVIL": HOSTILE, "K": "v\nkind: Secret"})
    objs = docs(p)
    assert kinds(objs) == ["Job"]
    (c,) = objs[0]["spec"]["template"]["spec"]["containers"]
    assert c["command"] == ["/bin/sh", "-c", HOSTILE]
    assert {e["name"]: e["value"] for e in c["env"]} == {"EVIL": HOSTILE, "K": "v\nkind: Secret"}


# Strings some YAML reader (PyYAML, Go YAML in kubectl/kustomize) could take for another type.
AMBIGUOUS = ["y", "n", "Y", "yes", "on", "off", "true", "null", "~", "1e3", "0x1F"]
AMBIGUOUS += ["0o17", "12:30", "1_000", ".inf", "010", "3.0", "=", ""]


def test_strings_stay_strings_through_kustomize(tmp_path: Path) -> None:
    env = {f"V{i}": v for i, v in enumerate(AMBIGUOUS)}
    files = EMITTER.emit(job(env=env))
    write(tmp_path, {**files, **EMITTER.finish(CLUSTER, [job(env=env)])})
    (built,) = kustomize_build(tmp_path / "kubernetes" / CLUSTER)
    (c,) = built["spec"]["template"]["spec"]["containers"]
    assert {e["name"]: e["value"] for e in c["env"]} == env


# ---------------------------------------------------------------- the cluster folder


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def every_kind() -> list[Placement]:
    out = []
    for name, make in sorted(ALL_KINDS.items()):
        p = make(A100)
        p.workload = p.workload.model_copy(update={"name": f"w-{name}"})
        out.append(p)
    out.append(service(name="mig", options={"mig": "1g.10gb", "queue": "q"}))
    out.append(job(name="queued", nodes=2, options={"queue": "training"}))
    return out


def test_paths_and_kustomization_lists_files_sorted() -> None:
    placements = every_kind()
    assert EMITTER.paths(placements[0]) == [f"kubernetes/{CLUSTER}/w-deployment.yaml"]
    files = EMITTER.finish(CLUSTER, list(reversed(placements)))
    (path,) = files
    assert path == f"kubernetes/{CLUSTER}/kustomization.yaml"
    k = yaml.safe_load(files[path])
    assert k == {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": sorted(f"{p.workload.name}.yaml" for p in placements),
    }


def key(d: dict[str, Any]) -> tuple[str, str, str]:
    return d["apiVersion"], d["kind"], d["metadata"]["name"]


def test_cluster_folder_validates_and_builds_with_kustomize(tmp_path: Path) -> None:
    placements = every_kind()
    files: dict[str, str] = {}
    for p in placements:
        files.update(EMITTER.emit(p))
    files.update(EMITTER.finish(CLUSTER, placements))
    write(tmp_path, files)
    folder = tmp_path / "kubernetes" / CLUSTER
    emitted = []
    for rel in files:
        if not rel.endswith("kustomization.yaml"):
            assert validate_file(tmp_path / rel) == []
            emitted += [d for d in yaml.safe_load_all((tmp_path / rel).read_text()) if d]
    built = kustomize_build(folder)
    assert sorted(map(key, built)) == sorted(map(key, emitted))
    assert sorted(built, key=key) == sorted(emitted, key=key)  # kustomize changed nothing
    for d in built:
        assert validate_manifest(d) == []


@pytest.mark.parametrize("operator", ["job", "jobset", "volcano"])
def test_torchrun_launcher_wraps_the_program_with_the_node_rank(operator: str) -> None:
    p = job(nodes=3, options={"operator": operator, "launcher": "torchrun"},
            command=["python", "train.py", "--lr", "3e-4"])  # fmt: skip
    (spec,) = [s for obj in docs(p) for s in pod_specs(obj)]
    (c,) = spec["containers"]
    rank = "VC_TASK_INDEX" if operator == "volcano" else "NODE_RANK"
    assert c["command"] == [
        "torchrun", "--nnodes=3", "--nproc-per-node=8", f"--node-rank=$({rank})",
        "--master-addr=$(MASTER_ADDR)", "--master-port=$(MASTER_PORT)",
        "train.py", "--lr", "3e-4",
    ]  # fmt: skip
    names = {e["name"] for e in c["env"]}
    assert {"MASTER_ADDR", "MASTER_PORT", "NNODES"} <= names
    assert ("PET_NODE_RANK" in names) == (operator != "volcano")


@pytest.mark.parametrize(
    ("command", "wrapped"),
    [
        (["torchrun", "train.py"], None),  # already torchrun: left alone
        (["/opt/bin/train"], ["--no-python", "/opt/bin/train"]),
        (["python", "-u", "t.py"], ["--no-python", "python", "-u", "t.py"]),
        (["python", "-m", "pkg.train"], ["-m", "pkg.train"]),
        ("python train.py", None),  # a shell string: left alone, sees PET_ variables
    ],
)
def test_torchrun_launcher_leaves_torchrun_and_shell_commands(
    command: Any, wrapped: list[str] | None
) -> None:
    p = job(nodes=2, options={"launcher": "torchrun"}, command=command)
    (spec,) = [s for obj in docs(p) for s in pod_specs(obj)]
    (c,) = spec["containers"]
    if wrapped is None:
        assert c["command"][0] in ("torchrun", "/bin/sh")
        assert "--nnodes=2" not in c["command"]
    else:
        assert c["command"][0] == "torchrun" and c["command"][-len(wrapped) :] == wrapped
