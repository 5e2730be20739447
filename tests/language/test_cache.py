"""The grammar's tables kept in the cache folder (router/language/cache.py): a parser read
from the cache parses and fails exactly as one built from the grammar, and a cache that is
off, broken or someone else's is not used."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from lark import Lark

from router.errors import PolicySyntaxError
from router.language import cache, parser
from router.language.grammar import RouteLexer, grammar_text

ROOT = Path(__file__).resolve().parents[2]
POLICIES = [
    ROOT / "policies" / "default.route",
    *sorted((ROOT / "examples" / "ml-platform" / "policies").glob("*.route")),
]
BAD = [
    "rule r: route slurmm",
    "rule r:\n  when gpus >\n  route any",
    'deny d: when kind == "x" because',
    "quota q: limit gpus <= 1 + ",
    "rule r: route any with qos = @",
]


def _build(folder: Path | None, monkeypatch: pytest.MonkeyPatch) -> Lark:
    monkeypatch.setenv(cache.CACHE_ENV, str(folder) if folder else "")
    return cache.cached_lark(
        grammar_text(),
        transformer=parser._Build(),
        parser="lalr",
        lexer=RouteLexer,
        maybe_placeholders=True,
    )


def _outcomes(lark: Lark, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What parse_text gives with this parser: each tree, or each error as printed."""
    monkeypatch.setattr(parser, "_PARSER", lark)
    out = [repr(parser.parse_text(p.read_text(), str(p))) for p in POLICIES]
    for text in BAD:
        with pytest.raises(PolicySyntaxError) as e:
            parser.parse_text(text, "bad.route")
        out.append(e.value.format())
    return out


def test_a_cached_parser_parses_and_fails_as_a_built_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = _build(None, monkeypatch)
    first = _build(tmp_path, monkeypatch)  # builds, and writes the tables
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and files[0].stat().st_size > 10_000
    before = files[0].stat().st_mtime_ns
    second = _build(tmp_path, monkeypatch)  # reads them back
    assert files[0].stat().st_mtime_ns == before  # read, not written again
    expected = _outcomes(built, monkeypatch)
    assert len(POLICIES) >= 2 and all("Rule(" in t for t in expected[: len(POLICIES)])
    assert _outcomes(first, monkeypatch) == expected
    assert _outcomes(second, monkeypatch) == expected


def test_the_cache_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    _build(None, monkeypatch)
    assert list(tmp_path.iterdir()) == []


def test_a_broken_cache_file_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _build(tmp_path, monkeypatch)
    (path,) = tmp_path.iterdir()
    path.write_bytes(path.read_bytes()[:1000])  # as if a concurrent run were still writing
    lark = _build(tmp_path, monkeypatch)
    assert _outcomes(lark, monkeypatch) == _outcomes(_build(None, monkeypatch), monkeypatch)
    assert path.stat().st_size > 10_000  # written again, whole


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root")
def test_a_file_of_another_user_is_not_read(tmp_path: Path) -> None:
    key = cache.table_key("grammar", {"parser": "lalr"})
    assert cache._usable(tmp_path, key) == tmp_path / f"grammar-{key}.lark"
    (tmp_path / f"grammar-{key}.lark").write_bytes(b"not a pickle")
    os.chown(tmp_path / f"grammar-{key}.lark", 65534, 65534)
    assert cache._usable(tmp_path, key) is None


def test_the_key_follows_the_grammar_and_the_options() -> None:
    key = cache.table_key("start: A", {"parser": "lalr", "lexer": RouteLexer})
    assert key == cache.table_key("start: A", {"lexer": RouteLexer, "parser": "lalr"})
    assert key != cache.table_key("start: B", {"parser": "lalr", "lexer": RouteLexer})
    assert key != cache.table_key("start: A", {"parser": "lalr", "lexer": "contextual"})
