"""MIG slices on the real slurmctld 22.05: a node with typed MIG GRES (slurm.conf
`Gres=gpu:a100:2,gpu:nvidia_a100_1g.10gb:14`, gres.conf `Name=gpu Type=nvidia_a100_1g.10gb
File=...` with empty files as devices), imported by `router inventory import slurm`, planned
with `-> slurm with mig = "1g.10gb"`, and the emitted script submitted: Slurm reads it back as
`TresPerNode=gres:gpu:nvidia_a100_1g.10gb:N` and runs it on that node. Both sides agree on the
limit: 15 slices on a 14-slice node are refused by router and by slurmctld."""

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
from .harness import PartitionSpec, SlurmError

pytestmark = pytest.mark.slurm

SLICE = "nvidia_a100_1g.10gb"
LAYOUT = [
    PartitionSpec("mig", 1, 2, "a100", 16, 64 * 1024, 60, default=True, mig={SLICE: 14}),
]
POLICY = 'rule sliced: route slurm with mig = "1g.10gb"\n'


def sliced(name: str, slices: int) -> dict[str, Any]:
    return {"name": name, "kind": "batch", "gpus": slices, "nodes": 1, "cpus": 2,
            "memory": "2GiB", "duration": "10min", "command": ["sleep", "120"]}  # fmt: skip


def test_slice_jobs_as_slurm_runs_them(
    slurm_cluster_factory: ClusterFactory, tmp_path: Path
) -> None:
    c = slurm_cluster_factory(LAYOUT, "mig")
    inv_path = tmp_path / "inventory.yaml"
    r = CliRunner().invoke(cli, ["inventory", "import", "slurm", "-o", str(inv_path)], env=c.env)
    assert r.exit_code == 0, r.output
    inv = yaml.safe_load(inv_path.read_text())
    (node_set,) = inv["clusters"][0]["node_sets"]
    assert node_set["mig"] == [
        {"gpus": 2, "slices": {"1g.10gb": 7}, "gres_types": {"1g.10gb": SLICE}}
    ]

    # 3 + 11 slices fill the node's 14 together; one more slice is left unplaced.
    work = [sliced("three", 3), sliced("eleven", 11), sliced("one", 1)]
    root = make_project(tmp_path / "p", work, POLICY, inv)
    r = CliRunner().invoke(cli, ["plan", str(root), "-q"])
    assert r.exit_code == 3, r.output
    doc = json.loads((root / "out" / "plan.json").read_text())
    shown = {p["workload"]: (p["resources"]["mig"], p["resources"]["gpus_per_node"])
             for p in doc["placements"]}  # fmt: skip
    assert shown == {"three": ("1g.10gb", 3), "eleven": ("1g.10gb", 11)}
    assert [u["workload"] for u in doc["unplaced"]] == ["one"]
    scripts = {p.stem: p for p in (root / "out" / "slurm").rglob("*.sbatch")}
    ids: list[int] = []
    try:
        for name, n in (("three", 3), ("eleven", 11)):
            assert f"#SBATCH --gres=gpu:{SLICE}:{n}\n" in scripts[name].read_text()
            ids.append(c.sbatch(scripts[name], hold=False))
        # Slurm runs both side by side on the node, and a 1-slice job waits for resources.
        one = tmp_path / "one.sbatch"
        one.write_text(scripts["three"].read_text().replace(f":{SLICE}:3", f":{SLICE}:1"))
        ids.append(c.sbatch(one, hold=False))
        deadline = time.monotonic() + 30
        while not all(c.job_state(j) == "RUNNING" for j in ids[:2]):
            assert time.monotonic() < deadline, [c.show_job_raw(j) for j in ids]
            time.sleep(0.3)
        time.sleep(2.5)  # two more scheduling passes (sched_interval=1) for the third
        for job, n in zip(ids, (3, 11), strict=False):
            seen = c.show_job(job)
            assert (seen["TresPerNode"], seen["NodeList"]) == (f"gres:gpu:{SLICE}:{n}", "mig-n1")
        third = c.show_job(ids[2])
        assert (third["JobState"], third["Reason"]) == ("PENDING", "Resources")
        c.run(["scancel", *map(str, ids)])
        assert c.wait_job(ids[2]) in ("CANCELLED", "COMPLETED")

        # The srun step gets its 2 slices from Slurm (SLURM_GPUS_ON_NODE=2); the script sets no
        # CUDA_VISIBLE_DEVICES. (Slurm sets that from the device files; here they are empty
        # files, not devices, so it stays unset on this machine: not checked.)
        probe = sliced("probe", 2) | {"command": ["bash", "-c", "env | grep GPUS_ON_NODE"]}
        root = make_project(tmp_path / "r", [probe], POLICY, inv)
        r = CliRunner().invoke(cli, ["plan", str(root), "-q"])
        assert r.exit_code == 0, r.output
        (script,) = (root / "out" / "slurm").rglob("probe.sbatch")
        assert "CUDA_VISIBLE_DEVICES" not in script.read_text().replace("$CUDA_VISIBLE", "")
        job = c.sbatch(script, hold=False)
        ids.append(job)
        assert c.wait_job(job) == "COMPLETED", c.show_job_raw(job)
        out = (script.parent / f"probe-{job}.out").read_text()
        assert out.split() == ["SLURM_GPUS_ON_NODE=2"], out

        # 15 slices on one 14-slice node: router will not place it, and slurmctld refuses it.
        root = make_project(tmp_path / "q", [sliced("over", 15)], POLICY, inv)
        r = CliRunner().invoke(cli, ["plan", str(root), "-q"])
        assert r.exit_code == 3, r.output
        doc = json.loads((root / "out" / "plan.json").read_text())
        assert "14 GPUs per node < 15 asked per node" in json.dumps(doc["unplaced"])
        over = tmp_path / "over.sbatch"
        over.write_text(scripts["eleven"].read_text().replace(f":{SLICE}:11", f":{SLICE}:15"))
        with pytest.raises(SlurmError, match="Requested node configuration is not available"):
            ids.append(c.sbatch(over, hold=False))
        # and slices are not whole GPUs: 3 whole A100s are refused on a node of 2 whole
        whole = tmp_path / "whole.sbatch"
        whole.write_text(scripts["eleven"].read_text().replace(f"--gres=gpu:{SLICE}:11",
                                                            "--gres=gpu:a100:3"))  # fmt: skip
        with pytest.raises(SlurmError, match="Requested node configuration is not available"):
            ids.append(c.sbatch(whole, hold=False))
    finally:
        c.run(["scancel", *map(str, ids)], check=False)
