"""Option values checked by `router check` at their position, with the rule the emitters apply
(models.fields.value_problem through the option table): one function for both."""

from __future__ import annotations

from pathlib import Path

import pytest

from router.language import names
from router.language.names import OPTIONS, OptionSpec, value_format
from router.models.fields import value_problem
from tests.language.policy_text import error_text

ROUTE = {
    "slurm": 'rule r:\n  when kind == "x"\n  route slurm with {opt} = {value}\n',
    "kubernetes": 'rule r:\n  when kind == "x"\n  route kubernetes with {opt} = {value}\n',
}


@pytest.mark.parametrize(("opt", "backend", "value", "expected"), [
    ("qos", "slurm", '"$(touch /tmp/x)"', "`qos` must be letters, digits and"),
    ("account", "slurm", '"a b"', "`account` must be letters"),
    ("reservation", "slurm", '"r#1"', "`reservation` must be letters"),
    ("constraint", "slurm", '"ib;reboot"', "`constraint` must be a Slurm feature expression"),
    ("namespace", "kubernetes", '"Prod"', "`namespace` must be a DNS-1123 label"),
    ("queue", "kubernetes", '"a/b"', "`queue` must be usable as a label value"),
    ("priority_class", "kubernetes", '"High Prio"', "`priority_class` must be a DNS-1123"),
    ("mig", "kubernetes", '"1g 10gb"', "`mig` must be usable as a label value"),
])  # fmt: skip
def test_unsafe_option_values_are_errors_at_the_value(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    opt: str,
    backend: str,
    value: str,
    expected: str,
) -> None:
    message = error_text(tmp_path, monkeypatch, ROUTE[backend].format(opt=opt, value=value))
    column = len(f"  route {backend} with {opt} = ") + 1
    assert message.startswith(f"p.route:3:{column}: error: {expected}"), message
    assert message.splitlines()[2].index("^") == len("    3 | ") + column - 1


@pytest.mark.parametrize(("opt", "backend", "value"), [
    ("qos", "slurm", '"high"'), ("account", "slurm", '"ml-platform"'),
    ("constraint", "slurm", '"ib&(h100|a100)"'), ("namespace", "kubernetes", '"team-a"'),
    ("queue", "kubernetes", '"training"'), ("priority_class", "kubernetes", '"batch.low"'),
])  # fmt: skip
def test_safe_values_pass(tmp_path: Path, opt: str, backend: str, value: str) -> None:
    from tests.language.policy_text import check

    check(tmp_path, ROUTE[backend].format(opt=opt, value=value))


def test_the_emitters_apply_the_same_rule() -> None:
    from router.emit.slurm.script import _CONSTRAINT
    from router.emit.slurm.shell import SAFE
    from router.models.fields import SBATCH_CONSTRAINT, SBATCH_SAFE

    assert SAFE is SBATCH_SAFE and _CONSTRAINT is SBATCH_CONSTRAINT
    for key in ("namespace", "queue", "priority_class"):
        fmt = value_format(OPTIONS[key])
        assert fmt is not None and value_problem(fmt, "Bad Name!") is not None


def test_the_kubernetes_emitter_calls_the_same_function() -> None:
    from router.emit.k8s import context
    from router.models import fields

    assert getattr(context, "value_problem") is fields.value_problem  # noqa: B009
    assert getattr(context, "value_format") is value_format  # noqa: B009


def test_a_new_string_option_is_validated_by_its_backend_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(names.OPTIONS, "launcher", OptionSpec("launcher", ("slurm",), "string"))
    text = 'rule r:\n  when kind == "x"\n  route slurm with launcher = "a;b"\n'
    assert "`launcher` must be letters, digits" in error_text(tmp_path, monkeypatch, text)
    spec = OptionSpec("tolerate", ("kubernetes",), "string")
    assert value_format(spec) == "label_value"
    assert value_format(OptionSpec("m", ("slurm",), "string", ("a", "b"))) is None  # choices


def test_an_unsafe_value_through_a_constant_is_shown_with_its_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = 'let q = "$(id)"\nrule r:\n  when kind == "x"\n  route slurm with qos = q\n'
    message = error_text(tmp_path, monkeypatch, text)
    assert message.startswith("p.route:4:26: error: `qos` must be letters"), message
    assert message.splitlines()[0].endswith('; got q = "$(id)"'), message
