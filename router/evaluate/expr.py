"""Compile checked policy expressions into Python closures, once per policy.

A compiled expression is `f(w, t) -> value` where `w` is a workload view and `t` a target view
(plain dicts built once per workload and per target, see views.py). Rules are therefore not
interpreted node by node for every workload: the tree walk happens once, at compile time.

Missing values (an absent label, a target without max_time) are None: every comparison with
None is false except `!=`, so `labels.app == "x"` is simply false for a workload without `app`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from router.errors import PolicyError
from router.language import ast

View = dict[str, Any]
Compiled = Callable[[View, View], Any]

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
}


def _contains(item: Any, collection: Any) -> bool:
    if item is None or collection is None:
        return False
    if isinstance(collection, (list, tuple, set, frozenset, dict)):
        return item in collection
    if isinstance(collection, str) and isinstance(item, str):
        return item in collection
    return False


def _compare(op: str, a: Any, b: Any) -> bool:
    if a is None or b is None:
        return op == "!=" and a is not b
    try:
        return _COMPARE[op](a, b)
    except TypeError:
        # Mixed types (a string against a number) never match, as in a typed language's
        # comparison of unrelated values; the checker rejects the cases it can see statically.
        return op == "!="


def compile_expr(expr: ast.Expr, constants: dict[str, Any]) -> Compiled:
    """A closure computing `expr` for (workload view, target view)."""
    if isinstance(expr, ast.Literal):
        value = expr.value
        return lambda w, t: value
    if isinstance(expr, ast.ListExpr):
        items = [compile_expr(i, constants) for i in expr.items]
        if all(isinstance(i, ast.Literal) for i in expr.items):
            frozen = [i.value for i in expr.items if isinstance(i, ast.Literal)]
            return lambda w, t: frozen
        return lambda w, t: [f(w, t) for f in items]
    if isinstance(expr, ast.Name):
        return _compile_name(expr, constants)
    if isinstance(expr, ast.Unary):
        inner = compile_expr(expr.operand, constants)
        if expr.op == "not":
            return lambda w, t: not inner(w, t)
        return lambda w, t: _negate(inner(w, t))
    if isinstance(expr, ast.Binary):
        return _compile_binary(expr, constants)
    raise TypeError(f"not an expression: {expr!r}")


def _negate(value: Any) -> Any:
    return None if value is None else -value


def _compile_name(name: ast.Name, constants: dict[str, Any]) -> Compiled:
    scope, field, key = name.scope, name.field, name.key
    if scope == "const":
        value = constants[field or name.parts[0]]
        return lambda w, t: value
    if field is None:
        raise PolicyError(f"unresolved name {'.'.join(name.parts)}", name.span)
    if scope == "workload":
        if key is not None:
            return lambda w, t: w["labels"].get(key)
        return lambda w, t: w.get(field)
    if scope == "target":
        if key is not None:
            return lambda w, t: t["labels"].get(key)
        return lambda w, t: t.get(field)
    if scope == "outcome":
        # Outcomes are read from the "target" slot: check blocks evaluate `expect` over an
        # outcome view in place of a target.
        return lambda w, t: t.get(field)
    raise PolicyError(f"unresolved name {'.'.join(name.parts)}", name.span)


def _compile_binary(expr: ast.Binary, constants: dict[str, Any]) -> Compiled:
    left = compile_expr(expr.left, constants)
    right = compile_expr(expr.right, constants)
    op = expr.op
    if op == "and":
        return lambda w, t: bool(left(w, t)) and bool(right(w, t))
    if op == "or":
        return lambda w, t: bool(left(w, t)) or bool(right(w, t))
    if op in _COMPARE:
        return lambda w, t: _compare(op, left(w, t), right(w, t))
    if op == "in":
        return lambda w, t: _contains(left(w, t), right(w, t))
    if op == "not in":
        return lambda w, t: not _contains(left(w, t), right(w, t))
    if op in _ARITH:
        fn = _ARITH[op]

        def arith(w: View, t: View) -> Any:
            a, b = left(w, t), right(w, t)
            if a is None or b is None:
                return None
            try:
                return fn(a, b)
            except (TypeError, ZeroDivisionError, OverflowError):
                return None  # OverflowError: a product of huge ints times a float

        return arith
    raise PolicyError(f"unknown operator {op}", expr.span)


def constant_value(expr: ast.Expr | None, constants: dict[str, Any]) -> Any:
    """The value of an expression that does not depend on workload or target (options)."""
    if expr is None:
        return True
    return compile_expr(expr, constants)({}, {})
