"""Whole plans, emitted and checked the way a platform team's CI would check them.

Plans of examples/ml-platform and of platforms written here (every operator, KServe, Kueue
queues, priority classes, MIG) go through `build_plan` and `emit_all`; then every manifest must
pass tests/k8s/validate.py (kubernetes-validate --strict, the real CRD schemas) with no error,
every out/kubernetes/<cluster>/ folder must build with `kubectl kustomize`, and every placement's
pod templates must say what the plan and the inventory say: the node selector is the pool's
labels, the tolerations are its taints, and the GPU requests (whole GPUs or MIG slices), CPUs,
memory and pod counts are the plan's. A manifest that fails is a failing test, never a skip.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from router.config import load_project
from router.emit import assign_artifacts, emit_all
from router.models import NodePool
from router.models.placement import Placement
from router.plan.build import Plan, build_plan
from router.plan.verify import verify_plan
from tests.helpers import job, make_project
from tests.k8s.validate import kustomize_build, validate_file, validate_manifest

ROOT = Path(__file__).resolve().parents[2]
GPU = "nvidia.com/gpu"

# ---------------------------------------------------------------- the checks


def plan_of(root: Path) -> Plan:
    return build_plan(load_project(root))


def write_out(plan: Plan, out: Path) -> dict[str, str]:
    assign_artifacts(plan.placements)
    files = emit_all(plan.placements, plan.project.kubernetes)
    for rel, text in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return files


def pod_specs(doc: dict[str, Any]) -> list[tuple[dict[str, Any], int]]:
    """(pod spec, pods it stands for) of one object; [] for kinds without pods."""
    kind, spec = doc["kind"], doc.get("spec", {})
    api = doc["apiVersion"].split("/")[0]
    if kind in ("Deployment", "StatefulSet"):
        return [(spec["template"]["spec"], spec.get("replicas", -1))]
    if kind == "Notebook":
        return [(spec["template"]["spec"], 1)]
    if kind == "TrainJob":  # placement in the runtime patch; resources in the trainer
        (patch,) = spec["runtimePatches"]
        (rjob,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
        pod_spec = dict(rjob["template"]["spec"]["template"]["spec"])
        (c,) = pod_spec["containers"]
        pod_spec["containers"] = [{**c, "resources": spec["trainer"]["resourcesPerNode"]}]
        return [(pod_spec, spec["trainer"]["numNodes"])]
    if kind == "MPIJob":  # the launcher is a small pod of its own, not one of the plan's nodes
        worker = spec["mpiReplicaSpecs"]["Worker"]
        return [(worker["template"]["spec"], worker["replicas"])]
    if kind == "Job" and api == "batch":
        return [(spec["template"]["spec"], spec.get("parallelism", 1))]
    if kind == "JobSet":
        return [
            (
                r["template"]["spec"]["template"]["spec"],
                r["replicas"] * r["template"]["spec"].get("parallelism", 1),
            )
            for r in spec["replicatedJobs"]
        ]
    if kind == "PyTorchJob":
        return [
            (r["template"]["spec"], r["replicas"]) for r in spec["pytorchReplicaSpecs"].values()
        ]
    if kind == "Job" and api == "batch.volcano.sh":
        return [(t["template"]["spec"], t["replicas"]) for t in spec["tasks"]]
    if kind == "InferenceService":
        return [(spec["predictor"], spec["predictor"]["minReplicas"])]
    return []


def expected_tolerations(p: Placement) -> list[dict[str, str]]:
    """The pool's taints the workload is entitled to: the GPU taint with GPUs, the rest only
    through the rule's `tolerate`."""
    pool = p.target.target
    assert isinstance(pool, NodePool)
    keys = set(p.options.get("tolerate") or [])
    out = []
    for t in pool.taints:
        if not ((t.gpu and p.resources.gpus_per_node > 0) or t.key in keys):
            continue
        tol = {"key": t.key, "effect": t.effect}
        tol.update({"operator": "Equal", "value": t.value} if t.value else {"operator": "Exists"})
        out.append(tol)
    return sorted(out, key=lambda d: sorted(d.items()))


def tolerated(taint: Any, tolerations: list[dict[str, str]]) -> bool:
    """Kubernetes' rule: a toleration matches the key (Exists: any value) and the effect."""
    for tol in tolerations:
        if tol.get("key") != taint.key or tol.get("effect", taint.effect) != taint.effect:
            continue
        if tol.get("operator", "Equal") == "Exists" or tol.get("value", "") == taint.value:
            return True
    return False


def gpu_requests(resources: dict[str, Any]) -> dict[str, str]:
    return {
        k: v
        for k, v in resources.get("requests", {}).items()
        if k == GPU or k.startswith("nvidia.com/mig-")
    }


def check_placement(p: Placement, docs: list[dict[str, Any]]) -> int:
    """Asserts the pod templates of `p` match its pool and its resources; returns its pods."""
    pool = p.target.target
    assert isinstance(pool, NodePool)
    r = p.resources
    specs = [s for d in docs for s in pod_specs(d)]
    # An MPIJob's launcher runs beside a worker: the two add up to the plan's per-node numbers.
    extra_cpu = extra_mem = 0
    for d in docs:
        if d["kind"] == "MPIJob":
            extra_cpu, extra_mem = check_mpi_launcher(p, d)
    assert specs, f"{p.workload.name}: no pod template in {[d['kind'] for d in docs]}"
    pods = 0
    for spec, count in specs:
        where = f"{p.workload.name} on {p.target.id}"
        assert spec.get("nodeSelector", {}) == pool.labels, where
        tolerations = spec.get("tolerations", [])
        # Every taint that would keep the pod off the pool is tolerated, and no other.
        blocking = [t for t in pool.taints if t.effect != "PreferNoSchedule"]
        assert all(tolerated(t, tolerations) for t in blocking), where
        assert sorted(tolerations, key=lambda d: sorted(d.items())) == expected_tolerations(p)
        (container,) = spec["containers"]
        res = container["resources"]
        if r.gpus_per_node:
            name = f"nvidia.com/mig-{r.mig}" if r.mig else GPU
            assert gpu_requests(res) == {name: str(r.gpus_per_node)}, where
            assert res["limits"][name] == str(r.gpus_per_node), where
            assert name == GPU or r.mig in pool.slices_per_node, where
        else:
            assert gpu_requests(res) == {}, where
        assert int(res["requests"]["cpu"]) + extra_cpu == r.cpus_per_node, where
        assert res["requests"]["memory"] == f"{r.memory_per_node - extra_mem}Mi", where
        pods += count
    if p.workload.is_service:
        low, high = replica_bounds(p, docs)
        assert (low, high) == (r.replicas_min, r.replicas_max), p.workload.name
    else:
        assert pods == r.nodes, f"{p.workload.name}: {pods} pods, the plan has {r.nodes} nodes"
        volcano = [d for d in docs if d["apiVersion"].startswith("batch.volcano.sh")]
        for d in volcano:
            assert d["spec"]["minAvailable"] == r.nodes  # a gang of the whole job
    return pods


def check_mpi_launcher(p: Placement, doc: dict[str, Any]) -> tuple[int, int]:
    """The MPIJob's Launcher pod is on the placement's pool (its selector and tolerations), has
    no GPU, prefers a worker's node, and is counted there (Resources.mpi_launcher); returns its
    CPUs and MiB."""
    pool = p.target.target
    assert isinstance(pool, NodePool) and p.resources.mpi_launcher, p.workload.name
    replicas = doc["spec"]["mpiReplicaSpecs"]
    spec = replicas["Launcher"]["template"]["spec"]
    assert spec.get("nodeSelector", {}) == pool.labels, p.workload.name
    tolerations = sorted(spec.get("tolerations", []), key=lambda d: sorted(d.items()))
    assert tolerations == expected_tolerations(p)
    (term,) = spec["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    workers = replicas["Worker"]["template"]["metadata"]["labels"]
    wanted = term["podAffinityTerm"]["labelSelector"]["matchLabels"]
    assert wanted.items() <= workers.items(), (wanted, workers)
    launcher_labels = replicas["Launcher"]["template"]["metadata"]["labels"]
    assert not wanted.items() <= launcher_labels.items()  # the workers' anti-affinity spares it
    (c,) = spec["containers"]
    requests = c["resources"]["requests"]
    assert gpu_requests(c["resources"]) == {}
    memory = requests["memory"]
    assert memory.endswith("Mi")
    return int(requests["cpu"]), int(memory[:-2])


def replica_bounds(p: Placement, docs: list[dict[str, Any]]) -> tuple[int, int]:
    """(min, max) replicas the manifests allow: the plan's, which hpa(...) only clamps."""
    low, high = p.resources.replicas_min, p.resources.replicas_max
    want = (low, high)
    for d in docs:
        if d["kind"] == "HorizontalPodAutoscaler":
            assert (d["spec"]["minReplicas"], d["spec"]["maxReplicas"]) == (
                max(want[0], 1),
                max(want[1], 1),
            )
        if d["kind"] == "InferenceService":
            pred = d["spec"]["predictor"]
            assert (pred["minReplicas"], pred["maxReplicas"]) == want
        if d["kind"] == "Deployment" and "hpa" not in p.options:
            assert d["spec"]["replicas"] == low
    return low, high


def check_plan(plan: Plan, out: Path) -> dict[str, int]:
    """Validate, build and compare everything a plan emits for Kubernetes; {kind: count}."""
    files = write_out(plan, out)
    kinds: dict[str, int] = {}
    clusters = set()
    for rel in files:
        if not rel.startswith("kubernetes/"):
            continue
        clusters.add(rel.split("/")[1])
        if rel.endswith("/kustomization.yaml"):
            continue
        errors = validate_file(out / rel)
        assert errors == [], f"{rel}:\n" + "\n".join(errors)
    for cluster in sorted(clusters):
        folder = out / "kubernetes" / cluster
        built = kustomize_build(folder)
        listed = yaml.safe_load((folder / "kustomization.yaml").read_text())["resources"]
        on_disk = sorted(f.name for f in folder.glob("*.yaml") if f.name != "kustomization.yaml")
        assert sorted(listed) == on_disk
        emitted = [
            d for name in listed for d in yaml.safe_load_all((folder / name).read_text()) if d
        ]
        assert len(built) == len(emitted)
        for d in built:
            assert validate_manifest(d) == []
    for p in plan.placements:
        if p.backend != "kubernetes":
            continue
        (path,) = p.artifacts
        docs = [d for d in yaml.safe_load_all((out / path).read_text()) if d]
        check_placement(p, docs)
        for d in docs:
            key = f"{d['apiVersion'].split('/')[0]}/{d['kind']}"
            kinds[key] = kinds.get(key, 0) + 1
    return kinds


# ---------------------------------------------------------------- the example platform


def test_example_platform(tmp_path: Path) -> None:
    plan = plan_of(ROOT / "examples" / "ml-platform")
    on_k8s = [p for p in plan.placements if p.backend == "kubernetes"]
    assert on_k8s, "the example places nothing on Kubernetes"
    kinds = check_plan(plan, tmp_path)
    assert kinds.get("apps/Deployment", 0) >= 1
    # The research-only pool takes the work of the one rule that tolerates its taint.
    (train,) = [p for p in on_k8s if p.target.id == "k8s-research/h100-train"]
    assert (train.workload.name, train.rule) == ("gnn-baseline", "research_k8s_training")
    docs = list(yaml.safe_load_all((tmp_path / train.artifacts[0]).read_text()))
    tolerations = [t for d in docs for spec, _ in pod_specs(d) for t in spec.get("tolerations", [])]
    assert {"key": "research-only", "operator": "Exists", "effect": "NoSchedule"} in tolerations


# ---------------------------------------------------------------- every operator, KServe, MIG

TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
OPERATORS_INVENTORY: dict[str, Any] = {
    "clusters": [
        {
            "name": "gke-train",
            "backend": "kubernetes",
            "node_pools": [
                {
                    "name": "h100",
                    "nodes": 4,
                    "max_nodes": 12,
                    "gpus_per_node": 8,
                    "gpu_type": "h100",
                    "cpus_per_node": 200,
                    "memory_per_node": "1800GiB",
                    "cost_per_gpu_hour": 3.0,
                    "labels": {
                        "cloud.google.com/gke-nodepool": "h100",
                        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                    },
                    "taints": [
                        TAINT,
                        {"key": "dedicated", "value": "training", "effect": "NoExecute"},
                    ],
                },
                {
                    "name": "a100-mig",
                    "nodes": 2,
                    "gpus_per_node": 4,
                    "gpu_type": "a100",
                    "cpus_per_node": 95,
                    "memory_per_node": "1300GiB",
                    "cost_per_gpu_hour": 1.5,
                    "mig": [
                        {"gpus": 2, "slices": {"1g.10gb": 7}},
                        {"gpus": 2, "slices": {"3g.40gb": 2}},
                    ],
                    "labels": {"cloud.google.com/gke-nodepool": "a100-mig"},
                    "taints": [TAINT],
                },
                {
                    "name": "l4",
                    "nodes": 3,
                    "max_nodes": 12,
                    "gpus_per_node": 4,
                    "gpu_type": "l4",
                    "cpus_per_node": 47,
                    "memory_per_node": "175GiB",
                    "cost_per_gpu_hour": 0.7,
                    "labels": {"cloud.google.com/gke-nodepool": "l4", "team": "serving"},
                    "taints": [TAINT, {"key": "spot", "effect": "PreferNoSchedule"}],
                },
                {
                    "name": "cpu",
                    "nodes": 4,
                    "cpus_per_node": 31,
                    "memory_per_node": "120GiB",
                    "labels": {"cloud.google.com/gke-nodepool": "cpu"},
                },
            ],
        },
        {
            "name": "eks-batch",
            "backend": "kubernetes",
            "node_pools": [
                {
                    "name": "a10g",
                    "nodes": 2,
                    "gpus_per_node": 4,
                    "gpu_type": "a10g",
                    "cpus_per_node": 47,
                    "memory_per_node": "180GiB",
                    "labels": {"eks.amazonaws.com/nodegroup": "a10g"},
                    "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
                },
                {"name": "plain", "nodes": 2, "cpus_per_node": 15, "memory_per_node": "60GiB"},
            ],
        },
    ]
}

OPERATORS_POLICY = """
policy operators
rule by_operator_job:
  when kind == "training" and labels.op == "job"
  route kubernetes with operator = "job", queue = "team-a", priority_class = "train-normal",
    tolerate = ["dedicated"] where gpu_type == "h100"
rule by_operator_jobset:
  when kind == "training" and labels.op == "jobset"
  route kubernetes with operator = "jobset", queue = "team-b", priority_class = "train-high",
    tolerate = ["dedicated"] where gpu_type == "h100"
rule by_operator_pytorch:
  when kind == "training" and labels.op == "pytorchjob"
  route kubernetes with operator = "pytorchjob", queue = "research", tolerate = ["dedicated"]
    where gpu_type == "h100"
rule by_operator_mpi:
  when kind == "training" and labels.op == "mpijob"
  route kubernetes with operator = "mpijob", tolerate = ["dedicated"] where gpu_type == "h100"
rule by_operator_volcano:
  when kind == "training" and labels.op == "volcano"
  route kubernetes with operator = "volcano", queue = "gang", priority_class = "batch-low",
    tolerate = ["dedicated"] where gpu_type == "h100"
rule mig_serving:
  when kind == "inference" and labels.mig == "yes"
  route kubernetes with mig = "1g.10gb", pdb where "1g.10gb" in mig
rule mig_batch:
  when kind == "batch" and labels.mig == "yes"
  route kubernetes with mig = "3g.40gb", queue = "notebooks" where "3g.40gb" in mig
rule kserve:
  when kind == "inference" and labels.serving == "kserve"
  route kubernetes with serving = "kserve", hpa(min = 1, max = 6, cpu = 60%)
    where gpu_type == "l4"
rule serve:
  when kind == "inference"
  route kubernetes with hpa(cpu = 70%, memory = 80%), pdb(max_unavailable = 1)
    where gpu_type == "l4" or gpu_type == "a10g"
rule batch:
  route kubernetes where gpus_per_node == 0 and cluster == "eks-batch"
"""


def operator_workloads() -> list[dict[str, Any]]:
    train = {
        "kind": "training",
        "image": "nvcr.io/nvidia/pytorch:24.05-py3",
        "gpus": 16,
        "cpus": 128,
        "memory": "1TiB",
        "duration": "6h",
        "team": "llm",
    }
    out = [
        job(f"train-{op}", **train, labels={"op": op}, nodes=2)
        for op in ("job", "jobset", "pytorchjob", "volcano")
    ]
    out.append(job("finetune-one-node", **{**train, "gpus": 8}, labels={"op": "pytorchjob"}))
    serve = {
        "kind": "inference",
        "image": "ghcr.io/acme/serve:2.1",
        "cpus": 8,
        "memory": "32GiB",
        "gpus": 1,
        "team": "serving",
        "port": 8000,
    }
    out += [
        {
            "name": "chat-kserve",
            **serve,
            "labels": {"serving": "kserve"},
            "replicas": {"min": 2, "max": 8},
        },
        {"name": "embed-mig", **serve, "labels": {"mig": "yes"}, "replicas": {"min": 3, "max": 6}},
        {"name": "rerank", **serve, "replicas": {"min": 2, "max": 4}},
        {
            "name": "eval-mig",
            "kind": "batch",
            "image": "ghcr.io/acme/eval:1",
            "gpus": 2,
            "cpus": 8,
            "memory": "64GiB",
            "duration": "2h",
            "team": "research",
            "labels": {"mig": "yes"},
            "command": ["python", "eval.py"],
        },
        {
            "name": "etl",
            "kind": "batch",
            "image": "ghcr.io/acme/etl:3",
            "cpus": 12,
            "memory": "48GiB",
            "duration": "1h",
            "team": "data",
            "command": "run-etl --all",
        },
    ]
    return out


def test_operators_kserve_queues_and_mig(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", operator_workloads(), OPERATORS_POLICY, OPERATORS_INVENTORY)
    plan = plan_of(root)
    assert not plan.unplaced and not plan.unrouted and not plan.denied
    by_name = {p.workload.name: p for p in plan.placements}
    assert len(by_name) == len(operator_workloads())
    kinds = check_plan(plan, tmp_path / "out")
    assert kinds == {
        "apps/Deployment": 2,
        "autoscaling/HorizontalPodAutoscaler": 1,
        "v1/Service": 3,
        "policy/PodDisruptionBudget": 2,
        "serving.kserve.io/InferenceService": 1,
        "batch/Job": 3,
        "jobset.x-k8s.io/JobSet": 1,
        "kubeflow.org/PyTorchJob": 2,
        "batch.volcano.sh/Job": 1,
    }
    # The MIG placements ask for slices of their profile, on the pool that has them.
    assert by_name["embed-mig"].resources.mig == "1g.10gb"
    assert by_name["eval-mig"].resources.mig == "3g.40gb"
    assert by_name["eval-mig"].target.id == "gke-train/a100-mig"
    # Every operator got its two nodes of 8 GPUs.
    for op in ("job", "jobset", "pytorchjob", "volcano"):
        r = by_name[f"train-{op}"].resources
        assert (r.nodes, r.gpus_per_node) == (2, 8)
    # A pool without labels or taints gets no node selector and no tolerations.
    assert by_name["etl"].target.id == "eks-batch/plain"
    assert {p.cluster for p in plan.placements} == {"gke-train", "eks-batch"}


def test_queue_and_priority_class_reach_the_right_fields(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", operator_workloads(), OPERATORS_POLICY, OPERATORS_INVENTORY)
    plan = plan_of(root)
    write_out(plan, tmp_path / "out")
    artifacts = {p.workload.name: p.artifacts[0] for p in plan.placements}

    def top(name: str) -> dict[str, Any]:
        docs = [
            d
            for d in yaml.safe_load_all((tmp_path / "out" / artifacts[name]).read_text())
            if d and d["kind"] != "Service"
        ]
        first: dict[str, Any] = docs[0]
        return first

    queue = "kueue.x-k8s.io/queue-name"
    job_ = top("train-job")
    assert job_["metadata"]["labels"][queue] == "team-a" and job_["spec"]["suspend"] is True
    assert job_["spec"]["template"]["spec"]["priorityClassName"] == "train-normal"
    jobset = top("train-jobset")
    assert jobset["metadata"]["labels"][queue] == "team-b"
    inner = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert inner["priorityClassName"] == "train-high"
    assert top("train-pytorchjob")["metadata"]["labels"][queue] == "research"
    volcano = top("train-volcano")
    assert volcano["spec"]["queue"] == "gang" and queue not in volcano["metadata"]["labels"]
    assert volcano["spec"]["priorityClassName"] == "batch-low"
    assert top("eval-mig")["metadata"]["labels"][queue] == "notebooks"


# ---------------------------------------------------------------- MIG capacity is in slices

MIG_INVENTORY: dict[str, Any] = {
    "clusters": [
        {
            "name": "k8s",
            "backend": "kubernetes",
            "node_pools": [
                {
                    "name": "a100-mig",
                    "nodes": 2,
                    "gpus_per_node": 2,
                    "gpu_type": "a100",
                    "cpus_per_node": 64,
                    "memory_per_node": "512GiB",  # one GPU whole, one in 7 slices
                    "mig": [{"gpus": 1, "slices": {"1g.10gb": 7}}],
                    "labels": {"pool": "a100-mig"},
                    "taints": [TAINT],
                },
            ],
        },
    ]
}
MIG_POLICY = 'policy mig\nrule slices: route kubernetes with mig = "1g.10gb"\n'


def mig_services(count: int, replicas: int) -> list[dict[str, Any]]:
    return [
        {
            "name": f"tiny-{i:02d}",
            "kind": "inference",
            "image": "ghcr.io/acme/tiny:1",
            "gpus": 1,
            "cpus": 2,
            "memory": "8GiB",
            "replicas": {"min": replicas, "max": replicas},
        }
        for i in range(count)
    ]


@pytest.mark.parametrize(
    ("count", "replicas", "placed"),
    [
        (14, 1, 14),  # 2 nodes × 7 slices: all fit, although the pool has only 2 whole GPUs
        (16, 1, 14),  # two more slices than the pool has: two stay unplaced
        (5, 3, 4),  # 4 × 3 = 12 slices of 14; a fifth would need 15
    ],
)
def test_mig_capacity_is_counted_in_slices(
    tmp_path: Path, count: int, replicas: int, placed: int
) -> None:
    root = make_project(tmp_path / "p", mig_services(count, replicas), MIG_POLICY, MIG_INVENTORY)
    plan = plan_of(root)
    assert len(plan.placements) == placed
    assert len(plan.unplaced) == count - placed
    for u in plan.unplaced:
        assert any("mig-1g.10gb" in reason for reason in u.reasons), u.reasons
    slices = sum(p.resources.gpus for p in plan.placements)
    assert slices <= 14
    # The independent checker counts slices the same way: the plan is sound.
    inputs = plan.inputs
    assert verify_plan(inputs.policy, inputs.inventory, inputs.workloads, plan.placements) == []
    check_plan(plan, tmp_path / "out")


def test_whole_gpus_and_slices_are_separate_resources(tmp_path: Path) -> None:
    """The kubelet counts nvidia.com/gpu and nvidia.com/mig-* apart: filling every slice
    leaves the whole GPU free, and the other way round."""
    policy = (
        'policy mix\nrule slices: when labels.mig == "yes" '
        'route kubernetes with mig = "1g.10gb"\nrule whole: route kubernetes\n'
    )
    work = mig_services(14, 1)
    for w in work:
        w["labels"] = {"mig": "yes"}
    work.append(job("whole-gpu", gpus=1, cpus=8, memory="32GiB", duration="1h"))
    root = make_project(tmp_path / "p", work, policy, MIG_INVENTORY)
    plan = plan_of(root)
    assert not plan.unplaced
    whole = next(p for p in plan.placements if p.workload.name == "whole-gpu")
    assert whole.resources.mig is None and whole.resources.gpus_per_node == 1
    check_plan(plan, tmp_path / "out")
