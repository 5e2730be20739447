"""YAML test cases: loading, pass/fail with per-field diffs, and coverage."""

from __future__ import annotations

from pathlib import Path

import pytest

from router.assure.cases import load_cases, run_cases
from router.assure.coverage import coverage
from router.errors import LoadError
from router.evaluate.evaluate import Evaluator
from router.evaluate.quota import compile_quotas
from router.language import load_policy
from router.models import load_inventory
from tests.helpers import make_project

DATA = Path(__file__).parent / "data"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ml-platform"


def setup(root: Path, policy: str | None = None):  # type: ignore[no-untyped-def]
    make_project(root, [], policy=policy) if policy else make_project(root, [])
    pol = load_policy(root / "policies")
    inv = load_inventory(root / "inventory.yaml")
    return pol, Evaluator(pol, inv), compile_quotas(pol, inv)


def test_example_cases_pass_with_full_coverage() -> None:
    pol = load_policy(EXAMPLE / "policies")
    inv = load_inventory(EXAMPLE / "inventory.yaml")
    cases = load_cases(EXAMPLE / "policies" / "tests")
    assert len(cases) >= 8
    results = run_cases(Evaluator(pol, inv), compile_quotas(pol, inv), cases)
    assert [r.case.name for r in results if not r.passed] == []
    cov = coverage(pol, results)
    assert cov.percent == 100.0
    assert cov.by_kind() == {"deny": (2, 2), "rule": (7, 7), "route": (9, 9)}


def test_failing_cases_show_per_field_diffs(tmp_path: Path) -> None:
    _, ev, quotas = setup(tmp_path)
    cases = load_cases(DATA / "cases_fail.yaml")
    assert cases[0].source.endswith("cases_fail.yaml:3")
    big, serving = run_cases(ev, quotas, cases)
    assert not big.passed
    assert big.diffs == [("backend", "kubernetes", "slurm")]
    assert serving.passed
    assert big.got is not None and big.got.target is not None
    assert big.got.options == {"exclusive": True}


def test_targets_options_denial_and_unplaced(tmp_path: Path) -> None:
    policy = """
    deny nb: when kind == "notebook" and gpus > 1 because "notebooks get one GPU"
    rule big: when kind == "training" and gpus >= 8 → slurm with exclusive, qos = "high"
      where gpu_type == "h100"
    rule small: when kind == "training" route slurm where gpus_per_node >= 100
      else route kubernetes with queue = "train"
    rule rest: route any prefer lower cost
    """
    pol, ev, quotas = setup(tmp_path, policy)
    (tmp_path / "c.yaml").write_text("""
- name: big
  workload: {kind: training, gpus: 8}
  expect: {target: h100, cluster: hpc, options: {exclusive: true, qos: high, queue: null}}
- name: fallback
  workload: {kind: training, gpus: 1}
  expect: {rank: 1, backend: kubernetes, target: k8s/l4, options: {queue: train}}
- name: denied
  workload: {kind: notebook, gpus: 2}
  expect: {denied: true, rule: nb, message: one GPU}
- name: too big
  workload: {kind: training, gpus: 64}
  expect: {rule: big, unplaced: true}
- name: wrong
  workload: {kind: notebook, gpus: 2}
  expect: {denied: false, message: two GPUs}
- name: bad workload
  workload: {gpus: -1}
  expect: {rule: rest}
""")
    results = {r.case.name: r for r in run_cases(ev, quotas, load_cases(tmp_path / "c.yaml"))}
    for name in ("big", "fallback", "denied", "too big"):
        assert results[name].passed, (name, results[name].diffs)
    assert results["wrong"].diffs == [
        ("denied", False, True),
        ("message", "two GPUs", "notebooks get one GPU"),
    ]
    assert not results["bad workload"].passed
    assert "gpus" in results["bad workload"].error
    cov = coverage(pol, list(results.values()))
    by = {(i.kind, i.name): i for i in cov.items}
    assert by[("deny", "nb")].covered_by == ["denied", "wrong"]
    assert by[("route", "small else route kubernetes")].covered_by == ["fallback"]
    assert not by[("route", "small route slurm")].covered
    assert not by[("rule", "rest")].covered
    assert cov.by_kind() == {"deny": (1, 1), "rule": (2, 3), "route": (2, 4)}
    assert round(cov.percent, 1) == 62.5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- name: a\n  workload: {}\n  expect: {backnd: slurm}\n", 'unknown expectation "backnd"'),
        ("- name: a\n  expect: {}\n", "`expect` must name"),
        ("- {workload: {}, expect: {rule: r}}\n", "needs a `name`"),
        ("- name: a\n  expect: {rule: r}\n- name: a\n  expect: {rule: r}\n", "defined twice"),
        ("cases: 3\n", "expected a list"),
    ],
)
def test_invalid_case_files(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(text)
    with pytest.raises(LoadError) as err:
        load_cases(f)
    assert message in err.value.format()


def test_misspelt_expectation_has_a_hint(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("- name: a\n  workload: {}\n  expect: {backnd: slurm}\n")
    with pytest.raises(LoadError) as err:
        load_cases(f)
    text = err.value.format()
    assert "backend" in text and ":1" in text
