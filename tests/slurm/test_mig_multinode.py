"""A MIG-slice job on two real Slurm nodes (multinode.py with typed GRES): each node carries
`Gres=gpu:a100:1,gpu:nvidia_a100_1g.10gb:7` (one whole A100, one cut into 7 slices), imported
live by `router inventory import slurm`, planned with `-> slurm with mig = "1g.10gb"` as a
2-node torchrun job of 2 slices per node, and the emitted script submitted unchanged.

What Slurm 22.05 did with that script (`--nodes=2 --gres=gpu:nvidia_a100_1g.10gb:2
--exclusive`): `--gres` counts per node, so the step gets 2 slices on each node
(SLURM_GPUS_ON_NODE=2, two CUDA_VISIBLE_DEVICES indices); `--exclusive` gives the job every GPU
of both nodes (SLURM_JOB_GPUS lists all 8), as router counts a multi-node job's nodes whole.
8 slices per node are refused by both: router leaves the job unplaced, sbatch rejects it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from router.cli.main import cli
from router.emit.narrow import NARROW
from router.emit.slurm.shell import quote
from tests.helpers import make_project

from .conftest import require_multinode, require_tool
from .harness import SlurmError
from .multinode import MultiNodeCluster

pytestmark = pytest.mark.slurm

SLICE = "nvidia_a100_1g.10gb"
GRES = (("a100", 1), (SLICE, 7))
POLICY = 'rule sliced: route slurm with mig = "1g.10gb"\n'

# What torchrun gave each process: its global rank and world (set only after the c10d
# rendezvous; without one each node would be a world of 2 with ranks 0-1), and its GPUs.
PROBE = """\
import json, os, socket, sys
env = os.environ
out = {key: env.get(key) for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "GROUP_RANK",
       "SLURMD_NODENAME", "SLURM_GPUS_ON_NODE", "CUDA_VISIBLE_DEVICES", "SLURM_JOB_GPUS")}
out["host"] = socket.gethostname()
with open(os.path.join(sys.argv[1], f"rank{env['RANK']}.json"), "w") as f:
    json.dump(out, f)
"""


@pytest.fixture(scope="module")
def mig_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MultiNodeCluster]:
    """Two nodes with MIG GRES, beside the session's plain two-node cluster (own namespaces,
    addresses, ports and folders)."""
    require_multinode()
    cluster = MultiNodeCluster(tmp_path_factory.mktemp("mig-multinode"), gres=GRES)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def slices(name: str, nodes: int, gpus: int, command: list[str]) -> dict[str, Any]:
    return {"name": name, "kind": "training", "launcher": "torchrun", "nodes": nodes,
            "gpus": gpus, "cpus": 2 * nodes, "memory": "1GiB", "duration": "10min",
            "command": command}  # fmt: skip


def imported(c: MultiNodeCluster, tmp_path: Path) -> Path:
    """`router inventory import slurm` run live in the cluster's namespace: the file it wrote."""
    inv_path = tmp_path / "inventory.yaml"
    done = subprocess.run(
        c.ns_cmd([sys.executable, "-m", "router", "inventory", "import", "slurm",
                  "-o", str(inv_path)]),
        env=c.env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return inv_path


def test_a_two_node_slice_job_runs_on_both_nodes(
    mig_cluster: MultiNodeCluster, tmp_path: Path
) -> None:
    # Found, not imported (that takes seconds here): torchrun on the nodes is what needs it.
    require_tool("torch", importlib.util.find_spec("torch") is not None)
    c = mig_cluster
    # Slurm sees both nodes' slices; the importer reads them as one node set of two nodes.
    shown = c.run(["sinfo", "-h", "-N", "-o", "%N %G"]).stdout.split("\n")
    gres = f"gpu:a100:1,gpu:{SLICE}:7"
    assert sorted(line.split() for line in shown if line) == [[n, gres] for n in c.nodes]
    inv_path = imported(c, tmp_path)
    inv = yaml.safe_load(inv_path.read_text())
    (node_set,) = inv["clusters"][0]["node_sets"]
    names = f"{c.prefix}n[1-2]"
    assert {k: node_set[k] for k in ("nodes", "gpus_per_node", "gpu_type", "node_names")} == {
        "nodes": 2, "gpus_per_node": 2, "gpu_type": "a100", "node_names": names
    }  # fmt: skip
    assert node_set["mig"] == [
        {"gpus": 1, "slices": {"1g.10gb": 7}, "gres_types": {"1g.10gb": SLICE}}
    ]

    results = tmp_path / "ranks"
    results.mkdir()
    (tmp_path / "probe.py").write_text(PROBE)
    probe = slices("ddp", 2, 4, ["python", str(tmp_path / "probe.py"), str(results)])
    root = make_project(tmp_path / "p", [probe | {"workdir": str(tmp_path)}], POLICY, inv)
    r = CliRunner().invoke(cli, ["plan", str(root), "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads((root / "out" / "plan.json").read_text())
    (placed,) = doc["placements"]
    assert (placed["workload"], placed["resources"]["mig"]) == ("ddp", "1g.10gb")
    assert (placed["resources"]["nodes"], placed["resources"]["gpus_per_node"]) == (2, 2)
    (script,) = (root / "out" / "slurm").rglob("ddp.sbatch")
    text = script.read_text()
    for line in ("--nodes=2", f"--gres=gpu:{SLICE}:2", "--exclusive"):
        assert f"#SBATCH {line}\n" in text
    assert "--gpus-per-node" not in text and "\nexport CUDA_VISIBLE_DEVICES" not in text
    assert "torchrun --nnodes=2 --nproc-per-node=2 --rdzv-backend=c10d" in text
    # Each worker is narrowed to its slice by sh, which then starts Python as torchrun would.
    assert f"--no-python sh -c {quote(NARROW)} sh 2 python -u {tmp_path}/probe.py" in text
    check = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout

    job = c.sbatch(script, cwd=tmp_path)
    state = c.wait_job(job, timeout=180)
    logs = "".join(p.read_text() for p in tmp_path.glob(f"ddp-{job}.*"))
    assert state == "COMPLETED", logs + c.logs()
    seen = c.show_job(job)
    assert (seen["TresPerNode"], seen["NodeList"], seen["OverSubscribe"]) == (
        f"gres:gpu:{SLICE}:2", names, "NO"
    )  # fmt: skip
    ranks = [json.loads((results / f"rank{i}.json").read_text()) for i in range(4)]
    # One world of 4 over both nodes, two processes on each, every one on its own node.
    assert {rank["WORLD_SIZE"] for rank in ranks} == {"4"}
    by_node = {n: sorted(x["LOCAL_RANK"] for x in ranks if x["host"] == n) for n in c.nodes}
    assert by_node == {n: ["0", "1"] for n in c.nodes}
    assert all(rank["SLURMD_NODENAME"] == rank["host"] for rank in ranks)
    assert len({rank["GROUP_RANK"] for rank in ranks}) == 2
    for rank in ranks:
        # 2 slices per node for the step (indices after the node's whole A100, index 0) ...
        assert rank["SLURM_GPUS_ON_NODE"] == "2", rank
        # ... while --exclusive gave the job every GPU of the node, the whole one too.
        assert rank["SLURM_JOB_GPUS"] == "0,1,2,3,4,5,6,7", rank
    # CUDA enumerates one MIG device per process: each rank sees one slice, its own on its
    # node (without the narrowing both saw "1,2" and both would use slice 1).
    for n in c.nodes:
        seen_here = sorted(x["CUDA_VISIBLE_DEVICES"] or "" for x in ranks if x["host"] == n)
        assert seen_here == ["1", "2"], (n, ranks)

    # Both agree where a node's slices end: 14 over 2 nodes (7 each) fits, 16 (8 each) does
    # not. Router places one, leaves the other; Slurm takes the one's script (deferred, so
    # it is checked against the nodes but does not start) and refuses the other.
    full, over = slices("full", 2, 14, ["true"]), slices("over", 2, 16, ["true"])
    root = make_project(tmp_path / "q", [full, over], POLICY, inv)
    r = CliRunner().invoke(cli, ["plan", str(root), "-q"])
    assert r.exit_code == 3, r.output
    doc = json.loads((root / "out" / "plan.json").read_text())
    assert [(p["workload"], p["resources"]["gpus_per_node"]) for p in doc["placements"]] == [
        ("full", 7)
    ]
    (unplaced,) = doc["unplaced"]
    assert unplaced["workload"] == "over"
    assert "7 GPUs per node < 8 asked per node" in json.dumps(unplaced)
    (script,) = (root / "out" / "slurm").rglob("full.sbatch")
    assert f"#SBATCH --gres=gpu:{SLICE}:7\n" in script.read_text()
    job = c.sbatch(script, cwd=tmp_path, extra_args=["--begin=now+365days"])
    seen = c.show_job(job)
    assert (seen["JobState"], seen["Reason"]) == ("PENDING", "BeginTime"), seen
    c.run(["scancel", str(job)])
    too_many = tmp_path / "over.sbatch"
    too_many.write_text(script.read_text().replace(f"{SLICE}:7\n", f"{SLICE}:8\n"))
    with pytest.raises(SlurmError, match="Requested node configuration is not available"):
        c.sbatch(too_many, cwd=tmp_path)


def test_mpi_ranks_get_one_slice_each(mig_cluster: MultiNodeCluster, tmp_path: Path) -> None:
    c = mig_cluster
    inv_path = imported(c, tmp_path)
    results = tmp_path / "ranks"
    results.mkdir()
    record = f'echo "$SLURMD_NODENAME $CUDA_VISIBLE_DEVICES" > {results}/rank"$SLURM_PROCID"'
    w = slices("ranks", 2, 4, []) | {"launcher": "mpi", "ranks_per_node": 2,
                                     "threads_per_rank": 1, "command": record}  # fmt: skip
    root = make_project(tmp_path / "p", [w], POLICY, yaml.safe_load(inv_path.read_text()))
    r = CliRunner().invoke(cli, ["plan", str(root), "-q"])
    assert r.exit_code == 0, r.output
    (script,) = (root / "out" / "slurm").rglob("ranks.sbatch")
    text = script.read_text()
    assert "--ntasks-per-node=2 --cpus-per-task=1 --mpi=pmix --gpu-bind=single:1 " in text
    check = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    job = c.sbatch(script, cwd=tmp_path)
    state = c.wait_job(job, timeout=180)
    assert state == "COMPLETED", "".join(p.read_text() for p in tmp_path.glob("ranks-*"))
    rows = [(results / f"rank{i}").read_text().split() for i in range(4)]
    # Slurm bound each task to one slice of the step's two on its node, a different one each
    # (without --gpu-bind every task saw "1,2").
    by_node = {n: sorted(row[1] for row in rows if row[0] == n) for n in c.nodes}
    assert by_node == {n: ["1", "2"] for n in c.nodes}, rows
