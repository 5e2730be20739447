"""The real Slurm cluster fixtures (tests/slurm/harness.py) for the live running-work test."""

from tests.slurm.conftest import slurm_cluster  # noqa: F401
