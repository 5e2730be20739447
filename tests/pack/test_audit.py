"""The audit of issue 11: project folders planned by `router plan` as a user runs it, judged
by the audit's own checker (tests/pack/audit_check.py, no router code) and by router's.

The issue's four examples as a user types them (tests/pack/data/audit/issue-*), the
reproducers of the audit's findings A1 and A2 (quotas on `gpus` over MIG targets, fixed:
they count GPU devices), the checker shown able to fail
(a plan.json edited to overfill a node, or to leave out a workload that fits), and a few
seeded platforms of each of the audit's families (tests/pack/audit.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from router.cli.main import cli
from tests.pack import audit
from tests.pack.audit_check import judge

DATA = Path(__file__).parent / "data" / "audit"


def _planned(name: str, tmp_path: Path) -> tuple[Path, dict[str, object], str]:
    folder = tmp_path / name
    shutil.copytree(DATA / name, folder)
    got = CliRunner().invoke(cli, ["plan", str(folder), "--workers", "1"])
    assert got.exit_code in (0, 3), got.output
    return folder, json.loads((folder / "out" / "plan.json").read_text()), got.output


def _unplaced(plan: dict[str, object]) -> dict[str, list[str]]:
    return {u["workload"]: u["reasons"] for u in plan["unplaced"]}  # type: ignore[attr-defined]


def test_overstated_three_replicas_of_30_cpus_on_two_48_cpu_nodes(tmp_path: Path) -> None:
    folder, plan, _ = _planned("issue-overstated", tmp_path)
    assert judge(folder).findings == []
    assert list(_unplaced(plan)) == ["chat"]  # only 2 of its 3 replicas could run
    placed = {p["workload"] for p in plan["placements"]}  # type: ignore[attr-defined]
    assert placed == {"chat-small", "embed"}


def test_understated_a_cpu_job_beside_a_running_gpu_pod(tmp_path: Path) -> None:
    folder, plan, _ = _planned("issue-understated", tmp_path)
    assert judge(folder).findings == []
    assert _unplaced(plan) == {}  # both fit beside the running (3 GPU, 8 CPU, 16GiB) pod


def test_mig_is_never_counted_twice(tmp_path: Path) -> None:
    folder, plan, table = _planned("issue-mig-twice", tmp_path)
    assert judge(folder).findings == []
    assert _unplaced(plan) == {
        "whole8": ["k8s/a100: has no whole GPUs (all are cut into MIG slices)"]
    }
    # The table shows what each replica asks: one slice, not one A100; min = max reads `56×`.
    assert "56× 1 a100 1g.10gb, 1 cpu, 4GiB" in table


def test_mig_in_the_old_form_is_an_error_at_its_field(tmp_path: Path) -> None:
    folder = tmp_path / "old"
    shutil.copytree(DATA / "issue-mig-old-form", folder)
    got = CliRunner().invoke(cli, ["plan", str(folder)])
    assert got.exit_code == 1
    assert (
        "inventory.yaml:5:109: error: clusters[0].node_pools[0].mig: mig must say how" in got.output
    )
    assert "^^^" in got.output and "Traceback" not in got.output


def test_hpa_bounds_are_the_numbers_deployed(tmp_path: Path) -> None:
    folder, plan, table = _planned("issue-hpa-bounds", tmp_path)
    assert judge(folder).findings == []  # plan.json and the HPA manifests: the audit's numbers
    reps = {p["workload"]: p["resources"]["replicas"] for p in plan["placements"]}  # type: ignore[attr-defined]
    assert reps == {
        "ranker": {"min": 3, "max": 12},  # the workload's, within hpa(min = 2, max = 20)
        "no-replicas": {"min": 2, "max": 20},  # hpa's
        "one": {"min": 2, "max": 20},  # clamped on both sides
    }
    assert "3-12× 1 l4" in table and "2-20× 2 cpu" in table


def test_a1_percentage_quota_and_whole_nodes_on_mig_partition(tmp_path: Path) -> None:
    folder, plan, _ = _planned("quota-mig-whole", tmp_path)
    assert _unplaced(plan) == {}
    assert judge(folder).findings == []


def test_a2_percentage_quota_and_mig_slices(tmp_path: Path) -> None:
    folder, plan, _ = _planned("quota-mig-slices", tmp_path)
    assert list(_unplaced(plan)) == ["whole8"]
    assert judge(folder).findings == []


def test_the_audit_checker_fails_an_overfilled_node(tmp_path: Path) -> None:
    folder, plan, _ = _planned("issue-overstated", tmp_path)
    for p in plan["placements"]:  # type: ignore[attr-defined]
        for x in p["nodes"]:
            x["node"] = 0  # every pod on node 0: 2 × 30 + 2 × 18 CPUs on 48
    (folder / "out" / "plan.json").write_text(json.dumps(plan))
    found = judge(folder).findings
    assert any("does not fit on its assigned node k8s/h100[0]" in f for f in found), found


def test_the_audit_checker_finds_a_workload_left_out_that_fits(tmp_path: Path) -> None:
    folder, plan, _ = _planned("issue-understated", tmp_path)
    etl = next(p for p in plan["placements"] if p["workload"] == "etl")  # type: ignore[attr-defined]
    plan["placements"].remove(etl)  # type: ignore[attr-defined]
    plan["unplaced"].append({"workload": "etl", "reasons": ["made up"]})  # type: ignore[attr-defined]
    plan["targets"][0]["cpus"]["used"] -= 70  # type: ignore[index]
    plan["targets"][0]["memory_mib"]["used"] -= 150 * 1024  # type: ignore[index]
    (folder / "out" / "plan.json").write_text(json.dumps(plan))
    assert [f.split(" (")[0] for f in judge(folder).findings] == [
        "falsely unplaced: etl fits on k8s/gpu beside the plan as assigned"
    ]


def test_the_audit_checker_repacks_exactly(tmp_path: Path) -> None:
    """A workload that fits only when the plan's pods move: the exact stage finds it."""
    folder, plan, _ = _planned("issue-overstated", tmp_path)
    chat = next(p for p in plan["placements"] if p["workload"] == "chat-small")  # type: ignore[attr-defined]
    plan["placements"].remove(chat)  # type: ignore[attr-defined]
    plan["unplaced"].append({"workload": "chat-small", "reasons": ["made up"]})  # type: ignore[attr-defined]
    for p in plan["placements"]:  # type: ignore[attr-defined]
        for x in p["nodes"]:
            x["node"] = 0  # both embed pods on node 0 (36 of 48 CPUs): no room for a 30
    (folder / "out" / "plan.json").write_text(json.dumps(plan))
    found = judge(folder).findings
    assert any(
        "chat-small fits on k8s/h100 when the plan's work there is re-packed" in f for f in found
    ), found
    assert yaml.safe_load((folder / "router.yaml").read_text())["out"] == "out"


@pytest.mark.parametrize("family", audit.FAMILIES)
def test_audit_families_small(family: str, tmp_path: Path) -> None:
    """A seeded small platform per family, planned by `router plan` in a subprocess: no
    checker disagrees with the plan."""
    for seed in range(1):
        mine, theirs, _, folder = audit.run_one(family, "small", seed, tmp_path)
        assert mine.findings == [] and theirs == [], folder
        assert mine.targets > 0


def test_running_work_from_a_real_squeue_capture_is_packed_around(tmp_path: Path) -> None:
    """The live 22.05 capture's node runs 3 GPUs / 28 CPUs / 166GiB: what is left fits
    exactly, and one CPU more does not."""
    folder, plan, _ = _planned("capture-running", tmp_path)
    assert judge(folder).findings == []
    assert list(_unplaced(plan)) == ["one-cpu-more"]


def test_oversubscribed_node_from_a_real_capture_is_full_on_cpus(tmp_path: Path) -> None:
    folder, plan, _ = _planned("capture-oversub", tmp_path)
    assert judge(folder).findings == []
    (reasons,) = _unplaced(plan).values()
    assert all("holds 12 of its 8 CPUs" in r for r in reasons)
