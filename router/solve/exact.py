"""Level 1 (placed work) of a small solver component solved exactly by node patterns, where
the Benders rounds (cpsat.py) did not prove it.

Per node class c (identical free room, one node set) of the component's capacity components,
a *pattern* is how many pods of each demand kind one node of c holds; only maximal patterns
are needed (patterns.maximal). With
  λ_cp ∈ ℤ≥0   nodes of class c given pattern p          Σ_p λ_cp + Σ_v u_vc ≤ |c|
  u_vc ∈ ℤ≥0   idle nodes of c that whole members of v take (c idle, its node set allowed)
  a_vc ∈ ℤ≥0   pods of v on class c (its node set allowed)
  Σ_c a_vc = pods_v · y_v,   Σ_c u_vc = whole_v · y_v
  Σ_{v of kind k} a_vc ≤ Σ_p p_k λ_cp                      every class c and demand kind k
and the component's own rows (class sizes, floors, quotas, spreads, the aggregate's cut rows,
which every packing satisfies), maximise level 1. Any solution lays out on the nodes (a
node's surplus slots stay free; pods of a member may share a node, as in pack.py), and
every packing is one, so the model is exact; its LP is Gilmore and Gomory's, far stronger
than per-node variables, whose LP is the aggregate one (slow-awkward-20: 18,727 against the
optimum 18,188 after 40 s of CP-SAT on per-node variables, 8 workers).

SCIP solves it (branch and bound on that LP, one thread, a node limit, no wall-clock limit,
so the answer is deterministic): on slow-awkward-20's 1,463 maximal patterns it proves
18,188 in 2 search nodes, 0.2 CPU s, where CP-SAT on the same model had not found 15,000 in
60 s. The answer is used only when SCIP proves it optimal and its layout checks node by
node (and the integer bound, rounded down, equals it); otherwise nothing changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from router.solve.nodes import Capacity
from router.solve.pack import Block, Packing, fits_count, runs, valid_layout
from router.solve.patterns import maximal

Aggregate = Any  # router.solve.aggregate.Aggregate (imports flow one way)

# Columns (patterns over every class) past which the model is not built: its LP then costs
# more than the rounds it would replace (see cpsat's docstring for the figures).
MAX_COLUMNS = 5_000
NODE_LIMIT = 2_000  # SCIP's branch-and-bound nodes


@dataclass
class Exact:
    counts: dict[int, int]  # aggregate variable -> members placed
    value: int  # level 1 of the component, proven optimal
    packings: dict[int, Packing]  # capacity component -> the layout


def solve_exact(
    agg: Aggregate,
    variables: list[int],
    groups: list[int],
    rows: list[int],
    terms: list[tuple[int, int]],
) -> Exact | None:
    """The component's level-1 optimum with a packing (module docstring); None when the
    model does not apply, is too large, or SCIP proves nothing within NODE_LIMIT."""
    from ortools.linear_solver import pywraplp  # type: ignore[import-untyped]

    caps = sorted({agg.cap_of[v] for v in variables})
    # Per class (capacity component, group index): its demand kinds and maximal patterns.
    classes: list[tuple[int, int]] = [
        (ci, g) for ci in caps for g in range(len(agg.capacity[ci].groups))
    ]
    kinds: dict[tuple[int, int], list[tuple[int, ...]]] = {}
    pats: dict[tuple[int, int], list[tuple[int, ...]]] = {}
    columns = 0
    for ci, g in classes:
        grp = agg.capacity[ci].groups[g]
        pods: dict[tuple[int, ...], int] = {}
        for v in variables:
            it = agg.items[v]
            if agg.cap_of[v] != ci or it.whole or grp.node_set not in agg.allowed[v]:
                continue
            if fits_count(grp.free, it.demand):
                pods[it.demand] = pods.get(it.demand, 0) + it.pods * agg.bound(v)
        ds = sorted(pods, reverse=True)
        most = [min(pods[d], fits_count(grp.free, d)) for d in ds]
        found = maximal(grp.free, ds, most) if ds else []
        if found is None:
            return None
        kinds[ci, g], pats[ci, g] = ds, [p for p in found if any(p)]
        columns += len(pats[ci, g])
        if columns > MAX_COLUMNS:
            return None
    s = pywraplp.Solver.CreateSolver("SCIP")
    if s is None:
        return None
    s.SetNumThreads(1)
    s.SetSolverSpecificParametersAsString(
        f"limits/nodes = {NODE_LIMIT}\nrandomization/randomseedshift = 0\n"
    )
    y = {v: s.IntVar(0, agg.bound(v), "") for v in variables}
    lam = {
        c: [s.IntVar(0, agg.capacity[c[0]].groups[c[1]].count, "") for _ in pats[c]]
        for c in classes
    }
    a: dict[tuple[int, tuple[int, int]], Any] = {}
    u: dict[tuple[int, tuple[int, int]], Any] = {}
    for v in variables:
        it = agg.items[v]
        ci = agg.cap_of[v]
        spots = []
        for c in classes:
            if c[0] != ci:
                continue
            grp = agg.capacity[ci].groups[c[1]]
            if grp.node_set not in agg.allowed[v]:
                continue
            if it.whole:
                if grp.empty:
                    u[v, c] = spots_var = s.IntVar(0, grp.count, "")
                    spots.append(spots_var)
            elif fits_count(grp.free, it.demand):
                a[v, c] = spots_var = s.IntVar(0, it.pods * agg.bound(v), "")
                spots.append(spots_var)
        s.Add(s.Sum(spots) == (it.whole or it.pods) * y[v])
    for c in classes:
        grp = agg.capacity[c[0]].groups[c[1]]
        s.Add(s.Sum(lam[c] + [x for (v, cc), x in u.items() if cc == c]) <= grp.count)
        for k, d in enumerate(kinds[c]):
            have = [x for (v, cc), x in a.items() if cc == c and agg.items[v].demand == d]
            s.Add(
                s.Sum(have)
                <= s.Sum([p[k] * x for p, x in zip(pats[c], lam[c], strict=True) if p[k]])
            )
    for g in groups:
        vs = agg.choices[g]
        s.Add(s.Sum([y[v] for v in vs]) <= len(agg.groups[g].members))
        if agg.floors and agg.floors[g]:
            s.Add(s.Sum([y[v] for v in vs]) >= agg.floors[g])
    for r in rows:
        row = agg.rows[r]
        s.Add(s.Sum([c * y[v] for c, v in row.terms]) <= row.rhs)
    s.Maximize(s.Sum([c * y[v] for c, v in terms]))
    if s.Solve() != s.OPTIMAL:
        return None
    counts = {v: round(y[v].solution_value()) for v in variables}
    value = sum(c * counts[v] for c, v in terms)
    if math.floor(s.Objective().BestBound() + 1e-6) > value:
        return None  # within SCIP's gap tolerance only: not a proof at integer precision
    packings: dict[int, Packing] = {}
    for ci in caps:
        sol_a = {(v, c[1]): round(x.solution_value()) for (v, c), x in a.items() if c[0] == ci}
        sol_u = {(v, c[1]): round(x.solution_value()) for (v, c), x in u.items() if c[0] == ci}
        nodes = {c[1]: [round(x.solution_value()) for x in lam[c]] for c in classes if c[0] == ci}
        got = _laid_out(
            agg,
            agg.capacity[ci],
            {c[1]: kinds[c] for c in classes if c[0] == ci},
            {c[1]: pats[c] for c in classes if c[0] == ci},
            nodes,
            sol_a,
            sol_u,
        )
        mine = {v: n for v, n in counts.items() if agg.cap_of[v] == ci and n}
        if got is None or not valid_layout(agg, agg.capacity[ci], got, mine):
            return None
        packings[ci] = got
    return Exact(counts, value, packings)


def _laid_out(
    agg: Aggregate,
    cap: Capacity,
    kinds: dict[int, list[tuple[int, ...]]],
    pats: dict[int, list[tuple[int, ...]]],
    nodes: dict[int, list[int]],
    pods: dict[tuple[int, int], int],
    wholes: dict[tuple[int, int], int],
) -> Packing | None:
    """The solution on the nodes, class by class in index order: whole members first, then
    the patterns (largest first), each kind's slots taking the variables' pods in key order,
    a pattern's surplus slots left free. Runs of nodes that hold the same are one block."""
    p = Packing(cap)
    for g, grp in enumerate(cap.groups):
        contents: list[tuple[tuple[int, int], ...]] = []
        for v in sorted(v for v, gg in wholes if gg == g):
            n = wholes[v, g]
            contents.extend([((v, -1),)] * n)
        queues = {
            d: [
                v
                for v in sorted(v for v, gg in pods if gg == g)
                if agg.items[v].demand == d
                for _ in range(pods[v, g])
            ]
            for d in kinds.get(g, [])
        }
        order = sorted(range(len(pats.get(g, []))), key=lambda i: pats[g][i], reverse=True)
        for i in order:
            for _ in range(nodes[g][i]):
                content: dict[int, int] = {}
                for k, d in enumerate(kinds[g]):
                    q = queues[d]
                    take, queues[d] = q[: pats[g][i][k]], q[pats[g][i][k] :]
                    for v in take:
                        content[v] = content.get(v, 0) + 1
                if content:
                    contents.append(tuple(sorted(content.items())))
        if any(queues.values()) or len(contents) > grp.count:
            return None
        contents.extend([()] * (grp.count - len(contents)))
        for lo, count, held in runs(contents):
            free = list(grp.free)
            for v, per in held:
                if per < 0:
                    free = [0] * len(free)
                else:
                    free = [f - per * d for f, d in zip(free, agg.items[v].demand, strict=True)]
            p.blocks.append(Block(g, lo, count, tuple(free), grp.empty and not held, held))
    placed: dict[int, int] = {}
    for (v, _), n in pods.items():
        placed[v] = placed.get(v, 0) + n
    for (v, _), n in wholes.items():
        placed[v] = placed.get(v, 0) + n
    p.placed = {v: n // (agg.items[v].whole or agg.items[v].pods) for v, n in placed.items() if n}
    return p
