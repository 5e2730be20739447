"""`router check`: parse and type-check a platform's policy, inventory and workloads, then
analyse the policy (router.assure.analysis): unreachable rules, routes that fit no target,
ignored options, unused constants, quotas that never bind.

Exit 1 on an error finding (or an input that does not load), 0 otherwise; `--strict` makes
warnings fail too.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from router.cli.main import EXIT_INVALID, project_options, reports_errors

FORMATS = ("text", "json", "junit", "sarif", "github")


def _load_findings(error: Any) -> list[Any]:
    """A load or check error (or a group of them) as error findings."""
    from router.assure.analysis import Finding
    from router.errors import ErrorGroup

    errors = error.errors if isinstance(error, ErrorGroup) else [error]
    out = []
    for e in errors:
        span = e.span
        out.append(Finding(
            "error", "invalid", e.message, e.path or "", e.line or 1,
            span.column if span else 1, hint=e.hint,
            end_line=span.end_line if span else None, end_column=span.end_column if span else None,
            source=span.source if span else None,
        ))  # fmt: skip
    return out


@click.command()
@project_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help="Output: text, json, junit (XML), sarif (code scanning) or github (annotations).",
)
@click.option("--strict", is_flag=True, help="Warnings fail the check too (exit 1).")
@reports_errors
def check(directory: str, policy: str | None, inventory: str | None, workloads: str | None,
          fmt: str, strict: bool) -> None:  # fmt: skip
    """Parse, check and analyse the policy, inventory and workloads of DIRECTORY."""
    import router
    from router.assure.report_check import render
    from router.errors import RouterError

    platform = router.load(directory, policy=policy, inventory=inventory, workloads=workloads)
    try:
        inputs = platform.inputs()
    except RouterError as e:
        if fmt == "text":
            raise  # the full message with the source line and a caret
        click.echo(render(_load_findings(e), fmt, strict=strict))
        sys.exit(EXIT_INVALID)
    p = inputs.policy
    ok = (
        f"ok: {len(p.rules)} rules, {len(p.denies)} deny rules, {len(p.quotas)} quotas, "
        + (f"{len(p.spreads)} spreads, " if p.spreads else "")
        + f"{len(p.checks)} checks; {len(inputs.inventory.targets())} targets; "
        f"{len(inputs.workloads)} workloads"
    )
    findings = router.check(platform)
    click.echo(render(findings, fmt, ok=ok, strict=strict))
    failing = {"error", "warning"} if strict else {"error"}
    if any(f.severity in failing for f in findings):
        sys.exit(EXIT_INVALID)
