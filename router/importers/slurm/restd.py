"""slurmrestd `/nodes` and `/partitions`, and `scontrol show nodes|partitions --json`.

Both print Slurm's data_parser layout (v0.0.39 in 23.02 to v0.0.44 in 25.11): a node has
`state` as a list (["IDLE", "DRAIN"]), `features` as a list (a string before 23.11), numbers
either plain or as {"set", "infinite", "number"}; a partition has its limits under `maximums`
/ `defaults` (times in minutes), its node list in `nodes.configured`, its state in
`partition.state`. slurmrestd's older plugins (v0.0.37/38, 21.08-22.05) have the node layout of
`sinfo --json` of those releases, which this module reads too.
"""

from __future__ import annotations

from typing import Any

from router.errors import LoadError
from router.importers.slurm.records import (
    UNLIMITED,
    Limit,
    SlurmNode,
    SlurmPartition,
    name_list,
    number,
    states,
    whole,
    words,
)
from router.importers.slurm.text import expand_hostlist


def node_from_json(raw: Any, source: str) -> SlurmNode:
    """One node of sinfo 21.08/22.05 `nodes`, slurmrestd /nodes, `scontrol show nodes --json`."""
    if not isinstance(raw, dict):
        raise LoadError(f"{source}: a node must be a mapping, got {type(raw).__name__}")
    name = str(raw.get("name") or raw.get("hostname") or "")
    if not name:
        raise LoadError(f"{source}: a node without a name")
    where = f"{source}: node {name}"
    state = states(raw.get("state"))
    if not isinstance(raw.get("state"), list):  # 21.08/22.05: "idle" plus "state_flags"
        state = state | states(raw.get("state_flags") or [])
    gres = raw.get("gres") or ""
    reason = raw.get("reason") or ""
    if isinstance(reason, dict):
        reason = reason.get("description") or ""
    return SlurmNode(
        name=name,
        partitions=words(raw.get("partitions")),
        # effective_cpus (23.11+) leaves out CoreSpecCount's cores; memory less MemSpecLimit
        cpus=whole(raw.get("effective_cpus") or raw.get("cpus"), "cpus", where),
        memory=max(
            whole(raw.get("real_memory"), "real_memory", where)
            - _spec_memory(raw.get("specialized_memory")),
            1,
        ),
        gres=gres if isinstance(gres, str) else ",".join(words(gres)),
        features=words(raw.get("features")) or words(raw.get("active_features")),
        states=state,
        reason=str(reason),
        reservation=str(raw.get("reservation") or ""),
    )


def _spec_memory(value: Any) -> int:
    try:
        n = number(value)
    except ValueError:
        return 0
    return n if isinstance(n, int) and n > 0 else 0


def _get(raw: dict[str, Any], *path: str) -> Any:
    value: Any = raw
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _minutes(value: Any) -> Limit:
    n = number(value)
    return n * 60 if isinstance(n, int) else n


def _oversubscribe(raw: Any) -> str | None:
    if not isinstance(raw, dict):
        return None
    flags = {str(f).lower() for f in raw.get("flags") or []}
    jobs = raw.get("jobs")
    if "exclusive" in flags:
        return "exclusive"
    if "force" in flags:
        return f"force:{jobs}" if isinstance(jobs, int) else "force"
    if isinstance(jobs, int) and jobs > 1:
        return f"yes:{jobs}"
    return "no"


def partition_from_json(raw: Any, source: str) -> SlurmPartition:
    """One partition of the data_parser layout (`/partitions`, scontrol --json, sinfo 23.02+)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise LoadError(f"{source}: a partition must be a mapping with a name")
    name = raw["name"]
    if isinstance(raw.get("nodes"), str):
        return _legacy_partition(raw, source)
    configured = _get(raw, "nodes", "configured")
    state = _get(raw, "partition", "state")
    state_text = ",".join(str(s) for s in state) if isinstance(state, list) else str(state or "UP")
    flags = (
        {str(f).upper() for f in _get(raw, "flags") or []}
        if isinstance(_get(raw, "flags"), list)
        else set()
    )
    try:
        max_nodes = number(_get(raw, "maximums", "nodes"))
        resume = number(_get(raw, "timeouts", "resume"))
        suspend = number(_get(raw, "suspend_time"))
        return SlurmPartition(
            name=name,
            nodes=expand_hostlist(configured) if isinstance(configured, str) else None,
            state=state_text.upper() or "UP",
            default="DEFAULT" in flags,
            max_time=_minutes(_get(raw, "maximums", "time")),
            default_time=_minutes(_get(raw, "defaults", "time")),
            max_nodes=max_nodes if max_nodes != 0 else UNLIMITED,
            oversubscribe=_oversubscribe(_get(raw, "maximums", "oversubscribe")),
            allow_accounts=name_list(_get(raw, "accounts", "allowed")),
            deny_accounts=words(_get(raw, "accounts", "deny")),
            allow_groups=name_list(_get(raw, "groups", "allowed")),
            allow_qos=name_list(_get(raw, "qos", "allowed")),
            deny_qos=words(_get(raw, "qos", "deny")),
            qos=str(_get(raw, "qos", "assigned") or "") or None,
            preempt_mode=",".join(words(_get(raw, "preempt_mode"))).lower() or None,
            power_up=(isinstance(resume, int) and resume > 0)
            or (isinstance(suspend, int) and suspend > 0),
        )
    except ValueError as e:
        raise LoadError(f"{source}: partition {name}: {e}") from None


_INFINITE = 0xFFFFFFFE  # Slurm's NO_VAL (…fe) and INFINITE (…ff) in 32-bit fields


def _legacy_limit(value: Any, scale: int = 1) -> Limit:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    if value < 0 or value >= _INFINITE:
        return UNLIMITED
    return value * scale


def _legacy_partition(raw: dict[str, Any], source: str) -> SlurmPartition:
    """slurmrestd v0.0.37/v0.0.38 (Slurm 21.08/22.05): flat keys, times in minutes."""
    flags = {str(f).lower() for f in raw.get("flags") or []}
    try:
        return SlurmPartition(
            name=str(raw["name"]),
            nodes=expand_hostlist(raw["nodes"]),
            state=str(raw.get("state") or "UP").upper(),
            default="default" in flags,
            max_time=_legacy_limit(raw.get("maximum_time", raw.get("max_time_limit")), 60),
            default_time=_legacy_limit(raw.get("default_time", raw.get("default_time_limit")), 60),
            max_nodes=_legacy_limit(raw.get("maximum_nodes_per_job")),
            allow_accounts=name_list(raw.get("allowed_accounts")),
            deny_accounts=words(raw.get("deny_accounts", raw.get("denied_accounts"))),
            allow_groups=name_list(raw.get("allowed_groups")),
            allow_qos=name_list(raw.get("allowed_qos")),
            deny_qos=words(raw.get("deny_qos", raw.get("denied_qos"))),
            qos=str(raw.get("qos") or "") or None,
            preempt_mode=",".join(words(raw.get("preemption_mode"))).lower() or None,
        )
    except ValueError as e:
        raise LoadError(f"{source}: partition {raw.get('name')}: {e}") from None


def nodes_from_json(data: dict[str, Any], source: str) -> list[SlurmNode]:
    items = data.get("nodes")
    if not isinstance(items, list):
        raise LoadError(f'{source}: expected a "nodes" list')
    return [node_from_json(raw, source) for raw in items]


def partitions_from_json(data: dict[str, Any], source: str) -> list[SlurmPartition]:
    items = data.get("partitions")
    if not isinstance(items, list):
        raise LoadError(f'{source}: expected a "partitions" list')
    return [partition_from_json(raw, source) for raw in items]
