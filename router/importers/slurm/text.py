"""`scontrol show node -o` and `scontrol show partition -o`: one `Key=value` record a line
(and the same without -o: a record over several indented lines).

Slurm 22.05 has no `scontrol --json`, and every release prints this text, so it is the layout
that always works. Values may hold spaces (`Reason=bad GPU [root@2024-01-01]`, `OS=Linux ...`):
a token that is not `Key=` continues the previous value.
"""

from __future__ import annotations

import re

from router.errors import LoadError
from router.hostlist import expand
from router.importers.slurm.records import (
    SlurmNode,
    SlurmPartition,
    name_list,
    slurm_count,
    slurm_minutes,
    states,
    whole,
    words,
)

# A key: CamelCase, may hold '/', ':' or '_' ("Socks/Node", "NtasksPerN:B:S:C", "MCS_label").
_KEY = re.compile(r"^([A-Z][A-Za-z0-9_:/]*)=(.*)$", re.S)


def parse_scontrol_lines(text: str) -> list[dict[str, str]]:
    """`scontrol show ... -o` text, one record a line, whatever the first key."""
    records = []
    for line in text.splitlines():
        if not line.strip():
            continue
        record: dict[str, str] = {}
        key: str | None = None
        for token in line.strip().split(" "):
            m = _KEY.match(token)
            if m:
                key = m.group(1)
                record[key] = m.group(2)
            elif key is not None:
                record[key] += " " + token
        records.append({k: v.strip() for k, v in record.items()})
    return records


def parse_records(text: str, first_key: str, source: str) -> list[dict[str, str]]:
    """The records of `scontrol show node|partition` text: one a line (`-o`), or the default
    layout, a record over several indented lines with a blank line after it. Each record must
    start with `first_key=`."""
    lines: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line[0] in " \t" and lines:  # the default layout: this record goes on
            lines[-1] += " " + line.strip()
        elif line.startswith(first_key + "="):
            lines.append(line.strip())
        else:
            raise LoadError(
                f"line {number} does not start with {first_key}=: expected the output of "
                f"`scontrol show {'node' if first_key == 'NodeName' else 'partition'} -o` "
                "(one record a line) or of the same without -o",
                path=source,
                line=number,
            )
    return parse_scontrol_lines("\n".join(lines))


def expand_hostlist(text: str) -> tuple[str, ...]:
    """Slurm host lists: "cn[001-003,010]", "gpu-n[1-2],login1", "r[1-2]n[1-2]"."""
    return tuple(expand(text))


def nodes_from_text(text: str, source: str) -> list[SlurmNode]:
    nodes = []
    for r in parse_records(text, "NodeName", source):
        name = r["NodeName"]
        where = f"{source}: node {name}"
        nodes.append(
            SlurmNode(
                name=name,
                partitions=words(r.get("Partitions", "")),
                # CPUEfctv (23.02+) leaves out CoreSpecCount's cores; memory less MemSpecLimit
                cpus=whole(r.get("CPUEfctv") or r.get("CPUTot"), "CPUTot", where),
                memory=max(
                    whole(r.get("RealMemory"), "RealMemory", where)
                    - _spec(r.get("MemSpecLimit", "")),
                    1,
                ),
                gres=r.get("Gres", ""),
                features=words(r.get("AvailableFeatures", ""))
                or words(r.get("ActiveFeatures", "")),
                states=states(r.get("State", "")),
                reason=_clean(r.get("Reason", "")),
                reservation=_clean(r.get("ReservationName", "")),
            )
        )
    return nodes


def _spec(text: str) -> int:
    return int(text) if text.isdigit() else 0


def _clean(text: str) -> str:
    text = re.sub(r"\s*\[[^\]]*@[^\]]*\]$", "", text)  # "[root@2024-05-01T10:00:00]"
    return "" if text.upper() in ("NONE", "(NULL)", "N/A") else text


def partitions_from_text(text: str, source: str) -> list[SlurmPartition]:
    out = []
    for r in parse_records(text, "PartitionName", source):
        name = r["PartitionName"]
        try:
            out.append(
                SlurmPartition(
                    name=name,
                    nodes=expand_hostlist(r["Nodes"]) if "Nodes" in r else None,
                    state=r.get("State", "UP").upper(),
                    default=r.get("Default", "NO").upper() == "YES",
                    max_time=slurm_minutes(r.get("MaxTime", "UNLIMITED")),
                    default_time=slurm_minutes(r.get("DefaultTime", "NONE")),
                    max_nodes=slurm_count(r.get("MaxNodes", "UNLIMITED")),
                    oversubscribe=r.get("OverSubscribe", "").lower() or None,
                    allow_accounts=name_list(r.get("AllowAccounts", "ALL")),
                    deny_accounts=words(r.get("DenyAccounts", "")),
                    allow_groups=name_list(r.get("AllowGroups", "ALL")),
                    allow_qos=name_list(r.get("AllowQos", "ALL")),
                    deny_qos=words(r.get("DenyQos", "")),
                    qos=(r.get("QoS") or None) if r.get("QoS", "N/A") not in ("N/A", "") else None,
                    preempt_mode=r.get("PreemptMode", "").lower() or None,
                    power_up=_power_up(r),
                )
            )
        except ValueError as e:
            raise LoadError(f"{source}: partition {name}: {e}") from None
    return out


def _power_up(r: dict[str, str]) -> bool | None:
    """Whether power saving resumes nodes of this partition (ResumeTimeout/SuspendTime set)."""
    keys = [k for k in ("SuspendTime", "ResumeTimeout") if k in r]
    if not keys:
        return None
    return any(r[k].upper() not in ("NONE", "INFINITE", "UNLIMITED", "") for k in keys)
