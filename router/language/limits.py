"""The explicit limits of the routing language, checked while parsing (docs/limits.md).

They keep every later stage (checker, evaluator, CP-SAT encodings, formatter) inside what it
can represent: tree walkers recurse once per level of nesting, CP-SAT takes 64-bit integers
and Python refuses to convert integers of more than 4,300 digits.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields, is_dataclass
from typing import Any

from router.language import ast
from router.quantity import MAX_QUANTITY

# An expression nests at most this deep (operators, prefixes, lists): `a or b or ...` with
# 100 terms, `not not ... x` with 100 prefixes, `[[...]]` 100 levels.
MAX_DEPTH = 100
# A number literal, and any constant folded from literals, is at most this large in magnitude
# (quantities after conversion to base units: MiB, seconds).
MAX_NUMBER = MAX_QUANTITY
_NESTED = (ast.Binary, ast.Unary, ast.ListExpr)


def _children(node: Any) -> Iterator[Any]:
    if isinstance(node, ast.Binary):
        yield node.left
        yield node.right
    elif isinstance(node, ast.Unary):
        yield node.operand
    elif isinstance(node, ast.ListExpr):
        yield from node.items


def _roots(statement: Any) -> Iterator[Any]:
    """The top expressions of a statement, found by its fields (so new clauses are covered)."""
    todo = [statement]
    while todo:
        obj = todo.pop()
        if isinstance(obj, (ast.Literal, ast.Name, *_NESTED)):
            yield obj
        elif isinstance(obj, (list, tuple)):
            todo.extend(obj)
        elif isinstance(obj, dict):
            todo.extend(obj.values())
        elif is_dataclass(obj) and not isinstance(obj, type):
            todo.extend(getattr(obj, f.name) for f in fields(obj) if f.name != "span")


def too_deep(statements: list[Any]) -> Any | None:
    """The first expression node nested deeper than MAX_DEPTH, or None (no recursion)."""
    for statement in statements:
        stack = [(root, 0) for root in _roots(statement)]
        while stack:
            node, depth = stack.pop()
            if not isinstance(node, _NESTED):
                continue
            if depth + 1 > MAX_DEPTH:
                return node
            stack.extend((child, depth + 1) for child in _children(node))
    return None
