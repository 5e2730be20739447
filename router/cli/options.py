"""Click options that several commands share, written once: the same flag names, types and
help everywhere they appear (`router plan`, `bench`, `inventory import`, `inventory running`).
Only click: importing this costs nothing that a command does not already load."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

WORKERS_HELP = "Threads solving independent parts (the plan does not depend on it)."


def flag(*decls: str, help: str) -> Decorator:
    """An on/off option: `@flag("--json", "as_json", help=...)`."""
    return click.option(*decls, is_flag=True, help=help)


def workers_option(default: int | None) -> Decorator:
    """--workers N (1 to 64): solver threads; `default` None lets the solver choose."""
    return click.option(
        "--workers",
        type=click.IntRange(1, 64),
        default=default,
        show_default=default is not None,
        help=WORKERS_HELP,
    )


def output_option(
    help: str = "Write the YAML to this file (atomically) instead of stdout.",
) -> Decorator:
    """-o/--output FILE: where a command writes what it would print."""
    return click.option("-o", "--output", type=click.Path(dir_okay=False), help=help)


def from_option(*aliases: str, help: str) -> Decorator:
    """--from FILE (an existing file): saved cluster output instead of asking the live one."""
    return click.option(
        "--from", *aliases, "from_file", type=click.Path(exists=True, dir_okay=False), help=help
    )
