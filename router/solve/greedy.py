"""First-fit decreasing over the aggregated model: the baseline, and the solver's first hint.

Classes in decreasing order of what one member is worth (priority weight × work), each
member on the first of its candidates (by rank, preference place, target id) where every
row it touches still has room. Members of a class are identical, so "each member in turn"
is done in bulk: as many as fit on the first candidate, the rest on the next, and so on —
exactly what placing them one by one would do. The result respects every row, so it is a
complete, feasible hint for CP-SAT.
"""

from __future__ import annotations

from router.solve.aggregate import Aggregate


def rows_of(agg: Aggregate) -> list[list[tuple[int, int]]]:
    """Per variable, the rows it appears in: [(row index, coefficient)]."""
    out: list[list[tuple[int, int]]] = [[] for _ in agg.variables]
    for r, row in enumerate(agg.rows):
        for coef, v in row.terms:
            out[v].append((r, coef))
    return out


def first_fit_decreasing(agg: Aggregate, start: list[int] | None = None) -> list[int]:
    """Counts per aggregate variable; `start` (feasible counts) are kept and completed."""
    touches = rows_of(agg)
    counts = list(start) if start is not None else [0] * len(agg.variables)
    slack = [row.rhs - sum(c * counts[v] for c, v in row.terms) for row in agg.rows]
    order = sorted(range(len(agg.groups)), key=lambda g: (-agg.groups[g].weight, g))
    for g in order:
        left = len(agg.groups[g].members) - sum(counts[v] for v in agg.choices[g])
        vs = sorted(agg.choices[g], key=lambda v: (agg.candidate(v).rank, agg.candidate(v).pref,
                                                    agg.candidate(v).target.id))
        for v in vs:
            if not left:
                break
            n = left
            for r, coef in touches[v]:
                n = min(n, slack[r] // coef)
            if n <= 0:
                continue
            counts[v] += n
            left -= n
            for r, coef in touches[v]:
                slack[r] -= coef * n
    return counts


def level_value(agg: Aggregate, level: int, counts: list[int]) -> int:
    return sum(c * counts[v] for c, v in agg.levels[level].terms)


def rounded(agg: Aggregate, lp_values: list[float], rounds: int = 0) -> list[int]:
    """The LP optimum rounded down, the LP of what is left solved and rounded down again (a
    few times, while it still rounds something), then completed first-fit decreasing.
    Rounding down keeps every row (all coefficients are ≥ 0), and a class of many members
    loses at most one per target, so on large platforms this starts near the LP bound."""
    from router.solve.lp import lp_solve

    start = [int(x + 1e-6) for x in lp_values]
    for _ in range(rounds):
        more = lp_solve(agg, start)[1]
        if more is None:
            break
        step = [int(x + 1e-6) for x in more]
        if not any(step):
            break
        start = [a + b for a, b in zip(start, step, strict=True)]
    return first_fit_decreasing(agg, start)


def best_hint(agg: Aggregate, lp_values: list[float] | None) -> list[int]:
    """The better (level 1) of first-fit decreasing and the rounded LP; ties go to greedy."""
    greedy = first_fit_decreasing(agg)
    if lp_values is None:
        return greedy
    lp = rounded(agg, lp_values)
    return lp if level_value(agg, 0, lp) > level_value(agg, 0, greedy) else greedy


def previous_hint(agg: Aggregate) -> list[int] | None:
    """The hint when re-planning: planned work back where the previous plan put it (as far as
    it still fits), completed first-fit decreasing; None if nobody was planned. Built with
    the aggregate (preempt.py), as it also fixes which planned work must stay placed."""
    return list(agg.start) if agg.start is not None else None
