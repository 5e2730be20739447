"""OverSubscribe in the shape check, as slurmctld 22.05 behaves (tests/slurm/
test_oversubscribe_live.py): EXCLUSIVE gives every job whole nodes (the plan counts them so),
FORCE shares nodes and cores whatever a job asks (a rule's `exclusive` is refused there, and
`router check` / `router test` know it), NO and YES change nothing for router's jobs.

The EXCLUSIVE partition is a real one: `EquityHighPriority` of our live 22.05 capture
(data/live-22.05-*, OverSubscribe=EXCLUSIVE, sharing the one usable h100 node with `gpu`).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from router.assure.analysis import analyze
from router.assure.prove import prove_checks, runnable
from router.config import load_project
from router.evaluate.evaluate import Evaluator
from router.importers import render_inventory
from router.language import check_policy, load_policy, parse_files
from router.models import Inventory, Workload
from router.plan.build import build_plan
from tests.helpers import make_project
from tests.importers.test_slurm_fixtures import imported


def live() -> dict[str, Any]:
    cluster = imported("live-22.05-sinfo.json", "live-22.05-scontrol-partitions.txt")
    doc: dict[str, Any] = yaml.safe_load(render_inventory(cluster))
    return doc


def one_gpu(name: str) -> dict[str, Any]:
    return {"name": name, "kind": "batch", "gpus": 1, "gpu_type": "h100", "cpus": 4,
            "memory": "8GiB", "duration": "1h", "command": ["true"],
            "account": "equity"}  # fmt: skip


@pytest.mark.parametrize(("target", "placed"), [("equity-high-priority", 1), ("gpu", 4)])
def test_exclusive_partition_gives_each_job_a_whole_node(
    tmp_path: Path, target: str, placed: int
) -> None:
    # One usable 8-GPU node: four 1-GPU jobs share it on `gpu`; on the EXCLUSIVE partition
    # each would take the node, so one is placed and the plan says why the rest wait.
    policy = f'rule r: route slurm where name == "{target}"\n'
    root = make_project(tmp_path, [one_gpu(f"j{i}") for i in range(4)], policy, live())
    plan = build_plan(load_project(root))
    assert len(plan.placements) == placed
    for p in plan.placements:
        assert p.resources.exclusive is (target != "gpu")
        assert p.resources.whole_nodes == (1 if target != "gpu" else 0)


def force(mode: str) -> Inventory:
    doc = live()
    for p in doc["clusters"][0]["partitions"]:
        if p["name"] == "gpu":
            p["oversubscribe"] = mode
    return Inventory.model_validate(doc)


POLICY = 'rule r: route slurm{opts} where name == "gpu"\n'


@pytest.mark.parametrize(
    ("mode", "opts", "refused"),
    [
        ("force:4", " exclusive", True),
        ("force", " with exclusive", True),
        ("force:4", "", False),
        ("yes:2", " exclusive", False),
        ("exclusive", " exclusive", False),
    ],
)
def test_force_refuses_exclusive_in_plan_check_and_test(
    tmp_path: Path, mode: str, opts: str, refused: bool
) -> None:
    path = tmp_path / "p.route"
    text = POLICY.format(opts=opts) + textwrap.dedent("""
        check small: for kind == "batch" and not service and gpus == 1 and nodes <= 1
            and cpus <= 8 and memory <= 8GiB and duration <= 1h and gpu_type == "h100"
            expect placed
        """)  # fmt: skip
    path.write_text(text)
    inv = force(mode)
    policy = load_policy(path)
    d = Evaluator(policy, inv).decide(Workload.model_validate(runnable(one_gpu("w"))))
    reasons = [e.reason for e in d.excluded if e.kind == "shape"]
    assert (d.candidates == []) is refused, reasons
    if refused:
        assert reasons == [
            "the partition shares nodes whatever a job asks (OverSubscribe=FORCE):"
            " exclusive is not honoured"
        ]
    found = analyze(check_policy(parse_files([path])), inv, parse_files([path]))
    assert any(f.code == "route-never-fits" for f in found) is refused
    (r,) = prove_checks(policy, inv)
    assert (r.status == "proven") is not refused, r


def test_a_service_is_refused_where_every_job_takes_whole_nodes(tmp_path: Path) -> None:
    doc = live()
    path = tmp_path / "p.route"
    path.write_text('rule r: route slurm where name == "equity-high-priority"\n')
    doc_svc = {"name": "s", "kind": "inference", "cpus": 2, "memory": "4GiB",
               "replicas": {"min": 2, "max": 2}, "command": ["serve"],
               "account": "equity"}  # fmt: skip
    svc = Workload.model_validate(runnable(doc_svc))
    d = Evaluator(load_policy(path), Inventory.model_validate(doc)).decide(svc)
    assert d.candidates == []
    assert [e.reason for e in d.excluded if e.kind == "shape"] == [
        "every job takes whole nodes here (OverSubscribe=EXCLUSIVE); a service's replicas are"
        " planned per replica"
    ]
