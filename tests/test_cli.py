"""The command line, through click's CliRunner and, where imports matter, a subprocess."""

from __future__ import annotations

import ast
import filecmp
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from router.cli.main import cli

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "ml-platform"


@pytest.fixture(scope="module")
def example_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("plan") / "out"
    result = CliRunner().invoke(cli, ["plan", str(EXAMPLE), "-o", str(out), "--format", "json"])
    assert result.exit_code in (0, 3), result.output
    return out


def _doc(out: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((out / "plan.json").read_text())
    return doc


def test_example_plan_routes_as_the_policy_says(example_out: Path) -> None:
    doc = _doc(example_out)
    assert doc["format_version"] == "1"
    assert doc["summary"]["workloads"] >= 40
    workloads = {}
    for f in sorted((EXAMPLE / "workloads").glob("*.yaml")):
        import yaml

        for w in yaml.safe_load(f.read_text()):
            workloads[w["name"]] = w
    placed = {p["workload"]: p for p in doc["placements"]}
    denied = {d["workload"] for d in doc["denied"]}
    big = [n for n, w in workloads.items() if w.get("kind") == "training" and w.get("gpus", 0) >= 8]
    assert big
    for name in big:
        if name in placed:
            assert placed[name]["backend"] == "slurm", name
            assert placed[name]["options"].get("exclusive") is True, name
            assert placed[name]["resources"]["exclusive"] is True, name
    for name, w in workloads.items():
        if w.get("kind") == "inference" and name not in denied:
            p = placed[name]
            assert p["backend"] == "kubernetes", name
            (artifact,) = p["artifacts"]
            text = (example_out / artifact).read_text()
            assert "kind: HorizontalPodAutoscaler" in text, name
    assert denied  # the example has denied workloads ...
    assert doc["unplaced"]  # ... and ones that cannot fit
    for t in doc["targets"]:
        for resource in ("gpus", "cpus", "memory_mib", "nodes"):
            assert t[resource]["used"] <= t[resource]["capacity"], (t["id"], resource)
    for p in doc["placements"]:
        for a in p["artifacts"]:
            assert (example_out / a).is_file()


def test_two_runs_give_identical_out_folders(example_out: Path, tmp_path: Path) -> None:
    again = tmp_path / "out"
    result = CliRunner().invoke(cli, ["plan", str(EXAMPLE), "-o", str(again), "--workers", "1"])
    assert result.exit_code in (0, 3), result.output
    cmp = filecmp.dircmp(example_out, again)

    def same(c: filecmp.dircmp[str]) -> bool:
        if c.left_only or c.right_only or c.diff_files or c.funny_files:
            return False
        _, mismatch, errors = filecmp.cmpfiles(c.left, c.right, c.common_files, shallow=False)
        return not mismatch and not errors and all(same(s) for s in c.subdirs.values())

    assert same(cmp)


def test_policy_typo_exits_1_with_caret_and_keeps_out(tmp_path: Path) -> None:
    project = tmp_path / "p"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("out"))
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("previous plan")
    route = project / "policies" / "platform.route"
    text = route.read_text().replace("gpus >= big_job", "gpu >= big_job", 1)
    route.write_text(text)
    result = CliRunner().invoke(cli, ["plan", str(project), "-o", str(out)])
    assert result.exit_code == 1
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "gpu >= big_job" in s)
    col = text.splitlines()[line - 1].index("gpu >=") + 1
    assert f"platform.route:{line}:{col}:" in result.output
    assert "^^^" in result.output
    assert 'did you mean "gpus"?' in result.output
    assert "Traceback" not in result.output
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


def test_bad_workload_file_names_file_line_and_field(tmp_path: Path) -> None:
    project = tmp_path / "p"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("out"))
    (project / "workloads" / "bad.yaml").write_text(
        "- name: broken\n  kind: training\n  gpus: eight\n"
    )
    result = CliRunner().invoke(cli, ["plan", str(project), "--no-write"])
    assert result.exit_code == 1
    assert "bad.yaml:3" in result.output and "gpus" in result.output
    assert "Traceback" not in result.output


# `check` is not in this list: since its static analysis proves rule reachability with CP-SAT,
# it solves, and so imports ortools (lazily, only once the inputs have loaded).
@pytest.mark.parametrize(
    "args",
    [
        ["schema", "workload"],
        ["inventory", "--help"],
        ["fmt", "--check", str(EXAMPLE / "policies")],
        ["--help"],
    ],
)
def test_commands_that_do_not_solve_do_not_import_ortools(args: list[str]) -> None:
    code = (
        "import sys\nfrom router.cli.main import cli\n"
        f"try:\n    cli({args!r}, standalone_mode=False)\nexcept SystemExit:\n    pass\n"
        "print('ortools' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False", out.stdout + out.stderr


# Start-up: a command imports its own module only, and the libraries only when it works.
@pytest.mark.parametrize("args", [["plan", "--help"], ["check", "--help"], ["--version"]])
def test_help_and_version_import_no_models_parser_or_solver(args: list[str]) -> None:
    code = (
        "import sys\nfrom router.cli.main import cli\n"
        f"try:\n    cli({args!r}, standalone_mode=False)\nexcept SystemExit:\n    pass\n"
        "heavy = ('pydantic', 'lark', 'yaml', 'ortools', 'router.api', 'router.models')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "print(sorted(m for m in sys.modules if m.startswith('router.cli.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    heavy, cli_modules = out.stdout.strip().splitlines()[-2:]
    assert heavy == "[]", out.stdout + out.stderr
    expected = ["router.cli.main"] + [f"router.cli.{a}" for a in args[:1] if a[0] != "-"]
    # router.cli.options is the commands' shared click options: click only (heavy is [] above).
    shown = [m for m in ast.literal_eval(cli_modules) if m != "router.cli.options"]
    assert shown == sorted(expected)


@pytest.mark.parametrize("args", [["--help"], ["plan", "--help"], ["inventory", "running", "-h"]])
def test_python_dash_m_runs_the_command_line(args: list[str]) -> None:
    # `python -m router.cli.main` once failed with a circular import (router.cli.plan
    # imported the half-run __main__ through router.cli.main).
    outputs = []
    for module in ("router", "router.cli.main"):
        done = subprocess.run(
            [sys.executable, "-m", module, *args], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    assert outputs[0].startswith(f"Usage: router {' '.join(args[:-1])}".rstrip())


def test_the_api_names_stay_functions_after_their_subpackages_are_imported() -> None:
    code = (
        "import router, router.plan.build, router.explain.render, types\n"
        "print(type(router.plan).__name__, type(router.explain).__name__)\n"
        "from router import plan, explain\nprint(plan is router.plan, explain is router.explain)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["function", "function", "True", "True"], out.stderr


def test_markdown_and_text_formats(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["plan", str(EXAMPLE), "--no-write", "--format", "markdown"])
    assert r.exit_code in (0, 3)
    assert r.output.startswith("### router plan")
    assert "| workload | kind | backend |" in r.output
    r = CliRunner().invoke(cli, ["plan", str(EXAMPLE), "--no-write"])
    assert "Plan:" in r.output and "Solver: OPTIMAL" in r.output


def test_schema_commands_print_json() -> None:
    for kind in ("inventory", "workload", "plan"):
        r = CliRunner().invoke(cli, ["schema", kind])
        assert r.exit_code == 0, r.output
        assert isinstance(json.loads(r.output), dict)


def test_same_bytes_across_processes_cwd_hash_seed_and_workers(tmp_path: Path) -> None:
    """Two processes differing in current folder, PYTHONHASHSEED and --workers write the
    same out/ (plan.json included, with a diff) and print the same plan.json."""
    import hashlib
    import os

    repo = Path(__file__).resolve().parents[1]
    previous = tmp_path / "previous.json"
    r = CliRunner().invoke(cli, ["plan", str(EXAMPLE), "--no-write", "--format", "json"])
    previous.write_text(r.stdout)
    runs = []
    for n, (cwd, seed, workers) in enumerate([(repo, "0", "1"), (tmp_path, "4242", "4")]):
        out = tmp_path / f"out{n}"
        project = os.path.relpath(EXAMPLE, cwd)
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "from router.cli.main import main; main()",
                "plan",
                project,
                "-o",
                str(out),
                "--workers",
                workers,
                "--format",
                "json",
                "--previous",
                str(previous),
            ],
            cwd=cwd,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(repo)},
        )
        assert done.returncode == 3, done.stderr
        files = {
            p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*"))
            if p.is_file()
        }
        runs.append((done.stdout, files))
    assert runs[0] == runs[1]
    assert json.loads(runs[0][0])["diff"]["changed"] is False


def test_router_plan_ends_its_process_with_every_byte_out_and_its_exit_code(
    tmp_path: Path,
) -> None:
    """`router plan` ends with os._exit (cli.main._end, no teardown of the plan's objects):
    stdout and stderr are still flushed whole and the exit codes are those of sys.exit."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "router", "plan", str(EXAMPLE), *args]
        return subprocess.run(cmd, capture_output=True, text=True, check=False)

    out = tmp_path / "out"
    done = run("-o", str(out), "--format", "json")
    assert done.returncode == 3  # the example leaves work unplaced
    assert done.stdout == (out / "plan.json").read_text()  # 40 kB through a pipe, all of it
    assert "Solved in" in done.stderr
    same = run("-o", str(out), "--previous", str(out / "plan.json"), "--detailed-exitcode", "-q")
    assert (same.returncode, same.stdout.startswith("Plan: ")) == (0, True)
    bad = run("--detailed-exitcode")  # an error exits as before, through the usual path
    assert bad.returncode == 1 and "--detailed-exitcode needs --previous" in bad.stderr
