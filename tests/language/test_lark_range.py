"""The lexer (grammar.RouteLexer) uses three lark internals: the `__future_interface__ = 2`
lexer interface (lex(lexer_state, parser_state)), `parser_state.parse_conf.states` (the
terminals each LALR state accepts) and `Token._future_new` (optional). pyproject pins lark to
the versions where they were tried (1.2.2 and 1.3.1; 1.1.9 fails these tests). This test
fails if the installed lark is outside that range or no longer has what the lexer reads."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

from router.language import parse_text
from router.language.grammar import RouteLexer
from router.language.parser import get_parser

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_installed_lark_is_in_the_pinned_range() -> None:
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    lark = next(Requirement(d) for d in deps if Requirement(d).name == "lark")
    assert lark.specifier, "lark must be pinned: the lexer uses its internals"
    assert importlib.metadata.version("lark") in lark.specifier


def test_the_internals_the_lexer_reads_are_there() -> None:
    assert RouteLexer.__future_interface__ == 2
    interactive = get_parser().parse_interactive("rule r: route any")
    states = interactive.parser_state.parse_conf.states
    accepted = states[interactive.parser_state.position]
    assert "RULE" in accepted and "NAME" not in accepted  # the start state: statements


def test_keywords_are_contextual() -> None:
    # `rule` is a name inside `expect` (the parser state accepts NAME there), a keyword at
    # the start of a statement: what only the parser state can tell the lexer.
    pf = parse_text('rule rule: route any\ncheck c: expect rule == "rule"\n', "p.route")
    assert [type(s).__name__ for s in pf.statements] == ["Rule", "Check"]
