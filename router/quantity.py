"""Quantities with units, parsed in one place for the language and the YAML files.

Base units: memory in MiB, durations in seconds, percentages as a fraction of 1.
Bare numbers mean MiB for memory (Slurm's RealMemory is in MB) and minutes for durations
(as in `sbatch --time`).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

MEMORY_UNITS: dict[str, float] = {
    "KiB": 1 / 1024,
    "MiB": 1,
    "GiB": 1024,
    "TiB": 1024 * 1024,
    "KB": 1000 / 1024**2,
    "MB": 1000**2 / 1024**2,
    "GB": 1000**3 / 1024**2,
    "TB": 1000**4 / 1024**2,
    # Kubernetes spellings
    "Ki": 1 / 1024,
    "Mi": 1,
    "Gi": 1024,
    "Ti": 1024 * 1024,
}
DURATION_UNITS: dict[str, int] = {"s": 1, "min": 60, "m": 60, "h": 3600, "d": 86400}

_NUMBER = r"\d+(?:\.\d+)?"
_UNITS = "|".join(sorted(MEMORY_UNITS, key=len, reverse=True))
_MEMORY_RE = re.compile(rf"^({_NUMBER})\s*({_UNITS})?$")
_DURATION_PART = re.compile(rf"({_NUMBER})\s*(min|s|m|h|d)")
_CLOCK_RE = re.compile(r"^(?:(\d+)-)?(\d+):(\d{2})(?::(\d{2}))?$")
_PERCENT_RE = re.compile(rf"^({_NUMBER})\s*%$")


# The largest quantity in base units (MiB, seconds) and the largest number in a policy:
# far above any real platform, far below what floats and CP-SAT's 64-bit integers hold.
MAX_QUANTITY = 10**15


class QuantityError(ValueError):
    """A quantity string that does not parse; the message says what was expected."""


class QuantityRangeError(QuantityError):
    """A quantity that parses but is infinite, not a number, or above MAX_QUANTITY."""


def _in_range(number: float, what: str, shown: object) -> float:
    """`number` (a quantity in base units) if finite and at most MAX_QUANTITY."""
    if not math.isfinite(number) or abs(number) > MAX_QUANTITY:
        text = shown if isinstance(shown, str) else repr(shown)
        if len(text) > 40:
            text = text[:37] + "..."
        raise QuantityRangeError(f"{text} is out of range: at most 10^15 {_BASE[what]}")
    return number


_BASE = {"memory": "MiB", "duration": "seconds", "percentage": "%"}


def parse_memory(value: object) -> int:
    """Memory in MiB from "64GiB", "512MiB", "2TiB", "1.5GB" or a bare number of MiB."""
    if isinstance(value, bool):
        raise QuantityError(f"expected a memory size such as 64GiB, got {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise QuantityError(f"memory must be ≥ 0, got {value}")
        return math.ceil(_in_range(value, "memory", value))
    if not isinstance(value, str):
        raise QuantityError(f"expected a memory size such as 64GiB, got {value!r}")
    return _memory_text(value)


_SPELT_RE = re.compile(rf"^({_NUMBER})\s*([A-Za-z]+)$")


def unit_suggestion(text: str, memory_only: bool = False) -> str | None:
    """A did-you-mean for a quantity whose unit is a known one in the wrong case, or None.
    `64gb` most likely means 64GiB (what memory is sized in), so that comes first and the
    decimal reading is named beside it; `64gib` is 64GiB, `64H` is 64h (not for memory)."""
    m = _SPELT_RE.match(text.strip())
    if not m:
        return None
    number, unit = m.groups()
    lower = unit.lower()
    if lower in ("kb", "mb", "gb", "tb"):
        decimal = unit.upper()
        return (
            f'did you mean "{number}{decimal[0]}iB"? (binary, 1024^{_POWER[decimal[0]]} bytes;'
            f' "{number}{decimal}" is decimal, 1000^{_POWER[decimal[0]]} bytes)'
        )
    units = [*MEMORY_UNITS, *(() if memory_only else DURATION_UNITS)]
    same = [u for u in units if u.lower() == lower]
    return f'did you mean "{number}{same[0]}"?' if same else None


_POWER = {"K": 1, "M": 2, "G": 3, "T": 4}


@lru_cache(maxsize=4096)  # workloads repeat a few spellings ("64GiB") thousands of times
def _memory_text(value: str) -> int:
    m = _MEMORY_RE.match(value.strip())
    if not m:
        hint = unit_suggestion(value, memory_only=True)
        raise QuantityError(
            f'expected a memory size such as 64GiB or 512MiB, got "{value}"'
            + (f"; {hint}" if hint else "")
        )
    number, unit = float(m.group(1)), m.group(2) or "MiB"
    return math.ceil(_in_range(number * MEMORY_UNITS[unit], "memory", value))


def parse_duration(value: object) -> int:
    """Duration in seconds from "48h", "45min", "1h30min", "7d", "2-00:00:00" or minutes."""
    if isinstance(value, bool):
        raise QuantityError(f"expected a duration such as 48h, got {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise QuantityError(f"duration must be ≥ 0, got {value}")
        return math.ceil(_in_range(value * 60, "duration", value))
    if not isinstance(value, str):
        raise QuantityError(f"expected a duration such as 48h, got {value!r}")
    return _duration_text(value)


@lru_cache(maxsize=4096)
def _duration_text(value: str) -> int:
    text = value.strip()
    clock = _CLOCK_RE.match(text)
    if clock:
        if len(text) > 40:  # int() refuses more than 4,300 digits; no real clock has 40
            raise QuantityRangeError(f"{text[:37]}... is out of range: at most 10^15 seconds")
        days, hours, minutes, seconds = (int(g) if g else 0 for g in clock.groups())
        total_s = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
        return int(_in_range(total_s, "duration", value))
    pos, total = 0, 0.0
    compact = text.replace(" ", "")
    for m in _DURATION_PART.finditer(compact):
        if m.start() != pos:
            break
        total += float(m.group(1)) * DURATION_UNITS[m.group(2)]
        pos = m.end()
    if pos == 0 or pos != len(compact):
        raise QuantityError(f'expected a duration such as 30s, 45min, 48h or 7d, got "{value}"')
    return math.ceil(_in_range(total, "duration", value))


def parse_percent(value: object) -> float:
    """A fraction of 1 from "80%"."""
    if isinstance(value, str):
        m = _PERCENT_RE.match(value.strip())
        if m:
            return _in_range(float(m.group(1)), "percentage", value) / 100
    raise QuantityError(f'expected a percentage such as 80%, got "{value}"')


def format_memory(mib: int) -> str:
    """The shortest exact spelling: 2TiB, 192GiB, 1536MiB."""
    for unit, size in (("TiB", 1024 * 1024), ("GiB", 1024)):
        if mib and mib % size == 0:
            return f"{mib // size}{unit}"
    return f"{mib}MiB"


def format_duration(seconds: int) -> str:
    """The shortest exact spelling: 7d, 48h, 45min, 30s."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def slurm_time(seconds: int) -> str:
    """Slurm's --time form, D-HH:MM:SS, rounded up to whole minutes as Slurm does."""
    minutes = -(-seconds // 60)
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    return f"{days}-{hours:02d}:{mins:02d}:00" if days else f"{hours:02d}:{mins:02d}:00"
