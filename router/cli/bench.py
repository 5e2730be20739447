"""`router bench`: plan a seeded synthetic platform and report time, memory and quality."""

from __future__ import annotations

import json
from pathlib import Path

import click

from router.cli.main import reports_errors
from router.cli.options import flag, workers_option


@click.command()
@click.option(
    "--size",
    type=click.Choice(["S", "M", "L", "XL", "adversarial", "wide"]),
    default="S",
    show_default=True,
    help="Platform size (workloads × targets).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Generator seed.")
@flag(
    "--churn", help="Also change 1% of the workloads and re-plan with the first plan as previous."
)
@workers_option(2)
@flag("--no-emit", help="Skip writing the artifacts in memory.")
@flag(
    "--project",
    "as_project",
    help="Write the platform as a project folder and time `router plan` on it end to end.",
)
@click.option(
    "--keep",
    type=click.Path(file_okay=False, path_type=Path),
    help="With --project: write the folder here and keep it (out/ included).",
)
@flag("--json", "as_json", help="Print one JSON object.")
@flag(
    "--check", "check_only", help="Time `router check` on a generated policy instead of planning."
)
@click.option(
    "--rules",
    type=click.IntRange(1, 100_000),
    default=100,
    show_default=True,
    help="With --check: the number of rules of the generated policy.",
)
@click.option(
    "--partitions",
    type=click.IntRange(0, 1_000_000),
    default=0,
    help="With --check: a wide inventory of this many Slurm partitions.",
)
@reports_errors
def bench(size: str, seed: int, churn: bool, workers: int, no_emit: bool, as_project: bool,
          keep: Path | None, as_json: bool, check_only: bool, rules: int,
          partitions: int) -> None:  # fmt: skip
    """Benchmark the planner on a synthetic platform (S, M, L, XL, adversarial, or wide:
    the L inventory with 50,000 small batch jobs); with --project, time `router plan` on it
    written as YAML; with --check, time `router check` on a generated policy of --rules
    rules."""
    if as_project:
        from router.bench.generator import generate
        from router.bench.project import run_project

        result = run_project(generate(size, seed), workers, keep)
    elif check_only:
        from router.bench.check import run_check

        result = run_check(rules, seed, partitions)
    else:
        from router.bench.run import run

        result = run(size, seed, churn=churn, workers=workers, emit=not no_emit)
    if as_json:
        click.echo(json.dumps(result, sort_keys=True))
        return
    for key, value in result.items():
        click.echo(f"{key}: {value}")
