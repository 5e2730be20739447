"""A workload: what a user asks to run, as written in workloads/*.yaml (DESIGN.md).

A *job* states gpus, cpus and memory as totals across its nodes; a *service* (kind inference,
or anything with `replicas`) states them per replica. Quantities are stored in base units:
memory in MiB, duration in seconds, priority as a number.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from annotated_types import Ge, Le
from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from router.errors import Span, did_you_mean
from router.models.fields import (
    PRIORITIES,
    Count,
    DnsLabel,
    Duration,
    Flag,
    Frozen,
    Labels,
    Memory,
    PositiveCount,
    Slug,
    SlurmName,
    Team,
    fail,
    has_control,
    need_str,
    pattern,
    schema_pattern,
    show,
    whole,
)
from router.models.k8s import KubernetesSpec
from router.models.run import Array, Checkpoint, Launcher, Mount, SetupLine

KIND = re.compile(r"[a-z][a-z0-9_-]{0,62}")
IMAGE = re.compile(r"[A-Za-z0-9/][A-Za-z0-9._/:@+-]*")  # "/" first: an Apptainer .sif path
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_PRIORITY = 1000


class Replicas(Frozen):
    """How many copies of a service run: `min` count against capacity, `max` bounds the HPA.
    A bare number N means min = max = N; a missing `max` is `min`."""

    model_config = ConfigDict(json_schema_extra=lambda schema: schema.pop("required", None))

    min: Count = 1
    max: Count

    @model_validator(mode="before")
    @classmethod
    def _from_number(cls, data: Any) -> Any:
        if isinstance(data, int) and not isinstance(data, bool):
            return {"min": data, "max": data}
        if isinstance(data, dict):
            if "max" in data:
                return data
            low = data.get("min", 1)
            return {**data, "max": low if type(low) is int else 0}
        if isinstance(data, Replicas):
            return data
        raise fail(f"must be a number or a mapping {{min, max}}, got {show(data)}")

    @model_validator(mode="after")
    def _ordered(self) -> Replicas:
        if self.max < self.min:
            raise _cross("max", f"max ({self.max}) must be ≥ min ({self.min})")
        return self


def _cross(field: str, message: str) -> PydanticCustomError:
    """An error about several fields, located at `field` by the loader (ctx["field"])."""
    return PydanticCustomError("router_cross", message, {"field": field})


def _kind(value: Any) -> str:
    return pattern(KIND, "a lowercase word (letters, digits, '_' and '-', at most 63)")(value)


def _image(value: Any) -> str | None:
    if value is None:
        return None
    text = need_str(value)
    if len(text) > 255 or not IMAGE.fullmatch(text):
        raise fail(
            "must be a container image reference (letters, digits and . _ / : @ + -, no spaces"
            f" or shell characters, at most 255 characters), got {show(text)}"
        )
    return text


def _command(value: Any) -> list[str] | str | None:
    if value is None:
        return None
    if isinstance(value, str):
        bad = has_control(value, allow="\n\t")
        if bad:
            raise fail(f"must not contain control characters, found {bad}")
        if not value.strip():
            raise fail("must not be empty")
        return value
    if not isinstance(value, list) or not value:
        raise fail(
            f"must be a shell command string or a non-empty list of arguments, got {show(value)}"
        )
    for i, arg in enumerate(value):
        if not isinstance(arg, str):
            raise fail(f"argument {i} must be a string; quote it, got {show(arg)}")
        bad = has_control(arg, allow="\t")
        if bad:
            raise fail(f"argument {i} must not contain control characters, found {bad}")
    return list(value)


def _env_name(value: Any) -> str:
    name = need_str(value, "a string variable name")
    if not ENV_NAME.fullmatch(name) or len(name) > 255:
        raise fail(
            "environment variable names are letters, digits and '_', not starting with a"
            f" digit; got {show(name)}"
        )
    return name


def _env_value(value: Any) -> str:
    if isinstance(value, (bool, int, float)):
        raise fail(f'must be a string; quote it: "{show(value)}"')
    text = need_str(value)
    bad = has_control(text, allow="\n\t")
    if bad:
        raise fail(f"must not contain control characters, found {bad}")
    return text


def _workdir(value: Any) -> str | None:
    if value is None:
        return None
    text = need_str(value)
    bad = has_control(text)
    if bad:
        raise fail(f"must not contain control characters, found {bad}")
    if not text.startswith("/") or len(text) > 4096:
        raise fail(f"must be an absolute path, got {show(text)}")
    return text


def _priority(value: Any) -> int:
    if isinstance(value, str) and value in PRIORITIES:
        return PRIORITIES[value]
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_PRIORITY:
        return value
    names = ", ".join(PRIORITIES)
    hint = did_you_mean(value, PRIORITIES) if isinstance(value, str) else None
    raise fail(
        f"must be one of {names} or a whole number 0..{MAX_PRIORITY}, got {show(value)}"
        + (f"; {hint}" if hint else "")
    )


def _same(value: Any) -> Any:
    return value


def _port(value: Any) -> int | None:
    return None if value is None else whole(1, 65535)(value)


EnvName = Annotated[str, BeforeValidator(_env_name)]
EnvValue = Annotated[str, BeforeValidator(_env_value)]
PriorityName = Literal["low", "normal", "high", "critical"]


class Workload(Frozen):
    """One workload as the user wrote it, in base units."""

    name: DnsLabel = Field(description="DNS-1123 label, unique across all workloads")
    kind: Annotated[str, BeforeValidator(_kind), schema_pattern(KIND)] = Field(
        "batch", description="training, inference, batch, notebook or another word"
    )
    team: Team = "default"
    account: SlurmName | None = Field(
        None,
        description="the Slurm account to charge (--account); partitions' AllowAccounts"
        " are checked against it",
    )
    labels: Labels = Field(default_factory=dict)
    image: Annotated[
        str | None,
        BeforeValidator(_image),
        WithJsonSchema(
            {"type": ["string", "null"], "pattern": f"^{IMAGE.pattern}$", "maxLength": 255}
        ),
    ] = None
    command: Annotated[list[str] | str | None, BeforeValidator(_command)] = Field(
        None, description="a string is a shell command; a list is argv"
    )
    env: dict[EnvName, EnvValue] = Field(default_factory=dict)
    workdir: Annotated[str | None, BeforeValidator(_workdir)] = None
    gpus: Count = Field(0, description="jobs: total across nodes; services: per replica")
    gpu_type: Slug = Field("any", description="a GPU model such as h100, or any")
    nodes: PositiveCount | None = None
    gpus_per_node: Count | None = None
    cpus: PositiveCount = 1
    memory: Memory = Field(4096, description='MiB; input "64GiB" or a number of MiB')
    duration: Duration = Field(14400, description='seconds; input "48h", or a number of minutes')
    priority: Annotated[
        int,
        Ge(0),
        Le(MAX_PRIORITY),
        BeforeValidator(
            _priority, json_schema_input_type=PriorityName | Annotated[int, Ge(0), Le(MAX_PRIORITY)]
        ),
    ] = Field(PRIORITIES["normal"], description="low, normal, high, critical or 0..1000")
    replicas: Annotated[
        Replicas | None, BeforeValidator(_same, json_schema_input_type=Replicas | int | None)
    ] = Field(None, description="{min, max} or a number N (min = max = N)")
    preemptible: Flag = False
    port: Annotated[Annotated[int, Ge(1), Le(65535)] | None, BeforeValidator(_port)] = Field(
        None, description="the serving port of a service, 1..65535"
    )

    # ---- how a job runs (issue 13; router.models.run; Kubernetes reads the launcher too) ----
    launcher: Launcher | None = Field(
        None, description="torchrun, mpi or plain (one task per node); a rule's option else"
    )
    procs_per_node: PositiveCount | None = Field(
        None, description="torchrun processes per node; default the GPUs per node (or 1)"
    )
    ranks_per_node: PositiveCount | None = Field(None, description="MPI ranks per node")
    threads_per_rank: PositiveCount | None = Field(
        None, description="CPUs (OpenMP threads) per MPI rank; default CPUs per node / ranks"
    )
    array: Array | None = Field(None, description="a job array {count, parallel}")
    after: list[DnsLabel] = Field(
        default_factory=list, description="workloads this one starts after (afterok)"
    )
    mounts: list[Mount] = Field(
        default_factory=list, description='container mounts "SRC[:DST[:ro|rw]]"'
    )
    container_workdir: Annotated[str | None, BeforeValidator(_workdir)] = Field(
        None, description="the working folder inside the container; default workdir"
    )
    setup: list[SetupLine] = Field(
        default_factory=list, description="shell lines run before the launch (module load ...)"
    )
    checkpoint: Checkpoint | None = Field(
        None, description="{signal_lead: 5min}: a signal before the time limit"
    )

    # ---- Kubernetes only: volumes, secrets, service account, probes (router.models.k8s) ----
    kubernetes: KubernetesSpec = Field(
        default_factory=KubernetesSpec,
        description="Kubernetes only: volumes, env from secrets, service account, pull"
        " secrets, probes, shared memory, notebook storage",
    )

    _source: tuple[str, int] | None = PrivateAttr(default=None)
    _after_spans: tuple[Span, ...] = PrivateAttr(default=())  # of each `after` entry
    # Finds them when first asked, for a file read without its nodes (loader.py _load_fast).
    _after_at: Callable[[], tuple[Span, ...]] | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _derive_gpus(cls, data: Any) -> Any:
        """nodes × gpus_per_node gives gpus when gpus is not written."""
        if isinstance(data, dict) and "gpus" not in data:
            nodes, per = data.get("nodes"), data.get("gpus_per_node")
            if type(nodes) is int and type(per) is int and nodes >= 0 and per >= 0:
                return {**data, "gpus": nodes * per}
        return data

    @model_validator(mode="after")
    def _gpu_shape(self) -> Workload:
        per = self.gpus_per_node
        if per is None:
            return self
        if self.nodes is not None and self.nodes * per != self.gpus:
            raise _cross(
                "gpus",
                f"nodes × gpus_per_node must equal gpus: {self.nodes} × {per} ≠ {self.gpus}",
            )
        if self.nodes is None and self.gpus and (per == 0 or self.gpus % per):
            raise _cross(
                "gpus",
                f"gpus ({self.gpus}) must be a multiple of gpus_per_node ({per})"
                " when nodes is not given",
            )
        return self

    @model_validator(mode="after")
    def _run_shape(self) -> Workload:
        if self.ranks_per_node is not None and self.launcher not in (None, "mpi"):
            raise _cross(
                "ranks_per_node", f"ranks_per_node is for launcher mpi, not {self.launcher}"
            )
        if self.procs_per_node is not None and self.launcher not in (None, "torchrun"):
            raise _cross(
                "procs_per_node", f"procs_per_node is for launcher torchrun, not {self.launcher}"
            )
        if self.name in self.after:
            raise _cross("after", f"workload {self.name} cannot start after itself")
        if len(set(self.after)) != len(self.after):
            raise _cross("after", "a workload is listed twice")
        if self.array is not None and self.is_service:
            raise _cross("array", "a service (replicas, or kind inference) cannot be a job array")
        return self

    @property
    def source(self) -> tuple[str, int] | None:
        """(file, line) where the workload was written, set by the loader."""
        return self._source

    @property
    def after_spans(self) -> tuple[Span, ...]:
        """Where each `after` entry was written, set by the loader (or found on first use,
        for a file read by the fast scanner, which keeps no positions)."""
        if self._after_at is not None:
            self._after_spans, self._after_at = self._after_at(), None
        return self._after_spans

    @property
    def is_service(self) -> bool:
        return self.kind == "inference" or self.replicas is not None

    @property
    def min_replicas(self) -> int:
        if not self.is_service:
            return 1
        return self.replicas.min if self.replicas else 1

    @property
    def max_replicas(self) -> int:
        if not self.is_service:
            return 1
        return self.replicas.max if self.replicas else 1

    @property
    def priority_weight(self) -> int:
        return max(self.priority, 1)


def _defaults() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, f in Workload.model_fields.items():
        if f.default_factory is not None:
            out[name] = f.default_factory()  # type: ignore[call-arg]
        elif not f.is_required():
            out[name] = f.default
    out["nodes"] = 1  # unset: derived from the target; a workload by itself is one node
    out["min_replicas"] = out["max_replicas"] = 1
    return out


# What a field is when a workload does not say: the one place the checker's prover and
# encoder (router.assure) read it from, so they agree with the model.
WORKLOAD_DEFAULTS: dict[str, Any] = _defaults()


def keeps_its_place(priority_weight: int, preemptible: bool, newcomer_weight: int) -> bool:
    """The preemption rule, in one place (the solver's protection, plan.json's `preempted`
    and `router explain` all read it): planned work keeps its place against a newcomer unless
    it is preemptible or the newcomer's priority is strictly higher, as with Kubernetes
    PriorityClasses and Slurm QOS preemption."""
    return not preemptible and priority_weight >= newcomer_weight
