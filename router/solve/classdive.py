"""One more member on nodes of several classes: a packing of given pod counts by diving on
the LP of node patterns per class (the last step's very last try, greedy._by_classes_last).

Running work leaves each node its own free capacity, so a component of 78 nodes may be 42
classes, with too many shapes for configs.py's pattern model (the audit's running medium
seed 0: 199 jobs placed, over 40 shapes; router's referee re-packed 174 of the jobs left
out one at a time, a dozen jobs moved over 9 nodes, where the regions and ejections of the
last step move a few).
dive.py packs one class; here, with N_c nodes in class c, z_cp of them on pattern p (a_ps
pods of shape s, within the class's free capacity and the shapes that may go there), d_s
pods of each shape and a slack t_s per shape,

  min Σ_s t_s   s.t.   Σ_{c,p} a_ps z_cp + t_s ≥ d_s   (π_s),    Σ_p z_cp ≤ N_c   (μ_c)

is 0 when the pods pack. Patterns are priced in per class (a pattern joins when π·a > -μ_c;
the caller's knapsack), a whole-node shape's only pattern that node alone, on classes where
nothing runs. While the LP is 0, a dive: first every pattern gives its class the integer
part of its z at once, else the pattern of largest z gives its class that many nodes (its
integer part, at least one), DIVE_TRIES patterns tried so; the demand and N_c are lowered
and the LP solved again, `lps` LPs in all; it ends when no demand is left, or fails at a
step whose LP needs slack. The LP's columns are handed back (`kept`): the caller's next
try, a member more, starts from them rather than from nothing (slurmx medium seed 2: a
first LP of 30-50 pricing rounds and 1,200-2,000 columns, 1-5 rounds after).
Deterministic: fixed orders, GLOP, the caller's deterministic pricing, budgets of LPs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Pattern = tuple[int, ...]
# class, per-shape caps, duals, the worth to beat -> a pattern of more dual worth on one
# node of the class (the best one, unless a cheaper search finds one above it), or None
Price = Callable[[int, dict[int, int], dict[int, float], float], tuple[float, Pattern] | None]

ROUNDS = 300  # pricings per LP, at most
DIVE_TRIES = 3  # patterns tried at each step, largest z first
EPS = 1e-6


def packed(
    demand: list[int],
    nodes: list[int],
    most: list[list[int]],
    whole: set[int],
    idle: list[bool],
    start: list[list[Pattern]],
    price: Price,
    lps: list[int],
    kept: list[tuple[int, Pattern]] | None = None,
) -> list[dict[Pattern, int]] | None:
    """Per class, nodes per pattern (at most `nodes[c]` in class c) holding at least
    `demand[s]` pods of each shape s, or None when the LP needs slack or the dive finds
    none. `most[c][s]`: pods of s one node of class c may hold (0: s may not go there);
    `idle[c]`: nothing runs on class c (a whole-node shape may take its nodes); `start`:
    per class, patterns to start from (the current nodes'); `lps`: LPs left, shared by the
    caller's tries (decremented here); `kept`, if given, receives the LP's columns (class,
    pattern), for the caller's next try to start from."""
    lp = _LP(demand, nodes, most, whole, idle, price)
    for c, patterns in enumerate(start):
        for p in patterns:
            lp.add(c, p)
    fixed: list[dict[Pattern, int]] = [{} for _ in nodes]

    def down() -> bool:
        if not any(lp.demand):
            return True
        if lps[0] <= 0:
            return False
        lps[0] -= 1
        z = lp.solve()
        if z is None:
            return False
        # Every column's integer part at once first: on nodes of many small classes most
        # z are whole, and one node a step took a step per node (mig medium seed 1: 90).
        batch, undo = [], []
        left = list(lp.left)
        for c, pattern, value in z:
            n = min(left[c], int(value + EPS))
            if n > 0:
                left[c] -= n
                batch.append((c, pattern, n))
        if len(batch) > 1:
            for c, pattern, n in batch:
                undo.append((c, lp.take(c, pattern, n), n))
                fixed[c][pattern] = fixed[c].get(pattern, 0) + n
            if down():
                return True
            for c, before, n in reversed(undo):
                lp.restore(c, before, n)
            for c, pattern, n in batch:
                fixed[c][pattern] -= n
                if not fixed[c][pattern]:
                    del fixed[c][pattern]
        for c, pattern, value in z[:DIVE_TRIES]:
            n = min(lp.left[c], max(1, int(value + EPS)))
            before = lp.take(c, pattern, n)
            fixed[c][pattern] = fixed[c].get(pattern, 0) + n
            if down():
                return True
            fixed[c][pattern] -= n
            if not fixed[c][pattern]:
                del fixed[c][pattern]
            lp.restore(c, before, n)
        return False

    found = down()
    if kept is not None:
        kept[:] = [(c, p) for c, p, _ in lp.columns]
    return fixed if found else None


class _LP:
    """The LP of the module docstring, its demand and node counts lowered as nodes are
    fixed; columns priced in per class."""

    def __init__(
        self,
        demand: list[int],
        nodes: list[int],
        most: list[list[int]],
        whole: set[int],
        idle: list[bool],
        price: Price,
    ) -> None:
        from ortools.linear_solver import pywraplp  # type: ignore[import-untyped]

        self.demand, self.left = list(demand), list(nodes)
        self.most, self.whole, self.idle, self.price = most, whole, idle, price
        self.solver = pywraplp.Solver.CreateSolver("GLOP")
        self.ok = pywraplp.Solver.OPTIMAL
        inf = self.solver.infinity()
        self.rows = [self.solver.Constraint(d, inf) for d in demand]
        self.counts = [self.solver.Constraint(-inf, n) for n in nodes]
        self.objective = self.solver.Objective()
        self.objective.SetMinimization()
        for row in self.rows:
            slack = self.solver.NumVar(0, inf, "")
            row.SetCoefficient(slack, 1)
            self.objective.SetCoefficient(slack, 1)
        self.columns: list[tuple[int, Pattern, Any]] = []
        self.known: set[tuple[int, Pattern]] = set()

    def add(self, c: int, pattern: Pattern) -> bool:
        if (c, pattern) in self.known or not any(pattern):
            return False
        self.known.add((c, pattern))
        var = self.solver.NumVar(0, self.solver.infinity(), "")
        for s, a in enumerate(pattern):
            if a:
                self.rows[s].SetCoefficient(var, a)
        self.counts[c].SetCoefficient(var, 1)
        self.columns.append((c, pattern, var))
        return True

    def take(self, c: int, pattern: Pattern, n: int) -> list[int]:
        """n nodes of class c on `pattern`; returns the demand as it was (for restore)."""
        before = list(self.demand)
        for s, a in enumerate(pattern):
            if a:
                self.demand[s] = max(0, self.demand[s] - a * n)
                self.rows[s].SetLb(self.demand[s])
        self.left[c] -= n
        self.counts[c].SetUb(self.left[c])
        return before

    def restore(self, c: int, before: list[int], n: int) -> None:
        self.demand = before
        for row, d in zip(self.rows, before, strict=True):
            row.SetLb(d)
        self.left[c] += n
        self.counts[c].SetUb(self.left[c])

    def solve(self) -> list[tuple[int, Pattern, float]] | None:
        """The columns of positive z, largest first, once the LP needs no slack (priced
        until it does; None where no pattern improves it)."""
        for _ in range(ROUNDS):
            if self.solver.Solve() != self.ok:
                return None
            if self.objective.Value() < EPS:
                z = [(c, p, v.solution_value()) for c, p, v in self.columns]
                live = [(c, p, x) for c, p, x in z if x > EPS and self.left[c] > 0]
                order = sorted(range(len(live)), key=lambda j: (-live[j][2], j))
                return [live[j] for j in order]
            pi = {s: r.dual_value() for s, r in enumerate(self.rows) if r.dual_value() > EPS}
            if not self._priced(pi):
                return None
        return None

    def _priced(self, pi: dict[int, float]) -> bool:
        """A column of positive reduced cost added to each class that has one."""
        added = False
        # ≥ 0: what one more node of each class is worth; read before any column is added
        worth = [-count.dual_value() for count in self.counts]
        for c, mu in enumerate(worth):
            if self.left[c] <= 0:
                continue
            best: tuple[float, Pattern] | None = None
            for s in sorted(self.whole):
                if self.idle[c] and self.most[c][s] and pi.get(s, 0.0) > mu + EPS:
                    one = tuple(int(k == s) for k in range(len(self.demand)))
                    if best is None or pi[s] > best[0]:
                        best = (pi[s], one)
            caps = {
                s: min(self.most[c][s], self.demand[s])
                for s in pi
                if s not in self.whole and self.most[c][s] and self.demand[s]
            }
            got = self.price(c, caps, pi, mu + EPS) if caps else None
            if got is not None and got[0] > mu + EPS and (best is None or got[0] > best[0]):
                best = got
            if best is not None and self.add(c, best[1]):
                added = True
        return added
