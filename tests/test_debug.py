"""The debug switch (ROUTER_DEBUG=1): a bug becomes one line without it and its traceback
with it, on the command line and in the prover. A bug is simulated by a function that
raises; user errors never reach these paths."""

from __future__ import annotations

from typing import Any, NoReturn

import pytest
from click.testing import CliRunner

import router
from router.assure import prove
from router.assure.cases import Case, CaseRunner
from router.cli.main import cli
from router.evaluate.evaluate import Evaluator
from router.evaluate.quota import compile_quotas
from tests.helpers import EXAMPLE


def _bug(*args: Any, **kwargs: Any) -> NoReturn:
    raise RuntimeError("a bug")


def test_cli_internal_error_is_one_line_and_a_traceback_with_the_switch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(router, "plan", _bug)
    monkeypatch.delenv("ROUTER_DEBUG", raising=False)
    out = CliRunner().invoke(cli, ["plan", str(EXAMPLE), "--no-write"])
    assert out.exit_code == 1
    assert "router: internal error: RuntimeError: a bug" in out.output
    assert "ROUTER_DEBUG=1" in out.output
    monkeypatch.setenv("ROUTER_DEBUG", "1")
    out = CliRunner().invoke(cli, ["plan", str(EXAMPLE), "--no-write"])
    assert isinstance(out.exception, RuntimeError)
    monkeypatch.setenv("ROUTER_DEBUG", "0")  # "0" is off
    assert CliRunner().invoke(cli, ["plan", str(EXAMPLE), "--no-write"]).exit_code == 1


def test_a_prover_bug_is_that_checks_error_or_raises_with_the_switch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    platform = router.load(EXAMPLE)
    check = platform.policy.checks[0]
    ev = Evaluator(platform.policy, platform.inventory)
    monkeypatch.setattr(prove, "_prove", _bug)
    monkeypatch.delenv("ROUTER_DEBUG", raising=False)
    result = prove.prove_check(ev, check, platform.inventory)
    assert result.status == "error" and result.note == "RuntimeError: a bug"
    monkeypatch.setenv("ROUTER_DEBUG", "1")
    with pytest.raises(RuntimeError, match="a bug"):
        prove.prove_check(ev, check, platform.inventory)


def test_an_invalid_case_workload_is_reported_with_the_field() -> None:
    platform = router.load(EXAMPLE)
    ev = Evaluator(platform.policy, platform.inventory)
    runner = CaseRunner(ev, compile_quotas(platform.policy, platform.inventory))
    result = runner.run(
        Case("bad", {"kind": "training", "gpus": "eight"}, {"backend": "slurm"}, "cases.yaml:1")
    )
    assert not result.passed
    assert result.error is not None and result.error.startswith("invalid workload: gpus")
