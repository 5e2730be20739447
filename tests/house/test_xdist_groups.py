"""tests/run.sh runs two pytest-xdist workers: the tests of a live Slurm cluster must all be
in one group (tests/conftest.py), else two workers each start the session's slurmctld."""

from __future__ import annotations

from typing import Any, cast

import pytest

from tests.conftest import pytest_collection_modifyitems


class _Item:
    """What the hook reads of a collected test, and the markers it adds."""

    def __init__(self, nodeid: str, fixturenames: list[str]) -> None:
        self.nodeid = nodeid
        self.fixturenames = fixturenames
        self.marks: list[Any] = []

    def add_marker(self, mark: Any) -> None:
        self.marks.append(mark)


def test_the_live_slurm_tests_and_only_they_share_one_xdist_group(
    pytestconfig: pytest.Config,
) -> None:
    items = [
        _Item("tests/slurm/test_harness.py::test_parse", ["tmp_path"]),
        _Item("tests/pack/test_running_live.py::test_live", ["slurm_cluster", "tmp_path"]),
        _Item("tests/x/test_y.py::test_two_nodes", ["multinode_cluster"]),
        _Item("tests/x/test_y.py::test_factory", ["slurm_cluster_factory"]),
        _Item("tests/plan/test_quota_per.py::test_slurm_like_name", ["tmp_path"]),
    ]
    pytest_collection_modifyitems(pytestconfig, cast(list[pytest.Item], items))
    groups = [[(m.name, m.args) for m in i.marks] for i in items]
    assert groups == [[("xdist_group", ("slurm",))]] * 4 + [[]]
