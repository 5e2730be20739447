"""Hypothesis strategies for the fuzzer: policies from the grammar, and mutations.

- `grammar_policies()`: Hypothesis' `from_lark` on grammar/router.lark, with every terminal
  drawn from words a policy uses (field names, option names, values, quantities, edge
  numbers), spaced so that most draws lex: syntax and checker paths.
- `mutated(text)`: a valid text (the example policy, a workloads or inventory file) with
  spans deleted, duplicated, swapped, or replaced by hostile tokens (huge numbers, deep
  nesting, odd quantities, YAML tags, unicode): the paths a user's typo or an attacker takes.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from hypothesis import strategies as st
from hypothesis.extra.lark import from_lark
from lark import Lark

from router.language.grammar import grammar_text
from router.language.names import OPTIONS, TARGET_ATTRIBUTES, WORKLOAD_FIELDS

_NAMES = sorted({*WORKLOAD_FIELDS, *TARGET_ATTRIBUTES, *OPTIONS, "workload", "target", "x",
                 "big", "labels", "app", "team", "routes", "r1"})  # fmt: skip
_HOSTILE = [
    "1" + "0" * 20, "1" + "0" * 5000, "1" + "0" * 309 + "GiB", "99999999999999999999d",
    "1e400", ".inf", "-.inf", ".nan", "0", "-1", "4096", "1.5", "0.0000001",
    "[" * 300, "]" * 300, "(" * 200, ")" * 200, "not " * 150, "- " * 150,
    '"$(touch /tmp/x)"', '"a\\qb"', '"', "'", "\\", "#", "\u202e", "\U0001f600", "\x00",
    "workload.labels.app", "labels.\"a.b\"", "target.cluster", "64GB", "64", "70%", "0%",
    "!!python/object:os.system", "!!int abc", "&a [*a, *a]", "*a", "<<: *a", "{", "}",
    "key: value", "\t", "\n", "  ", ":", ",", "->", "→", "≥", "with", "else", "route",
]  # fmt: skip
# Values a YAML field may be given (structure kept, the value replaced).
_YAML_VALUES = [
    ".inf", "-.inf", ".nan", "1e400", "!!float 1e400", "-1", "0", "1" + "0" * 30,
    "1" + "0" * 5000, "64GB", "64", "1" + "0" * 309 + "GiB", "99999999999999999999d",
    "null", "''", '"$(touch /tmp/x)"', "[1, 2]", "{a: 1}", "!!binary aGk=", "!!set {a}",
    "&x [*x]", "true", "yes", "1:30:00", "2-00:00:00", "0.5", "-0", "\"\\u0000\"",
    "[" * 200 + "]" * 200, "{a: " * 150 + "1" + "}" * 150, "a b", "UPPER", "é",
]  # fmt: skip
_VALUES = {
    "INT": st.sampled_from(["0", "1", "8", "64", "4096", "1000000000000000", "1" + "0" * 19]),
    "FLOAT": st.sampled_from(["0.5", "1.5", "2.0", "0.0000001"]),
    "QUANTITY": st.sampled_from(
        [
            "64GiB",
            "2TiB",
            "512MiB",
            "48h",
            "30s",
            "7d",
            "70%",
            "64GB",
            "1h30min",
            "5x",
            "1" + "0" * 20 + "TiB",
        ]
    ),
    "STRING": st.sampled_from(
        [
            '"training"',
            '"trainig"',
            '"h100"',
            '"k8s-prod"',
            '""',
            '"a b"',
            '"$(x)"',
            '"ib"',
            '"1g.10gb"',
        ]
    ),
    "NAME": st.sampled_from(_NAMES),
    "COMMENT": st.just("# c"),
}


@cache
def _grammar() -> Lark:
    return Lark(grammar_text(), parser="lalr", lexer="contextual")


def grammar_policies() -> st.SearchStrategy[str]:
    """Policies drawn from the grammar, one token at a time, spaced."""
    explicit = {name: s.map(lambda t: f" {t} ") for name, s in _VALUES.items()}
    for term in _grammar().terminals:
        if term.name not in explicit and term.pattern.type == "str":
            explicit[term.name] = st.just(f" {term.pattern.value} ")
        elif term.name not in explicit:  # regex terminals the table does not name: blanks
            explicit[term.name] = st.just(" ")
    return from_lark(_grammar(), start="start", explicit=explicit)


def mutated(text: str) -> st.SearchStrategy[str]:
    """`text` changed in one to four places."""
    return st.lists(_edit(), min_size=1, max_size=4).map(lambda edits: _apply(text, edits))


def _edit() -> st.SearchStrategy[tuple[Any, ...]]:
    where = st.floats(0, 1, allow_nan=False)
    width = st.integers(0, 40)
    return st.one_of(
        st.tuples(st.just("delete"), where, width),
        st.tuples(st.just("duplicate"), where, width),
        st.tuples(st.just("insert"), where, st.sampled_from(_HOSTILE)),
        st.tuples(st.just("replace"), where, st.sampled_from(_HOSTILE)),
        st.tuples(st.just("insert"), where, st.text(max_size=8)),
        st.tuples(st.just("value"), where, st.sampled_from(_YAML_VALUES)),
        st.tuples(st.just("value"), where, st.sampled_from(_YAML_VALUES)),
    )


def _apply(text: str, edits: list[tuple[Any, ...]]) -> str:
    for kind, at, arg in edits:
        i = int(at * len(text))
        if kind == "delete":
            text = text[:i] + text[i + arg :]
        elif kind == "duplicate":
            text = text[:i] + text[i : i + arg] + text[i:]
        elif kind == "insert":
            text = text[:i] + arg + text[i:]
        elif kind == "value":  # the value after the next `: `, to the end of its line
            colon = text.find(": ", i)
            if colon >= 0:
                end = text.find("\n", colon)
                end = len(text) if end < 0 else end
                text = text[: colon + 2] + arg + text[end:]
        else:  # replace the word (or number) at i
            j = i
            while j < len(text) and (text[j].isalnum() or text[j] in "._"):
                j += 1
            text = text[:i] + arg + text[j:]
    return text
