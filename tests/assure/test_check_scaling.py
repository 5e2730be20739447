"""The near-linear analysis gives the answers of the whole-policy model, witnesses included
(speed is measured by `router bench --check`, not here)."""

from __future__ import annotations

from router.assure.analysis import _Analysis
from router.assure.encode import satisfiable
from router.bench.check import _as_policy, policy_text, run_check
from router.bench.generator import generate
from router.language import check_policy, parse_text
from router.models import Inventory


def test_reachability_agrees_with_the_whole_model() -> None:
    policy = check_policy(_as_policy(parse_text(policy_text(60, seed=3), "b.route")))
    a = _Analysis(policy, Inventory.model_validate(generate("S", 3).inventory))
    full = a.full
    whole = [satisfiable(full.space, full.reach(i)) for i in range(len(policy.rules))]
    assert a.reachable == whole
    assert whole.count(False) == 1  # rule r49 repeats r0's condition


def test_generated_policy_findings_keep_their_witnesses() -> None:
    result = run_check(120, seed=1)
    found = result["findings"]
    assert found.pop("unknown-value") > 0  # kinds k0, k1, ... that no workload has
    assert found == {"unreachable-rule": 2}
    assert result["witnesses"] == 2


def test_wide_inventory_is_grouped_by_shape() -> None:
    result = run_check(6, partitions=3000)
    result["findings"].pop("unknown-value", None)
    assert result["targets"] == 3001 and result["findings"] == {}
