"""A finding of `router check`: what, where, how bad, and a witness workload if there is one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from router.errors import Source, Span, caret_lines

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")


@dataclass
class Finding:
    severity: Severity
    code: str  # unreachable-rule, unreachable-deny, unrouted, route-never-fits, ...
    message: str
    path: str
    line: int
    column: int = 1
    witness: dict[str, Any] | None = None
    hint: str | None = None
    end_line: int | None = None
    end_column: int | None = None
    # The text the finding points into, for the caret line under it (not in JSON).
    source: Source | None = field(default=None, compare=False, repr=False)

    def location(self) -> str:
        return f"{self.path}:{self.line}:{self.column}"

    def caret(self) -> list[str]:
        """The source line and a caret under the finding, as errors show them."""
        if self.source is None:
            return []
        span = Span(self.source, self.line, self.column, self.end_line or 0, self.end_column or 0)
        return caret_lines(span)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "severity": self.severity, "code": self.code, "message": self.message,
            "file": self.path, "line": self.line, "column": self.column,
        }  # fmt: skip
        if self.hint:
            out["hint"] = self.hint
        if self.witness is not None:
            out["witness"] = self.witness
        return out


def finding_at(severity: Severity, code: str, message: str, span: Span, **kw: Any) -> Finding:
    end: dict[str, Any] = {"end_line": span.end_line or None, "end_column": span.end_column or None}
    return Finding(
        severity, code, message, span.path, span.line, span.column, **end, source=span.source, **kw
    )
