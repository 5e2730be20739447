"""router check's literal checks: values no workload or target has, and memory spellings."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from router.assure.analysis import Finding, analyze
from router.assure.literals import yaml_unit_findings
from router.cli.main import cli
from router.language import check_policy, parse_files
from router.models import Inventory, Workload
from tests.fuzz.harness import make_project
from tests.helpers import INVENTORY

WORKLOADS = [Workload.model_validate(w) for w in (
    {"name": "t1", "kind": "training", "team": "vision", "image": "x:1", "labels": {"app": "web"}},
    {"name": "s1", "kind": "inference", "team": "llm", "image": "x:1"},
)]  # fmt: skip


def findings(tmp_path: Path, policy: str, workloads: list[Workload] | None = WORKLOADS,
             ) -> list[Finding]:  # fmt: skip
    path = tmp_path / "p.route"
    path.write_text(textwrap.dedent(policy).lstrip())
    checked = check_policy(parse_files([path]))
    return analyze(checked, Inventory.model_validate(INVENTORY), parse_files([path]), workloads)


def unknown(found: list[Finding]) -> list[tuple[int, int, str, str | None]]:
    return [(f.line, f.column, f.message, f.hint) for f in found if f.code == "unknown-value"]


def test_misspelt_values_get_did_you_mean(tmp_path: Path) -> None:
    found = unknown(
        findings(
            tmp_path,
            """
        rule typo:
          when kind == "trainig" and team in ["vision", "visoin"]
          route kubernetes where cluster == "k8z" and "ibb" in features
        rule rest: route any
    """,
        )
    )
    assert found == [
        (2, 16, 'no workload has kind "trainig"', 'did you mean "training"?'),
        (2, 49, 'no workload has team "visoin"', 'did you mean "vision"?'),
        (3, 37, 'no target has cluster "k8z"', 'did you mean "k8s"?'),
        (3, 47, 'no target has features "ibb"', 'did you mean "ib"?'),
    ]
    assert all(
        f.severity == "warning"
        for f in findings(tmp_path, 'rule r: when kind == "x" route any')
        if f.code == "unknown-value"
    )


def test_known_values_and_constants_are_not_reported(tmp_path: Path) -> None:
    found = findings(
        tmp_path,
        """
        let kinds = ["training", "notebook"]
        rule a: when kind in kinds and labels.app == "web" → slurm
        rule b: when gpu_type == "h100" or team == "default" → kubernetes where cluster == "k8s"
        rule c: when kind == "batch" → any where name != "h100"
        rule rest: route any
    """,
    )
    assert unknown(found) == []


def test_a_constant_with_a_misspelt_value_is_reported_where_it_is_used(tmp_path: Path) -> None:
    found = unknown(findings(tmp_path, 'let k = "trainnig"\nrule a: when kind == k route any\n'))
    assert [(line, hint) for line, _, _, hint in found] == [(2, 'did you mean "training"?')]


def test_misspelt_outcomes_in_expect_get_did_you_mean(tmp_path: Path) -> None:
    # Each typo would make its check hold for nothing it was meant for (PROVEN, vacuously).
    found = unknown(
        findings(
            tmp_path,
            """
        rule train: when kind == "training" route slurm
        rule rest: route any
        check c:
          for kind == "training"
          expect rule == "trian" or cluster != "k8z" or target != "h100" or backend == "slrum"
        check known:
          for kind == "training"
          expect rule in ["train", "rest"] and cluster != "k8s" and target != "hpc/h100"
    """,
        )
    )
    assert found == [
        (5, 18, 'no rule is named "trian"', 'did you mean "train"?'),
        (5, 40, 'no target has cluster "k8z"', 'did you mean "k8s"?'),
        (5, 59, 'no target is "h100"', 'did you mean "hpc/h100"?'),
        (5, 80, 'no backend is "slrum"', 'did you mean "slurm"?'),
    ]


def test_without_workloads_only_targets_and_kinds_are_checked(tmp_path: Path) -> None:
    found = unknown(
        findings(
            tmp_path,
            """
        rule a: when team == "nobody" and kind == "trainig" → kubernetes where cluster == "k9s"
    """,
            workloads=None,
        )
    )
    assert [m for _, _, m, _ in found] == [
        'no workload has kind "trainig"',
        'no target has cluster "k9s"',
    ]


def test_decimal_memory_in_the_policy_says_what_it_is_read_as(tmp_path: Path) -> None:
    found = [f for f in findings(tmp_path, "rule a: when memory > 64GB route any\n")
             if f.code == "decimal-unit"]  # fmt: skip
    assert len(found) == 1 and (found[0].line, found[0].column) == (1, 23)
    assert "read as 61,036 MiB" in found[0].message and "GiB for binary" in found[0].message


@pytest.mark.parametrize(
    ("text", "where", "said"),
    [
        (
            "- {name: a, kind: batch, memory: 64}\n- name: b\n  memory: 64GB\n"
            "- {name: c, memory: 64GiB}\n- {name: d, memory: '512'}\n",
            [(1, 34, "memory-unit"), (3, 11, "memory-unit"), (5, 21, "memory-unit")],
            ["read as MiB: 64 MiB", "read as 61,036 MiB", '"512" without a unit is read as MiB'],
        ),
        (
            "- {name: a, duration: 64}\n- name: b\n  duration: 120\n"
            "- {name: c, duration: 64h}\n- {name: d, duration: '1h'}\n",
            [(1, 23, "duration-unit"), (3, 13, "duration-unit")],
            [
                "duration: a bare number is read as minutes: 64 is 64min; write the unit, such"
                " as 64min or 64h",
                "120 is 2h",
            ],
        ),
        (  # a partition's limits too
            "clusters:\n- name: hpc\n  partitions:\n  - {name: p, max_time: 90}\n",
            [(4, 25, "duration-unit")],
            ["max_time: a bare number is read as minutes: 90 is 90min"],
        ),
    ],
)
def test_memory_and_durations_in_yaml_without_unit_or_in_decimal_units(
    tmp_path: Path, text: str, where: list[tuple[int, int, str]], said: list[str]
) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(text)
    found = yaml_unit_findings([(path, "w.yaml")])
    assert [(f.line, f.column, f.code) for f in found] == where
    for f, words in zip(found, said, strict=True):
        assert words in f.message, f.message


def test_router_check_reports_them(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    policy = project / "policies" / "platform.route"
    policy.write_text(
        policy.read_text().replace('cluster == "k8s-prod"', 'cluster == "k8s-prd"', 1)
    )
    (project / "workloads" / "zz.yaml").write_text("name: zz\nkind: batch\nmemory: 64\n")
    r = CliRunner().invoke(cli, ["check", str(project)])
    assert r.exit_code == 1, r.output  # the misspelt cluster leaves the route no target
    assert 'no target has cluster "k8s-prd"' in r.output and 'did you mean "k8s-prod"?' in r.output
    assert "zz.yaml:3:9: warning: memory: a bare number is read as MiB" in r.output
    policy.write_text(policy.read_text().replace('"k8s-prd"', '"k8s-prod"'))
    assert CliRunner().invoke(cli, ["check", str(project)]).exit_code == 0  # a warning only
    assert CliRunner().invoke(cli, ["check", "--strict", str(project)]).exit_code == 1


def test_router_check_warns_of_a_bare_duration_with_a_caret(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    (project / "workloads" / "zz.yaml").write_text("name: zz\nkind: batch\nduration: 64\n")
    r = CliRunner().invoke(cli, ["check", str(project)])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    at = lines.index(
        f"{project / 'workloads' / 'zz.yaml'}:3:11: warning: duration: a bare number is read as"
        " minutes: 64 is 64min; write the unit, such as 64min or 64h [duration-unit]"
    )
    assert lines[at + 1 : at + 3] == ["    3 | duration: 64", "      |           ^^"]


def test_lower_case_decimal_units_suggest_binary_and_name_the_decimal_reading(
    tmp_path: Path,
) -> None:
    hint = 'did you mean "64GiB"? (binary, 1024^3 bytes; "64GB" is decimal, 1000^3 bytes)'
    project = make_project(tmp_path / "p")
    policy = project / "policies" / "platform.route"
    policy.write_text(policy.read_text() + "\nrule big: when memory > 64gb route any\n")
    r = CliRunner().invoke(cli, ["check", str(project)])
    assert r.exit_code == 1 and "unknown unit `gb` in `64gb`" in r.output
    assert f"  {hint}" in r.output.splitlines()
    project = make_project(tmp_path / "q")
    (project / "workloads" / "zz.yaml").write_text("name: zz\nkind: batch\nmemory: 64gb\n")
    r = CliRunner().invoke(cli, ["check", str(project)])
    assert r.exit_code == 1 and f'got "64gb"; {hint}' in r.output, r.output
    # Not a duration unit for memory: 64M is no "64m" (minutes).
    (project / "workloads" / "zz.yaml").write_text("name: zz\nkind: batch\nmemory: 64M\n")
    r = CliRunner().invoke(cli, ["check", str(project)])
    assert r.exit_code == 1 and "did you mean" not in r.output
