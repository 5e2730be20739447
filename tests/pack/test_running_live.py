"""`router inventory running slurm` against a real slurmctld: jobs really running on a node are
read back from the live `squeue --json` as the work a plan must pack around."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from router.models import Inventory, load_running
from router.models.capacity import node_classes
from tests.helpers import platform, slurm, target
from tests.pack.test_running_import import running_cli
from tests.slurm.harness import SlurmCluster

pytestmark = pytest.mark.slurm


def test_live_squeue_running_work(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    c = slurm_cluster
    script = tmp_path / "sleep.sh"
    script.write_text("#!/bin/bash\nsleep 300\n")
    node = c.run_node  # the one node with a slurmd
    part = next(p for p in c.partitions if node in p.node_names())
    gpu = f"--gres=gpu:{part.gpu_type}:3" if part.gpu_type else "--gres=gpu:3"
    ids = [
        c.sbatch(script, hold=False, extra_args=["-p", part.name, gpu, "-c", "8", "--mem=16G"]),
        c.sbatch(script, hold=False, extra_args=["-p", part.name, "-c", "20", "--mem=150G"]),
    ]
    try:
        deadline = time.monotonic() + 30
        while any(c.job_state(j) != "RUNNING" for j in ids):
            assert time.monotonic() < deadline, [c.show_job_raw(j) for j in ids]
            time.sleep(0.3)
        hardware = (part.nodes, part.gpus_per_node, part.cpus_per_node, part.memory_mb)
        names = part.node_names()
        partition = target("gpu", *hardware, gpu_type=part.router_gpu_type, node_names=names)
        inv = platform(slurm(partition))
        inv_path = tmp_path / "inventory.yaml"
        inv_path.write_text(yaml.safe_dump(inv))
        out = tmp_path / "running.yaml"
        r = running_cli("--cluster", "hpc", "-i", str(inv_path), "-o", str(out), env=c.env)
        assert r.exit_code == 0, r.output
        got = yaml.safe_load(out.read_text())["running"]
        assert got == [
            {
                "cluster": "hpc",
                "node": node,
                "gpus": 3,
                "cpus": 8,
                "memory": "16GiB",
                "job": str(ids[0]),
            },
            {"cluster": "hpc", "node": node, "cpus": 20, "memory": "150GiB", "job": str(ids[1])},
        ]
        classes = node_classes(Inventory.model_validate(inv), load_running(out))["hpc/gpu"]
        (busy,) = [k for k in classes if not k.idle]
        assert (busy.free.gpus, busy.free.cpus) == (part.gpus_per_node - 3, part.cpus_per_node - 28)
    finally:
        c.run(["scancel", *map(str, ids)], check=False)
