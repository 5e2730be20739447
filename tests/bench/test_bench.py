"""`router bench` output: keys and types on the small size only (never a timed test)."""

from __future__ import annotations

import json

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


def test_bench_is_deterministic_across_workers() -> None:
    from router.bench.run import run

    a, b = run("S", 1, workers=1, emit=False), run("S", 1, workers=3, emit=False)
    assert (a["objective"], a["levels"]) == (b["objective"], b["levels"])
