"""Policy text → syntax tree (ast.py), with every node's span and errors in user words.

The tree is built while parsing (lark's LALR with an inline transformer): no parse tree is
built, and a 100-line policy parses in about 1.5 ms (2 ms if dense) once the parser exists.
The parser is made once per process: building its tables from the grammar takes ~0.3 s, so
they are kept in the user's cache folder (cache.py) and read back in ~0.05 s. Syntax errors
become PolicySyntaxError, worded by grammar.py: lark's terminal names never reach a user.
"""

from __future__ import annotations

import contextvars
import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedToken

from router.errors import (
    PolicyError,
    PolicySyntaxError,
    Source,
    Span,
)
from router.language import ast
from router.language.cache import cached_lark
from router.language.grammar import (
    Problem,
    RouteLexer,
    char_error,
    grammar_text,
    quantity_literal,
    string_value,
    token_error,
)
from router.language.limits import MAX_DEPTH, MAX_NUMBER, too_deep

# The inline transformer is built once with the parser, so the file being parsed reaches it
# through a context variable rather than an attribute.
_SOURCE: contextvars.ContextVar[Source] = contextvars.ContextVar("router_policy_source")
_PARSER: Lark | None = None

_OPS = {"≥": ">=", "≤": "<=", "≠": "!="}
_COMMENT_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"|(#[^\n]*)')


@dataclass
class _PolicyName:
    name: str
    span: Span


@dataclass
class _Part:
    """One `with`, `where` or `prefer` clause of a route, before the route is assembled."""

    kind: str
    span: Span
    options: list[ast.Option] = field(default_factory=list)
    where: ast.Expr | None = None
    prefer: list[ast.Prefer] = field(default_factory=list)


@dataclass
class _Arg:
    name: str
    value: ast.Expr
    span: Span


# A Span is a frozen dataclass; filling its __dict__ directly is a third of the cost of its
# __init__, and _span runs for every node. Only while Span is still exactly these fields.
_SPAN_FIELDS = ("source", "line", "column", "end_line", "end_column")
_FAST_SPAN = tuple(f.name for f in dataclasses.fields(Span)) == _SPAN_FIELDS and not hasattr(
    Span, "__post_init__"
)


def _span(first: Any, last: Any | None = None) -> Span:
    """The span from the start of `first` to the end of `last` (tokens or built nodes)."""
    if last is None:
        last = first
    start: Any = first if type(first) is Token else first.span
    end: Any = last if type(last) is Token else last.span
    if not _FAST_SPAN:
        return Span(_SOURCE.get(), start.line, start.column, end.end_line, end.end_column)
    span = object.__new__(Span)
    fields = span.__dict__
    fields["source"], fields["line"], fields["column"] = _SOURCE.get(), start.line, start.column
    fields["end_line"], fields["end_column"] = end.end_line, end.end_column
    return span


_DEPTH_HINT = f"an expression nests at most {MAX_DEPTH} levels deep; see docs/limits.md"
_PREC = {"or": 1, "and": 2, "not": 3, "+": 5, "-": 5, "*": 6, "/": 6}
_PREC.update({op: 4 for op in ("==", "!=", "<", "<=", ">", ">=", "in", "not in")})
_UNARY_MINUS = 7


class _Precedence:
    """Builds the tree of a flat run `[prefix...] operand (operator [prefix...] operand)*`
    by precedence climbing; the levels are in _PREC (a larger number binds tighter)."""

    def __init__(self, items: list[Any]) -> None:
        self.items, self.i = items, 0

    def parse(self) -> ast.Expr:
        return self._expr(0)

    def _operator(self) -> tuple[str, Token] | None:
        if self.i >= len(self.items):
            return None
        tok: Token = self.items[self.i]
        if tok.type == "NOT":  # `not in`: the only operator of two tokens
            return "not in", tok
        op = str(tok)
        return _OPS.get(op, op), tok

    def _expr(self, min_prec: int) -> ast.Expr:
        item = self.items[self.i]
        self.i += 1
        left: ast.Expr
        if isinstance(item, Token) and item.type == "NOT":
            if min_prec > _PREC["not"]:
                raise Problem(
                    "`not` needs parentheses here",
                    _span(item),
                    hint="write `(not ...)`, or put `not` before the whole comparison",
                )
            operand = self._expr(_PREC["not"])
            left = ast.Unary("not", operand, _span(item, operand))
        elif isinstance(item, Token):  # a prefix minus
            operand = self._expr(_UNARY_MINUS)
            left = ast.Unary("-", operand, _span(item, operand))
        else:
            left = item
        while (found := self._operator()) is not None:
            op = found[0]
            prec = _PREC[op]
            if prec < min_prec:
                break
            self.i += 2 if op == "not in" else 1
            right = self._expr(prec + 1)
            left = ast.Binary(op, left, right, _span(left, right))
            if prec == 4 and (after := self._operator()) and _PREC[after[0]] == 4:
                raise Problem(
                    "comparisons do not chain",
                    _span(after[1]),
                    hint="write `a < b and b < c`",
                )
        return left


def _tree(run: list[Any]) -> ast.Expr:
    """The expression of a flat run (see the grammar's `run`)."""
    if len(run) == 1:
        only: ast.Expr = run[0]
        return only
    return _Precedence(run).parse()


def _opt(run: list[Any] | None) -> ast.Expr | None:
    return None if run is None else _tree(run)


def _number(tok: Token) -> ast.Literal:
    text = tok.value
    # Length first: int() refuses more than 4,300 digits, and CP-SAT takes 64-bit integers.
    whole = text.split(".", 1)[0].lstrip("0")
    value: int | float = 0
    if len(whole) <= len(str(MAX_NUMBER)):
        value = float(text) if tok.type == "FLOAT" else int(text)
    if len(whole) > len(str(MAX_NUMBER)) or value > MAX_NUMBER:
        shown = text if len(text) <= 24 else text[:21] + "..."
        raise Problem(
            f"the number {shown} is too large: a number in a policy is at most 10^15",
            _span(tok),
            hint="see docs/limits.md",
        )
    return ast.Literal(value, _span(tok), None, text)


def _string(tok: Token) -> ast.Literal:
    return ast.Literal(string_value(_SOURCE.get(), tok), _span(tok), None, tok.value)


def _boolean(tok: Token) -> ast.Literal:
    return ast.Literal(tok.type == "TRUE", _span(tok), None, tok.value)


def _quantity(tok: Token) -> ast.Literal:
    return quantity_literal(tok, _span(tok))


def _name(tok: Token) -> ast.Name:
    return ast.Name((tok.value,), _span(tok))


_OPERANDS = {
    "INT": _number,
    "FLOAT": _number,
    "QUANTITY": _quantity,
    "STRING": _string,
    "TRUE": _boolean,
    "FALSE": _boolean,
    "NAME": _name,
}


class _Build(Transformer[Token, Any]):
    """Builds ast nodes as lark reduces each rule (children are tokens or built nodes).

    Left-recursive list rules extend the list they receive: lark calls these only while
    parsing (its error recovery probes run without callbacks), so nothing is built twice.
    """

    # -- statements ------------------------------------------------------------------------
    def start(self, c: list[Any]) -> list[Any]:
        return c[0] or []

    def statements(self, c: list[Any]) -> list[Any]:
        if len(c) == 1:
            return c
        c[0].append(c[1])
        result: list[Any] = c[0]
        return result

    def policy_stmt(self, c: list[Any]) -> _PolicyName:
        return _PolicyName(c[1].value, _span(c[0], c[1]))

    def let_stmt(self, c: list[Any]) -> ast.Let:
        value = _tree(c[3])
        return ast.Let(c[1].value, value, _span(c[0], value))

    def deny_stmt(self, c: list[Any]) -> ast.Deny:
        return ast.Deny(
            c[1].value, _opt(c[4]), string_value(_SOURCE.get(), c[6]), _span(c[0], c[6])
        )

    def rule_stmt(self, c: list[Any]) -> ast.Rule:
        routes: list[ast.Route] = [c[5]]
        for i in range(6, len(c), 2):  # ELSE route pairs
            route: ast.Route = c[i + 1]
            route.rank = len(routes)
            route.span = _span(c[i], route)
            routes.append(route)
        return ast.Rule(c[1].value, _opt(c[4]), routes, _span(c[0], routes[-1]))

    def quota_stmt(self, c: list[Any]) -> ast.Quota:
        limits: list[ast.Limit] = c[9]
        return ast.Quota(
            c[1].value, _opt(c[4]), _opt(c[6]), limits, _span(c[0], limits[-1]), c[8] or []
        )

    def per_keys(self, c: list[Any]) -> list[ast.Name]:
        key: ast.Name = _name(c[-1]) if type(c[-1]) is Token else c[-1]
        if len(c) == 1:
            return [key]
        c[0].append(key)
        found: list[ast.Name] = c[0]
        return found

    def check_stmt(self, c: list[Any]) -> ast.Check:
        expect = _tree(c[6])
        return ast.Check(c[1].value, _opt(c[4]), expect, _span(c[0], expect))

    def spread_stmt(self, c: list[Any]) -> ast.Spread:
        across: ast.Name = _name(c[8]) if type(c[8]) is Token else c[8]
        most = _opt(c[10])
        end = most if most is not None else across
        return ast.Spread(c[1].value, _opt(c[4]), _tree(c[6]), across, most, _span(c[0], end))

    def limits(self, c: list[Any]) -> list[ast.Limit]:
        found: list[ast.Limit] = c[0] if len(c) == 5 else []
        kw, resource, op, run = c[-4:]
        amount = _tree(run)
        found.append(
            ast.Limit(
                resource.value,
                amount,
                _span(kw, amount),
                "<" if op.value == "<" else "<=",
                _span(resource),
            )
        )
        return found

    # -- routes ----------------------------------------------------------------------------
    def route_head(self, c: list[Any]) -> ast.Route:
        first = c[0]
        if type(first) is Token:
            backend = c[1]
            return ast.Route(backend.value, _span(first, backend), backend_span=_span(backend))
        route: ast.Route = first  # a bare option name right after the backend
        route.options.append(ast.Option(c[1].value, _span(c[1])))
        route.span = _span(route, c[1])
        return route

    def route(self, c: list[Any]) -> ast.Route:
        route: ast.Route = c[0]
        if len(c) == 1:
            return route
        part: _Part = c[1]
        route.span = _span(route, part)
        if part.kind == "with":
            route.options.extend(part.options)
        elif part.kind == "prefer":
            route.prefer.extend(part.prefer)
        elif route.where is not None:
            raise Problem("a route takes one `where`", part.span, "join the conditions with `and`")
        else:
            route.where = part.where
        return route

    def with_part(self, c: list[Any]) -> _Part:
        if len(c) == 2:
            return _Part("with", _span(c[0], c[1]), options=[c[1]])
        part: _Part = c[0]
        part.options.append(c[2])
        part.span = _span(part, c[2])
        return part

    def where_part(self, c: list[Any]) -> _Part:
        where = _tree(c[1])
        return _Part("where", _span(c[0], where), where=where)

    def prefer_part(self, c: list[Any]) -> _Part:
        if len(c) == 2:
            return _Part("prefer", _span(c[0], c[1]), prefer=[c[1]])
        part: _Part = c[0]
        part.prefer.append(c[2])
        part.span = _span(part, c[2])
        return part

    def pref(self, c: list[Any]) -> ast.Prefer:
        expr = _tree(c[-1])
        if len(c) == 1:
            return ast.Prefer(expr, expr.span)
        lower = c[0].type == "LOWER"
        return ast.Prefer(expr, _span(c[0], expr), "lower" if lower else "higher")

    def flag_option(self, c: list[Any]) -> ast.Option:
        return ast.Option(c[0].value, _span(c[0]))

    def value_option(self, c: list[Any]) -> ast.Option:
        value = _tree(c[2])
        return ast.Option(c[0].value, _span(c[0], value), value=value)

    def call_option(self, c: list[Any]) -> ast.Option:
        opt = ast.Option(c[0].value, _span(c[0], c[3]), is_call=True)
        for arg in c[2] or ():
            if arg.name in opt.args:
                raise Problem(f"`{arg.name}` is given twice in `{opt.name}(...)`", arg.span)
            opt.args[arg.name] = arg.value
            opt.arg_spans[arg.name] = arg.span
        return opt

    def args(self, c: list[Any]) -> list[_Arg]:
        if len(c) == 1:
            return c
        c[0].append(c[2])
        found: list[_Arg] = c[0]
        return found

    def arg(self, c: list[Any]) -> _Arg:
        value = _tree(c[2])
        return _Arg(c[0].value, value, _span(c[0], value))

    # -- expressions -----------------------------------------------------------------------
    def run(self, c: list[Any]) -> list[Any]:
        """The flat run of an expression: prefixes, operands (built) and operator tokens."""
        items: list[Any]
        if type(c[0]) is list:
            items, rest = c[0], c[1:]
        else:
            items, rest = [], c
        for x in rest:
            if type(x) is Token:
                make = _OPERANDS.get(x.type)
                items.append(make(x) if make else x)
            elif type(x) is tuple:
                items.extend(x)
            else:
                items.append(x)
        return items

    def prefix(self, c: list[Any]) -> tuple[Token, ...]:
        if len(c) == 1:
            return (c[0],)
        if len(c[0]) >= MAX_DEPTH:  # each prefix is a level of the tree (and of recursion)
            raise Problem(
                f"more than {MAX_DEPTH} `not` or `-` in a row", _span(c[1]), hint=_DEPTH_HINT
            )
        return (*c[0], c[1])

    def dotted(self, c: list[Any]) -> ast.Name:
        first, last = c[0], c[2]
        part = string_value(_SOURCE.get(), last) if last.type == "STRING" else last.value
        if type(first) is Token:
            return ast.Name((first.value, part), _span(first, last))
        return ast.Name((*first.parts, part), _span(first, last))

    def list_expr(self, c: list[Any]) -> ast.ListExpr:
        return ast.ListExpr(c[1] or [], _span(c[0], c[-1]))

    def items(self, c: list[Any]) -> list[ast.Expr]:
        if len(c) == 1:
            return [_tree(c[0])]
        c[0].append(_tree(c[2]))
        found: list[ast.Expr] = c[0]
        return found

    def paren(self, c: list[Any]) -> ast.Expr:
        # The node keeps the parentheses in its span, so carets and enclosing spans cover them.
        inner = _tree(c[1])
        inner.span = _span(c[0], c[2])
        return inner


def get_parser() -> Lark:
    """The process-wide parser, built on first use."""
    global _PARSER
    if _PARSER is None:
        _PARSER = cached_lark(
            grammar_text(),
            transformer=_Build(),
            parser="lalr",
            lexer=RouteLexer,
            maybe_placeholders=True,
        )
    return _PARSER


def _comments(text: str) -> list[tuple[int, str]]:
    """Every `#` comment as (line, text), found with strings skipped so `"#1"` is no comment."""
    out: list[tuple[int, str]] = []
    line, pos = 1, 0
    for m in _COMMENT_RE.finditer(text):
        if m.group(1) is not None:
            line += text.count("\n", pos, m.start())
            pos = m.start()
            out.append((line, m.group(1).rstrip()))
    return out


def parse_text(text: str, path: str) -> ast.PolicyFile:
    """Parse one policy file's text; `path` is how errors name the file."""
    source = Source(path, text)
    reset = _SOURCE.set(source)
    try:
        items: Any = get_parser().parse(text)
    except UnexpectedToken as e:
        raise token_error(e, source) from None
    except UnexpectedCharacters as e:
        raise char_error(e, source) from None
    except Problem as p:
        raise PolicySyntaxError(p.message, p.span, hint=p.hint) from None
    finally:
        _SOURCE.reset(reset)
    if (deep := too_deep(items)) is not None:
        start = deep.span
        span = Span(source, start.line, start.column, start.line, start.column + 1)
        message = f"this expression nests more than {MAX_DEPTH} levels deep"
        hint = "split it into constants (`let`), or write `x in [a, b, ...]` for a long `or`"
        raise PolicySyntaxError(message, span, hint=hint)
    name: _PolicyName | None = None
    statements: list[ast.Statement] = []
    for item in items:
        if isinstance(item, _PolicyName):
            if name is not None and name.name != item.name:
                raise PolicyError(
                    f"a second policy name `{item.name}`; this policy is `{name.name}` "
                    f"(at {name.span.location()})",
                    item.span,
                )
            name = name or item
        else:
            statements.append(item)
    last_line = text.rstrip("\n").rsplit("\n", 1)[-1]
    span = Span(source, 1, 1, text.rstrip("\n").count("\n") + 1, len(last_line) + 1)
    return ast.PolicyFile(path, name.name if name else None, statements, span, _comments(text))
