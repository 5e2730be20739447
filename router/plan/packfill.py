"""Constructive packing for the checker: fill node after node with what suits it best.

First fit decreasing (router/plan/packing.py) fails on tight mixes: partitions of many small
CPU jobs full to the last CPU, where each node must be filled exactly. Here (the minimum-slack
idea of Gupta and Ho) every node in turn takes the set of remaining single-node tasks that
fills it best: a bounded knapsack over the task shapes that reach it, each shape valued by
its share of the resources still scarce (what is left to place over what is left free).
Work of several nodes or of whole nodes is placed first, by first fit. A packing found is a
proof that it packs (the caller checks it node by node); none found proves nothing.

Plain data in (router/plan/packdata.py), an assignment or None out; deterministic.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from router.plan.packdata import Problem, Work

POWER = 1.0
STEPS = 4_000  # knapsack search nodes per node filled: bounded, so a fill costs little
# Weights of the resources beyond their scarcity: as measured, and leaning to each in turn.
LEANS: tuple[tuple[float, ...], ...] = ((1.0, 1.0, 1.0), (1.0, 2.0, 1.0), (1.0, 1.0, 2.0))


def fill(
    problem: Problem, work: list[Work], lean: tuple[float, ...], partial: bool = False
) -> dict[str, list[list[int]]] | None:
    """A packing of all of `work`, node by node; None when the last nodes cannot take the
    rest. `partial`: then the packing of the works it placed whole (a start for `extend`)."""
    profiles = sorted({p for w in work for p, _ in w.slices})
    dims = 3 + len(profiles)

    def vec(g: int, c: int, m: int, sl: dict[str, int]) -> list[int]:
        return [g, c, m, *(sl.get(p, 0) for p in profiles)]

    free = [vec(n.gpus, n.cpus, n.memory, dict(n.slices)) for n in problem.nodes]
    used = [False] * len(problem.nodes)
    taken = [False] * len(problem.nodes)  # by a whole task
    out: dict[str, list[list[int]]] = {}

    def need(w: Work) -> list[int]:
        return vec(w.gpus, w.cpus, w.memory, dict(w.slices))

    # 1. whole-node and several-node work: first fit, biggest first
    big = [w for w in work if w.whole or w.tasks > 1]
    small = [w for w in work if not (w.whole or w.tasks > 1)]
    for w in sorted(big, key=lambda w: (-w.whole, -w.tasks, [-x for x in need(w)], w.name)):
        a = need(w)
        for _ in range(w.units):
            chosen: list[int] = []
            for i in problem.reach.get(w.target, ()):
                if taken[i] or (w.whole and (used[i] or not problem.nodes[i].idle)):
                    continue
                if all(x <= f for x, f in zip(a, free[i], strict=True)):
                    chosen.append(i)
                    if len(chosen) == w.tasks:
                        break
            if len(chosen) < w.tasks:
                return None  # only first fit of the big work: partial or not, give up
            for i in chosen:
                free[i] = [f - x for f, x in zip(free[i], a, strict=True)]
                used[i] = True
                taken[i] = taken[i] or w.whole
            out.setdefault(w.name, []).append(chosen)

    # 2. single-node tasks, by shape: the works of a shape are its units, taken in name order
    shapes: dict[tuple[object, ...], list[Work]] = {}
    for w in sorted(small, key=lambda w: w.name):
        shapes.setdefault(w.shape, []).append(w)
    keys = sorted(shapes, key=repr)
    needs = [need(shapes[k][0]) for k in keys]
    left = [sum(w.units for w in shapes[k]) for k in keys]
    reach = [set(problem.reach.get(shapes[k][0].target, ())) for k in keys]
    queue = [[(w.name, w.units) for w in shapes[k]] for k in keys]
    # Nodes holding nothing whole, in index order (identical nodes: any order is as good).
    for i in range(len(problem.nodes)):
        if taken[i]:
            continue
        here = [t for t in range(len(keys)) if left[t] and i in reach[t]]
        if not here:
            continue
        value = _values([needs[t] for t in here], [left[t] for t in here], free, lean, dims)
        counts = _knapsack(free[i], [needs[t] for t in here], [left[t] for t in here], value)
        for t, k in zip(here, counts, strict=True):
            if not k:
                continue
            left[t] -= k
            free[i] = [f - k * x for f, x in zip(free[i], needs[t], strict=True)]
            used[i] = True
            _deal(queue[t], k, i, out)
    if not any(left):
        return out
    if not partial:
        return None
    short = {name for q in queue for name, _ in q}
    return {name: units for name, units in out.items() if name not in short}


def _values(
    needs: list[list[int]],
    left: list[int],
    free: list[list[int]],
    lean: tuple[float, ...],
    dims: int,
) -> list[float]:
    """Each shape's worth on a node: its demand in each resource, weighted by how scarce that
    resource is (remaining demand over remaining free, everywhere)."""
    have = [sum(f[d] for f in free) for d in range(dims)]
    want = [sum(n[d] * k for n, k in zip(needs, left, strict=True)) for d in range(dims)]
    weight = [
        (want[d] / have[d] if have[d] else 0.0) * (lean[d] if d < len(lean) else 1.0)
        for d in range(dims)
    ]
    return [
        sum(weight[d] * n[d] / have[d] for d in range(dims) if have[d]) ** POWER + 1e-9
        for n in needs
    ]


def _knapsack(
    cap: list[int], needs: list[list[int]], most: list[int], value: list[float]
) -> list[int]:
    """How many of each shape one node takes: the most value within `cap` (depth first, the
    densest shapes first, cut by a bound on what the rest could add; at most STEPS steps)."""
    n = len(needs)
    dims = len(cap)

    # Densest first: value per unit of the node's scarcest share.
    def density(t: int) -> float:
        share = max((needs[t][d] / cap[d] for d in range(dims) if cap[d]), default=0.0)
        return value[t] / share if share else float("inf")

    order = sorted(range(n), key=lambda t: (-density(t), t))
    best = [0.0]
    best_counts = [0] * n
    cur = [0] * n
    steps = [STEPS]

    def bound(k: int, rem: list[int]) -> float:
        """What shapes order[k:] could add at most: per resource, its room times the best
        value per unit of it (a resource none of them needs gives no bound)."""
        most_here = float("inf")
        for d in range(dims):
            ratios = [value[t] / needs[t][d] for t in order[k:] if needs[t][d]]
            if len(ratios) == n - k:
                most_here = min(most_here, rem[d] * max(ratios, default=0.0))
        if most_here == float("inf"):
            most_here = sum(value[t] * most[t] for t in order[k:])
        return most_here

    def dfs(k: int, rem: list[int], got: float) -> None:
        if got > best[0] + 1e-12:
            best[0] = got
            best_counts[:] = cur
        if k == n or steps[0] <= 0:
            return
        if got + bound(k, rem) <= best[0] + 1e-12:
            return
        steps[0] -= 1
        t = order[k]
        a = needs[t]
        fit = min([most[t]] + [rem[d] // a[d] for d in range(dims) if a[d]])
        for c in range(fit, -1, -1):
            cur[t] = c
            dfs(k + 1, [r - c * x for r, x in zip(rem, a, strict=True)], got + c * value[t])
            if steps[0] <= 0:
                break
        cur[t] = 0

    dfs(0, list(cap), 0.0)
    return best_counts


# --- identical nodes: node after node, within the slack the totals leave -------------------

TIGHT_STEPS = 200_000  # search steps in all, per component: bounded, deterministic
PER_NODE = 200  # patterns ranked per node, the least slack used first


def identical(problem: Problem, work: list[Work]) -> bool:
    """Single-node work on identical nodes that every work reaches: where `tight` applies."""
    nodes = problem.nodes
    if not nodes or any(n != nodes[0] for n in nodes) or any(w.whole or w.tasks > 1 for w in work):
        return False
    everyone = tuple(range(len(nodes)))
    return all(problem.reach.get(w.target, ()) == everyone for w in work)


def tight(
    problem: Problem, work: list[Work], steps: int = TIGHT_STEPS, ranked: int = PER_NODE
) -> dict[str, list[list[int]]] | None:
    """A packing of single-node work onto identical nodes that every work reaches, by depth-first
    search over the nodes: each node takes a pattern (tasks per shape) whose unused room, added
    up, stays within the room the totals leave (on a memory-full partition, a node left 8 GiB
    short is one the others must make up), biggest tasks first; states already failed are not
    tried again (identical nodes: what is left to place is the whole state). None: none found
    within `steps` (it proves nothing)."""
    if not identical(problem, work):
        return None
    nodes = problem.nodes
    profiles = sorted({p for w in work for p, _ in w.slices} | {p for p, _ in nodes[0].slices})
    sl = dict(nodes[0].slices)
    cap = (nodes[0].gpus, nodes[0].cpus, nodes[0].memory, *(sl.get(p, 0) for p in profiles))
    shapes: dict[tuple[object, ...], list[Work]] = {}
    for w in sorted(work, key=lambda w: w.name):
        shapes.setdefault(w.shape, []).append(w)

    def vec(w: Work) -> tuple[int, ...]:
        s = dict(w.slices)
        return (w.gpus, w.cpus, w.memory, *(s.get(p, 0) for p in profiles))

    # Biggest first (share of the node in its largest resource), so small tasks fill the gaps.
    keys = sorted(
        shapes,
        key=lambda k: (
            -max(a / c for a, c in zip(vec(shapes[k][0]), cap, strict=True) if c),
            repr(k),
        ),
    )
    needs = [vec(shapes[k][0]) for k in keys]
    if any(any(a > c for a, c in zip(n, cap, strict=True)) for n in needs):
        return None
    counts = tuple(sum(w.units for w in shapes[k]) for k in keys)
    dims = len(cap)
    room = [
        len(nodes) * cap[d] - sum(n[d] * k for n, k in zip(needs, counts, strict=True))
        for d in range(dims)
    ]
    if min(room) < 0:
        return None
    left = [steps]
    failed: set[tuple[tuple[int, ...], int]] = set()
    chosen: list[tuple[int, ...]] = []

    def patterns(have: tuple[int, ...], slack: list[int]) -> Iterator[tuple[int, ...]]:
        """Non-empty patterns of what is left whose unused room fits `slack`, biggest first."""
        cur = [0] * len(keys)

        def go(t: int, rem: list[int]) -> Iterator[tuple[int, ...]]:
            left[0] -= 1
            if left[0] <= 0:
                return
            # What the rest could still fill, per resource: an upper bound.
            for d in range(dims):
                can = 0
                for u in range(t, len(keys)):
                    if needs[u][d]:
                        can += min(have[u], rem[d] // needs[u][d]) * needs[u][d]
                if rem[d] - min(can, rem[d]) > slack[d]:
                    return
            if t == len(keys):
                if any(cur):
                    yield tuple(cur)
                return
            a = needs[t]
            most = min([have[t]] + [rem[d] // a[d] for d in range(dims) if a[d]])
            for c in range(most, -1, -1):
                cur[t] = c
                yield from go(t + 1, [r - c * x for r, x in zip(rem, a, strict=True)])
            cur[t] = 0

        return go(0, list(cap))

    def search(have: tuple[int, ...], nodes_left: int, slack: list[int]) -> bool:
        if not any(have):
            return True
        if nodes_left == 0 or left[0] <= 0 or (have, nodes_left) in failed:
            return False
        options: list[tuple[float, int, tuple[int, ...], list[int]]] = []
        for pat in itertools.islice(patterns(have, slack), ranked):
            used = [sum(k * n[d] for k, n in zip(pat, needs, strict=True)) for d in range(dims)]
            rest = [s - (cap[d] - used[d]) for d, s in enumerate(slack)]
            # The least share of the slack left used up first (best fit).
            cost = max(
                ((cap[d] - used[d]) / slack[d] for d in range(dims) if slack[d]), default=0.0
            )
            options.append((cost, len(options), pat, rest))
        options.sort()
        for _, _, pat, rest in options:
            chosen.append(pat)
            if search(tuple(h - k for h, k in zip(have, pat, strict=True)), nodes_left - 1, rest):
                return True
            chosen.pop()
            if left[0] <= 0:
                return False
        if left[0] <= 0:
            return False
        failed.add((have, nodes_left))
        return False

    if not search(counts, len(nodes), room):
        return None
    out: dict[str, list[list[int]]] = {}
    queue = [[(w.name, w.units) for w in shapes[k]] for k in keys]
    for i, pat in enumerate(chosen):
        for t, k in enumerate(pat):
            _deal(queue[t], k, i, out)
    return out


def _deal(queue: list[tuple[str, int]], k: int, node: int, out: dict[str, list[list[int]]]) -> None:
    """Put `k` units of a shape on `node`, from its works' (name, units left) in order."""
    for _ in range(k):
        name, units = queue[0]
        out.setdefault(name, []).append([node])
        queue[0] = (name, units - 1)
        if units == 1:
            queue.pop(0)
