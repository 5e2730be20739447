"""`router apply [DIR]`: submit the planned sbatch scripts and record the job ids.

Reads out/plan.json (made by `router plan`; exit 1 if missing), submits each Slurm placement's
script that is not already in Slurm (see router.apply.slurm for how that is decided and where
jobs run), writes out/apply.json and prints one line per Slurm workload and a summary:
"Apply: 3 submitted, 5 unchanged, 0 failed". Kubernetes placements are left to GitOps tools.
Exit 1 if any submission (or a --replace cancel) failed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from router.cli.inventory import reports_errors


def _slurm_confs(values: tuple[str, ...]) -> dict[str, str]:
    confs: dict[str, str] = {}
    for value in values:
        cluster, eq, path = value.partition("=")
        if not eq or not cluster or not path:
            raise click.BadParameter(
                f"expected CLUSTER=PATH, got {value!r}", param_hint="--slurm-conf"
            )
        if not Path(path).is_file():
            raise click.BadParameter(f"{path}: no such file", param_hint="--slurm-conf")
        confs[cluster] = path
    return confs


def _out_folder(directory: str, out: str | None) -> Path:
    """-o as typed; else router.yaml's out: (relative to DIR); else DIR/out."""
    if out:
        return Path(out)
    root = Path(directory)
    if (root / "router.yaml").exists():
        from router.config import load_project

        return load_project(root).out
    return root / "out"


@click.command()
@click.argument("directory", default=".", type=click.Path(file_okay=False))
@click.option(
    "-o",
    "--out",
    type=click.Path(file_okay=False),
    help="The out/ folder `router plan` wrote (default: router.yaml's out).",
)
@click.option("--dry-run", is_flag=True, help="Print what would be submitted; submit nothing.")
@click.option(
    "--hold", is_flag=True, help="Submit held (sbatch --hold): jobs wait for `scontrol release`."
)
@click.option(
    "--replace",
    is_flag=True,
    help="Cancel the old job of a workload whose script changed (if still pending "
    "or running), after its new job is submitted.",
)
@click.option(
    "--slurm-conf",
    "slurm_conf",
    multiple=True,
    metavar="CLUSTER=PATH",
    help="slurm.conf for that cluster's commands (default: SLURM_CONF as set). Repeatable.",
)
@reports_errors
def apply(
    directory: str,
    out: str | None,
    dry_run: bool,
    hold: bool,
    replace: bool,
    slurm_conf: tuple[str, ...],
) -> None:
    """Submit the sbatch scripts of DIRECTORY's plan to Slurm; record job ids in out/apply.json."""
    from router.apply.slurm import apply_plan

    confs = _slurm_confs(slurm_conf)
    folder = _out_folder(directory, out)
    result = apply_plan(folder, dry_run=dry_run, hold=hold, replace=replace, slurm_conf=confs)
    clusters = {o.cluster for o in result.outcomes}
    for name in sorted(set(confs) - clusters):
        click.echo(
            f"warning: --slurm-conf {name}=...: no Slurm placement on that cluster", err=True
        )
    for o in result.outcomes:
        where = f"{o.cluster}/{o.target}"
        if o.action == "failed":
            lines = (o.error or "").splitlines() or [""]
            text = f" {lines[0]}" if len(lines) == 1 else "".join(f"\n  {x}" for x in lines)
            click.echo(f"failed     {o.workload} ({where}):{text}", err=True)
        elif o.action == "unchanged":
            click.echo(f"unchanged  {o.workload} ({where}): job {o.job_id}")
        elif dry_run:
            was = f" (changed: was job {o.previous_job})" if o.previous_job else ""
            click.echo(f"would submit {o.workload} ({where}) {o.script}{was}")
        elif o.previous_job is not None:
            cancelled = ", cancelled it" if o.cancelled else ""
            click.echo(
                f"changed    {o.workload} ({where}): was job {o.previous_job}, "
                f"submitted {o.job_id}{cancelled}"
            )
            if o.error:
                click.echo(f"warning: {o.workload}: {o.error}", err=True)
        else:
            ids = ", ".join(map(str, o.after_jobs))
            after = f" (after job{'s' * (len(o.after_jobs) > 1)} {ids})" if ids else ""
            click.echo(f"submitted  {o.workload} ({where}): job {o.job_id}{after}")
    k8s = len(result.kubernetes)
    tail = (
        f"; {k8s} Kubernetes placement{'s' * (k8s != 1)} not applied (GitOps tools apply "
        f"{folder / 'kubernetes'}/)"
        if k8s
        else ""
    )
    to_submit = result.count("submit", "replace")
    if dry_run:
        click.echo(
            f"Apply (dry run): {to_submit} to submit, {result.count('unchanged')} "
            f"unchanged, {result.count('failed')} failed; nothing submitted{tail}"
        )
    else:
        click.echo(
            f"Apply: {to_submit} submitted, {result.count('unchanged')} unchanged, "
            f"{result.count('failed')} failed{tail}"
        )
    if result.failed:
        sys.exit(1)
