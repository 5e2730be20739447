"""The workload files scanned in a forked child while `router plan` goes on.

`router plan` spends its first second on one core: importing, then reading every input,
then evaluating. Scanning the workload files (blockyaml.scan: ~0.14 s at 10,000 workloads)
needs nothing that is still to come, so start() forks a child that reads and scans them
while this process imports CP-SAT and reads the policy and the inventory; the loader then
takes each file's items from it (scanned), where the text it read is the very text the
child scanned. Anything else (no fork, a child that failed, a file not read or changed
since) means the file is scanned here, as without it: the items are the same either way
(scan is a function of the text). A command line only, as the collector's pause is.
"""

from __future__ import annotations

from pathlib import Path

from router.errors import RouterError
from router.fork import Started, can_fork
from router.fork import start as start_child
from router.models.blockyaml import Item, plain_reader, scan
from router.models.yamlsource import Builder, read_source

_PENDING: list[Started[dict[str, tuple[str, list[Item] | None]]]] = []
_SCANNED: dict[str, tuple[str, list[Item] | None]] = {}


def start(files: list[tuple[Path, str]]) -> None:
    """Scan the workload `files` (loader.workload_files: path, display name) in a child,
    from now."""
    cancel()
    if not can_fork():
        return

    def scan_all() -> dict[str, tuple[str, list[Item] | None]]:
        out: dict[str, tuple[str, list[Item] | None]] = {}
        for file, display in files:
            try:
                source = read_source(file, display)
            except RouterError:
                continue
            out[display] = (source.text, scan(source.text, plain_reader(Builder(source))))
        return out

    _PENDING.append(start_child(scan_all))


def scanned(display: str, text: str) -> tuple[bool, list[Item] | None]:
    """(True, the child's scan of this file's `text`) if it scanned that text, else
    (False, None): then the caller scans it."""
    if _PENDING:
        try:
            _SCANNED.update(_PENDING.pop().result())
        except Exception:  # a child that failed: every file is scanned here
            _SCANNED.clear()
    got = _SCANNED.pop(display, None)
    if got is None or got[0] != text:
        return False, None
    return True, got[1]


def cancel() -> None:
    """The child killed if its scan was not taken, and what it scanned forgotten."""
    while _PENDING:
        _PENDING.pop().cancel()
    _SCANNED.clear()
