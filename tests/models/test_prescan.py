"""The workload files scanned in a forked child while `router plan` goes on
(router/models/prescan.py): the loader takes the child's items only for the text it read,
and the plan is the same bytes as when every file is scanned in the process itself."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from router import fork
from router.cli.main import cli
from router.models import loader, prescan
from router.models.blockyaml import plain_reader, scan
from router.models.yamlsource import Builder, read_source
from tests.helpers import EXAMPLE

_TEXT = "- name: a\n  kind: batch\n  image: x\n  command: run\n  cpus: 1\n"


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the scans the loader runs itself (in this process)."""
    here: list[int] = []
    real = loader.scan  # type: ignore[attr-defined]

    def counted(*args: Any) -> Any:
        here.append(os.getpid())
        return real(*args)

    monkeypatch.setattr(loader, "scan", counted)
    return here


def _plan(out: Path) -> dict[str, bytes]:
    result = CliRunner().invoke(cli, ["plan", str(EXAMPLE), "-o", str(out), "-q"])
    assert result.exit_code in (0, 3), result.output
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_router_plan_takes_the_childs_scan_and_writes_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = _counted(monkeypatch)
    with_child = _plan(tmp_path / "a")
    assert here == []  # every workload file came scanned from the child
    monkeypatch.setattr(prescan, "can_fork", lambda: False)
    alone = _plan(tmp_path / "b")
    assert here and with_child == alone
    assert not prescan._PENDING and not prescan._SCANNED  # nothing left for a later plan


def test_a_text_other_than_the_one_scanned_is_scanned_here(tmp_path: Path) -> None:
    file = tmp_path / "w.yaml"
    file.write_text(_TEXT)
    prescan.start(loader.workload_files(file))
    source = read_source(file, str(file))
    expected = scan(source.text, plain_reader(Builder(source)))
    assert expected is not None
    assert prescan.scanned(str(file), source.text + "\n") == (False, None)
    prescan.start(loader.workload_files(file))
    assert prescan.scanned(str(file), source.text) == (True, expected)
    assert prescan.scanned(str(file), source.text) == (False, None)  # taken once
    prescan.cancel()


def test_a_child_that_fails_leaves_every_file_to_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "w.yaml"
    file.write_text(_TEXT)

    def failing(fn: Any) -> fork.Started[Any]:
        return fork.start(lambda: 1 // 0)

    monkeypatch.setattr(prescan, "start_child", failing)
    prescan.start(loader.workload_files(file))
    assert prescan.scanned(str(file), file.read_text()) == (False, None)
    assert [w.name for w in loader.load_workloads(file)] == ["a"]
