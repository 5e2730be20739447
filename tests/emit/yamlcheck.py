"""A pytest plugin that checks every manifest file the block writer writes in a test run
against PyYAML's pure-Python dumper, byte for byte:

    PYTHONPATH=$PWD python -m pytest -p tests.emit.yamlcheck -p no:cacheprovider [tests...]

Each call of router.emit.k8s.yamlio._fast in the test process is compared; a difference fails
the test that made it. The count of files checked is printed at the end of the run.
"""

from __future__ import annotations

from typing import Any

import pytest

from router.emit.k8s import yamlio
from tests.emit.pure_yaml import pure_dump

_fast = yamlio._fast
checked = {"block": 0, "pyyaml": 0}


def _compared(docs: list[dict[str, Any]]) -> str | None:
    text = _fast(docs)
    if text is None:
        checked["pyyaml"] += 1
        return None
    expected = pure_dump(docs)
    assert text == expected, f"block writer differs from PyYAML:\n{text}\n---- PyYAML:\n{expected}"
    checked["block"] += 1
    return text


def pytest_configure(config: pytest.Config) -> None:
    yamlio._fast = _compared


def pytest_terminal_summary(terminalreporter: Any) -> None:
    terminalreporter.write_line(
        f"yamlcheck: {checked['block']} manifest files by the block writer, all the same bytes "
        f"as pure PyYAML; {checked['pyyaml']} written by PyYAML itself"
    )
