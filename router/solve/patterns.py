"""Exact packing onto identical nodes by node patterns: the last step's search (greedy._topped).

When every node of a component is alike (one node class) and every member may go on all of
them, a packing is a choice of *patterns*: how many pods of each kind one node holds. With
z_p nodes of pattern p it packs iff

    Σ_p z_p ≤ N        and        Σ_p a_pk z_p ≥ n_k    for every kind k

(n_k pods of kind k; a node given more than is left of a kind just holds fewer, which keeps
it within its capacity). Only maximal patterns (no further pod fits) are needed. The LP of
this model is that of Gilmore and Gomory's cutting stock, far stronger than per-node counts
on tight mixes (bench L's CPU partitions with memory full to within one 64 GiB job), where
the per-node search wanders among permutations of identical nodes. Used when the maximal
patterns number at most PATTERNS, found within STEPS steps; else the caller has no verdict
from it. Whole-node members take idle nodes off N. Deterministic: one CP-SAT worker, a
fixed seed, a deterministic limit.
"""

from __future__ import annotations

from router.solve.nodes import Capacity
from router.solve.pack import Answer, Block, Entry, Packing, fits_count

PATTERNS = 3_000
STEPS = 30_000
# maximal()'s answers by its arguments: the last step asks again for the same component
# after each class it could not top up (bench L seed 0: four times the same 14 kinds, each
# ending past STEPS after ~0.025 s). The answer is a function of the arguments alone.
_FOUND: dict[tuple[object, ...], list[tuple[int, ...]] | None] = {}
_FOUND_MOST = 256


def pattern_packing(cap: Capacity, entries: list[Entry], limit: float) -> Answer | None:
    """A packing of every member of `entries` onto `cap`'s nodes by node patterns (module
    docstring); None when the model does not apply (nodes not alike, members that may not go
    on every node, too many patterns) or decides nothing within `limit`."""
    entries = [e for e in entries if e.members]
    if len(cap.groups) != 1:
        return None
    grp = cap.groups[0]
    if any(grp.node_set not in e.allowed for e in entries):
        return None
    wholes = sum(e.members * e.item.whole for e in entries if e.item.whole)
    if wholes and not grp.empty:
        return None
    nodes = grp.count - wholes
    if nodes < 0:
        return Answer(None, True)
    kinds: dict[tuple[int, ...], int] = {}  # demand -> pods
    for e in entries:
        if not e.item.whole:
            kinds[e.item.demand] = kinds.get(e.item.demand, 0) + e.members * e.item.pods
    demands = sorted(kinds, reverse=True)
    need = [kinds[d] for d in demands]
    most = [min(n, fits_count(grp.free, d)) for n, d in zip(need, demands, strict=True)]
    if any(m <= 0 for m in most):
        return Answer(None, True)
    found = maximal(grp.free, demands, most)
    if found is None:
        return None
    counts = _solve(found, need, nodes, limit)
    if counts is None:
        return None
    if not counts:
        return Answer(None, True)
    return Answer(_witness(cap, entries, demands, found, counts), True)


def maximal(
    free: tuple[int, ...], demands: list[tuple[int, ...]], most: list[int]
) -> list[tuple[int, ...]] | None:
    """Every maximal pattern (pods per kind on one node), or None past PATTERNS / STEPS.
    Depth first, the count of kind k from its most down to 0 (the last kind takes all it
    can: with fewer the pattern is not maximal); the same steps and order as the plain
    recursion, written with local lists: this search was the exact last step's Python cost.
    Answers are kept by the arguments (_FOUND); the lists returned are not to be changed."""
    key = (free, tuple(demands), tuple(most), STEPS, PATTERNS)  # the limits: tests set them
    if key in _FOUND:
        return _FOUND[key]
    found = _maximal(free, demands, most)
    if len(_FOUND) >= _FOUND_MOST:
        _FOUND.clear()
    _FOUND[key] = found
    return found


def _maximal(
    free: tuple[int, ...], demands: list[tuple[int, ...]], most: list[int]
) -> list[tuple[int, ...]] | None:
    out: list[tuple[int, ...]] = []
    kinds = len(demands)
    if kinds == 0:
        return [()]
    cur = [0] * kinds
    steps = 0
    last = kinds - 1
    # Per kind, its nonzero axes (a zero never limits a count nor a fit).
    axes = [[(a, x) for a, x in enumerate(d) if x] for d in demands]

    def dfs(k: int, rem: list[int]) -> bool:
        nonlocal steps
        steps += 1
        if steps > STEPS or len(out) > PATTERNS:
            return False
        if k == kinds:
            for j in range(kinds):  # one more of some kind fits: not maximal
                if cur[j] < most[j]:
                    for a, x in axes[j]:
                        if x > rem[a]:
                            break
                    else:
                        return True
            out.append(tuple(cur))
            return True
        d = demands[k]
        top = most[k]
        for a, x in axes[k]:
            q = rem[a] // x
            if q < top:
                top = q
        for n in range(top, -1 if k < last else top - 1, -1):
            cur[k] = n
            if not dfs(k + 1, [r - n * x for r, x in zip(rem, d, strict=True)] if n else rem):
                return False
        cur[k] = 0
        return True

    if not dfs(0, list(free)):
        return None
    return out


def _solve(
    patterns: list[tuple[int, ...]], need: list[int], nodes: int, limit: float
) -> list[int] | None:
    """Nodes per pattern that cover every kind's pods ([]: proven impossible; None: not
    decided within `limit`)."""
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    z = [model.new_int_var(0, nodes, "") for _ in patterns]
    model.add(sum(z) <= nodes)
    for k, n in enumerate(need):
        model.add(sum(p[k] * v for p, v in zip(patterns, z, strict=True) if p[k]) >= n)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_deterministic_time = limit
    # No presolve: on these covering models (hundreds of pattern columns) it was the whole
    # cost, and the search decides them at once (bench L seed 0: a proof of no room 0.29 ->
    # 0.01 s, a packing found 0.29 -> 0.02 s, the same answers).
    solver.parameters.cp_model_presolve = False
    status = solver.solve(model)
    if status == cp_model.INFEASIBLE:
        return []
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return [int(solver.value(v)) for v in z]


def _witness(
    cap: Capacity,
    entries: list[Entry],
    demands: list[tuple[int, ...]],
    patterns: list[tuple[int, ...]],
    counts: list[int],
) -> Packing:
    """Nodes filled pattern by pattern (whole members first, on the first nodes), each kind's
    pods given out to its entries in key order, a node's surplus left free."""
    grp = cap.groups[0]
    p = Packing(cap)
    j = 0
    for e in sorted((e for e in entries if e.item.whole), key=lambda e: e.key):
        zero = tuple(0 for _ in grp.free)
        for _ in range(e.members * e.item.whole):
            p.blocks.append(Block(0, j, 1, zero, False, ((e.key, -1),)))
            j += 1
        p.placed[e.key] = p.placed.get(e.key, 0) + e.members
    queues: list[list[list[int]]] = []  # per kind: [entry key, pods left] in key order
    for d in demands:
        queue = []
        for e in sorted(entries, key=lambda e: e.key):
            if not e.item.whole and e.item.demand == d:
                queue.append([e.key, e.members * e.item.pods])
                p.placed[e.key] = p.placed.get(e.key, 0) + e.members
        queues.append(queue)
    for pattern, z in zip(patterns, counts, strict=True):
        for _ in range(z):
            content: dict[int, int] = {}
            free = list(grp.free)
            for k, a in enumerate(pattern):
                queue = queues[k]
                while a and queue:
                    take = min(a, queue[0][1])
                    content[queue[0][0]] = content.get(queue[0][0], 0) + take
                    free = [f - take * x for f, x in zip(free, demands[k], strict=True)]
                    a -= take
                    queue[0][1] -= take
                    if not queue[0][1]:
                        queue.pop(0)
            if content:
                c = tuple(sorted(content.items()))
                p.blocks.append(Block(0, j, 1, tuple(free), False, c))
                j += 1
    assert not any(queues), "patterns that do not cover every pod"
    if j < grp.count:
        p.blocks.append(Block(0, j, grp.count - j, grp.free, grp.empty))
    return p
