"""pytest plugin (entry point `pytest11: router`): test a platform's policy in its own repo.

    from hypothesis import given, strategies as st
    from router.testing import workloads

    def test_big_training_goes_to_slurm(route):
        r = route({"kind": "training", "gpus": 16})
        assert r.status == "routed" and r.rule == "large_training"
        assert r.backends == {"slurm"}

    @given(w=workloads(kind="training", gpus=st.integers(8, 64)))
    def test_training_is_never_unrouted(route, w):
        assert route(w).status != "unrouted"

Fixtures (all session-scoped: the platform does not change during a run, and Hypothesis
accepts session fixtures in @given tests without a health-check suppression):

  route                  route(workload) -> Routing, on the default platform
  router_default_platform  the default platform (a router.Platform)
  router_plan            router.plan(default platform): the whole fleet placed
  router_platform        a factory: router_platform(path) -> router.Platform (cached)

The default platform is `--router-platform`, else the `router_platform` ini value, else the
rootdir: a folder with router.yaml.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

import router
from router.models import Workload
from router.testing.outcome import Routing, routing


class Route:
    """`route(workload) -> Routing` on one platform (its repr is short on purpose)."""

    def __init__(self, platform: router.Platform) -> None:
        self.platform = platform

    def __call__(self, workload: Mapping[str, Any] | Workload) -> Routing:
        return routing(self.platform, workload)

    def __repr__(self) -> str:
        return f"<route on {self.platform!r}>"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("router")
    group.addoption(
        "--router-platform",
        default=None,
        help="Platform folder (with router.yaml) for the `route` fixture.",
    )
    parser.addini("router_platform", "Platform folder for the `route` fixture.", default="")


@pytest.fixture(scope="session")
def router_platform() -> Callable[[str | Path], router.Platform]:
    """A factory: `router_platform(path)` loads the platform at `path` (cached per session)."""
    cache: dict[Path, router.Platform] = {}

    def load(path: str | Path) -> router.Platform:
        key = Path(path).resolve()
        if key not in cache:
            cache[key] = router.load(path)
        return cache[key]

    return load


@pytest.fixture(scope="session")
def router_default_platform(
    request: pytest.FixtureRequest, router_platform: Callable[[str | Path], router.Platform]
) -> router.Platform:
    config = request.config
    path = config.getoption("--router-platform")
    if not path and (ini := config.getini("router_platform")):
        path = str(config.rootpath / ini)  # an ini value is relative to the rootdir
    return router_platform(path or config.rootpath)


@pytest.fixture(scope="session")
def route(router_default_platform: router.Platform) -> Route:
    """`route(workload) -> Routing` on the default platform."""
    return Route(router_default_platform)


@pytest.fixture(scope="session")
def router_plan(router_default_platform: router.Platform) -> router.Plan:
    """The default platform planned: every workload placed at once."""
    return router.plan(router_default_platform)
