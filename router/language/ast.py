"""The syntax tree of a policy. Every node keeps the span it was parsed from.

Quantities are normalised by the parser to base units (memory MiB, durations seconds,
percentages a fraction of 1) and keep their unit kind, so `64GiB` compares with a workload's
memory and `80%` is known to be a share.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar
from typing import Literal as Lit

from router.errors import Span

UnitKind = Lit["memory", "duration", "percent"]


@dataclass
class Literal:
    """A number, string, boolean or quantity. `unit` is None for plain values."""

    value: int | float | str | bool
    span: Span
    unit: UnitKind | None = None
    text: str = ""  # as written, for `router fmt` (e.g. "64GiB")


@dataclass
class ListExpr:
    items: list[Expr]
    span: Span


@dataclass
class Name:
    """A dotted name as written: `gpus`, `workload.gpus`, `labels.app`, `big_job`.

    The checker resolves it: `scope` is "workload", "target", "outcome" or "const";
    `field` the field or attribute name; `key` the label key for `labels.X`.
    """

    parts: tuple[str, ...]
    span: Span
    scope: str | None = None
    field: str | None = None
    key: str | None = None


@dataclass
class Unary:
    op: Lit["not", "-"]
    operand: Expr
    span: Span


@dataclass
class Binary:
    """op: and or == != < <= > >= in "not in" + - * /"""

    op: str
    left: Expr
    right: Expr
    span: Span


Expr = Literal | ListExpr | Name | Unary | Binary


@dataclass
class Option:
    """`exclusive`, `qos = "high"`, `hpa(min = 2, max = 20, cpu = 70%)`, `hpa`.

    `value` is set for `name = expr`; `args` for the call form; both empty for a flag.
    """

    name: str
    span: Span
    value: Expr | None = None
    args: dict[str, Expr] = field(default_factory=dict)
    arg_spans: dict[str, Span] = field(default_factory=dict)
    is_call: bool = False


@dataclass
class Prefer:
    """`prefer lower cost` (direction "lower"), `prefer higher X`, or `prefer <condition>`
    (direction None: targets where the condition holds are preferred)."""

    expr: Expr
    span: Span
    direction: Lit["lower", "higher"] | None = None


@dataclass
class Route:
    """One `route` (rank 0) or `else route` (rank 1, 2, ...) clause of a rule."""

    backend: Lit["slurm", "kubernetes", "any"]
    span: Span
    rank: int = 0
    options: list[Option] = field(default_factory=list)
    where: Expr | None = None
    prefer: list[Prefer] = field(default_factory=list)
    backend_span: Span | None = None


@dataclass
class Let:
    name: str
    value: Expr
    span: Span


@dataclass
class Deny:
    name: str
    when: Expr | None
    message: str
    span: Span


@dataclass
class Rule:
    name: str
    when: Expr | None
    routes: list[Route]
    span: Span


@dataclass
class Limit:
    """`limit gpus <= 64` or `limit gpus <= 80%`; resource: gpus, cpus, memory, nodes, workloads."""

    resource: str
    amount: Expr
    span: Span
    op: Lit["<=", "<"] = "<="
    resource_span: Span | None = None


@dataclass
class Quota:
    """`quota name: for <workload condition> on <target condition> per <keys> limit ...`.

    `per` holds the keys as written (`team`, `cluster`, `workload.labels.app`); the checker
    resolves each to a workload field (scope "workload") or a target attribute (scope
    "target"; `target` alone: field "id"). Empty: one limit for the whole quota.
    """

    name: str
    for_: Expr | None
    on: Expr | None
    limits: list[Limit]
    span: Span
    per: list[Name] = field(default_factory=list)


@dataclass
class Check:
    """`check name: for <workload condition> expect <outcome condition>`."""

    name: str
    for_: Expr | None
    expect: Expr
    span: Span


@dataclass
class Spread:
    """`spread name: for <workload condition> by <workload value> across <target attribute>
    max N`: members of one group (same `by` value) placed at most N (default: an even share)
    on targets with the same `across` value. `across` is resolved by the checker (`target`
    alone means the target id); `max` is folded to a Literal."""

    name: str
    for_: Expr | None
    by: Expr
    across: Name
    max: Expr | None
    span: Span


Statement = Let | Deny | Rule | Quota | Check | Spread


@dataclass
class PolicyFile:
    path: str
    name: str | None
    statements: list[Statement]
    span: Span
    comments: list[tuple[int, str]] = field(default_factory=list)  # (line, text) for fmt


@dataclass
class Policy:
    """All policy files of a platform, merged in file-name order."""

    name: str | None
    files: list[PolicyFile]
    lets: list[Let] = field(default_factory=list)
    denies: list[Deny] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    quotas: list[Quota] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    spreads: list[Spread] = field(default_factory=list)
    constants: dict[str, int | float | str | bool | list[object]] = field(default_factory=dict)


# -- walking the tree -------------------------------------------------------------------------
N = TypeVar("N")


def _children(node: Any) -> list[str]:
    # A Policy holds its statements twice (per file, and merged): walk the merged lists.
    skip = "files" if isinstance(node, Policy) else ""
    return [
        f.name
        for f in dataclasses.fields(node)
        if not f.name.endswith(("span", "spans")) and f.name != skip
    ]


def walk(node: Any) -> Iterator[Any]:
    """Every tree node at or under `node`, each before its children, children in field
    order (`a and b`: the Binary, then a's nodes, then b's). `node` may be any node, a list
    or dict of them, or None (nothing). Spans, names and values are not nodes."""
    if node is None or isinstance(node, (str, int, float, Span)):
        return
    if isinstance(node, (list, tuple)):
        for item in node:
            yield from walk(item)
    elif isinstance(node, dict):
        for item in node.values():
            yield from walk(item)
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        yield node
        for name in _children(node):
            yield from walk(getattr(node, name))


def find(node: Any, kind: type[N]) -> Iterator[N]:
    """The nodes of type `kind` at or under `node`, in walk order: `find(rule, Name)`."""
    return (n for n in walk(node) if isinstance(n, kind))
