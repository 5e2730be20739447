"""The difference between two plans, as Terraform shows one: what is added, moved, removed.

Both sides are plan documents (the dicts `plan_document` builds, or a plan.json read back),
so a diff against a file and a diff against a git revision are the same computation.

Per workload, its state in a plan is one of: placed on a target, denied, unrouted, unplaced,
or absent (not in the workloads at all). A change is one of

  +  add       newly placed: absent or not placed before, placed now
  ~  move      placed on another target than before (from → to, with the rule that decided)
  -  remove    in the previous plan, gone from the workloads now
  !  unplaced  newly denied, unrouted or unplaced: absent or placed before, or not placed
               for another reason (denied before, unplaced now)
  *  update    same target, but what is asked of it changed (resources, options, rule, kind)

The summary line counts them: "Plan: 3 to add, 2 to move, 1 to remove, 1 unplaced", with
", N to update" appended only when some placement changed in place, so the line reads as the
issue's form whenever nothing changed in place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ACTIONS = ("add", "move", "remove", "unplaced", "update")
SYMBOLS = {"add": "+", "move": "~", "remove": "-", "unplaced": "!", "update": "*"}
# Fields of a placement whose change, on the same target, is an in-place update.
_COMPARED = ("kind", "options", "resources", "rule", "team")


@dataclass(frozen=True)
class State:
    status: str  # placed | denied | unrouted | unplaced | absent
    target: str | None = None  # target id when placed
    rule: str | None = None
    rule_source: str | None = None
    reason: str | None = None  # why not placed
    placement: dict[str, Any] | None = None

    @property
    def where(self) -> str:
        """What the diff prints for this side: the target id, or the status in words."""
        return self.target if self.status == "placed" and self.target else self.status


def states(doc: dict[str, Any]) -> dict[str, State]:
    """Each workload of a plan document and its state."""
    out: dict[str, State] = {}
    for p in doc.get("placements", []):
        out[p["workload"]] = State(
            "placed", p["target_id"], p.get("rule"), p.get("rule_source"), placement=p
        )
    for d in doc.get("denied", []):
        out[d["workload"]] = State(
            "denied", None, d.get("rule"), d.get("rule_source"), d.get("message")
        )
    for u in doc.get("unrouted", []):
        out[u["workload"]] = State("unrouted", reason="; ".join(u.get("reasons", [])))
    for u in doc.get("unplaced", []):
        out[u["workload"]] = State(
            "unplaced", None, u.get("rule"), reason=short_reason(u.get("reasons", []))
        )
    return out


def short_reason(reasons: list[str]) -> str | None:
    """One line for why a workload is unplaced: the first reason that is not a route's
    `where` excluding a target (those say little alone), and how many more there are."""
    if not reasons:
        return None
    telling = [r for r in reasons if "excluded by the route's `where`" not in r]
    if not telling:
        where = reasons[0].partition("excluded by ")[2]
        return f"every target excluded by {where}"
    more = len(reasons) - 1
    return telling[0] + (f" (and {more} more)" if more else "")


def _changed_fields(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[str]:
    if before is None or after is None:
        return []
    return [k for k in _COMPARED if before.get(k) != after.get(k)]


def _change(name: str, action: str, old: State, new: State, **extra: Any) -> dict[str, Any]:
    decided = new if new.status != "absent" else old
    entry: dict[str, Any] = {
        "action": action,
        "from": old.where,
        "reason": new.reason if action == "unplaced" else None,
        "rule": decided.rule,
        "rule_source": decided.rule_source,
        "symbol": SYMBOLS[action],
        "to": new.where,
        "workload": name,
    }
    if old.rule != new.rule and old.rule and new.rule and action in ("move", "update"):
        entry["previous_rule"] = old.rule
    entry.update(extra)
    return entry


def diff_documents(
    previous: dict[str, Any], current: dict[str, Any], against: str
) -> dict[str, Any]:
    """The `diff` object of plan.json: changes sorted by workload, and their counts."""
    before, after = states(previous), states(current)
    absent = State("absent")
    changes: list[dict[str, Any]] = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name, absent), after.get(name, absent)
        if new.status == "absent":
            changes.append(_change(name, "remove", old, new))
        elif new.status == "placed":
            if old.status != "placed":
                changes.append(_change(name, "add", old, new))
            elif old.target != new.target:
                changes.append(_change(name, "move", old, new))
            else:
                fields = _changed_fields(old.placement, new.placement)
                if fields:
                    changes.append(_change(name, "update", old, new, changed=fields))
        elif old.status != new.status:
            changes.append(_change(name, "unplaced", old, new))
    counts = {a: sum(1 for c in changes if c["action"] == a) for a in ACTIONS}
    return {"against": against, "changed": bool(changes), "changes": changes, "summary": counts}


def diff_summary_line(diff: dict[str, Any]) -> str:
    s = diff["summary"]
    line = (
        f"Plan: {s['add']} to add, {s['move']} to move, {s['remove']} to remove, "
        f"{s['unplaced']} unplaced"
    )
    if s.get("update"):
        line += f", {s['update']} to update"
    return line


def change_line(c: dict[str, Any]) -> str:
    """One change for a terminal or a log: `~ name  from → to  (rule r, file:line)`."""
    name, action = c["workload"], c["action"]
    if action == "add":
        what = c["to"] if c["from"] == "absent" else f"{c['to']} (was {c['from']})"
    elif action == "remove":
        what = f"(was {c['from']})"
    elif action == "update":
        what = f"{c['to']} (changed: {', '.join(c.get('changed', []))})"
    else:
        what = f"{c['from']} → {c['to']}"
    rule = ""
    if c.get("rule"):
        was = f", was {c['previous_rule']}" if c.get("previous_rule") else ""
        at = f", {c['rule_source']}" if c.get("rule_source") else ""
        rule = f"  (rule {c['rule']}{was}{at})"
    reason = f": {c['reason']}" if action == "unplaced" and c.get("reason") else ""
    return f"{c['symbol']} {name}  {what}{rule}{reason}"
