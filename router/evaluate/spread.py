"""Spreads as hard limits: which workloads form each group, and how many of one group may share
one value of a target attribute.

    spread web_replicas:
      for kind == "inference"      # optional: which workloads (default: every workload)
      by labels.app                # the group: workloads with the same value form one group
      across cluster               # the target attribute whose values must differ
      max 1                        # optional: at most N of a group on one value

Meaning:
- Workloads that satisfy `for` are grouped by the value of `by`. A workload whose `by` value is
  missing (None, e.g. no `app` label) is in no group. Only routed workloads (those with at
  least one candidate target) count; a group of fewer than two is ignored.
- For each group g and each value a of the `across` attribute among the candidate targets of
  g's members: at most max_g members of g are placed on targets whose attribute is a. max_g is
  `max N` if given, else the even share ceil(|g| / k_g), where k_g is the number of distinct
  values of the attribute over all of g's members' candidate targets.
- `across target` means the target itself (its id, cluster/name); `across name` the target's
  name, which two clusters may share. A target without a value (no such label) counts as one
  value of its own, "none", so an unlabelled target cannot be used to dodge the spread.
- It is a hard constraint like a quota: one `spread` row per group and value (aggregate.py),
  read by the solver, the LP bound and the explanations alike. Rows that can never bind (the
  members that could go there are at most max_g) are not written.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from router.evaluate.expr import Compiled, View, compile_expr, constant_value
from router.evaluate.views import target_view
from router.language import ast
from router.models import Inventory


@dataclass
class SpreadLimit:
    spread: ast.Spread
    members: Compiled | None  # the `for` condition over the workload view
    by: Compiled  # the group's value over the workload view
    by_text: str  # how a group is named in reasons: "app" for labels.app, else as written
    attribute: str  # the `across` attribute as written: "cluster", "labels.zone", "target"
    values: dict[str, Hashable]  # target id -> its `across` value (None: it has none)
    most: int | None  # `max N`; None: an even share

    @property
    def name(self) -> str:
        return self.spread.name

    @property
    def source(self) -> str:
        return self.spread.span.location()

    def group(self, view: View) -> Hashable | None:
        """The group of a workload (its `by` value), or None when it is in none."""
        if self.members is not None and not self.members(view, {}):
            return None
        value: Hashable | None = self.by(view, {})
        return value

    def limit(self, size: int, places: int) -> int:
        """max_g for a group of `size` members over `places` distinct attribute values."""
        if self.most is not None:
            return self.most
        return -(-size // max(places, 1))

    def group_text(self, value: Hashable) -> str:
        return f"{self.by_text}={show(value)}"


def show(value: Any) -> str:
    """A group or attribute value in words."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def order(value: Hashable | None) -> tuple[bool, str, str]:
    """A total order over group and attribute values (of mixed types, None last)."""
    return (value is None, type(value).__name__, show(value))


def _by_text(by: ast.Expr) -> str:
    if isinstance(by, ast.Name) and by.scope == "workload" and by.field:
        return by.key if by.key is not None else by.field
    from router.language.fmt import format_expr

    return format_expr(by)


def compile_spreads(policy: ast.Policy, inventory: Inventory) -> list[SpreadLimit]:
    c: dict[str, Any] = policy.constants
    out: list[SpreadLimit] = []
    for sp in policy.spreads:
        attribute = compile_expr(sp.across, c)
        values = {r.id: attribute({}, target_view(r)) for r in inventory.targets()}
        members = compile_expr(sp.for_, c) if sp.for_ is not None else None
        most = int(constant_value(sp.max, c)) if sp.max is not None else None
        out.append(
            SpreadLimit(
                sp,
                members,
                compile_expr(sp.by, c),
                _by_text(sp.by),
                ".".join(sp.across.parts),
                values,
                most,
            )
        )
    return out
