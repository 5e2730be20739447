"""Running work from `squeue --json` and `kubectl get pods -o json` (router/importers/running.py,
`router inventory running`), on the real outputs in data/ (see data/README.md)."""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from router.cli.main import cli
from router.errors import LoadError
from router.importers.running import (
    expand_hostlist,
    pod_requests,
    render_running,
    running_from_pods,
    running_from_squeue,
)
from router.models import Inventory, Running, load_running
from router.models.capacity import node_classes
from tests.helpers import platform, slurm, target

DATA = Path(__file__).parent / "data"


def load(name: str) -> Any:
    return json.loads((DATA / name).read_text())


def items(text: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = yaml.safe_load(text)["running"]
    return out


def test_slurm_22_05_jobs_sharing_a_node() -> None:
    text = render_running(
        running_from_squeue(load("squeue-22.05-shared.json"), source="squeue-22.05-shared.json")
    )
    assert items(text) == [
        {
            "cluster": "routertest",
            "node": "gpu-h100-n1",
            "gpus": 3,
            "cpus": 8,
            "memory": "16GiB",
            "job": "1",
        },
        {
            "cluster": "routertest",
            "node": "gpu-h100-n1",
            "cpus": 70,
            "memory": "150GiB",
            "job": "2",
        },
    ]
    assert text.startswith(
        "# Running work from squeue-22.05-shared.json (Slurm 22.05.8).\n"
        "# 2 job nodes of running jobs; 2 jobs not running left out.\n"
    )
    Running.model_validate(yaml.safe_load(text))


def test_slurm_22_05_exclusive_job_is_whole() -> None:
    imported = running_from_squeue(load("squeue-22.05-exclusive.json"), cluster="hpc")
    assert imported.items == [{"cluster": "hpc", "node": "gpu-h100-n1", "whole": True, "job": "1"}]


def test_slurm_21_08_indexed_allocation() -> None:
    imported = running_from_squeue(load("squeue-rivos.json"))
    assert imported.items == [
        {"cluster": "rivos", "node": "cs75", "cpus": 1, "memory": "64000MiB", "job": "26515966"}
    ]
    assert "(Slurm 21.08.5)" in imported.source[0]


def to_24_05(data: dict[str, Any]) -> dict[str, Any]:
    """The 22.05 output rewritten into the 24.05 layout (data_parser v0.0.41): job_state a
    list, numbers as {set, infinite, number}, job_resources.nodes.allocation. No public
    24.05 squeue output with GPUs was found; see data/README.md."""
    out = copy.deepcopy(data)
    out["meta"] = {"slurm": {"release": "24.05.3", "cluster": "routertest"}}
    for job in out["jobs"]:
        job["job_state"] = [job["job_state"]]
        job["cpus"] = {"set": True, "infinite": False, "number": job["cpus"]}
        job.pop("cluster")
        res = job.get("job_resources")
        if res:
            job["job_resources"] = {
                "nodes": {
                    "count": 1,
                    "list": res["nodes"],
                    "allocation": [
                        {
                            "index": 0,
                            "name": a["nodename"],
                            "cpus": {"count": res["allocated_cores"], "used": 0},
                            "memory": {"used": 0, "allocated": a["memory_allocated"]},
                        }
                        for a in res["allocated_nodes"]
                    ],
                }
            }
    return out


def test_slurm_24_05_layout() -> None:
    data = load("squeue-22.05-shared.json")
    assert running_from_squeue(to_24_05(data)).items == running_from_squeue(data).items


def test_array_and_mig_gres() -> None:
    data = load("squeue-22.05-shared.json")
    job = data["jobs"][0]
    assert job["job_state"] == "RUNNING"
    job["array_job_id"], job["array_task_id"] = 40, 3
    job["gres_detail"] = ["gpu:a100:1(IDX:0),gpu:a100_1g.10gb:2(IDX:1-2)"]
    (first, _) = running_from_squeue(data, cluster="hpc").items
    assert first == {
        "cluster": "hpc",
        "node": "gpu-h100-n1",
        "gpus": 1,
        "mig": {"1g.10gb": 2},
        "cpus": 8,
        "memory": "16GiB",
        "job": "40_3",
    }


def test_hostlists() -> None:
    assert expand_hostlist("gpu-[008-010,012],cpu1") == [
        "gpu-008",
        "gpu-009",
        "gpu-010",
        "gpu-012",
        "cpu1",
    ]
    with pytest.raises(ValueError, match="not a Slurm hostlist"):
        expand_hostlist("gpu-[a-b]")


def test_squeue_errors_say_what_was_expected() -> None:
    with pytest.raises(
        LoadError,
        match=r"x.json: expected `squeue --json` output, a JSON "
        r'object with a "jobs" list',
    ):
        running_from_squeue({"nodes": []}, source="x.json")
    data = load("squeue-22.05-shared.json")
    del data["jobs"][0]["job_resources"]
    with pytest.raises(
        LoadError,
        match=r"x.json: jobs\[0\] \(job 1\): a running job without "
        "job_resources",
    ):
        running_from_squeue(data, source="x.json")


def test_kubernetes_minikube_pod_list() -> None:
    imported = running_from_pods(load("pods-minikube.json"), cluster="k8s")
    assert imported.items == [
        {
            "cluster": "k8s",
            "node": "minikube",
            "cpus": 0,
            "memory": "0MiB",
            "job": "default/queue-l4dv8",
        }
    ]


def gpu_pod(name: str, node: str, **resources: Any) -> dict[str, Any]:
    """The real minikube pod, renamed and given requests (the fixture's pod asks nothing)."""
    pod: dict[str, Any] = copy.deepcopy(load("pods-minikube.json")["items"][0])
    pod["metadata"]["name"] = name
    pod["spec"]["nodeName"] = node
    pod["spec"]["containers"][0]["resources"] = resources
    return pod


def test_pod_requests_follow_the_scheduler() -> None:
    pod = gpu_pod(
        "p",
        "n",
        requests={"cpu": "500m", "memory": "1Gi"},
        limits={"nvidia.com/gpu": "2", "memory": "2Gi"},
    )
    pod["spec"]["initContainers"] = [
        {"name": "warm", "resources": {"requests": {"cpu": "4", "memory": "512Mi"}}},
        {
            "name": "proxy",
            "restartPolicy": "Always",
            "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}},
        },
    ]
    pod["spec"]["overhead"] = {"cpu": "100m"}
    req = pod_requests(pod, "p")
    # cpu: max(0.5 + 0.25 sidecar, 4 init) + 0.1 overhead; memory: the request, not the limit
    assert (req["cpu"], req["memory"], req["nvidia.com/gpu"]) == (
        Decimal("4.1"),
        Decimal(1024**3 + 256 * 1024**2),
        Decimal(2),
    )


def test_pods_round_up_per_node_and_skip_ended() -> None:
    data = load("pods-minikube.json")
    data["items"] = [
        gpu_pod(f"d{k}", "n1", requests={"cpu": "100m", "memory": "100Mi"}) for k in range(10)
    ]
    data["items"].append(
        gpu_pod(
            "llm",
            "n2",
            requests={"cpu": "8", "memory": "32Gi"},
            limits={"nvidia.com/mig-1g.10gb": "2"},
        )
    )
    done = gpu_pod("done", "n2", requests={"cpu": "8"})
    done["status"]["phase"] = "Succeeded"
    pending = gpu_pod("pending", "n2", requests={"cpu": "8"})
    del pending["spec"]["nodeName"]
    data["items"] += [done, pending]
    got = running_from_pods(data, cluster="k8s")
    on_n1 = [i for i in got.items if i["node"] == "n1"]
    assert sum(i["cpus"] for i in on_n1) == 1  # ten 100m pods: one CPU, not ten
    assert [i["memory"] for i in on_n1][:2] == ["100MiB", "100MiB"]
    assert [i for i in got.items if i["node"] == "n2"] == [
        {
            "cluster": "k8s",
            "node": "n2",
            "mig": {"1g.10gb": 2},
            "cpus": 8,
            "memory": "32GiB",
            "job": "default/llm",
        }
    ]
    assert "2 pods unscheduled or ended left out" in got.source[1]


def test_bad_quantity_names_the_pod() -> None:
    data = load("pods-minikube.json")
    data["items"] = [gpu_pod("p", "n", requests={"cpu": "lots"})]
    with pytest.raises(
        LoadError,
        match=r"pods.json: items\[0\] \(default/p\): cpu: 'lots' is "
        r"not a Kubernetes quantity; expected a quantity",
    ):
        running_from_pods(data, source="pods.json")


INVENTORY: dict[str, Any] = platform(
    slurm(target("gpu", 2, 8, 96, "2TiB", node_names=["gpu-h100-n1", "gpu-h100-n2"]))
)
SHARED = str(DATA / "squeue-22.05-shared.json")


def running_cli(*args: str, env: dict[str, str] | None = None) -> Result:
    """`router inventory running slurm ARGS` through click's runner."""
    return CliRunner().invoke(cli, ["inventory", "running", "slurm", *args], env=env)


def test_cli_writes_running_yaml_that_plans_read(tmp_path: Path) -> None:
    inv = tmp_path / "inventory.yaml"
    inv.write_text(yaml.safe_dump(INVENTORY))
    out = tmp_path / "running.yaml"
    r = running_cli("--cluster", "hpc", "--from", SHARED, "-i", str(inv), "-o", str(out))
    assert r.exit_code == 0, r.output
    assert r.output == f"Wrote {out}: 2 items on 1 nodes\n"
    running = load_running(out)
    inventory = Inventory.model_validate(INVENTORY)
    (busy,) = [c for c in node_classes(inventory, running)["hpc/gpu"] if not c.idle]
    assert (busy.indices, busy.free.gpus, busy.free.cpus, busy.free.memory) == (
        (0,),
        5,
        18,
        2 * 1024 * 1024 - 166 * 1024,
    )


def test_cli_leaves_out_unknown_nodes_with_a_warning(tmp_path: Path) -> None:
    inv = tmp_path / "inventory.yaml"
    inv.write_text(yaml.safe_dump(INVENTORY))
    r = running_cli("--cluster", "routertest", "--from", SHARED, "-i", str(inv))
    assert r.exit_code == 0, r.output
    assert "running: []" in r.output
    assert (
        "warning: 2 items on 1 nodes left out: cluster routertest is not in inventory.yaml"
        " (use --cluster NAME): routertest/gpu-h100-n1"
    ) in r.output
    # Without --cluster, the work is on the inventory's one Slurm cluster (hpc), not on the
    # ClusterName squeue reports.
    r = running_cli("--from", SHARED, "-i", str(inv))
    assert r.exit_code == 0, r.output
    items = yaml.safe_load(r.output)["running"]
    assert [(i["cluster"], i["node"]) for i in items] == [("hpc", "gpu-h100-n1")] * 2


def test_cli_errors_exit_1_with_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "pods.json"
    bad.write_text('{"items": [')
    r = CliRunner().invoke(cli, ["inventory", "running", "kubernetes", "--from", str(bad)])
    assert r.exit_code == 1
    assert f"{bad}:1" in r.output and "not JSON" in r.output and "Traceback" not in r.output


def test_cli_notes_work_larger_than_the_inventory_node(tmp_path: Path) -> None:
    small = copy.deepcopy(INVENTORY)
    small["clusters"][0]["partitions"][0]["cpus_per_node"] = 64  # the jobs hold 78 CPUs
    inv = tmp_path / "inventory.yaml"
    inv.write_text(yaml.safe_dump(small))
    r = running_cli("--cluster", "hpc", "--from", SHARED, "-i", str(inv))
    # Full on CPUs, not an error (tests/importers/test_oversubscribe.py): said on stderr and
    # in the YAML, for whoever reads the file next.
    assert r.exit_code == 0, r.output
    note = (
        "hpc/gpu node gpu-h100-n1 is counted full on CPUs: its running work (1, 2) holds 78 of"
        " its 64 CPUs, more than the inventory says it has (is the inventory up to date?)"
    )
    assert f"warning: {note}" in r.stderr and f"# note: {note}" in r.stdout
