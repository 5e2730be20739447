"""`router explain WORKLOAD`: the rules, candidates and constraints behind one decision."""

from __future__ import annotations

import json

import click

from router.cli.main import project_options, reports_errors


@click.command()
@click.argument("workload")
@project_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="What to print.",
)
@click.option(
    "--previous",
    metavar="PLAN.json|git:REF",
    help="Plan against a previous plan, as `router plan --previous` does "
    "(planned work is only preempted by higher priority).",
)
@reports_errors
def explain(
    workload: str,
    directory: str,
    policy: str | None,
    inventory: str | None,
    workloads: str | None,
    fmt: str,
    previous: str | None,
) -> None:
    """Explain where WORKLOAD of DIRECTORY was placed, or why it was not."""
    import router
    from router.explain import render_explanation

    platform = router.load(directory, policy=policy, inventory=inventory, workloads=workloads)
    doc = router.explain(platform, workload, previous)
    if fmt == "json":
        click.echo(json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False))
    else:
        click.echo(render_explanation(doc), nl=False)
