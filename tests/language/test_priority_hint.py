"""`priority == "low"` in a rule: the error says priority is a number and how to write it
(the audit's A9: a user reads `priority: low` in workloads and writes the word)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from router.cli.main import cli
from router.models.fields import PRIORITIES
from tests.helpers import job, make_project


def test_a_priority_word_in_a_comparison_says_its_number(tmp_path: Path) -> None:
    for word, number in PRIORITIES.items():
        policy = f'policy p\nrule r: when priority >= "{word}" -> any\n'
        root = make_project(tmp_path / word, [job("a")], policy=policy)
        r = CliRunner().invoke(cli, ["plan", str(root), "--no-write"])
        assert r.exit_code == 1
        assert "cannot compare `priority` (a number) with" in r.output
        assert f"write `priority >= {number}`" in r.output
        assert "Traceback" not in r.output


def test_another_string_gets_no_priority_hint(tmp_path: Path) -> None:
    root = make_project(tmp_path, [job("a")], policy='policy p\nrule r: when gpus == "x" -> any\n')
    r = CliRunner().invoke(cli, ["plan", str(root), "--no-write"])
    assert r.exit_code == 1 and "priority is a number" not in r.output
