"""`router plan`: place every workload, write out/, print the plan and what changed."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import click

from router.cli.main import (
    EXIT_CHANGED,
    EXIT_UNPLACED,
    end_quickly,
    project_options,
    reports_errors,
)
from router.cli.options import workers_option
from router.errors import PlanError, RouterError
from router.gcpause import paused_gc

SPINNER_AFTER = 1.0  # seconds: quick plans print nothing while they run


@contextmanager
def _progress(message: str, enabled: bool) -> Iterator[None]:
    """A spinner on stderr once the work inside has taken longer than SPINNER_AFTER."""
    if not enabled:
        yield
        return
    done = threading.Event()

    def spin() -> None:
        if done.wait(SPINNER_AFTER):
            return
        from rich.console import Console

        with Console(stderr=True).status(message):
            done.wait()

    thread = threading.Thread(target=spin, name="router-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


@click.command()
@project_options
@click.option("-o", "--out", type=click.Path(file_okay=False), help="Output folder.")
@click.option(
    "-r",
    "--running",
    type=click.Path(dir_okay=False),
    help="What already runs on the nodes (YAML with running:); overrides router.yaml.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
    help="What to print.",
)
@workers_option(None)
@click.option("--no-write", is_flag=True, help="Plan and print, but do not write out/.")
@click.option(
    "--previous",
    metavar="PLAN.json|git:REF",
    help="Diff against a previous plan.json, or against the project as it is at a "
    "git revision (planned too), e.g. git:origin/main.",
)
@click.option(
    "--detailed-exitcode",
    is_flag=True,
    help="Exit 0 when nothing changed against --previous, 2 when something did, "
    "1 on error (as terraform plan -detailed-exitcode).",
)
@click.option(
    "-q", "--quiet", is_flag=True, help="Print only the summary line (and errors), for pipelines."
)
@reports_errors
# No cyclic collection while the command runs (a command line only: the library leaves the
# collector alone). The plan's data lives until the end, and each pass walked it again:
# gc.freeze after loading still left 0.2 s of passes at 10,000 workloads, on the serial
# path. What is cyclic garbage by the end is small: 2 MiB more peak memory at L.
@paused_gc()
def plan(
    directory: str,
    policy: str | None,
    inventory: str | None,
    workloads: str | None,
    out: str | None,
    running: str | None,
    fmt: str,
    workers: int | None,
    no_write: bool,
    previous: str | None,
    detailed_exitcode: bool,
    quiet: bool,
) -> None:
    """Plan DIRECTORY (a folder with router.yaml): place every workload, write out/.

    \b
    With --previous, each workload that changed is listed:
      +  newly placed          ~  moved (from -> to, with the rule that decided)
      -  removed               !  newly denied, unrouted or unplaced
      *  changed in place (same target, other resources, options or rule)
    and the last line sums them up: "Plan: 3 to add, 2 to move, 1 to remove, 1 unplaced"
    (", N to update" is appended only when some placement changed in place).
    plan.json then holds the same as a `diff` object; --format markdown shows it as a
    table for a pull request comment, with all placements folded below.

    \b
    Exit codes:
      0  the plan was made (with --detailed-exitcode: and nothing changed)
      1  invalid input or an internal error; out/ is left as it was
      2  with --detailed-exitcode: the plan differs from --previous
      3  without --detailed-exitcode: some workload is unrouted or could not be placed
    As in Terraform, --detailed-exitcode makes the code about the diff only (0, 1 or 2):
    workloads that newly cannot be placed are changes ("!", counted as unplaced in the
    summary and in plan.json's diff.summary.unplaced, which a pipeline can gate on).
    Denied workloads are a planned outcome, never a failure.
    """
    import router
    from router.models import prescan
    from router.models.loader import workload_files
    from router.plan.render import render_rich

    if detailed_exitcode and not previous:
        raise PlanError(
            "--detailed-exitcode needs --previous (a plan.json or git:REF) to compare with"
        )
    platform = router.load(
        directory, policy=policy, inventory=inventory, workloads=workloads, out=out, running=running
    )
    # The workload files are scanned in a child while this process imports CP-SAT and
    # reads the policy and the inventory (router/models/prescan.py).
    with contextlib.suppress(RouterError):  # the loader reports it
        prescan.start(workload_files(platform.project.workloads))
    spinner = not quiet and sys.stderr.isatty()
    try:
        with _progress("Planning…", spinner):
            # Decisions of one routing signature share their candidate lists (read-only),
            # as in `router bench`: copying them was most of evaluating a large plan.
            result = router.plan(platform, previous, workers=workers, share_candidates=True)
    finally:
        prescan.cancel()  # taken by now, unless the plan failed before the workloads
    if result.previous and result.previous.note and not quiet:
        click.echo(f"router: {result.previous.note}", err=True)
    files: list[str] = []
    if not no_write:
        # First: the emitters run in children of this process while it makes plan.json.
        files = result.write()
    diff = result.diff()
    if quiet:
        click.echo(result.render("summary"))
    elif fmt in ("json", "markdown"):
        click.echo(result.render(fmt), nl=False)
    else:
        if sys.stdout.isatty():
            from rich.console import Console

            render_rich(result.document(), Console())
        else:
            click.echo(result.render("text"), nl=False)
        if not no_write:
            click.echo(f"Wrote {len(files)} files to {platform.project.out}/")
    if not quiet:
        # Timing differs between runs, so it goes to stderr and stdout stays the same bytes.
        run = result.built.solve
        click.echo(
            f"Solved in {run.wall_seconds:.2f} s with {run.workers} workers "
            f"(deterministic time {run.deterministic_time:.3f}).",
            err=True,
        )
    end_quickly()  # out/ is written and closed: nothing left but freeing memory
    if detailed_exitcode:
        sys.exit(EXIT_CHANGED if diff and diff["changed"] else 0)
    if not result.ok:
        sys.exit(EXIT_UNPLACED)
