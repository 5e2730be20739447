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


def first_fit_decreasing(agg: Aggregate) -> list[int]:
    """Counts per aggregate variable."""
    slack = [row.rhs for row in agg.rows]
    touches = rows_of(agg)
    counts = [0] * len(agg.variables)
    order = sorted(range(len(agg.groups)), key=lambda g: (-agg.groups[g].weight, g))
    for g in order:
        left = len(agg.groups[g].members)
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
            counts[v] = n
            left -= n
            for r, coef in touches[v]:
                slack[r] -= coef * n
    return counts


def level_value(agg: Aggregate, level: int, counts: list[int]) -> int:
    return sum(c * counts[v] for c, v in agg.levels[level].terms)
