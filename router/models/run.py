"""How a Slurm job runs (issue 13): launchers, arrays, checkpointing, container mounts and
setup lines — the value types that the workload and the inventory share.

A mount is `SRC[:DST[:ro|rw]]` with absolute paths. Paths take letters, digits and `. _ / + @ =
-` only: pyxis and apptainer both split their mount lists at ',' and ':', and the value goes on
one shell word. A setup line is shell text as a platform engineer would type it (`module load
cuda/12.4`), one line, no control characters.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from router.models.fields import (
    Duration,
    Frozen,
    PositiveCount,
    fail,
    has_control,
    need_str,
    show,
)

LAUNCHERS = ("torchrun", "mpi", "plain")
Launcher = Literal["torchrun", "mpi", "plain"]
PATH = re.compile(r"/[A-Za-z0-9._/+@=-]*")
MAX_SETUP = 1000  # characters in one setup line


def _path(text: str, where: str) -> str:
    if not PATH.fullmatch(text) or len(text) > 1024 or "/../" in f"{text}/":
        raise fail(
            f"{where} must be an absolute path of letters, digits and . _ / + @ = - (no ':' or"
            f" ','; pyxis and apptainer split mount lists there), got {show(text)}"
        )
    return text


def _mount(value: Any) -> str:
    text = need_str(value, 'a mount "SRC[:DST[:ro|rw]]"')
    parts = text.split(":")
    if len(parts) > 3 or (len(parts) == 3 and parts[2] not in ("ro", "rw")):
        raise fail(f'must be "SRC", "SRC:DST" or "SRC:DST:ro|rw", got {show(text)}')
    for part in parts[:2]:
        _path(part, "a mount's path")
    return text


def _setup_line(value: Any) -> str:
    text = need_str(value, "a shell line")
    bad = has_control(text)
    if bad:
        raise fail(f"must be one line without control characters, found {bad}")
    if not text.strip() or len(text) > MAX_SETUP:
        raise fail(f"must be a shell line of 1 to {MAX_SETUP} characters, got {show(text)}")
    return text


def _abs_path(value: Any) -> str:
    return _path(need_str(value, "an absolute path"), "the folder")


Mount = Annotated[str, BeforeValidator(_mount)]
SetupLine = Annotated[str, BeforeValidator(_setup_line)]
AbsPath = Annotated[str, BeforeValidator(_abs_path)]


class Array(Frozen):
    """A job array: `count` tasks (indices 0..count-1), at most `parallel` running at once."""

    count: PositiveCount = Field(le=4_000_000)
    parallel: PositiveCount | None = Field(None, description="tasks in flight; default count")

    @property
    def in_flight(self) -> int:
        return min(self.parallel or self.count, self.count)


class Checkpoint(Frozen):
    """Ask Slurm for a signal `signal_lead` before the time limit (`--signal=B:USR1@<lead>`);
    the script forwards it to the program, which checkpoints."""

    signal_lead: Duration = Field(description='input "5min" or a number of minutes')
    signal: Literal["USR1", "USR2"] = "USR1"

    @model_validator(mode="after")
    def _lead(self) -> Checkpoint:
        if not 1 <= self.signal_lead <= 65535:  # Slurm's limit on the signal time
            raise fail(f"signal_lead must be 1 s to 65535 s, got {self.signal_lead} s")
        return self
