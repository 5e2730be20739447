"""out/ hygiene: stale artifacts go, nothing is written outside out/, a killed plan leaves
the previous out/ intact, and the next run cleans up (or restores) what it left behind."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from router.cli.main import cli
from router.errors import PlanError
from router.output import TEST_PAUSE_ENV, recover, write_out
from tests.gitops.conftest import copy_example, edit_workloads

REPO = Path(__file__).resolve().parents[2]
NO_SUCH_PID = 4_194_305  # above Linux's largest pid_max: never a live process


def tree(root: Path) -> dict[str, str]:
    """Every file under root (hidden ones too) and a hash of its bytes."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _plan(project: Path, *args: str) -> None:
    r = CliRunner().invoke(cli, ["plan", str(project), *args])
    assert r.exit_code in (0, 3), r.output


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_example(tmp_path / "platform")


def test_artifacts_of_workloads_that_left_the_plan_are_removed(project: Path) -> None:
    _plan(project)
    out = project / "out"
    before = tree(out)
    assert any("vit-pretrain" in p for p in before)
    (out / "stale-by-hand.txt").write_text("left over")
    edit_workloads(
        project, "vision.yaml", lambda ws: [w for w in ws if w["name"] != "vit-pretrain"]
    )
    _plan(project)
    after = tree(out)
    assert not any("vit-pretrain" in p for p in after)
    assert "stale-by-hand.txt" not in after
    assert set(after) < set(before)


def test_nothing_is_written_outside_out(project: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    inputs = tree(project)
    outside = sorted(p.name for p in tmp_path.iterdir())
    old = os.getcwd()
    os.chdir(cwd)
    try:
        _plan(project)
        _plan(project, "--format", "markdown")
    finally:
        os.chdir(old)
    assert not any(cwd.iterdir())
    assert sorted(p.name for p in tmp_path.iterdir()) == outside
    now = tree(project)
    assert {k: v for k, v in now.items() if not k.startswith("out/")} == inputs
    assert sorted(p.name for p in project.iterdir() if p.name.startswith(".")) == []


def test_paths_escaping_out_and_an_out_that_holds_the_inputs_are_refused(
    tmp_path: Path, project: Path
) -> None:
    out = tmp_path / "out"
    for bad in ("../escape.txt", "/etc/x", "a/../../b", ""):
        with pytest.raises(PlanError):
            write_out(out, {"ok.txt": "x", bad: "y"})
        assert not out.exists() and not (tmp_path / "escape.txt").exists()
    inputs = tree(project)
    r = CliRunner().invoke(cli, ["plan", str(project), "-o", str(project)])
    assert r.exit_code == 1 and "refusing to use" in r.output
    r = CliRunner().invoke(cli, ["plan", str(project), "-o", str(project.parent)])
    assert r.exit_code == 1 and "refusing to use" in r.output
    assert tree(project) == inputs


def test_a_killed_plan_leaves_the_previous_out_intact(project: Path) -> None:
    _plan(project)
    out = project / "out"
    before = tree(out)
    edit_workloads(
        project, "vision.yaml", lambda ws: [w for w in ws if w["name"] != "vit-pretrain"]
    )
    env = {**os.environ, TEST_PAUSE_ENV: "60", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from router.cli.main import main; main()", "plan", str(project)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        # The hook pauses after every file is written: plan.json is written last.
        while not list(project.glob(".out.new-*/plan.json")):
            assert proc.poll() is None, "plan ended before the pause"
            assert time.monotonic() < deadline, "plan never reached the swap"
            time.sleep(0.05)
        time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert tree(out) == before
    (leftover,) = project.glob(".out.new-*")
    # The next run cleans up what the killed one left and writes the new plan.
    _plan(project)
    assert not leftover.exists()
    assert not any("vit-pretrain" in p for p in tree(out))
    assert sorted(p.name for p in project.iterdir() if p.name.startswith(".out")) == []


def test_a_kill_between_the_two_renames_is_recovered(project: Path) -> None:
    _plan(project)
    out = project / "out"
    before = tree(out)
    # What a kill between `rename(out, old)` and `rename(new, out)` leaves behind.
    old = project / f".out.old-{NO_SUCH_PID}-abc"
    new = project / f".out.new-{NO_SUCH_PID}-def"
    os.rename(out, old)
    new.mkdir()
    (new / "half.txt").write_text("half written")
    assert recover(out) == [old, new]
    assert tree(out) == before and not old.exists() and not new.exists()
    # And through a plan: the previous out/ comes back, then is replaced as usual.
    os.rename(out, old)
    _plan(project, "--no-write")  # --no-write touches nothing, not even leftovers
    assert old.exists() and not out.exists()
    _plan(project)
    assert tree(out) == before and not old.exists()


def test_leftovers_of_a_live_process_are_left_alone(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_out(out, {"a.txt": "1"})
    mine = tmp_path / f".out.new-{os.getppid()}-xyz"  # the test runner's parent: alive
    mine.mkdir()
    write_out(out, {"b.txt": "2"})
    assert mine.exists()
    assert tree(out) == {"b.txt": hashlib.sha256(b"2").hexdigest()}
