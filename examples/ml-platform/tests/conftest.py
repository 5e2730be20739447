"""This platform's tests run with router's pytest plugin (installed with router).

A platform repo of its own names its platform in its pytest ini instead:
    [tool.pytest.ini_options]
    router_platform = "."
This example lives inside router's repository, whose ini is router's, so it says it here.
"""

from collections.abc import Callable
from pathlib import Path

import pytest

import router


@pytest.fixture(scope="session")
def router_default_platform(
    router_platform: Callable[[str | Path], router.Platform],
) -> router.Platform:
    return router_platform(Path(__file__).resolve().parents[1])
