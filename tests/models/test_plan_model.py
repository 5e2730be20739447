"""The pydantic model of plan.json (router/models/plan.py) reads every document router
writes, back to the same JSON, and its JSON Schema accepts them."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError

import router
from router.models.plan import PlanDocument, plan_json_schema
from tests.helpers import EXAMPLE


@pytest.fixture(scope="module")
def documents() -> list[dict[str, Any]]:
    platform = router.load(EXAMPLE)
    first = router.plan(platform)
    moved = router.Platform.from_objects(
        policy={f.name: f.read_text() for f in (EXAMPLE / "policies").glob("*.route")},
        inventory=platform.inventory,
        workloads=platform.workloads[5:],
    )
    second = router.plan(moved, previous=first)  # with `preempted` and `diff`
    return [first.document(), second.document()]


def test_every_document_reads_and_dumps_back_the_same(documents: list[dict[str, Any]]) -> None:
    for doc in documents:
        model = PlanDocument.model_validate(doc)
        assert model.to_json() == doc
    second = PlanDocument.model_validate(documents[1])
    assert second.diff is not None and second.preempted is not None
    assert second.summary.workloads == len(documents[1]["placements"]) + sum(
        len(documents[1][k]) for k in ("denied", "unrouted", "unplaced")
    )


def test_the_models_schema_accepts_the_documents(documents: list[dict[str, Any]]) -> None:
    schema = plan_json_schema()
    for doc in documents:
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
