"""One error hierarchy for everything a user can get wrong, each error with a source span.

Every error a user sees names the file, line and column, shows the line with a caret under the
fault and, where it can, says what was expected and "did you mean".
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Source:
    """A text the user wrote: a policy file, an inventory or workloads YAML file."""

    path: str
    text: str = field(repr=False)

    def line(self, number: int) -> str:
        lines = self.text.splitlines()
        return lines[number - 1] if 0 < number <= len(lines) else ""


@dataclass(frozen=True)
class Span:
    """Where a node came from: 1-based line and column, end exclusive."""

    source: Source = field(compare=False, repr=False)
    line: int
    column: int
    end_line: int = 0
    end_column: int = 0

    @property
    def path(self) -> str:
        return self.source.path

    def location(self) -> str:
        return f"{self.source.path}:{self.line}:{self.column}"

    def __str__(self) -> str:
        return self.location()


_SHOWN = 120  # the most columns of a source line an error shows


def caret_lines(span: Span) -> list[str]:
    """The span's source line under a gutter and a caret line under the fault (none when the
    line is not in the source); `router check` findings show the same."""
    text = span.source.line(span.line)
    if not text:
        return []
    gutter = f"{span.line:>5} | "
    width = 1
    if span.end_line == span.line and span.end_column > span.column:
        width = span.end_column - span.column
    column = span.column
    if len(text) > _SHOWN:  # a window around the fault, not a 5,000-column line
        start = max(0, min(column - 1 - _SHOWN // 4, len(text) - _SHOWN))
        cut = text[start : start + _SHOWN]
        text = ("..." if start else "") + cut + ("..." if start + _SHOWN < len(text) else "")
        column = column - start + (3 if start else 0)
        width = max(1, min(width, len(text) - column + 1))
    pad = "".join(c if c == "\t" else " " for c in text[: column - 1])
    return [gutter + text, " " * (len(gutter) - 2) + "| " + pad + "^" * width]


class RouterError(Exception):
    """Base of every error router reports to a user (exit code 1)."""

    kind = "error"

    def __init__(
        self,
        message: str,
        span: Span | None = None,
        *,
        hint: str | None = None,
        path: str | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.hint = hint
        self._path = path
        self._line = line

    @property
    def path(self) -> str | None:
        return self.span.path if self.span else self._path

    @property
    def line(self) -> int | None:
        return self.span.line if self.span else self._line

    def location(self) -> str:
        if self.span:
            return self.span.location()
        if self._path and self._line:
            return f"{self._path}:{self._line}"
        return self._path or ""

    def format(self) -> str:
        """The full message: location, the source line, a caret, and the hint."""
        loc = self.location()
        head = f"{loc}: {self.kind}: {self.message}" if loc else f"{self.kind}: {self.message}"
        out = [head]
        if self.span is not None:
            out += caret_lines(self.span)
        if self.hint:
            out.append(f"  {self.hint}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.format()


class PolicySyntaxError(RouterError):
    """The policy text does not parse."""


class PolicyError(RouterError):
    """The policy parses but does not make sense: unknown names, wrong options, duplicates."""


class LoadError(RouterError):
    """An inventory, workload or router.yaml file is malformed."""


class PlanError(RouterError):
    """The inputs are valid one by one but cannot be planned together (e.g. bad --previous)."""


class ErrorGroup(RouterError):
    """Several errors found in one pass, reported together."""

    def __init__(self, errors: Iterable[RouterError]) -> None:
        self.errors = list(errors)
        super().__init__(f"{len(self.errors)} errors")

    def format(self) -> str:
        return "\n\n".join(e.format() for e in self.errors)


def did_you_mean(name: str, choices: Iterable[str], cutoff: float = 0.6) -> str | None:
    """A 'did you mean' hint for a misspelt name, or None when nothing is close."""
    close = difflib.get_close_matches(name, sorted(set(choices)), n=1, cutoff=cutoff)
    return f'did you mean "{close[0]}"?' if close else None
