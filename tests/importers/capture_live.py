"""Save what our live Slurm 22.05 cluster (tests/slurm/harness.py) prints, as importer fixtures.

Run as root from the repository root: `python -m tests.importers.capture_live`. It starts the
harness cluster with a small layout, then changes it the way production clusters look: a node
drained with a reason, one set DOWN, a CamelCase partition sharing nodes with another, one with
MaxTime=UNLIMITED, AllowAccounts and a per-job MaxNodes. It writes data/live-22.05-*
(sinfo --json, scontrol -o, and scontrol without -o, all of the same moment).

`python -m tests.importers.capture_live running` writes data/live-22.05-running-* instead: a
GPU node with two jobs running side by side on it (3 GPUs, 8 CPUs, 16 GiB; 20 CPUs, 150 GiB),
and sinfo --json, scontrol show partition -o and squeue --json of that moment, so that the
imported inventory and the imported running work can be tested together.
`... capture_live oversubscribe` writes data/live-22.05-oversub-*: one GPU node (4 h100, 8 CPUs,
32 GiB) in `gpu` and in `shared` (OverSubscribe=FORCE:2), two jobs of 6 CPUs each running on it
in `shared` (12 CPUs on its 8), and sinfo --json, scontrol show partition -o, scontrol show
node -o and squeue --json of that moment.
`... capture_live deny` writes data/live-22.05-deny-*: partitions with DenyAccounts and DenyQos
(one beside AllowAccounts, which Slurm then ignores it for).
`... capture_live mig` writes data/live-22.05-mig-*: one A100 node with 2 whole GPUs and 14 MIG
slices of the GRES type NVML autodetect names (`gpu:nvidia_a100_1g.10gb:14`), a job holding 3
slices on it, and sinfo --json, scontrol show node -o / partition -o and squeue --json of then.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from tests.slurm.harness import PartitionSpec, SlurmCluster

DATA = Path(__file__).parent / "data"
LAYOUT = [
    PartitionSpec("gpu", 4, 8, "h100", 96, 512 * 1024, 72 * 60, ["ib"]),
    PartitionSpec("cpu", 3, 0, None, 64, 256 * 1024, 24 * 60, ["avx512"], default=True),
]
CHANGES = [
    ["scontrol", "update", "NodeName=gpu-n3", "State=DRAIN", "Reason=bad GPU"],
    ["scontrol", "update", "NodeName=cpu-n3", "State=DOWN", "Reason=power supply"],
    [
        "scontrol",
        "create",
        "PartitionName=EquityHighPriority",
        "Nodes=gpu-n[1-4]",
        "MaxTime=UNLIMITED",
        "AllowAccounts=equity,research",
        "MaxNodes=2",
        "PreemptMode=OFF",
        "OverSubscribe=EXCLUSIVE",
    ],
    [
        "scontrol",
        "create",
        "PartitionName=long",
        "Nodes=cpu-n[1-3]",
        "MaxTime=7-00:00:00",
        "DefaultTime=1-00:00:00",
        "AllowQos=normal,long",
    ],
]


RUNNING_LAYOUT = [
    PartitionSpec("gpu-h100", 2, 8, "h100", 96, 512 * 1024, 72 * 60, ["ib"]),
    PartitionSpec("cpu", 1, 0, None, 64, 256 * 1024, 24 * 60, default=True),
]
RUNNING_JOBS = [
    ["-p", "gpu-h100", "--gres=gpu:h100:3", "-c", "8", "--mem=16G"],
    ["-p", "gpu-h100", "-c", "20", "--mem=150G"],
]

DENY_LAYOUT = [PartitionSpec("cpu", 2, 0, None, 64, 256 * 1024, 24 * 60, default=True)]
DENY_CHANGES = [
    ["scontrol", "create", "PartitionName=shared", "Nodes=cpu-n[1-2]",
     "DenyAccounts=guest,expired", "DenyQos=low", "MaxTime=1-00:00:00"],
    ["scontrol", "create", "PartitionName=members", "Nodes=cpu-n[1-2]",
     "AllowAccounts=physics,chemistry", "DenyAccounts=guest", "MaxTime=2-00:00:00"],
]  # fmt: skip

OVERSUB_LAYOUT = [PartitionSpec("gpu", 1, 4, "h100", 8, 32 * 1024, 60, default=True)]
OVERSUB_CHANGES = [
    ["scontrol", "create", "PartitionName=shared", "Nodes=gpu-n1", "OverSubscribe=FORCE:2",
     "MaxTime=60"],
]  # fmt: skip
OVERSUB_JOBS = [
    ["-p", "shared", "-c", "6", "--mem=8G", "--gres=gpu:h100:1"],
    ["-p", "shared", "-c", "6", "--mem=8G"],
]

MIG_LAYOUT = [
    PartitionSpec("mig", 1, 2, "a100", 16, 64 * 1024, 60, default=True,
                  mig={"nvidia_a100_1g.10gb": 14}),
]  # fmt: skip
MIG_JOBS = [["-p", "mig", "--gres=gpu:nvidia_a100_1g.10gb:3", "-c", "2", "--mem=4G"]]

SINFO = ["sinfo", "--json"]
NODES = ["scontrol", "show", "node", "-o"]
PARTITIONS = ["scontrol", "show", "partition", "-o"]
SQUEUE = ["squeue", "--json"]


def capture(
    layout: list[PartitionSpec],
    outputs: dict[str, list[str]],
    *,
    run_node_partition: str | None = None,
    changes: list[list[str]] | None = None,
    jobs: list[list[str]] | None = None,
) -> int:
    """Start the harness cluster with `layout`, make the `changes`, start the `jobs` (sbatch
    arguments of a sleeping script) and wait until they run, then write each output file
    (data/NAME) from its command, all of the same moment."""
    with tempfile.TemporaryDirectory(prefix="capture-") as tmp:
        cluster = SlurmCluster(layout, Path(tmp), run_node_partition)
        cluster.start()
        try:
            for args in changes or []:
                cluster.run(args)
            script = Path(tmp) / "sleep.sh"
            script.write_text("#!/bin/bash\nsleep 600\n")
            ids = [cluster.sbatch(script, hold=False, extra_args=a) for a in jobs or []]
            deadline = time.monotonic() + 30
            while any(cluster.job_state(j) != "RUNNING" for j in ids):
                if time.monotonic() > deadline:
                    raise SystemExit(f"jobs did not start: {[cluster.show_job(j) for j in ids]}")
                time.sleep(0.3)
            for name, args in outputs.items():
                (DATA / name).write_text(cluster.run(args).stdout, encoding="utf-8")
        finally:
            cluster.stop()
    return 0


def main() -> int:
    what = sys.argv[1:]
    if what == ["running"]:
        return capture(
            RUNNING_LAYOUT,
            {"live-22.05-running-sinfo.json": SINFO,
             "live-22.05-running-partitions.txt": PARTITIONS,
             "live-22.05-running-squeue.json": SQUEUE},
            run_node_partition="gpu-h100",
            jobs=RUNNING_JOBS,
        )  # fmt: skip
    if what == ["oversubscribe"]:
        return capture(
            OVERSUB_LAYOUT,
            {"live-22.05-oversub-sinfo.json": SINFO,
             "live-22.05-oversub-partitions.txt": PARTITIONS,
             "live-22.05-oversub-nodes.txt": NODES,
             "live-22.05-oversub-squeue.json": SQUEUE},
            run_node_partition="gpu",
            changes=OVERSUB_CHANGES,
            jobs=OVERSUB_JOBS,
        )  # fmt: skip
    if what == ["mig"]:
        return capture(
            MIG_LAYOUT,
            {"live-22.05-mig-sinfo.json": SINFO,
             "live-22.05-mig-nodes.txt": NODES,
             "live-22.05-mig-partitions.txt": PARTITIONS,
             "live-22.05-mig-squeue.json": SQUEUE},
            jobs=MIG_JOBS,
        )  # fmt: skip
    if what == ["deny"]:
        return capture(
            DENY_LAYOUT,
            {"live-22.05-deny-sinfo.json": SINFO, "live-22.05-deny-partitions.txt": PARTITIONS},
            changes=DENY_CHANGES,
        )
    return capture(
        LAYOUT,
        {"live-22.05-sinfo.json": SINFO,
         "live-22.05-scontrol-nodes.txt": NODES,
         "live-22.05-scontrol-partitions.txt": PARTITIONS,
         # the default layout, without -o: a record over several lines
         "live-22.05-scontrol-nodes-long.txt": ["scontrol", "show", "node"],
         "live-22.05-scontrol-partitions-long.txt": ["scontrol", "show", "partition"]},
        changes=CHANGES,
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
