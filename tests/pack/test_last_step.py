"""The last fill's last step (router/solve/greedy.py `_topped`) on platforms small enough to
read: what only a re-packing of a tight CPU partition admits is placed, the plan packs node
by node, and the referee finds nothing left out.

The job mix is bench L seed 0's hpc-r0-6/cpu (10 nodes of 128 CPUs and 512 GiB, memory full
to within one 64 GiB job), where the plan left 34 workloads out that each fitted a
re-packing: the exact try searched depth first in first-fit-decreasing order and found no
packing in its 0.1 deterministic s. Distinct priorities make each job a class of its own, so
the solver's component is large (> 300 aggregate variables) and the last fill, not the small
components' exact cuts, is what packs it.
"""

from __future__ import annotations

from typing import Any

from tests.pack.unseen import judge

# (CPUs, GiB, jobs)
MIX = [(4, 64, 47), (8, 32, 12), (8, 8, 24), (16, 8, 17), (16, 16, 10), (2, 64, 18), (4, 16, 3),
       (8, 64, 2)]  # fmt: skip


def _platform(mix: list[tuple[int, int, int]]) -> dict[str, Any]:
    workloads: list[dict[str, Any]] = []
    for cpus, gib, n in mix:
        for k in range(n):
            workloads.append({
                "name": f"c{cpus}m{gib}-{k:02d}", "kind": "batch", "team": "a",
                "gpus": 0, "cpus": cpus, "memory": f"{gib}GiB", "priority": len(workloads) + 1,
                "command": "run", "image": "ghcr.io/acme/x:1",
            })  # fmt: skip
    partitions = [
        {"name": "cpu", "nodes": 10, "cpus_per_node": 128, "memory_per_node": "512GiB"},
        {"name": "small", "nodes": 1, "cpus_per_node": 16, "memory_per_node": "64GiB"},
        {"name": "tiny", "nodes": 1, "cpus_per_node": 8, "memory_per_node": "32GiB"},
    ]
    return {
        "policy": "rule all:\n  route slurm\n",
        "inventory": {"clusters": [{"name": "hpc", "backend": "slurm", "partitions": partitions}]},
        "workloads": workloads,
        "running": None,
    }


def test_a_cpu_partition_full_to_one_job_of_memory_takes_what_a_repacking_admits() -> None:
    # 5,208 GiB asked of the three partitions' 5,216: every job fits, a 64 GiB one on
    # `small`, 32 GiB of work on `tiny`. Before: 131 of 133 placed, the two left out (4-CPU
    # 64 GiB jobs) falsely unplaced.
    data = _platform(MIX)
    got = judge(data)
    assert got.findings == [] and got.undecided == []
    assert got.placed == len(data["workloads"]) == 133


def test_one_job_more_than_memory_admits_stays_out_and_the_referee_agrees() -> None:
    # A 48th 64 GiB job cannot fit (5,272 GiB asked of 5,216): exactly one is left out, and
    # the referee finds nothing falsely unplaced.
    data = _platform([(4, 64, 48), *MIX[1:]])
    got = judge(data)
    assert got.findings == [] and got.undecided == []
    assert got.placed == len(data["workloads"]) - 1 and got.unplaced == 1
