"""`router test`: prove the policy's `check` blocks and run its YAML test cases, with coverage.

Exit 0 when every property holds (proven, or not refuted by enumeration) and every case
passes (and coverage meets --coverage-threshold); 1 otherwise, or on invalid input.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from router.cli.main import EXIT_INVALID, reports_errors


@click.command("test")
@click.argument("directory", default=".", type=click.Path(file_okay=False))
@click.option(
    "-p", "--policy", type=click.Path(exists=True), help="Policy file or folder of .route files."
)
@click.option(
    "-i", "--inventory", type=click.Path(exists=True, dir_okay=False), help="Inventory YAML."
)
@click.option(
    "--cases",
    "cases_path",
    type=click.Path(exists=True),
    help="Test case file or folder (default: tests/ in the policy folder).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "junit", "sarif", "github"]),
    default="text",
    show_default=True,
    help="Output format.",
)
@click.option(
    "--coverage-json",
    type=click.Path(dir_okay=False),
    help="Write rule and route coverage of the test cases as JSON to FILE.",
)
@click.option(
    "--coverage-threshold",
    type=click.FloatRange(0, 100),
    default=None,
    help="Fail (exit 1) when coverage is below N percent.",
)
@click.option("--no-checks", is_flag=True, help="Run only the test cases, not the properties.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write the report to FILE instead of standard output.",
)
@reports_errors
def test(directory: str, policy: str | None, inventory: str | None, cases_path: str | None,
         fmt: str, coverage_json: str | None, coverage_threshold: float | None,
         no_checks: bool, output: str | None) -> None:  # fmt: skip
    """Prove the `check` blocks of DIRECTORY's policy and run its test cases."""
    import json

    import router
    from router.assure.coverage import coverage
    from router.assure.report_test import RENDERERS
    from router.config import load_project

    # Workloads are not needed (router.test reads only the policy and the inventory): a
    # placeholder keeps router.yaml optional.
    project = load_project(directory, policy=policy, inventory=inventory,
                           workloads=directory if policy and inventory else None)  # fmt: skip
    platform = router.Platform(project)
    report = router.test(
        platform,
        Path(cases_path) if cases_path else None,
        checks=not no_checks,
        coverage_threshold=coverage_threshold,
    )
    pol, checks, cases, cov = platform.policy, report.checks, report.cases, report.coverage

    def rel(source: str) -> str:
        path, _, line = source.rpartition(":")
        return f"{project.relative(path)}:{line}" if line.isdigit() else project.relative(source)

    if coverage_json:
        doc = (cov or coverage(pol, [])).to_json()
        for item in doc["items"]:
            item["source"] = rel(item["source"])
        Path(coverage_json).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    text = RENDERERS[fmt](report, rel)
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)
    if not checks and not cases and fmt == "text":
        click.echo("router test: no `check` blocks and no test cases found", err=True)
    if not report.ok:
        sys.exit(EXIT_INVALID)
