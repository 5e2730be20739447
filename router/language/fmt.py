"""Canonical formatting of a .route file (`router fmt`), keeping every comment.

The canonical form: one clause per line, clauses indented by two spaces, single spaces around
operators, `→`/`->` written `route`, `≥ ≤ ≠` written `>= <= !=`, bare options after the
backend written with `with`, quantities and numbers as written, the fewest parentheses that
keep the tree, and one blank line between statements (consecutive `let` lines stay together).

Comments stay with the code they were written next to: a trailing comment follows the clause
it was on (two spaces before `#`); a full-line comment inside a statement goes before the next
clause; comments between statements stay above the statement that follows them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from router.language import ast
from router.language.sources import policy_span

_PREC = {"or": 1, "and": 2, "+": 5, "-": 5, "*": 6, "/": 6}
_PREC.update({op: 4 for op in ("==", "!=", "<", "<=", ">", ">=", "in", "not in")})
_NOT, _MINUS, _ATOM = 3, 7, 8
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t"}
_WIDTH = 100  # a clause longer than this breaks its top `and`/`or` chain over lines


def quote(text: str) -> str:
    """A string literal for `text`."""
    return '"' + "".join(_ESCAPES.get(ch, ch) for ch in text) + '"'


def _prec(e: ast.Expr) -> int:
    if isinstance(e, ast.Binary):
        return _PREC[e.op]
    if isinstance(e, ast.Unary):
        return _NOT if e.op == "not" else _MINUS
    return _ATOM


def _wrap(e: ast.Expr, parens: bool) -> str:
    text = format_expr(e)
    return f"({text})" if parens else text


def format_expr(e: ast.Expr) -> str:
    """An expression in canonical form, parenthesised only where the tree needs it."""
    if isinstance(e, ast.Literal):
        if e.text:
            return e.text
        if isinstance(e.value, bool):
            return "true" if e.value else "false"
        return quote(e.value) if isinstance(e.value, str) else str(e.value)
    if isinstance(e, ast.Name):
        rest = [p if _IDENT.fullmatch(p) else quote(p) for p in e.parts[1:]]
        return ".".join([e.parts[0], *rest])
    if isinstance(e, ast.ListExpr):
        return "[" + ", ".join(format_expr(i) for i in e.items) + "]"
    if isinstance(e, ast.Unary):
        if e.op == "not":
            return "not " + _wrap(e.operand, _prec(e.operand) < _NOT)
        operand = _wrap(e.operand, _prec(e.operand) < _MINUS)
        return f"-({operand})" if operand.startswith("-") else "-" + operand  # not `--a`
    p = _PREC[e.op]
    # Left-associative; comparisons do not chain, so a comparison operand needs parentheses.
    left = _wrap(e.left, _prec(e.left) < p or (p == 4 and _prec(e.left) == 4))
    right = _wrap(e.right, _prec(e.right) <= p)
    return f"{left} {e.op} {right}"


def format_option(opt: ast.Option) -> str:
    if opt.is_call:
        args = ", ".join(f"{k} = {format_expr(v)}" for k, v in opt.args.items())
        return f"{opt.name}({args})"
    if opt.value is not None:
        return f"{opt.name} = {format_expr(opt.value)}"
    return opt.name


def _route_lines(route: ast.Route) -> list[tuple[int, str]]:
    head = ("else route " if route.rank else "route ") + route.backend
    if route.options:
        head += " with " + ", ".join(format_option(o) for o in route.options)
    lines = [(route.span.line, head)]
    if route.where is not None:
        lines.append((route.where.span.line, _clause("where", route.where, 2)))
    if route.prefer:
        prefs = ", ".join(_preference(p) for p in route.prefer)
        lines.append((route.prefer[0].span.line, "prefer " + prefs))
    return lines


def _preference(p: ast.Prefer) -> str:
    text = format_expr(p.expr)
    if p.direction:
        return f"{p.direction} {text}"
    # A condition that starts with a name `lower` or `higher` would read as a direction.
    return f"({text})" if re.match(r"(lower|higher)\b", text) else text


def _clause(keyword: str, e: ast.Expr, indent: int) -> str:
    """`keyword expr`; past the line width, an `and`/`or` chain breaks before its operators,
    continued two spaces deeper."""
    text = f"{keyword} {format_expr(e)}"
    if indent + len(text) <= _WIDTH or not (isinstance(e, ast.Binary) and e.op in ("and", "or")):
        return text
    op, operands = e.op, []
    node: ast.Expr = e
    while isinstance(node, ast.Binary) and node.op == op:  # the left-leaning chain a op b op c
        operands.append(_wrap(node.right, _prec(node.right) <= _PREC[op]))
        node = node.left
    lines = [f"{keyword} {_wrap(node, _prec(node) < _PREC[op])}"]
    for operand in reversed(operands):
        if indent + len(lines[-1]) + len(op) + len(operand) + 2 <= _WIDTH:
            lines[-1] += f" {op} {operand}"
        else:
            lines.append(f"  {op} {operand}")
    return "\n".join(lines)


def _clauses(st: ast.Statement) -> list[tuple[int, str]]:
    """(source line, text) of each line of a statement; the first is the header."""
    line = st.span.line
    if isinstance(st, ast.Let):
        return [(line, _clause(f"let {st.name} =", st.value, 0))]
    out = [(line, f"{type(st).__name__.lower()} {st.name}:")]

    def add(keyword: str, e: ast.Expr | None) -> None:
        if e is not None:
            out.append((e.span.line, _clause(keyword, e, 2)))

    if isinstance(st, ast.Deny):
        add("when", st.when)
        out.append((st.span.end_line, f"because {quote(st.message)}"))
    elif isinstance(st, ast.Rule):
        add("when", st.when)
        for route in st.routes:
            out.extend(_route_lines(route))
    elif isinstance(st, ast.Quota):
        add("for", st.for_)
        add("on", st.on)
        if st.per:
            out.append((st.per[0].span.line, "per " + ", ".join(format_expr(k) for k in st.per)))
        for lim in st.limits:
            out.append((lim.span.line, f"limit {lim.resource} {lim.op} {format_expr(lim.amount)}"))
    elif isinstance(st, ast.Spread):
        add("for", st.for_)
        add("by", st.by)
        add("across", st.across)
        add("max", st.max)
    else:
        add("for", st.for_)
        add("expect", st.expect)
    return out


@dataclass
class _Block:
    """One statement to print, with the comments that go with it."""

    start: int
    end: int
    clauses: list[tuple[int, str]]
    is_let: bool = False
    leading: list[tuple[int, str]] = field(default_factory=list)
    inner: list[tuple[int, str]] = field(default_factory=list)
    trailing: list[tuple[int, str]] = field(default_factory=list)


def _blocks(pf: ast.PolicyFile) -> list[_Block]:
    blocks = [
        _Block(st.span.line, st.span.end_line, _clauses(st), isinstance(st, ast.Let))
        for st in pf.statements
    ]
    if pf.name is not None:
        line = policy_span(pf).line
        blocks.append(_Block(line, line, [(line, f"policy {pf.name}")], True))
    blocks.sort(key=lambda b: (b.start, b.end))
    return blocks


def _comment_groups(comments: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """Comment lines split where the source had a blank line between them."""
    groups: list[list[tuple[int, str]]] = []
    for line, text in comments:
        if groups and groups[-1][-1][0] == line - 1:
            groups[-1].append((line, text))
        else:
            groups.append([(line, text)])
    return groups


def _emit_block(b: _Block, out: list[str]) -> None:
    order = sorted(range(len(b.clauses)), key=lambda k: (b.clauses[k][0], k))
    before: dict[int, list[str]] = {k: [] for k in order}
    after: dict[int, list[str]] = {k: [] for k in order}
    for line, text in b.inner:  # before the first clause written after it, else the last
        target = next((k for k in order if b.clauses[k][0] > line), len(b.clauses) - 1)
        before[target].append(text)
    for line, text in b.trailing:  # on the last clause that starts at or before its line
        target = next((k for k in reversed(order) if b.clauses[k][0] <= line), 0)
        after[target].append(text)
    for k, (_, text) in enumerate(b.clauses):
        indent = "  " if k else ""
        notes = before[k] + after[k][:-1]  # only one comment fits at the end of a line
        out.extend(indent + note for note in notes)
        out.extend(indent + part for part in text.split("\n"))
        if after[k]:
            out[-1] += f"  {after[k][-1]}"


def format_policy_file(pf: ast.PolicyFile, text: str) -> str:
    """The canonical text of a parsed file; `text` is its source (for the comments)."""
    lines = text.splitlines()
    blocks = _blocks(pf)
    tail: list[tuple[int, str]] = []
    for line, comment in pf.comments:
        full_line = lines[line - 1].lstrip().startswith("#")
        inside = [b for b in blocks if b.start <= line <= b.end]
        if inside and not full_line:
            inside[-1].trailing.append((line, comment))
        elif inside and line > inside[-1].start:
            inside[-1].inner.append((line, comment))
        else:
            following = next((b for b in blocks if b.start > line), None)
            (following.leading if following else tail).append((line, comment))
    out: list[str] = []
    previous: _Block | None = None
    for b in blocks:
        together = (
            previous is not None and previous.is_let and b.is_let and not b.leading
            and b.start == previous.end + 1
        )  # fmt: skip
        if out and not together:
            out.append("")
        _emit_groups(b.leading, b.start, out)
        _emit_block(b, out)
        previous = b
    if tail:
        if out:
            out.append("")
        _emit_groups(tail, None, out)
    return "\n".join(out) + "\n" if out else ""


def _emit_groups(comments: list[tuple[int, str]], start: int | None, out: list[str]) -> None:
    """Comment groups, a blank line between them, and one before `start` if it had one."""
    groups = _comment_groups(comments)
    for i, group in enumerate(groups):
        if i:
            out.append("")
        out.extend(text for _, text in group)
    if groups and start is not None and groups[-1][-1][0] < start - 1:
        out.append("")
