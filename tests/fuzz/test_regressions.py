"""The minimal reproducers of the fuzzer (regressions/), each through `router check` and
`router plan` as a user runs them: exit 0, 2 or 3, or 1 with a positioned error; never an
internal error. File names say where the reproducer goes:

- `*.route`: the whole policy of the example platform;
- `workload-*.yaml`: one more workloads file; `inventory-*.yaml`: the inventory;
  `router-*.yaml`: router.yaml;
- `previous-*.json`: a previous plan given to `router plan --previous`;
- `cases-*.yaml`: a `router test` case file (policies/tests/), through `router test`;
- `prove-*.route`: the whole policy, also through `router test` (its `check` blocks proven),
  in a process of its own with at most 4 GB of memory (one of them once ran out of memory).

Most are inputs past a documented limit (docs/limits.md): for those the exit is 1 and the
message names the limit's subject.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from router.cli.main import cli
from tests.fuzz.harness import REPO, check_and_plan, make_project

CASES = Path(__file__).parent / "regressions"
# What the positioned error of each case must say (the cases not listed may also pass).
EXPECT = {
    "quota-on-workload-label.route": "a quota's `on` takes target attributes",
    "deep-sum.route": "nests more than 100 levels",
    "deep-not.route": "more than 100 `not` or `-` in a row",
    "deep-list.route": "nests more than 100 levels",
    "deep-parens-or.route": "nests more than 100 levels",
    "huge-int.route": "too large",
    "huge-quantity.route": "out of range",
    "huge-duration.route": "out of range",
    "huge-percent.route": "out of range",
    "huge-product.route": "out of range",
    "huge-gpus-when.route": "too large",
    "unsafe-qos.route": "`qos` must be letters",
    "unsafe-namespace.route": "`namespace` must be a DNS-1123 label",
    "workload-memory-inf.yaml": "out of range",
    "workload-memory-float-1e400.yaml": "out of range",
    "workload-duration-inf.yaml": "out of range",
    "workload-memory-309-zeros.yaml": "out of range",
    "workload-gpus-5000-digits.yaml": "the number is too long",
    "workload-env-5000-digits.yaml": "the number is too long",
    "workload-int-tag-text.yaml": "is not a valid int",
    "workload-unsafe-workdir.yaml": "workdir: must be letters",
    "workload-duration-clock-huge.yaml": "out of range",
    "workload-deep-flow.yaml": "nest more than 100 deep",
    "workload-deep-dashes.yaml": "nest more than 100 deep",
    "workload-deep-mapping.yaml": "nest more than 100 deep",
    "inventory-memory-inf.yaml": "out of range",
    "inventory-deep-labels.yaml": "nest more than 100 deep",
    "router-list-path.yaml": "policy: expected a path, got a list",
    "router-python-tag.yaml": "unsupported YAML tag",
    "router-duplicate-key.yaml": "is written twice",
    "router-deep.yaml": "nest more than 100 deep",
    "router-create-namespaces-inf.yaml": "router.yaml:2:22: error: kubernetes.create_namespaces",
    "workload-not-utf8.yaml": "zz-fuzz.yaml:2:8: error: the file is not UTF-8 text",
    "router-not-utf8.yaml": "router.yaml:2:8: error: the file is not UTF-8 text",
    "not-utf8.route": "platform.route:2:9: error: the file is not UTF-8 text",
    "previous-deep.json": "nested more than 500 deep",
    "previous-5000-digits.json": "more than 4,300 digits",
    "previous-format-version-2.json": ".json:1:20: error: plan.json format_version '2'",
    "previous-not-an-object.json": ".json:1:1: error: not a plan.json: no placements",
    "previous-not-utf8.json": ".json:1:41: error: not a plan.json: the file is not UTF-8 text",
    "cases-gpus-5000-digits.yaml": "zz-fuzz.yaml:2:36: error: the number is too long",
    "cases-option-5000-digits.yaml": "zz-fuzz.yaml:3:27: error: the number is too long",
    "cases-deep-labels.yaml": "nest more than 100 deep",
    "cases-unknown-expectation.yaml": "zz-fuzz.yaml:3:12: error: case typo: unknown expectation",
    # A case whose workload is invalid fails (the other cases run), at the field.
    "cases-gpus-inf.yaml": "zz-fuzz.yaml:2:36: gpus: must be a whole number",
}
NAMES = sorted(p.name for p in CASES.iterdir() if p.suffix in (".route", ".yaml", ".json"))


def test_every_case_is_listed() -> None:
    assert set(NAMES) >= set(EXPECT)


def _files(name: str, text: bytes) -> tuple[bytes | None, dict[str, str | bytes]]:
    if name.startswith("cases-"):
        return None, {"policies/tests/zz-fuzz.yaml": text}
    if name.endswith(".route"):
        return text, {}
    if name.startswith("workload-"):
        return None, {"workloads/zz-fuzz.yaml": text}
    if name.startswith("router-"):
        return None, {"router.yaml": text}
    assert name.startswith("inventory-"), name
    return None, {"inventory.yaml": text}


@pytest.mark.parametrize("name", [n for n in NAMES if n.startswith("cases-")])
def test_case_file_reproducer(name: str) -> None:
    _, files = _files(name, (CASES / name).read_bytes())
    (outcome,) = check_and_plan(files=files, commands=("test",))
    assert outcome.exception is None or isinstance(outcome.exception, SystemExit)
    assert outcome.code == 1 and "internal error" not in outcome.output
    assert EXPECT[name] in outcome.output, outcome.output[-600:]


def _memory_bound() -> None:  # in the child, before it runs router
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


@pytest.mark.parametrize("name", [n for n in NAMES if n.startswith("prove-")])
def test_proving_reproducer(name: str, tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", (CASES / name).read_bytes())
    r = subprocess.run([sys.executable, "-m", "router", "test", str(project), "--format", "json"],
                       capture_output=True, text=True, timeout=600, preexec_fn=_memory_bound,
                       env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip
    assert r.returncode in (0, 1) and "internal error" not in r.stderr, r.stderr[-600:]
    results = json.loads(r.stdout)["checks"]
    assert results and all(p["status"] != "error" for p in results), results


@pytest.mark.parametrize(
    "name", [n for n in NAMES if not n.endswith(".json") and not n.startswith("cases-")]
)
def test_reproducer(name: str) -> None:
    policy, files = _files(name, (CASES / name).read_bytes())
    for outcome in check_and_plan(policy, files):
        assert outcome.problem() is None, (outcome.command, outcome.problem())
        if name in EXPECT:
            assert outcome.code == 1 and EXPECT[name] in outcome.output, (
                outcome.command,
                outcome.output[-600:],
            )


@pytest.mark.parametrize("name", [n for n in NAMES if n.endswith(".json")])
def test_previous_plan_reproducer(name: str, tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    r = CliRunner().invoke(cli, ["plan", str(project), "-o", str(tmp_path / "out"),
                                 "--previous", str(CASES / name)])  # fmt: skip
    assert r.exception is None or isinstance(r.exception, SystemExit)
    assert r.exit_code == 1 and "internal error" not in r.output
    assert f"{CASES / name}:1:" in r.output and EXPECT[name] in r.output
