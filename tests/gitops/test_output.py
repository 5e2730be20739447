"""out/ hygiene: stale artifacts go, nothing is written outside out/, a killed plan leaves
the previous out/ intact, and the next run cleans up (or restores) what it left behind."""

from __future__ import annotations

import hashlib
import os
import shutil
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


def test_a_replan_links_unchanged_files_and_writes_the_changed_ones(tmp_path: Path) -> None:
    out = tmp_path / "out"
    files = {"a/same.yaml": "same\n", "a/changed.yaml": "one\n", "run.sbatch": "#!/bin/sh\n"}
    write_out(out, files)
    inode = {rel: (out / rel).stat().st_ino for rel in files}
    (out / "a" / "edited.yaml").write_text("by hand")
    write_out(out, {**files, "a/changed.yaml": "two\n", "a/edited.yaml": "planned\n"})
    assert (out / "a/same.yaml").stat().st_ino == inode["a/same.yaml"]  # linked, not copied
    assert (out / "run.sbatch").stat().st_ino == inode["run.sbatch"]
    assert (out / "a/changed.yaml").stat().st_ino != inode["a/changed.yaml"]
    assert tree(out) == tree_of(
        {**files, "a/changed.yaml": "two\n", "a/edited.yaml": "planned\n"}, tmp_path / "ref"
    )
    assert (out / "run.sbatch").stat().st_mode & 0o777 == 0o755
    assert all((out / rel).stat().st_nlink == 1 for rel in files)  # the old names are gone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "ref"]


def test_files_are_not_reused_through_links_or_with_another_mode(tmp_path: Path) -> None:
    out = tmp_path / "out"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.yaml").write_text("x\n")
    write_out(out, {"k/x.yaml": "x\n", "s/run.sbatch": "#!/bin/sh\n", "y.yaml": "y\n"})
    # A folder of out/ replaced by a link to one outside, a file by a link, a mode changed.
    shutil.rmtree(out / "k")
    (out / "k").symlink_to(elsewhere)
    (out / "y.yaml").unlink()
    (out / "y.yaml").symlink_to(elsewhere / "x.yaml")
    (out / "s/run.sbatch").chmod(0o644)
    write_out(out, {"k/x.yaml": "x\n", "s/run.sbatch": "#!/bin/sh\n", "y.yaml": "x\n"})
    outside = (elsewhere / "x.yaml").stat()
    assert outside.st_nlink == 1  # never linked into out/
    for rel in ("k/x.yaml", "y.yaml"):
        st = (out / rel).lstat()
        assert not (out / rel).is_symlink() and st.st_ino != outside.st_ino
        assert (out / rel).read_text() == "x\n"
    assert not (out / "k").is_symlink()
    assert (out / "s/run.sbatch").stat().st_mode & 0o777 == 0o755
    assert (elsewhere / "x.yaml").read_text() == "x\n"


def tree_of(files: dict[str, str], root: Path) -> dict[str, str]:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return tree(root)


@pytest.mark.parametrize(
    "rel", ["a//b", "./a", "a/.", "a/", "a/./b/", ".", "./", "//x", "a\\b", "..", "a/../b", "x"]
)
def test_paths_under_out_follow_pure_posix_path_rules(rel: str) -> None:
    from pathlib import PurePosixPath

    from router.output import _safe

    p = PurePosixPath(rel)
    refused = p.is_absolute() or ".." in p.parts or not p.parts or "\\" in rel
    if refused:
        with pytest.raises(PlanError):
            _safe(rel)
    else:
        assert _safe(rel) == p.as_posix()


def test_the_garbage_collector_is_paused_only_while_out_is_built(tmp_path: Path) -> None:
    import gc

    from router.gcpause import paused_gc

    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()
    with pytest.raises(PlanError):
        write_out(tmp_path / "out", {"../x": ""})
    assert gc.isenabled()  # on again after a failure too
    gc.disable()
    try:
        write_out(tmp_path / "out", {"x": ""})
        assert not gc.isenabled()  # a caller's choice is left as it was
    finally:
        gc.enable()


def test_a_folder_that_is_no_plans_out_is_not_emptied(tmp_path: Path, project: Path) -> None:
    # router.yaml comes with a pull request: `out: ../victim` must not delete what is there.
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "important.txt").write_text("precious\n")
    router_yaml = project / "router.yaml"
    router_yaml.write_text(router_yaml.read_text().replace("out: out", "out: ../victim"))
    r = CliRunner().invoke(cli, ["plan", str(project)])
    assert r.exit_code == 1 and "refusing to use" in r.output and "holds no plan.json" in r.output
    assert tree(victim) == {"important.txt": hashlib.sha256(b"precious\n").hexdigest()}
    # An empty folder, and a plan's own out/ (it holds plan.json), are replaced as before.
    (victim / "important.txt").unlink()
    _plan(project)
    _plan(project)
    assert (victim / "plan.json").is_file()


WRITE_TWO_PARTS = """
import sys
from pathlib import Path
from router.output import write_parts
parts = [lambda: {"plan.json": "{}"}, lambda: {"slurm/a.sbatch": "#!/bin/sh"}]
print(write_parts(Path(sys.argv[1]), parts, parallel=True))
"""


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_the_swap_syncs_the_out_folders_file_system_not_the_machine(tmp_path: Path) -> None:
    # Traced for real: the parent and the forked child that writes a part each call
    # syncfs(2) on the new folder (one file system); sync(2), every disk, is never called.
    log = tmp_path / "strace.txt"
    cmd = ["strace", "-f", "-qq", "-e", "trace=sync,syncfs", "-e", "signal=none", "-o", str(log),
           sys.executable, "-c", WRITE_TWO_PARTS, str(tmp_path / "out")]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "['plan.json', 'slurm/a.sbatch']"
    calls = [line.split(None, 1)[1] for line in log.read_text().splitlines()]
    assert [c.split("(")[0] for c in calls] == ["syncfs", "syncfs"], calls
    assert all(c.endswith("= 0") for c in calls), calls
    assert len({line.split()[0] for line in log.read_text().splitlines()}) == 2  # two pids
    assert tree(tmp_path / "out").keys() == {"plan.json", "slurm/a.sbatch"}


def test_without_syncfs_the_swap_falls_back_to_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import router.output

    synced: list[None] = []
    monkeypatch.setattr(router.output, "_syncfs", lambda: None)  # as where libc has none
    monkeypatch.setattr(os, "sync", lambda: synced.append(None))
    write_out(tmp_path / "out", {"a": "x"})
    assert synced == [None] and (tmp_path / "out" / "a").read_text() == "x"


def _flags(path: Path) -> int | None:
    """The folder's inode flags (FS_IOC_GETFLAGS), or None where the file system has none."""
    import fcntl
    import struct

    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return int(struct.unpack("i", fcntl.ioctl(fd, 0x80086601, struct.pack("i", 0)))[0])
    except OSError:
        return None
    finally:
        os.close(fd)


def test_out_and_its_folders_are_tops_of_trees_and_no_spare_folder_is_left(
    tmp_path: Path,
) -> None:
    # FS_TOPDIR_FL (chattr +T) on out/ and every folder in it, where the file system keeps
    # inode flags (ext4 here): their subfolders are spread over the disk's groups.
    if _flags(tmp_path) is None:
        pytest.skip("the file system has no inode flags")
    files = {"plan.json": "{}", "slurm/c1/a.sbatch": "a", "slurm/c1/b.sbatch": "b",
             "slurm/c2/d/e.yaml": "e", "kubernetes/k/x.yaml": "x"}  # fmt: skip
    write_out(tmp_path / "out", files)
    out = tmp_path / "out"
    folders = [out, *(p for p in sorted(out.rglob("*")) if p.is_dir())]
    assert [p.relative_to(out).as_posix() for p in folders] == [
        ".", "kubernetes", "kubernetes/k", "slurm", "slurm/c1", "slurm/c2", "slurm/c2/d"
    ]  # fmt: skip
    assert all((_flags(p) or 0) & 0x00020000 for p in folders)
    assert tree(out) == {k: hashlib.sha256(v.encode()).hexdigest() for k, v in files.items()}


def test_writers_making_the_same_folders_at_once_all_land_in_them(tmp_path: Path) -> None:
    from router.output import write_parts

    parts = [
        (lambda i=i: {f"slurm/shared/deep/f{i}-{j}.sbatch": f"{i} {j}" for j in range(200)})
        for i in range(4)
    ]
    written = write_parts(tmp_path / "out", parts, parallel=True)
    assert len(written) == 800
    got = tree(tmp_path / "out")
    assert sorted(got) == sorted(written)
    assert os.listdir(tmp_path / "out" / "slurm") == ["shared"]  # no spare left beside it
