"""router.assure.analysis: each finding kind, its line and its witness."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from router.assure.analysis import Finding, analyze
from router.assure.encode import (
    encode_condition,
    encode_workload_space,
    minimal_witness,
    satisfiable,
    witness_document,
)
from router.language import check_policy, parse_files
from router.models import Inventory, Workload
from tests.helpers import INVENTORY

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ml-platform"


def run(tmp_path: Path, policy: str, inventory: dict[str, Any] | None = None) -> list[Finding]:
    path = tmp_path / "p.route"
    path.write_text(textwrap.dedent(policy).lstrip())
    raw = parse_files([path])
    checked = check_policy(parse_files([path]))
    return analyze(checked, Inventory.model_validate(inventory or INVENTORY), raw)


def codes(findings: list[Finding]) -> list[tuple[str, str, int]]:
    return [(f.severity, f.code, f.line) for f in findings]


def test_example_platform_has_no_errors() -> None:
    from router.config import load_project
    from router.plan.build import load_inputs

    inputs = load_inputs(load_project(EXAMPLE))
    findings = analyze(inputs.policy, inputs.inventory)
    assert [f for f in findings if f.severity == "error"] == []


def test_rule_shadowed_by_earlier_rule_with_minimal_witness(tmp_path: Path) -> None:
    found = run(
        tmp_path,
        """
        rule training:
          when kind == "training"
          route slurm
        rule big_training:
          when kind == "training" and gpus >= 8
          route slurm with exclusive
        rule rest:
          route any
    """,
    )
    [f] = [f for f in found if f.code == "unreachable-rule"]
    assert (f.severity, f.line, f.column) == ("error", 4, 6)
    assert "claimed by the earlier rule `training`" in f.message
    assert f.witness is not None
    assert f.witness["kind"] == "training" and f.witness["gpus"] == 8  # fewest GPUs that match
    assert "nodes" not in f.witness


def test_a_witness_of_an_approximated_condition_is_not_said_to_match(tmp_path: Path) -> None:
    # `gpus / 0` is undefined (the condition is false for every workload), which the
    # encoding cannot read exactly: its witness does not match `never`, and the hint says so.
    found = run(
        tmp_path,
        """
        rule serve: when kind == "inference" route kubernetes
        rule rest: route any
        rule never: when gpus / 0 > 1 route slurm
    """,
    )
    [f] = [f for f in found if f.code == "unreachable-rule"]
    assert "claimed by the earlier rule" in f.message and f.witness is not None
    assert f.hint is not None and "the witness matches" not in f.hint
    assert "holds for it only as router check reads it" in f.hint


def test_rule_shadowed_by_several_rules_together(tmp_path: Path) -> None:
    found = run(
        tmp_path,
        """
        rule small: when gpus < 4 → slurm
        rule large: when gpus >= 4 → slurm
        rule never: when kind == "batch" → kubernetes
    """,
    )
    [f] = [f for f in found if f.code == "unreachable-rule"]
    assert f.line == 3 and "`small`" in f.message and "`large`" in f.message


def test_rule_shadowed_by_deny(tmp_path: Path) -> None:
    found = run(
        tmp_path,
        """
        deny big_notebooks:
          when kind == "notebook" and gpus > 1
          because "no"
        rule gpu_notebooks:
          when kind == "notebook" and gpus >= 2
          route kubernetes
        rule rest: route any
    """,
    )
    [f] = [f for f in found if f.code == "unreachable-rule"]
    assert f.line == 4 and "denied by `big_notebooks`" in f.message
    assert f.witness == {
        "name": "witness",
        "kind": "notebook",
        "image": "registry.example/app:1",
        "gpus": 2,
    }


def test_contradictory_when(tmp_path: Path) -> None:
    found = run(
        tmp_path,
        """
        rule never: when gpus > 4 and gpus < 3 → slurm
        rule rest: route any
    """,
    )
    assert codes(found) == [("error", "unreachable-rule", 1)]
    assert "never true" in found[0].message


def test_reachable_rules_are_not_reported(tmp_path: Path) -> None:
    found = run(
        tmp_path,
        """
        let big = 8
        rule big: when kind == "training" and gpus >= big → slurm exclusive
        rule small: when kind == "training" → slurm
        rule long: when duration > 24h and memory >= 64GiB → slurm
        rule labelled: when labels.tier == "prod" or "gpu" in labels → kubernetes
        rule rest: route any
    """,
    )
    assert [f for f in found if f.severity == "error"] == []


def test_unrouted_workloads_get_a_witness(tmp_path: Path) -> None:
    found = run(
        tmp_path,
        """
        rule training: when kind == "training" → slurm
    """,
    )
    [f] = [f for f in found if f.code == "unrouted"]
    assert f.severity == "info" and f.witness is not None and f.witness["kind"] != "training"


def test_route_that_fits_no_target(tmp_path: Path) -> None:
    found = run(
        tmp_path,
        """
        rule h200:
          when kind == "training"
          route slurm where gpu_type == "h200"
        rule big_services:
          when kind == "inference" and gpus >= 16
          route kubernetes
          else route kubernetes where cluster == "k8s"
        rule eval:
          when kind == "eval"
          route slurm where gpu_type == "h200"
          else route any
        rule rest: route any
    """,
    )
    dead = [(f.severity, f.line) for f in found if f.code == "route-never-fits"]
    # a service replica must fit one node; no pool has 16 GPUs per node
    assert dead == [("error", 3), ("error", 6), ("error", 7), ("warning", 10)]


def test_backend_without_targets(tmp_path: Path) -> None:
    inventory = {"clusters": [INVENTORY["clusters"][0]]}
    found = run(tmp_path, "rule serve: route kubernetes\n", inventory)
    [f] = found
    assert f.code == "route-never-fits" and "no kubernetes target" in f.message


def test_ignored_options(tmp_path: Path) -> None:
    found = run(
        tmp_path,
        """
        rule a: when kind == "training" route any with exclusive
        rule b: when kind == "batch" route any with exclusive where backend == "slurm"
        rule c: when kind == "eval" route kubernetes with hpa
        rule d: when kind == "inference" route kubernetes with operator = "jobset"
        rule rest: route any
    """,
    )
    ignored = [(f.line, f.message.split("`")[1]) for f in found if f.code == "ignored-option"]
    assert ignored == [(1, "exclusive"), (4, "operator")]
    # `hpa` on kind eval is not ignored: an eval with replicas is a service


def test_unused_constant_even_when_options_fold_constants(tmp_path: Path) -> None:
    found = run(
        tmp_path,
        """
        let unused = 3
        let hi = "high"
        let days = 2d
        rule a: route slurm with qos = hi, time = days
    """,
    )
    assert [(f.code, f.line) for f in found if f.code == "unused-constant"] == [
        ("unused-constant", 1)
    ]


def test_quotas_that_never_bind(tmp_path: Path) -> None:
    found = run(
        tmp_path,
        """
        deny big_notebooks:
          when kind == "notebook" and gpus > 1
          because "no"
        rule a: route any
        quota huge:
          limit gpus <= 1000
        quota all_of_it:
          on cluster == "hpc"
          limit gpus <= 100%
        quota nobody:
          for kind == "notebook" and gpus > 4
          limit gpus <= 4
        quota nowhere:
          on cluster == "mars"
          limit gpus <= 4
        quota fine:
          for team == "research"
          limit gpus <= 8
    """,
    )
    lines = [f.line for f in found if f.code == "quota-never-binds"]
    assert lines == [6, 9, 11, 15]


def test_duplicate_names_across_files_are_errors(tmp_path: Path) -> None:
    from router.errors import RouterError

    (tmp_path / "a.route").write_text("rule same: route slurm\n")
    (tmp_path / "b.route").write_text("rule other: route slurm\nrule same: route any\n")
    with pytest.raises(RouterError) as info:
        check_policy(parse_files([tmp_path / "a.route", tmp_path / "b.route"]))
    text = info.value.format()
    assert "b.route:2" in text and "defined twice" in text and "a.route:1" in text


@pytest.mark.parametrize(
    "condition",
    [
        'kind == "training" and gpus >= 8',
        'kind in ["batch", "eval"] and not (team == "research")',
        "gpus * 2 > cpus + 3 and duration <= 2d",
        'labels.tier != "prod" and nodes >= 2 and gpus_per_node == 4',
        "memory / 2 >= 64GiB or priority > 4",
    ],
)
def test_witness_satisfies_the_condition(tmp_path: Path, condition: str) -> None:
    """The witness document, loaded as a real workload, makes the evaluator agree."""
    from router.evaluate.expr import compile_expr
    from router.evaluate.views import workload_view

    path = tmp_path / "p.route"
    path.write_text(f"rule r: when {condition} → slurm\n")
    policy = check_policy(parse_files([path]))
    space = encode_workload_space(policy)
    lit = encode_condition(space, policy.rules[0].when)
    w = minimal_witness(space, [lit])
    assert w is not None and space.approximate == []
    doc = witness_document(space, w)
    view = workload_view(Workload.model_validate(doc))
    assert compile_expr(policy.rules[0].when, policy.constants)(view, {}) is True  # type: ignore[arg-type]
    assert not satisfiable(space, [lit, lit.Not()])
