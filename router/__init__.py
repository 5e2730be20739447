"""router: declarative policy-as-code workload routing for Slurm and Kubernetes."""

__version__ = "0.1.0"
