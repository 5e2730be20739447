"""`router test`: formats, exit codes, coverage output and threshold."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from router.cli.main import cli
from tests.helpers import make_project

DATA = Path(__file__).parent / "data"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ml-platform"
FALSE = """
rule serve: when kind == "inference" route kubernetes with hpa
rule rest: route slurm
check gpu_jobs_on_slurm:
  for gpus > 0
  expect backend == "slurm"
check inference_on_k8s:
  for kind == "inference"
  expect backend == "kubernetes"
"""


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["test", *args])
    return result.exit_code, result.output


def false_project(root: Path) -> Path:
    make_project(root, [], policy=FALSE)
    (root / "policies" / "tests").mkdir()
    shutil.copy(DATA / "cases_fail.yaml", root / "policies" / "tests" / "cases.yaml")
    return root


def test_example_passes() -> None:
    code, out = run(str(EXAMPLE), "--coverage-threshold", "100")
    assert code == 0, out
    assert "PROVEN   big_training_is_exclusive_slurm" in out
    assert "14 passed, 0 failed" in out and "Coverage: 18/18 (100.0%)" in out
    assert out.rstrip().endswith("Result: PASSED")


def test_refuted_property_and_failed_case_exit_1(tmp_path: Path) -> None:
    root = false_project(tmp_path)
    code, out = run(str(root))
    assert code == 1
    assert "REFUTED  gpu_jobs_on_slurm  (policies/policy.route:3)" in out
    assert "decided by rule serve (policies/policy.route:1)" in out
    assert "      name: gpu-jobs-on-slurm\n" in out and "      kind: inference\n" in out
    assert "      gpus: 1\n" in out
    assert "PROVEN   inference_on_k8s" in out
    assert "FAIL big training  (policies/tests/cases.yaml:3)" in out
    assert "backend: expected kubernetes, got slurm" in out
    assert "rule: expected big, got rest" in out


def test_json_and_coverage_json(tmp_path: Path) -> None:
    root = false_project(tmp_path)
    cov_file = tmp_path / "cov.json"
    code, out = run(str(root), "--format", "json", "--coverage-json", str(cov_file))
    assert code == 1
    doc = json.loads(out)
    refuted = next(c for c in doc["checks"] if c["name"] == "gpu_jobs_on_slurm")
    assert refuted["status"] == "refuted"
    assert refuted["counterexample"] == {"name": "gpu-jobs-on-slurm", "kind": "inference",
                                         "gpus": 1}  # fmt: skip
    assert refuted["decided_by_source"] == "policies/policy.route:1"
    assert [c["passed"] for c in doc["cases"]] == [False, True]
    cov = json.loads(cov_file.read_text())
    assert (cov["covered"], cov["total"]) == (4, 4)
    assert cov["items"][0]["source"] == "policies/policy.route:1"


def test_coverage_threshold(tmp_path: Path) -> None:
    make_project(tmp_path, [])  # helpers' policy: 4 rules, 5 route clauses
    tests = tmp_path / "policies" / "tests"
    tests.mkdir()
    (tests / "c.yaml").write_text(
        "- name: big\n  workload: {kind: training, gpus: 8}\n  expect: {rule: big}\n"
    )
    code, out = run(str(tmp_path), "--coverage-threshold", "20")
    assert code == 0, out
    assert "Coverage: 2/9 (22.2%)" in out
    code, out = run(str(tmp_path), "--coverage-threshold", "50")
    assert code == 1
    assert "coverage below the threshold" in out


def test_junit_parses(tmp_path: Path) -> None:
    code, out = run(str(false_project(tmp_path)), "--format", "junit")
    assert code == 1
    root = ET.fromstring(out.split("\n", 1)[1])
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert suites["properties"].get("failures") == "1"
    assert suites["cases"].get("tests") == "2" and suites["cases"].get("failures") == "1"
    failure = root.find(".//testcase[@name='gpu_jobs_on_slurm']/failure")
    assert failure is not None and "kind: inference" in (failure.text or "")


def test_sarif_has_the_required_keys(tmp_path: Path) -> None:
    code, out = run(str(false_project(tmp_path)), "--format", "sarif")
    assert code == 1
    doc = json.loads(out)
    assert doc["version"] == "2.1.0" and "$schema" in doc
    run0 = doc["runs"][0]
    assert run0["tool"]["driver"]["name"] == "router"
    rule_ids = {r["id"] for r in run0["tool"]["driver"]["rules"]}
    assert {r["ruleId"] for r in run0["results"]} <= rule_ids
    for result in run0["results"]:
        assert {"ruleId", "level", "message", "locations"} <= result.keys()
        loc = result["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"].startswith("policies/")
        assert loc["region"]["startLine"] >= 1
    assert {(r["ruleId"], r["level"]) for r in run0["results"]} == {
        ("refuted-property", "error"),
        ("failed-test-case", "error"),
    }


def test_github_annotations(tmp_path: Path) -> None:
    code, out = run(str(false_project(tmp_path)), "--format", "github")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("::error file=policies/policy.route,line=3,title=property ")
    assert "%0A" in lines[0]  # multi-line message escaped
    assert any(x.startswith("::error file=policies/tests/cases.yaml,line=3") for x in lines)
    assert lines[-1].startswith("router test: 1/2 properties proven, 1/2 cases passed")


def test_no_router_yaml_with_options(tmp_path: Path) -> None:
    root = false_project(tmp_path / "p")
    (root / "router.yaml").unlink()
    code, out = run(str(root), "-p", str(root / "policies"), "-i", str(root / "inventory.yaml"),
                    "--no-checks")  # fmt: skip
    assert code == 1 and "Properties" not in out and "Test cases (2)" in out


CASE = "- name: c\n  workload: {kind: training, %s}\n  expect: {rule: rest}\n"


def _cases_project(root: Path, text: str | bytes) -> Path:
    make_project(root, [], policy="rule rest: route slurm\n")
    (root / "policies" / "tests").mkdir()
    data = text if isinstance(text, bytes) else text.encode()
    (root / "policies" / "tests" / "c.yaml").write_bytes(data)
    return root


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (CASE % ("gpus: 1" + "0" * 5000), "c.yaml:2:36:", "the number is too long"),
        (CASE % ("labels: " + "{a: " * 300 + "1" + "}" * 300), "c.yaml:2:", "nest more than 100"),
        ("- " * 3000 + "x\n", "c.yaml:1:", "nest more than 100"),
        ("- name: c\n  expect: {rule: [}\n- name: d\n", "c.yaml:2:19:", "invalid YAML"),
        (b"- name: c\xff\n", "c.yaml:1:10:", "not UTF-8"),
        ("- name: c\n  workload: {}\n  expect: {rlue: rest}\n", "c.yaml:3:12:", '"rlue"'),
        ("- name: c\n  workload: [1]\n  expect: {rule: rest}\n", "c.yaml:2:3:", "a mapping"),
        ("- name: c\n  expect: {rule: rest}\n- name: c\n  expect: {rule: x}\n", "c.yaml:3:3:",
         "defined twice"),
        ("- name: c\n  expect: {rule: rest}\n---\n- name: d\n", "c.yaml:4:1:", "one YAML document"),
    ],
)  # fmt: skip
def test_a_bad_case_file_is_a_positioned_error(
    tmp_path: Path, text: str | bytes, where: str, message: str
) -> None:
    code, out = run(str(_cases_project(tmp_path, text)))
    assert code == 1 and "internal error" not in out, out
    assert f"policies/tests/{where}" in out and message in out and "^" in out, out


def test_an_invalid_case_workload_fails_at_its_field(tmp_path: Path) -> None:
    text = CASE % "gpus: .inf" + CASE.replace("name: c", "name: d") % "gpus: 2"
    code, out = run(str(_cases_project(tmp_path, text)), "--no-checks")
    assert code == 1 and "1 passed, 1 failed" in out, out
    assert "invalid workload: " in out and "/c.yaml:2:36: gpus: must be a whole number" in out
