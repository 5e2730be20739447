"""plan.json (format_version "1") as pydantic models: router.plan.document builds the dict
and writes it through PlanDocument, `router schema plan` publishes plan_json_schema(), and
`--previous` and `router apply` read plan.json back through it.

Extra keys are refused everywhere (only `options` and `diff` are free-form objects), so a
field router starts writing fails the tests until the model knows it: the model cannot
drift from the file. The tests check that each document router writes validates strictly
and dumps back to the same JSON.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReplicaBounds(_Part):
    min: int
    max: int


class PlacedResources(_Part):
    """What a placement takes (Resources.to_json): totals and per node."""

    nodes: int
    gpus: int
    gpus_per_node: int
    cpus: int
    cpus_per_node: int
    memory_mib: int
    memory_per_node_mib: int
    time_seconds: int
    exclusive: bool
    whole_nodes: int
    gpu_type: str | None = None
    mig: str | None = None
    replicas: ReplicaBounds | None = None
    array_parallel: int | None = None
    # An MPIJob: cpus_per_node / memory_per_node_mib include room for its launcher on every
    # worker's node (it may land on any); cpus / memory_mib count one launcher, as deployed.
    mpi_launcher: bool | None = None


class PlacedNode(_Part):
    """One pod (service replica, job task) or one whole node a placement takes."""

    node_set: str
    node: int
    name: str | None = None  # when the inventory gives node_names


class AfterEntry(_Part):
    """An `after` dependency and where its parent went (absent when it was not placed)."""

    workload: str
    supported: bool
    backend: str | None = None
    cluster: str | None = None


class PlacementEntry(_Part):
    workload: str
    kind: str
    team: str
    backend: Literal["slurm", "kubernetes"]
    cluster: str
    target: str
    target_id: str
    rule: str
    rule_source: str = Field(pattern=r"^.+:\d+$")
    rank: int
    options: dict[str, Any]
    resources: PlacedResources
    artifacts: list[str]
    # Plans written before node-by-node capacity (stop 9) have no `nodes`: they still read
    # as a --previous plan; router always writes them.
    nodes: list[PlacedNode] = Field(default_factory=list)
    after: list[AfterEntry] | None = None


class DeniedEntry(_Part):
    workload: str
    message: str
    rule: str | None = None
    rule_source: str | None = None


class ReasonsEntry(_Part):
    """An unrouted or unplaced workload and why."""

    workload: str
    reasons: list[str]
    rule: str | None = None
    fix: str | None = None


class Usage(_Part):
    capacity: int
    used: int


class TargetUsage(_Part):
    # What quotas count (router.evaluate.quota.usage): `gpus` in GPU devices, a whole GPU or
    # a MIG slice each, so a node of 8 A100s cut into 7 slices each has 56.
    id: str
    backend: str
    cluster: str
    placements: int
    gpus: Usage
    cpus: Usage
    memory_mib: Usage
    nodes: Usage


class Summary(_Part):
    workloads: int
    placed: int
    denied: int
    unrouted: int
    unplaced: int
    by_backend: dict[str, int] = Field(default_factory=dict)


class LevelEntry(_Part):
    name: str
    status: str
    value: int
    bound: int


class SolverReport(_Part):
    status: Literal["OPTIMAL", "FEASIBLE", "INFEASIBLE", "UNKNOWN", "MODEL_INVALID", "EMPTY"]
    objective: int
    bound: int
    lp_bound: float | None
    gap: float | None
    seed: int
    workers: Literal["any"]
    levels: list[LevelEntry]


class ScaleOut(_Part):
    """A target with services that can scale: the nodes their max replicas would need (the
    fewest found to pack), and the fewest that might (every count below it proven short;
    below more_nodes only where a check was undecided)."""

    target_id: str
    services: int
    replicas_min: int
    replicas_max: int
    more_nodes: int
    more_nodes_least: int


class PreemptedEntry(_Part):
    workload: str
    priority: int
    target_id: str
    by: list[str]
    reason: str


class PlanDocument(_Part):
    """The whole of plan.json."""

    format_version: Literal["1"]
    router_version: str
    policy: str | None
    inputs: dict[str, Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]]  # file -> sha256
    summary: Summary
    placements: list[PlacementEntry]
    denied: list[DeniedEntry]
    unrouted: list[ReasonsEntry]
    unplaced: list[ReasonsEntry]
    targets: list[TargetUsage]
    solver: SolverReport
    scale_out: list[ScaleOut] | None = None
    preempted: list[PreemptedEntry] | None = None  # planned against a previous plan
    diff: dict[str, Any] | None = None  # router.plan.diff's object

    def to_json(self) -> dict[str, Any]:
        """The document as plan.json holds it (keys that were absent stay absent)."""
        out: dict[str, Any] = self.model_dump(mode="json", exclude_unset=True)
        return out


def plan_json_schema() -> dict[str, Any]:
    """The JSON Schema of plan.json, from the models."""
    schema: dict[str, Any] = PlanDocument.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "router plan.json"
    return schema
