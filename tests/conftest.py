"""Suite-wide set-up: the parser's cache folder (router/language/cache.py and sources.py)
is one of the session's own, so the suite neither reads nor fills the user's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _own_cache_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ROUTER_CACHE_DIR", str(tmp_path_factory.mktemp("router-cache")))
        yield
