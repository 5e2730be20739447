"""Stop 22's audit families (tests/pack/audit_s22.py: taints, slurmx, migspread) planned by
`router plan` and judged by the audit's checker and router's referees, and the findings
A17-A21, each fixed in stop 22 and kept as a plain test (tests/pack/data/audit/README.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pack import audit
from tests.pack.audit_optimum import optimum

DATA = Path(__file__).parent / "data" / "audit"


@pytest.mark.parametrize(("family", "seed"), [("taints", 2), ("slurmx", 1), ("migspread", 0)])
def test_s22_family_plans_have_no_findings(family: str, seed: int, tmp_path: Path) -> None:
    mine, theirs, undecided, folder = audit.run_one(family, "small", seed, tmp_path)
    assert mine.findings == [] and theirs == [], folder
    assert mine.undecided == [] and undecided == []
    assert mine.placed > 0 and mine.unplaced > 0


def test_taints_keep_work_off_pools_it_does_not_tolerate(tmp_path: Path) -> None:
    """The audit's own reading of the taints (audit.json `targets`) is one the plan keeps:
    no placement on a pool whose NoSchedule/NoExecute taints the rule does not tolerate."""
    for seed in (0, 4):
        audit.run_one("taints", "small", seed, tmp_path, referee_too=False)
        folder = tmp_path / f"taints-small-{seed}"
        meta = json.loads((folder / "audit.json").read_text())
        plan = json.loads((folder / "out/plan.json").read_text())
        assert plan["placements"]
        for pl in plan["placements"]:
            assert pl["target_id"] in meta[pl["workload"]]["targets"], pl["workload"]


def _plan(name: str, tmp_path: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
    folder = tmp_path / name
    shutil.copytree(DATA / name, folder)
    done = subprocess.run(
        [sys.executable, "-m", "router", "plan", str(folder), "-q", "--workers", "1"],
        capture_output=True,
        text=True,
        check=False,
    )
    return folder, done


def test_running_mig_slices_of_the_nodes_profile_are_held(tmp_path: Path) -> None:
    """running-mig-typo spelled right: the pod holds all 7 1g.10gb slices, chat waits."""
    folder = tmp_path / "src"
    shutil.copytree(DATA / "running-mig-typo", folder)
    run = folder / "running.yaml"
    run.write_text(run.read_text().replace("1g.10gbb", "1g.10gb"))
    done = subprocess.run(
        [sys.executable, "-m", "router", "plan", str(folder), "-q", "--workers", "1"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    plan = json.loads((folder / "out/plan.json").read_text())
    assert [u["workload"] for u in plan["unplaced"]] == ["chat"]


def test_a17_running_mig_profile_typo_is_an_error(tmp_path: Path) -> None:
    """A running pod holding `1g.10gbb` (a typo of the node's 1g.10gb): router dropped what it
    held and placed 7 pods on those slices; now it is no profile name, refused at the key
    (a real profile the node lacks: tests/models/test_running_positions.py)."""
    _, done = _plan("running-mig-typo", tmp_path)
    assert done.returncode == 1, done.stdout
    assert "running.yaml:8:5" in done.stderr, done.stderr
    assert 'must be a MIG profile such as "1g.10gb", got "1g.10gbb"' in done.stderr


def test_a18_big_gpu_nodes_leave_out_no_job_that_fits() -> None:
    """big-gpu-n60: 60 × (8 h100, 96 CPUs, 1 TiB), 279 jobs of 24 shapes (the `big` family,
    medium seed 3, cut to 60 nodes): the plan is FEASIBLE with 12 unplaced, and each of the
    first two fits beside all placed work when that is re-packed (router's referee; its
    witness checked node by node by the audit's arithmetic, FINDINGS.md A18)."""
    import router
    from router.plan.admits import referee

    built = router.plan(router.load(DATA / "big-gpu-n60"), workers=1, share_candidates=True).built
    i = built.inputs
    placed = {p.workload.name for p in built.placements}
    left = [w for w in i.workloads if w.name not in placed][:2]
    some = [w for w in i.workloads if w.name in placed] + left
    judged = referee(i.policy, i.inventory, some, built.placements, i.running)
    assert [a.workload for a in judged.admitted] == [], judged.admitted


def test_a20_mig_cut_of_more_slices_than_a_gpu_has_is_an_error(tmp_path: Path) -> None:
    """`1g.10gb: 8` per GPU (a typo of 7): no MIG GPU has more than 7 compute slices, so
    8 one-slice instances per GPU is no cut at all; router plans 7 pods on it."""
    _, done = _plan("inventory-mig-typo", tmp_path)
    assert done.returncode == 1, done.stdout
    assert "inventory.yaml:14:18" in done.stderr, done.stderr


def test_node_set_typo_is_an_error_with_a_suggestion(tmp_path: Path) -> None:
    _, done = _plan("nodeset-typo", tmp_path)
    assert done.returncode == 1
    assert 'no node set "gpsu"' in done.stderr and 'did you mean "gpus"?' in done.stderr


def test_a21_node_set_typo_points_at_the_name(tmp_path: Path) -> None:
    """`- gpsu` under gpu-long's node_sets (line 17): the error's position and caret are at
    the `node_sets:` key (16:5), a line above the name to fix."""
    _, done = _plan("nodeset-typo", tmp_path)
    assert "inventory.yaml:17:7" in done.stderr, done.stderr


def test_a19_shared_node_set_small_plan_reaches_the_optimum(tmp_path: Path) -> None:
    """slurmx-s54 (the slurmx family, small seed 54, shrunk): 6 GPU nodes under gpu,
    gpu-long, whole (OverSubscribe=EXCLUSIVE) and preempt (over both sets), running work by
    name, 10 jobs. The audit places j23 (628) instead of c21 (12): a15 to gb[1] (preempt),
    a0 and j23 beside a20 on ga[0]; router stops FEASIBLE 5861 (bound 6497) at 6477."""
    folder, done = _plan("slurmx-s54", tmp_path)
    assert done.returncode in (0, 3), done.stderr
    level = json.loads((folder / "out/plan.json").read_text())["solver"]["levels"][0]
    best, _ = optimum(folder)
    assert best is not None and level["value"] >= best - 5, (level, best)


def test_slurmx_s54_plan_is_never_above_the_optimum_nor_its_bound_below(tmp_path: Path) -> None:
    folder, _ = _plan("slurmx-s54", tmp_path)
    level = json.loads((folder / "out/plan.json").read_text())["solver"]["levels"][0]
    best, status = optimum(folder)
    assert status == "OPTIMAL" and best is not None
    assert level["value"] <= best + 5 and level["bound"] >= best - 5, (level, best)
