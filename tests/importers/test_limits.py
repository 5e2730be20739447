"""Partition limits imported from Slurm are attributes rules read and the shape check respects:
MaxTime=UNLIMITED passes `where max_time >= 3d`; AllowAccounts/AllowQos/AllowGroups refuse the
workloads Slurm would refuse; MaxNodes caps a job's nodes. Inventory written in the test, in
the form the importer writes (tests/importers/test_slurm_fixtures.py has the real ones)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from router.cli.main import cli
from router.config import load_project
from router.errors import PolicyError
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


LIMITS = {
    "max_time": "unlimited",
    "default_time": "1h",
    "max_nodes_per_job": 2,
    "oversubscribe": "force:4",
    "allow_accounts": ["ml", "equity"],
    "allow_groups": ["ml"],
    "allow_qos": ["normal"],
    "preempt_mode": "requeue",
}
ALLOWED = {"account": "ml", "team": "ml"}  # and the rule's `qos = "normal"`


@pytest.mark.parametrize(
    ("condition", "placed"),
    [
        ('preempt_mode == "requeue"', True),
        ('preempt_mode == "cancel"', False),
        ('"ml" in allow_accounts', True),
        ('"physics" in allow_accounts', False),
        ("workload.team in allow_groups", True),
        ('"normal" in allow_qos and not ("high" in allow_qos)', True),
        ("max_nodes_per_job >= 2", True),
        ("max_nodes_per_job > 2", False),
        ("default_time == 1h", True),
        ("default_time > 1h", False),
        ('oversubscribe == "force:4"', True),
        ("max_time >= 3d and max_time >= 365d", True),
    ],
)
def test_rules_read_partition_limits(tmp_path: Path, condition: str, placed: bool) -> None:
    # `short` sets none of them: a condition on an unset limit is false there, so the only
    # partition a true condition admits is `equity`, and a false one admits none.
    policy = f'rule r: route slurm with qos = "normal" where {condition}\n'
    got = where(tmp_path, cluster(**LIMITS), policy, **ALLOWED)
    assert got == ("hpc/equity" if placed else None)


def test_unset_limits_read_as_none(tmp_path: Path) -> None:
    inv = cluster(**LIMITS)
    for i, condition in enumerate(('"ml" in allow_accounts', 'preempt_mode == "requeue"')):
        policy = f'rule r: route slurm where name == "short" and not ({condition})\n'
        assert where(tmp_path / str(i), inv, policy, **ALLOWED) == "hpc/short"


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("preempt_mode > 3", "`preempt_mode` (a string) with `3` (a number)"),
        ("allow_qos == 3", "`allow_qos` (a list) with `3` (a number)"),
        ("default_time >= 4GiB", "`default_time` (a duration) with `4GiB` (a memory size)"),
        ("preempt_mod == 1", 'did you mean "preempt_mode"?'),
    ],
)
def test_limit_attributes_are_typed(tmp_path: Path, bad: str, says: str) -> None:
    root = make_project(tmp_path, [job("w")], policy=f"rule r: route slurm where {bad}\n")
    with pytest.raises(PolicyError, match=re.escape(says)) as caught:
        build_plan(load_project(root))
    assert "policy.route:1:27:" in str(caught.value)


def test_explain_shows_an_unlimited_max_time_as_the_word(tmp_path: Path) -> None:
    policy = "rule r: route slurm where max_time <= 2d\n"
    root = make_project(tmp_path, [job("w")], policy=policy, inventory=cluster(**LIMITS))
    r = CliRunner().invoke(cli, ["explain", "w", str(root)])
    assert r.exit_code == 0, r.output
    assert "max_time <= 2d: unlimited <= 2d is false" in r.output
    assert "1000000000" not in r.output
