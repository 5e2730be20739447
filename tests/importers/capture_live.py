"""Save what our live Slurm 22.05 cluster (tests/slurm/harness.py) prints, as importer fixtures.

Run as root from the repository root: `python -m tests.importers.capture_live`. It starts the
harness cluster with a small layout, then changes it the way production clusters look: a node
drained with a reason, one set DOWN, a CamelCase partition sharing nodes with another, one with
MaxTime=UNLIMITED, AllowAccounts and a per-job MaxNodes. It writes data/live-22.05-*
(sinfo --json, scontrol -o, and scontrol without -o, all of the same moment).
"""

from __future__ import annotations

import sys
import tempfile
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


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="capture-") as tmp:
        cluster = SlurmCluster(LAYOUT, Path(tmp))
        cluster.start()
        try:
            for args in CHANGES:
                cluster.run(args)
            outputs = {
                "live-22.05-sinfo.json": ["sinfo", "--json"],
                "live-22.05-scontrol-nodes.txt": ["scontrol", "show", "node", "-o"],
                "live-22.05-scontrol-partitions.txt": ["scontrol", "show", "partition", "-o"],
                # the default layout, without -o: a record over several lines
                "live-22.05-scontrol-nodes-long.txt": ["scontrol", "show", "node"],
                "live-22.05-scontrol-partitions-long.txt": ["scontrol", "show", "partition"],
            }
            for name, args in outputs.items():
                (DATA / name).write_text(cluster.run(args).stdout, encoding="utf-8")
        finally:
            cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
