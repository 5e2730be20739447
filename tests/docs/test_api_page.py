"""docs/api.md runs: every `>>>` example on the page, from the repository's root."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_api_page_examples(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the page loads examples/ml-platform by a relative path
    failed, attempted = doctest.testfile(
        str(ROOT / "docs" / "api.md"),
        module_relative=False,
        raise_on_error=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        verbose=False,
    )
    assert attempted >= 30  # the page's examples were found (a fence change loses them)
    assert failed == 0
