"""Suite-wide set-up: the parser's cache folder (router/language/cache.py and sources.py)
is one of the session's own, so the suite neither reads nor fills the user's; under
pytest-xdist (tests/run.sh runs two workers) every test of a live Slurm cluster is in one
group, so one worker starts the session's clusters (one slurmctld per host) and runs them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

# The session fixtures that start live Slurm daemons (tests/slurm/conftest.py).
SLURM_FIXTURES = frozenset({"slurm_cluster", "slurm_cluster_factory", "multinode_cluster"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        names = getattr(item, "fixturenames", ())
        if item.nodeid.startswith("tests/slurm/") or SLURM_FIXTURES.intersection(names):
            item.add_marker(pytest.mark.xdist_group("slurm"))


@pytest.fixture(autouse=True, scope="session")
def _own_cache_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ROUTER_CACHE_DIR", str(tmp_path_factory.mktemp("router-cache")))
        yield
