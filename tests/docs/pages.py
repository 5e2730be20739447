"""The examples of the docs/ pages, read from their fenced blocks, planned by the tests.

A page's ```yaml inventory``` and ```yaml workloads``` blocks are the platform its examples
are planned on. Each ```route``` block is a whole policy: it must parse, check and plan on
that platform, and its `#>` lines say what the plan must hold:

    #> WORKLOAD placed TARGET_ID     placed there
    #> WORKLOAD denied|unrouted|unplaced
    #> WORKLOAD emits TEXT           some file written for WORKLOAD contains TEXT
    #> WORKLOAD option NAME = JSON   the placement's option NAME has that value
    #> check NAME proven|refuted     `router test` says so of the check block NAME

A ```route error``` block must fail to load, and the ```text``` block right after it is
the error as the command line prints it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

import router

DOCS = Path(__file__).resolve().parents[2] / "docs"
_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.S | re.M)


@dataclass
class Block:
    info: str  # the fence's info string: "route", "yaml inventory", "route error", ...
    text: str
    line: int  # of the opening fence

    @property
    def kind(self) -> str:
        return self.info.split()[0] if self.info.split() else ""

    @property
    def label(self) -> str:
        return " ".join(self.info.split()[1:])


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    return [
        Block(m.group(1).strip(), m.group(2), text[: m.start()].count("\n") + 1)
        for m in _FENCE.finditer(text)
    ]


def platform_data(page: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    found = {b.label: b for b in blocks(page) if b.kind == "yaml"}
    return yaml.safe_load(found["inventory"].text), yaml.safe_load(found["workloads"].text)


def route_examples(page: Path) -> list[Block]:
    return [b for b in blocks(page) if b.kind == "route" and b.label != "error"]


def error_examples(page: Path) -> list[tuple[Block, Block]]:
    bs = blocks(page)
    return [(b, bs[i + 1]) for i, b in enumerate(bs) if b.info == "route error"]


def load(page: Path, block: Block) -> router.Platform:
    inventory, workloads = platform_data(page)
    return router.Platform.from_objects(policy=block.text, inventory=inventory, workloads=workloads)


def check_example(page: Path, block: Block) -> router.Plan:
    """Plan the example and assert each of its `#>` lines; the plan for further checks."""
    platform = load(page, block)
    plan = router.plan(platform)
    status: dict[str, str] = {}
    for d in plan.denied:
        status[d.workload.name] = "denied"
    for d in plan.unrouted:
        status[d.workload.name] = "unrouted"
    for u in plan.unplaced:
        status[u.decision.workload.name] = "unplaced"
    files: dict[str, str] | None = None
    tested = None
    for line in block.text.splitlines():
        if not line.lstrip().startswith("#>"):
            continue
        words = line.lstrip()[2:].split(maxsplit=2)
        where = f"{page.name}:{block.line}: {line.strip()}"
        if words[0] == "check":
            tested = tested or {c.name: c.status for c in router.test(platform).checks}
            assert tested.get(words[1]) == words[2], (where, tested)
            continue
        name, what = words[0], words[1]
        p = plan.placement(name)
        if what == "placed":
            assert p is not None, (where, status.get(name), _why(plan, name))
            assert p.target.id == words[2], (where, p.target.id)
        elif what in ("denied", "unrouted", "unplaced"):
            assert status.get(name) == what, (where, p.target.id if p else status.get(name))
        elif what == "emits":
            assert p is not None, (where, status.get(name))
            files = files or plan.files()
            mine = [text for path, text in files.items() if path in p.artifacts]
            assert any(words[2] in text for text in mine), (where, p.artifacts)
        elif what == "option":
            assert p is not None, (where, status.get(name))
            key, _, value = words[2].partition("=")
            assert p.options.get(key.strip()) == json.loads(value), (where, p.options)
        else:
            raise AssertionError(f"{where}: unknown expectation {what!r}")
    return plan


def _why(plan: router.Plan, name: str) -> list[str]:
    return next((u.reasons for u in plan.unplaced if u.decision.workload.name == name), [])
