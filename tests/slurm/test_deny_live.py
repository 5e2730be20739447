"""DenyAccounts / DenyQos against the real slurmctld 22.05: what router's shape check refuses,
Slurm refuses at submit, and what it places there, Slurm accepts.

Facts seen here (no slurmdbd, as the harness runs): `--account=guest` on a partition with
DenyAccounts=guest,expired is rejected ("Requested partition configuration not available
now"); another account, or none, is accepted. Without accounting there is no QOS table, so
DenyQos is not enforced live (router still refuses a denied QOS: with slurmdbd, Slurm does).
A partition created with both AllowAccounts and DenyAccounts keeps only AllowAccounts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from router.cli.main import cli
from router.config import load_project
from router.emit.slurm import render
from router.plan.build import build_plan
from tests.helpers import make_project

from .conftest import ClusterFactory
from .harness import PartitionSpec, SlurmError

pytestmark = pytest.mark.slurm

LAYOUT = [PartitionSpec("cpu", 1, 0, None, 64, 256 * 1024, 24 * 60, default=True)]
SHARED = ["scontrol", "create", "PartitionName=shared", "Nodes=cpu-n1",
          "DenyAccounts=guest,expired", "DenyQos=low"]  # fmt: skip
POLICY = 'rule r: route slurm where name == "shared"\n'


def batch(name: str, account: str) -> dict[str, object]:
    return {"name": name, "kind": "batch", "cpus": 2, "memory": "2GiB", "duration": "10min",
            "command": ["true"], "account": account}  # fmt: skip


def test_router_refuses_what_slurm_denies(
    slurm_cluster_factory: ClusterFactory, tmp_path: Path
) -> None:
    c = slurm_cluster_factory(LAYOUT, "cpu")
    c.run(SHARED)
    inv_path = tmp_path / "inventory.yaml"
    r = CliRunner().invoke(cli, ["inventory", "import", "slurm", "-o", str(inv_path)], env=c.env)
    assert r.exit_code == 0, r.output
    inv = yaml.safe_load(inv_path.read_text())
    (shared,) = [p for p in inv["clusters"][0]["partitions"] if p["name"] == "shared"]
    assert (shared["deny_accounts"], shared["deny_qos"]) == (["expired", "guest"], ["low"])

    root = make_project(tmp_path / "p", [batch("ok", "physics"), batch("no", "guest")], POLICY,
                        inventory=inv)  # fmt: skip
    plan = build_plan(load_project(root))
    assert [p.workload.name for p in plan.placements] == ["ok"]
    (u,) = plan.unplaced + plan.unrouted
    assert "denies guest (DenyAccounts=expired,guest)" in str(u)

    # Slurm agrees: the planned script is accepted; the refused account is rejected.
    script = tmp_path / "ok.sbatch"
    script.write_text(render(plan.placements[0]))
    job = c.show_job(c.sbatch(script))
    assert (job["Partition"], job["Account"]) == ("shared", "physics")
    with pytest.raises(SlurmError, match="Requested partition configuration not available"):
        c.sbatch(script, extra_args=["--account=guest"])
    c.sbatch(script, extra_args=["--account=chemistry"])  # any other account: accepted
