"""`router explain`: everything the router decided about one workload, and why.

The answer is one JSON-able dict (printed as is with --format json, in words by render.py):
the deny rules and rules tried with file:line and the failing part of each `when`; the
candidates with rank and preference; every excluded target with its reason; and then either
the binding constraints of its placement, or the minimal reasons it could not be placed
(see blocking.py) with the smallest change that would let it in.
"""

from __future__ import annotations

from typing import Any

from router.evaluate.evaluate import Decision
from router.evaluate.views import target_view, workload_view
from router.explain.blocking import PlanState, best_displacement, overflows_at
from router.explain.conditions import WhereValues, failing_parts
from router.explain.reasons import (
    Relative,
    exclusion_groups,
    group_text,
    priority_name,
    reason_text,
    source_of,
    spread_text,
    summarise,
)
from router.language import ast
from router.models import Inventory


def _src(span: Any, rel: Relative) -> str:
    return f"{rel(span.path)}:{span.line}"


def policy_part(d: Decision, policy: ast.Policy, rel: Relative) -> dict[str, Any]:
    """Deny rules and rules tried, in order, with why each did (not) match."""
    c: dict[str, Any] = policy.constants
    wv = workload_view(d.workload)
    denies = {x.name: x for x in policy.denies}
    rules = {x.name: x for x in policy.rules}
    out: dict[str, Any] = {"deny_rules": [], "rules": []}
    for name in d.denies_tried:
        deny = denies[name]
        matched = d.status == "denied" and d.rule is deny
        out["deny_rules"].append(
            {
                "rule": name,
                "source": _src(deny.span, rel),
                "matched": matched,
                "why": [] if matched else failing_parts(deny.when, c, wv),
            }
        )
    if d.status == "denied" and isinstance(d.rule, ast.Deny):
        out["denied"] = {
            "rule": d.rule.name,
            "source": _src(d.rule.span, rel),
            "message": d.message,
        }
    for name in d.rules_tried:
        rule = rules[name]
        matched = d.rule is rule
        out["rules"].append(
            {
                "rule": name,
                "source": _src(rule.span, rel),
                "matched": matched,
                "why": [] if matched else failing_parts(rule.when, c, wv),
            }
        )
    return out


def targets_part(
    d: Decision, policy: ast.Policy, inventory: Inventory, rel: Relative
) -> dict[str, Any]:
    """Candidates (best first) and excluded targets, each with its reason."""
    assert isinstance(d.rule, ast.Rule)
    rule = d.rule
    refs = {r.id: r for r in inventory.targets()}
    wv = workload_view(d.workload)
    cands = sorted(d.candidates, key=lambda c: (c.rank, c.pref, c.target.id))
    excluded = []
    for e in sorted(d.excluded, key=lambda e: (e.rank, e.target)):
        item: dict[str, Any] = {
            "target": e.target,
            "rank": e.rank,
            "kind": e.kind,
            "reason": e.reason,
        }
        where = rule.routes[e.rank].where
        if e.kind == "where" and where is not None:
            item["reason"] = "excluded by the route's `where`"
            item["source"] = _src(where.span, rel)
            item["why"] = failing_parts(where, policy.constants, wv, target_view(refs[e.target]))
        excluded.append(item)
    return {
        "candidates": [
            {
                "target": c.target.id,
                "backend": c.target.backend,
                "rank": c.rank,
                "pref": c.pref,
                "route": _src(rule.routes[c.rank].span, rel),
            }
            for c in cands
        ],
        "excluded": excluded,
    }


def _who(state: PlanState, v: int, amount: int, resource: str) -> str:
    from router.explain.reasons import amount as fmt

    w = state.workload_of(v)
    return f"{w.name} (priority {priority_name(w.priority)}, {fmt(resource, amount)} {resource})"


def placed_part(d: Decision, state: PlanState, rel: Relative) -> dict[str, Any]:
    """Binding constraints at the chosen target, and whether it got its first choice."""
    from router.explain.reasons import amount

    i = state.index[d.workload.name]
    v = state.chosen[i]
    chosen = state.problem.variables[v][1]
    rows = []
    for r, coef in sorted(state.rows(v)):
        row = state.agg.rows[r]
        used = state.used[r]
        where = f" ({source_of(row.source, rel)})" if row.source else ""
        share = f" ({row.detail[0]})" if row.kind == "quota" and row.detail else ""
        text = (
            f"{row.kind} {row.subject}{where} {row.resource}: "
            f"{amount(row.resource, used)} of {amount(row.resource, row.rhs)}{share} used "
            f"(this workload {amount(row.resource, coef)})"
        )
        if row.kind == "spread":
            text = f"{spread_text(row, used, rel, has='has')}, this workload included"
        rows.append(
            {
                "kind": row.kind,
                "subject": row.subject,
                "resource": row.resource,
                "used": used,
                "capacity": row.rhs,
                "this_workload": coef,
                "tight": used == row.rhs,
                "text": text,
            }
        )
    best = min(
        state.problem.choices[i],
        key=lambda u: (
            state.problem.variables[u][1].rank,
            state.problem.variables[u][1].pref,
            state.problem.variables[u][1].target.id,
        ),
    )
    first = state.problem.variables[best][1]
    got_first = (chosen.rank, chosen.pref) == (first.rank, first.pref)
    out: dict[str, Any] = {
        "target": chosen.target.id,
        "rank": chosen.rank,
        "pref": chosen.pref,
        "rows": rows,
        "nodes": state.room.assigned(d.workload.name, chosen.target.id),
        "replicas": (
            {"min": chosen.resources.replicas_min, "max": chosen.resources.replicas_max}
            if chosen.resources.replicas_max
            else None
        ),
        "binding": [x["text"] for x in rows if x["tight"]],
        "first_choice": first.target.id if not got_first else chosen.target.id,
        "got_first_choice": got_first,
        "first_choice_blocked": [],
    }
    if not got_first:
        blocked = out["first_choice_blocked"]
        over = overflows_at(state, best, minus=v)
        for o in (o for _, overs in sorted(over.items()) for o in overs):
            if o.text:  # the nodes decide: what they have left, in words
                blocked.append(o.text)
                if o.used + o.need <= o.rhs:
                    continue  # the sums had room: no one took "its share"
            row = state.agg.rows[o.row]
            takers = sorted(state.members(o.row), key=lambda m: (-m[1], m[0]))
            takers = [(m, c) for m, c in takers if m != v]
            names = ", ".join(_who(state, m, c, row.resource) for m, c in takers[:5])
            more = f" and {len(takers) - 5} more" if len(takers) > 5 else ""
            if row.kind == "spread":
                names = ", ".join(state.workload_of(m).name for m, _ in takers[:5])
                blocked.append(f"{spread_text(row, o.used, rel)}; taken by {names}{more}")
                continue
            blocked.append(
                f"{row.kind} {row.subject} {row.resource}: {amount(row.resource, o.used)} "
                f"of {amount(row.resource, o.rhs)} used, needs {amount(row.resource, o.need)}"
                f"; taken by {names}{more}"
            )
        if not over:
            blocked.append(f"{first.target.id} had room: the solver stopped before moving it")
    return out


def unplaced_part(
    d: Decision,
    state: PlanState | None,
    rel: Relative,
    status: str,
    values: WhereValues | None = None,
) -> dict[str, Any]:
    s = summarise(d, state, rel, status, values=values)
    out: dict[str, Any] = {"reasons": s.reasons, "fix": s.fix}
    if not d.candidates:
        out["excluded_groups"] = [
            {"targets": ts, "reason": r, "text": group_text(ts, r)}
            for ts, r in exclusion_groups(d, rel, values)
        ]
        return out
    b = s.blocking
    assert state is not None and b is not None
    out["per_target"] = {
        state.problem.variables[v][1].target.id: [
            reason_text(state, b, k, rel, only=v) for k in sorted(b.overflows[v])
        ]
        for v in b.candidates
    }
    disp = best_displacement(state, b) if not b.fits_alone else None
    if disp is not None:
        v, displaced, weight = disp
        mine = state.weight(v, 0)
        ws = [state.workload_of(m) for m in displaced]
        names = ", ".join(f"{w.name} (priority {priority_name(w.priority)})" for w in ws)
        target = state.problem.variables[v][1].target.id
        out["displace"] = {
            "target": target,
            "workloads": [w.name for w in ws],
            "their_work": weight,
            "its_work": mine,
            "text": (
                f"placing it on {target} would displace {names}: placed work {weight} "
                f"{'>' if weight > mine else '=' if weight == mine else '<'} its {mine}"
            ),
        }
    return out


def explain(
    name: str,
    decision: Decision,
    policy: ast.Policy,
    inventory: Inventory,
    rel: Relative,
    state: PlanState | None = None,
    status: str = "OPTIMAL",
) -> dict[str, Any]:
    """The explanation of one workload; `state` (the plan's usage) is needed once it is
    routed to at least one candidate."""
    d = decision
    doc: dict[str, Any] = {"workload": name}
    doc.update(policy_part(d, policy, rel))
    if d.status != "routed":
        doc["status"] = d.status
        return doc
    assert isinstance(d.rule, ast.Rule)
    doc["rule"] = {"rule": d.rule.name, "source": _src(d.rule.span, rel)}
    doc.update(targets_part(d, policy, inventory, rel))
    placed = state is not None and state.index.get(name) in state.chosen
    if placed:
        assert state is not None
        doc["status"] = "placed"
        doc["placement"] = placed_part(d, state, rel)
    else:
        doc["status"] = "unplaced"
        values = WhereValues(policy.constants, inventory.targets())
        doc.update(unplaced_part(d, state, rel, status, values))
    return doc
