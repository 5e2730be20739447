"""The last fill's node-pattern re-packing of a capacity component with few work shapes.

A component of many identical nodes holding single-pod CPU work of a few shapes (bench XL:
CPU partitions of 16-76 nodes, memory-bound batch jobs of 3-8 shapes) is packed exactly by a
node-pattern (configuration) model rather than node by node. A *pattern* of a node class
(nodes of identical free capacity, nodes.NodeGroup) is how many pods of each shape one node
holds, within every axis. With z_cp nodes of class c on pattern p and x_vc members of
aggregate variable v on class c (integers):

  Σ_p z_cp ≤ N_c                                   nodes of each class
  Σ_{v of shape s} x_vc ≤ Σ_p a_ps z_cp            pods of shape s have slots on class c
  counts_v ≤ Σ_c x_vc ≤ counts_v + left_v          what is placed stays placed
  Σ_{v ∈ k} (x_v − counts_v) ≤ unplaced_k          each class's members once
  Σ coef (x_v − counts_v) ≤ slack_r                every row (quotas, spreads) the fill holds

maximising the worth added (class weight × members), preferred candidates first on ties.
Only maximal patterns are enumerated (no further pod fits: surplus slots stay empty), each
shape capped at what could be placed of it; the current packing's own node contents are
added as patterns, so it is a complete hint. Identical nodes are one class, so there is no
symmetry between them; the LP of the pattern model is the strong one (Gilmore-Gomory) where
per-node variables stall on memory filled to the GiB. CP-SAT solves it with one worker, a
fixed seed and a deterministic limit. The counts are then laid out on the nodes in class and
pattern order (deterministic), checked node by node and kept only if they add worth.

Components where a whole-node member, a pod with GPUs or MIG slices, a member of several
pods, more than MAX_SHAPES shapes or more than PATTERN_CAP patterns take part are left to
the rest of the last step (greedy._topped).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from router.solve.nodes import Capacity
from router.solve.pack import Block, Packing

MAX_SHAPES = 12
PATTERN_CAP = 4000  # maximal patterns over a component's node classes
STEP_CAP = 200_000  # search steps enumerating them
LIMIT = 0.5  # deterministic seconds per component
SEED = 0

Aggregate = Any  # aggregate.Aggregate (typed Any so that imports flow one way)
Filler = Any  # greedy.Filler


def repacked(agg: Aggregate, fill: Filler, ci: int) -> bool:
    """Component ci re-packed by the pattern model with unplaced members added, if that
    adds worth (see the module docstring); True if the fill took it."""
    cap: Capacity = agg.capacity[ci]
    pack: Packing | None = fill.packs.get(ci)
    if pack is None:
        return False
    keys: list[int] = agg.nodes.by_cap[ci]
    left: dict[int, int] = {}
    for v in keys:
        n = fill.unplaced(agg.variables[v][0])
        for r, coef in fill.touches[v]:
            n = min(n, fill.slack[r] // coef)
        if n > 0:
            left[v] = n
    live = [v for v in keys if fill.counts[v] or v in left]
    if not left or not all(_simple(cap, agg.items[v]) for v in live):
        return False
    if not _room_somewhere(cap, pack, agg, left):
        return False
    shape_of: dict[int, int] = {}
    shapes: list[tuple[int, ...]] = []
    for v in live:
        d = agg.items[v].demand
        if d not in shapes:
            shapes.append(d)
        shape_of[v] = shapes.index(d)
    if len(shapes) > MAX_SHAPES:
        return False
    most = [0] * len(shapes)  # members of a shape that could be placed at all
    for v in live:
        most[shape_of[v]] += fill.counts[v] + left.get(v, 0)
    on: list[list[int]] = []  # per node class, the variables that may go there
    for grp in cap.groups:
        on.append([v for v in live if grp.node_set in agg.allowed[v]])
    patterns: list[list[tuple[int, ...]]] = []
    budget = [STEP_CAP]
    total = 0
    for c, grp in enumerate(cap.groups):
        ss = sorted({shape_of[v] for v in on[c]})
        caps = {s: min(most[s], _fits(grp.free, shapes[s])) for s in ss}
        found = _maximal(grp.free, shapes, [s for s in ss if caps[s]], caps, budget)
        if found is None:
            return False
        patterns.append(found)
        total += len(found)
        if total > PATTERN_CAP:
            return False
    hint = _contents(cap, pack, shape_of, len(shapes))
    for c, nodes in hint.items():
        for pat in nodes:
            if pat not in patterns[c]:
                patterns[c].append(pat)
    got = _solve(agg, fill, cap, pack, live, left, shape_of, on, patterns, hint)
    if got is None:
        return False
    counts, per_class = got
    packing = _laid_out(cap, shapes, shape_of, patterns, per_class)
    if not _valid(cap, agg, packing, counts):
        return False
    for v in live:
        if counts[v] != fill.counts[v]:
            fill.add(v, counts[v] - fill.counts[v])
    fill.packs[ci] = packing
    return True


def _simple(cap: Capacity, item: Any) -> bool:
    """One pod asking CPUs and memory only."""
    return (
        not item.whole
        and item.pods == 1
        and all(d == 0 for a, d in zip(cap.axes, item.demand, strict=True) if a not in AXES)
    )


AXES = ("cpus", "memory")


def _fits(free: tuple[int, ...], d: tuple[int, ...]) -> int:
    n = 1 << 30
    for f, x in zip(free, d, strict=True):
        if x:
            n = min(n, f // x)
    return n


def _room_somewhere(cap: Capacity, pack: Packing, agg: Aggregate, left: dict[int, int]) -> bool:
    """A quick necessary condition: some member left out has, on each axis, that much free
    in total on its node sets (else no re-packing adds it)."""
    free: dict[str, list[int]] = {}
    for b in pack.blocks:
        s = cap.groups[b.group].node_set
        acc = free.setdefault(s, [0] * len(cap.axes))
        for a, f in enumerate(b.free):
            acc[a] += b.count * f
    for v in left:
        d = agg.items[v].demand
        tot = [0] * len(cap.axes)
        for s in agg.allowed[v]:
            for a, f in enumerate(free.get(s, ())):
                tot[a] += f
        if all(t >= x for t, x in zip(tot, d, strict=True)):
            return True
    return False


def _maximal(
    free: tuple[int, ...],
    shapes: Sequence[tuple[int, ...]],
    ss: list[int],
    caps: dict[int, int],
    budget: list[int],
) -> list[tuple[int, ...]] | None:
    """The maximal patterns of a node with `free` over shapes `ss` (each at most caps[s]),
    as pods per shape (all shapes' positions); None past the step budget."""
    order = sorted(ss, key=lambda s: tuple(-x for x in shapes[s]))
    out: list[tuple[int, ...]] = []
    a = [0] * len(shapes)

    def rec(i: int, rem: tuple[int, ...]) -> bool:
        budget[0] -= 1
        if budget[0] < 0:
            return False
        if i == len(order):
            if all(a[s] >= caps[s] or not _fits(rem, shapes[s]) for s in order):
                out.append(tuple(a))
            return True
        s = order[i]
        top = min(caps[s], _fits(rem, shapes[s]))
        for k in range(top, -1, -1):
            a[s] = k
            if not rec(i + 1, tuple(f - k * x for f, x in zip(rem, shapes[s], strict=True))):
                return False
        a[s] = 0
        return True

    return out if rec(0, free) else None


def _contents(
    cap: Capacity, pack: Packing, shape_of: dict[int, int], n: int
) -> dict[int, list[tuple[int, ...]]]:
    """Per node class, each of its nodes' pods per shape in the current packing."""
    out: dict[int, list[tuple[int, ...]]] = {c: [] for c in range(len(cap.groups))}
    for b in pack.blocks:
        a = [0] * n
        for key, per in b.content:
            a[shape_of[key]] += per
        out[b.group].extend([tuple(a)] * b.count)
    return out


def _solve(
    agg: Aggregate,
    fill: Filler,
    cap: Capacity,
    pack: Packing,
    live: list[int],
    left: dict[int, int],
    shape_of: dict[int, int],
    on: list[list[int]],
    patterns: list[list[tuple[int, ...]]],
    hint: dict[int, list[tuple[int, ...]]],
) -> tuple[dict[int, int], list[dict[int, int]]] | None:
    """The pattern model solved: members per variable, and per node class the members per
    variable and the nodes per pattern (keys: v, and -1 - pattern index); None if it adds
    no worth."""
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    # Upper bounds kept in Python: ortools 9.15's proto wrapper misreads domain ends (pack.py).
    z: list[list[Any]] = []
    x: list[dict[int, Any]] = []
    for c, grp in enumerate(cap.groups):
        z.append([model.new_int_var(0, grp.count, "") for _ in patterns[c]])
        model.add(sum(z[c]) <= grp.count)
        x.append({})
        for v in on[c]:
            s = shape_of[v]
            if any(p[s] for p in patterns[c]):
                x[c][v] = model.new_int_var(0, fill.counts[v] + left.get(v, 0), "")
        for s in sorted({shape_of[v] for v in x[c]}):
            slots = [(p[s], z[c][k]) for k, p in enumerate(patterns[c]) if p[s]]
            model.add(
                sum(x[c][v] for v in x[c] if shape_of[v] == s) <= sum(a * zz for a, zz in slots)
            )
    total = {v: sum(x[c][v] for c in range(len(x)) if v in x[c]) for v in live}
    for v in live:
        model.add(total[v] >= fill.counts[v])
        model.add(total[v] <= fill.counts[v] + left.get(v, 0))
    by_class: dict[int, list[int]] = {}
    for v in live:
        by_class.setdefault(agg.variables[v][0], []).append(v)
    for g, vs in sorted(by_class.items()):
        if any(v in left for v in vs):
            model.add(sum(total[v] - fill.counts[v] for v in vs) <= fill.unplaced(g))
    rows: dict[int, list[tuple[int, int]]] = {}
    for v in live:
        for r, coef in fill.touches[v]:
            rows.setdefault(r, []).append((coef, v))
    for r, terms in sorted(rows.items()):
        if sum(coef * left.get(v, 0) for coef, v in terms) > fill.slack[r]:
            model.add(sum(coef * (total[v] - fill.counts[v]) for coef, v in terms) <= fill.slack[r])
    # Worth first; among equal worth, each class's preferred candidates (greedy.preferred).
    place = _places(agg, live)
    scale = 1 + sum(place[v] * (fill.counts[v] + left.get(v, 0)) for v in live)
    weight = {v: agg.groups[agg.variables[v][0]].weight for v in live}
    model.maximize(sum((scale * weight[v] - place[v]) * total[v] for v in live))
    # The current packing as a complete hint: its nodes' contents are patterns.
    for c in range(len(cap.groups)):
        for k, p in enumerate(patterns[c]):
            model.add_hint(z[c][k], hint[c].count(p))
    held: dict[tuple[int, int], int] = {}
    for b in pack.blocks:
        for key, per in b.content:
            held[b.group, key] = held.get((b.group, key), 0) + per * b.count
    for c in range(len(x)):
        for v, var in x[c].items():
            model.add_hint(var, held.get((c, v), 0))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = SEED
    solver.parameters.max_deterministic_time = LIMIT
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    counts = {v: sum(int(solver.value(x[c][v])) for c in range(len(x)) if v in x[c]) for v in live}
    if sum(weight[v] * (counts[v] - fill.counts[v]) for v in live) <= 0:
        return None
    per_class: list[dict[int, int]] = []
    for c in range(len(x)):
        got = {v: int(solver.value(var)) for v, var in x[c].items()}
        for k in range(len(patterns[c])):
            got[-1 - k] = int(solver.value(z[c][k]))
        per_class.append(got)
    return counts, per_class


def _places(agg: Aggregate, live: list[int]) -> dict[int, int]:
    """Where each variable stands among its class's variables here, best candidate first
    (rank, `prefer` place, target id: greedy.by_preference without the GPU-node term, as
    these nodes have no GPU work)."""
    c = agg.candidate
    by_class: dict[int, list[int]] = {}
    for v in live:
        by_class.setdefault(agg.variables[v][0], []).append(v)
    out: dict[int, int] = {}
    for vs in by_class.values():
        for k, v in enumerate(sorted(vs, key=lambda v: (c(v).rank, c(v).pref, c(v).target.id))):
            out[v] = k
    return out


def _laid_out(
    cap: Capacity,
    shapes: list[tuple[int, ...]],
    shape_of: dict[int, int],
    patterns: list[list[tuple[int, ...]]],
    per_class: list[dict[int, int]],
) -> Packing:
    """The solution on the nodes: each class's nodes in index order take its patterns
    (largest first), then each shape's slots, node by node, take the variables' members in
    key order. Runs of nodes that hold the same are one block."""
    p = Packing(cap)
    for c, grp in enumerate(cap.groups):
        got = per_class[c]
        used = sorted(
            (k for k in range(len(patterns[c])) if got[-1 - k]),
            key=lambda k: tuple(-a for a in patterns[c][k]),
        )
        node_pats = [patterns[c][k] for k in used for _ in range(got[-1 - k])]
        queues: dict[int, Iterator[int]] = {}
        for s in range(len(shapes)):
            keys = sorted(v for v in got if v >= 0 and shape_of[v] == s)
            queues[s] = iter([v for v in keys for _ in range(got[v])])
        contents: list[tuple[tuple[int, int], ...]] = []
        for pat in node_pats:
            content: dict[int, int] = {}
            for s, slots in enumerate(pat):
                for _ in range(slots):
                    v = next(queues[s], None)
                    if v is None:
                        break
                    content[v] = content.get(v, 0) + 1
            contents.append(tuple(sorted(content.items())))
        contents.extend([()] * (grp.count - len(contents)))
        lo = 0
        while lo < grp.count:
            hi = lo
            while hi + 1 < grp.count and contents[hi + 1] == contents[lo]:
                hi += 1
            held = contents[lo]
            free = list(grp.free)
            for v, per in held:
                free = [f - per * d for f, d in zip(free, shapes[shape_of[v]], strict=True)]
                p.placed[v] = p.placed.get(v, 0) + per * (hi - lo + 1)
            p.blocks.append(Block(c, lo, hi - lo + 1, tuple(free), grp.empty and not held, held))
            lo = hi + 1
    return p


def _valid(cap: Capacity, agg: Aggregate, packing: Packing, counts: dict[int, int]) -> bool:
    """Node by node: no node over any axis, every pod on its node sets, every member placed."""
    placed: dict[int, int] = {}
    covered = [0] * len(cap.groups)
    for b in packing.blocks:
        grp = cap.groups[b.group]
        covered[b.group] += b.count
        used = [0] * len(cap.axes)
        for v, per in b.content:
            if grp.node_set not in agg.allowed[v] or per <= 0:
                return False
            used = [u + per * d for u, d in zip(used, agg.items[v].demand, strict=True)]
            placed[v] = placed.get(v, 0) + per * b.count
        if any(u > f for u, f in zip(used, grp.free, strict=True)):
            return False
    if covered != [g.count for g in cap.groups]:
        return False
    return placed == {v: n for v, n in counts.items() if n} == packing.placed
