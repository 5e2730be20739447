"""`router test` output: text, json, junit, sarif and github (workflow commands).

Every format reports the same things: each `check` block (proven, refuted with a
counterexample workload, checked by enumeration, or error), each test case (passed, or the
per-field diff), and coverage. `rel` turns a "file:line" into what the user sees (a path
relative to the project).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from xml.etree import ElementTree as ET

import yaml

from router.assure.cases import CaseResult
from router.assure.coverage import Coverage
from router.assure.prove import SEMANTICS, CheckResult
from router.version import __version__

Rel = Callable[[str], str]


@dataclass
class TestReport:
    checks: list[CheckResult]
    cases: list[CaseResult]
    coverage: Coverage | None
    threshold: float | None = None

    @property
    def refuted(self) -> list[CheckResult]:
        return [c for c in self.checks if c.failed]

    @property
    def failed_cases(self) -> list[CaseResult]:
        return [c for c in self.cases if not c.passed]

    @property
    def below_threshold(self) -> bool:
        return (self.threshold is not None and self.coverage is not None
                and self.coverage.percent + 1e-9 < self.threshold)  # fmt: skip

    @property
    def ok(self) -> bool:
        return not self.refuted and not self.failed_cases and not self.below_threshold


def _split(source: str) -> tuple[str, int]:
    path, _, line = source.rpartition(":")
    return (path, int(line)) if line.isdigit() else (source, 1)


def _show(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, (dict, list, bool)):
        return json.dumps(value)
    return str(value)


def counterexample_yaml(doc: dict[str, Any]) -> str:
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False).rstrip()


def check_message(c: CheckResult, rel: Rel) -> str:
    """The words for one check, several lines for a refuted one."""
    if c.status == "proven":
        return "proven: holds for every workload"
    if c.status == "enumerated":
        return c.note
    if c.status == "error":
        return f"could not be checked: {c.note}"
    lines = ["refuted: a workload breaks it"]
    if c.decided_by:
        what, where = c.decided_by
        lines.append(f"decided by {what}" + (f" ({rel(where)})" if where else ""))
    if c.outcome:
        lines.append("outcome: " + ", ".join(f"{k} {_show(v)}" for k, v in c.outcome.items()))
    if c.method == "enumeration":
        lines.append(c.note)
    if c.counterexample:
        lines.append("counterexample (paste as a test case's workload):")
        lines += ["  " + x for x in counterexample_yaml(c.counterexample).splitlines()]
    return "\n".join(lines)


def case_message(r: CaseResult) -> str:
    if r.error:
        return r.error
    if r.passed:
        return "passed"
    return "\n".join(f"{k}: expected {_show(w)}, got {_show(g)}" for k, w, g in r.diffs)


# -- text ------------------------------------------------------------------------------------
def render_text(report: TestReport, rel: Rel) -> str:
    out: list[str] = []
    if report.checks:
        out.append(f"Properties ({len(report.checks)}):")
        for c in report.checks:
            word = {"proven": "PROVEN", "refuted": "REFUTED", "enumerated": "CHECKED",
                    "error": "ERROR"}[c.status]  # fmt: skip
            out.append(f"  {word:<8} {c.name}  ({rel(c.source)})")
            if c.status != "proven":
                out += ["           " + x for x in check_message(c, rel).splitlines()]
        out.append(f"  semantics: {SEMANTICS}")
    if report.cases:
        passed = len(report.cases) - len(report.failed_cases)
        out.append(f"Test cases ({len(report.cases)}): {passed} passed, "
                   f"{len(report.failed_cases)} failed")  # fmt: skip
        for r in report.cases:
            out.append(f"  {'ok  ' if r.passed else 'FAIL'} {r.case.name}  ({rel(r.case.source)})")
            if not r.passed:
                out += ["         " + x for x in case_message(r).splitlines()]
    if report.coverage is not None:
        out += _coverage_text(report.coverage, report.threshold, rel)
    problems = []
    if report.refuted:
        problems.append(f"{len(report.refuted)} property(ies) refuted")
    if report.failed_cases:
        problems.append(f"{len(report.failed_cases)} case(s) failed")
    if report.below_threshold:
        problems.append("coverage below the threshold")
    out.append("Result: " + ("PASSED" if report.ok else "FAILED (" + "; ".join(problems) + ")"))
    return "\n".join(out) + "\n"


def _coverage_text(cov: Coverage, threshold: float | None, rel: Rel) -> list[str]:
    kinds = cov.by_kind()
    parts = ", ".join(f"{label} {kinds[k][0]}/{kinds[k][1]}"
                      for k, label in (("deny", "deny rules"), ("rule", "rules"),
                                       ("route", "route clauses")))  # fmt: skip
    out = [f"Coverage: {cov.covered}/{len(cov.items)} ({cov.percent:.1f}%): {parts}"
           + (f"; threshold {threshold:g}%" if threshold is not None else "")]  # fmt: skip
    out.append(f"  {'item':<44} {'cases':>5}  source")
    for i in cov.items:
        label = f"{i.kind} {i.name}" if i.kind != "route" else f"  {i.name}"
        mark = str(len(i.covered_by)) if i.covered else "NOT COVERED"
        out.append(f"  {label:<44} {mark:>5}  {rel(i.source)}")
    return out


# -- json ------------------------------------------------------------------------------------
def render_json(report: TestReport, rel: Rel) -> str:
    doc = {
        "ok": report.ok,
        "semantics": SEMANTICS,
        "checks": [
            {
                "name": c.name,
                "source": rel(c.source),
                "status": c.status,
                "method": c.method,
                "workloads": c.workloads,
                "note": c.note,
                "counterexample": c.counterexample,
                "decided_by": c.decided_by[0] if c.decided_by else None,
                "decided_by_source": rel(c.decided_by[1])
                if c.decided_by and c.decided_by[1]
                else None,
                "outcome": c.outcome,
                "seconds": round(c.seconds, 3),
            }
            for c in report.checks
        ],
        "cases": [
            {
                "name": r.case.name,
                "source": rel(r.case.source),
                "passed": r.passed,
                "error": r.error or None,
                "diffs": [{"field": k, "expected": w, "got": g} for k, w, g in r.diffs],
            }
            for r in report.cases
        ],
        "coverage": _coverage_json(report.coverage, rel) if report.coverage else None,
        "coverage_threshold": report.threshold,
    }
    return json.dumps(doc, indent=2, default=str) + "\n"


def _coverage_json(cov: Coverage, rel: Rel) -> dict[str, Any]:
    doc = cov.to_json()
    for item in doc["items"]:
        item["source"] = rel(item["source"])
    return doc


# -- junit -----------------------------------------------------------------------------------
def render_junit(report: TestReport, rel: Rel) -> str:
    root = ET.Element("testsuites", name="router test")
    suites: list[tuple[str, list[CheckResult] | list[CaseResult]]] = [
        ("properties", report.checks),
        ("cases", report.cases),
    ]
    for suite_name, items in suites:
        failures = sum(
            1 for i in items if (i.failed if isinstance(i, CheckResult) else not i.passed)
        )
        suite = ET.SubElement(root, "testsuite", name=suite_name, tests=str(len(items)),
                              failures=str(failures), errors="0", skipped="0")  # fmt: skip
        for item in items:
            if isinstance(item, CheckResult):
                name, source, ok, text = (
                    item.name,
                    item.source,
                    not item.failed,
                    check_message(item, rel),
                )
                seconds = item.seconds
            else:
                name, source, ok, text = (
                    item.case.name,
                    item.case.source,
                    item.passed,
                    case_message(item),
                )
                seconds = 0.0
            path, line = _split(rel(source))
            tc = ET.SubElement(suite, "testcase", name=name, classname=path,
                               file=path, line=str(line), time=f"{seconds:.3f}")  # fmt: skip
            if not ok:
                first = text.splitlines()[0] if text else "failed"
                ET.SubElement(tc, "failure", message=first).text = text
            elif text and isinstance(item, CheckResult):
                ET.SubElement(tc, "system-out").text = text
    if report.coverage is not None and report.below_threshold:
        suite = ET.SubElement(root, "testsuite", name="coverage", tests="1", failures="1")
        tc = ET.SubElement(suite, "testcase", name="coverage threshold", classname="coverage")
        ET.SubElement(tc, "failure", message=f"coverage {report.coverage.percent:.1f}% < "
                      f"{report.threshold:g}%")  # fmt: skip
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


# -- sarif -----------------------------------------------------------------------------------
_RULES = {
    "refuted-property": "A `check` property is false: a workload breaks it.",
    "unproven-property": "A `check` property was only checked by enumeration, not proven.",
    "property-error": "A `check` property could not be checked.",
    "failed-test-case": "A routing test case did not get the expected outcome.",
    "coverage-threshold": "Test cases cover less of the policy than the threshold.",
}


def _sarif_result(rule: str, level: str, text: str, source: str) -> dict[str, Any]:
    path, line = _split(source)
    return {
        "ruleId": rule,
        "level": level,
        "message": {"text": text},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": path},
                                            "region": {"startLine": line}}}],
    }  # fmt: skip


def _findings(report: TestReport, rel: Rel) -> list[tuple[str, str, str, str, str]]:
    """(rule id, level, title, message, source) for every problem."""
    out = []
    for c in report.checks:
        if c.status == "refuted":
            out.append(("refuted-property", "error", f"property {c.name} is false",
                        check_message(c, rel), rel(c.source)))  # fmt: skip
        elif c.status == "error":
            out.append(("property-error", "error", f"property {c.name} could not be checked",
                        check_message(c, rel), rel(c.source)))  # fmt: skip
        elif c.status == "enumerated":
            out.append(("unproven-property", "warning", f"property {c.name} not proven",
                        c.note, rel(c.source)))  # fmt: skip
    for r in report.failed_cases:
        out.append(("failed-test-case", "error", f"test case {r.case.name} failed",
                    case_message(r), rel(r.case.source)))  # fmt: skip
    if report.below_threshold and report.coverage is not None:
        first = report.coverage.items[0].source if report.coverage.items else "policy:1"
        out.append(("coverage-threshold", "error", "coverage below threshold",
                    f"coverage {report.coverage.percent:.1f}% is below {report.threshold:g}%",
                    rel(first)))  # fmt: skip
    return out


def render_sarif(report: TestReport, rel: Rel) -> str:
    results = [_sarif_result(rule, level, f"{title}: {text}", source)
               for rule, level, title, text, source in _findings(report, rel)]  # fmt: skip
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "router", "version": __version__,
                "informationUri": "https://github.com/router-dev/router",
                "rules": [{"id": k, "shortDescription": {"text": v}} for k, v in _RULES.items()],
            }},
            "results": results,
        }],
    }  # fmt: skip
    return json.dumps(doc, indent=2) + "\n"


# -- github ----------------------------------------------------------------------------------
def _escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def render_github(report: TestReport, rel: Rel) -> str:
    lines = []
    for _, level, title, text, source in _findings(report, rel):
        path, line = _split(source)
        kind = "error" if level == "error" else "warning"
        lines.append(f"::{kind} file={_escape(path, True)},line={line},"
                     f"title={_escape(title, True)}::{_escape(text)}")  # fmt: skip
    proven = sum(1 for c in report.checks if c.status == "proven")
    passed = len(report.cases) - len(report.failed_cases)
    summary = (f"router test: {proven}/{len(report.checks)} properties proven, "
               f"{passed}/{len(report.cases)} cases passed")  # fmt: skip
    if report.coverage is not None:
        summary += f", coverage {report.coverage.percent:.1f}%"
    lines.append(summary)
    return "\n".join(lines) + "\n"


RENDERERS: dict[str, Callable[[TestReport, Rel], str]] = {
    "text": render_text, "json": render_json, "junit": render_junit, "sarif": render_sarif,
    "github": render_github,
}  # fmt: skip
