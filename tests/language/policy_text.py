"""Policy text helpers for the language tests: format, load from a file, and error text."""

from __future__ import annotations

from pathlib import Path

import pytest

from router.errors import RouterError
from router.language import ast, load_policy, parse_text
from router.language.fmt import format_policy_file


def fmt(text: str) -> str:
    return format_policy_file(parse_text(text, "p.route"), text)


def check(tmp_path: Path, text: str) -> ast.Policy:
    (tmp_path / "p.route").write_text(text)
    return load_policy(tmp_path / "p.route")


def error_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> str:
    monkeypatch.chdir(tmp_path)
    Path("p.route").write_text(text)
    with pytest.raises(RouterError) as info:
        load_policy("p.route")
    return info.value.format()
