"""Identical workloads as one class with integer counts: the model the solver really solves.

Two routed workloads are identical when they have the same candidates (targets, ranks,
preference places, resources), the same priority weight, the same quota memberships, the
same spread groups and the same previous target. Any plan only ever needs to know how many
workloads of a class go to each of its targets, so the class gets one integer variable
y_kj ∈ [0, n_k] per candidate j with Σ_j y_kj ≤ n_k, and every row and level uses the class's
coefficient times y_kj. This is exact, not a relaxation: an integer solution splits back into
0/1 placements by giving the members of a class (in workload-name order) to its targets (in
target-id order).

The per-workload `Problem` (problem.py) is expanded from this one, so the CP-SAT model, the
LP bound, the greedy hint and the explanations all read the same rows.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from router.evaluate.evaluate import Candidate, Decision
from router.evaluate.quota import QuotaLimit, usage
from router.evaluate.spread import SpreadLimit, order, show
from router.evaluate.views import workload_view
from router.models import TargetRef
from router.solve.nodes import Capacity, Item, capacities, item_of

RESOURCES = ("gpus", "cpus", "memory")


@dataclass
class Row:
    """Σ coef · x[var] ≤ rhs, with what it stands for (for reports and explanations)."""

    terms: list[tuple[int, int]]  # (coefficient, variable index)
    rhs: int
    kind: str  # "capacity" | "nodes" | "quota" | "spread"
    subject: str  # target id, quota or spread name
    resource: str  # spread rows: "app=web on cluster=k8s-prod"
    source: str = ""  # file:line for quotas and spreads
    # spread rows: (group, attribute, value), e.g. ("app=web", "cluster", "k8s-prod");
    # percentage quota rows: (what it is a share of,), e.g. ("75% of 12",)
    detail: tuple[str, ...] = ()


@dataclass
class Level:
    name: str
    sense: int  # +1 maximise, -1 minimise
    terms: list[tuple[int, int]]


@dataclass
class Group:
    """A class of identical routed workloads."""

    members: list[int]  # indices into Aggregate.routed, sorted by workload name
    candidates: list[Candidate]  # the first member's (all members' are equal)
    weight: int  # level 1 coefficient per member: priority weight × work
    priority_weight: int
    previous: str | None
    quotas: tuple[bool, ...]  # member of each quota limit's `for`, in order
    spreads: tuple[Hashable, ...] = ()  # group in each spread (None: in none), in order
    preemptible: bool = False  # planned members may give up their place to anyone (preempt.py)


@dataclass
class Aggregate:
    routed: list[Decision]
    groups: list[Group]
    variables: list[tuple[int, int]]  # index -> (group, candidate index)
    choices: list[list[int]]  # per group, its variable indices
    rows: list[Row] = field(default_factory=list)
    levels: list[Level] = field(default_factory=list)
    # With a previous plan (preempt.py): the least placed count of each class, and the hint
    # that puts planned work back where it was.
    floors: list[int] = field(default_factory=list)
    start: list[int] | None = None
    # The real nodes (nodes.py): capacity components, and per variable its component and
    # what one member takes of it.
    capacity: list[Capacity] = field(default_factory=list)
    cap_of: list[int] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)
    allowed: list[frozenset[str]] = field(default_factory=list)  # per variable: its node sets
    nodes: Any = None  # the packing checks and their witnesses (benders.Nodes)
    touches: list[list[tuple[int, int]]] | None = None  # greedy.rows_of, once built
    preferred: list[list[int]] | None = None  # greedy.by_preference per class, once built
    cpu_choice: list[bool] | None = None  # per class: a candidate without GPUs (gpu_waste)
    # decompose.components, once built (model size, components): the LP and the solver both
    # split the model by them
    parts: Any = None

    def bound(self, v: int) -> int:
        return len(self.groups[self.variables[v][0]].members)

    def candidate(self, v: int) -> Candidate:
        g, j = self.variables[v]
        return self.groups[g].candidates[j]

    def all_candidates(self) -> list[Candidate]:
        """Per variable its candidate (candidate(v) for every v, made at once: the model's
        rows ask ~100k times at bench L)."""
        return [self.groups[g].candidates[j] for g, j in self.variables]

    def split(self, counts: list[int]) -> dict[int, Candidate]:
        """0/1 placements from class counts: the members of a class, in name order, fill its
        candidates in target-id order. Returns routed index -> the member's own candidate."""
        out: dict[int, Candidate] = {}
        for v, members in self.members_of(counts).items():
            j = self.variables[v][1]
            for i in members:
                out[i] = self.routed[i].candidates[j]
        return out

    def members_of(self, counts: list[int]) -> dict[int, list[int]]:
        """Per variable with a count, the routed indices of the members it places (see
        split)."""
        out: dict[int, list[int]] = {}
        for g, group in enumerate(self.groups):
            vs = sorted(self.choices[g], key=lambda v: self.candidate(v).target.id)
            k = 0
            for v in vs:
                if counts[v]:
                    out[v] = group.members[k : k + counts[v]]
                    k += counts[v]
        return out


def work(d: Decision) -> int:
    """Placed work of a workload (level 1), before its priority weight: one GPU weighs as
    100 CPUs, and every placement counts at least 1."""
    c = d.candidates[0].resources
    return 100 * c.gpus + c.cpus + 1


def node_capacity(ref: TargetRef) -> int:
    return getattr(ref.target, "max_nodes", None) or ref.target.nodes


def _content_key(d: Decision) -> Hashable:
    return tuple((c.target.id, c.rank, c.pref, c.resources) for c in d.candidates)


def build_aggregate(
    decisions: list[Decision],
    targets: list[TargetRef],
    quotas: list[QuotaLimit],
    previous: dict[str, str] | None = None,
    spreads: list[SpreadLimit] | None = None,
    capacity: list[Capacity] | None = None,
) -> Aggregate:
    """`capacity`: the targets' nodes (nodes.capacities); by default each target's own nodes,
    empty."""
    prev = previous or {}
    spreads = spreads or []
    routed = [d for d in decisions if d.candidates]
    # Decisions from the evaluator carry a signature that determines their candidates, every
    # quota membership and spread group (it holds each workload field the policy reads);
    # others are compared by content, with their memberships computed one by one.
    memberships: dict[Hashable, tuple[tuple[bool, ...], tuple[Hashable, ...]]] = {}
    index: dict[Hashable, int] = {}
    groups: list[Group] = []
    for i, d in enumerate(routed):
        w = d.workload
        if d.signature:
            base: Hashable = ("s", d.signature)
            found = memberships.get(base)
            if found is None:
                found = memberships[base] = _members(d, quotas, spreads)
        else:
            base = ("c", _content_key(d))
            found = _members(d, quotas, spreads)
        member, spread_groups = found
        was = prev.get(w.name)
        key = (base, member, spread_groups, w.priority_weight, was, was and w.preemptible)
        g = index.get(key)
        if g is None:
            index[key] = g = len(groups)
            pw = w.priority_weight
            groups.append(
                Group(
                    [],
                    d.candidates,
                    pw * work(d),
                    pw,
                    was,
                    member,
                    spread_groups,
                    bool(was and w.preemptible),
                )
            )
        groups[g].members.append(i)
    names = [d.workload.name for d in routed]
    for group in groups:
        group.members.sort(key=names.__getitem__)

    variables: list[tuple[int, int]] = []
    choices: list[list[int]] = []
    for g, group in enumerate(groups):
        choices.append(list(range(len(variables), len(variables) + len(group.candidates))))
        variables.extend((g, j) for j in range(len(group.candidates)))
    agg = Aggregate(routed, groups, variables, choices)
    _capacity_rows(agg, capacity if capacity is not None else capacities(targets))
    _quota_rows(agg, quotas)
    _spread_rows(agg, spreads)
    _levels(agg)
    # No floors yet: preempt.protect (problem.build_problem calls it) sets those of planned
    # work, and the hint that puts it back, from this model.
    agg.floors = [0] * len(agg.groups)
    return agg


def _members(
    d: Decision,
    quotas: list[QuotaLimit],
    spreads: list[SpreadLimit],
) -> tuple[tuple[bool, ...], tuple[Hashable, ...]]:
    """The workload's quota memberships and its group in each spread."""
    if not quotas and not spreads:
        return (), ()
    view = workload_view(d.workload)
    return (
        tuple(q.members is None or bool(q.members(view, {})) for q in quotas),
        tuple(s.group(view) for s in spreads),
    )


def _capacity_rows(agg: Aggregate, caps: list[Capacity]) -> None:
    """Per capacity component, and per target within it: each axis in total, whole nodes on
    empty nodes, and the per-node cuts (cut_rows)."""
    agg.capacity = caps
    comp = {t: ci for ci, cap in enumerate(caps) for t in cap.sets_of}
    cands = agg.all_candidates()
    ids = [c.target.id for c in cands]
    agg.cap_of = [comp[t] for t in ids]
    agg.items = [item_of(c.resources, caps[ci]) for c, ci in zip(cands, agg.cap_of, strict=True)]
    agg.allowed = [caps[ci].sets_of[t] for t, ci in zip(ids, agg.cap_of, strict=True)]
    from router.solve.benders import Nodes  # it builds on this module

    agg.nodes = Nodes(agg)
    by_target: dict[str, list[int]] = {}
    for v, t in enumerate(ids):
        by_target.setdefault(t, []).append(v)
    for cap in caps:
        scopes: list[tuple[str, frozenset[str], list[int]]] = []
        for t in cap.targets:
            if by_target.get(t):
                scopes.append((t, cap.sets_of[t], by_target[t]))
        everything = frozenset(s for ss in cap.sets_of.values() for s in ss)
        if len(scopes) > 1 or (scopes and scopes[0][1] != everything):
            vs = sorted(v for _, _, vs in scopes for v in vs)
            scopes.append((cap.id, everything, vs))
        for subject, sets, vs in scopes:
            agg.rows.extend(cut_rows(agg, cap, subject, sets, vs))


# k = 2, 3 cuts only on targets of at most this many nodes: there a few pods decide, while on
# large ones the rows slow the lower levels' search more than they help (bench L: the rank
# and preference levels, which polish on small budgets, found less in them).
FEW_NODES = 8


def cut_rows(
    agg: Aggregate, cap: Capacity, subject: str, sets: frozenset[str], vs: list[int]
) -> list[Row]:
    """Valid rows for the variables `vs` on the nodes of `sets`, strongest first:

    * each axis: Σ usage ≤ the free amount of every node together;
    * nodes: whole-node members ≤ the empty nodes;
    * per axis a and k = 1, 2, 3: a pod that needs more than 1/(k+1) of the most any node has
      free of a leaves room for at most k of them on a node (and none beside a whole-node
      job), so k·(whole nodes) + (such pods) ≤ Σ over nodes of what each can hold of them.
      k = 1 is "two more-than-half pods never share a node", per axis: a GPU-heavy and a
      CPU-heavy pod may share one.
    Cut rows that cannot bind (every count at its largest fits) are left out.
    """
    groups = cap.groups_of(sets)
    items = agg.items
    out: list[Row] = []

    def add(terms: list[tuple[int, int]], rhs: int, kind: str, resource: str) -> None:
        terms = [(c, v) for c, v in terms if c]
        # Axis rows are kept even when they cannot bind: explanations read them.
        if terms and (kind == "capacity" or sum(c * agg.bound(v) for c, v in terms) > rhs):
            out.append(Row(terms, rhs, kind, subject, resource))

    used = [items[v].usage(cap.full) for v in vs]  # per axis below: once per variable
    for a, axis in enumerate(cap.axes):
        add(
            [(u[a], v) for u, v in zip(used, vs, strict=True)],
            sum(g.count * g.free[a] for g in groups),
            "capacity",
            axis,
        )
    empty = sum(g.count for g in groups if g.empty)
    add([(items[v].whole, v) for v in vs], empty, "nodes", "nodes")
    for a, axis in enumerate(cap.axes):
        most = max((g.free[a] for g in groups), default=0)
        if not most:
            continue
        seen: set[frozenset[int]] = set()
        for k in (1, 2, 3) if sum(g.count for g in groups) <= FEW_NODES else (1,):
            big = frozenset(
                v for v in vs if not items[v].whole and items[v].demand[a] * (k + 1) > most
            )
            if not big or big in seen:
                continue
            seen.add(big)
            least = min(items[v].demand[a] for v in big)
            rhs = sum(g.count * (k if g.empty else min(k, g.free[a] // least)) for g in groups)
            add(
                [
                    (k * items[v].whole if items[v].whole else items[v].pods if v in big else 0, v)
                    for v in vs
                ],
                rhs,
                "nodes",
                f"nodes for pods of over 1/{k + 1} node's {axis}",
            )
    return out


def _quota_rows(agg: Aggregate, quotas: list[QuotaLimit]) -> None:
    if not quotas:
        return
    # Variable by variable, the quotas counting on its target that its class is a member
    # of: each quota's terms come in class then variable order, as quota by quota over
    # every class, without asking each quota about every variable (bench L: 56 quotas,
    # 415k such questions for 18k terms).
    on: dict[str, list[int]] = {}
    for qi, q in enumerate(quotas):
        for t in q.targets:
            on.setdefault(t, []).append(qi)
    terms: list[list[tuple[int, int]]] = [[] for _ in quotas]
    # What a variable counts depends on the quota's resource only: counted once for all
    # the quotas on that resource.
    cands = agg.all_candidates()
    used: dict[str, list[int | None]] = {q.resource: [None] * len(cands) for q in quotas}
    for g, group in enumerate(agg.groups):
        member = group.quotas
        for v in agg.choices[g]:
            c = cands[v]
            for qi in on.get(c.target.id, ()):
                if not member[qi]:
                    continue
                q = quotas[qi]
                counts = used[q.resource]
                u = counts[v]
                if u is None:
                    u = counts[v] = usage(q.resource, c.resources, c.target)
                if u:
                    terms[qi].append((u, v))
    for q, ts in zip(quotas, terms, strict=True):
        if ts:
            agg.rows.append(
                Row(
                    ts,
                    q.amount,
                    "quota",
                    q.label,
                    q.resource,
                    q.source,
                    (q.share,) if q.share else (),
                )
            )


def _spread_rows(agg: Aggregate, spreads: list[SpreadLimit]) -> None:
    """Per spread, group and attribute value: Σ y ≤ max_g over the group's classes on targets
    with that value (see router/evaluate/spread.py). Rows that cannot bind are left out."""
    for si, s in enumerate(spreads):
        by_group: dict[Hashable, list[int]] = {}
        for g, group in enumerate(agg.groups):
            if group.spreads[si] is not None:
                by_group.setdefault(group.spreads[si], []).append(g)
        for key in sorted(by_group, key=order):
            gs = by_group[key]
            size = sum(len(agg.groups[g].members) for g in gs)
            if size < 2:
                continue
            at: dict[Hashable, list[int]] = {}
            for g in gs:
                for v in agg.choices[g]:
                    at.setdefault(s.values[agg.candidate(v).target.id], []).append(v)
            most = s.limit(size, len(at))
            named = s.group_text(key)
            for value in sorted(at, key=order):
                vs = sorted(at[value])
                reach = sum(len(agg.groups[g].members) for g in {agg.variables[v][0] for v in vs})
                if reach <= most:
                    continue
                place = f"{s.attribute}={show(value)}"
                agg.rows.append(
                    Row(
                        [(1, v) for v in vs],
                        most,
                        "spread",
                        s.name,
                        f"{named} on {place}",
                        s.source,
                        (named, s.attribute, show(value)),
                    )
                )


def gpu_waste(agg: Aggregate, v: int) -> int:
    """CPU work on GPU nodes that a CPU target could take: the member's CPUs (+1) when v puts
    a workload without GPUs on a target with GPUs and its class has a candidate without
    them; 0 otherwise. The gpu_nodes level minimises it (cpsat.py)."""
    c = agg.candidate(v)
    if c.resources.gpus or not c.target.target.gpus_per_node:
        return 0
    if agg.cpu_choice is None or len(agg.cpu_choice) != len(agg.groups):
        # once per model: asked per variable, it was quadratic in a class's candidates
        agg.cpu_choice = [
            any(not agg.candidate(u).target.target.gpus_per_node for u in vs) for vs in agg.choices
        ]
    if not agg.cpu_choice[agg.variables[v][0]]:
        return 0
    return c.resources.cpus + 1


def _levels(agg: Aggregate) -> None:
    """The objective levels, in order (see cpsat.py). Stability comes right after placed
    work and rank: a workload stays where it was unless moving it buys one of those. The
    built-in gpu_nodes level comes after the policy's own `prefer` terms, so a rule that
    prefers GPU nodes for CPU work gets them."""
    cands = agg.all_candidates()
    ids = [c.target.id for c in cands]
    tie: dict[int, int] = {}
    for vs in agg.choices:
        for s, v in enumerate(sorted(vs, key=ids.__getitem__)):
            tie[v] = s
    gs, cand = agg.groups, cands.__getitem__
    agg.levels = [
        Level("placed_work", 1, [(gs[g].weight, v) for v, (g, _) in enumerate(agg.variables)]),
        Level(
            "rank",
            -1,
            [
                (gs[g].priority_weight * cand(v).rank, v)
                for v, (g, _) in enumerate(agg.variables)
                if cand(v).rank
            ],
        ),
        Level(
            "stability",
            1,
            [(1, v) for v, (g, _) in enumerate(agg.variables) if gs[g].previous == ids[v]],
        ),
        Level(
            "preference", -1, [(cand(v).pref, v) for v in range(len(agg.variables)) if cand(v).pref]
        ),
        Level(
            "gpu_nodes", -1, [(w, v) for v in range(len(agg.variables)) if (w := gpu_waste(agg, v))]
        ),
        Level("tie_break", -1, [(tie[v], v) for v in range(len(agg.variables)) if tie[v]]),
    ]
