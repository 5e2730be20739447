"""Tests and fixtures that run against a real single-host Slurm cluster (harness.py)."""
