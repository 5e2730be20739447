"""`router bench`: plan a seeded synthetic platform and report time, memory and quality."""

from __future__ import annotations

import json

import click

from router.cli.main import reports_errors


@click.command()
@click.option(
    "--size",
    type=click.Choice(["S", "M", "L", "XL", "adversarial"]),
    default="S",
    show_default=True,
    help="Platform size (workloads × targets).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Generator seed.")
@click.option(
    "--churn",
    is_flag=True,
    help="Also change 1% of the workloads and re-plan with the first plan as previous.",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=2,
    show_default=True,
    help="Threads solving independent parts (the plan does not depend on it).",
)
@click.option("--no-emit", is_flag=True, help="Skip writing the artifacts in memory.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@reports_errors
def bench(size: str, seed: int, churn: bool, workers: int, no_emit: bool, as_json: bool) -> None:
    """Benchmark the planner on a synthetic platform (S, M, L, XL or adversarial)."""
    from router.bench.run import run

    result = run(size, seed, churn=churn, workers=workers, emit=not no_emit)
    if as_json:
        click.echo(json.dumps(result, sort_keys=True))
        return
    for key, value in result.items():
        click.echo(f"{key}: {value}")
