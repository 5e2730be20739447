"""Slurm hostlists: "cn[001-003,010],login1" ⇄ node names, in the order written.

`expand` reads what Slurm prints (several brackets per name, "r[1-2]n[1-2]"; zero padding
kept per range); `compress` writes names back as compactly as order allows: a run of names
that differ only in their last number becomes one range, so 4,096 nodes "gpu0001".."gpu4096"
are "gpu[0001-4096]". expand(compress(names)) == names for any names without brackets or
commas, whatever their order (a name out of order starts a new bracket rather than being sorted).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

__all__ = ["MAX_NAMES", "compress", "expand", "split_top"]

MAX_NAMES = 1_000_000  # a hostlist that names more is refused before it is expanded
_BRACKET = re.compile(r"^([^\[\],]*)\[([^\]]*)\](.*)$")
_LAST_NUMBER = re.compile(r"^(.*?)(\d+)(\D*)$")
_EMPTY = ("(NULL)", "N/A")


def expand(text: str) -> list[str]:
    """The names of a hostlist; ValueError when it is not one (a range that is not numeric,
    a bracket left open, more than MAX_NAMES names)."""
    parts = _split_top(text.strip())
    if count(parts) > MAX_NAMES:
        raise ValueError(f"the hostlist {_show(text)} names more than {MAX_NAMES:,} nodes")
    return [name for part in parts for name in _expand_one(part, text)]


def _show(text: str) -> str:
    """Text from a user or a cluster, quoted and escaped (it cannot forge output)."""
    return json.dumps(text[:60] + ("..." if len(text) > 60 else ""), ensure_ascii=False)


def count(parts: Sequence[str]) -> int:
    """How many names these top-level hostlist parts hold, without expanding them."""
    total = 0
    for part in parts:
        n, rest = 1, part
        while (m := _BRACKET.match(rest)) is not None:
            n *= sum(_width(item) for item in m.group(2).split(","))
            rest = m.group(3)
        total += n
    return total


def _width(item: str) -> int:
    lo, _, hi = item.partition("-")
    if lo.isdigit() and hi.isdigit():
        return max(0, int(hi) - int(lo) + 1)
    return 1


def split_top(text: str, brackets: str = "[]") -> list[str]:
    """The comma-separated parts of Slurm text, split only at commas outside `brackets`
    (hostlists "cn[1,3],x": "[]"; GRES "gpu:h100:8(S:0-1),shard:4": "()"), stripped, empty
    parts left out."""
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += (ch == brackets[0]) - (ch == brackets[1])
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return [p.strip() for p in [*parts, current] if p.strip()]


def _split_top(text: str) -> list[str]:
    return [p for p in split_top(text) if p.upper() not in _EMPTY]


def _expand_one(part: str, whole: str) -> list[str]:
    m = _BRACKET.match(part)
    if m is None:
        if "[" in part or "]" in part:
            raise ValueError(f"{_show(whole)} is not a Slurm hostlist (a bracket is not closed)")
        return [part]
    head, body, tail = m.groups()
    out = []
    for item in body.split(","):
        lo, dash, hi = item.partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            raise ValueError(
                f"{_show(whole)} is not a Slurm hostlist ({_show(item)} is not a range)"
            )
        width = len(lo)
        out += [f"{head}{i:0{width}d}" for i in range(int(lo), int(hi or lo) + 1)]
    return [name + rest for name in out for rest in _expand_one(tail, whole)] if tail else out


def compress(names: Sequence[str]) -> str:
    """One hostlist for these names, in their order (see the module docstring)."""
    groups: list[tuple[str, str, list[list[str]]]] = []  # (head, tail, [[first, last], ...])
    for name in names:
        m = _LAST_NUMBER.match(name)
        if m is None or not m.group(1):  # no number, or nothing before it: written as is
            groups.append((name, "", []))
            continue
        head, digits, tail = m.groups()
        if groups and groups[-1][2] and groups[-1][:2] == (head, tail):
            ranges = groups[-1][2]
            first, last = ranges[-1]
            n = int(digits)
            if n == int(last) + 1 and digits == f"{n:0{len(first)}d}":
                ranges[-1][1] = digits
                continue
            if n > int(last):
                ranges.append([digits, digits])
                continue
        groups.append((head, tail, [[digits, digits]]))
    out = []
    for head, tail, ranges in groups:
        if not ranges:
            out.append(head)
        elif len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
            out.append(f"{head}{ranges[0][0]}{tail}")
        else:
            body = ",".join(a if a == b else f"{a}-{b}" for a, b in ranges)
            out.append(f"{head}[{body}]{tail}")
    return ",".join(out)
