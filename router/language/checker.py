"""Validate a parsed policy and resolve its names, in place.

Every problem found is collected, then raised together (an ErrorGroup, or the one error).
After a successful check:
- every Name has `scope` ("workload", "target", "outcome" or "const"), `field` and, for a
  label, `key`;
- `Policy.constants` holds the folded value of each `let`, in base units;
- option values and arguments, quota amounts and spread maxima are folded into `Literal`s (a
  `let` name used there is replaced by its value; quantities keep their unit);
- a spread's `across` is a resolved target attribute (`target` alone: field "id");
- each key of a quota's `per` is a resolved workload field or target attribute with one value
  (see `_Checker.per_key` for how a bare name is read).
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Collection
from typing import Any

from router.errors import ErrorGroup, PolicyError, RouterError, Span, did_you_mean
from router.language import ast
from router.language.limits import MAX_NUMBER
from router.language.names import (
    OPTIONS,
    OUTCOME_NAMES,
    QUOTA_RESOURCES,
    TARGET_ATTRIBUTES,
    WORKLOAD_FIELDS,
    OptionSpec,
    value_format,
)
from router.models.fields import PRIORITIES, value_problem

# A folded constant: (value, type). Types are the tables' words ("number", "string", "bool",
# "list", "memory", "duration", "labels") plus "percent"; None is unknown.
Const = tuple[Any, str | None]
_NUMERIC = {"number", "memory", "duration", "percent"}
_WORDS = {
    "number": "a number", "string": "a string", "bool": "true or false", "list": "a list",
    "memory": "a memory size", "duration": "a duration", "percent": "a percentage",
    "labels": "labels",
}  # fmt: skip
_LIST_ITEMS = {"features": "string", "mig": "string"}  # what a list attribute holds
_COMPARE = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge,
}  # fmt: skip
_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul}
# Per context: its names, what they are, the other context's names, and what to say of those.
_SCOPES = {
    "workload": (
        WORKLOAD_FIELDS, "workload field", TARGET_ATTRIBUTES,
        "`{0}` is a target attribute; use it in `where`, `prefer` or a quota's `on`, not in `{1}`",
    ),
    "target": (
        TARGET_ATTRIBUTES, "target attribute", WORKLOAD_FIELDS,
        "`{0}` is a workload field; in `{1}` write `workload.{2}`",
    ),
}  # fmt: skip


def _type_of(value: Any, unit: str | None = None) -> str:
    kinds = ((bool, "bool"), ((int, float), "number"), (list, "list"))
    return unit or next((k for t, k in kinds if isinstance(value, t)), "string")


def _priority_word(e: ast.Binary) -> ast.Literal | None:
    """The string literal of `priority == "low"` when it names a priority, else None."""
    for name, other in ((e.left, e.right), (e.right, e.left)):
        if (
            isinstance(name, ast.Name)
            and (name.field or name.parts[-1]) == "priority"
            and isinstance(other, ast.Literal)
            and isinstance(other.value, str)
            and other.value in PRIORITIES
        ):
            return other
    return None


def _text(node: Any) -> str:
    """The source text of a node on one line, for messages."""
    span: Span = node.span
    if span.line != span.end_line:
        return "this expression"
    return span.source.line(span.line)[span.column - 1 : span.end_column - 1]


def _quoted(value: object) -> str:
    """A string value as the policy writes it (quoted, escaped), for messages."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else str(value)


def _arith(op: str, left: str | None, right: str | None) -> tuple[str | None, str | None]:
    """(result type, error) of `left op right`."""
    for t in (left, right):
        if t is not None and t not in _NUMERIC:
            return None, f"`{op}` needs numbers or quantities, not {_WORDS[t]}"
    if left is None or right is None:
        return (left or right) if op in "+-" else None, None
    if op in "+-":
        if left == right:
            return left, None
        verb = "add" if op == "+" else "subtract"
        unit = "; write the unit" if "number" in (left, right) else ""
        return None, f"cannot {verb} {_WORDS[left]} and {_WORDS[right]}{unit}"
    if op == "*":
        if "number" in (left, right):
            return right if left == "number" else left, None
        return None, f"cannot multiply {_WORDS[left]} by {_WORDS[right]}"
    if right == "number":
        return left, None
    if left == right:
        return "number", None
    return None, f"cannot divide {_WORDS[left]} by {_WORDS[right]}"


def _word(kind: str | None) -> str:
    return _WORDS.get(kind or "", "a value of unknown type")


def _literal(value: Any, span: Span, kind: str | None, text: str) -> ast.Literal:
    unit: Any = kind if kind in ("memory", "duration", "percent") else None  # an ast.UnitKind
    return ast.Literal(value, span, unit, text)


def _comparable(a: str | None, b: str | None) -> bool:
    return a is None or b is None or a == b or {a, b} <= {"number", "percent"}


class _Checker:
    def __init__(self, policy: ast.Policy) -> None:
        self.policy = policy
        self.errors: list[RouterError] = []
        self.consts: dict[str, Const] = {}
        self.lets = {let.name: let for let in policy.lets}

    def error(self, message: str, span: Span, hint: str | None = None) -> None:
        self.errors.append(PolicyError(message, span, hint=hint))

    # -- the whole policy ------------------------------------------------------------------
    def run(self) -> None:
        p = self.policy
        for group in ([*p.rules, *p.denies], p.quotas, p.checks, p.spreads, p.lets):
            self.duplicates(group)
        for let in p.lets:
            self.let(let)
        for when in [d.when for d in p.denies] + [r.when for r in p.rules]:
            self.expr(when, "workload", "when")
        for route in (route for rule in p.rules for route in rule.routes):
            self.route(route)
        for quota in p.quotas:
            self.expr(quota.for_, "workload", "for")
            self.expr(quota.on, "target", "on")
            self.per(quota)
            for limit in quota.limits:
                self.limit(limit)
        for check in p.checks:
            self.expr(check.for_, "workload", "for")
            self.expr(check.expect, "outcome", "expect")
        for spread in p.spreads:
            self.spread(spread)

    def duplicates(self, statements: list[Any]) -> None:
        seen: dict[str, Any] = {}
        for st in sorted(statements, key=lambda st: (st.span.path, st.span.line)):
            if st.name not in seen:
                seen[st.name] = st
                continue
            first = seen[st.name]
            kind, first_kind = type(st).__name__.lower(), type(first).__name__.lower()
            at, hint = name_span(first).location(), None
            message = f"{kind} `{st.name}` is defined twice; the first is at {at}"
            if first_kind != kind:  # a plan names the rule or deny that decided: one namespace
                message = f"{kind} `{st.name}` has the name of the {first_kind} at {at}"
                hint = "rules and denies share one set of names"
            self.error(message, name_span(st), hint)

    def let(self, let: ast.Let) -> None:
        tables: dict[str, Collection[str]] = {"option": OPTIONS, "routing outcome": OUTCOME_NAMES}
        tables.update({"workload field": WORKLOAD_FIELDS, "target attribute": TARGET_ATTRIBUTES})
        clash = next((w for w, t in tables.items() if let.name in t), None)
        if clash or let.name in ("workload", "target"):
            message = f"`{let.name}` is a {clash or 'prefix'} name; give the constant another name"
            self.error(message, name_span(let))
        folded = self.constant(let.value, "let")
        self.consts[let.name] = folded or (None, None)
        if folded is not None and let.name not in self.policy.constants:
            self.policy.constants[let.name] = folded[0]

    # -- names -----------------------------------------------------------------------------
    def name(self, n: ast.Name, ctx: str, clause: str) -> str | None:
        """Resolve `n` where `ctx` names are valid; its type, or None if unknown or wrong."""
        p, dotted = n.parts, ".".join(n.parts)
        if len(p) == 1 and p[0] in self.consts:
            n.scope, n.field = "const", p[0]
            return self.consts[p[0]][1]
        if ctx == "const":
            self.not_constant(n, clause)
            return None
        if p[0] == "workload" and clause == "on":  # `on` is read once per target, alone
            hint = "a quota's `on` chooses targets; conditions on workloads go in its `for`"
            self.error(f"`{dotted}` is a workload field; a quota's `on` takes target attributes",
                       n.span, hint)  # fmt: skip
            return None
        if p[0] in ("workload", "target") and (ctx == "target" or p[0] == ctx == "workload"):
            return self.field(n, p[1:], p[0])
        if ctx == "outcome":
            return self.outcome(n)
        table, what, other, wrong = _SCOPES[ctx]
        if p[0] in table:
            return self.field(n, p, ctx)
        if p[0] in other or p[0] == "target":  # `target.x` in a `when`: also the wrong place
            self.error(wrong.format(dotted if p[0] == "target" else p[0], clause, dotted), n.span)
            return None
        self.error(f"unknown {what} `{dotted}`", n.span, did_you_mean(p[0], [*table, *self.consts]))
        return None

    def outcome(self, n: ast.Name) -> str | None:
        name = n.parts[0]
        if len(n.parts) == 1 and (name in OUTCOME_NAMES or name in OPTIONS):
            n.scope, n.field = "outcome", name
            kind = OPTIONS[name].type if name in OPTIONS else OUTCOME_NAMES[name]
            return "bool" if kind in ("flag", "call") else kind  # a flag or call: given or not
        hint = did_you_mean(name, [*OUTCOME_NAMES, *OPTIONS, *self.consts]) or (
            f"`expect` names an outcome ({', '.join(OUTCOME_NAMES)}) or an option (exclusive, ...)"
        )
        self.error(f"unknown routing outcome `{'.'.join(n.parts)}`", n.span, hint)
        return None

    def not_constant(self, n: ast.Name, clause: str) -> None:
        dotted = ".".join(n.parts)
        later = self.lets.get(dotted)
        hint = did_you_mean(dotted, self.consts)
        if clause == "let" and later is not None:
            message = f"constant `{dotted}` is defined later, at {name_span(later).location()}"
            hint = "a constant can use only the constants defined before it"
        elif clause == "let":
            message = f"unknown constant `{dotted}`"
        else:
            message = f"`{dotted}` is not a constant; {clause} values are fixed in the policy"
        self.error(message, n.span, hint=hint)

    def field(self, n: ast.Name, rest: tuple[str, ...], scope: str) -> str | None:
        """Resolve a workload field or target attribute (`rest` is without the prefix)."""
        table, what = _SCOPES[scope][:2]
        if not rest:
            self.error(f"`{n.parts[0]}` needs a field, as in `workload.gpus`", n.span)
            return None
        name, kind = rest[0], table.get(rest[0])
        if kind is None:
            self.error(f"unknown {what} `{name}`", n.span, hint=did_you_mean(name, table))
            return None
        if kind == "labels" and len(rest) > 2:
            hint = f'quote a key with dots: labels."{".".join(rest[1:])}"'
            self.error("a label is written `labels.KEY`", n.span, hint=hint)
            return None
        if kind != "labels" and len(rest) > 1:
            self.error(f"{what} `{name}` has no part `{rest[1]}`", n.span)
            return None
        n.scope, n.field = scope, name
        if kind == "labels":
            n.key = rest[1] if len(rest) == 2 else None
            return "string" if n.key is not None else "labels"
        return kind

    # -- expressions -----------------------------------------------------------------------
    def expr(self, e: ast.Expr | None, ctx: str, clause: str) -> str | None:
        """Resolve the names of `e` and check its types; the type of `e`."""
        if e is None:
            return None
        if isinstance(e, ast.Literal):
            return _type_of(e.value, e.unit)
        if isinstance(e, ast.Name):
            return self.name(e, ctx, clause)
        if isinstance(e, ast.ListExpr):
            for item in e.items:
                self.expr(item, ctx, clause)
            return "list"
        if isinstance(e, ast.Unary):
            inner = self.expr(e.operand, ctx, clause)
            if e.op == "not":
                return "bool"
            if inner is not None and inner not in _NUMERIC:
                self.error(f"`-` needs a number, not {_WORDS[inner]}", e.span)
                return None
            return inner
        left, right = self.expr(e.left, ctx, clause), self.expr(e.right, ctx, clause)
        if e.op in ("and", "or"):
            return "bool"
        if e.op in ("in", "not in"):
            self.membership(e, left, right)
            return "bool"
        if e.op in _COMPARE:
            self.comparison(e, left, right)
            return "bool"
        result, problem = _arith(e.op, left, right)
        if problem:
            self.error(problem, e.span)
        return result

    def comparison(self, e: ast.Binary, left: str | None, right: str | None) -> None:
        hint = None
        if not _comparable(left, right):
            if "number" in (left, right) and {left, right} & {"memory", "duration"}:
                hint = "write the number with its unit, such as 64GiB or 48h"
            elif "list" in (left, right):
                item, items = (e.right, e.left) if left == "list" else (e.left, e.right)
                hint = f"to test membership, write `{_text(item)} in {_text(items)}`"
            elif (word := _priority_word(e)) is not None:
                values = ", ".join(f"{k} {v}" for k, v in PRIORITIES.items())
                name = _text(e.left if word is e.right else e.right)
                hint = (
                    f"priority is a number ({values}): write `{name} {e.op} "
                    f"{PRIORITIES[str(word.value)]}`"
                )
            sides = f"`{_text(e.left)}` ({_word(left)}) with `{_text(e.right)}` ({_word(right)})"
            self.error(f"cannot compare {sides}", e.span, hint)
        elif e.op not in ("==", "!=") and ({left, right} & {"bool", "list", "labels"}):
            kind = next(t for t in (left, right) if t in ("bool", "list", "labels"))
            self.error(f"`{e.op}` cannot order {_WORDS[kind]}", e.span)

    def membership(self, e: ast.Binary, left: str | None, right: str | None) -> None:
        if right is not None and right not in ("list", "labels", "string"):
            needs = f"`{e.op}` needs a list, labels or a string on its right"
            self.error(f"{needs}, not {_WORDS[right]}", e.right.span)
            return
        if left is None:
            return
        if isinstance(e.right, ast.ListExpr):
            for item in e.right.items:
                folded = self.fold(item)
                item_type = folded[1] if folded else None
                if not _comparable(left, item_type):
                    but = f"but `{_text(e.left)}` is {_WORDS[left]}"
                    self.error(f"`{_text(item)}` is {_word(item_type)}, {but}", item.span)
            return
        holds = "string" if right in ("labels", "string") else None
        if isinstance(e.right, ast.Name) and e.right.field in _LIST_ITEMS:
            holds = _LIST_ITEMS[e.right.field]
        if holds and not _comparable(left, holds):
            self.error(f"`{_text(e.right)}` holds strings, not {_WORDS[left]}", e.left.span)

    def constant(self, e: ast.Expr, clause: str) -> Const | None:
        """The folded value of `e`, which must be constant; None after reporting why not."""
        before = len(self.errors)
        self.expr(e, "const", clause)
        return self.fold(e) if len(self.errors) == before else None

    def fold(self, e: ast.Expr) -> Const | None:
        """The value of a constant expression whose names are resolved and types checked."""
        if isinstance(e, ast.Literal):
            return e.value, _type_of(e.value, e.unit)
        if isinstance(e, ast.Name):
            return self.consts.get(e.field or "") if e.scope == "const" else None
        if isinstance(e, ast.ListExpr):
            items = [self.fold(i) for i in e.items]
            return None if any(i is None for i in items) else ([i[0] for i in items if i], "list")
        if isinstance(e, ast.Unary):
            inner = self.fold(e.operand)
            if inner is None or inner[0] is None:
                return None
            return (not inner[0], "bool") if e.op == "not" else (-inner[0], inner[1])
        left, right = self.fold(e.left), self.fold(e.right)
        if not left or not right or left[0] is None or right[0] is None:
            return None
        try:
            folded = _apply(e.op, left[0], right[0], left[1], right[1])
        except ZeroDivisionError:
            self.error("division by zero", e.span)
            return None
        except TypeError:  # values of mixed types: the type check has said so
            return None
        value = folded[0] if folded else None
        # Checked at each step, so no product grows past what a float holds.
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
        if numeric and (not math.isfinite(value) or abs(value) > MAX_NUMBER):  # type: ignore[arg-type]
            self.error(f"the value of `{_text(e)}` is out of range: at most 10^15",
                       e.span, "see docs/limits.md")  # fmt: skip
            return None
        return folded

    # -- routes, options, quotas -----------------------------------------------------------
    def route(self, route: ast.Route) -> None:
        self.expr(route.where, "target", "where")
        for pref in route.prefer:
            kind = self.expr(pref.expr, "target", "prefer")
            if pref.direction and kind is not None and kind not in _NUMERIC:
                message = f"`prefer {pref.direction}` ranks by a number, not {_WORDS[kind]}"
                self.error(message, pref.expr.span)
        seen: dict[str, ast.Option] = {}
        for opt in route.options:
            if opt.name in seen:
                first = f"the first is at {seen[opt.name].span.location()}"
                self.error(f"option `{opt.name}` is given twice in this route", opt.span, first)
            seen[opt.name] = opt
            self.option(opt, route.backend)

    def option(self, opt: ast.Option, backend: str) -> None:
        spec = OPTIONS.get(opt.name)
        if spec is None:
            hint = did_you_mean(opt.name, OPTIONS) or "options: " + ", ".join(sorted(OPTIONS))
            self.error(f"unknown option `{opt.name}`", opt.span, hint)
            return
        if backend != "any" and backend not in spec.backends:
            owner = " and ".join(spec.backends)
            self.error(f"`{opt.name}` is a {owner} option; this route goes to {backend}", opt.span)
        if spec.type == "call":
            self.call(opt, spec)
            return
        if opt.is_call:
            self.error(f"`{opt.name}` takes no arguments; {_usage(spec)}", opt.span)
            return
        if opt.value is None:
            if spec.type != "flag":
                self.error(f"`{opt.name}` needs a value: {_usage(spec)}", opt.span)
            return
        want = "bool" if spec.type == "flag" else spec.type
        value = self.const_value(opt.value, want, f"`{opt.name}` expects {_example(spec)}")
        if value is None:
            return
        items: list[object] = value.value if isinstance(value.value, list) else []
        if spec.type == "list" and not all(isinstance(v, str) for v in items):
            self.error(f"`{opt.name}` expects {_example(spec)}", opt.value.span)
            return
        if spec.choices and value.value not in spec.choices:
            message = f"`{opt.name}` expects {_example(spec)}; got {_text(opt.value)}"
            self.error(message, opt.value.span, did_you_mean(str(value.value), spec.choices))
        fmt = value_format(spec)
        problem = value_problem(fmt, str(value.value)) if fmt else None
        if problem:  # the rule the emitters apply, here at the value's position
            got = _text(opt.value)
            if not isinstance(opt.value, ast.Literal):  # a constant: say what it holds
                got = f"{got} = {_quoted(value.value)}"
            self.error(f"`{opt.name}` {problem}; got {got}", opt.value.span)
        opt.value = value

    def call(self, opt: ast.Option, spec: OptionSpec) -> None:
        if opt.value is not None:
            self.error(f"`{opt.name}` takes arguments, not a value: {_usage(spec)}", opt.span)
            return
        if not opt.is_call:
            if not spec.flag_ok:
                self.error(f"`{opt.name}` needs arguments: {_usage(spec)}", opt.span)
            return
        values: dict[str, Any] = {}
        for arg, expr in list(opt.args.items()):
            span = opt.arg_spans.get(arg, expr.span)
            if arg not in spec.args:
                hint = did_you_mean(arg, spec.args) or _usage(spec)
                self.error(f"`{opt.name}` has no argument `{arg}`", span, hint)
                continue
            kind, low = spec.args[arg], 1 if opt.name == "hpa" else 0  # HPA replicas are >= 1
            what = "a percentage above 0%" if kind == "percent" else f"a whole number >= {low}"
            lit = self.const_value(expr, kind, f"`{arg}` of `{opt.name}` expects {what}")
            if lit is None:
                continue
            value: Any = lit.value  # a number: const_value checked its type
            if value <= 0 if kind == "percent" else value != int(value) or value < low:
                self.error(f"`{arg}` of `{opt.name}` expects {what}", expr.span)
                continue
            opt.args[arg], values[arg] = lit, value
        if opt.name == "hpa" and values.get("min", 0) > values.get("max", float("inf")):
            self.error("`min` of `hpa` is above its `max`", opt.span)
        if opt.name == "pdb" and len(set(opt.args) & set(spec.args)) != 1:
            self.error("`pdb` takes exactly one of min_available or max_unavailable", opt.span)

    def const_value(self, e: ast.Expr, want: str, expects: str) -> ast.Literal | None:
        """`e` folded into a Literal of type `want`, or None after reporting why not."""
        folded = self.constant(e, "option")
        if folded is None:
            return None
        value, kind = folded
        if kind != want:
            self.error(f"{expects}; got `{_text(e)}` ({_word(kind)})", e.span)
            return None
        return _literal(value, e.span, kind, _text(e))

    def limit(self, limit: ast.Limit) -> None:
        span = limit.resource_span or limit.span
        if limit.resource not in QUOTA_RESOURCES:
            hint = did_you_mean(limit.resource, QUOTA_RESOURCES)
            hint = hint or "resources: " + ", ".join(QUOTA_RESOURCES)
            self.error(f"unknown quota resource `{limit.resource}`", span, hint)
            return
        folded = self.constant(limit.amount, "limit")
        if folded is None:
            return
        value, kind = folded
        allowed = {"number", "percent"} | ({"memory"} if limit.resource == "memory" else set())
        if kind == "number" and limit.resource == "memory":
            problem = "a memory limit needs a unit, such as 8TiB, or a percentage"
        elif kind not in allowed:
            problem = f"a limit on {limit.resource} is a number or a percentage, not " + _word(kind)
        elif kind == "percent" and not 0 < value <= 1:
            problem = "a percentage limit must be above 0% and at most 100%"
        elif value < 0:
            problem = "a limit cannot be negative"
        else:
            limit.amount = _literal(value, limit.amount.span, kind, _text(limit.amount))
            return
        self.error(problem, limit.amount.span)

    def per(self, quota: ast.Quota) -> None:
        seen: dict[tuple[str | None, str | None, str | None], ast.Name] = {}
        for n in quota.per:
            if not self.per_key(n):
                continue
            same = (n.scope, n.field, n.key)
            if same in seen:
                first = seen[same]
                message = f"`{'.'.join(n.parts)}` is given twice in `per`"
                if first.parts != n.parts:
                    message += f" (as `{'.'.join(first.parts)}`)"
                self.error(message, n.span, f"the first is at {first.span.location()}")
            seen.setdefault(same, n)

    def per_key(self, n: ast.Name) -> bool:
        """Resolve a key of a quota's `per`; whether it resolved.

        `workload.X` is a workload field and `target.X` a target attribute; `target` alone is
        the target itself (its id). A bare name is a target attribute if targets have it
        (`cluster`, `backend`, `name`, `gpu_type`, ...), else a workload field (`team`,
        `kind`, `priority`, ...). A bare `labels.X` is refused: a workload and a target both
        have labels, and `for` and `on` read the bare name the opposite ways.
        """
        p, dotted = n.parts, ".".join(n.parts)
        if p == ("target",):
            n.scope, n.field = "target", "id"
            return True
        kind: str | None
        if p[0] in ("workload", "target"):
            kind = self.field(n, p[1:], p[0])
        elif p[0] == "labels":
            hint = f"write `workload.{dotted}` or `target.{dotted}`"
            self.error(
                f"`{dotted}` in `per` could be a workload label or a target label", n.span, hint
            )
            return False
        elif p[0] in TARGET_ATTRIBUTES:
            kind = self.field(n, p, "target")
        elif p[0] in WORKLOAD_FIELDS:
            kind = self.field(n, p, "workload")
        else:
            hint = did_you_mean(p[0], [*TARGET_ATTRIBUTES, *WORKLOAD_FIELDS, "target"]) or (
                "`per` takes a workload field (team, kind, ...) or a target attribute "
                "(cluster, backend, ...)"
            )
            if dotted in self.consts:
                message, hint = f"`{dotted}` is a constant; `per` takes", None
            else:
                message = f"unknown key `{dotted}` in `per`: it takes"
            self.error(f"{message} a workload field or a target attribute", n.span, hint)
            return False
        if kind in ("list", "labels"):
            hint = f"write `{dotted}.KEY`" if kind == "labels" else None
            self.error(
                f"`per` needs one value per workload or target; `{dotted}` is {_WORDS[kind]}",
                n.span,
                hint,
            )
            n.scope = n.field = None
            return False
        return kind is not None

    def spread(self, sp: ast.Spread) -> None:
        self.expr(sp.for_, "workload", "for")
        kind = self.expr(sp.by, "workload", "by")
        if kind in ("labels", "list"):
            hint = "group by one value, such as labels.app or team"
            self.error(f"`by` needs one value per workload, not {_WORDS[kind]}", sp.by.span, hint)
        self.across(sp.across)
        if sp.max is None:
            return
        folded = self.constant(sp.max, "max")
        if folded is None:
            return
        value, kind = folded
        if kind != "number" or value != int(value) or value < 1:
            self.error(
                "`max` of a spread is a whole number >= 1",
                sp.max.span,
                "the most members of one group on one value; leave it out for an even share",
            )
            return
        sp.max = _literal(int(value), sp.max.span, kind, _text(sp.max))

    def across(self, n: ast.Name) -> None:
        """`across` takes a target attribute with one value per target, or `target` (its id)."""
        p, dotted = n.parts, ".".join(n.parts)
        if p == ("target",):
            n.scope, n.field = "target", "id"
            return
        rest = p[1:] if p[0] == "target" else p
        if not rest or rest[0] not in TARGET_ATTRIBUTES:
            word = rest[0] if rest else p[0]
            if p[0] == "workload" or word in WORKLOAD_FIELDS:
                message = f"`{dotted}` is a workload field; `across` takes a target attribute"
                hint = "group workloads with `by`; `across` names what must differ, e.g. cluster"
            else:
                message = f"unknown target attribute `{dotted}`"
                hint = did_you_mean(word, [*TARGET_ATTRIBUTES, "target"]) or (
                    "`across` takes a target attribute: "
                    + ", ".join(TARGET_ATTRIBUTES)
                    + ", or target"
                )
            self.error(message, n.span, hint)
            return
        kind = self.field(n, rest, "target")
        if kind in ("list", "labels"):
            hint = "write labels.KEY" if kind == "labels" else "spread across cluster, name, ..."
            message = f"`across` needs one value per target; `{dotted}` is {_WORDS[kind]}"
            self.error(message, n.span, hint)
            n.scope = n.field = None


def _apply(op: str, a: Any, b: Any, ta: str | None, tb: str | None) -> Const | None:
    """Fold one binary operation on constant values (types already checked)."""
    if op in ("and", "or"):
        return (bool(a) and bool(b) if op == "and" else bool(a) or bool(b)), "bool"
    if op in ("in", "not in"):
        return (a in b) == (op == "in"), "bool"
    if op in _COMPARE:
        return _COMPARE[op](a, b), "bool"
    kind, problem = _arith(op, ta, tb)
    if problem:
        return None
    if op in _ARITH:
        return _ARITH[op](a, b), kind
    if isinstance(a, int) and isinstance(b, int) and b and a % b == 0:
        return a // b, kind  # whole numbers stay whole
    return a / b, kind


def _usage(spec: OptionSpec) -> str:
    if spec.type == "call":
        return f"{spec.name}({', '.join(f'{a} = ...' for a in spec.args)})"
    value = {"flag": "true", "duration": "48h", "list": '["..."]'}.get(
        spec.type, f'"{(*spec.choices, "...")[0]}"'
    )
    return f"{spec.name} = {value}"


def _example(spec: OptionSpec) -> str:
    if spec.choices:
        return "one of " + ", ".join(spec.choices)
    words = {
        "duration": "a duration such as 48h",
        "flag": "true or false",
        "list": 'a list of strings such as ["research-only"]',
    }
    return words.get(spec.type, "a string in quotes")


def name_span(st: Any) -> Span:
    """The span of a statement's name (`rule NAME:`), found after its keyword."""
    span: Span = st.span
    line = span.source.line(span.line)
    after_keyword = line.find(" ", span.column - 1)
    col = line.find(st.name, after_keyword) if after_keyword >= 0 else -1
    if col < 0:
        return span
    return Span(span.source, span.line, col + 1, span.line, col + 1 + len(st.name))


def check_policy(policy: ast.Policy) -> ast.Policy:
    """Check `policy` and resolve it in place; raise every problem found at once."""
    checker = _Checker(policy)
    checker.run()
    errors = sorted(
        checker.errors, key=lambda e: (e.path or "", e.line or 0, e.span.column if e.span else 0)
    )
    if errors:
        raise errors[0] if len(errors) == 1 else ErrorGroup(errors)
    return policy
