"""`checkov --framework kubernetes` on a folder of emitted manifests, with the repo's
.checkov.yaml, as a platform team's CI runs it. One run per folder (checkov takes seconds to
start). Where checkov is: $CHECKOV, else `checkov` on PATH, else the virtualenv that
.ci/k8s-setup.sh installs it into (its pins would otherwise change router's own packages)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / ".checkov.yaml"
VENV = Path(os.environ.get("CHECKOV_VENV") or Path.home() / ".local" / "share" / "router-checkov")


class CheckovError(RuntimeError):
    """checkov is missing or did not run; the message says how to get it."""


def checkov_binary() -> str:
    found = os.environ.get("CHECKOV") or shutil.which("checkov")
    if found:
        return found
    candidate = VENV / "bin" / "checkov"
    if candidate.exists():
        return str(candidate)
    raise CheckovError("checkov not found: run .ci/k8s-setup.sh (it installs checkov from PyPI)")


def run_checkov(folder: Path) -> dict[str, Any]:
    """checkov's JSON report for `folder` (one check type: kubernetes)."""
    proc = subprocess.run(
        [checkov_binary(), "--config-file", str(CONFIG), "-d", str(folder), "-o", "json"],
        capture_output=True,
        text=True,
        timeout=600,
        # No download of the guideline links: the report is the same offline.
        env={**os.environ, "BC_SKIP_MAPPING": "TRUE"},
    )
    if proc.returncode not in (0, 1):  # 1: some check failed, which the caller reports
        raise CheckovError(f"checkov failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    report = json.loads(proc.stdout)
    if isinstance(report, list):
        (report,) = [r for r in report if r.get("check_type") == "kubernetes"]
    if "summary" not in report:  # nothing scanned: checkov prints an empty summary object
        raise CheckovError(f"checkov scanned nothing in {folder}: {proc.stdout[:500]}")
    return dict(report)


def failures(report: dict[str, Any]) -> list[str]:
    """One line per failed check: id, resource, file."""
    return [
        f"{f['check_id']} {f['check_name']}: {f['resource']} ({f['file_path']})"
        for f in report["results"]["failed_checks"]
    ]
