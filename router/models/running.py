"""What is already running on the nodes: the occupancy a plan packs around.

A YAML mapping `running:` with one item per running job or pod on one node:

    running:
      - {cluster: hpc, node: h100-007, gpus: 4, cpus: 32, memory: 256GiB, job: "12345"}
      - {cluster: hpc, node_set: h100, node: 3, whole: true, job: "12346"}
      - {cluster: k8s, node_set: a10g, node: 0, mig: {1g.10gb: 2}, cpus: 4, memory: 8GiB}

`node` is a node's real name (a node set's `node_names`) or its index in `node_set`; a multi-node
job is one item per node. `whole: true` takes the node to itself (an exclusive job). Parsers of
`squeue --json` and `kubectl get pods -o json` write this form (router/importers).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator

from router.models.fields import (
    SLURM_NAME,
    Count,
    DnsLabel,
    Flag,
    Frozen,
    Memory,
    fail,
    show,
    whole,
)
from router.models.inventory import MigProfile, _cross


def _node_ref(value: Any) -> str | int:
    # One error for a bad node, not one per form it might have been (name, index).
    if isinstance(value, int) and not isinstance(value, bool):
        return whole(0)(value)
    if isinstance(value, str) and len(value) <= 63 and SLURM_NAME.fullmatch(value):
        return value
    raise fail(
        "must be a node's name (letters, digits, '.', '_' and '-') or its index in node_set"
        f" (a whole number ≥ 0), got {show(value)}"
    )


NodeRef = Annotated[str | int, BeforeValidator(_node_ref)]


class RunningItem(Frozen):
    """One running job's or pod's share of one node."""

    cluster: DnsLabel
    node_set: DnsLabel | None = Field(
        None,
        description="the node set (or inline target) the node belongs to; needed when"
        " `node` is an index",
    )
    node: NodeRef = Field(description="the node's name, or its index in node_set")
    gpus: Count = 0
    mig: dict[MigProfile, Count] = Field(default_factory=dict)
    cpus: Count = 0
    memory: Memory = 0
    whole: Flag = False
    job: str = Field("", max_length=253, description="what runs there, for reasons")

    @model_validator(mode="after")
    def _index_needs_set(self) -> RunningItem:
        if isinstance(self.node, int) and self.node_set is None:
            raise _cross("node", f"node {self.node} is an index: give node_set too")
        return self


class Running(Frozen):
    """Everything already running that a plan must pack around."""

    running: list[RunningItem] = Field(default_factory=list)
