"""Slurm MIG GRES imported from real outputs (data/README.md): each slice profile keeps the GRES
type Slurm names it by, which the sbatch script must ask for verbatim.

- data/live-22.05-mig-*: our live 22.05 cluster, one A100 node with `Gres=gpu:a100:2,
  gpu:nvidia_a100_1g.10gb:14` (NVML's type names) and a job holding 3 slices.
- data/restd-nodes-23.11.1.json: a production 23.11 cluster whose gres.conf types the slices
  by the bare profile (`gpu:1g.10gb:21`): no gres_types, the profile is the type.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from router.cli.main import cli
from router.importers.slurm.nodes import gpus_of
from router.models import load_inventory
from router.models.capacity import node_classes
from router.models.running import Running
from tests.helpers import make_project
from tests.importers.test_slurm_fixtures import inventory, parts

DATA = Path(__file__).parent / "data"
PARTS = "live-22.05-mig-partitions.txt"


@pytest.mark.parametrize("nodes", ["live-22.05-mig-sinfo.json", "live-22.05-mig-nodes.txt"])
def test_live_mig_node_keeps_the_slice_gres_type(nodes: str) -> None:
    text, inv = inventory(nodes, PARTS)
    (p,) = parts(inv).values()
    assert (p.gpu_type, p.gpus_per_node, p.whole_gpus_per_node) == ("a100", 4, 2)
    assert p.slices_per_node == {"1g.10gb": 14}
    assert p.mig_gres_type("1g.10gb") == "nvidia_a100_1g.10gb"
    assert "gres_types: {1g.10gb: nvidia_a100_1g.10gb}" in text


def test_bare_profile_types_need_no_gres_types() -> None:
    text, inv = inventory("restd-nodes-23.11.1.json", "restd-partitions-23.11.1.json")
    p = parts(inv)["gpu-gpux3"]
    assert p.slices_per_node == {"1g.10gb": 21}
    assert p.mig_gres_type("1g.10gb") == "1g.10gb"
    assert "gres_types" not in text


def test_two_type_names_for_one_profile_are_noted() -> None:
    g = gpus_of("gpu:a100:1,gpu:a100_1g.10gb:7,gpu:nvidia_a100_1g.10gb:7")
    assert g.mig == ((2, (("1g.10gb", 7),)),)
    assert g.mig_types == (("1g.10gb", "a100_1g.10gb"),)
    assert any("two GRES types" in n for n in g.notes)


def test_imported_mig_partition_plans_slices_around_running_ones(tmp_path: Path) -> None:
    """Inventory and running work of one moment: 3 of the 14 slices are held, so 11 more fit on
    the one node and 12 do not; the script asks for Slurm's own type name."""
    inv_path, running = tmp_path / "inventory.yaml", tmp_path / "running.yaml"
    sinfo = str(DATA / "live-22.05-mig-sinfo.json")
    r = CliRunner().invoke(
        cli,
        [
            "inventory",
            "import",
            "slurm",
            "--from",
            sinfo,
            "--partitions-from",
            str(DATA / PARTS),
            "-o",
            str(inv_path),
        ],
    )
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(
        cli,
        [
            "inventory",
            "running",
            "slurm",
            "--from",
            str(DATA / "live-22.05-mig-squeue.json"),
            "-i",
            str(inv_path),
            "-o",
            str(running),
        ],
    )
    assert r.exit_code == 0, r.output
    inv = load_inventory(inv_path)
    (k,) = [
        k
        for ks in node_classes(
            inv, Running.model_validate(yaml.safe_load(running.read_text()))
        ).values()
        for k in ks
    ]
    assert dict(k.free.slices) == {"1g.10gb": 11} and k.free.gpus == 2
    policy = 'rule sliced: route slurm with mig = "1g.10gb"\n'
    for n, fits in ((11, True), (12, False)):
        work = {
            "name": f"s{n}",
            "kind": "batch",
            "gpus": n,
            "nodes": 1,
            "cpus": 2,
            "memory": "4GiB",
            "duration": "30min",
            "command": ["sleep", "1"],
        }
        root = make_project(
            tmp_path / f"p{n}", [work], policy, yaml.safe_load(inv_path.read_text())
        )
        r = CliRunner().invoke(cli, ["plan", str(root), "-r", str(running), "-q"])
        assert r.exit_code == (0 if fits else 3), r.output
    script = (tmp_path / "p11" / "out" / "slurm").rglob("s11.sbatch")
    assert "#SBATCH --gres=gpu:nvidia_a100_1g.10gb:11\n" in next(script).read_text()
