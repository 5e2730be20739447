"""Why a condition is false, conjunct by conjunct, with the values it read.

`when gpus >= big_job and kind == "training"` for a 4-GPU training job explains as
`gpus >= big_job: 4 >= 8 is false`: the failing parts of the `and`, each shown as written in
the policy and then with the workload's (or target's) values substituted, so a reader does
not have to look up constants or fields to see why a rule did not match.
"""

from __future__ import annotations

from typing import Any

from router.evaluate.expr import compile_expr
from router.language import ast
from router.language.fmt import format_expr
from router.models.inventory import UNLIMITED_TIME
from router.quantity import format_duration, format_memory

View = dict[str, Any]

# Fields and attributes whose numbers are MiB or seconds, so values print as written.
_MEMORY = {"memory", "memory_per_node"}
_DURATION = {"duration", "max_time", "default_time"}


def _unit(e: ast.Expr) -> str | None:
    if isinstance(e, ast.Literal):
        return e.unit
    if isinstance(e, ast.Name):
        f = e.field or e.parts[-1]
        if f in _MEMORY:
            return "memory"
        if f in _DURATION:
            return "duration"
    return None


def show(value: Any, unit: str | None = None) -> str:
    """A value as the policy language would write it."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)) and unit == "memory":
        return format_memory(int(value))
    if isinstance(value, (int, float)) and unit == "duration":
        # MaxTime=UNLIMITED is stored as a bound no duration reaches; it reads as the word.
        return "unlimited" if value >= UNLIMITED_TIME else format_duration(int(value))
    if isinstance(value, (int, float)) and unit == "percent":
        return f"{round(float(value) * 100)}%"
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple, set, frozenset)):
        return "[" + ", ".join(show(v) for v in value) + "]"
    return str(value)


def _value(e: ast.Expr, constants: dict[str, Any], w: View, t: View) -> Any:
    return compile_expr(e, constants)(w, t)


def failing_parts(
    expr: ast.Expr | None, constants: dict[str, Any], w: View, t: View | None = None
) -> list[str]:
    """The parts of `expr` that make it false for (w, t), in words; [] when it holds.

    An `and` is false when one of its conjuncts is: every false conjunct is listed. An `or`
    is false when all of its disjuncts are: it is shown whole, with each disjunct's reason.
    """
    if expr is None:
        return []
    tv = t if t is not None else {}
    if _value(expr, constants, w, tv):
        return []
    return _why(expr, constants, w, tv)


def _why(e: ast.Expr, c: dict[str, Any], w: View, t: View) -> list[str]:
    if isinstance(e, ast.Binary) and e.op == "and":
        out: list[str] = []
        for side in (e.left, e.right):
            if not _value(side, c, w, t):
                out += _why(side, c, w, t)
        return out
    if isinstance(e, ast.Binary) and e.op == "or":
        inner = "; ".join(part for side in (e.left, e.right) for part in _why(side, c, w, t))
        return [f"{format_expr(e)}: none holds ({inner})"]
    if isinstance(e, ast.Unary) and e.op == "not":
        return [f"{format_expr(e)}: {format_expr(e.operand)} is true"]
    if isinstance(e, ast.Binary):
        unit = _unit(e.left) or _unit(e.right)
        left = show(_value(e.left, c, w, t), unit)
        right = show(_value(e.right, c, w, t), unit if e.op not in ("in", "not in") else None)
        return [f"{format_expr(e)}: {left} {e.op} {right} is false"]
    return [f"{format_expr(e)}: {show(_value(e, c, w, t), _unit(e))}"]
