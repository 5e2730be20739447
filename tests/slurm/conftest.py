"""Fixtures that give tests a real Slurm cluster on this host (see harness.py).

- `slurm_cluster` (session): the ROUTERTEST_PARTITIONS layout, started once per session.
- `multinode_cluster` (session): two nodes in network namespaces (multinode.py).
- `slurm_cluster_factory` (function): `factory(partitions, run_node_partition=None)` restarts
  that same cluster with another layout (only one cluster runs per host) and puts the default
  layout back after the test.

Without Slurm (or without root) the fixtures skip, except under CI (env CI set), where they fail:
CI must have run .ci/slurm-setup.sh. Tests outside tests/slurm can use these fixtures by
importing them into their conftest: `from tests.slurm.conftest import slurm_cluster, ...`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from .harness import ROUTERTEST_PARTITIONS, PartitionSpec, SlurmCluster, missing_binaries
from .multinode import MultiNodeCluster

ClusterFactory = Callable[..., SlurmCluster]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slurm: needs a real single-host Slurm cluster (tests/slurm/harness.py)"
    )


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require_tool(what: str, ok: bool) -> None:
    """Skip a test whose tool (torch, mpicc, ...) is missing; fail instead under CI."""
    if ok:
        return
    if _in_ci():
        pytest.fail(f"{what} missing; CI must run .ci/slurm-setup.sh first", pytrace=False)
    pytest.skip(f"{what} missing")


def require_slurm() -> None:
    """Skip when Slurm cannot run here; fail instead under CI, where it must."""
    missing = missing_binaries()
    problem = f"Slurm/munge not installed (missing {', '.join(missing)})" if missing else None
    if problem is None and os.geteuid() != 0:
        problem = "the Slurm test cluster must run as root"
    if problem is None:
        return
    if _in_ci():
        pytest.fail(f"{problem}; CI must run .ci/slurm-setup.sh first", pytrace=False)
    pytest.skip(problem)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    require_slurm()
    cluster = SlurmCluster(list(ROUTERTEST_PARTITIONS), tmp_path_factory.mktemp("slurm"))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def slurm_cluster_factory(slurm_cluster: SlurmCluster) -> Iterator[ClusterFactory]:
    changed = False

    def factory(
        partitions: list[PartitionSpec], run_node_partition: str | None = None
    ) -> SlurmCluster:
        nonlocal changed
        changed = True
        slurm_cluster.reconfigure(list(partitions), run_node_partition)
        return slurm_cluster

    yield factory
    if changed:
        slurm_cluster.reconfigure(list(ROUTERTEST_PARTITIONS))


def require_multinode() -> None:
    """What the two-node cluster needs besides Slurm: iproute2 and util-linux's nsenter/unshare."""
    require_slurm()
    import shutil

    missing = [b for b in ("ip", "nsenter", "unshare") if shutil.which(b) is None]
    if not missing:
        return
    problem = f"the two-node cluster needs {', '.join(missing)}"
    if _in_ci():
        pytest.fail(f"{problem}; CI must run .ci/slurm-setup.sh first", pytrace=False)
    pytest.skip(problem)


@pytest.fixture(scope="session")
def multinode_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MultiNodeCluster]:
    """A real two-node cluster (tests/slurm/multinode.py), started once per session."""
    require_multinode()
    cluster = MultiNodeCluster(tmp_path_factory.mktemp("multinode"))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
