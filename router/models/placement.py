"""What a plan is made of: placements (the solver's answer) and the outcomes that are not one.

Emitters read `Placement`; plan.json is written from the plan. Everything here is plain data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from router.models.inventory import TargetRef
from router.models.workload import Workload

# What the Launcher pod of a Kubernetes MPIJob requests (it runs mpirun, no GPU): the plan
# counts it beside a worker (Resources.mpi_launcher).
MPI_LAUNCHER_CPUS = 1
MPI_LAUNCHER_MEMORY = 1024  # MiB


def runs_as_mpijob(workload: Workload, options: dict[str, Any]) -> bool:
    """Whether a job (not a service, not a notebook) placed on Kubernetes with these rule
    options is an MPIJob: operator "mpijob", or launcher mpi (the workload's, else the
    rule's) with no operator named (router/emit/k8s/jobs.py documents)."""
    if workload.kind == "notebook" or workload.is_service:
        return False
    launcher = workload.launcher or options.get("launcher") or "plain"
    return bool(options.get("operator", "mpijob" if launcher == "mpi" else "job") == "mpijob")


@dataclass(frozen=True)
class Resources:
    """What one placement asks of its target, already shaped to the target's nodes.

    For a job: `nodes` nodes, each running one task with `gpus_per_node` GPUs,
    `cpus_per_node` CPUs and `memory_per_node` MiB. For a service: `replicas_min` ..
    `replicas_max` replicas, each with `gpus_per_node` / `cpus_per_node` / `memory_per_node`
    (one replica is one pod; `nodes` is 0 because replicas share nodes).
    `whole_nodes` is how many nodes the placement takes to itself (exclusive or multi-node).
    A job array (`array_parallel` > 0) counts `array_parallel` tasks of that shape in flight:
    `units`, and so gpus / cpus / memory and `whole_nodes`, are those of all of them.
    `mpi_launcher`: a Kubernetes MPIJob, whose Launcher pod (MPI_LAUNCHER_CPUS and
    MPI_LAUNCHER_MEMORY) runs beside a worker: each node's CPUs and memory above include room
    for it (it may land on any worker's node), and the workers request the rest
    (router/emit/k8s/jobs.py mpijob). The totals `cpus` and `memory` count what is deployed:
    the workers and one launcher, not one per node.
    """

    nodes: int
    gpus_per_node: int
    cpus_per_node: int
    memory_per_node: int  # MiB
    time: int  # seconds
    exclusive: bool
    whole_nodes: int
    replicas_min: int = 0
    replicas_max: int = 0
    gpu_type: str | None = None
    mig: str | None = None
    array_parallel: int = 0
    mpi_launcher: bool = False

    @property
    def units(self) -> int:
        """Tasks (job nodes, times the array tasks in flight) or the minimum replicas that
        count against capacity."""
        if self.replicas_max:
            return self.replicas_min
        return self.nodes * max(1, self.array_parallel)

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.units

    @property
    def spare_launchers(self) -> int:
        """Launcher rooms kept on worker nodes beyond the one launcher an MPIJob deploys."""
        return self.units - 1 if self.mpi_launcher and self.units else 0

    @property
    def cpus(self) -> int:
        return self.cpus_per_node * self.units - self.spare_launchers * MPI_LAUNCHER_CPUS

    @property
    def memory(self) -> int:
        return self.memory_per_node * self.units - self.spare_launchers * MPI_LAUNCHER_MEMORY

    def to_json(self) -> dict[str, Any]:
        # Keys made in sorted order, as plan.json has them: its text is then written without
        # being read back (plan/document.py _fast), and no sort per placement is needed.
        out: dict[str, Any] = {}
        if self.array_parallel:
            out["array_parallel"] = self.array_parallel
        out["cpus"] = self.cpus
        out["cpus_per_node"] = self.cpus_per_node
        out["exclusive"] = self.exclusive
        if self.gpu_type:
            out["gpu_type"] = self.gpu_type
        out["gpus"] = self.gpus
        out["gpus_per_node"] = self.gpus_per_node
        out["memory_mib"] = self.memory
        out["memory_per_node_mib"] = self.memory_per_node
        if self.mig:
            out["mig"] = self.mig
        if self.mpi_launcher:
            out["mpi_launcher"] = True
        out["nodes"] = self.nodes
        if self.replicas_max:
            out["replicas"] = {"max": self.replicas_max, "min": self.replicas_min}
        out["time_seconds"] = self.time
        out["whole_nodes"] = self.whole_nodes
        return out


@dataclass
class Placement:
    """One workload on one target, with the rule that put it there."""

    workload: Workload
    target: TargetRef
    rule: str
    rule_source: str  # file:line of the rule
    rank: int
    options: dict[str, Any]
    resources: Resources
    artifacts: list[str] = field(default_factory=list)
    # (node set id, node index) of each pod (service replica, job task) or whole node
    nodes: list[tuple[str, int]] = field(default_factory=list)

    @property
    def backend(self) -> str:
        return self.target.backend

    @property
    def cluster(self) -> str:
        return self.target.cluster
