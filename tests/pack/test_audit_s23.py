"""Stop 23's audit families (tests/pack/audit_s23.py: wide, manyparts, migper, justfit)
planned by `router plan` and judged by the audit's checker, router's referees and the audit's
reading of the plan's capacity reasons (tests/pack/audit_reasons.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.pack import audit
from tests.pack.audit_reasons import check


@pytest.mark.parametrize(
    ("family", "seed"), [("wide", 2), ("manyparts", 3), ("migper", 3), ("justfit", 0)]
)
def test_s23_family_plans_have_no_findings(family: str, seed: int, tmp_path: Path) -> None:
    mine, theirs, undecided, folder = audit.run_one(family, "small", seed, tmp_path)
    assert mine.findings == [] and theirs == [], folder
    assert mine.undecided == [] and undecided == []
    assert mine.placed > 0 and mine.unplaced > 0
    honest = check(Path(folder))
    assert honest.findings == [] and honest.unparsed == [], folder
    assert honest.checked > 0


def _planned(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    audit.run_one("manyparts", "small", 3, tmp_path, referee_too=False, packcheck_too=False)
    folder = tmp_path / "manyparts-small-3"
    return folder, json.loads((folder / "out/plan.json").read_text())


def test_reasons_checker_finds_a_wrong_most_free(tmp_path: Path) -> None:
    """The honesty check reads each figure: one number off in plan.json is a finding."""
    folder, plan = _planned(tmp_path)
    text = json.dumps(plan)
    assert "the most memory free is 508GiB" in text
    (folder / "out/plan.json").write_text(
        text.replace("memory free is 508GiB", "memory free is 507GiB")
    )
    found = check(folder).findings
    assert found and all("the most memory free is 507GiB, it is 508GiB" in f for f in found), found


def test_reasons_checker_finds_a_wrong_node_count_and_sharing(tmp_path: Path) -> None:
    folder, plan = _planned(tmp_path)
    text = json.dumps(plan).replace(
        "(shared with hpc/g1, hpc/g2, hpc/g3, ", "(shared with hpc/g1, "
    )
    (folder / "out/plan.json").write_text(
        text.replace("none of its 6 nodes", "none of its 5 nodes")
    )
    found = check(folder).findings
    assert any("says 5 nodes, hpc/g0 has 6" in f for f in found), found
    assert any("says shared with [hpc/g1, hpc/preempt, hpc/whole]" in f for f in found), found
