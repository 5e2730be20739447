"""Workloads validated once per class (router.models.classes): a file loads to the same workloads,
with the same sources, fields set and errors, as when every workload is validated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from router.errors import RouterError
from router.models import Workload, classes, load_workloads
from router.models.objects import workloads_from_data
from router.testing.strategies import workload_dicts
from tests.profiles import BOUNDED

NAMES = st.sampled_from(["a", "b", "c-1", "Bad_Name", "-x", "w" * 64, "a"])


def _outcome(path: Path, shortcut: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Each workload as dumped with its fields set, source and after spans; or the errors."""
    monkeypatch.setattr(classes, "SAME_CLASS_SHORTCUT", shortcut)
    try:
        found = load_workloads(path)
    except RouterError as e:
        return e.format()
    return [_seen(w) for w in found]


def _seen(w: Workload) -> Any:
    return (
        w.model_dump(),
        sorted(w.model_fields_set),
        w.source,
        [s.location() for s in w.after_spans],
        w.__pydantic_private__,
        w == Workload.model_validate(w.model_dump(exclude_unset=True)),
    )


@st.composite
def _files(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A few classes of workloads, each written several times under several names (valid,
    invalid, repeated, or one that the class's `after` holds)."""
    classes = draw(st.lists(workload_dicts(max_gpus=4), min_size=1, max_size=3))
    if draw(st.booleans()):
        classes[0]["after"] = [draw(NAMES)]
    items = []
    for _ in range(draw(st.integers(1, 8))):
        item = dict(draw(st.sampled_from(classes)))
        item["name"] = draw(NAMES)
        items.append(item)
    return items


@settings(BOUNDED, max_examples=60)
@given(items=_files())
def test_the_shortcut_loads_what_validating_each_workload_loads(
    items: list[dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("classes") / "w.yaml"
    path.write_text(yaml.safe_dump(items, sort_keys=False))
    with pytest.MonkeyPatch.context() as mp:
        assert _outcome(path, True, mp) == _outcome(path, False, mp)


def test_copies_are_workloads_of_their_own(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    text = "- {name: a, kind: batch, labels: {app: x}, after: [z]}\n- {name: z}\n"
    path.write_text(text + "- {name: b, kind: batch, labels: {app: x},\n   after: [z]}\n")
    a, z, b = load_workloads(path)
    assert (a.name, b.name, z.name) == ("a", "b", "z")
    assert a.source == (str(path), 1) and b.source == (str(path), 3)
    assert [s.location() for s in b.after_spans] == [f"{path}:4:12"]
    assert a.model_fields_set == b.model_fields_set == {"name", "kind", "labels", "after"}
    assert a != b
    assert b == Workload.model_validate({"name": "b", "labels": {"app": "x"}, "after": ["z"]})
    assert b.labels is a.labels  # shared, as the models are frozen
    with pytest.raises(ValidationError):
        b.name = "c"  # type: ignore[misc]


def test_a_name_the_class_runs_after_is_still_an_error(tmp_path: Path) -> None:
    item = {"name": "a", "after": ["b"]}
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump([item, {**item, "name": "b"}], sort_keys=False))
    with pytest.raises(RouterError) as e:
        load_workloads(path)
    assert "workload b cannot start after itself" in e.value.format()


def test_files_with_aliases_load_as_without_the_shortcut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "w.yaml"
    base = "- &base {name: a, kind: batch, labels: &l {app: x}}\n"
    path.write_text(base + "- {<<: *base, name: b}\n- {name: c, labels: *l}\n- *base\n")
    expected = _outcome(path, False, monkeypatch)
    assert "duplicate workload name" in expected
    assert _outcome(path, True, monkeypatch) == expected
    path.write_text(base + "- {<<: *base, name: b}\n- {name: c, labels: *l}\n")
    expected = _outcome(path, False, monkeypatch)
    assert [w[0]["name"] for w in expected] == ["a", "b", "c"]
    assert _outcome(path, True, monkeypatch) == expected


def _from_data(items: list[dict[str, Any]], shortcut: bool, mp: pytest.MonkeyPatch) -> Any:
    mp.setattr(classes, "SAME_CLASS_SHORTCUT", shortcut)
    try:
        return [_seen(w) for w in workloads_from_data(items, "w")]
    except RouterError as e:
        return e.format()


@settings(BOUNDED, max_examples=40)
@given(items=_files())
def test_the_shortcut_gives_what_validating_each_dict_gives(items: list[dict[str, Any]]) -> None:
    with pytest.MonkeyPatch.context() as mp:
        assert _from_data(items, True, mp) == _from_data(items, False, mp)


def test_python_values_that_repr_could_confuse(monkeypatch: pytest.MonkeyPatch) -> None:
    base = {"name": "a", "command": ["x", "y"], "gpus": 1, "preemptible": False}
    items = [
        base,
        {**base, "name": "b", "command": ("x", "y")},  # a tuple: not plain, validated
        {**base, "name": "c", "gpus": True},  # True is not 1 here
        {**base, "name": "d", "preemptible": 0},
    ]
    expected = _from_data(items, False, monkeypatch)
    assert _from_data(items, True, monkeypatch) == expected
    assert "gpus" in str(expected)
