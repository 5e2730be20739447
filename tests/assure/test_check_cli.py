"""`router check`: formats, exit codes, --strict, and the example platform."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from click.testing import CliRunner

from router.cli.main import cli
from tests.helpers import make_project

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ml-platform"
SHADOWED = """
rule training:
  when kind == "training"
  route slurm
rule big_training:
  when kind == "training" and gpus >= 8
  route slurm with exclusive
rule rest: route any
"""
WARN_ONLY = "let unused = 1\nrule rest: route any\n"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["check", *args])
    return result.exit_code, result.output


def test_example_has_no_errors() -> None:
    code, out = run(str(EXAMPLE))
    assert code == 0, out
    assert out.strip().startswith("ok: 7 rules")


def test_shadowed_rule_fails_with_line_and_witness(tmp_path: Path) -> None:
    root = make_project(tmp_path, [], policy=SHADOWED)
    code, out = run(str(root))
    assert code == 1
    assert "policy.route:4:6: error: rule `big_training` can never match" in out
    assert "witness workload:" in out and "gpus: 8" in out


def test_findings_show_the_source_line_and_a_caret(tmp_path: Path) -> None:
    code, out = run(str(make_project(tmp_path, [], policy=SHADOWED)))
    assert code == 1
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if "can never match" in line)
    # The same rendering as an error's: the line under a gutter, carets under the rule's name.
    assert lines[at + 1 : at + 3] == [
        "    4 | rule big_training:",
        "      |      ^^^^^^^^^^^^",
    ], out
    _code, out = run(str(make_project(tmp_path / "w", [], policy=WARN_ONLY)))
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if "is never used" in line)
    assert lines[at + 1].endswith("| let unused = 1") and lines[at + 2].endswith("^^^^^^"), out
    _code, out = run(str(make_project(tmp_path / "j", [], policy=SHADOWED)), "--format", "json")
    # JSON findings keep their fields: no source text in them.
    assert set(json.loads(out)["findings"][0]) == {
        "severity",
        "code",
        "message",
        "file",
        "line",
        "column",
        "hint",
        "witness",
    }


def test_json(tmp_path: Path) -> None:
    code, out = run(str(make_project(tmp_path, [], policy=SHADOWED)), "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["summary"]["error"] == 1
    [f] = doc["findings"]
    assert f["line"] == 4 and f["code"] == "unreachable-rule" and f["witness"]["gpus"] == 8


def test_github(tmp_path: Path) -> None:
    _code, out = run(str(make_project(tmp_path, [], policy=SHADOWED)), "--format", "github")
    first = out.splitlines()[0]
    assert first.startswith("::error file=") and ",line=4,col=6," in first
    assert "policy.route" in first and "\n" not in first


def test_sarif(tmp_path: Path) -> None:
    _code, out = run(str(make_project(tmp_path, [], policy=SHADOWED)), "--format", "sarif")
    doc = json.loads(out)
    [result] = doc["runs"][0]["results"]
    assert doc["version"] == "2.1.0" and result["level"] == "error"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 4


def test_junit(tmp_path: Path) -> None:
    _code, out = run(str(make_project(tmp_path, [], policy=SHADOWED)), "--format", "junit")
    suite = ET.fromstring(out).find("testsuite")
    assert suite is not None and suite.get("failures") == "1"


def test_warnings_fail_only_with_strict(tmp_path: Path) -> None:
    root = str(make_project(tmp_path, [], policy=WARN_ONLY))
    code, out = run(root)
    assert code == 0 and "warning: constant `unused` is never used" in out
    code, _ = run(root, "--strict")
    assert code == 1
    code, out = run(root, "--format", "junit")
    assert code == 0 and 'failures="0"' in out


def test_load_errors_keep_caret_in_text_and_become_findings(tmp_path: Path) -> None:
    root = make_project(tmp_path, [], policy="rule a: route slurm\nrule a: route any\n")
    code, out = run(str(root))
    assert code == 1 and "defined twice" in out and "^" in out
    code, out = run(str(root), "--format", "json")
    assert code == 1 and json.loads(out)["findings"][0]["line"] == 2


def test_duplicate_across_files(tmp_path: Path) -> None:
    root = make_project(tmp_path, [], policy="rule a: route slurm\n")
    (root / "policies" / "z.route").write_text("rule a: route any\n")
    code, out = run(str(root), "--format", "json")
    [f] = json.loads(out)["findings"]
    assert code == 1 and f["file"].endswith("z.route") and "defined twice" in f["message"]
