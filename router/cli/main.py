"""The `router` command line.

Exit codes, as in Terraform: 0 success; 1 invalid input or internal error; 2 the plan differs
from the previous one (only with --detailed-exitcode; otherwise click's usage errors);
3 a workload is unrouted or could not be placed. Commands that do not solve never import
ortools (its import alone costs about 0.75 s).
"""

from __future__ import annotations

import atexit
import functools
import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from router.debug import DEBUG_ENV, debugging
from router.errors import RouterError
from router.version import __version__

F = TypeVar("F", bound=Callable[..., Any])

EXIT_INVALID = 1
EXIT_CHANGED = 2
EXIT_UNPLACED = 3


def reports_errors(fn: F) -> F:
    """User errors print file:line:col with a caret and exit 1; never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RouterError as e:
            click.echo(e.format(), err=True)
            sys.exit(EXIT_INVALID)
        except (click.exceptions.Exit, click.ClickException, SystemExit, KeyboardInterrupt):
            raise
        except Exception as e:  # a bug: one line, or the traceback with the debug switch
            if debugging():
                raise
            click.echo(
                f"router: internal error: {type(e).__name__}: {e}\n"
                f"  (set {DEBUG_ENV}=1 for a traceback; please report it)",
                err=True,
            )
            sys.exit(EXIT_INVALID)

    return wrapper  # type: ignore[return-value]


# Subcommands that live in their own modules, by name: imported only when that command runs
# (or `router --help` lists them all), so `router plan` loads nothing `plan` does not use.
# `inventory running` is added to the `inventory` group by the second module.
SUBCOMMANDS: dict[str, tuple[str, ...]] = {
    "plan": ("router.cli.plan",),
    "check": ("router.cli.check",),
    "test": ("router.cli.test",),
    "explain": ("router.cli.explain",),
    "inventory": ("router.cli.inventory", "router.cli.running"),
    "bench": ("router.cli.bench",),
    "apply": ("router.cli.apply",),
}


class _LazyGroup(click.Group):
    """A group whose SUBCOMMANDS are imported when first asked for (click's lazy group)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *SUBCOMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        modules = SUBCOMMANDS.get(cmd_name)
        if modules and cmd_name not in self.commands:
            loaded = [importlib.import_module(m) for m in modules]
            self.add_command(getattr(loaded[0], cmd_name))
        return super().get_command(ctx, cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="router")
def cli() -> None:
    """Declarative policy-as-code workload router for Slurm and Kubernetes."""


def project_options(fn: F) -> F:
    for decorator in reversed(
        [
            click.argument("directory", default=".", type=click.Path(file_okay=False)),
            click.option(
                "-p",
                "--policy",
                type=click.Path(exists=True),
                help="Policy file or folder of .route files.",
            ),
            click.option(
                "-i",
                "--inventory",
                type=click.Path(exists=True, dir_okay=False),
                help="Inventory YAML.",
            ),
            click.option(
                "-w", "--workloads", type=click.Path(exists=True), help="Workloads file or folder."
            ),
        ]
    ):
        fn = decorator(fn)
    return fn


@cli.command("fmt")
@click.argument("files", nargs=-1, type=click.Path(exists=True))
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Only report files that are not formatted (exit 1 if any).",
)
@reports_errors
def fmt_command(files: tuple[str, ...], check_only: bool) -> None:
    """Rewrite .route FILES (or folders of them) in canonical form, comments kept."""
    from router.language.fmt import format_policy_file
    from router.language.sources import parse_text
    from router.models.yamlsource import read_source  # not UTF-8: an error at the byte

    paths: list[Path] = []
    for f in files or (".",):
        p = Path(f)
        paths += sorted(p.rglob("*.route")) if p.is_dir() else [p]
    changed = []
    for path in paths:
        text = read_source(path, str(path)).text
        formatted = format_policy_file(parse_text(text, str(path)), text)
        if formatted != text:
            changed.append(path)
            if not check_only:
                path.write_text(formatted, encoding="utf-8")
    verb = "would reformat" if check_only else "reformatted"
    for path in changed:
        click.echo(f"{verb} {path}")
    click.echo(f"{len(changed)} of {len(paths)} files {verb}")
    if check_only and changed:
        sys.exit(EXIT_INVALID)


@cli.command()
@click.argument("kind", type=click.Choice(["inventory", "workload", "plan"]))
@reports_errors
def schema(kind: str) -> None:
    """Print the JSON Schema of an inventory, workload or plan file."""
    import json

    if kind == "plan":
        from router.models.plan import plan_json_schema

        doc = plan_json_schema()  # from the model plan.json is written through
    else:
        from router.models.schema import json_schema

        doc = json_schema(kind)  # type: ignore[arg-type]
    click.echo(json.dumps(doc, indent=2, sort_keys=True))


# Set by a command that is done and whose process holds a whole plan (end_quickly).
_QUICK = {"end": False}


def end_quickly() -> None:
    """Let main() end this process without tearing its objects down one by one: after
    `router plan` on 10k workloads that took 0.7-0.9 s (wall, a loaded machine) after the
    last byte was written. Only where every file is written and closed (out/ with os.write,
    the others in `with`): what is skipped frees memory and nothing else."""
    _QUICK["end"] = True


def main() -> None:
    try:
        cli(prog_name="router")
    except SystemExit as e:
        if not _QUICK["end"]:
            raise
        _end(e.code)


def _end(code: object) -> None:
    """Exit with `code` as sys.exit would, but with os._exit after the atexit handlers (and
    the standard streams flushed): no teardown of modules and objects."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        raise SystemExit(code) from None  # the usual exit reports what went wrong
    os._exit(status)


if __name__ == "__main__":  # `python -m router.cli.main`, as `python -m router`
    main()
