"""Routing test cases: YAML files next to the policy, run by `router test`.

Where: every *.yaml / *.yml file under `tests/` in the policy folder (`policies/tests/`), or
next to a single policy file; `router test --cases PATH` names another file or folder. A file
is a list of cases, or a mapping with `cases:`:

    - name: big training goes to Slurm, whole nodes
      workload: {kind: training, gpus: 16}      # partial: the defaults fill in the rest
      expect:
        backend: slurm
        cluster: hpc-east
        target: hpc-east/gpu-h100               # or just the target name, gpu-h100
        rule: large_training
        options: {exclusive: true, qos: high}   # only the options named are compared
    - name: notebooks get one GPU
      workload: {kind: notebook, gpus: 2}
      expect: {denied: true, message: "at most one GPU"}  # message: a part of it

Workload defaults: the case name (as a DNS label) for `name`, an image and a command (so the
workload can run anywhere), and the Workload model's defaults for the rest.

How a case is decided: `Evaluator.decide` gives denied / rule / unrouted; a routed workload is
then planned alone (build_problem + solve, quotas included, empty inventory otherwise), so
`backend`, `cluster`, `target` and `options` are where `router plan` would put it with no
other workload competing, and `unplaced: true` expects it to fit nowhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from yaml.nodes import MappingNode, Node, SequenceNode

from router.assure.prove import runnable
from router.errors import ErrorGroup, LoadError, RouterError, Source, Span, did_you_mean
from router.evaluate.evaluate import Candidate, Decision, Evaluator
from router.evaluate.quota import QuotaLimit
from router.language import ast
from router.models import Workload
from router.models.loader import validate_node
from router.models.yamlsource import Builder, compose, locate, read_source, span

EXPECT_KEYS = ("backend", "cluster", "target", "rule", "denied", "message", "unplaced",
               "unrouted", "rank", "options")  # fmt: skip
CASE_KEYS = ("name", "workload", "expect")


@dataclass
class Case:
    name: str
    workload: dict[str, Any]
    expect: dict[str, Any]
    source: str  # file:line
    span: Span | None = field(default=None, compare=False)  # where the case starts
    # Why its workload is no valid workload, at the field (the case fails, the others run).
    invalid: RouterError | None = field(default=None, compare=False)


@dataclass
class Got:
    """What happened to a case's workload."""

    denied: bool = False
    unrouted: bool = False
    unplaced: bool = False
    rule: str | None = None
    message: str = ""
    backend: str | None = None
    cluster: str | None = None
    target: str | None = None
    rank: int | None = None
    options: dict[str, Any] = field(default_factory=dict)
    decision: Decision | None = None

    def get(self, key: str) -> Any:
        return getattr(self, key)


@dataclass
class CaseResult:
    case: Case
    passed: bool
    diffs: list[tuple[str, Any, Any]]  # (field, expected, got)
    got: Got | None = None
    error: str = ""


# -- loading ---------------------------------------------------------------------------------
def case_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.exists():
        return []
    return sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def default_cases_path(policy_path: Path) -> Path:
    return (policy_path if policy_path.is_dir() else policy_path.parent) / "tests"


def load_cases(path: Path) -> list[Case]:
    cases: list[Case] = []
    for f in case_files(path):
        cases += _load_file(f)
    names: dict[str, Case] = {}
    for c in cases:
        first = names.setdefault(c.name, c)
        if first is not c:
            file, _, line = c.source.rpartition(":")
            raise LoadError(f'case "{c.name}" is defined twice (first at {first.source})',
                            c.span, path=file, line=int(line))  # fmt: skip
    return cases


def _load_file(path: Path) -> list[Case]:
    """The cases of one file, read as router reads its own YAML (yamlsource: positions, the
    limits of docs/limits.md); every error at its line and column."""
    source = read_source(path, str(path))
    docs = compose(source)
    if not docs:
        return []
    if len(docs) > 1:
        raise LoadError("a test case file holds one YAML document", span(source, docs[1]))
    builder = Builder(source)
    node, data = docs[0], builder.value(docs[0])
    if builder.errors:
        raise builder.errors[0] if len(builder.errors) == 1 else ErrorGroup(builder.errors)
    if data is None:
        return []
    if isinstance(data, dict) and "cases" in data and isinstance(node, MappingNode):
        node, data = locate(node, ("cases",))[1], data["cases"]
    if not isinstance(data, list) or not isinstance(node, SequenceNode):
        raise LoadError("expected a list of test cases (or a mapping with `cases:`)",
                        span(source, node))  # fmt: skip
    return [_case(item, n, source) for item, n in zip(data, node.value, strict=True)]


def _case(item: Any, node: Node, source: Source) -> Case:
    def fail(msg: str, hint: str | None = None, *where: Any) -> LoadError:
        key, at = locate(node, where) if where else (None, node)
        return LoadError(msg, span(source, key if key is not None else at), hint=hint)

    if not isinstance(item, dict):
        raise fail("a test case is a mapping with name, workload and expect")
    for key in item:
        if key not in CASE_KEYS:
            raise fail(f'unknown test case key "{key}"', did_you_mean(str(key), CASE_KEYS), key)
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise fail("a test case needs a `name`", None, *(["name"] if "name" in item else []))
    workload = item.get("workload") or {}
    expect = item.get("expect")
    if not isinstance(workload, dict):
        raise fail(f"case {name}: `workload` must be a mapping of workload fields", None,
                   "workload")  # fmt: skip
    if not isinstance(expect, dict) or not expect:
        raise fail(f"case {name}: `expect` must name at least one of {', '.join(EXPECT_KEYS)}",
                   None, *(["expect"] if "expect" in item else []))  # fmt: skip
    for key in expect:
        if key not in EXPECT_KEYS:
            raise fail(f'case {name}: unknown expectation "{key}"',
                       did_you_mean(str(key), EXPECT_KEYS)
                       or f"expected one of {', '.join(EXPECT_KEYS)}", "expect", key)  # fmt: skip
    if "options" in expect and not isinstance(expect["options"], dict):
        raise fail(f"case {name}: `options` must be a mapping such as {{exclusive: true}}",
                   None, "expect", "options")  # fmt: skip
    invalid = None
    if workload:  # what `router plan` would say of this workload, at its field
        doc = runnable({"name": case_label(name), **workload})
        invalid = next(iter(validate_node(Workload, doc, locate(node, ("workload",))[1],
                                          source)[1]), None)  # fmt: skip
    at = span(source, node)
    return Case(name, dict(workload), dict(expect), f"{source.path}:{at.line}", at, invalid)


def case_label(name: str) -> str:
    """A workload name (DNS label) made from a case name."""
    label = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:63].strip("-")
    return label or "case"


# -- running ---------------------------------------------------------------------------------
class CaseRunner:
    """The policy compiled once; run(case) plans the case's workload alone."""

    def __init__(self, ev: Evaluator, quotas: list[QuotaLimit]) -> None:
        self.ev, self.quotas = ev, quotas

    def outcome(self, w: Workload) -> Got:
        from router.solve.cpsat import SolveOptions, solve
        from router.solve.problem import build_problem

        d = self.ev.decide(w)
        if d.status == "denied":
            assert d.rule is not None
            return Got(denied=True, rule=d.rule.name, message=d.message, decision=d)
        if d.status == "unrouted":
            return Got(unrouted=True, message=d.message, decision=d)
        assert isinstance(d.rule, ast.Rule)
        got = Got(rule=d.rule.name, decision=d)
        chosen: Candidate | None = None
        if d.candidates:
            problem = build_problem([d], self.ev.targets, self.quotas, None)
            chosen = solve(problem, SolveOptions(workers=1)).assignment.get(w.name)
        if chosen is None:
            got.unplaced = True
            first = d.rule.routes[0]
            got.backend = None if first.backend == "any" else first.backend
            return got
        got.backend, got.cluster = chosen.target.backend, chosen.target.cluster
        got.target, got.rank, got.options = chosen.target.id, chosen.rank, dict(chosen.options)
        return got

    def run(self, case: Case) -> CaseResult:
        if case.invalid is not None:
            error = f"invalid workload: {case.invalid.location()}: {case.invalid.message}"
            return CaseResult(case, False, [], error=error)
        doc = runnable({"name": case_label(case.name), **case.workload})
        try:
            w = Workload.model_validate(doc)
        except ValidationError as e:  # pydantic's message names the field
            return CaseResult(case, False, [], error=f"invalid workload: {_first_line(e)}")
        got = self.outcome(w)
        return CaseResult(case, *_compare(case.expect, got))


def _first_line(e: Exception) -> str:
    lines = [re.sub(r"\s*\[type=.*\]$", "", x.strip()) for x in str(e).splitlines() if x.strip()]
    return "; ".join(lines[1:3]) if len(lines) > 1 else str(e)


def _compare(expect: dict[str, Any], got: Got) -> tuple[bool, list[tuple[str, Any, Any]], Got]:
    diffs: list[tuple[str, Any, Any]] = []
    for key, want in expect.items():
        if key == "options":
            for opt, value in want.items():
                have = got.options.get(opt)
                if not _option_equal(value, have):
                    diffs.append((f"options.{opt}", value, have))
        elif key == "target":
            if got.target is None or want not in (got.target, got.target.split("/", 1)[-1]):
                diffs.append((key, want, got.target))
        elif key == "message":
            if str(want) not in got.message:
                diffs.append((key, want, got.message or None))
        elif key in ("denied", "unplaced", "unrouted"):
            if bool(want) != got.get(key):
                diffs.append((key, want, got.get(key)))
        elif got.get(key) != want:
            diffs.append((key, want, got.get(key)))
    return not diffs, diffs, got


def _option_equal(want: Any, have: Any) -> bool:
    if want is None or want is False:
        return have is None or have is False
    if want is True:
        return have is not None and have is not False
    if isinstance(want, dict) and isinstance(have, dict):
        return all(_norm(v) == _norm(have.get(k)) for k, v in want.items())
    return bool(_norm(want) == _norm(have))


def _norm(value: Any) -> Any:
    """`70%` written in YAML reads as the whole percent the evaluator keeps (70)."""
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        return int(value[:-1])
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def run_cases(ev: Evaluator, quotas: list[QuotaLimit], cases: list[Case]) -> list[CaseResult]:
    runner = CaseRunner(ev, quotas)
    return [runner.run(c) for c in cases]
