"""Plan diffs: the computation on plan documents, and `router plan --previous PLAN.json`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from router.cli.main import cli
from router.plan.diff import diff_documents, diff_summary_line
from tests.gitops.conftest import EXAMPLE, change_platform, copy_example


def _placement(name: str, target: str, rule: str = "r", **extra: Any) -> dict[str, Any]:
    return {
        "workload": name,
        "target_id": target,
        "rule": rule,
        "rule_source": "p.route:1",
        "kind": "batch",
        "team": "t",
        "options": {},
        "resources": {"gpus": 0},
        **extra,
    }


def _doc(
    placements: Sequence[dict[str, Any]] = (),
    denied: Sequence[str] = (),
    unplaced: Sequence[str] = (),
    unrouted: Sequence[str] = (),
) -> dict[str, Any]:
    return {
        "placements": list(placements),
        "denied": [
            {"workload": n, "message": "no", "rule": "d", "rule_source": "p.route:9"}
            for n in denied
        ],
        "unplaced": [
            {"workload": n, "reasons": ["a/b: gpus full: 8 of 8 used, needs 1"], "rule": "r"}
            for n in unplaced
        ],
        "unrouted": [{"workload": n, "reasons": ["no rule matches"]} for n in unrouted],
    }


def test_every_kind_of_change_and_the_summary_line() -> None:
    before = _doc(
        [
            _placement("stay", "c/a"),
            _placement("move", "c/a"),
            _placement("gone", "c/a"),
            _placement("lost", "c/a"),
            _placement("grow", "c/a"),
        ],
        denied=["was-denied"],
        unplaced=["was-unplaced", "still-unplaced"],
    )
    after = _doc(
        [
            _placement("stay", "c/a"),
            _placement("move", "c/b", rule="r2"),
            _placement("new", "c/b"),
            _placement("was-unplaced", "c/a"),
            _placement("grow", "c/a", resources={"gpus": 2}),
        ],
        denied=["lost"],
        unplaced=["still-unplaced", "fresh-unplaced", "was-denied"],
    )
    diff = diff_documents(before, after, "file:plan.json")
    by = {c["workload"]: c for c in diff["changes"]}
    assert [c["workload"] for c in diff["changes"]] == sorted(by)
    assert {n: c["symbol"] for n, c in by.items()} == {
        "move": "~",
        "gone": "-",
        "lost": "!",
        "new": "+",
        "was-unplaced": "+",
        "fresh-unplaced": "!",
        "was-denied": "!",
        "grow": "*",
    }
    assert (by["move"]["from"], by["move"]["to"], by["move"]["rule"]) == ("c/a", "c/b", "r2")
    assert by["move"]["previous_rule"] == "r"
    assert by["lost"]["to"] == "denied" and by["lost"]["reason"] == "no"
    assert by["was-unplaced"]["from"] == "unplaced"
    assert by["grow"]["changed"] == ["resources"]
    assert diff["summary"] == {"add": 2, "move": 1, "remove": 1, "unplaced": 3, "update": 1}
    assert diff["changed"] is True
    assert (
        diff_summary_line(diff) == "Plan: 2 to add, 1 to move, 1 to remove, 3 unplaced, 1 to update"
    )


def test_summary_line_has_the_issue_form_without_updates() -> None:
    before = _doc([_placement("a", "c/a")])
    after = _doc([_placement("a", "c/b"), _placement("b", "c/b")], unplaced=["u"])
    assert (
        diff_summary_line(diff_documents(before, after, "x"))
        == "Plan: 1 to add, 1 to move, 0 to remove, 1 unplaced"
    )
    same = diff_documents(after, after, "x")
    assert same["changes"] == [] and same["changed"] is False
    assert diff_summary_line(same) == "Plan: 0 to add, 0 to move, 0 to remove, 0 unplaced"


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("base") / "out"
    r = CliRunner().invoke(cli, ["plan", str(EXAMPLE), "-o", str(out)])
    assert r.exit_code == 3, r.output  # the example has unplaced workloads by design
    return out / "plan.json"


@pytest.fixture(scope="module")
def changed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = copy_example(tmp_path_factory.mktemp("changed") / "p")
    change_platform(project)
    return project


def test_same_plan_is_no_change(baseline: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = CliRunner().invoke(
        cli,
        ["plan", str(EXAMPLE), "-o", str(out), "--previous", str(baseline), "--detailed-exitcode"],
    )
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert "No changes against file:plan.json." in lines
    assert "Plan: 0 to add, 0 to move, 0 to remove, 0 unplaced" in lines
    doc = json.loads((out / "plan.json").read_text())
    assert doc["diff"]["changes"] == [] and doc["diff"]["against"] == "file:plan.json"
    # Apart from its diff, an empty `preempted` (and the solver's stability level, which now
    # has something to keep), plan.json is the same as without --previous.
    base = json.loads(baseline.read_text())
    assert doc.pop("preempted") == []
    del doc["diff"], doc["solver"], base["solver"]
    assert doc == base
    assert "diff" not in json.loads(baseline.read_text())


def test_changes_against_a_plan_file(baseline: Path, changed: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["plan", str(changed), "-o", str(out), "--previous", str(baseline)]
    r = CliRunner().invoke(cli, [*args, "--detailed-exitcode"])
    assert r.exit_code == 2, r.output
    doc = json.loads((out / "plan.json").read_text())
    by = {c["workload"]: c for c in doc["diff"]["changes"]}
    assert by["vit-pretrain"]["symbol"] == "-"
    assert by["vision-new-train"]["symbol"] == "+"
    assert by["notebook-alice"]["symbol"] == "!" and by["notebook-alice"]["to"] == "denied"
    moves = [c for c in doc["diff"]["changes"] if c["symbol"] == "~"]
    assert moves and all(c["from"] == "hpc-east/cpu" for c in moves)
    s = doc["diff"]["summary"]
    line = (
        f"Plan: {s['add']} to add, {s['move']} to move, {s['remove']} to remove, "
        f"{s['unplaced']} unplaced"
    )
    # stdout alone (timing goes to stderr): the summary, then where the files went.
    assert r.stdout.splitlines()[-2:] == [line, f"Wrote {doc_files(out)} files to {out}/"]
    assert f"  ~ {moves[0]['workload']}  hpc-east/cpu → {moves[0]['to']}  (rule " in r.output
    assert "  - vit-pretrain  (was hpc-east/gpu-a100)" in r.output
    # The stability level keeps everything else where it was.
    assert len(doc["diff"]["changes"]) <= 8
    # Without --detailed-exitcode, unplaced workloads give 3 as before.
    assert CliRunner().invoke(cli, [*args, "--no-write"]).exit_code == 3
    # --quiet: only the summary line.
    q = CliRunner().invoke(cli, [*args, "--no-write", "-q", "--detailed-exitcode"])
    assert (q.exit_code, q.output) == (2, line + "\n")


def doc_files(out: Path) -> int:
    return sum(1 for p in out.rglob("*") if p.is_file())


def test_markdown_has_a_compact_table_and_folded_details(baseline: Path, changed: Path) -> None:
    r = CliRunner().invoke(
        cli,
        ["plan", str(changed), "--no-write", "--format", "markdown", "--previous", str(baseline)],
    )
    md = r.stdout
    assert md.startswith("### router plan: ml_platform\n\n**Plan: ")
    assert "(against `file:plan.json`)" in md
    assert "| | workload | from | to | rule |" in md
    assert "| `-` | `vit-pretrain` | hpc-east/gpu-a100 | absent |" in md
    assert "| `+` | `vision-new-train` | absent |" in md
    assert md.index("| | workload |") < md.index("<details><summary>All placements")
    assert md.count("<details>") == md.count("</details>") == 2


def test_json_format_carries_the_diff_sorted(baseline: Path, changed: Path) -> None:
    r = CliRunner().invoke(
        cli, ["plan", str(changed), "--no-write", "--format", "json", "--previous", str(baseline)]
    )
    doc = json.loads(r.stdout)
    names = [c["workload"] for c in doc["diff"]["changes"]]
    assert names == sorted(names)
    assert list(doc["diff"]) == sorted(doc["diff"])


def test_bad_previous_and_detailed_exitcode_without_previous(tmp_path: Path) -> None:
    bad = tmp_path / "plan.json"
    bad.write_text("{not json")
    r = CliRunner().invoke(cli, ["plan", str(EXAMPLE), "--no-write", "--previous", str(bad)])
    assert r.exit_code == 1 and "plan.json:1:2: error: not a plan.json" in r.output
    assert "    1 | {not json\n      |  ^" in r.output
    r = CliRunner().invoke(
        cli, ["plan", str(EXAMPLE), "--no-write", "--previous", str(tmp_path / "missing.json")]
    )
    assert r.exit_code == 1 and "cannot read the previous plan" in r.output
    r = CliRunner().invoke(cli, ["plan", str(EXAMPLE), "--no-write", "--detailed-exitcode"])
    assert r.exit_code == 1 and "--detailed-exitcode needs --previous" in r.output
    assert "Traceback" not in r.output


def test_terminal_table_is_coloured_only_on_a_tty(baseline: Path, changed: Path) -> None:
    import io

    from rich.console import Console

    from router.plan.render import render_rich

    r = CliRunner().invoke(
        cli, ["plan", str(changed), "--no-write", "--format", "json", "--previous", str(baseline)]
    )
    doc = json.loads(r.stdout)
    buf = io.StringIO()
    render_rich(doc, Console(file=buf, force_terminal=True, width=160, color_system="standard"))
    text = buf.getvalue()
    assert "\x1b[" in text  # colour
    assert "slurm / hpc-east" in text and "vision-new-train" in text
    assert "Plan: 1 to add" in text
    # Not a terminal (CliRunner, a pipe, a CI log): plain text, no escape codes.
    plain = CliRunner().invoke(
        cli, ["plan", str(changed), "--no-write", "--previous", str(baseline)]
    )
    assert "\x1b[" not in plain.output
    assert "slurm / hpc-east\n  WORKLOAD" in plain.stdout


def test_progress_spinner_starts_after_the_delay_and_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading
    import time

    import router.cli.plan as plan_cli

    monkeypatch.setattr(plan_cli, "SPINNER_AFTER", 0.01)
    with plan_cli._progress("Planning…", enabled=True):
        time.sleep(0.1)
        assert "router-progress" in [t.name for t in threading.enumerate()]
    assert "router-progress" not in [t.name for t in threading.enumerate()]
    with plan_cli._progress("Planning…", enabled=False):
        pass
