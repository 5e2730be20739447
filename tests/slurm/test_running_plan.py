"""Live, end to end on the real slurmctld: import the inventory, let a real job hold most of a
node's CPUs, import what runs, plan around it, and let Slurm confirm the plan.

`router inventory import slurm` (live) names the node set's nodes; `router inventory running
slurm -i` (live `squeue --json`) maps the job onto that node set and node index; `router plan
--running` then places a small job beside it on that node (plan.json says so, by index and
name) and leaves out one that would fit an empty node but not what the job left. The planned
script, submitted for real, starts at once on that node; the one the plan left out waits for
resources.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from router.cli.main import cli
from tests.helpers import make_project

from .conftest import ClusterFactory
from .harness import PartitionSpec, SlurmCluster

pytestmark = pytest.mark.slurm

LAYOUT = [
    PartitionSpec("gpu-h100", 2, 8, "h100", 96, 512 * 1024, 72 * 60, ["ib"]),
    PartitionSpec("cpu", 1, 0, None, 64, 64 * 1024, 24 * 60, default=True),
]
POLICY = 'rule jobs: route slurm where name == "gpu-h100"\n'


def batch(name: str, cpus: int) -> dict[str, Any]:
    return {"name": name, "kind": "batch", "cpus": cpus, "memory": "8GiB",
            "duration": "10min", "command": ["sleep", "120"]}  # fmt: skip


def _wait(cluster: SlurmCluster, job: int, state: str) -> dict[str, str]:
    deadline = time.monotonic() + 30
    while (shown := cluster.show_job(job))["JobState"] != state:
        assert time.monotonic() < deadline, cluster.show_job_raw(job)
        time.sleep(0.3)
    return shown


def _cli(args: list[str], env: dict[str, str]) -> str:
    r = CliRunner().invoke(cli, args, env=env)
    assert r.exit_code in (0, 3), r.output  # 3: the plan leaves a workload out, by design
    return r.output


def test_plan_packs_around_a_live_job_on_its_node(
    slurm_cluster_factory: ClusterFactory, tmp_path: Path
) -> None:
    c = slurm_cluster_factory(LAYOUT, "gpu-h100")
    inv_path = tmp_path / "inventory.yaml"
    _cli(["inventory", "import", "slurm", "-o", str(inv_path)], c.env)
    inv = yaml.safe_load(inv_path.read_text())
    (node_set,) = inv["clusters"][0]["node_sets"]
    assert (node_set["nodes"], node_set["node_names"]) == (1, c.run_node)  # gpu-h100-n1

    script = tmp_path / "hold.sh"
    script.write_text("#!/bin/bash\nsleep 300\n")
    holder = c.sbatch(script, hold=False, extra_args=["-p", "gpu-h100", "-c", "80", "--mem=64G"])
    started: list[int] = [holder]
    try:
        _wait(c, holder, "RUNNING")
        running = tmp_path / "running.yaml"
        _cli(["inventory", "running", "slurm", "-i", str(inv_path), "-o", str(running)], c.env)
        (item,) = yaml.safe_load(running.read_text())["running"]
        assert item == {"cluster": "routertest", "node": c.run_node, "cpus": 80,
                        "memory": "64GiB", "job": str(holder)}  # fmt: skip

        root = make_project(tmp_path / "p", [batch("beside", 16), batch("too-big", 32)], POLICY,
                            inventory=inv)  # fmt: skip
        out = tmp_path / "out"
        _cli(["plan", str(root), "--running", str(running), "-o", str(out), "-q"], c.env)
        plan = json.loads((out / "plan.json").read_text())
        (placed,) = plan["placements"]
        sid = f"routertest/{node_set['name']}"
        assert placed["workload"] == "beside"
        assert placed["nodes"] == [{"node": 0, "node_set": sid, "name": c.run_node}]
        assert [u["workload"] for u in plan["unplaced"]] == ["too-big"]
        # Without the running job both fit the node (16 + 32 of 96 CPUs): the job made the cut.
        _cli(["plan", str(root), "-o", str(tmp_path / "idle"), "-q"], c.env)
        idle = json.loads((tmp_path / "idle" / "plan.json").read_text())
        assert sorted(p["workload"] for p in idle["placements"]) == ["beside", "too-big"]

        # Slurm agrees: the planned script starts at once on that node, beside the job; the
        # one the plan left out (32 CPUs, 16 free) waits for resources.
        beside = c.sbatch(out / placed["artifacts"][0].removeprefix("out/"), hold=False)
        started.append(beside)
        assert _wait(c, beside, "RUNNING")["NodeList"] == c.run_node
        waiting = c.sbatch(script, hold=False, extra_args=["-p", "gpu-h100", "-c", "32"])
        started.append(waiting)
        time.sleep(2)  # two scheduling passes (sched_interval=1)
        shown = c.show_job(waiting)
        assert (shown["JobState"], shown["Reason"]) == ("PENDING", "Resources")
    finally:
        c.run(["scancel", *map(str, started)], check=False)
