"""`router plan --previous git:REF`: the previous policy, inventory and workloads come from a
git revision, are planned too, and the new plan is diffed against that."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from router.cli.main import cli
from tests.gitops.conftest import change_platform, commit_all, copy_example, git

pytestmark = pytest.mark.usefixtures("has_git")
SUMMARY = re.compile(
    r"^Plan: (\d+) to add, (\d+) to move, (\d+) to remove, (\d+) unplaced$", re.MULTILINE
)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A platform repo whose project lives in a subfolder: HEAD~1 is the example,
    HEAD changes a workload, the inventory and a notebook (see change_platform)."""
    import shutil

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path_factory.mktemp("repo")
    git(root, "init", "-q")
    project = copy_example(root / "platform")
    (root / ".gitignore").write_text("out/\n")
    commit_all(root, "the example platform")
    change_platform(project)
    commit_all(root, "a change")
    return project


def _plan(project: Path, *args: str) -> tuple[int, str]:
    r = CliRunner().invoke(cli, ["plan", str(project), "--no-write", *args])
    return r.exit_code, r.stdout + r.stderr


def test_symbols_summary_and_exit_codes(repo: Path) -> None:
    code, out = _plan(repo, "--previous", "git:HEAD~1", "--detailed-exitcode")
    assert code == 2, out
    assert "Changes against git:HEAD~1:" in out
    assert "  - vit-pretrain  (was hpc-east/gpu-a100)  (rule large_training," in out
    assert "  + vision-new-train  hpc-east/gpu-a100  (rule small_training," in out
    assert re.search(
        r"^  ~ \S+  hpc-east/cpu → \S+  \(rule batch, "
        r"policies/platform\.route:\d+\)$",
        out,
        re.MULTILINE,
    ), out
    assert re.search(
        r"^  ! notebook-alice  k8s-research/a10g → denied  "
        r"\(rule notebook_gpus, policies/platform\.route:\d+\): notebooks may",
        out,
        re.MULTILINE,
    ), out
    (m,) = SUMMARY.findall(out)
    add, move, remove, unplaced = map(int, m)
    assert (add, remove, unplaced) == (1, 1, 1) and move >= 1
    # Nothing changed between a revision and itself: 0; without --detailed-exitcode the
    # example's unplaced workloads exit 3.
    assert _plan(repo, "--previous", "git:HEAD", "--detailed-exitcode")[0] == 0
    assert _plan(repo, "--previous", "git:HEAD~1")[0] == 3


def test_the_diff_in_plan_json_and_markdown(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = CliRunner().invoke(
        cli, ["plan", str(repo), "-o", str(out), "--previous", "git:HEAD~1", "--format", "markdown"]
    )
    assert r.exit_code == 3
    assert "| `-` | `vit-pretrain` | hpc-east/gpu-a100 | absent | `large_training` |" in r.stdout
    doc = json.loads((out / "plan.json").read_text())
    assert doc["diff"]["against"] == "git:HEAD~1"
    assert doc["diff"]["summary"]["remove"] == 1
    # The same again gives the same bytes (the previous revision is planned afresh).
    out2 = tmp_path / "out2"
    CliRunner().invoke(cli, ["plan", str(repo), "-o", str(out2), "--previous", "git:HEAD~1"])
    assert (out2 / "plan.json").read_bytes() == (out / "plan.json").read_bytes()


def test_working_tree_and_index_are_untouched(repo: Path) -> None:
    before = git(repo, "status", "--porcelain", "--untracked-files=all")
    head = git(repo, "rev-parse", "HEAD")
    assert _plan(repo, "--previous", "git:HEAD~1")[0] == 3
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == before
    assert git(repo, "rev-parse", "HEAD") == head


def test_uncommitted_changes_are_compared_with_head(repo: Path, tmp_path: Path) -> None:
    project = tmp_path / "p"
    import shutil

    shutil.copytree(repo.parent, project)
    route = project / "platform" / "policies" / "platform.route"
    route.write_text(route.read_text().replace("limit gpus <= 64", "limit gpus <= 0"))
    code, out = _plan(project / "platform", "--previous", "git:HEAD", "--detailed-exitcode")
    assert code == 2
    assert re.search(
        r"^  ! rl-agent-sweep  \S+ → unplaced  \(rule large_training\): .*quota "
        r"research_gpus",
        out,
        re.MULTILINE,
    ), out


def test_unknown_ref_and_a_revision_without_the_project(repo: Path, tmp_path: Path) -> None:
    code, out = _plan(repo, "--previous", "git:no-such-branch")
    assert code == 1
    assert "no git revision 'no-such-branch'" in out and "fetch-depth: 0" in out
    assert "Traceback" not in out
    # A repo whose first commit has no router project: everything is added.
    root = tmp_path / "fresh"
    root.mkdir()
    git(root, "init", "-q")
    (root / "README.md").write_text("platform\n")
    commit_all(root, "empty")
    project = copy_example(root / "platform")
    code, out = _plan(project, "--previous", "git:HEAD", "--detailed-exitcode")
    assert code == 2
    (m,) = SUMMARY.findall(out)
    assert int(m[0]) > 30 and m[1:3] == ("0", "0")
    assert "HEAD has no router project yet" in out


def test_a_project_outside_a_git_repo_is_an_error(tmp_path: Path) -> None:
    project = copy_example(tmp_path / "p")
    r = CliRunner().invoke(
        cli,
        ["plan", str(project), "--no-write", "--previous", "git:HEAD"],
        env={"GIT_CEILING_DIRECTORIES": str(tmp_path)},
    )
    assert r.exit_code == 1
    assert "is not in a git repository" in r.output and "Traceback" not in r.output
