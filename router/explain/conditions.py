"""Why a condition is false, conjunct by conjunct, with the values it read.

`when gpus >= big_job and kind == "training"` for a 4-GPU training job explains as
`gpus >= big_job: 4 >= 8 is false`: the failing parts of the `and`, each shown as written in
the policy and then with the workload's (or target's) values substituted, so a reader does
not have to look up constants or fields to see why a rule did not match.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from router.evaluate.expr import Compiled, compile_expr
from router.evaluate.views import target_view
from router.language import ast
from router.language.fmt import format_expr
from router.models import TargetRef
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
    return [f"{part}: {values}" for part, values in failing_terms(expr, constants, w, t)]


def failing_terms(
    expr: ast.Expr | None,
    constants: dict[str, Any],
    w: View,
    t: View | None = None,
    compiled: dict[int, Compiled] | None = None,
    written: dict[int, str] | None = None,
    false: bool = False,
) -> list[tuple[str, str]]:
    """failing_parts as (the part as written, its values): `("gpus >= 8", "4 >= 8 is
    false")`. `compiled` and `written`: closures and texts by id(expression), kept by a
    caller that asks often; `false`: the caller knows `expr` is false for (w, t)."""
    if expr is None:
        return []
    tv = t if t is not None else {}
    cache: dict[int, Compiled] = {} if compiled is None else compiled
    texts: dict[int, str] = {} if written is None else written

    def value(e: ast.Expr) -> Any:
        f = cache.get(id(e))
        if f is None:
            f = cache[id(e)] = compile_expr(e, constants)
        return f(w, tv)

    def fmt(e: ast.Expr) -> str:
        text = texts.get(id(e))
        if text is None:
            text = texts[id(e)] = format_expr(e)
        return text

    if not false and value(expr):
        return []
    return _why(expr, value, fmt)


def _why(
    e: ast.Expr, value: Callable[[ast.Expr], Any], fmt: Callable[[ast.Expr], str]
) -> list[tuple[str, str]]:
    if isinstance(e, ast.Binary) and e.op == "and":
        out: list[tuple[str, str]] = []
        for side in (e.left, e.right):
            if not value(side):
                out += _why(side, value, fmt)
        return out
    if isinstance(e, ast.Binary) and e.op == "or":
        inner = "; ".join(
            f"{part}: {said}" for side in (e.left, e.right) for part, said in _why(side, value, fmt)
        )
        return [(fmt(e), f"none holds ({inner})")]
    if isinstance(e, ast.Unary) and e.op == "not":
        return [(fmt(e), f"{fmt(e.operand)} is true")]
    if isinstance(e, ast.Binary):
        unset = _unset(e, value, fmt)
        if unset:
            return [(fmt(e), unset)]
        unit = _unit(e.left) or _unit(e.right)
        left = show(value(e.left), unit)
        right = show(value(e.right), unit if e.op not in ("in", "not in") else None)
        return [(fmt(e), f"{left} {e.op} {right} is false")]
    return [(fmt(e), _unset(e, value, fmt) or show(value(e), _unit(e)))]


def _unset(e: ast.Expr, value: Callable[[ast.Expr], Any], fmt: Callable[[ast.Expr], str]) -> str:
    """`gpu_type is not set` when what made `e` false is a name with no value (a CPU
    partition's gpu_type, an absent label): said plainly, not as `none in [...]`. ""
    when every name `e` compares has a value."""
    sides = [e.left, e.right] if isinstance(e, ast.Binary) else [e]
    names: list[str] = []
    for side in sides:
        if value(side) is not None:
            continue
        for n in ast.find(side, ast.Name):
            if value(n) is None and fmt(n) not in names:
                names.append(fmt(n))
    if not names:
        return ""
    if len(names) == 1:
        return f"{names[0]} is not set"
    return f"{', '.join(names[:-1])} and {names[-1]} are not set"


# Values named per part of a `where` that many targets fail; past them, "and N more".
SHOWN = 4


class WhereValues:
    """What a route's `where` read on each target it kept out, for the reasons' words
    (`not a candidate: ...`). Target views and compiled parts are made once per plan."""

    def __init__(self, constants: dict[str, Any], targets: Iterable[TargetRef]) -> None:
        self.constants = constants
        self._targets = {ref.id: ref for ref in targets}
        self._views: dict[str, View] = {}
        self._compiled: dict[int, Compiled] = {}
        self._written: dict[int, str] = {}
        # Per `where`: the names it reads of the workload, and of the target.
        self._reads: dict[int, tuple[list[Compiled], list[Compiled]]] = {}
        # Per (where, target): what the `where` reads of the target, as one key. Targets
        # alike to it (one region, one GPU type) share their words.
        self._target_reads: dict[tuple[int, str], str] = {}
        # Per (where, the target values it reads, the workload values it reads): many
        # routing signatures and targets read the same few values, so words are made once.
        self._said: dict[Hashable, list[tuple[str, str]]] = {}

    def reader(self, where: ast.Expr, w: View) -> Callable[[str], list[tuple[str, str]]]:
        """For workload view w, target -> the false parts of `where`, which kept that target
        out. What w's values are to `where` is read once here, not once per target. The
        words depend on nothing but the values the `where` reads: the compiled names of
        the workload and the target are its only inputs besides constants."""
        reads = self._reads.get(id(where))
        if reads is None:
            c = self.constants
            reads = self._reads[id(where)] = (
                [compile_expr(n, c) for n in _names(where, workload=True)],
                [compile_expr(n, c) for n in _names(where, workload=False)],
            )
        w_reads, t_reads = reads
        seen = repr([f(w, {}) for f in w_reads])
        of_target = self._target_reads
        said = self._said
        wid = id(where)

        def terms(target: str) -> list[tuple[str, str]]:
            read = of_target.get((wid, target))
            if read is None:
                t = self._view(target)
                read = of_target[wid, target] = repr([f({}, t) for f in t_reads])
            key = (wid, read, seen)
            found = said.get(key)
            if found is None:
                t = self._view(target)
                found = said[key] = failing_terms(
                    where, self.constants, w, t, self._compiled, self._written, True
                )
            return found

        return terms

    def _view(self, target: str) -> View:
        t = self._views.get(target)
        if t is None:
            t = self._views[target] = target_view(self._targets[target])
        return t


def _names(e: Any, workload: bool) -> list[ast.Name]:
    """The names an expression reads of the workload (or else: of the target), each once,
    in order. Constants are neither."""
    out: list[ast.Name] = []
    if isinstance(e, ast.Name):
        if e.scope == "const":
            return []
        return [e] if (e.scope == "workload") == workload else []
    if dataclasses.is_dataclass(e) and not isinstance(e, type):
        for f in dataclasses.fields(e):
            value = getattr(e, f.name)
            for item in value if isinstance(value, (list, tuple)) else [value]:
                out += [n for n in _names(item, workload) if n not in out]
    return out


def merged(terms: list[list[tuple[str, str]]]) -> str:
    """The failing parts of several targets in one line: each part once, with the distinct
    values it read (`gpus_per_node == 0: 8 == 0, 4 == 0 are false`), and on how many of the
    targets when not on all (`... is false on 4 of them`)."""
    said: dict[str, list[str]] = {}
    count: dict[str, int] = {}
    # Targets alike share one list (WhereValues): each list once, counted as often as given.
    times: dict[int, int] = {}
    distinct: list[list[tuple[str, str]]] = []
    for one in terms:
        n = times.get(id(one))
        if n is None:
            distinct.append(one)
        times[id(one)] = (n or 0) + 1
    for one in distinct:
        for part, values in one:
            seen = said.setdefault(part, [])
            count[part] = count.get(part, 0) + times[id(one)]
            if values not in seen:
                seen.append(values)
    out = []
    for part, read in said.items():
        on = f" on {count[part]} of them" if count[part] < len(terms) else ""
        if len(read) == 1:
            out.append(f"{part}: {read[0]}{on}")
            continue
        false = all(v.endswith(" is false") for v in read)
        shown = [v.removesuffix(" is false") if false else v for v in read[:SHOWN]]
        more = f" and {len(read) - SHOWN} more" if len(read) > SHOWN else ""
        out.append(f"{part}: {', '.join(shown)}{more}{' are false' if false else ''}{on}")
    return "; ".join(out)
