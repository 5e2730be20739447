"""docs/cookbook.md: each recipe plans as the page says, and the recipes the issue asks for
are there (Slurm for training + Kubernetes for serving, per-team quotas, MIG, Kueue, KServe,
multi-node jobs)."""

from __future__ import annotations

import pytest

from router.language import ast
from tests.docs.pages import DOCS, Block, check_example, load, route_examples

PAGE = DOCS / "cookbook.md"
EXAMPLES = route_examples(PAGE)


@pytest.mark.parametrize("block", EXAMPLES, ids=[f"line{b.line}" for b in EXAMPLES])
def test_recipe_plans_as_the_page_says(block: Block) -> None:
    assert "#>" in block.text
    check_example(PAGE, block)


def test_the_recipes_platform_teams_need_are_there() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for heading in (
        "Slurm for training, Kubernetes for serving",
        "Per-team quotas",
        "MIG slices",
        "Kueue",
        "KServe",
        "Multi-node jobs",
    ):
        assert f"## {heading}" in text
    options = {
        (o.name, getattr(o.value, "value", None))
        for b in EXAMPLES
        for o in ast.find(load(PAGE, b).policy, ast.Option)
    }
    assert {
        ("mig", "1g.10gb"),
        ("serving", "kserve"),
        ("operator", "pytorchjob"),
        ("queue", "research-training"),
        ("mpi", "pmix"),
    } <= options
