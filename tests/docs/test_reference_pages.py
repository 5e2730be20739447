"""docs/reference/*.md are generated from the models (router/models/reference.py): the pages
in the repository are what it writes now, and every field has words on its page."""

from __future__ import annotations

from router.models import reference
from tests.docs.pages import DOCS


def test_checked_in_pages_are_up_to_date() -> None:
    for kind in reference.PAGES:
        page = DOCS / "reference" / f"{kind}.md"
        assert page.read_text(encoding="utf-8") == reference.render(kind), (
            f"{page} is out of date: run `python -m router.models.reference`"
        )
    assert reference.main(["--check"]) == 0


def test_every_field_of_every_model_is_described() -> None:
    for _, models in reference.PAGES.values():
        for model in models:
            for name in model.model_fields:
                assert reference.description(model, name), f"{model.__name__}.{name}"


def test_notes_name_only_fields_that_exist() -> None:
    fields = {
        (cls.__name__, name)
        for _, models in reference.PAGES.values()
        for model in models
        for cls in model.__mro__
        if hasattr(cls, "model_fields")
        for name in getattr(cls, "model_fields", {})
    }
    assert set(reference.NOTES) - fields == set()


def test_pages_list_each_field_with_its_default() -> None:
    text = (DOCS / "reference" / "workload.md").read_text(encoding="utf-8")
    assert "| `gpus` | whole number | `0` |" in text
    assert "| `name` | string | **required** |" in text
    assert "`low` \\| `normal` \\| `high` \\| `critical`" in text
