"""The grammar file, the lexer of its terminals, their values, and their names in user words.

`grammar_text()` finds router.lark inside the installed package, or at the top of a source
checkout. `RouteLexer` lexes with the contextual lexer's rule in one regex. `token_error` and
`char_error` turn lark's parse errors into PolicySyntaxError that say what was expected in
words ("expected a backend: slurm, kubernetes or any") and never name a lark terminal.
"""

from __future__ import annotations

import re
from typing import Any

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedToken
from lark.lexer import Lexer, LexerState

from router import quantity
from router.errors import PolicySyntaxError, Source, Span, did_you_mean
from router.language.ast import Literal, Name, Route
from router.language.cache import grammar_file
from router.language.names import QUOTA_RESOURCES


def grammar_text() -> str:
    """The text of router.lark (cache.grammar_file)."""
    return grammar_file().read_text(encoding="utf-8")


class RouteLexer(Lexer):
    """Lark's contextual lexer, made fast: one regex for every terminal of the grammar, and a
    word is a keyword only where the parser state accepts that keyword (else it is a NAME).

    Lark's own contextual lexer took about as long as the parse itself; this one matches each
    token once. Terminal order is lark's (priority, then width), so it lexes the same tokens.
    """

    __future_interface__ = 2  # lex(lexer_state, parser_state), as lark's own lexers

    def __init__(self, conf: Any) -> None:
        terminals = list(conf.terminals)
        name_re = re.compile(next(t.pattern.to_regexp() for t in terminals if t.name == "NAME"))
        self.keywords = {
            t.pattern.value: t.name
            for t in terminals
            if t.pattern.type == "str" and name_re.fullmatch(t.pattern.value)
        }
        self.ignore = frozenset(conf.ignore)
        rest = [t for t in terminals if t.name not in self.keywords.values()]
        rest.sort(key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name))
        # Blanks before a token are skipped by the same match (comments stay a token, ignored).
        alternatives = "|".join(
            f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in rest if t.name != "WS"
        )
        self.regex = re.compile(rf"[ \t\r\n\f]*(?:{alternatives})")
        self.blank = re.compile(r"[ \t\r\n\f]*")
        self.token = getattr(Token, "_future_new", Token)  # skips a keyword-argument check

    def lex(self, lexer_state: LexerState, parser_state: Any) -> Any:
        raw: Any = lexer_state.text  # a TextSlice in lark 1.2+, a str before
        text: str = getattr(raw, "text", raw)
        states = parser_state.parse_conf.states
        match, keywords, ignore, new = self.regex.match, self.keywords, self.ignore, self.token
        pos, line, line_start, size = 0, 1, 0, len(text)
        while pos < size:
            m = match(text, pos)
            if m is None:
                start = self.blank.match(text, pos).end()  # type: ignore[union-attr]
                if start == size:
                    return
                line += text.count("\n", pos, start)
                line_start = text.rfind("\n", 0, start) + 1
                col = start - line_start + 1
                allowed = {t for t in states[parser_state.position] if t.isupper()}
                raise UnexpectedCharacters(  # type: ignore[no-untyped-call]
                    text, start, line, col, allowed=allowed, state=parser_state
                )
            kind = m.lastgroup or ""
            start, end = m.start(kind), m.end()
            if start != pos and (newlines := text.count("\n", pos, start)):
                line += newlines
                line_start = text.rfind("\n", pos, start) + 1
            pos = end
            if kind in ignore:
                continue
            value = text[start:end]
            if kind == "NAME" and value in keywords:
                accepted = states[parser_state.position]
                if keywords[value] in accepted or "NAME" not in accepted:
                    kind = keywords[value]
            col = start - line_start + 1
            yield new(kind, value, start, line, col, line, col + end - start, end)


_KEYWORD_WORDS = (
    "policy let deny rule quota check when because route else with where prefer lower higher "
    "for on per limit expect spread by across max slurm kubernetes any or and not in true false"
)
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}
_UNIT_RE = re.compile(r"[\d.]+([A-Za-z]+)")


class Problem(Exception):
    """A syntax problem found while building the tree; parse_text turns it into an error."""

    def __init__(self, message: str, span: Span, hint: str | None = None) -> None:
        super().__init__(message)
        self.message, self.span, self.hint = message, span, hint


def string_value(source: Source, tok: Token) -> str:
    """The value of a STRING token: quotes removed, escapes \\" \\\\ \\n \\t applied."""
    raw = str(tok)[1:-1]
    if "\\" not in raw:
        return raw
    out, i = [], 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\":
            nxt = raw[i + 1]
            if nxt not in _ESCAPES:
                col = (tok.column or 1) + 1 + i
                span = Span(source, tok.line or 1, col, tok.line or 1, col + 2)
                raise Problem(
                    f"unknown escape `\\{nxt}` in a string",
                    span,
                    hint='a string knows \\" \\\\ \\n and \\t; write \\\\ for a backslash',
                )
            out.append(_ESCAPES[nxt])
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def quantity_literal(tok: Token, span: Span) -> Literal:
    """The Literal of a QUANTITY token, in base units (MiB, seconds, a fraction of 1)."""
    text = str(tok)
    try:
        if text.endswith("%"):
            return Literal(quantity.parse_percent(text), span, "percent", text)
        unit_match = _UNIT_RE.match(text)
        unit = unit_match.group(1) if unit_match else ""
        if unit in quantity.MEMORY_UNITS and unit_match and unit_match.end() == len(text):
            return Literal(quantity.parse_memory(text), span, "memory", text)
        try:
            return Literal(quantity.parse_duration(text), span, "duration", text)
        except quantity.QuantityRangeError:
            raise
        except quantity.QuantityError:
            pass
    except quantity.QuantityRangeError as e:
        raise Problem(str(e), span, "see docs/limits.md") from None
    suggestion = quantity.unit_suggestion(text) if unit_match else None
    hint = suggestion or (
        "units: KiB, MiB, GiB, TiB for memory; s, min, h, d for durations; % for a share"
    )
    raise Problem(f"unknown unit `{unit}` in `{text}`", span, hint)


KEYWORDS: dict[str, str] = {w.upper(): w for w in _KEYWORD_WORDS.split()}
_SYMBOLS = {
    "ARROW": "→", "EQEQ": "==", "NE": "!=", "LE": "<=", "GE": ">=", "LT": "<", "GT": ">",
    "PLUS": "+", "MINUS": "-", "STAR": "*", "SLASH": "/", "EQ": "=", "COLON": ":",
    "COMMA": ",", "DOT": ".", "LPAR": "(", "RPAR": ")", "LSQB": "[", "RSQB": "]",
}  # fmt: skip
_VALUES = {
    "NAME": "a name", "INT": "a number", "FLOAT": "a number", "QUANTITY": "a quantity",
    "STRING": "a string", "$END": "the end of the file",
}  # fmt: skip
_STATEMENTS = {"POLICY", "LET", "DENY", "RULE", "QUOTA", "CHECK", "SPREAD"}
_BACKENDS = {"SLURM", "KUBERNETES", "ANY"}
_EXPR_START = {"NAME", "INT", "FLOAT", "QUANTITY", "STRING", "TRUE", "FALSE", "LSQB", "LPAR"}
_BINARY = {"OR", "AND", "EQEQ", "NE", "LT", "LE", "GT", "GE", "IN", "PLUS", "STAR", "SLASH"}
# Listed first, in this order, when expected: what a user would type next.
_ORDER = [
    *("COLON", "EQ", "LPAR", "RPAR", "RSQB", "COMMA", "WHEN", "BECAUSE", "ROUTE", "ARROW"),
    *("ELSE", "WITH", "WHERE", "PREFER", "LOWER", "HIGHER", "FOR", "ON", "PER", "LIMIT"),
    *("LE", "LT", "EXPECT", "BY", "ACROSS", "MAX"),
]
_CHAR_HINTS = {
    "&": "write `and`",
    "|": "write `or`",
    "!": "write `not`, or `!=` to compare",
    "'": 'strings use double quotes: "like this"',
}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _tokens(stack: list[Any]) -> list[Token]:
    return [x for x in stack if isinstance(x, Token)]


def _name_word(stack: list[Any]) -> str:
    """What a lone expected name is, judged by the tokens just before it."""
    toks = _tokens(stack)
    prev = stack[-1].type if stack and isinstance(stack[-1], Token) else None
    if prev in ("RULE", "DENY", "QUOTA", "CHECK", "SPREAD"):
        return f"a name for the {KEYWORDS[prev]}"
    if prev in ("LET", "POLICY"):
        return "a name for the " + ("constant" if prev == "LET" else "policy")
    if prev == "ACROSS":
        return "a target attribute, such as cluster"
    if prev == "PER" or (
        prev == "COMMA"
        and len(stack) > 1
        and isinstance(stack[-2], list)
        and isinstance(stack[-2][-1], Name)
    ):  # the keys of a quota's `per`
        return "a workload field or target attribute, such as team or cluster"
    if prev == "LIMIT":
        return "a resource: " + _join(list(QUOTA_RESOURCES))
    for tok in reversed(toks):
        if tok.type in ("LPAR", "WITH"):
            return "an argument name" if tok.type == "LPAR" else "an option"
    return "a name"


def _after_backend(stack: list[Any]) -> bool:
    """Whether the parser is just past a route's backend (or its bare option names)."""
    for item in reversed(stack[-2:]):
        if isinstance(item, Route) or (isinstance(item, Token) and item.type in _BACKENDS):
            return True
        if not (isinstance(item, Token) and item.type == "NAME"):
            return False
    return False


def describe(accepted: set[str], stack: list[Any]) -> str:
    """The expected terminals in words: "`route` or an operator", "an expression"."""
    acc = set(accepted)
    if acc == {"NAME"}:
        return _name_word(stack)
    if acc == {"NAME", "STRING"}:
        return "a name after `.`"
    if acc == {"STRING"}:
        last = stack[-1] if stack else None
        after_because = isinstance(last, Token) and last.type == "BECAUSE"
        return "a message in quotes" if after_because else "a string"
    if acc == {"COLON"} and len(stack) >= 2 and isinstance(stack[-2], Token):
        return f"`:` after the {KEYWORDS.get(stack[-2].type, 'statement')} name"
    words: list[str] = []
    if acc >= _BACKENDS:
        words.append("a backend: slurm, kubernetes or any")
    expr, stmts = acc >= _EXPR_START, bool(acc & _STATEMENTS)
    ops = bool(acc & (_BINARY - {"LE", "LT"}))  # `limit gpus <=` accepts only those two
    # Tokens that "an expression" or "an operator" already says are not listed one by one.
    covered = (_EXPR_START if expr else set()) | (_BINARY if ops else set())
    for t in _ORDER:
        word = f"`{KEYWORDS.get(t) or _SYMBOLS[t]}`".replace("`→`", "`route`")
        if t in acc and t not in covered and word not in words:
            words.append(word)
    if "NAME" in acc and not expr:
        words.append("an option" if _after_backend(stack) else _name_word(stack))
    rest = acc - _BACKENDS - set(_ORDER) - _STATEMENTS - {"NAME", "$END"}
    rest -= (_EXPR_START | {"MINUS", "NOT"}) if expr else set()
    rest -= (_BINARY | {"MINUS", "NOT", "DOT"}) if ops else set()
    words += sorted({_VALUES.get(t) or f"`{KEYWORDS.get(t) or _SYMBOLS.get(t, t)}`" for t in rest})
    if expr:
        words.append("an expression")
    if ops:
        words.append("an operator")
    if stmts and not words:
        return "a statement (`rule`, `deny`, `quota`, `spread`, `check`, `let` or `policy`)"
    if stmts:
        words.append("a new statement")
    elif "$END" in acc:
        words.append("the end of the file")
    return _join(words) if words else "something else"


def _accepts(parser: Any) -> set[str]:
    return set(parser.accepts())


def token_error(e: UnexpectedToken, source: Source) -> PolicySyntaxError:
    """A parse error at a token, in words."""
    tok: Token = e.token
    parser = getattr(e, "interactive_parser", None)
    stack: list[Any] = list(parser.parser_state.value_stack) if parser else []
    accepted = _accepts(parser) if parser else set(e.expected)
    prev = stack[-1] if stack else None
    if (
        parser is not None
        and isinstance(prev, Token)
        and prev.type == "NAME"
        and str(prev) in KEYWORDS.values()
        and (str(prev) != "rule" or tok.type == "NAME")
    ):
        # A keyword read as a name where a name was allowed (`when gpus > route slurm`):
        # the fault is that keyword, so report what was expected in its place.
        rewound = parser.copy(deepcopy_values=False)
        rewound.parser_state.state_stack.pop()
        rewound.parser_state.value_stack.pop()
        accepted, stack, tok = _accepts(rewound), stack[:-1], prev
    what = describe(accepted, stack)
    if tok.type == "$END":
        line, col = tok.end_line or 1, tok.end_column or 1
        span = Span(source, line, col, line, col + 1)
        return PolicySyntaxError(f"expected {what}, found the end of the file", span)
    value = str(tok)
    shown = value if len(value) <= 30 else value[:27] + "..."
    span = Span(source, tok.line or 1, tok.column or 1, tok.end_line or 1, tok.end_column or 1)
    hint = None
    if tok.type == "EQ" and "EQEQ" in accepted:
        hint = "use `==` to compare"
    elif tok.type == "COMMA" and _after_backend(stack):
        hint = 'several options go after `with`: route slurm with exclusive, qos = "high"'
    elif _WORD.fullmatch(value) and value not in KEYWORDS.values():
        hint = did_you_mean(value, [KEYWORDS[t] for t in accepted if t in KEYWORDS])
    return PolicySyntaxError(f"expected {what}, found `{shown}`", span, hint=hint)


def char_error(e: UnexpectedCharacters, source: Source) -> PolicySyntaxError:
    """A character no token starts with: an unterminated string, `&&`, a stray symbol."""
    line, col, ch = e.line, e.column, str(e.char)
    if ch == '"':
        end = len(source.line(line)) + 1
        return PolicySyntaxError(
            "unterminated string",
            Span(source, line, col, line, max(end, col + 1)),
            hint='a string ends with " on the same line',
        )
    parser = getattr(e, "interactive_parser", None)
    stack: list[Any] = list(parser.parser_state.value_stack) if parser else []
    accepted = _accepts(parser) if parser else set(e.allowed or ())
    return PolicySyntaxError(
        f"expected {describe(accepted, stack)}, found `{ch}`",
        Span(source, line, col, line, col + 1),
        hint=_CHAR_HINTS.get(ch),
    )
