"""The MPIJob Launcher pod is counted by the plan (router/emit/k8s/jobs.py mpijob,
models/placement.py Resources.mpi_launcher): each worker's node keeps room for it, the workers
request the rest, and it runs on the placement's pool. The kubeflow.org/v1 MPIJob CRD of
../shared/schemas/crds has no `runLauncherAsWorker` (mpi-operator's v2beta1 field): a test
below reads the schema to say so, so a newer CRD makes it fail and the choice be revisited."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from router.cli.main import cli
from router.config import load_project
from router.plan.build import build_plan
from tests.helpers import make_project
from tests.k8s.validate import validate_file

CRD = Path(__file__).resolve().parents[1] / "k8s" / "crds" / "kubeflow.org_mpijobs.yaml"

# One pool of two 8-CPU, 32 GiB nodes.
INVENTORY: dict[str, Any] = {
    "clusters": [
        {
            "name": "k8s",
            "backend": "kubernetes",
            "node_pools": [
                {"name": "cpu", "nodes": 2, "cpus_per_node": 8, "memory_per_node": "32GiB",
                 "labels": {"pool": "cpu"}},
            ],
        }
    ]
}  # fmt: skip
POLICY = 'rule mpi: route kubernetes with operator = "mpijob"\n'


def mpi(name: str, cpus: int, nodes: int = 1, memory: str = "8GiB") -> dict[str, Any]:
    return {"name": name, "kind": "batch", "image": "ghcr.io/acme/mpi:1", "nodes": nodes,
            "cpus": cpus, "memory": memory, "duration": "1h", "command": ["./solve"]}  # fmt: skip


def test_the_crd_has_no_run_launcher_as_worker() -> None:
    crd = yaml.safe_load(CRD.read_text())
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v1"]
    assert "runLauncherAsWorker" not in CRD.read_text()


def test_launchers_take_room_on_the_nodes(tmp_path: Path) -> None:
    # Four single-node MPIJobs of 4 CPUs: without their launchers two would share each 8-CPU
    # node; with a launcher (1 CPU) beside each worker only one fits a node.
    work = [mpi(f"m{i}", 4) for i in range(4)]
    root = make_project(tmp_path / "p", work, POLICY, INVENTORY)
    plan = build_plan(load_project(root))
    placed = sorted(p.workload.name for p in plan.placements)
    assert len(placed) == 2 and len(plan.unplaced) == 2
    for p in plan.placements:
        r = p.resources
        assert (r.cpus_per_node, r.memory_per_node, r.mpi_launcher) == (5, 9 * 1024, True)
    assert len({p.nodes[0] for p in plan.placements}) == 2  # one per node
    (reason,) = {r for u in plan.unplaced for r in u.reasons}
    assert "needs 5 CPUs free on one node; the most free on any of its 2 nodes is 3 CPUs" in reason
    # The same jobs as plain Jobs: all four fit.
    plain = make_project(tmp_path / "q", work, "rule j: route kubernetes\n", INVENTORY)
    assert len(build_plan(load_project(plain)).placements) == 4


def test_a_job_that_leaves_no_room_for_its_launcher_is_not_routed_there(tmp_path: Path) -> None:
    # Two nodes of 8 CPUs each: a worker may ask for 7, not 8, with its launcher beside it.
    root = make_project(tmp_path / "p", [mpi("all", 16, nodes=2), mpi("most", 14, nodes=2)],
                        POLICY, INVENTORY)  # fmt: skip
    plan = build_plan(load_project(root))
    assert [p.workload.name for p in plan.placements] == ["most"]
    (u,) = plan.unplaced  # no candidate: the shape check says why
    assert u.decision.workload.name == "all" and not u.decision.candidates
    text = " ".join(u.reasons)
    assert "8 CPUs per node < 9 asked per node with the MPIJob launcher's 1 beside a worker" in text


def test_manifests_request_what_the_plan_counts(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", [mpi("m", 6, nodes=2, memory="20GiB")], POLICY, INVENTORY)
    r = CliRunner().invoke(cli, ["plan", str(root)])
    assert r.exit_code == 0, r.output
    # The table shows what is deployed: two workers and one launcher.
    assert "2× 3 cpu, 10GiB excl + launcher 1 cpu, 1GiB" in r.output
    doc = json.loads((root / "out" / "plan.json").read_text())
    (p,) = doc["placements"]
    assert p["resources"]["mpi_launcher"] is True
    # Per node: room for the launcher on each worker's node (it may land on either) ...
    assert (p["resources"]["cpus_per_node"], p["resources"]["memory_per_node_mib"]) == (4, 11264)
    # ... in total: 2 × 3 CPUs + 1, 2 × 10 GiB + 1 GiB, one launcher, not two.
    assert (p["resources"]["cpus"], p["resources"]["memory_mib"]) == (7, 21504)
    (path,) = [root / "out" / a for a in p["artifacts"]]
    assert validate_file(path) == []  # kubernetes-validate --strict and the CRD schema
    (job,) = [d for d in yaml.safe_load_all(path.read_text()) if d]
    specs = job["spec"]["mpiReplicaSpecs"]
    worker = specs["Worker"]["template"]["spec"]
    launcher = specs["Launcher"]["template"]["spec"]
    assert worker["containers"][0]["resources"]["requests"] == {"cpu": "3", "memory": "10240Mi"}
    assert launcher["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1024Mi"}
    assert launcher["nodeSelector"] == worker["nodeSelector"] == {"pool": "cpu"}
    # The workers keep apart from each other, not from the launcher, which seeks them out.
    (anti,) = worker["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    (near,) = launcher["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert anti["labelSelector"] == near["podAffinityTerm"]["labelSelector"]
    assert anti["labelSelector"]["matchLabels"]["router.dev/mpi-role"] == "worker"
    assert specs["Launcher"]["template"]["metadata"]["labels"]["router.dev/mpi-role"] == "launcher"
