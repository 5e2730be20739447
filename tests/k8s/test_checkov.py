"""checkov on what router writes: the example platform and the test platforms, zero failures.

`checkov --framework kubernetes` (PyPI; .ci/k8s-setup.sh installs it) runs once per
platform's out/kubernetes/ folder with the repo's .checkov.yaml, whose skip list is short and
justified. A workload that opts out of something on purpose (pod_security baseline, a service
account, secrets in env) carries a `checkov.io/skipN` annotation with its reason; the tests
check that those are exactly the skips checkov reports, and that the hardening checks really
ran and passed on every pod-bearing object.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from router.config import load_project
from router.emit import assign_artifacts, emit_all
from router.plan.build import build_plan
from tests.helpers import make_project
from tests.k8s import hardened
from tests.k8s.checkov import CONFIG, run_checkov
from tests.k8s.test_plan_manifests import (
    OPERATORS_INVENTORY,
    OPERATORS_POLICY,
    operator_workloads,
)

ROOT = Path(__file__).resolve().parents[2]
POD_KINDS = ("Deployment", "StatefulSet", "Job")
# What the restricted defaults are for: privilege escalation, root, capabilities, NET_RAW,
# security contexts, seccomp, service account tokens, pull policy, high UID.
HARDENING = {
    "CKV_K8S_20",
    "CKV_K8S_23",
    "CKV_K8S_28",
    "CKV_K8S_29",
    "CKV_K8S_30",
    "CKV_K8S_31",
    "CKV_K8S_37",
    "CKV_K8S_38",
    "CKV_K8S_40",
    "CKV_K8S_15",
}
PROBES = {"CKV_K8S_8", "CKV_K8S_9"}


def emit(root: Path, out: Path) -> Path:
    project = load_project(root)
    plan = build_plan(project)
    assign_artifacts(plan.placements)
    for rel, text in emit_all(plan.placements, project.kubernetes).items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return out / "kubernetes"


def pod_objects(folder: Path, builtin: bool = True) -> dict[str, dict[str, object]]:
    """checkov's resource id (Kind.namespace.name) -> object, for the kinds with pods
    (checkov takes a Volcano Job for one too: `builtin=False` includes it)."""
    out = {}
    for path in sorted(folder.glob("*/*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            core = doc and doc["apiVersion"] in ("apps/v1", "batch/v1")
            if doc and doc["kind"] in POD_KINDS and (core or not builtin):
                meta = doc["metadata"]
                out[f"{doc['kind']}.{meta['namespace']}.{meta['name']}"] = doc
    return out


def annotated_skips(objects: dict[str, dict[str, object]]) -> set[tuple[str, str]]:
    skips = set()
    for resource, doc in objects.items():
        meta = doc["metadata"]
        assert isinstance(meta, dict)
        for key, value in (meta.get("annotations") or {}).items():
            if key.startswith("checkov.io/skip"):
                skips.add((value.split("=", 1)[0], resource))
    return skips


def check_folder(folder: Path) -> dict[str, dict[str, object]]:
    """checkov passes `folder`; returns the pod-bearing objects it judged."""
    report = run_checkov(folder)
    summary, results = report["summary"], report["results"]
    failed = [f"{f['check_id']} {f['resource']} ({f['file_path']})" for f in
              results["failed_checks"]]  # fmt: skip
    assert failed == [], "\n".join(failed)
    assert summary["parsing_errors"] == 0
    objects = pod_objects(folder)
    assert objects, f"no Deployment, StatefulSet or Job in {folder}"
    skipped = {(s["check_id"], s["resource"]) for s in results.get("skipped_checks", [])}
    # Every skip is one an object asked for, with its reason.
    assert skipped == annotated_skips(pod_objects(folder, builtin=False))
    passed: dict[str, set[str]] = {}
    for p in results["passed_checks"]:
        passed.setdefault(p["resource"], set()).add(p["check_id"])
    for resource, doc in objects.items():
        asked = {check for check, r in skipped if r == resource}
        want = HARDENING | (PROBES if doc["kind"] != "Job" else set())
        missing = want - asked - passed.get(resource, set())
        assert not missing, f"{resource}: checks did not pass: {sorted(missing)}"
    return objects


def test_skip_list_is_short_and_explained() -> None:
    text = CONFIG.read_text()
    config = yaml.safe_load(text)
    skips = config["skip-check"]
    assert config["framework"] == ["kubernetes"]
    assert 0 < len(skips) <= 8
    lines = text.splitlines()
    for check in skips:
        at = lines.index(f"  - {check}")
        assert lines[at - 1].lstrip().startswith("#"), f"{check} has no reason above it"


def test_example_platform_passes_checkov(tmp_path: Path) -> None:
    objects = check_folder(emit(ROOT / "examples" / "ml-platform", tmp_path))
    assert any(k.startswith("StatefulSet.") for k in objects)  # its notebooks


def test_hardened_platform_passes_checkov(tmp_path: Path) -> None:
    folder = emit(hardened.project(tmp_path / "p"), tmp_path / "out")
    objects = check_folder(folder)
    assert {"Deployment.legacy.legacy-api", "Deployment.serving.chat"} <= set(objects)


def test_operator_platform_passes_checkov(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", operator_workloads(), OPERATORS_POLICY,
                        OPERATORS_INVENTORY)  # fmt: skip
    objects = check_folder(emit(root, tmp_path / "out"))
    assert any(k.startswith("Job.") for k in objects)
