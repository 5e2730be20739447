"""Each policy file's tree kept in the cache folder (router/language/sources.py): a kept tree
is the parser's own, is read back without the parser, and is not used once the text, the
path or its key changed, or when the file is broken or the cache is off."""

from __future__ import annotations

import io
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from router.errors import PolicySyntaxError
from router.language import ast, parser, sources

ROOT = Path(__file__).resolve().parents[2]
POLICIES = [
    ROOT / "policies" / "default.route",
    *sorted((ROOT / "examples" / "ml-platform" / "policies").glob("*.route")),
]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ROUTER_CACHE_DIR", str(tmp_path))
    return tmp_path


def _no_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(text: str, path: str) -> ast.PolicyFile:
        raise AssertionError(f"{path} parsed again")

    monkeypatch.setattr(parser, "parse_text", refuse)


def test_a_kept_tree_is_the_parsers_and_is_read_back_without_it(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [(str(p), p.read_text()) for p in POLICIES]
    parsed = [repr(parser.parse_text(text, path)) for path, text in texts]
    first = [repr(sources.parse_text(text, path)) for path, text in texts]
    assert len(list(folder.glob("tree-*.pickle"))) == len(POLICIES) >= 2
    _no_parser(monkeypatch)
    again = [repr(sources.parse_text(text, path)) for path, text in texts]
    assert first == parsed and again == parsed
    assert all("Rule(" in t for t in parsed)


def test_an_edited_text_is_parsed_and_replaces_its_entry(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources.parse_text("rule a: route slurm", "p.route")
    (entry,) = folder.glob("tree-*.pickle")
    tree = sources.parse_text("rule b: route kubernetes", "p.route")
    assert [r.name for r in tree.statements if isinstance(r, ast.Rule)] == ["b"]
    assert list(folder.glob("tree-*.pickle")) == [entry]  # one entry per path
    other = sources.parse_text("rule b: route kubernetes", "q.route")  # the path is in spans
    assert other.span.source.path == "q.route"
    assert len(list(folder.glob("tree-*.pickle"))) == 2


def test_errors_are_the_parsers_and_never_kept(folder: Path) -> None:
    with pytest.raises(PolicySyntaxError) as raw:
        parser.parse_text("rule r: route slurmm", "bad.route")
    with pytest.raises(PolicySyntaxError) as kept:
        sources.parse_text("rule r: route slurmm", "bad.route")
    assert kept.value.format() == raw.value.format()
    assert list(folder.glob("tree-*.pickle")) == []


def test_a_broken_or_foreign_entry_is_parsed_anew(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = POLICIES[0].read_text()
    expected = repr(parser.parse_text(text, "d.route"))
    sources.parse_text(text, "d.route")
    (entry,) = folder.glob("tree-*.pickle")
    whole = entry.read_bytes()
    entry.write_bytes(whole[: len(whole) // 2])  # as if a concurrent run were still writing
    assert repr(sources.parse_text(text, "d.route")) == expected
    assert entry.read_bytes() == whole  # written again, whole
    tree = sources.parse_text(text, "d.route")
    entry.write_bytes(pickle.dumps((b"another key", tree)))  # another router's, say
    calls: list[str] = []
    real = parser.parse_text

    def counted(t: str, p: str) -> ast.PolicyFile:
        calls.append(p)
        return real(t, p)

    monkeypatch.setattr(parser, "parse_text", counted)
    assert repr(sources.parse_text(text, "d.route")) == expected
    assert calls == ["d.route"]


def test_the_cache_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUTER_CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    sources.parse_text("rule a: route slurm", "p.route")
    assert list(tmp_path.iterdir()) == []


def test_the_key_follows_the_text_and_the_path() -> None:
    key = sources.tree_key("rule a: route slurm", "p.route")
    assert key is not None and key == sources.tree_key("rule a: route slurm", "p.route")
    assert key != sources.tree_key("rule a: route slurm ", "p.route")
    assert key != sources.tree_key("rule a: route slurm", "q.route")
    assert sources.tree_key("rule a: route slurm", "p\udc80.route") is not None  # from memory


class _Classes(pickle.Pickler):
    """A pickler that notes the module of every object's class it writes."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.modules: set[str] = set()

    def persistent_id(self, obj: Any) -> None:
        self.modules.add(type(obj).__module__)


def test_a_tree_holds_only_what_its_key_covers() -> None:
    # A kept tree is stale when the code of its classes changed: the key hashes those
    # modules' files (TREE_MODULES), so a tree must hold nothing from any other.
    covered = {
        f"router.{p.relative_to(ROOT / 'router').with_suffix('').as_posix().replace('/', '.')}"
        for p in sources.TREE_MODULES
    }
    found: set[str] = set()
    for p in POLICIES:
        noted = _Classes(io.BytesIO())
        noted.dump(parser.parse_text(p.read_text(), str(p)))
        found |= noted.modules
    assert "router.language.ast" in found and "router.errors" in found
    assert {m for m in found if m != "builtins"} <= covered, found - covered


def test_a_run_whose_trees_are_kept_does_not_import_lark(folder: Path) -> None:
    code = (
        "import sys; from router.language import load_policy; "
        f"load_policy({str(POLICIES[0])!r}); print('lark' in sys.modules)"
    )
    run = [sys.executable, "-c", code]
    first = subprocess.run(run, capture_output=True, text=True, check=True)
    second = subprocess.run(run, capture_output=True, text=True, check=True)
    assert (first.stdout, second.stdout) == ("True\n", "False\n")
