"""`router check` findings for people and for CI: text, json, junit, sarif, github.

github is GitHub Actions workflow commands (`::error file=...,line=...,col=...::message`), which
annotate the pull request's diff; sarif (2.1.0) is for code-scanning uploads; junit for CI test
reports. Every format carries the same findings: severity, code, file:line:col, message, hint
and the witness workload where there is one.
"""

from __future__ import annotations

import json
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import yaml

from router.assure.analysis import Finding

FORMATS = ("text", "json", "junit", "sarif", "github")
_TOOL_URI = "https://github.com/router/router"


def counts(findings: list[Finding]) -> dict[str, int]:
    return {s: sum(f.severity == s for f in findings) for s in ("error", "warning", "info")}


def _witness_yaml(witness: dict[str, Any]) -> str:
    return yaml.safe_dump(witness, sort_keys=False, default_flow_style=False).rstrip()


def _summary(findings: list[Finding], ok: str) -> str:
    c = counts(findings)
    if not findings:
        return ok
    return f"{c['error']} errors, {c['warning']} warnings, {c['info']} notes"


def render_text(findings: list[Finding], ok: str) -> str:
    out: list[str] = []
    for f in findings:
        sev = "note" if f.severity == "info" else f.severity
        out.append(f"{f.location()}: {sev}: {f.message} [{f.code}]")
        out += f.caret()
        if f.hint:
            out.append(f"  {f.hint}")
        if f.witness is not None:
            out.append("  witness workload:")
            out += ["    " + line for line in _witness_yaml(f.witness).splitlines()]
        out.append("")
    out.append(_summary(findings, ok))
    return "\n".join(out)


def render_json(findings: list[Finding], ok: str) -> str:
    doc = {"findings": [f.to_dict() for f in findings], "summary": counts(findings),
           "status": ok if not findings else _summary(findings, ok)}  # fmt: skip
    return json.dumps(doc, indent=2)


def render_junit(findings: list[Finding], ok: str, strict: bool = False) -> str:
    """One test case per finding (an error, or a warning under --strict, is a failure)."""
    failing = [f for f in findings if f.severity == "error" or (strict and f.severity == "warning")]
    cases: list[str] = []
    for f in findings:
        name = quoteattr(f"{f.code} {f.location()}")
        body = f.message + (f"\n{f.hint}" if f.hint else "")
        if f.witness is not None:
            body += "\nwitness workload:\n" + _witness_yaml(f.witness)
        if f in failing:
            inner = (f"<failure message={quoteattr(f.message)} type={quoteattr(f.severity)}>"
                     f"{escape(body)}</failure>")  # fmt: skip
        else:
            inner = f"<system-out>{escape(f.severity + ': ' + body)}</system-out>"
        cases.append(f'    <testcase classname="router.check" name={name} file={quoteattr(f.path)}'
                     f' line="{f.line}">{inner}</testcase>')  # fmt: skip
    if not findings:
        cases.append(f'    <testcase classname="router.check" name={quoteattr(ok)}/>')
    head = (f'  <testsuite name="router check" tests="{max(len(findings), 1)}" '
            f'failures="{len(failing)}" errors="0" skipped="0">')  # fmt: skip
    return "\n".join(['<?xml version="1.0" encoding="UTF-8"?>', "<testsuites>", head, *cases,
                      "  </testsuite>", "</testsuites>"])  # fmt: skip


def render_sarif(findings: list[Finding], ok: str) -> str:
    level = {"error": "error", "warning": "warning", "info": "note"}
    rules = sorted({f.code for f in findings})
    results = []
    for f in findings:
        region: dict[str, Any] = {"startLine": f.line, "startColumn": f.column}
        if f.end_line and f.end_column:
            region |= {"endLine": f.end_line, "endColumn": f.end_column}
        text = f.message + (f" ({f.hint})" if f.hint else "")
        result: dict[str, Any] = {
            "ruleId": f.code, "ruleIndex": rules.index(f.code), "level": level[f.severity],
            "message": {"text": text},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": f.path.replace("\\", "/")}, "region": region}}],
        }  # fmt: skip
        if f.witness is not None:
            result["properties"] = {"witness": f.witness}
        results.append(result)
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "router check", "informationUri": _TOOL_URI,
                                "rules": [{"id": r, "name": r} for r in rules]}},
            "results": results,
        }],
    }  # fmt: skip
    return json.dumps(doc, indent=2)


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(findings: list[Finding], ok: str) -> str:
    command = {"error": "error", "warning": "warning", "info": "notice"}
    out = []
    for f in findings:
        props = f"file={_gh_prop(f.path)},line={f.line},col={f.column}"
        if f.end_line and f.end_column and f.end_line == f.line:
            props += f",endColumn={f.end_column}"
        props += f",title={_gh_prop('router check: ' + f.code)}"
        body = f.message + (f"\n{f.hint}" if f.hint else "")
        if f.witness is not None:
            body += "\nwitness workload:\n" + _witness_yaml(f.witness)
        out.append(f"::{command[f.severity]} {props}::{_gh_data(body)}")
    out.append(_summary(findings, ok))
    return "\n".join(out)


def render(findings: list[Finding], fmt: str, ok: str = "ok", strict: bool = False) -> str:
    """`findings` in format `fmt` (one of FORMATS); `ok` is the summary when there are none."""
    if fmt == "junit":
        return render_junit(findings, ok, strict)
    renderers = {"text": render_text, "json": render_json, "sarif": render_sarif,
                 "github": render_github}  # fmt: skip
    return renderers[fmt](findings, ok)
