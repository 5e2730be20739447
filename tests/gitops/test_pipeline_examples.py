"""The example platform repo's pipeline: the GitHub Actions workflow, the pre-commit hooks,
and the JSON Schemas its YAML files point editors at."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from router.cli.main import cli
from tests.gitops.conftest import EXAMPLE

WORKFLOW = EXAMPLE / ".github" / "workflows" / "router.yml"
PRECOMMIT = EXAMPLE / ".pre-commit-config.yaml"
MODELINE = re.compile(r"^# yaml-language-server: \$schema=(\S+)$", re.MULTILINE)


def _steps() -> list[dict[str, Any]]:
    doc = yaml.safe_load(WORKFLOW.read_text())
    (job,) = doc["jobs"].values()
    steps: list[dict[str, Any]] = job["steps"]
    return steps


def test_workflow_parses_and_runs_the_pipeline() -> None:
    doc = yaml.safe_load(WORKFLOW.read_text())
    assert "pull_request" in doc[True]  # YAML 1.1 reads the key `on` as true
    assert doc["permissions"]["pull-requests"] == "write"
    steps = _steps()
    uses = {s["uses"].split("@")[0]: s for s in steps if "uses" in s}
    assert uses["actions/checkout"]["with"]["fetch-depth"] == 0
    assert uses["actions/setup-python"]["with"]["python-version"] == "3.11"
    assert "createComment" in uses["actions/github-script"]["with"]["script"]
    assert "out/" in uses["actions/upload-artifact"]["with"]["path"]
    runs = [s.get("run", "") for s in steps]
    order = [
        next(i for i, r in enumerate(runs) if cmd in r)
        for cmd in (
            "pip install router",
            "router check",
            "router test",
            "router plan --previous git:origin/main",
        )
    ]
    assert order == sorted(order)
    plan = next(r for r in runs if "router plan" in r)
    assert "--format markdown > plan.md" in plan and "--detailed-exitcode" in plan
    assert "exitcode=$code" in plan


def test_workflow_gate_fails_on_newly_unplaced_workloads(tmp_path: Path) -> None:
    """The gate's Python, run on plan.json files with and without a `!` change."""
    gate = next(s["run"] for s in _steps() if s.get("name") == "Gate on the plan")
    code = gate.split("<<'PY'\n", 1)[1].rsplit("PY", 1)[0]
    (tmp_path / "out").mkdir()
    results = []
    for symbol in ("~", "!"):
        diff = {"changes": [{"symbol": symbol, "workload": "w"}]}
        (tmp_path / "out" / "plan.json").write_text(json.dumps({"diff": diff}))
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True
        )
        results.append(done.returncode)
    assert results == [0, 1]
    assert "0)" in gate and "2)" in gate and "exit 1" in gate


def test_precommit_hooks() -> None:
    doc = yaml.safe_load(PRECOMMIT.read_text())
    (repo,) = doc["repos"]
    assert repo["repo"] == "local"
    entries = {h["id"]: h for h in repo["hooks"]}
    assert entries["router-fmt"]["entry"] == "router fmt --check"
    assert entries["router-check"]["entry"] == "router check"
    assert all(h["language"] == "system" for h in repo["hooks"])
    assert re.search(entries["router-fmt"]["files"], "policies/platform.route")


def test_the_example_passes_router_check() -> None:
    r = CliRunner().invoke(cli, ["check", str(EXAMPLE)])
    assert r.exit_code == 0, r.output


def test_the_example_passes_its_fmt_hook() -> None:
    r = CliRunner().invoke(cli, ["fmt", "--check", str(EXAMPLE / "policies")])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("kind", ["inventory", "workload", "plan"])
def test_schema_files_are_what_router_schema_prints(kind: str) -> None:
    r = CliRunner().invoke(cli, ["schema", kind])
    assert r.exit_code == 0
    path = EXAMPLE / "schemas" / f"{kind}.schema.json"
    assert path.read_text() == r.output, (
        f"{path} is stale: regenerate it with `router schema {kind} > {path}`"
    )


def test_yaml_files_point_editors_at_the_schemas_and_follow_them() -> None:
    files = [EXAMPLE / "inventory.yaml", *sorted((EXAMPLE / "workloads").glob("*.yaml"))]
    assert len(files) > 2
    for f in files:
        text = f.read_text()
        m = MODELINE.search(text.splitlines()[0])
        assert m, f"{f} has no yaml-language-server modeline on its first line"
        schema_path = (f.parent / m.group(1)).resolve()
        kind = "inventory" if f.name == "inventory.yaml" else "workload"
        assert schema_path == (EXAMPLE / "schemas" / f"{kind}.schema.json").resolve()
        schema = json.loads(schema_path.read_text())
        jsonschema.validate(yaml.safe_load(text), schema)


def test_a_plan_follows_the_plan_schema(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["plan", str(EXAMPLE), "--no-write", "--format", "json"])
    schema = json.loads((EXAMPLE / "schemas" / "plan.schema.json").read_text())
    jsonschema.validate(json.loads(r.stdout), schema)
