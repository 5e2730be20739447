"""MIG slices on Slurm: `-> slurm with mig = ...` asks for slices of the partition's GRES type
(`--gres=gpu:<type>:N`), counted per node like Kubernetes slices (never with the node's whole
GPUs). The real slurmctld's side is tests/slurm/test_mig_live.py."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from router.cli.main import cli
from tests.helpers import inventory_error, job, make_project, platform, slurm, target

# 2 nodes of 4 A100: 2 whole, 2 cut into 7 x 1g.10gb (GRES type as NVML autodetect names it)
CUT = [{"gpus": 2, "slices": {"1g.10gb": 7}, "gres_types": {"1g.10gb": "nvidia_a100_1g.10gb"}}]
POLICY = """
rule sliced: when kind == "batch" route slurm with mig = "1g.10gb"
rule whole: when kind == "training" route slurm
"""


def a100(**fields: Any) -> dict[str, Any]:
    return target("a100", 2, 4, 64, "256GiB", gpu_type="a100", **({"mig": CUT} | fields))


def plan(root: Path) -> tuple[int, str, dict[str, Any]]:
    r = CliRunner().invoke(cli, ["plan", str(root), "--out", str(root / "out"), "-q"])
    doc = json.loads((root / "out" / "plan.json").read_text()) if r.exit_code in (0, 3) else {}
    return r.exit_code, r.output, doc


def batch(name: str, gpus: int, **fields: Any) -> dict[str, Any]:
    return job(name, kind="batch", gpus=gpus, cpus=2, memory="8GiB", duration="1h", **fields)


def test_a_slice_job_asks_for_the_slurm_gres_type(tmp_path: Path) -> None:
    root = make_project(tmp_path, [batch("s3", 3)], POLICY, platform(slurm(a100())))
    code, out, doc = plan(root)
    assert code == 0, out
    (p,) = doc["placements"]
    assert (p["resources"]["mig"], p["resources"]["gpus_per_node"]) == ("1g.10gb", 3)
    script = (root / "out" / "slurm" / "hpc" / "s3.sbatch").read_text()
    assert "#SBATCH --gres=gpu:nvidia_a100_1g.10gb:3\n" in script
    assert "--gpus-per-node" not in script and "CUDA_VISIBLE_DEVICES" not in script
    table = CliRunner().invoke(cli, ["plan", str(root), "--no-write"]).output
    assert "3 a100 1g.10gb" in table, table
    r = CliRunner().invoke(cli, ["explain", "s3", str(root)])
    assert r.exit_code == 0 and "hpc/a100" in r.output and "1g.10gb" in r.output, r.output


def test_without_gres_types_the_profile_is_the_type(tmp_path: Path) -> None:
    part = a100(mig=[{"gpus": 2, "slices": {"1g.10gb": 7}}])
    root = make_project(tmp_path, [batch("s1", 1)], POLICY, platform(slurm(part)))
    code, out, _ = plan(root)
    assert code == 0, out
    script = (root / "out" / "slurm" / "hpc" / "s1.sbatch").read_text()
    assert "#SBATCH --gres=gpu:1g.10gb:1\n" in script


def test_slices_are_counted_per_node_apart_from_whole_gpus(tmp_path: Path) -> None:
    # 14 slices per node, 28 in all: 4 jobs of 7 fit, a fifth does not; whole GPUs stay free
    # for whole-GPU work (2 per node), and the slices never count as whole GPUs.
    jobs = [batch(f"s{i}", 7) for i in range(5)]
    jobs += [job(f"t{i}", gpus=2, cpus=8, memory="32GiB", duration="1h") for i in (1, 2)]
    root = make_project(tmp_path, jobs, POLICY, platform(slurm(a100())))
    code, out, doc = plan(root)
    assert code == 3, out
    placed = sorted(p["workload"] for p in doc["placements"])
    assert len([w for w in placed if w.startswith("s")]) == 4
    assert {"t1", "t2"} <= set(placed)  # each on a node's 2 whole GPUs, beside the slices
    (unplaced,) = doc["unplaced"]
    assert unplaced["workload"].startswith("s")


def test_a_slice_job_larger_than_a_node_spreads_over_nodes(tmp_path: Path) -> None:
    # 16 slices > 14 per node: spread evenly over 2 nodes (8 per node), exclusive, as on k8s
    root = make_project(tmp_path, [batch("big", 16)], POLICY, platform(slurm(a100())))
    code, out, doc = plan(root)
    assert code == 0, out
    (p,) = doc["placements"]
    assert (p["resources"]["nodes"], p["resources"]["gpus_per_node"]) == (2, 8)
    script = (root / "out" / "slurm" / "hpc" / "big.sbatch").read_text()
    assert "#SBATCH --gres=gpu:nvidia_a100_1g.10gb:8\n" in script
    assert "#SBATCH --nodes=2\n" in script and "#SBATCH --exclusive\n" in script


def test_a_profile_the_partition_lacks_is_unrouted_with_a_hint(tmp_path: Path) -> None:
    policy = 'rule sliced: when kind == "batch" route slurm with mig = "1g.20gb"'
    root = make_project(tmp_path, [batch("s1", 1)], policy, platform(slurm(a100())))
    code, out, doc = plan(root)
    assert code == 3, out
    (u,) = doc["unrouted"] + doc["unplaced"]
    text = json.dumps(u)
    assert "offers no MIG profile 1g.20gb (has 1g.10gb" in text
    assert 'did you mean \\"1g.10gb\\"?' in text


def test_a_profile_slurm_cannot_name_needs_gres_types(tmp_path: Path) -> None:
    text = (
        "clusters:\n  - name: hpc\n    backend: slurm\n    partitions:\n"
        "      - {name: a100, nodes: 1, gpus_per_node: 1, gpu_type: a100, cpus_per_node: 8,\n"
        "         memory_per_node: 64GiB, mig: [{gpus: 1, slices: {1g.10gb+me: 1}}]}\n"
    )
    message = inventory_error(tmp_path / "inventory.yaml", text)
    assert "MIG profile 1g.10gb+me is no Slurm GRES type name" in message
    assert "inventory.yaml:6:" in message and "gres_types" in message


def test_gres_types_must_name_a_profile_of_the_group(tmp_path: Path) -> None:
    text = (
        "clusters:\n  - name: hpc\n    backend: slurm\n    partitions:\n"
        "      - {name: a100, nodes: 1, gpus_per_node: 1, gpu_type: a100, cpus_per_node: 8,\n"
        "         memory_per_node: 64GiB, mig: [{gpus: 1, slices: {1g.10gb: 7},\n"
        "         gres_types: {1g.20gb: a100_1g.10gb}}]}\n"
    )
    message = inventory_error(tmp_path / "inventory.yaml", text)
    assert "gres_types names 1g.20gb, which these GPUs are not cut into" in message
    assert 'did you mean "1g.10gb"?' in message


def test_mig_on_a_slurm_route_checks_clean(tmp_path: Path) -> None:
    root = make_project(tmp_path, [batch("s1", 1)], POLICY, platform(slurm(a100())))
    r = CliRunner().invoke(cli, ["check", str(root)])
    assert r.exit_code == 0, r.output
    assert "is a kubernetes option" not in r.output


def test_check_warns_of_a_profile_no_target_offers(tmp_path: Path) -> None:
    policy = 'rule sliced: when kind == "batch" route slurm with mig = "1g.1gb"\n'
    root = make_project(tmp_path, [batch("s1", 1)], policy, platform(slurm(a100())))
    r = CliRunner().invoke(cli, ["check", str(root)])
    assert r.exit_code == 0, r.output  # a warning: CPU work under the rule still fits
    assert "policy.route:1:58: warning: MIG profile 1g.1gb is not offered by any slurm" in r.output
    assert "(they offer 1g.10gb)" in r.output and 'did you mean "1g.10gb"?' in r.output
    assert "^^^^^^^^" in r.output


def _srun_line(script: str) -> str:
    return next(line for line in script.splitlines() if line.startswith("srun "))


def test_torchrun_workers_each_keep_their_own_slice(tmp_path: Path) -> None:
    # CUDA enumerates one MIG device per process: the emitted wrapper, run by a real sh as
    # torchrun would start it, leaves worker LOCAL_RANK field LOCAL_RANK % 3 + 1.
    w = batch("ddp", 3, launcher="torchrun", command=["python", "train.py", "--lr", "0.1"])
    root = make_project(tmp_path, [w], POLICY, platform(slurm(a100())))
    code, out, _ = plan(root)
    assert code == 0, out
    line = _srun_line((root / "out" / "slurm" / "hpc" / "ddp.sbatch").read_text())
    assert "--nproc-per-node=3 " in line and " sh 3 python -u train.py --lr 0.1" in line
    wrapper = shlex.split(line.split("--no-python ", 1)[1])
    assert wrapper[:2] == ["sh", "-c"] and wrapper[3:5] == ["sh", "3"]
    probe = [*wrapper[:5], "sh", "-c", 'printf %s "${CUDA_VISIBLE_DEVICES-unset}"']
    seen = []
    for rank, devices in [(0, "4,5,6"), (1, "4,5,6"), (2, "4,5,6"), (4, "4,5,6"), (1, None)]:
        env = {"PATH": os.environ["PATH"], "LOCAL_RANK": str(rank)}
        env |= {"CUDA_VISIBLE_DEVICES": devices} if devices else {}
        seen.append(subprocess.run(probe, env=env, capture_output=True, text=True).stdout)
    # rank 4 of 3 slices shares slice 2; no CUDA_VISIBLE_DEVICES stays unset
    assert seen == ["4", "5", "6", "5", "unset"]


def test_one_slice_or_one_process_is_not_narrowed(tmp_path: Path) -> None:
    jobs = [
        batch("one", 1, launcher="torchrun", command=["python", "train.py"]),
        batch("single", 2, launcher="torchrun", procs_per_node=1, command=["python", "t.py"]),
        batch("ranks", 1, launcher="mpi", ranks_per_node=2, command=["./solve"]),
    ]
    root = make_project(tmp_path, jobs, POLICY, platform(slurm(a100())))
    code, out, _ = plan(root)
    assert code == 0, out
    lines = {n: _srun_line((root / "out" / "slurm" / "hpc" / f"{n}.sbatch").read_text())
             for n in ("one", "single", "ranks")}  # fmt: skip
    assert all("sh -c" not in x and "--gpu-bind" not in x for x in lines.values()), lines
    assert lines["one"].endswith("--nproc-per-node=1 --rdzv-backend=c10d"
                                 ' --rdzv-endpoint="$head_node:$rdzv_port"'
                                 ' --rdzv-id="$SLURM_JOB_ID" train.py')  # fmt: skip


def test_mpi_ranks_are_bound_one_slice_each(tmp_path: Path) -> None:
    jobs = [batch("even", 2, launcher="mpi", ranks_per_node=2, command=["./solve"]),
            batch("more", 2, launcher="mpi", ranks_per_node=3, command=["./solve"])]  # fmt: skip
    root = make_project(tmp_path, jobs, POLICY, platform(slurm(a100())))
    code, out, _ = plan(root)
    assert code == 0, out
    even = _srun_line((root / "out" / "slurm" / "hpc" / "even.sbatch").read_text())
    more = _srun_line((root / "out" / "slurm" / "hpc" / "more.sbatch").read_text())
    assert "--ntasks-per-node=2 --cpus-per-task=1 --mpi=pmix --gpu-bind=single:1 " in even
    assert "--gpu-bind=single:2 " in more  # 3 ranks on 2 slices: at most 2 share one
