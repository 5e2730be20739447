"""Partition limits imported from Slurm are attributes rules read and the shape check respects:
MaxTime=UNLIMITED passes `where max_time >= 3d`; AllowAccounts/AllowQos/AllowGroups refuse the
workloads Slurm would refuse; MaxNodes caps a job's nodes. Inventory written in the test, in
the form the importer writes (tests/importers/test_slurm_fixtures.py has the real ones)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from router.config import load_project
from router.models import Inventory, Partition
from router.plan.build import build_plan
from tests.helpers import job, make_project

NODE = {"gpus_per_node": 8, "gpu_type": "h100", "cpus_per_node": 96, "memory_per_node": "1TiB"}


def cluster(**limits: Any) -> dict[str, Any]:
    return {
        "clusters": [
            {
                "name": "hpc",
                "backend": "slurm",
                "node_sets": [{"name": "h100x8", "nodes": 4, **NODE}],
                "partitions": [
                    {
                        "name": "equity",
                        "partition": "EquityHighPriority",
                        "node_sets": ["h100x8"],
                        **limits,
                    },
                    {"name": "short", "node_sets": ["h100x8"], "max_time": "1d"},
                ],
            }
        ]
    }


def where(tmp: Path, inventory: dict[str, Any], policy: str, **fields: Any) -> str | None:
    root = make_project(tmp, [job("w", **fields)], policy=policy, inventory=inventory)
    plan = build_plan(load_project(root))
    return plan.placements[0].target.id if plan.placements else None


def test_unlimited_max_time_passes_where_and_shape(tmp_path: Path) -> None:
    inv = cluster(max_time="unlimited")
    policy = "rule long: route slurm where max_time >= 3d\n"
    assert where(tmp_path / "a", inv, policy, duration="2h") == "hpc/equity"
    assert where(tmp_path / "b", inv, policy, duration="30d") == "hpc/equity"
    # without max_time the partition states no limit: `where max_time >= 3d` does not hold
    assert where(tmp_path / "c", cluster(), policy, duration="2h") is None


@pytest.mark.parametrize(
    ("limits", "fields", "placed"),
    [
        ({"allow_accounts": ["equity"]}, {"account": "equity"}, True),
        ({"allow_accounts": ["equity"]}, {"account": "physics"}, False),
        ({"allow_accounts": ["equity"]}, {}, False),  # no account stated: Slurm's default unknown
        ({"allow_groups": ["ml"]}, {"team": "ml"}, True),
        ({"allow_groups": ["ml"]}, {"team": "web"}, False),
        ({"allow_qos": ["high"]}, {}, False),
        ({"max_nodes_per_job": 1}, {"gpus": 16}, False),
        ({"max_nodes_per_job": 2}, {"gpus": 16}, True),
    ],
)
def test_access_and_per_job_limits(
    tmp_path: Path, limits: dict[str, Any], fields: dict[str, Any], placed: bool
) -> None:
    policy = 'rule only: route slurm where name == "equity"\n'
    got = where(tmp_path, cluster(max_time="unlimited", **limits), policy, **fields)
    assert (got == "hpc/equity") is placed


def test_limits_load_and_reject_bad_values() -> None:
    inv = Inventory.model_validate(
        cluster(
            max_time="unlimited", oversubscribe="force:4", preempt_mode="requeue", default_time="1h"
        )
    )
    part = inv.target("hpc/equity").target
    assert isinstance(part, Partition)
    assert part.max_time == 10**9 and part.slurm_name == "EquityHighPriority"
    with pytest.raises(ValueError, match="OverSubscribe"):
        Inventory.model_validate(cluster(oversubscribe="sometimes"))
