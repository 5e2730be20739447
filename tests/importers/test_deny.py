"""DenyAccounts / DenyQos: imported from real outputs and enforced like the allow lists, by the
shape check (plan), `router check` (dead routes) and `router test` (proofs).

Fixtures (data/README.md): `scontrol-17.11-huji-*` (a university cluster's `scontrol show
node` / `show partition`, Slurm 17.11: partition `long` has DenyAccounts=killable-cs) and
`live-22.05-deny-*` (our live 22.05 cluster: `shared` with DenyAccounts=guest,expired and
DenyQos=low; `members` created with AllowAccounts and DenyAccounts, of which Slurm itself
keeps only AllowAccounts). Semantics, as slurmctld 22.05 showed live (tests/slurm/
test_deny_live.py): a denied account is refused at submit, any other account and a job that
states none are accepted; a deny list counts only where the allow list is unset.
"""

from __future__ import annotations

import random
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from router.assure.analysis import analyze
from router.assure.prove import prove_checks, runnable, violation
from router.evaluate.evaluate import Evaluator
from router.importers import render_inventory
from router.importers.slurm import read_partitions
from router.language import check_policy, load_policy, parse_files
from router.models import Inventory, Partition, Workload
from tests.importers.test_slurm_fixtures import DATA, imported


def live_inventory() -> Inventory:
    cluster = imported("live-22.05-deny-sinfo.json", "live-22.05-deny-partitions.txt")
    return Inventory.model_validate(yaml.safe_load(render_inventory(cluster)))


def partition(inv: Inventory, name: str) -> Partition:
    t = inv.target(f"slurm/{name}").target
    assert isinstance(t, Partition)
    return t


def test_huji_17_11_deny_accounts_is_read() -> None:
    parts = {
        p.name: p
        for p in read_partitions(
            (DATA / "scontrol-17.11-huji-partitions.txt").read_text(), "partitions.txt"
        )
    }
    assert parts["long"].deny_accounts == ("killable-cs",)
    assert parts["long"].allow_accounts is None
    assert parts["killable"].allow_accounts == ("killable-cs",)
    cluster = imported("scontrol-17.11-huji-nodes.txt", "scontrol-17.11-huji-partitions.txt")
    # long's only node of the three on record (oxygen-04) is drained: long is left out, saying so
    assert "partition long: no usable node, left out" in cluster.notes
    assert "oxygen-04: drained (reason: memory issues?), left out" in cluster.exclusions
    # killable (Default=YES) is split by node type: no one sub-target is the default, and the
    # inventory is valid (it was not: two "default" targets)
    inv = Inventory.model_validate(yaml.safe_load(render_inventory(cluster)))
    killable = [r.target for r in inv.targets() if isinstance(r.target, Partition)
                and r.target.slurm_name == "killable"]  # fmt: skip
    assert len(killable) == 2 and not any(t.default for t in killable)
    assert all(t.allow_accounts == ["killable-cs"] and not t.deny_accounts for t in killable)


def test_live_deny_lists_are_imported_as_slurm_keeps_them() -> None:
    inv = live_inventory()
    shared, members = partition(inv, "shared"), partition(inv, "members")
    assert (shared.deny_accounts, shared.deny_qos) == (["expired", "guest"], ["low"])
    assert shared.allow_accounts is None
    # Created with AllowAccounts and DenyAccounts: Slurm printed only AllowAccounts.
    assert (members.allow_accounts, members.deny_accounts) == (["chemistry", "physics"], [])


POLICY = 'rule r: route slurm where name == "shared"{opts}\n'


def evaluator(tmp_path: Path, opts: str = "", inv: Inventory | None = None) -> Evaluator:
    path = tmp_path / "p.route"
    path.write_text(POLICY.format(opts=opts))
    return Evaluator(load_policy(path), inv or live_inventory())


def work(**fields: Any) -> Workload:
    return Workload.model_validate(runnable({"name": "w", "kind": "batch", "cpus": 4, **fields}))


@pytest.mark.parametrize(
    ("opts", "account", "why"),
    [
        ("", "guest", "the partition denies guest (DenyAccounts=expired,guest)"),
        ("", "expired", "the partition denies expired (DenyAccounts=expired,guest)"),
        ("", "physics", None),
        ("", None, None),  # no account stated: Slurm's default account, accepted live
        (' with qos = "low"', None, "the partition denies low (DenyQos=low)"),
        (' with qos = "normal"', "physics", None),
        (
            ' with account = "guest"',
            None,
            "the partition denies guest (DenyAccounts=expired,guest)",
        ),
    ],
)
def test_shape_check_refuses_what_slurm_denies(
    tmp_path: Path, opts: str, account: str | None, why: str | None
) -> None:
    d = evaluator(tmp_path, opts).decide(work(account=account))
    if why is None:
        assert [c.target.id for c in d.candidates] == ["slurm/shared"], d.excluded
    else:
        shape = [e.reason for e in d.excluded if e.kind == "shape"]
        assert d.candidates == [] and shape == [why]


def test_the_decision_cache_tells_denied_accounts_apart(tmp_path: Path) -> None:
    # No partition has an allow list: the deny list alone must make the account part of the
    # routing signature, or the second workload would reuse the first one's decision.
    ev = evaluator(tmp_path)
    assert ev.decide(work(account="physics")).candidates
    assert ev.decide(work(account="guest")).candidates == []
    assert ev.decide(work(account="physics")).candidates


def test_a_deny_list_beside_an_allow_list_is_ignored_as_slurm_does(tmp_path: Path) -> None:
    raw = yaml.safe_load(render_inventory(imported("live-22.05-deny-sinfo.json",
                                                   "live-22.05-deny-partitions.txt")))  # fmt: skip
    for p in raw["clusters"][0]["partitions"]:
        if p["name"] == "shared":
            p["allow_accounts"] = ["guest"]
    inv = Inventory.model_validate(raw)
    assert evaluator(tmp_path, "", inv).decide(work(account="guest")).candidates


def dead(tmp_path: Path, opts: str) -> bool:
    path = tmp_path / "p.route"
    path.write_text(POLICY.format(opts=opts))
    found = analyze(check_policy(parse_files([path])), live_inventory(), parse_files([path]))
    return any(f.code == "route-never-fits" for f in found)


@pytest.mark.parametrize(
    ("opts", "never"),
    [
        ("", False),
        (' with account = "guest"', True),
        (' with account = "physics"', False),
        (' with qos = "low"', True),
        (' with qos = "normal"', False),
    ],
)
def test_router_check_calls_a_denied_route_dead(tmp_path: Path, opts: str, never: bool) -> None:
    assert dead(tmp_path, opts) is never
    # ... and the plan agrees: of 60 sampled workloads, the dead route places none
    ev = evaluator(tmp_path, opts)
    rng = random.Random(7)
    accounts = [None, "guest", "physics", "expired"]
    placed = [a for a in (rng.choice(accounts) for _ in range(60))
              if ev.decide(work(account=a)).candidates]  # fmt: skip
    assert (placed == []) is never


PROVE = """
rule r: route slurm where name == "shared"{opts}
check small_placed: for kind == "batch" and not service and gpus == 0 and nodes <= 1 and cpus <= 8
    and memory <= 8GiB and duration <= 1h expect placed
"""


@pytest.mark.parametrize(
    ("opts", "proven"),
    [("", True), (' with account = "guest"', False), (' with qos = "low"', False)],
)
def test_router_test_proves_or_refutes_as_the_shape_check(
    tmp_path: Path, opts: str, proven: bool
) -> None:
    path = tmp_path / "p.route"
    path.write_text(textwrap.dedent(PROVE.format(opts=opts)).lstrip())
    policy = load_policy(path)
    inv = live_inventory()
    (r,) = prove_checks(policy, inv)
    assert (r.status == "proven") is proven, r
    if not proven:
        assert r.counterexample is not None
        w = Workload.model_validate(runnable(r.counterexample))
        assert violation(Evaluator(policy, inv), policy.checks[0], w) is not None
