"""The pydantic model of plan.json (router/models/plan.py) reads every document router
writes, back to the same JSON, and its JSON Schema accepts them."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError

import router
from router.bench.generator import generate
from router.models.plan import PlanDocument, plan_json_schema
from tests.helpers import EXAMPLE, make_project
from tests.k8s import hardened
from tests.k8s.test_plan_manifests import (
    MIG_INVENTORY,
    MIG_POLICY,
    OPERATORS_INVENTORY,
    OPERATORS_POLICY,
    mig_services,
    operator_workloads,
)


@pytest.fixture(scope="module")
def plans() -> list[router.Plan]:
    platform = router.load(EXAMPLE)
    first = router.plan(platform)
    moved = router.Platform.from_objects(
        policy={f.name: f.read_text() for f in (EXAMPLE / "policies").glob("*.route")},
        inventory=platform.inventory,
        workloads=platform.workloads[5:],
    )
    second = router.plan(moved, previous=first)  # with `preempted` and `diff`
    return [first, second]


@pytest.fixture(scope="module")
def documents(plans: list[router.Plan]) -> list[dict[str, Any]]:
    return [p.document() for p in plans]


@pytest.fixture(scope="module")
def more_plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, router.Plan]:
    """Plans of the tests' other platforms, which between them write every optional field."""
    tmp = tmp_path_factory.mktemp("platforms")
    operators = make_project(
        tmp / "operators", operator_workloads(), OPERATORS_POLICY, OPERATORS_INVENTORY
    )
    mig = make_project(tmp / "mig", mig_services(3, 2), MIG_POLICY, MIG_INVENTORY)
    bench = generate("S", 0)
    batch = {"kind": "batch", "cpus": 1, "memory": "256MiB", "duration": "5min", "command": "x"}
    slurm = make_project(
        tmp / "slurm",
        [
            {**batch, "name": "sweep", "array": {"count": 5, "parallel": 2}},
            {**batch, "name": "prep"},
            {**batch, "name": "child", "after": ["prep", "never"]},
            {**batch, "name": "never", "cpus": 10_000},  # not placed: `after` has no backend
        ],
        "rule all:\n  route slurm\n",
        {
            "clusters": [
                {
                    "name": "mn",
                    "backend": "slurm",
                    "partitions": [
                        {
                            "name": "batch",
                            "nodes": 2,
                            "cpus_per_node": 8,
                            "memory_per_node": "16GiB",
                            "node_names": ["n1", "n2"],
                        }
                    ],
                }
            ]
        },
    )
    platforms = {
        "slurm": router.load(slurm),
        "operators": router.load(operators),
        "mig": router.load(mig),
        "hardened": router.load(hardened.project(tmp / "hardened")),
        "bench S": router.Platform.from_objects(
            policy=bench.policy, inventory=bench.inventory, workloads=bench.workloads
        ),
    }
    return {name: router.plan(p) for name, p in platforms.items()}


@pytest.fixture(scope="module")
def more_documents(more_plans: dict[str, router.Plan]) -> dict[str, dict[str, Any]]:
    return {name: p.document() for name, p in more_plans.items()}


def test_every_platforms_document_validates_strictly(
    documents: list[dict[str, Any]], more_documents: dict[str, dict[str, Any]]
) -> None:
    every = [*documents, *more_documents.values()]
    for doc in every:
        assert PlanDocument.model_validate(doc).to_json() == doc
    # the optional fields the model declares are written by at least one of these plans, so
    # the strict model is checked against real values of each
    placements = [p for doc in every for p in doc["placements"]]
    after = [a for p in placements for a in p.get("after", [])]
    assert {a["supported"] for a in after} == {True, False}
    assert any("backend" not in a for a in after)  # a parent that was not placed
    assert any("array_parallel" in p["resources"] for p in placements)
    assert any("replicas" in p["resources"] for p in placements)
    assert any("mig" in p["resources"] for p in placements)
    assert any("name" in n for p in placements for n in p["nodes"])
    assert any("scale_out" in doc for doc in every)


def test_a_field_the_model_does_not_know_is_refused() -> None:
    doc = router.plan(router.load(EXAMPLE)).document()
    doc["placements"][0]["resources"]["gpu_count"] = 1
    with pytest.raises(ValidationError, match=r"placements\.0\.resources\.gpu_count"):
        PlanDocument.model_validate(doc)
    doc = router.plan(router.load(EXAMPLE)).document()
    doc["wall_seconds"] = 0.4
    with pytest.raises(ValidationError, match="wall_seconds"):
        PlanDocument.model_validate(doc)


def test_a_plan_from_before_node_assignments_reads_as_previous(
    documents: list[dict[str, Any]],
) -> None:
    """plan.json written before capacity was decided node by node has no `nodes`: it is still
    a previous plan (GitOps repos keep their last plan.json), and planning against it works."""
    old = json.loads(json.dumps(documents[0]))
    for p in old["placements"]:
        del p["nodes"]
    assert PlanDocument.model_validate(old).placements[0].nodes == []
    again = router.plan(router.load(EXAMPLE), previous=old)
    assert again.document()["placements"] == documents[0]["placements"]


def test_every_document_reads_and_dumps_back_the_same(documents: list[dict[str, Any]]) -> None:
    for doc in documents:
        model = PlanDocument.model_validate(doc)
        assert model.to_json() == doc
    second = PlanDocument.model_validate(documents[1])
    assert second.diff is not None and second.preempted is not None
    assert second.summary.workloads == len(documents[1]["placements"]) + sum(
        len(documents[1][k]) for k in ("denied", "unrouted", "unplaced")
    )


def test_plan_json_is_the_documents_own_text_which_the_model_would_write_too(
    plans: list[router.Plan], more_plans: dict[str, router.Plan]
) -> None:
    """dumps checks a document with the model and writes the document itself: the model
    must change nothing it accepts. Checked on the documents as plan_document makes them,
    before any text (read back, an int where the model holds a float would be a float)."""
    from router.plan.document import _round, indented, plan_document, with_diff

    for plan in [*plans, *more_plans.values()]:
        made = plan_document(plan.built)
        made = with_diff(made, plan.diff())
        model = PlanDocument.model_validate(made, strict=True)
        assert indented(model.to_json()) == indented(made) == plan.json()
    assert repr(_round(3, 3)) == "3.0"  # as the model writes an int lp_bound


def test_the_models_schema_accepts_the_documents(
    documents: list[dict[str, Any]], more_documents: dict[str, dict[str, Any]]
) -> None:
    schema = plan_json_schema()
    for doc in [*documents, *more_documents.values()]:
        jsonschema.validate(doc, schema)
    doc = dict(documents[0], extra_key=1)
    with pytest.raises(jsonschema.ValidationError, match="extra_key"):
        jsonschema.validate(doc, schema)


def test_a_broken_document_is_refused_with_the_field() -> None:
    doc = router.plan(router.load(EXAMPLE)).document()
    doc["placements"][0]["rank"] = "first"
    with pytest.raises(ValidationError, match=r"placements\.0\.rank"):
        PlanDocument.model_validate(doc)
    doc = router.plan(router.load(EXAMPLE)).document()
    doc["format_version"] = "2"
    with pytest.raises(ValidationError, match="format_version"):
        PlanDocument.model_validate(doc)


def test_plan_json_is_written_through_the_model() -> None:
    from router.plan.document import dumps

    plan = router.plan(router.load(EXAMPLE))
    assert dumps(plan.document()) == plan.json()
    doc = plan.document()
    doc["placements"][0]["gpu_count"] = 1  # a field plan/document.py starts writing
    with pytest.raises(ValidationError, match="gpu_count"):
        dumps(doc)
