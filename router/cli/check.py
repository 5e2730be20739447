"""`router check`: parse and type-check a platform's policy, inventory and workloads."""

from __future__ import annotations

import click

from router.cli.main import project_options, reports_errors


@click.command()
@project_options
@reports_errors
def check(directory: str, policy: str | None, inventory: str | None,
          workloads: str | None) -> None:
    """Parse and check the policy, inventory and workloads of DIRECTORY."""
    from router.config import load_project
    from router.plan.build import load_inputs

    project = load_project(directory, policy=policy, inventory=inventory, workloads=workloads)
    inputs = load_inputs(project)
    p = inputs.policy
    click.echo(
        f"ok: {len(p.rules)} rules, {len(p.denies)} deny rules, {len(p.quotas)} quotas, "
        f"{len(p.checks)} checks; {len(inputs.inventory.targets())} targets; "
        f"{len(inputs.workloads)} workloads"
    )


