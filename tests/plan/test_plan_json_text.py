"""plan.json's text: router.plan.document.indented writes exactly what
json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) writes, through pydantic-core's
serializer when it can (the layout, string escapes and float text checked here over generated
documents), and through json.dumps itself for what it cannot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pydantic_core
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from router.plan import document
from router.plan.document import indented
from tests.profiles import BOUNDED

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ml-platform"


def reference(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# Control characters, quotes, backslashes, unicode (line separators, BOM, astral), and text.
texts = st.text(
    st.sampled_from(["\x00", "\x1f", "\x7f", "\b", "\f", "\n", "\r", "\t", '"', "\\", "/", "é",
                     "\u2028", "\ufeff", "😀", "a", " "]) | st.characters(),
    max_size=10,
)  # fmt: skip
floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [0.0, -0.0, 1e16, 1e-7, 0.1, 1e22, 123456789.125, 5e-324, 1.7976931348623157e308, 0.0001]
)
scalars = (
    texts
    | st.integers(-(2**63), 2**63 - 1)
    | st.sampled_from([2**63, 2**64])
    | floats
    | st.booleans()
    | st.none()
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=20,
)


@settings(BOUNDED, max_examples=100, suppress_health_check=list(HealthCheck))
@given(st.dictionaries(texts, values, max_size=6))
def test_indented_writes_what_json_dumps_writes(doc: dict[str, Any]) -> None:
    assert indented(doc) == reference(doc)


plain = st.recursive(
    st.text(max_size=8) | st.integers(-(2**63), 2**63 - 1) | st.booleans() | st.none()
    | st.sampled_from([0.5, 1e16, 1e22, 0.0001, 123.25, -0.0, 5e-324]),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)  # fmt: skip


@settings(BOUNDED, max_examples=100, suppress_health_check=list(HealthCheck))
@given(st.dictionaries(st.text(max_size=8), plain, max_size=6))
def test_documents_of_64_bit_ints_and_floats_of_the_same_text_take_the_fast_path(
    doc: dict[str, Any],
) -> None:
    assert document._fast(doc) == reference(doc)


def test_plan_documents_take_the_fast_path() -> None:
    import router

    plan = router.plan(router.Platform.load(EXAMPLE))
    doc = plan.document()
    assert document._fast(doc) == reference(doc) == plan.json()
    # Its keys below the top level are made in sorted order (placements' resources and
    # options, targets' rows), so _fast writes it without reading its text back.
    compact = json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert pydantic_core.to_json({k: doc[k] for k in sorted(doc)}).decode() == compact
    assert any("gpu_type" in p["resources"] for p in doc["placements"])
    assert any(p["options"] for p in doc["placements"])


def test_what_pydantic_core_writes_otherwise_goes_to_json_dumps() -> None:
    doc = {"b": [1, {"z": "é\n\x00", "a": None}], "a": {"y": 0.5, "x": [], "w": {}}, "c": True}
    assert document._fast(doc) == reference(doc)
    for odd in ({"gap": 1e-05}, {"big": -(2**70)}, {"nan": float("nan"), "inf": float("-inf")}):
        # 1e-05 reads back as 0.00001 in pydantic-core's text; the others are compared too
        fast = document._fast(odd)
        assert fast is None or fast == reference(odd)
        assert indented(odd) == reference(odd)
    assert document._fast({"gap": 1e-05}) is None


@settings(BOUNDED, max_examples=100, suppress_health_check=list(HealthCheck))
@given(st.dictionaries(texts, values, max_size=6), st.lists(values, max_size=4))
def test_a_list_written_alone_and_spliced_in_is_the_text_of_the_whole(
    doc: dict[str, Any], entries: list[Any]
) -> None:
    whole = {**doc, "unplaced": entries}
    rest = indented({**whole, "unplaced": []})
    assert document.spliced(rest, "unplaced", indented(entries)) == reference(whole)


@settings(BOUNDED, max_examples=100, suppress_health_check=list(HealthCheck))
@given(st.dictionaries(texts, values, max_size=6))
def test_a_list_spliced_out_leaves_the_text_of_the_document_without_it(
    doc: dict[str, Any],
) -> None:
    rest = indented({**doc, "scale_out": []})
    without = {k: v for k, v in doc.items() if k != "scale_out"}
    assert document.spliced(rest, "scale_out", None) == reference(without)


def test_splicing_needs_one_top_level_empty_list() -> None:
    import pytest

    docs: list[dict[str, Any]] = [{"a": 1}, {"unplaced": [1]}, {"x": {"unplaced": []}}]
    for doc in docs:
        with pytest.raises(ValueError, match="no single top-level 'unplaced'"):
            document.spliced(indented(doc), "unplaced", "[]\n")


def test_resources_are_written_in_plan_json_order() -> None:
    from router.models.placement import Resources

    base = Resources(nodes=1, gpus_per_node=1, cpus_per_node=4, memory_per_node=1024,
                     time=60, exclusive=False, whole_nodes=0)  # fmt: skip
    everything = Resources(nodes=2, gpus_per_node=0, cpus_per_node=4, memory_per_node=1024,
                           time=60, exclusive=False, whole_nodes=0, replicas_min=1,
                           replicas_max=3, gpu_type="a100", mig="1g.10gb", array_parallel=2,
                           mpi_launcher=True)  # fmt: skip
    for r in (base, everything):
        out = r.to_json()
        assert list(out) == sorted(out)
    assert {"array_parallel", "gpu_type", "mig", "mpi_launcher", "replicas"} <= set(
        everything.to_json()
    )
    assert list(everything.to_json()["replicas"]) == ["max", "min"]
