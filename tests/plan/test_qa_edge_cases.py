"""Hostile and unusual inputs to spreads, `per` quotas and `--previous` preemption, found by
trying to break them: each was a traceback-free "internal error" or a reason that was not
true."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from router.cli.main import cli
from tests.helpers import make_project
from tests.plan.test_preemption import POLICY, _inventory, _job


def _previous_doc(tmp_path: Path) -> dict[str, Any]:
    root = make_project(
        tmp_path / "before", [_job("a", 4, "normal"), _job("b", 4, "low")], POLICY, _inventory()
    )
    r = CliRunner().invoke(cli, ["plan", str(root)])
    assert r.exit_code == 0, r.output
    doc: dict[str, Any] = json.loads((root / "out" / "plan.json").read_text())
    return doc


def _edit(doc: dict[str, Any], change: str) -> dict[str, Any]:
    d = copy.deepcopy(doc)
    first = d["placements"][0]
    if change == "placements-null":
        d["placements"] = None
    elif change == "placements-object":
        d["placements"] = {"a": "hpc/gpu"}
    elif change == "entry-string":
        d["placements"][0] = "a"
    elif change == "target-number":
        first["target_id"] = 5
    elif change == "no-target":
        del first["target_id"]
    elif change == "workload-list":
        first["workload"] = ["a"]
    elif change == "duplicate":
        d["placements"].append(copy.deepcopy(first))
    elif change == "duplicate-across-sections":
        d["unplaced"] = [{"workload": first["workload"], "reasons": ["x"]}]
    elif change == "unplaced-number":
        d["unplaced"] = [{"workload": 3, "reasons": []}]
    elif change == "denied-null":
        d["denied"] = [None]
    elif change == "unknown-field":
        first["ranks"] = 1
    elif change == "gpus-string":
        first["resources"]["gpus"] = "8"
    elif change == "reasons-string":
        d["unrouted"] = [{"workload": "x", "reasons": "abc"}]
    return d


EDITS = {
    "placements-null": ("9:16", "placements: expected a list, got null"),
    "placements-object": ("9:16", "placements: expected a list, got an object"),
    "entry-string": ("10:3", "placements[0]: expected an object, got the string 'a'"),
    "target-number": (None, "placements[0].target_id: expected a string, got the number 5"),
    "no-target": ("10:3", 'placements[0]: missing required field "target_id"'),
    "workload-list": (None, "placements[0].workload: expected a string, got a list"),
    "duplicate": (
        None,
        "placements[2]: workload 'a' is already in the previous plan at placements[0]",
    ),
    "duplicate-across-sections": (
        None,
        "unplaced[0]: workload 'a' is already in the previous plan at placements[0]",
    ),
    "unplaced-number": (None, "unplaced[0].workload: expected a string, got the number 3"),
    "denied-null": ("3:3", "denied[0]: expected an object, got null"),
    "reasons-string": (None, "unrouted[0].reasons: expected a list of strings, got the string"),
    # checked through PlanDocument, the model plan.json is written through
    "unknown-field": (None, 'placements[0]: unknown field "ranks"'),
    "gpus-string": (None, "placements[0].resources.gpus: expected an integer, got the string '8'"),
}


@pytest.mark.parametrize("change", sorted(EDITS))
def test_a_hand_edited_previous_plan_is_a_clear_error(tmp_path: Path, change: str) -> None:
    bad = tmp_path / "prev.json"
    bad.write_text(json.dumps(_edit(_previous_doc(tmp_path), change), indent=1, sort_keys=True))
    root = make_project(
        tmp_path / "now", [_job("a", 4, "normal"), _job("b", 4, "low")], POLICY, _inventory()
    )
    where, message = EDITS[change]
    for args in (["plan", str(root), "--no-write"], ["explain", "a", str(root)]):
        r = CliRunner().invoke(cli, [*args, "--previous", str(bad)])
        assert r.exit_code == 1, r.output
        assert "internal error" not in r.output and "Traceback" not in r.output
        assert message in r.output
        assert (
            f"prev.json:{where}: error:" in r.output
            if where
            else f"{bad}:" in r.output.split(" error:")[0]
        )
        assert "^" in r.output  # the line and a caret under the fault


def test_previous_plan_encodings(tmp_path: Path) -> None:
    doc = _previous_doc(tmp_path)
    root = make_project(
        tmp_path / "now", [_job("a", 4, "normal"), _job("b", 4, "low")], POLICY, _inventory()
    )
    bom = tmp_path / "bom.json"  # as some Windows editors save it
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(doc).encode())
    r = CliRunner().invoke(cli, ["plan", str(root), "--no-write", "--previous", str(bom)])
    assert r.exit_code == 0, r.output
    latin = tmp_path / "latin.json"
    latin.write_bytes(b"\xff\xfe{}")
    r = CliRunner().invoke(cli, ["plan", str(root), "--no-write", "--previous", str(latin)])
    assert r.exit_code == 1 and "not a plan.json: the file is not UTF-8 text" in r.output
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "placements": [,]\n}\n')
    r = CliRunner().invoke(cli, ["plan", str(root), "--no-write", "--previous", str(broken)])
    assert r.exit_code == 1 and "broken.json:2:18: error: not a plan.json" in r.output


def test_planned_work_a_quota_keeps_out_was_not_preempted(tmp_path: Path) -> None:
    """b (low) was on hpc/gpu; now a quota of its own team keeps it out, and c (high) lands in
    the free room beside it. c preempted nothing: hpc/gpu has 8 of 16 GPUs free."""
    before = make_project(
        tmp_path / "before",
        [_job("a", 4, "normal"), _job("b", 4, "low", team="x")],
        POLICY,
        _inventory(2),
    )
    assert CliRunner().invoke(cli, ["plan", str(before)]).exit_code == 0
    policy = POLICY + 'quota qx:\n  for team == "x"\n  limit gpus <= 2\n'
    now = [_job("a", 4, "normal"), _job("b", 4, "low", team="x"), _job("c", 4, "high")]
    root = make_project(tmp_path / "now", now, policy, _inventory(2))
    prev = str(before / "out" / "plan.json")
    r = CliRunner().invoke(
        cli, ["plan", str(root), "--no-write", "--format", "json", "--previous", prev]
    )
    assert r.exit_code == 3, r.output
    doc = json.loads(r.stdout)
    assert {p["workload"] for p in doc["placements"]} == {"a", "c"}
    assert doc["preempted"] == []
    reasons = {u["workload"]: u["reasons"] for u in doc["unplaced"]}
    assert reasons["b"] == ["quota qx (policies/policy.route:5) on gpus: 0 of 2 used, needs 4"]
    r = CliRunner().invoke(cli, ["explain", "b", str(root), "--previous", prev])
    assert "preempted" not in r.output


def test_a_full_target_is_still_preemption(tmp_path: Path) -> None:
    """The counterpart: b's old target is full of c, so c did preempt it."""
    before = make_project(
        tmp_path / "before", [_job("a", 4, "normal"), _job("b", 4, "low")], POLICY, _inventory()
    )
    assert CliRunner().invoke(cli, ["plan", str(before)]).exit_code == 0
    now = [_job("a", 4, "normal"), _job("b", 4, "low"), _job("c", 4, "high")]
    root = make_project(tmp_path / "now", now, POLICY, _inventory())
    r = CliRunner().invoke(
        cli,
        [
            "plan",
            str(root),
            "--no-write",
            "--format",
            "json",
            "--previous",
            str(before / "out" / "plan.json"),
        ],
    )
    assert [p["by"] for p in json.loads(r.stdout)["preempted"]] == [["c"]]
