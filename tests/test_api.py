"""router's Python API (router/api.py) beyond the docs/api.md examples: inputs, previous
plans from files, errors, and parts read only when used."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import router
from router.errors import LoadError, PlanError
from tests.helpers import INVENTORY, job, make_project

POLICY = 'rule train: when kind == "training" route slurm\nrule rest: route any\n'


def _platform(workloads: list[dict[str, Any]]) -> router.Platform:
    return router.Platform.from_objects(policy=POLICY, inventory=INVENTORY, workloads=workloads)


def test_in_memory_inputs_are_hashed_and_a_change_changes_the_hash() -> None:
    one = router.plan(_platform([job("a", gpus=8)])).document()
    two = router.plan(_platform([job("a", gpus=4)])).document()
    assert sorted(one["inputs"]) == ["inventory.yaml", "policy.route", "workloads.yaml"]
    assert one["inputs"]["policy.route"] == two["inputs"]["policy.route"]
    assert one["inputs"]["workloads.yaml"] != two["inputs"]["workloads.yaml"]
    assert one["placements"][0]["rule_source"] == "policy.route:1"


def test_previous_from_a_plan_json_written_by_write(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", [job("a", gpus=8), job("b", gpus=1)])
    platform = router.load(root)
    first = router.plan(platform)
    written = first.write()
    assert written == sorted(first.files()) and "plan.json" in written
    assert (root / "out" / "plan.json").read_text() == first.json()
    again = router.plan(platform, previous=root / "out" / "plan.json")
    diff = again.diff()
    assert diff is not None and diff["against"] == "file:plan.json"
    assert diff["changes"] == [] and not diff["changed"]
    assert again.diff(first) == {**diff, "against": "plan"}


def test_write_never_overwrites_the_inputs(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", [job("a", gpus=8)])
    plan = router.plan(router.load(root))
    with pytest.raises(PlanError):
        plan.write(root / "policies")
    assert (root / "policies").is_dir()


def test_errors_name_what_was_wrong() -> None:
    plan = router.plan(_platform([job("a")]))
    with pytest.raises(PlanError, match="unknown format 'yaml'"):
        plan.render("yaml")
    with pytest.raises(PlanError, match="git:REF needs a platform loaded from a folder"):
        router.plan(_platform([job("a")]), previous="git:main")
    with pytest.raises(PlanError, match="no workload named 'b'") as caught:
        router.explain(_platform([job("a"), job("bb")]), "b")
    assert caught.value.hint == 'did you mean "bb"?'


def test_parts_are_read_when_used(tmp_path: Path) -> None:
    """`router test` reads the policy and the inventory only: broken workloads do not stop
    it, and planning then says which file is broken."""
    root = make_project(tmp_path / "p", [job("a")])
    (root / "workloads" / "broken.yaml").write_text("- {name: x, gpus: eight}\n")
    platform = router.load(root)
    assert router.test(platform).ok
    with pytest.raises(LoadError) as caught:
        router.plan(platform)
    assert "broken.yaml" in str(caught.value) and "gpus" in str(caught.value)


def test_running_work_in_memory_is_validated_and_hashed() -> None:
    running = {"running": [{"cluster": "hpc", "node_set": "h100", "node": 0, "gpus": 4}]}
    p = router.Platform.from_objects(
        policy=POLICY, inventory=INVENTORY, workloads=[job("a")], running=running
    )
    assert p.running is not None and p.running.running[0].gpus == 4
    assert "running.yaml" in router.plan(p).document()["inputs"]
    with pytest.raises(LoadError, match=r"running\[0\]\.gpus"):
        router.Platform.from_objects(
            policy=POLICY,
            inventory=INVENTORY,
            running={"running": [{"cluster": "hpc", "node": "n1", "gpus": "four"}]},
        )


def test_document_is_a_copy() -> None:
    plan = router.plan(_platform([job("a")]))
    doc = plan.document()
    doc["placements"].clear()
    assert plan.document()["placements"]
    assert json.loads(plan.json()) == plan.document()
