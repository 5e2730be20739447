"""`router bench` output: keys and types on the small size only (never a timed test)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from router.cli.main import cli

KEYS = {
    "size": str,
    "workloads": int,
    "targets": int,
    "status": str,
    "seconds": dict,
    "peak_rss_mb": float,
    "objective": int,
    "cp_bound": int,
    "lp_bound": float,
    "greedy_objective": int,
    "first_match_objective": int,
    "first_match_overcommitted": int,
    "ratio_to_lp": float,
    "ratio_to_greedy": float,
    "decision_us_median": float,
    "moves_after_1pct_change": int,
    "min_moves_needed": int,
    "falsely_unplaced_together": int,
    "referee_seconds": float,
    "packcheck_seconds": float,
}


def test_bench_small_json() -> None:
    result = CliRunner().invoke(cli, ["bench", "--size", "S", "--seed", "3", "--churn", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    for key, kind in KEYS.items():
        assert isinstance(out[key], kind), key
    assert set(out["seconds"]) >= {"parse", "evaluate", "model", "solve", "emit", "total"}
    assert (out["size"], out["workloads"], out["targets"]) == ("S", 100, 10)
    assert out["status"] in ("OPTIMAL", "FEASIBLE")
    assert out["greedy_objective"] <= out["objective"] <= out["cp_bound"]
    assert out["objective"] <= out["lp_bound"] + 1e-6
    assert out["min_moves_needed"] <= out["moves_after_1pct_change"]
    # The independent checker and the plan's own node assignment agree: everything packs.
    assert (out["unpackable_targets"], out["undecided_targets"]) == (0, 0)
    assert out["assignment_errors"] == 0
    # Both witnesses, counted apart: the checker's search and the plan's own assignment
    # each show every target with work to pack.
    assert out["packed_by_search"] == out["packed_by_recorded_assignment"] > 0
    assert out["undecided_by_search"] == 0
    # Nothing left out for capacity that the plan could still take (router/plan/admits.py);
    # seed 3 leaves some out, so the referee had work to do.
    assert out["unplaced_checked"] > 0
    assert (out["falsely_unplaced"], out["unplaced_undecided"]) == (0, 0)
    assert out["falsely_unplaced_together"] == 0


def test_bench_is_deterministic_across_workers() -> None:
    from router.bench.run import run

    a, b = run("S", 1, workers=1, emit=False), run("S", 1, workers=3, emit=False)
    assert (a["objective"], a["levels"]) == (b["objective"], b["levels"])


def test_bench_project_plans_the_written_folder(tmp_path: Path) -> None:
    """--project writes the platform as YAML and runs the real `router plan` on it twice: the
    figures are a user's, and the second run over the first out/ writes the same bytes."""
    folder = tmp_path / "s"
    result = CliRunner().invoke(
        cli, ["bench", "--size", "S", "--project", "--keep", str(folder), "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["workloads"] == 100
    assert data["summary"].startswith("Plan: ") and data["summary"].endswith("of 100 workloads.")
    assert data["exit_code"] in (0, 3) and data["same_bytes"] is True
    assert data["plan_seconds"] > 0 and data["plan_peak_rss_mb"] > 0
    assert 0 < data["plan_system_seconds"] < data["plan_cpu_seconds"]
    assert 0 < data["replan_system_seconds"] < data["replan_cpu_seconds"]
    # the machine's speed beside each run: a fresh interpreter's fixed loop, timed
    assert data["plan_reference_seconds"] > 0 and data["replan_reference_seconds"] > 0
    plan = json.loads((folder / "out" / "plan.json").read_text())
    assert len(plan["placements"]) == int(data["summary"].split()[1])


def test_wide_platform_is_l_inventory_with_small_batch() -> None:
    from router.bench.generator import WIDE_WORKLOADS, generate

    wide, large = generate("wide", 1), generate("L", 1)
    assert wide.inventory == large.inventory and wide.policy == large.policy
    assert len(wide.workloads) == WIDE_WORKLOADS
    assert {w["kind"] for w in wide.workloads} == {"batch"}
    assert max(w["cpus"] for w in wide.workloads) == 4
