"""Applying a plan: submit what `router plan` wrote to the backends that router drives itself.

Only Slurm is applied (`router.apply.slurm`): Kubernetes manifests are applied by GitOps tools
(Argo CD, Flux) from out/kubernetes/, so `router apply` only counts them.
"""

from router.apply.slurm import ApplyResult, Outcome, apply_plan, read_plan

__all__ = ["ApplyResult", "Outcome", "apply_plan", "read_plan"]
