"""Issue 13, Kubernetes: a platform using every new feature, planned, emitted and validated
(kubernetes-validate --strict, the CRD schemas incl. Kubeflow's Notebook, kustomize), then
read back field by field; and the errors a user gets for the new settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from router.cli.main import cli
from router.config import load_project
from router.errors import LoadError, PlanError, PolicyError
from router.language import load_policy
from router.models import load_inventory, load_workloads
from router.plan.build import Plan, build_plan
from tests.emit.test_kubernetes_emit import pod_specs
from tests.helpers import job, make_project
from tests.k8s import hardened
from tests.k8s.pod_security import baseline_errors, restricted_errors
from tests.k8s.test_plan_manifests import (
    OPERATORS_INVENTORY,
    OPERATORS_POLICY,
    check_plan,
    operator_workloads,
)
from tests.k8s.validate import kustomize_build

Docs = dict[str, list[dict[str, Any]]]


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Plan, Path, Docs]:
    tmp = tmp_path_factory.mktemp("hardened")
    plan = build_plan(load_project(hardened.project(tmp / "p")))
    assert not plan.unplaced and not plan.unrouted and not plan.denied
    out = tmp / "out"
    check_plan(plan, out)  # validates every file, builds the folder, compares with the plan
    docs = {
        p.workload.name: [d for d in yaml.safe_load_all((out / p.artifacts[0]).read_text()) if d]
        for p in plan.placements
    }
    return plan, out, docs


def one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [d for d in docs if d["kind"] == kind]
    return found


def target(plan: Plan, name: str) -> str:
    (p,) = [p for p in plan.placements if p.workload.name == name]
    return p.target.id


def walk(node: Any) -> list[Any]:
    """Every dict key anywhere in a document."""
    if isinstance(node, dict):
        return [*node, *(k for v in node.values() for k in walk(v))]
    if isinstance(node, list):
        return [k for v in node for k in walk(v)]
    return []


# ---------------------------------------------------------------- notebooks


def test_notebook_is_a_statefulset_with_headless_service_and_its_own_claim(planned: Any) -> None:
    _, _, docs = planned
    nb = docs["nb-alice"]
    assert [d["kind"] for d in nb] == ["Service", "StatefulSet"]
    svc, sts = nb
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["ports"] == [{"name": "http", "port": 8888, "targetPort": 8888}]
    spec = sts["spec"]
    assert spec["serviceName"] == "nb-alice" and spec["replicas"] == 1
    (claim,) = spec["volumeClaimTemplates"]
    assert claim["spec"] == {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "20480Mi"}},
        "storageClassName": "fast",
    }
    assert spec["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    pod = spec["template"]["spec"]
    (c,) = pod["containers"]
    assert {"name": "home", "mountPath": "/home/jovyan"} in c["volumeMounts"]
    assert c["ports"] == [{"containerPort": 8888, "protocol": "TCP"}]
    assert {"startupProbe", "readinessProbe", "livenessProbe"} <= set(c)
    assert pod["securityContext"]["runAsUser"] == 10000  # the workload's run_as_user
    # Interactive: no deadline anywhere (a Job would kill it after its duration).
    assert "activeDeadlineSeconds" not in walk(nb)


def test_kubeflow_notebook_with_a_claim_gitops_never_prunes(planned: Any) -> None:
    _, _, docs = planned
    claim, notebook = docs["nb-kf"]
    assert (claim["kind"], notebook["kind"]) == ("PersistentVolumeClaim", "Notebook")
    assert notebook["apiVersion"] == "kubeflow.org/v1"
    assert claim["metadata"]["annotations"] == {
        "argocd.argoproj.io/sync-options": "Prune=false",
        "kustomize.toolkit.fluxcd.io/prune": "disabled",
    }
    pod = notebook["spec"]["template"]["spec"]
    assert {"name": "home", "persistentVolumeClaim": {"claimName": "nb-kf-workspace"}} in pod[
        "volumes"
    ]
    (c,) = pod["containers"]
    assert c["name"] == "nb-kf" and c["ports"][0]["containerPort"] == 8888
    assert notebook["metadata"]["namespace"] == "kubeflow-user"


def test_a_notebook_planned_on_several_nodes_is_an_error(tmp_path: Path) -> None:
    work = [{"name": "nb", "kind": "notebook", "image": "jupyter/base:1", "nodes": 2,
             "cpus": 64, "memory": "8GiB"}]  # fmt: skip
    root = make_project(tmp_path, work, "policy p\nrule r: route kubernetes\n", hardened.INVENTORY)
    plan = build_plan(load_project(root))
    with pytest.raises(PlanError, match="a notebook runs on one"):
        check_plan(plan, tmp_path / "out")


# ---------------------------------------------------------------- namespaces


def test_namespaces_with_the_pod_security_level_their_workloads_need(planned: Any) -> None:
    _, out, _ = planned
    folder = out / "kubernetes" / "k8s-lab"
    listed = yaml.safe_load((folder / "kustomization.yaml").read_text())["resources"]
    assert listed[0] == "namespaces.yaml"
    namespaces = list(yaml.safe_load_all((folder / "namespaces.yaml").read_text()))[0:]
    levels = {
        n["metadata"]["name"]: n["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
        for n in namespaces
        if n
    }
    assert levels == {
        "data": "restricted",
        "hpc": "restricted",
        "kubeflow-user": "restricted",
        "legacy": "baseline",  # the rule that opted out
        "notebooks": "restricted",
        "research": "restricted",
        "serving": "restricted",
        "vision": "restricted",
    }
    built = kustomize_build(folder)
    assert sorted(d["metadata"]["name"] for d in built if d["kind"] == "Namespace") == sorted(
        levels
    )
    # Every namespaced object lands in one of them.
    assert {d["metadata"]["namespace"] for d in built if d["kind"] != "Namespace"} <= set(levels)


def test_no_namespaces_unless_router_yaml_asks(tmp_path: Path) -> None:
    plan = build_plan(load_project(hardened.project(tmp_path / "p", namespaces=False)))
    files = check_plan(plan, tmp_path / "out")
    assert files  # planned and valid
    folder = tmp_path / "out" / "kubernetes" / "k8s-lab"
    assert not (folder / "namespaces.yaml").exists()
    assert "namespaces.yaml" not in (folder / "kustomization.yaml").read_text()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kubernetes:\n  create_namespace: true\n", 'did you mean "create_namespaces"'),
        ("kubernetes:\n  create_namespaces: yes please\n", "expected true or false"),
        ("kubernetes: [create_namespaces]\n", "expected a mapping"),
        ("kubernets: {}\n", 'did you mean "kubernetes"'),
    ],
)
def test_router_yaml_kubernetes_errors(tmp_path: Path, text: str, message: str) -> None:
    root = make_project(tmp_path, [job("a")])
    with (root / "router.yaml").open("a") as f:
        f.write(text)
    with pytest.raises(LoadError) as e:
        load_project(root)
    assert message in str(e.value) + str(e.value.hint)
    assert e.value.path is not None and e.value.path.endswith("router.yaml")


# ---------------------------------------------------------------- pods


def test_service_identity_volumes_secrets_probes_shm_and_priority(planned: Any) -> None:
    _, _, docs = planned
    deploy = one(docs["chat"], "Deployment")
    pod = deploy["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "chat-reader"
    assert pod["automountServiceAccountToken"] is True  # it asked for an identity
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert pod["priorityClassName"] == "prod-high"  # priority high, the cluster's table
    assert pod["volumes"] == [
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8192Mi"}},
        {"name": "vol-0", "persistentVolumeClaim": {"claimName": "models", "readOnly": True}},
        {"name": "vol-1", "secret": {"secretName": "tls"}},
        {"name": "vol-2", "configMap": {"name": "chat-config"}},
    ]
    (c,) = pod["containers"]
    assert c["volumeMounts"] == [
        {"name": "dshm", "mountPath": "/dev/shm"},
        {"name": "vol-0", "mountPath": "/models", "readOnly": True},
        {"name": "vol-1", "mountPath": "/etc/tls", "readOnly": True},
        {"name": "vol-2", "mountPath": "/etc/chat", "readOnly": True},
    ]
    assert c["env"] == [
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
        {"name": "MODEL", "value": "llama"},
    ]
    http = {"httpGet": {"path": "/healthz", "port": 8000}}
    assert c["startupProbe"] == {**http, "periodSeconds": 10, "failureThreshold": 90}  # 15 min
    assert c["readinessProbe"] == {**http, "periodSeconds": 10, "failureThreshold": 3}
    assert c["livenessProbe"]["httpGet"] == http["httpGet"]
    assert c["imagePullPolicy"] == "IfNotPresent"  # pinned by digest
    assert len(pod["topologySpreadConstraints"]) == 2  # up to 6 replicas
    annotations = deploy["metadata"]["annotations"]
    assert sorted(v.split("=")[0] for v in annotations.values()) == ["CKV_K8S_35", "CKV_K8S_38"]


def test_priority_class_from_the_table_by_priority(planned: Any) -> None:
    _, _, docs = planned
    etl = one(docs["etl"], "Job")["spec"]["template"]["spec"]
    assert etl["priorityClassName"] == "batch-low"
    legacy = one(docs["legacy-api"], "Deployment")["spec"]["template"]["spec"]
    assert legacy["priorityClassName"] == "standard"  # normal


def test_restricted_by_default_and_the_baseline_opt_out(planned: Any) -> None:
    _, _, docs = planned
    etl = one(docs["etl"], "Job")["spec"]["template"]["spec"]
    assert etl["securityContext"]["runAsNonRoot"] is True
    assert etl["automountServiceAccountToken"] is False
    (c,) = etl["containers"]
    assert c["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
    }
    assert "volumes" not in etl  # no GPU: no /dev/shm
    legacy = one(docs["legacy-api"], "Deployment")
    pod = legacy["spec"]["template"]["spec"]
    assert pod["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    (c,) = pod["containers"]
    assert c["securityContext"] == {"allowPrivilegeEscalation": False}
    assert "topologySpreadConstraints" not in pod  # one replica
    skipped = sorted(v.split("=")[0] for v in legacy["metadata"]["annotations"].values())
    assert skipped == ["CKV_K8S_23", "CKV_K8S_28", "CKV_K8S_37", "CKV_K8S_40"]


# ---------------------------------------------------------------- taints


def test_research_only_pool_takes_only_work_of_rules_that_tolerate_it(planned: Any) -> None:
    plan, _, docs = planned
    assert target(plan, "llm-research") == "k8s-lab/h100"
    # Same size, but its rule does not tolerate research-only: the l4 pool, never h100.
    assert target(plan, "llm-other") == "k8s-lab/l4"
    (other,) = [d for d in plan.decisions if d.workload.name == "llm-other"]
    reasons = {e.target: e.reason for e in other.excluded}
    assert reasons["k8s-lab/h100"] == (
        'tainted research-only; the rule does not tolerate it (tolerate = ["research-only"])'
    )
    pod = one(docs["llm-research"], "JobSet")["spec"]["replicatedJobs"][0]["template"]["spec"]
    keys = [t["key"] for t in pod["template"]["spec"]["tolerations"]]
    assert keys == ["nvidia.com/gpu", "research-only"]


def test_cpu_work_stays_off_gpu_tainted_pools(planned: Any) -> None:
    plan = planned[0]
    for name in ("etl", "legacy-api", "nb-kf", "cfd"):
        assert target(plan, name) == "k8s-lab/cpu", name
    (etl,) = [d for d in plan.decisions if d.workload.name == "etl"]
    reasons = {e.target: e.reason for e in etl.excluded if "tainted" in e.reason}
    assert reasons == {
        "k8s-lab/h100": (
            'tainted research-only; the rule does not tolerate it (tolerate = ["research-only"])'
        ),
        "k8s-lab/l4": "tainted nvidia.com/gpu for GPU work; the workload uses no GPUs",
    }


@pytest.mark.parametrize("tolerate", [True, False])
def test_a_rule_may_tolerate_the_gpu_taint_for_cpu_work(tmp_path: Path, tolerate: bool) -> None:
    option = ' with tolerate = ["nvidia.com/gpu"]' if tolerate else ""
    policy = f'policy p\nrule r: route kubernetes{option} where gpu_type == "l4"\n'
    work = [{"name": "etl", "image": "x/etl:1", "cpus": 4, "memory": "8GiB"}]
    plan = build_plan(load_project(make_project(tmp_path, work, policy, hardened.INVENTORY)))
    if not tolerate:
        assert not plan.placements and len(plan.unplaced) == 1
        assert any("tainted nvidia.com/gpu for GPU work" in r for r in plan.unplaced[0].reasons)
        return
    assert target(plan, "etl") == "k8s-lab/l4"
    check_plan(plan, tmp_path / "out")


# ---------------------------------------------------------------- launchers


def test_jobset_torchrun_rendezvous(planned: Any) -> None:
    _, _, docs = planned
    js = one(docs["llm-research"], "JobSet")
    job_spec = js["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert job_spec["completions"] == 2 and job_spec["completionMode"] == "Indexed"
    (c,) = job_spec["template"]["spec"]["containers"]
    assert c["command"] == [
        "torchrun",
        "--nnodes=2",
        "--nproc-per-node=8",
        "--node-rank=$(NODE_RANK)",
        "--master-addr=$(MASTER_ADDR)",
        "--master-port=$(MASTER_PORT)",
        "train.py",  # `python` dropped: torchrun runs the script
        "--epochs",
        "3",
    ]
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in c["env"]}
    master = "llm-research-node-0-0.llm-research"
    assert env["MASTER_ADDR"] == env["PET_MASTER_ADDR"] == master
    assert env["MASTER_PORT"] == env["PET_MASTER_PORT"] == "29500"
    assert env["NNODES"] == env["PET_NNODES"] == "2"
    assert env["PET_NPROC_PER_NODE"] == "8"
    index = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    assert env["NODE_RANK"] == env["PET_NODE_RANK"] == {"fieldRef": {"fieldPath": index}}


def test_pytorchjob_torchrun_takes_the_operators_env(planned: Any) -> None:
    _, _, docs = planned
    ptj = one(docs["llm-other"], "PyTorchJob")
    assert ptj["spec"]["nprocPerNode"] == "4"
    for replica in ptj["spec"]["pytorchReplicaSpecs"].values():
        (c,) = replica["template"]["spec"]["containers"]
        assert c["command"] == ["torchrun", "train.py"]


def test_trainjob_on_the_torch_runtime_with_the_pool_as_a_patch(planned: Any) -> None:
    plan, _, docs = planned
    tj = one(docs["vit-trainer"], "TrainJob")
    assert tj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-v"
    spec = tj["spec"]
    assert spec["runtimeRef"] == {"name": "torch-distributed"}
    trainer = spec["trainer"]
    assert (trainer["numNodes"], trainer["numProcPerNode"]) == (2, 4)  # 8 l4 on 4-GPU nodes
    assert trainer["command"] == ["torchrun", "vit.py"]
    assert trainer["resourcesPerNode"]["limits"]["nvidia.com/gpu"] == "4"
    (patch,) = spec["runtimePatches"]
    (rjob,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    pod = rjob["template"]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"pool": "l4"}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["containers"][0]["name"] == "node"
    assert target(plan, "vit-trainer") == "k8s-lab/l4"


def test_mpijob_slots_per_worker_from_ranks_per_node(planned: Any) -> None:
    _, _, docs = planned
    mpi = one(docs["cfd"], "MPIJob")
    spec = mpi["spec"]
    assert spec["slotsPerWorker"] == 8
    launcher, worker = spec["mpiReplicaSpecs"]["Launcher"], spec["mpiReplicaSpecs"]["Worker"]
    assert launcher["replicas"] == 1 and worker["replicas"] == 2
    (run,) = launcher["template"]["spec"]["containers"]
    assert run["command"] == ["mpirun", "-np", "16", "-x", "OMP_NUM_THREADS",
                              "/opt/cfd/solver", "-i", "x"]  # fmt: skip
    (w,) = worker["template"]["spec"]["containers"]
    assert "command" not in w
    assert {"name": "OMP_NUM_THREADS", "value": "3"} in w["env"]
    assert w["resources"]["requests"]["cpu"] == "24"  # 8 ranks × 3 threads per node


def test_launcher_mpi_needs_an_mpijob(tmp_path: Path) -> None:
    work = [{"name": "cfd", "kind": "hpc", "image": "x/cfd:1", "nodes": 2, "cpus": 16,
             "memory": "8GiB", "launcher": "mpi", "command": ["solver"]}]  # fmt: skip
    policy = 'policy p\nrule r: route kubernetes with operator = "jobset"\n'
    plan = build_plan(load_project(make_project(tmp_path, work, policy, hardened.INVENTORY)))
    with pytest.raises(PlanError, match='needs operator = "mpijob"'):
        check_plan(plan, tmp_path / "out")


# ---------------------------------------------------------------- input errors


@pytest.mark.parametrize(
    ("kubernetes", "message"),
    [
        ({"volumes": [{"pvc": "a", "secret": "b", "mount": "/x"}]}, "exactly one of pvc"),
        ({"volumes": [{"pvc": "a", "mount": "/dev/shm"}]}, "router's own"),
        ({"volumes": [{"pvc": "a", "mount": "data"}]}, "absolute path"),
        ({"volumes": [{"pvc": "a", "mount": "/x"}, {"secret": "b", "mount": "/x"}]}, "two"),
        ({"secret_env": {"TOKEN": {"secret": "Bad_Name", "key": "k"}}}, "object name"),
        ({"service_account": "x; rm -rf /"}, "object name"),
        ({"probe": {"path": "healthz"}}, "HTTP path"),
        ({"run_as_user": 0}, "non-root UID"),
        ({"sevice_account": "x"}, "sevice_account"),
    ],
)
def test_workload_kubernetes_errors(tmp_path: Path, kubernetes: dict[str, Any],
                                    message: str) -> None:  # fmt: skip
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump([{"name": "a", "image": "x/y:1", "kubernetes": kubernetes}]))
    with pytest.raises(LoadError) as e:
        load_workloads(path)
    assert message in str(e.value)
    assert "w.yaml" in str(e.value) and "kubernetes" in str(e.value)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("tolerate = [1]", "a list of strings"),
        ('tolerate = "research-only"', "a list of strings"),
        ('pod_security = "privileged"', "one of restricted, baseline"),
        ('notebook = "jupyter"', "one of statefulset, kubeflow"),
        ('tolerate = ["x"], exclusive', "slurm option"),
    ],
)
def test_rule_option_errors(tmp_path: Path, option: str, message: str) -> None:
    path = tmp_path / "p.route"
    path.write_text(f"policy p\nrule r: route kubernetes with {option}\n")
    with pytest.raises(PolicyError) as e:
        load_policy(path)
    assert message in str(e.value)
    assert "p.route:2:" in str(e.value)


@pytest.mark.parametrize("operator", ["job", "jobset"])
def test_torchrun_on_one_node_is_standalone(tmp_path: Path, operator: str) -> None:
    work = [job("ft", gpus=4, cpus=16, memory="64GiB", launcher="torchrun",
                command=["python3", "ft.py"])]  # fmt: skip
    policy = f'policy p\nrule r: route kubernetes with operator = "{operator}"\n'
    plan = build_plan(load_project(make_project(tmp_path, work, policy, hardened.INVENTORY)))
    check_plan(plan, tmp_path / "out")
    (p,) = plan.placements
    text = (tmp_path / "out" / p.artifacts[0]).read_text()
    (doc,) = [d for d in yaml.safe_load_all(text) if d]
    spec = doc["spec"]
    if operator == "jobset":
        spec = spec["replicatedJobs"][0]["template"]["spec"]
    (c,) = spec["template"]["spec"]["containers"]
    assert c["command"] == ["torchrun", "--standalone", "--nproc-per-node=4", "ft.py"]


# ---------------------------------------------------------------- Pod Security, every platform


def platform_pods(root: Path, out: Path) -> list[tuple[str, str, dict[str, Any]]]:
    """(workload, its rule's pod_security level, pod spec) of every pod a platform emits."""
    plan = build_plan(load_project(root))
    check_plan(plan, out)
    pods = []
    for p in plan.placements:
        if p.backend != "kubernetes":
            continue
        level = str(p.options.get("pod_security", "restricted"))
        for d in yaml.safe_load_all((out / p.artifacts[0]).read_text()):
            for spec in pod_specs_of(d) if d else []:
                pods.append((p.workload.name, level, spec))
    return pods


def pod_specs_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    specs = pod_specs(doc)
    if doc["kind"] == "MPIJob":  # the launcher pod too
        specs.append(doc["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"])
    return specs


@pytest.mark.parametrize("platform", ["example", "hardened", "operators"])
def test_every_pod_meets_its_pod_security_level(tmp_path: Path, platform: str) -> None:
    if platform == "example":
        root = Path(__file__).resolve().parents[2] / "examples" / "ml-platform"
    elif platform == "hardened":
        root = hardened.project(tmp_path / "p")
    else:
        root = make_project(tmp_path / "p", operator_workloads(), OPERATORS_POLICY,
                            OPERATORS_INVENTORY)  # fmt: skip
    pods = platform_pods(root, tmp_path / "out")
    assert pods
    levels = set()
    for name, level, spec in pods:
        levels.add(level)
        errors = restricted_errors(spec) if level == "restricted" else baseline_errors(spec)
        assert errors == [], f"{name} ({level}): {errors}"
    if platform == "hardened":
        assert levels == {"restricted", "baseline"}
        # The opted-out pod would not pass restricted: the check can tell them apart.
        (legacy,) = [spec for name, _, spec in pods if name == "legacy-api"]
        assert restricted_errors(legacy)


def test_inventory_priority_class_table_errors(tmp_path: Path) -> None:
    table = {"priority_classes": {"hihg": "prod-high"}}
    inventory = {"clusters": [{**hardened.INVENTORY["clusters"][0], "kubernetes": table}]}
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    with pytest.raises(LoadError) as e:
        load_inventory(path)
    text = str(e.value)
    assert "inventory.yaml" in text and "priority_classes" in text and 'did you mean "high"' in text


def test_router_plan_writes_the_namespaces(tmp_path: Path) -> None:
    root = hardened.project(tmp_path / "p")
    result = CliRunner().invoke(cli, ["plan", str(root)])
    assert result.exit_code == 0, result.output
    folder = root / "out" / "kubernetes" / "k8s-lab"
    kinds = {d["kind"] for d in yaml.safe_load_all((folder / "namespaces.yaml").read_text())}
    assert kinds == {"Namespace"}
    plan = yaml.safe_load((root / "out" / "plan.json").read_text())
    assert len(plan["placements"]) == len(hardened.workloads())
