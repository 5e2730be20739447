"""What the Slurm importer reads, whatever the layout: nodes and partitions as plain records.

Every parser (sinfo.py, restd.py, text.py) produces these, so the rest of the importer does
not know which Slurm release or command the data came from. Memory is in MiB (Slurm's "MB"),
times in seconds. `UNLIMITED` is Slurm's UNLIMITED/INFINITE; None is "not stated".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from router.errors import LoadError

Unlimited = Literal["unlimited"]
UNLIMITED: Unlimited = "unlimited"
Limit = int | Unlimited | None


@dataclass(frozen=True)
class SlurmNode:
    name: str
    partitions: tuple[str, ...]
    cpus: int
    memory: int  # MiB
    gres: str
    features: tuple[str, ...]
    states: frozenset[str]  # upper case: the base state and its flags (IDLE, DRAIN, CLOUD, ...)
    reason: str = ""
    reservation: str = ""


@dataclass(frozen=True)
class SlurmPartition:
    name: str
    nodes: tuple[str, ...] | None = None  # node names, where the data lists them
    state: str = "UP"
    default: bool = False
    max_time: Limit = None  # seconds
    default_time: Limit = None  # seconds
    max_nodes: Limit = None  # per job
    oversubscribe: str | None = None  # "no", "exclusive", "yes:4", "force:4"
    allow_accounts: tuple[str, ...] | None = None  # None: every account
    deny_accounts: tuple[str, ...] = ()
    allow_groups: tuple[str, ...] | None = None
    allow_qos: tuple[str, ...] | None = None
    deny_qos: tuple[str, ...] = ()
    qos: str | None = None  # the partition's own QOS
    preempt_mode: str | None = None
    power_up: bool | None = None  # can Slurm resume powered-down nodes here (None: unknown)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)


# ---- values shared by the parsers -----------------------------------------------------------

_CLOCK = re.compile(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)")
_NO_LIMIT = frozenset({"UNLIMITED", "INFINITE", "INFINITY"})
_NOT_SET = frozenset({"", "NONE", "N/A", "(NULL)", "NOT_SET"})


def slurm_minutes(text: str) -> Limit:
    """Seconds from a Slurm time ("3-00:00:00", "01:00:00", "30:00", minutes); UNLIMITED."""
    text = text.strip()
    if text.upper() in _NO_LIMIT:
        return UNLIMITED
    if text.upper() in _NOT_SET:
        return None
    if text.isdigit():
        return int(text) * 60
    m = _CLOCK.fullmatch(text)
    if not m:
        raise ValueError(f"{text!r} is not a Slurm time")
    days, hours, minutes, seconds = (int(g) if g else 0 for g in m.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def slurm_count(text: str) -> Limit:
    text = text.strip()
    if text.upper() in _NO_LIMIT:
        return UNLIMITED
    if text.upper() in _NOT_SET:
        return None
    if not text.isdigit():
        raise ValueError(f"{text!r} is not a count")
    return int(text)


def number(value: Any) -> Limit:
    """A data_parser number: 5, or {"set": true, "infinite": false, "number": 5}."""
    if isinstance(value, dict):
        if value.get("infinite"):
            return UNLIMITED
        if not value.get("set", True):
            return None
        value = value.get("number")
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return slurm_count(value)
    raise ValueError(f"{value!r} is not a number")


def whole(value: Any, what: str, source: str) -> int:
    """A count that must be there (a node's CPUs, its memory)."""
    try:
        n = number(value)
    except ValueError:
        n = None
    if not isinstance(n, int) or n < 0:
        raise LoadError(f"{source}: {what} must be a whole number, got {value!r}")
    return n


def words(value: Any) -> tuple[str, ...]:
    """Slurm lists: a JSON list, or a comma-separated string; (null), N/A and "" are empty."""
    if isinstance(value, list):
        items = [str(v).strip() for v in value]
    elif isinstance(value, str):
        items = [w.strip() for w in value.split(",")]
    else:
        return ()
    return tuple(w for w in items if w and w.upper() not in _NOT_SET)


def name_list(value: Any) -> tuple[str, ...] | None:
    """AllowAccounts-style lists: ALL (or empty) is None, "every one"."""
    items = words(value)
    if not items or any(w.upper() == "ALL" for w in items):
        return None
    return items


def states(value: Any) -> frozenset[str]:
    """A node's state words: ["IDLE", "DRAIN"], "idle" (+ flags), "IDLE+DRAIN", "DOWN*"."""
    raw = value if isinstance(value, list) else re.split(r"[+]", str(value or ""))
    out: set[str] = set()
    for word in raw:
        word = str(word).strip().upper()
        if not word:
            continue
        if word.endswith(("*", "~", "#", "%", "!", "$", "@", "^", "-")) and len(word) > 1:
            out.add(
                {
                    "*": "NOT_RESPONDING",
                    "~": "POWERED_DOWN",
                    "#": "POWERING_UP",
                    "%": "POWERING_DOWN",
                    "!": "POWER_DOWN",
                    "$": "MAINTENANCE",
                    "@": "REBOOT_REQUESTED",
                    "^": "REBOOT_ISSUED",
                    "-": "PLANNED",
                }[word[-1]]
            )
            word = word[:-1]
        out.add(word)
    return frozenset(out)
