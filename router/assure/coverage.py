"""Which parts of the policy the test cases exercised.

Items: every deny rule (a case was denied by it), every rule (a case was claimed by it) and
every route clause of every rule: its `route` (rank 0) and each `else route` fallback (rank
1, 2, ...) is covered when a case was placed through it. The percentage is covered items over
all items; `--coverage-threshold N` fails below N.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from router.assure.cases import CaseResult
from router.language import ast


@dataclass
class Item:
    kind: str  # "deny", "rule", "route"
    name: str  # the deny/rule name; for a route "rule[rank]"
    source: str  # file:line
    covered_by: list[str]
    rank: int | None = None

    @property
    def covered(self) -> bool:
        return bool(self.covered_by)


@dataclass
class Coverage:
    items: list[Item]

    @property
    def covered(self) -> int:
        return sum(1 for i in self.items if i.covered)

    @property
    def percent(self) -> float:
        return 100.0 * self.covered / len(self.items) if self.items else 100.0

    def by_kind(self) -> dict[str, tuple[int, int]]:
        out: dict[str, tuple[int, int]] = {}
        for kind in ("deny", "rule", "route"):
            items = [i for i in self.items if i.kind == kind]
            out[kind] = (sum(1 for i in items if i.covered), len(items))
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "percent": round(self.percent, 2),
            "covered": self.covered,
            "total": len(self.items),
            "by_kind": {k: {"covered": c, "total": t} for k, (c, t) in self.by_kind().items()},
            "items": [
                {
                    "kind": i.kind,
                    "name": i.name,
                    "source": i.source,
                    "rank": i.rank,
                    "covered": i.covered,
                    "cases": i.covered_by,
                }
                for i in self.items
            ],
        }


def _src(span: Any) -> str:
    return f"{span.path}:{span.line}"


def coverage(policy: ast.Policy, results: list[CaseResult]) -> Coverage:
    items: dict[tuple[str, str, int | None], Item] = {}
    for d in policy.denies:
        items[("deny", d.name, None)] = Item("deny", d.name, _src(d.span), [])
    for r in policy.rules:
        items[("rule", r.name, None)] = Item("rule", r.name, _src(r.span), [])
        for rank, route in enumerate(r.routes):
            word = "route" if rank == 0 else "else route"
            items[("route", r.name, rank)] = Item(
                "route", f"{r.name} {word} {route.backend}", _src(route.span), [], rank
            )
    for res in results:
        got = res.got
        if got is None or got.rule is None:
            continue
        kind = "deny" if got.denied else "rule"
        if (kind, got.rule, None) in items:
            items[(kind, got.rule, None)].covered_by.append(res.case.name)
        if got.rank is not None and ("route", got.rule, got.rank) in items:
            items[("route", got.rule, got.rank)].covered_by.append(res.case.name)
    return Coverage(list(items.values()))
