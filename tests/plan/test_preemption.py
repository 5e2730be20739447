"""Priority preemption when re-planning with `--previous`: planned work keeps its place
against equal priority, yields to higher priority, and a preemptible workload yields to any
work the objective prefers; plan.json names who was preempted and by whom."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
from click.testing import CliRunner

from router.cli.main import cli
from router.models.plan import plan_json_schema
from tests.helpers import make_project, platform, slurm, target

POLICY = 'policy p\nrule train: when kind == "training" route slurm\n'


def _inventory(nodes: int = 1) -> dict[str, Any]:
    return platform(slurm(target("gpu", nodes, 8, 64, "512GiB", max_time="48h")))


def _job(name: str, gpus: int, priority: str, cpus: int = 8, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "training",
        "team": "t",
        "gpus": gpus,
        "gpu_type": "h100",
        "cpus": cpus,
        "memory": "64GiB",
        "duration": "1h",
        "priority": priority,
        "command": "python train.py",
        **extra,
    }


def _plan(root: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    r = CliRunner().invoke(cli, ["plan", str(root), "--format", "json", "--no-write", *args])
    assert r.exit_code in (0, 3), r.output
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, plan_json_schema())
    return r.exit_code, doc, r.output


def _previous(tmp_path: Path, workloads: list[dict[str, Any]], nodes: int = 1) -> Path:
    root = make_project(tmp_path / "before", workloads, POLICY, _inventory(nodes))
    r = CliRunner().invoke(cli, ["plan", str(root)])
    assert r.exit_code == 0, r.output
    return root / "out" / "plan.json"


def _placed(doc: dict[str, Any]) -> set[str]:
    return {p["workload"] for p in doc["placements"]}


def _unplaced(doc: dict[str, Any]) -> dict[str, list[str]]:
    return {u["workload"]: u["reasons"] for u in doc["unplaced"]}


def test_equal_priority_does_not_preempt_planned_work(tmp_path: Path) -> None:
    before = _previous(tmp_path, [_job("a", 4, "normal"), _job("b", 4, "normal")])
    # c alone is worth more placed work than a and b together (8 GPUs, 32 CPUs).
    now = [_job("a", 4, "normal"), _job("b", 4, "normal"), _job("c", 8, "normal", cpus=32)]
    root = make_project(tmp_path / "now", now, POLICY, _inventory())
    _, fresh, _ = _plan(root)
    assert _placed(fresh) == {"c"}  # without a previous plan the objective takes c
    code, doc, _ = _plan(root, "--previous", str(before))
    assert code == 3 and _placed(doc) == {"a", "b"}
    assert doc["preempted"] == []
    reasons = _unplaced(doc)["c"]
    assert any(r.startswith("not preempted for it on hpc/gpu: planned a, b") for r in reasons)


def test_higher_priority_preempts_the_lowest_and_plan_json_says_by_whom(tmp_path: Path) -> None:
    before = _previous(tmp_path, [_job("a", 4, "normal"), _job("b", 4, "low")])
    now = [_job("a", 4, "normal"), _job("b", 4, "low"), _job("c", 4, "high")]
    root = make_project(tmp_path / "now", now, POLICY, _inventory())
    code, doc, _ = _plan(root, "--previous", str(before))
    assert code == 3 and _placed(doc) == {"a", "c"}
    assert doc["preempted"] == [
        {
            "by": ["c"],
            "priority": 1,
            "target_id": "hpc/gpu",
            "workload": "b",
            "reason": "preempted on hpc/gpu by c (priority high): priority low yields to higher "
            "priority",
        }
    ]
    assert _unplaced(doc)["b"][0] == doc["preempted"][0]["reason"]


def test_a_preemptible_workload_yields_to_equal_priority(tmp_path: Path) -> None:
    before = _previous(tmp_path, [_job("a", 4, "normal"), _job("b", 4, "normal")])
    now = [
        _job("a", 4, "normal"),
        _job("b", 4, "normal", preemptible=True),
        _job("c", 4, "normal", cpus=40),
    ]
    root = make_project(tmp_path / "now", now, POLICY, _inventory())
    _, doc, _ = _plan(root, "--previous", str(before))
    assert _placed(doc) == {"a", "c"}
    (entry,) = doc["preempted"]
    assert entry["workload"] == "b" and entry["by"] == ["c"]
    assert entry["reason"].endswith("it is preemptible")
    # Not preemptible: b keeps its place and c waits.
    now[1].pop("preemptible")
    make_project(tmp_path / "now", now, POLICY, _inventory())
    _, doc, _ = _plan(root, "--previous", str(before))
    assert _placed(doc) == {"a", "b"} and doc["preempted"] == []


def test_a_shrunk_target_keeps_what_fits(tmp_path: Path) -> None:
    planned = [_job("a", 8, "normal"), _job("b", 8, "high")]  # a whole node each
    before = _previous(tmp_path, planned, nodes=2)
    root = make_project(tmp_path / "now", planned, POLICY, _inventory(nodes=1))
    code, doc, _ = _plan(root, "--previous", str(before))
    assert code == 3 and doc["solver"]["status"] == "OPTIMAL"
    assert _placed(doc) == {"b"}  # the higher priority keeps the one node left
    assert doc["preempted"] == []  # nobody took a's place: the target shrank
    assert _unplaced(doc)["a"] == [
        "hpc/gpu: needs 8 GPUs free on one node; its 1 node has 0 GPUs free"
    ]


def test_without_previous_there_is_no_preempted_section(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", [_job("a", 4, "normal")], POLICY, _inventory())
    _, doc, _ = _plan(root)
    assert "preempted" not in doc


def test_explain_with_previous_says_what_plan_json_says(tmp_path: Path) -> None:
    before = _previous(tmp_path, [_job("a", 4, "normal"), _job("b", 4, "normal")])
    now = [_job("a", 4, "normal"), _job("b", 4, "normal"), _job("c", 8, "normal", cpus=32)]
    root = make_project(tmp_path / "now", now, POLICY, _inventory())
    _, doc, _ = _plan(root, "--previous", str(before))
    r = CliRunner().invoke(
        cli, ["explain", "c", str(root), "--previous", str(before), "--format", "json"]
    )
    assert r.exit_code == 0, r.output
    explained = json.loads(r.stdout)
    assert explained["reasons"] == _unplaced(doc)["c"]
    # Displacing a and b would be worth more placed work, and explain says why it is not done.
    assert explained["displace"]["workloads"] == ["a", "b"]
    assert explained["displace"]["text"].endswith(
        "but a, b are planned work of equal or higher priority, which only higher priority preempts"
    )
    # Without --previous there is nothing planned: c is placed.
    r = CliRunner().invoke(cli, ["explain", "c", str(root), "--format", "json"])
    assert json.loads(r.stdout)["status"] == "placed"


def test_no_preemption_note_when_the_objective_would_not_take_it_anyway(tmp_path: Path) -> None:
    before = _previous(tmp_path, [_job("a", 4, "normal"), _job("b", 4, "normal")])
    # c (8 GPUs, 8 CPUs) is worth less placed work than a and b: protection is not why it
    # waits, so its reasons do not say so.
    now = [_job("a", 4, "normal"), _job("b", 4, "normal"), _job("c", 8, "normal")]
    root = make_project(tmp_path / "now", now, POLICY, _inventory())
    _, doc, _ = _plan(root, "--previous", str(before))
    assert _placed(doc) == {"a", "b"}
    assert not any("not preempted" in r for r in _unplaced(doc)["c"])


def test_a_shared_quota_alone_does_not_open_planned_work(tmp_path: Path) -> None:
    # a (low) and c (high) never share a target, only the team's quota of 8 GPUs: a keeps it.
    inventory = _inventory()
    inventory["clusters"][0]["partitions"].append(
        {
            "name": "a100",
            "nodes": 1,
            "gpus_per_node": 8,
            "gpu_type": "a100",
            "cpus_per_node": 64,
            "memory_per_node": "512GiB",
            "max_time": "48h",
        }
    )
    policy = POLICY + "quota team: limit gpus <= 8\n"
    a = _job("a", 8, "low")
    root = make_project(tmp_path / "before", [a], policy, inventory)
    assert CliRunner().invoke(cli, ["plan", str(root)]).exit_code == 0
    root = make_project(
        tmp_path / "now", [a, _job("c", 8, "high", gpu_type="a100")], policy, inventory
    )
    _, fresh, _ = _plan(root)
    assert _placed(fresh) == {"c"}  # without a previous plan the higher priority wins
    _, doc, _ = _plan(root, "--previous", str(tmp_path / "before" / "out" / "plan.json"))
    assert _placed(doc) == {"a"} and doc["preempted"] == []
    assert any(r.startswith("quota team (") for r in _unplaced(doc)["c"])
