"""One more member on identical nodes: a packing of given pod counts by diving on the LP of
node patterns (the last fill's final try, configs.py).

The worth model of configs.py is solved over a fixed set of patterns within a deterministic
limit; on a component of many memory-bound nodes and 20-30 shapes it can end below its LP
bound while single members left out would still fit a re-packing (the `big` family, small
seed 5: 153 nodes of 128 CPUs and 512 GiB, 25 shapes, 96 left out, of which router's
referee re-packed 56 one at a time). Here the question is only whether the placed pods
plus one more pack onto the N nodes of one class: with z_p nodes on pattern p (a_ps pods of
shape s) and d_s pods of each shape,

  min Σ_p z_p   s.t.   Σ_p a_ps z_p ≥ d_s  (every shape s)

whose LP (GLOP) is priced by configs' knapsack (a pattern with Σ_s π_s a_ps > 1 joins; a
whole-node shape's only pattern is that node alone). Past N nodes the LP says no. Else a
dive: first a batch of the patterns of largest z at once (each on its integer part or one
node, while it still covers half of what it would alone, up to half of the nodes left:
where most z are below 1, one node a step costs an LP a node, 110 on awkward medium seed
2's k0), else the pattern of largest z taken on its integer part (at least one node), the
rest re-solved, a few alternatives per step (DIVE_STEPS steps back beyond one a node), a
bounded number of LPs in all; an integral LP solution ends it; once the maximal patterns of
what is left are few, CP-SAT covers it over all of them (_rest). Deterministic: fixed
orders, GLOP (deterministic) and CP-SAT with one worker, a seed and a deterministic limit,
and budgets of steps and of LPs.
"""

from __future__ import annotations

from collections.abc import Callable

Pattern = tuple[int, ...]
# per-shape caps, duals -> the pattern of most dual worth on one node (value, pattern); where
# the best is not proven, value is an upper bound on it (configs._dive_price, _generated)
Price = Callable[[dict[int, int], dict[int, float]], tuple[float, Pattern] | None]
# per-shape caps -> every maximal pattern of one node within them, or None: too many
Listed = Callable[[dict[int, int]], list[Pattern] | None]

CG_ROUNDS = 30  # patterns priced in per LP, at most
MANY_ROUNDS = 300  # ... where the shapes are many (configs.MAX_SHAPES): more columns needed
DIVE_TRIES = 3  # patterns tried at each step of the dive, largest z first ...
DIVE_STEPS = 40  # ... and steps back, beyond one a node (each step solves an LP or _rest)
REST_LIMIT = 0.2  # deterministic s of CP-SAT over every pattern of the rest (_rest)
EPS = 1e-6
SEED = 0


def packed(
    demand: list[int],
    nodes: int,
    most: list[int],
    whole: set[int],
    columns: list[Pattern],
    price: Price,
    listed: Listed,
    lps: list[int],
    rounds: int = CG_ROUNDS,
    kept: list[Pattern] | None = None,
    said: list[str] | None = None,
) -> list[tuple[Pattern, int]] | None:
    """Nodes per pattern (at most `nodes` in all) holding at least `demand[s]` pods of each
    shape s, or None if the LP says they do not fit or the dive finds none. `most[s]`: pods
    of s one node may hold; `columns`: patterns to start from (the current nodes', and the
    whole-node ones); `price`: the best pattern under duals within per-shape caps; `listed`:
    all maximal patterns within caps, where few (then the rest is solved exactly, _rest);
    `lps`: LPs left to solve, shared by the caller's tries (decremented here); `rounds`:
    pricings per LP at most; `kept`, if given, receives every column the LPs had, for the
    caller's next try to start from (a pattern fits a node whatever the demand); `said`, if
    given, receives "no" when the first LP needs more than `nodes`, "open" when it ran out
    of rounds or LPs first (a packing may exist), nothing else."""
    known = dict.fromkeys(p for p in columns if any(p))  # in order; carried ones: 1,000s
    for s, n in enumerate(most):
        alone = tuple(min(n, demand[s]) if k == s else 0 for k in range(len(demand)))
        if s not in whole and alone[s]:
            known.setdefault(alone)
    cols = list(known)
    # A step takes at least one node: where the LP's z are mostly below 1, one node a step.
    budget = [nodes + DIVE_STEPS]

    def down(left: list[int], room: int) -> list[tuple[Pattern, int]] | None:
        budget[0] -= 1
        if budget[0] < 0:
            return None
        every = listed({s: min(n, left[s]) for s, n in enumerate(most) if left[s] and n})
        if every is not None:  # few patterns hold what is left: all of them, exactly
            alone = [p for p in cols if any(p[s] for s in whole)]
            return _rest(left, room, every + alone)
        lp = _generated(left, most, whole, cols, price, lps, rounds)
        if said is not None and room == nodes and left == demand:
            said[:] = ["open"] if lp is None else ["no"] if lp[0] > room + EPS else []
        if lp is None or lp[0] > room + EPS:
            return None
        z = lp[1]
        if all(abs(x - round(x)) < EPS for x in z) and sum(round(x) for x in z) <= room:
            return [(cols[i], round(x)) for i, x in enumerate(z) if round(x) > 0]
        order = sorted((i for i, x in enumerate(z) if x > EPS), key=lambda i: (-z[i], i))
        batch = _batch(cols, order, z, left, room)
        if len(batch) > 1:
            after = list(left)
            for i, n in batch:
                after = [max(0, d - a * n) for d, a in zip(after, cols[i], strict=True)]
            taken = [(cols[i], n) for i, n in batch]
            if not any(after):
                return taken
            deeper = down(after, room - sum(n for _, n in batch))
            if deeper is not None:
                return [*taken, *deeper]
            if budget[0] < 0:
                return None
        for i in order[:DIVE_TRIES]:
            n = min(room, max(1, int(z[i] + EPS)))
            after = [max(0, d - a * n) for d, a in zip(left, cols[i], strict=True)]
            if not any(after):
                return [(cols[i], n)]
            deeper = down(after, room - n)
            if deeper is not None:
                return [(cols[i], n), *deeper]
            if budget[0] < 0:
                return None
        return None

    got = down(list(demand), nodes)
    if kept is not None:
        kept[:] = cols
    if got is None:
        return None
    merged: dict[Pattern, int] = {}
    for p, n in got:
        merged[p] = merged.get(p, 0) + n
    return sorted(merged.items(), reverse=True)


def _batch(
    cols: list[Pattern], order: list[int], z: list[float], left: list[int], room: int
) -> list[tuple[int, int]]:
    """A batch step: (column, nodes) for the columns of largest z, each on its integer part
    (at least one node) while it still covers at least half of what it would have covered
    of the demand before the batch, up to half of the nodes left (two of two or three)."""
    most = min(room, max(2, room // 2))
    after, taken, out = list(left), 0, []
    for i in order:
        if taken >= most:
            break
        n = min(most - taken, max(1, int(z[i] + EPS)))
        before = sum(min(a * n, d) for a, d in zip(cols[i], left, strict=True))
        useful = sum(min(a * n, d) for a, d in zip(cols[i], after, strict=True))
        if useful <= 0 or 2 * useful < before:
            continue
        after = [max(0, d - a * n) for d, a in zip(after, cols[i], strict=True)]
        out.append((i, n))
        taken += n
    return out


def _generated(
    demand: list[int],
    most: list[int],
    whole: set[int],
    cols: list[Pattern],
    price: Price,
    lps: list[int],
    rounds: int = CG_ROUNDS,
) -> tuple[float, list[float]] | None:
    """The LP over `cols`, with patterns priced in while one has reduced cost below 0 (new
    ones appended to `cols`): its value and z per column, or None if GLOP fails or `lps`
    runs out. Where the price returns a pattern already among the columns with a worth
    above 1 (an upper bound it could not prove lower, configs._dive_price), the value is
    Farley's lower bound instead (the LP's value divided by that worth): a "no" must be a
    proof."""
    from ortools.linear_solver import pywraplp  # type: ignore[import-untyped]

    shapes = [s for s, d in enumerate(demand) if d > 0]
    for _ in range(rounds):
        lps[0] -= 1
        if lps[0] < 0:
            return None
        lp = pywraplp.Solver.CreateSolver("GLOP")
        z = [lp.NumVar(0, lp.infinity(), "") for _ in cols]
        rows = {}
        for s in shapes:
            row = lp.Constraint(demand[s], lp.infinity())
            for k, p in enumerate(cols):
                if p[s]:
                    row.SetCoefficient(z[k], p[s])
            rows[s] = row
        objective = lp.Objective()  # Σ z, set term by term (Minimize(sum(z)) builds an expression)
        for v in z:
            objective.SetCoefficient(v, 1)
        objective.SetMinimization()
        if lp.Solve() != pywraplp.Solver.OPTIMAL:
            return None
        duals = {s: max(0.0, row.dual_value()) for s, row in rows.items()}
        caps = {s: min(most[s], demand[s]) for s in shapes if s not in whole}
        best = price(caps, duals)
        if best is None or best[0] <= 1 + EPS or best[1] in cols:
            value = float(lp.Objective().Value())
            if best is not None and best[0] > 1 + EPS:
                value /= best[0]  # not proven optimal: Farley's bound, π·d / max_p π·a_p
            return value, [v.solution_value() for v in z]
        cols.append(best[1])
    return None


def _rest(left: list[int], room: int, patterns: list[Pattern]) -> list[tuple[Pattern, int]] | None:
    """CP-SAT over `patterns` (one worker, fixed seed, REST_LIMIT): nodes per pattern, at
    most `room`, covering `left`; None if it finds none."""
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    z = [m.new_int_var(0, room, "") for _ in patterns]
    m.add(sum(z) <= room)
    for s, d in enumerate(left):
        if d:
            m.add(sum(p[s] * z[k] for k, p in enumerate(patterns) if p[s]) >= d)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = SEED
    solver.parameters.max_deterministic_time = REST_LIMIT
    if solver.solve(m) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return [(p, n) for p, v in zip(patterns, z, strict=True) if (n := int(solver.value(v)))]
