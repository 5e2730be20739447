"""Reasons and fixes in words, shared by `router explain` and plan.json's `unplaced`.

Both print the same strings for the same plan: plan.json carries `reasons` (the minimal set)
and explain prints them with more detail around them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from router.evaluate.evaluate import Decision
from router.evaluate.views import workload_view
from router.explain.blocking import Blocking, Key, Overflow, PlanState, blocking, smallest_fix
from router.explain.conditions import WhereValues, merged
from router.language import ast
from router.language.fmt import format_expr
from router.models import TargetRef
from router.models.fields import PRIORITIES
from router.quantity import format_memory
from router.solve.problem import Row

Relative = Callable[[str], str]
_PRIORITY_NAMES = {v: k for k, v in PRIORITIES.items()}
_NODES_SHORT = re.compile(r"^(\d+) nodes < (\d+) needed$")
_GPU_TYPE = re.compile(r"^has (\S+) GPUs, the workload asks for (\S+)$")


def priority_name(p: int) -> str:
    return _PRIORITY_NAMES.get(p, str(p))


def amount(resource: str, n: int) -> str:
    return format_memory(n) if resource == "memory" else str(n)


def source_of(location: str, rel: Relative) -> str:
    """`path:line:col` (a Span location) as `relative/path:line`."""
    parts = location.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit():
        return f"{rel(parts[0])}:{parts[1]}"
    return location


@dataclass
class Summary:
    """Why a routed workload is not placed: minimal reasons and the smallest change."""

    reasons: list[str]
    fix: str | None
    blocking: Blocking | None = None


def _target_of(state: PlanState, b: Blocking, key: Key) -> TargetRef | None:
    for v in b.candidates:
        c = state.problem.variables[v][1]
        if c.target.id == key[1]:
            return c.target
    return None


def _nodes_needed(ref: TargetRef, overs: list[Overflow], kinds: list[str]) -> int:
    """The fewest more nodes that cover each row's shortfall: a row's short amount over what
    one node has of it (a mig-<profile> row's unit is the node's slices of that profile)."""
    t = ref.target
    per_node = {"gpus": t.gpus_per_node, "cpus": t.cpus_per_node, "memory": t.memory_per_node}
    per_node.update({f"mig-{p}": n for p, n in t.slices_per_node.items()})
    more = 0
    for o, kind in zip(overs, kinds, strict=True):
        short = o.used + o.need - o.rhs
        unit = 1 if kind == "nodes" else per_node.get(kind, 0)
        more = max(more, -(-short // unit) if unit else short)
    return more


def reason_text(
    state: PlanState, b: Blocking, key: Key, rel: Relative, only: int | None = None
) -> str:
    """One reason, with its numbers (at candidate `only`, or over every candidate it blocks)."""
    vs = [only] if only is not None else b.blocked_by(key)
    overs = [o for v in vs for o in b.overflows[v].get(key, [])]
    if key[0] == "capacity":
        # The nodes decide (noderoom.py); the sums, where they are short too, follow.
        texts = sorted({o.text for o in overs if o.text})
        sums: list[str] = []
        for o in sorted(overs, key=lambda o: state.agg.rows[o.row].resource):
            res = state.agg.rows[o.row].resource
            part = (
                f"{res} {amount(res, o.used)} of {amount(res, o.rhs)} used, "
                f"needs {amount(res, o.need)}"
            )
            # A capacity of 0 (running work holds it all) says nothing the nodes do not.
            if o.used + o.need > o.rhs and o.rhs and part not in sums:
                sums.append(part)
        notes = _oversubscribed(state, key[1]) + _forced(state, b, key)
        ref = _target_of(state, b, key)
        if any(state.agg.rows[o.row].resource == "nodes" for o in overs) or (
            ref is not None and ref.target.nodes == 1
        ):
            sums = []  # whole nodes, or one node: the nodes' words said it all
        if texts and "running work" in texts[0]:
            sums = []  # the sums are of what running work left: the words say it plainer
        if texts:
            total = f" (in all: {'; '.join(sums)})" if sums else ""
            return "; ".join([texts[0] + total, *texts[1:], *notes])
        return f"{key[1]} is full: " + "; ".join(sums + notes)
    row = state.agg.rows[overs[0].row]
    need = min(o.need for o in overs)
    where = f" ({source_of(row.source, rel)})" if row.source else ""
    blocked = sorted({state.problem.variables[v][1].target.id for v in vs})
    every = "all " if len(blocked) == len(b.candidates) else ""
    on = f"; blocks {every}{len(blocked)} candidates" if len(blocked) > 1 and only is None else ""
    if row.kind == "spread":
        return f"{spread_text(row, overs[0].used, rel)}{on}"
    share = f" ({row.detail[0]})" if row.kind == "quota" and row.detail else ""
    return (
        f"{row.kind} {row.subject}{where} on {row.resource}: "
        f"{amount(row.resource, overs[0].used)} of {amount(row.resource, row.rhs)}{share} "
        f"used, needs {amount(row.resource, need)}{on}"
    )


def _oversubscribed(state: PlanState, tid: str) -> list[str]:
    """The notes of the target's nodes whose running work holds more than they have (an
    OverSubscribe=FORCE partition's jobs on shared CPUs): why a node counts as full."""
    for cap in state.agg.capacity or []:
        sets = cap.sets_of.get(tid)
        if sets is not None:
            return [n for s in sorted(sets) for n in cap.over.get(s, [])]
    return []


def _forced(state: PlanState, b: Blocking, key: Key) -> list[str]:
    """What the plan assumes on an OverSubscribe=FORCE partition: each CPU is one job's."""
    ref = _target_of(state, b, key)
    mode = getattr(ref.target, "oversubscribe", None) if ref else None
    if not mode or not mode.startswith("force"):
        return []
    n = mode.partition(":")[2] or "4"  # Slurm's FORCE alone is FORCE:4
    return [
        f"{key[1]} shares each CPU among up to {n} jobs (OverSubscribe={mode.upper()}); "
        "the plan counts every CPU as one job's, so a CPU that running work holds is full"
    ]


def spread_text(row: Row, used: int, rel: Relative, has: str = "already has") -> str:
    """A spread row in words: "spread web (p.route:3): app=web already has 1 of at most 1 on
    cluster k8s-prod"."""
    where = f" ({source_of(row.source, rel)})" if row.source else ""
    if len(row.detail) != 3:
        return f"spread {row.subject}{where} {row.resource}: {used} of at most {row.rhs}"
    group, attribute, value = row.detail
    return (
        f"spread {row.subject}{where}: {group} {has} {used} of at most {row.rhs} "
        f"on {attribute} {value}"
    )


def change_text(state: PlanState, b: Blocking, key: Key, v: int, rel: Relative) -> str:
    """The smallest change to `key` that lets candidate v through."""
    overs = b.overflows[v][key]
    if key[0] == "capacity":
        ref = _target_of(state, b, key)
        assert ref is not None
        kinds = [state.agg.rows[o.row].resource for o in overs]
        more = max([_nodes_needed(ref, overs, kinds), *(o.more_nodes for o in overs)])
        mx = getattr(ref.target, "max_nodes", None)
        if mx:
            return f"{ref.id} needs max_nodes {mx + more} (has {mx})"
        return f"{ref.id} needs {more} more node{'s' if more > 1 else ''} (has {ref.target.nodes})"
    row = state.agg.rows[overs[0].row]
    where = f" ({source_of(row.source, rel)})" if row.source else ""
    want = max(o.used + o.need for o in overs)
    if row.kind == "spread" and len(row.detail) == 3:
        return (
            f"spread {row.subject}{where} must allow {want} per {row.detail[1]}, "
            f"it allows {row.rhs}"
        )
    share = f" ({row.detail[0]})" if row.kind == "quota" and row.detail else ""
    return (
        f"{row.kind} {row.subject}{where} must allow {amount(row.resource, want)} "
        f"{row.resource}, it allows {amount(row.resource, row.rhs)}{share}"
    )


def _cost(state: PlanState, b: Blocking) -> Callable[[Key, list[Overflow]], float]:
    def cost(key: Key, overs: list[Overflow]) -> float:
        return max((o.used + o.need - o.rhs) / max(o.rhs, 1) for o in overs)

    return cost


def fix_text(state: PlanState, b: Blocking, rel: Relative) -> str | None:
    best = smallest_fix(b, _cost(state, b))
    if best is None:
        return None
    v, keys = best
    target = state.problem.variables[v][1].target.id
    changes = " and ".join(change_text(state, b, k, v, rel) for k in keys)
    return f"{changes} (then it fits on {target})"


def exclusion_groups(
    d: Decision, rel: Relative, values: WhereValues | None = None
) -> list[tuple[list[str], str]]:
    """Shape and `where` exclusions, identical reasons grouped: [(targets, reason)]. With
    `values`, a `where` says what it read: each part that is false on some of its targets,
    with the values it compared (conditions.merged)."""
    groups: dict[str, list[str]] = {}
    types: dict[str, set[str]] = {}  # GPU-type mismatches group over the targets' types
    wheres: dict[int, str] = {}  # per route: its `where` in words, made once
    read: dict[str, list[list[tuple[str, str]]]] = {}  # group -> each target's parts
    wv = workload_view(d.workload) if values is not None else None
    readers: dict[int, Callable[[str], list[tuple[str, str]]]] = {}  # per route's `where`
    for e in sorted(d.excluded, key=lambda e: (e.rank, e.target)):
        m = _GPU_TYPE.match(e.reason) if e.kind == "shape" else None
        if e.kind == "where" and isinstance(d.rule, ast.Rule):
            where = d.rule.routes[e.rank].where
            terms: list[tuple[str, str]] = []
            if where is not None and values is not None and wv is not None:
                reader = readers.get(e.rank)
                if reader is None:
                    reader = readers[e.rank] = values.reader(where, wv)
                terms = reader(e.target)
            if terms:
                text = f"\0where:{e.rank}"
                read.setdefault(text, []).append(terms)
            else:
                text = wheres.get(e.rank, "")
                if not text:
                    at = f" ({rel(where.span.path)}:{where.span.line})" if where else ""
                    said = f" `{format_expr(where)}`" if where else ""
                    text = wheres[e.rank] = f"excluded by the route's `where`{said}{at}"
        elif m:
            text = f"\0gpu:{m.group(2)}"
            types.setdefault(text, set()).add(m.group(1))
        else:
            text = e.reason
        groups.setdefault(text, []).append(e.target)

    def words(text: str) -> str:
        if text in types:
            return (
                f"has {', '.join(sorted(types[text]))} GPUs, the workload asks for "
                f"{text.split(':', 1)[1]}"
            )
        if text in read:
            assert isinstance(d.rule, ast.Rule)
            where = d.rule.routes[int(text.split(":")[1])].where
            assert where is not None
            at = f"{rel(where.span.path)}:{where.span.line}"
            return f"excluded by the route's `where` ({at}): {merged(read[text])}"
        return text

    return [(ts, words(text)) for text, ts in groups.items()]


NOT_A_CANDIDATE = "not a candidate: "
# Targets named in one reason; past it, "and N more" (`router explain` lists them all).
NAMED = 8


def group_text(targets: list[str], reason: str) -> str:
    if len(targets) == 1:
        return f"{targets[0]}: {reason}"
    named = ", ".join(targets[:NAMED])
    more = f" and {len(targets) - NAMED} more" if len(targets) > NAMED else ""
    return f"{len(targets)} targets ({named}{more}): {reason}"


# GPUs of another kind (or none): not where the workload could ever run, so not named among
# the reasons of a workload that has candidates (`router explain` lists every exclusion).
_OTHER_GPUS = re.compile(
    r"^(has \S+ GPUs, the workload asks for|has no GPUs|has no whole GPUs|has GPUs of no stated "
    r"type|offers no MIG profile)"
)


def excluded_texts(d: Decision, rel: Relative, values: WhereValues | None = None) -> list[str]:
    """For a workload with candidates, the targets its rule could have used but did not, as
    reasons too: a partition whose max_time is too short is why a job waits for a full one;
    a `where` on labels or features, a taint, an account, likewise."""
    kept = [e for e in d.excluded if e.kind != "shape" or not _OTHER_GPUS.match(e.reason)]
    if not kept:
        return []
    return [
        f"{NOT_A_CANDIDATE}{group_text(ts, r)}"
        for ts, r in exclusion_groups(replace(d, excluded=kept), rel, values)
    ]


def shape_fix(d: Decision) -> str | None:
    """For a workload no target can hold: the fewest nodes to add to a target too small."""
    best: tuple[int, str] | None = None
    for e in d.excluded:
        m = _NODES_SHORT.match(e.reason) if e.kind == "shape" else None
        if m:
            has, needed = int(m.group(1)), int(m.group(2))
            text = (
                f"{e.target} needs {needed - has} more nodes "
                f"(has {has}, the workload needs {needed} there)"
            )
            if best is None or (needed - has, text) < best:
                best = (needed - has, text)
    return best[1] if best else None


def summarise(
    d: Decision,
    state: PlanState | None,
    rel: Relative,
    solver_status: str = "OPTIMAL",
    cache: dict[int, Summary] | None = None,
    values: WhereValues | None = None,
) -> Summary:
    """The minimal reasons a routed workload is unplaced, and the smallest change. With a
    `cache` (one per PlanState, status and `rel`), workloads of one class (class_key)
    share one computation; the Summary returned then has its own lists but no `blocking`."""
    if not d.candidates:
        if not d.excluded:
            return Summary(["no target of the rule's backend exists in the inventory"], None)
        groups = exclusion_groups(d, rel, values)
        return Summary([group_text(ts, r) for ts, r in groups], shape_fix(d))
    assert state is not None
    i = state.index[d.workload.name]
    said = (d.signature, rel) if d.signature != () else None
    excluded = state.excluded.get(said) if said else None
    if excluded is None:
        excluded = excluded_texts(d, rel, values)
        if said:
            state.excluded[said] = excluded
    if cache is None:
        s = _summary(state, i, rel, solver_status)
        return Summary(s.reasons + excluded, s.fix, s.blocking)
    key = state.class_key(i)
    found = cache.get(key)
    if found is None:
        found = cache[key] = _summary(state, i, rel, solver_status)
    return Summary(found.reasons + excluded, found.fix)


def _summary(state: PlanState, i: int, rel: Relative, solver_status: str) -> Summary:
    b = blocking(state, i)
    if b.fits_alone:
        free = [state.problem.variables[v][1].target.id for v in b.candidates if not b.overflows[v]]
        return Summary(
            [
                f"{free[0]}: fits next to the placed work, but the solver stopped "
                f"at its limit ({solver_status}) before placing it"
            ],
            None,
            b,
        )
    return Summary([reason_text(state, b, k, rel) for k in b.core], fix_text(state, b, rel), b)
