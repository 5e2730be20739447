"""pytest plugin (entry point `pytest11: router`): route workloads in a platform repo's tests.

    def test_big_training_goes_to_slurm(route):
        d = route({"name": "t", "kind": "training", "gpus": 16, "image": "x:1"})
        assert d.status == "routed" and d.rule.name == "large_training"
        assert {c.target.backend for c in d.candidates} == {"slurm"}

    def test_other_platform(router_platform):
        staging = router_platform("platforms/staging")
        assert staging.route({"name": "n", "kind": "notebook", "gpus": 4}).status == "denied"

`route` uses the platform at `--router-platform` (or the `router_platform` ini value, or the
rootdir): a folder with router.yaml.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from router.evaluate.evaluate import Decision, Evaluator
from router.language import ast
from router.models import Inventory, Workload


@dataclass
class Platform:
    """A loaded platform: its policy and inventory, and routing of any workload."""

    root: Path
    policy: ast.Policy
    inventory: Inventory
    workloads: list[Workload]
    _evaluator: Evaluator | None = field(default=None, repr=False)

    @classmethod
    def load(cls, path: str | Path) -> Platform:
        from router.config import load_project
        from router.plan.build import load_inputs

        inputs = load_inputs(load_project(path))
        return cls(Path(path), inputs.policy, inputs.inventory, inputs.workloads)

    def route(self, workload: dict[str, Any] | Workload) -> Decision:
        """The rule-level decision for `workload` (a dict as in workloads/*.yaml, or a model).
        A dict without a name or image gets placeholder ones."""
        if isinstance(workload, dict):
            workload = Workload.model_validate(
                {"name": "test", "image": "registry.example/test:1", **workload}
            )
        if self._evaluator is None:
            self._evaluator = Evaluator(self.policy, self.inventory)
        return self._evaluator.decide(workload)

    def analyze(self) -> list[Any]:
        """The `router check` findings of this platform's policy."""
        from router.assure.analysis import analyze

        return analyze(self.policy, self.inventory)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("router")
    group.addoption(
        "--router-platform",
        default=None,
        help="Platform folder (with router.yaml) for the `route` fixture.",
    )
    parser.addini("router_platform", "Platform folder for the `route` fixture.", default="")


@pytest.fixture(scope="session")
def router_platform() -> Callable[[str | Path], Platform]:
    """A factory: `router_platform(path)` loads the platform at `path` (cached per session)."""
    cache: dict[Path, Platform] = {}

    def load(path: str | Path) -> Platform:
        key = Path(path).resolve()
        if key not in cache:
            cache[key] = Platform.load(path)
        return cache[key]

    return load


@pytest.fixture(scope="session")
def router_default_platform(
    request: pytest.FixtureRequest, router_platform: Callable[[str | Path], Platform]
) -> Platform:
    config = request.config
    path = config.getoption("--router-platform") or config.getini("router_platform")
    return router_platform(path or config.rootpath)


@pytest.fixture
def route(router_default_platform: Platform) -> Callable[[dict[str, Any] | Workload], Decision]:
    """`route(workload_dict) -> Decision` on the default platform."""
    return router_default_platform.route
