"""policies/default.route, the starting policy router ships: formatted, clean under
`router check`, and it plans the example platform."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from router.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "policies" / "default.route"


def test_default_policy_is_formatted() -> None:
    r = CliRunner().invoke(cli, ["fmt", "--check", str(DEFAULT)])
    assert r.exit_code == 0, r.output


def test_default_policy_checks_and_plans_the_example(tmp_path: Path) -> None:
    project = tmp_path / "platform"
    shutil.copytree(ROOT / "examples" / "ml-platform", project)
    for old in (project / "policies").glob("*.route"):
        old.unlink()
    shutil.rmtree(project / "policies" / "tests")  # the example's cases are about its rules
    shutil.copy(DEFAULT, project / "policies")
    r = CliRunner().invoke(cli, ["check", str(project)])
    assert r.exit_code == 0 and r.output.startswith(
        "ok: 6 rules, 1 deny rules, 1 quotas, 1 spreads, 1 checks;"
    ), r.output
    r = CliRunner().invoke(cli, ["plan", str(project), "--no-write"])
    assert r.exit_code in (0, 3), r.output
    assert "Solver: OPTIMAL" in r.output
    r = CliRunner().invoke(cli, ["test", str(project)])
    assert r.exit_code == 0, r.output
    assert "big_training_is_exclusive_slurm" in r.output and "PROVEN" in r.output, r.output
