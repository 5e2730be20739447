"""`router inventory import slurm` against our live Slurm 22.05 cluster, through the CLI.

Live mode asks `sinfo --version`, then runs `sinfo --json` and `scontrol show partition -o`
(22.05 has no `scontrol --json`). The saved outputs of real clusters, every layout, are tested
in tests/importers. Here: the live import equals the import of the same moment's saved
output, leaves out the nodes Slurm has down, and the scripts router writes for the imported
targets are accepted by the real slurmctld with the real partition name and the sub-target's
constraint (read back with `scontrol show job`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from router.cli.main import cli
from router.config import load_project
from router.emit.slurm import render
from router.importers import render_inventory
from router.importers.slurm import import_slurm, read_nodes, read_partitions
from router.models import Inventory, Partition
from router.plan.build import build_plan
from tests.helpers import job, make_project

from .conftest import ClusterFactory
from .harness import PartitionSpec, SlurmCluster

LAYOUT = [
    PartitionSpec("gpu-h100", 2, 8, "h100", 96, 512 * 1024, 72 * 60, ["ib", "lustre"]),
    PartitionSpec("gpu-a100", 1, 8, "a100", 64, 256 * 1024, 48 * 60, ["ib"]),
    PartitionSpec("cpu", 1, 0, None, 64, 64 * 1024, 24 * 60, default=True),
]
MIXED = [
    "scontrol",
    "create",
    "PartitionName=MixedGPU",
    "Nodes=gpu-h100-n[1-2],gpu-a100-n1",
    "MaxTime=UNLIMITED",
    "AllowAccounts=ALL",
]


@pytest.fixture
def live(
    slurm_cluster_factory: ClusterFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> tuple[SlurmCluster, Path, str]:
    """The live cluster with a mixed, CamelCase partition; the CLI's import of it."""
    cluster = slurm_cluster_factory(LAYOUT, "gpu-h100")
    cluster.run(MIXED)
    for key, value in cluster.env.items():
        monkeypatch.setenv(key, value)
    out = tmp_path / "inventory.yaml"
    result = CliRunner().invoke(cli, ["inventory", "import", "slurm", "-o", str(out)])
    assert result.exit_code == 0, result.output
    return cluster, out, result.output


@pytest.mark.slurm
def test_live_import_counts_usable_nodes_once(live: tuple[SlurmCluster, Path, str]) -> None:
    _, out, printed = live
    text = out.read_text()
    assert "from `sinfo --json` and `scontrol show partition -o` (Slurm 22.05" in text
    inv = Inventory.model_validate(yaml.safe_load(text))
    assert inv.clusters[0].name == "routertest"  # ClusterName from scontrol show config
    (only,) = inv.node_sets()  # gpu-h100-n1 runs the one slurmd; the others are DOWN
    assert (only.spec.nodes, only.spec.node_names) == (1, ["gpu-h100-n1"])
    parts = {r.target.name: r.target for r in inv.targets() if isinstance(r.target, Partition)}
    assert sorted(parts) == ["gpu-h100", "mixed-gpu"]
    mixed = parts["mixed-gpu"]
    # MixedGPU also holds an a100 node (down now): the constraint keeps h100 jobs on h100s
    assert (mixed.slurm_name, mixed.constraint, mixed.max_time) == ("MixedGPU", "lustre", 10**9)
    assert parts["gpu-h100"].constraint is None and parts["gpu-h100"].max_time == 72 * 3600
    for node in ("gpu-h100-n2", "gpu-a100-n1", "cpu-n1"):
        assert f"{node}: down (reason: absent), left out" in printed
    assert "1 usable nodes, each counted once" in printed
    assert "partition gpu-a100: no usable node" in text


@pytest.mark.slurm
def test_live_import_equals_import_of_its_saved_output(
    live: tuple[SlurmCluster, Path, str],
) -> None:
    cluster, out, _ = live
    nodes = read_nodes(cluster.run(["sinfo", "--json"]).stdout, "sinfo.json")
    partitions = read_partitions(
        cluster.run(["scontrol", "show", "partition", "-o"]).stdout, "partitions.txt"
    )
    saved = render_inventory(import_slurm(nodes, partitions, cluster="routertest"))
    body = [line for line in out.read_text().splitlines() if not line.startswith("# ")]
    assert body == [line for line in saved.splitlines() if not line.startswith("# ")]


@pytest.mark.slurm
def test_scripts_for_imported_targets_land_on_the_real_partition(
    live: tuple[SlurmCluster, Path, str], tmp_path: Path
) -> None:
    cluster, out, _ = live
    policy = """
    rule mixed: when labels.to == "mixed" route slurm where name == "mixed-gpu"
    rule rest: route slurm where name == "gpu-h100"
    """
    workloads = [
        job(
            "to-mixed",
            gpus=8,
            gpu_type="h100",
            cpus=32,
            memory="64GiB",
            labels={"to": "mixed"},
            duration="4d",
        ),
        job("to-h100", gpus=8, gpu_type="h100", cpus=32, memory="64GiB"),
    ]
    # Both partitions draw on the one usable node (8 GPUs): one 8-GPU job at a time fits it,
    # so each is planned on its own (together, the plan rightly places one).
    seen = {}
    for w in workloads:
        root = make_project(
            tmp_path / w["name"], [w], policy=policy, inventory=yaml.safe_load(out.read_text())
        )
        plan = build_plan(load_project(root))
        assert not plan.unplaced and not plan.unrouted
        (p,) = plan.placements
        assert p.nodes == [(p.target.node_sets[0], 0)]  # the one node, gpu-h100-n1
        script = tmp_path / f"{p.workload.name}.sbatch"
        script.write_text(render(p))
        seen[p.workload.name] = cluster.show_job(cluster.sbatch(script))
    together = make_project(
        tmp_path / "both", workloads, policy=policy, inventory=yaml.safe_load(out.read_text())
    )
    assert len(build_plan(load_project(together)).placements) == 1
    assert seen["to-mixed"]["Partition"] == "MixedGPU"
    assert seen["to-mixed"]["Features"] == "lustre"
    assert seen["to-mixed"]["TresPerNode"] == "gres:gpu:h100:8"
    assert seen["to-h100"]["Partition"] == "gpu-h100"
    assert seen["to-h100"]["Features"] == "(null)"
