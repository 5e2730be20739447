"""OverSubscribe against the real slurmctld 22.05, and router's shape check beside it.

Seen here (one 8-CPU node, partitions over it): OverSubscribe=EXCLUSIVE runs one 1-CPU job at
a time (the second waits: Resources), so router counts every job there as whole nodes;
OverSubscribe=FORCE:2 runs two `--exclusive` jobs on the node together (and two 8-CPU jobs on
its 8 CPUs), so `exclusive` is not honoured there and router refuses a rule's `exclusive`;
OverSubscribe=YES:2 shares only jobs that ask (`--oversubscribe`, which router never writes).
Two jobs sharing the CPUs hold more than the node has: router counts it full on CPUs, as
slurmctld does for a job of an unshared partition.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from router.cli.main import cli
from router.config import load_project
from router.emit.slurm import render
from router.plan.build import build_plan
from tests.helpers import make_project

from .conftest import ClusterFactory
from .harness import PartitionSpec, SlurmCluster

pytestmark = pytest.mark.slurm

LAYOUT = [PartitionSpec("cpu", 1, 0, None, 8, 16 * 1024, 60, default=True)]
CREATE = [
    ["scontrol", "create", "PartitionName=excl", "Nodes=cpu-n1", "OverSubscribe=EXCLUSIVE"],
    ["scontrol", "create", "PartitionName=force", "Nodes=cpu-n1", "OverSubscribe=FORCE:2"],
]


def small(name: str) -> dict[str, Any]:
    return {"name": name, "kind": "batch", "cpus": 1, "memory": "1GiB", "duration": "10min",
            "command": ["sleep", "60"]}  # fmt: skip


def states(c: SlurmCluster, ids: list[int]) -> list[tuple[str, str]]:
    """The jobs' (state, reason) once the first runs and two more scheduling passes went by
    (the first job after a start waits ~3 s for the first pass)."""
    deadline = time.monotonic() + 30
    while c.job_state(ids[0]) != "RUNNING":
        assert time.monotonic() < deadline, c.show_job_raw(ids[0])
        time.sleep(0.3)
    time.sleep(2.5)  # sched_interval=1
    return [(c.show_job(j)["JobState"], c.show_job(j)["Reason"]) for j in ids]


def test_exclusive_and_force_as_slurm_runs_them(
    slurm_cluster_factory: ClusterFactory, tmp_path: Path
) -> None:
    c = slurm_cluster_factory(LAYOUT, "cpu")
    for args in CREATE:
        c.run(args)
    inv_path = tmp_path / "inventory.yaml"
    r = CliRunner().invoke(cli, ["inventory", "import", "slurm", "-o", str(inv_path)], env=c.env)
    assert r.exit_code == 0, r.output
    inv = yaml.safe_load(inv_path.read_text())
    modes = {p["name"]: p.get("oversubscribe") for p in inv["clusters"][0]["partitions"]}
    assert modes == {"cpu": None, "excl": "exclusive", "force": "force:2"}
    ids: list[int] = []
    try:
        # EXCLUSIVE: two plain 1-CPU jobs (no --exclusive) on the 8-CPU node: Slurm runs one
        # and holds the other for resources. Router places one of two such workloads.
        plain = tmp_path / "plain.sh"
        plain.write_text("#!/bin/bash\nsleep 60\n")
        two = [c.sbatch(plain, hold=False, extra_args=["-p", "excl", "-c", "1", "--mem=1G"])
               for _ in range(2)]  # fmt: skip
        ids += two
        assert states(c, two) == [("RUNNING", "None"), ("PENDING", "Resources")]
        c.run(["scancel", *map(str, two)])
        policy = 'rule r: route slurm where name == "excl"\n'
        root = make_project(tmp_path / "x", [small("a"), small("b")], policy, inv)
        plan = build_plan(load_project(root))
        (p,) = plan.placements
        assert p.resources.whole_nodes == 1
        script = tmp_path / "a.sbatch"
        script.write_text(render(p))
        assert "#SBATCH --exclusive" in script.read_text()  # says what Slurm will do anyway
        job = c.sbatch(script, hold=False)
        ids.append(job)
        assert states(c, [job]) == [("RUNNING", "None")]
        c.run(["scancel", str(job)])

        # FORCE: two --exclusive jobs share the node, so router will not promise exclusive.
        both = [c.sbatch(plain, hold=False, extra_args=["-p", "force", "--exclusive"])
                for _ in range(2)]  # fmt: skip
        ids += both
        assert states(c, both) == [("RUNNING", "None")] * 2
        policy = 'rule r: route slurm exclusive where name == "force"\n'
        root = make_project(tmp_path / "f", [small("c")], policy, inv)
        plan = build_plan(load_project(root))
        assert plan.placements == []
        assert "OverSubscribe=FORCE" in str(plan.unplaced + plan.unrouted)
    finally:
        c.run(["scancel", *map(str, ids)], check=False)


def test_jobs_sharing_cpus_fill_the_node_in_the_plan_as_in_slurm(
    slurm_cluster_factory: ClusterFactory, tmp_path: Path
) -> None:
    """Two 8-CPU jobs of the FORCE:2 partition run on the node's 8 CPUs (16 CPUs of work on 8):
    `router inventory running -i` and `router plan --running` count the node full on CPUs and
    say why, and Slurm agrees: a 1-CPU job of the unshared partition waits for resources."""
    c = slurm_cluster_factory(LAYOUT, "cpu")
    for args in CREATE:
        c.run(args)
    inv_path, running = tmp_path / "inventory.yaml", tmp_path / "running.yaml"
    r = CliRunner().invoke(cli, ["inventory", "import", "slurm", "-o", str(inv_path)], env=c.env)
    assert r.exit_code == 0, r.output
    plain = tmp_path / "plain.sh"
    plain.write_text("#!/bin/bash\nsleep 60\n")
    ids: list[int] = []
    try:
        both = [c.sbatch(plain, hold=False, extra_args=["-p", "force", "-c", "8", "--mem=1G"])
                for _ in range(2)]  # fmt: skip
        ids += both
        assert states(c, both) == [("RUNNING", "None")] * 2
        args = ["inventory", "running", "slurm", "-i", str(inv_path), "-o", str(running)]
        r = CliRunner().invoke(cli, args, env=c.env)
        assert r.exit_code == 0, r.output
        note = (
            f"routertest/cpu8 node cpu-n1 is counted full on CPUs: its running work"
            f" ({both[0]}, {both[1]}) holds 16 of its 8 CPUs, shared by partition"
            " force (OverSubscribe=FORCE:2)"
        )
        assert f"warning: {note}" in r.stderr
        inv = yaml.safe_load(inv_path.read_text())
        root = make_project(tmp_path / "p", [small("after")],
                            'rule r: route slurm where name == "cpu"\n', inv)  # fmt: skip
        r = CliRunner().invoke(cli, ["plan", str(root), "-r", str(running), "--no-write"])
        assert r.exit_code == 3, r.output  # unplaced
        assert note in r.stdout
        waiting = c.sbatch(plain, hold=False, extra_args=["-p", "cpu", "-c", "1", "--mem=1G"])
        ids.append(waiting)
        time.sleep(2.5)  # two scheduling passes (sched_interval=1)
        assert (c.show_job(waiting)["JobState"], c.show_job(waiting)["Reason"]) == (
            "PENDING",
            "Resources",
        )
    finally:
        c.run(["scancel", *map(str, ids)], check=False)
