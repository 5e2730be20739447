"""`router plan`: place every workload, write out/ and print the plan."""

from __future__ import annotations

import sys

import click

from router.cli.main import EXIT_UNPLACED, project_options, reports_errors


@click.command()
@project_options
@click.option("-o", "--out", type=click.Path(file_okay=False), help="Output folder.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]),
              default="text", show_default=True, help="What to print.")
@click.option("--workers", type=click.IntRange(1, 64), default=None,
              help="CP-SAT workers (the plan does not depend on it).")
@click.option("--no-write", is_flag=True, help="Plan and print, but do not write out/.")
@reports_errors
def plan(directory: str, policy: str | None, inventory: str | None, workloads: str | None,
         out: str | None, fmt: str, workers: int | None, no_write: bool) -> None:
    """Plan DIRECTORY (a folder with router.yaml): place every workload, write out/."""
    from router.config import load_project
    from router.emit import assign_artifacts, emit_all
    from router.output import write_out
    from router.plan.build import build_plan
    from router.plan.document import dumps, plan_document
    from router.plan.render import render_markdown, render_text
    from router.solve.cpsat import SolveOptions

    project = load_project(directory, policy=policy, inventory=inventory,
                           workloads=workloads, out=out)
    options = SolveOptions()
    if workers:
        options.workers = workers
    result = build_plan(project, options)
    assign_artifacts(result.placements)
    doc = plan_document(result)
    if not no_write:
        files = emit_all(result.placements)
        files["plan.json"] = dumps(doc)
        write_out(project.out, files)
    if fmt == "json":
        click.echo(dumps(doc), nl=False)
    elif fmt == "markdown":
        click.echo(render_markdown(doc), nl=False)
    else:
        click.echo(render_text(doc), nl=False)
        run = result.solve
        click.echo(f"Solved in {run.wall_seconds:.2f} s with {run.workers} workers "
                   f"(deterministic time {run.deterministic_time:.3f}).")
        if not no_write:
            click.echo(f"Wrote {len(files)} files to {project.out}/")
    if result.unplaced or result.unrouted:
        sys.exit(EXIT_UNPLACED)


