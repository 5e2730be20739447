"""What a policy may name: workload fields, target attributes, routing outcomes and options.

These tables are data, shared by the checker (which rejects unknown names with "did you mean")
and the evaluator (which reads the values). Types: "number", "string", "bool", "list",
"memory", "duration", "labels" (a map read as `labels.key`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

BACKENDS = ("slurm", "kubernetes")
ROUTE_BACKENDS = ("slurm", "kubernetes", "any")

WORKLOAD_FIELDS: dict[str, str] = {
    "name": "string",
    "kind": "string",
    "team": "string",
    "labels": "labels",
    "image": "string",
    "gpus": "number",
    "gpu_type": "string",
    "nodes": "number",
    "gpus_per_node": "number",
    "cpus": "number",
    "memory": "memory",
    "duration": "duration",
    "priority": "number",
    "preemptible": "bool",
    "min_replicas": "number",
    "max_replicas": "number",
    "service": "bool",
}

TARGET_ATTRIBUTES: dict[str, str] = {
    "backend": "string",
    "cluster": "string",
    "name": "string",
    "gpu_type": "string",
    "gpus_per_node": "number",
    "cpus_per_node": "number",
    "memory_per_node": "memory",
    "nodes": "number",
    "max_nodes": "number",
    "max_time": "duration",
    "features": "list",
    "labels": "labels",
    "cost": "number",
    "mig": "list",
    # Slurm partition limits (models/inventory.py Partition); absent on node pools and on
    # partitions that do not set them (Slurm's ALL for the allow lists): those read as none.
    "max_nodes_per_job": "number",
    "default_time": "duration",
    "oversubscribe": "string",
    "allow_accounts": "list",
    "allow_groups": "list",
    "allow_qos": "list",
    "deny_accounts": "list",
    "deny_qos": "list",
    "preempt_mode": "string",
}

OUTCOME_NAMES: dict[str, str] = {
    "backend": "string",
    "cluster": "string",
    "target": "string",
    "rule": "string",
    "denied": "bool",
    "placed": "bool",
    "routed": "bool",
}

QUOTA_RESOURCES = ("gpus", "cpus", "memory", "nodes", "workloads")

LAUNCHERS = ("torchrun", "mpi", "plain")


@dataclass(frozen=True)
class OptionSpec:
    """One option: which backends have it, the value it takes, and its arguments if a call."""

    name: str
    backends: tuple[str, ...]
    type: str  # "flag", "string", "duration", "call", "list" (of strings)
    choices: tuple[str, ...] = ()
    args: dict[str, str] = field(default_factory=dict)  # call argument -> type
    flag_ok: bool = False  # a call option that may also be written bare (`with hpa`)
    # How a string value must look (a key of models.fields.VALUE_FORMATS); "" takes the
    # backend's default (see value_format), so an option added here is validated too.
    format: str = ""


def value_format(spec: OptionSpec) -> str | None:
    """The format a string option's value is checked against, by `router check` and by the
    emitters alike; None for an option whose values are its choices or not strings."""
    if spec.type != "string" or spec.choices:
        return None
    if spec.format:
        return spec.format
    return "sbatch" if "slurm" in spec.backends else "label_value"


OPTIONS: dict[str, OptionSpec] = {
    spec.name: spec
    for spec in (
        OptionSpec("exclusive", ("slurm",), "flag"),
        OptionSpec("qos", ("slurm",), "string", format="sbatch"),
        OptionSpec("account", ("slurm",), "string", format="sbatch"),
        OptionSpec("constraint", ("slurm",), "string", format="constraint"),
        OptionSpec("time", ("slurm",), "duration"),
        OptionSpec("reservation", ("slurm",), "string", format="sbatch"),
        OptionSpec("mpi", ("slurm",), "string", ("pmix", "pmi2", "none")),
        OptionSpec("container", ("slurm",), "string", ("pyxis", "apptainer")),
        # How a job starts its processes (router/emit/slurm/launch.py, router/emit/k8s/
        # launch.py); a workload's own `launcher` field wins.
        OptionSpec("launcher", ("slurm", "kubernetes"), "string", LAUNCHERS),
        OptionSpec("namespace", ("kubernetes",), "string", format="dns_label"),
        OptionSpec("queue", ("kubernetes",), "string", format="label_value"),
        OptionSpec("priority_class", ("kubernetes",), "string", format="dns_subdomain"),
        OptionSpec(
            "hpa",
            ("kubernetes",),
            "call",
            args={"min": "number", "max": "number", "cpu": "percent", "memory": "percent"},
            flag_ok=True,
        ),
        OptionSpec(
            "pdb",
            ("kubernetes",),
            "call",
            args={"min_available": "number", "max_unavailable": "number"},
            flag_ok=True,
        ),
        OptionSpec(
            "operator",
            ("kubernetes",),
            "string",
            ("job", "jobset", "pytorchjob", "trainjob", "mpijob", "volcano"),
        ),
        OptionSpec("serving", ("kubernetes",), "string", ("deployment", "kserve")),
        # MIG slices (nvidia.com/mig-<profile> on Kubernetes, --gres=gpu:<type>:N on Slurm).
        OptionSpec("mig", ("slurm", "kubernetes"), "string", format="label_value"),
        # Kubernetes pods (router/emit/k8s): taint keys the rule's workloads may tolerate
        # beyond the GPU taint; the Pod Security level pods are written for (restricted unless
        # a rule opts out); how a notebook runs.
        OptionSpec("tolerate", ("kubernetes",), "list"),
        OptionSpec("pod_security", ("kubernetes",), "string", ("restricted", "baseline")),
        OptionSpec("notebook", ("kubernetes",), "string", ("statefulset", "kubeflow")),
    )
}


def options_for(backend: str) -> dict[str, OptionSpec]:
    """The options a route to `backend` may carry; `any` may carry those of either backend."""
    if backend == "any":
        return dict(OPTIONS)
    return {n: s for n, s in OPTIONS.items() if backend in s.backends}
