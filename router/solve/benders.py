"""Do the class counts pack node by node? The checks, the cuts and the repair that the
solver (cpsat.py) runs on every solution of the aggregated model.

Per capacity component (nodes.py), the members that the counts put on its targets are packed
onto its nodes (pack.py). Answers are cached by the component's counts, and every packing
found is kept as the witness that plan.json's node assignment is taken from.

When a component does not pack, the counts are a *no-good*: any counts at least as large on
every one of its variables do not pack either (more members never fit better). The cut
  ∨_{v ∈ S} y_v ≤ c_v − 1
is shrunk by a deletion filter to a set S that still provably does not pack (runs of the
smallest members are dropped, halved when the rest packs, each staying out when the rest is
still proven unpackable; at most DELETION_TRIALS checks of TRIAL_LIMIT, within the
caller's budget), which cuts off far more than the one solution. A cut is added only when
the packing is *proven* impossible (pack.Answer.proven), so it never removes a plan that
packs (cpsat._lifted then sums the cut's variables alike in Item and node sets: one class on
several targets over the same nodes is one term). Verdicts are also known by dominance:
counts at least those of a set proven not to pack do not pack, counts at most those of a set
that packs do.

Repair: the members least worth (class weight) are taken off a component that does not
pack until first fit packs it; the solver then completes the plan greedily on the real
nodes (cpsat.py keeps the best such plan over its rounds), and the plan is reported
FEASIBLE, never OPTIMAL.
"""

from __future__ import annotations

import math
from typing import Any

from router.solve.pack import EXACT_LIMIT, Answer, Entry, Packing, pack, plain_first_fit

# The aggregate (router.solve.aggregate.Aggregate), which builds its Nodes: typed as Any here
# so that imports flow one way (aggregate -> benders).
Aggregate = Any

DELETION_TRIALS = 8  # packings tried per cut while shrinking it
# Deterministic seconds of each of the filter's checks (pack.EXACT_LIMIT for the solution's
# own): a trial the search cannot decide only keeps its variable in the cut, and on an
# awkward 29-node pool seven undecided trials of 2 s each had cost 18 CPU s for one cut.
TRIAL_LIMIT = 0.2


class Nodes:
    def __init__(self, agg: Aggregate) -> None:
        self.agg = agg
        self.by_cap: list[list[int]] = [[] for _ in agg.capacity]
        for v, ci in enumerate(agg.cap_of):
            self.by_cap[ci].append(v)
        self.known: dict[tuple[int, tuple[tuple[int, int], ...]], Answer] = {}
        # Per capacity component, the counts proven not to pack and those that pack (by any
        # search): more members than an unpackable set do not pack, fewer than a packable one
        # do, so both answer checks without a search (dominance).
        self.unpackable: list[list[dict[int, int]]] = [[] for _ in agg.capacity]
        self.packable: list[list[dict[int, int]]] = [[] for _ in agg.capacity]
        # Deterministic seconds of exact checks per capacity component (each belongs to one
        # solver component, solved by one thread: the sum does not depend on the others).
        self.spent = [0.0] * len(agg.capacity)
        self.searches = [0] * len(agg.capacity)  # exact searches run (CP-SAT packings)
        self.tried: dict[tuple[int, tuple[tuple[int, int], ...]], float] = {}  # exact limit

    def key(
        self, ci: int, counts: list[int] | dict[int, int]
    ) -> tuple[int, tuple[tuple[int, int], ...]]:
        get = counts.get if isinstance(counts, dict) else counts.__getitem__
        return ci, tuple((v, n) for v in self.by_cap[ci] if (n := get(v) or 0))

    def entries(self, pairs: tuple[tuple[int, int], ...]) -> list[Entry]:
        agg = self.agg
        return [Entry(v, agg.items[v], agg.allowed[v], n) for v, n in pairs]

    def remember(self, ci: int, counts: list[int], packing: Packing) -> None:
        self.known[self.key(ci, counts)] = Answer(packing.copy(), True)

    def packs(
        self,
        ci: int,
        counts: list[int] | dict[int, int],
        exact: bool = True,
        limit: float = EXACT_LIMIT,
    ) -> Answer:
        """Whether (and how) the members `counts` put on component ci pack, cached (an
        undecided answer is asked again only with a larger `limit`)."""
        k = self.key(ci, counts)
        found = self.known.get(k)
        if found is None and self.covers_unpackable(ci, k[1]):
            found = self.known[k] = Answer(None, True)
        undecided = found is not None and found.packing is None and not found.proven
        if found is None or (undecided and (not exact or limit > self.tried.get(k, limit))):
            found = pack(self.agg.capacity[ci], self.entries(k[1]), exact=exact, limit=limit)
            self.spent[ci] += found.spent
            if found.spent:
                self.searches[ci] += 1
            if exact or found.packing is not None:
                self.known[k] = found
                self.tried[k] = limit
            if found.packing is not None:
                self.packable[ci].append(dict(k[1]))
            elif found.proven:
                self.unpackable[ci].append(dict(k[1]))
        return found

    def covers_unpackable(self, ci: int, pairs: tuple[tuple[int, int], ...]) -> bool:
        """At least the members of a set proven not to pack, on each of its variables."""
        have = dict(pairs)
        return any(all(have.get(v, 0) >= n for v, n in bad.items()) for bad in self.unpackable[ci])

    def within_packable(self, ci: int, pairs: list[tuple[int, int]]) -> bool:
        """At most the members of a set that packs, on each variable (a packing of those
        with the rest taken off is one of these)."""
        return any(all(good.get(v, 0) >= n for v, n in pairs) for good in self.packable[ci])

    def failing(self, counts: list[int], cis: list[int], exact: bool = True) -> list[int]:
        return [ci for ci in cis if self.packs(ci, counts, exact).packing is None]

    def cut(
        self, ci: int, counts: list[int], budget: float = math.inf
    ) -> list[tuple[int, int]] | None:
        """A minimal-ish set of (variable, count) that provably does not pack; None if the
        packing could not be proven impossible. The filter stops once its checks have
        spent `budget` deterministic seconds."""
        first = self.packs(ci, counts)
        if first.packing is not None or not first.proven:
            return None
        agg = self.agg
        full = agg.capacity[ci].full
        scale = [f or 1 for f in full]

        def size(v: int) -> float:
            u: tuple[int, ...] = agg.items[v].usage(full)
            return max(x / s for x, s in zip(u, scale, strict=True))

        kept = sorted(self.key(ci, counts)[1], key=lambda vn: (size(vn[0]), vn[0]))
        # Runs of the smallest left out at once, halved when the rest packs (one variable
        # at a time dropped 8 of slow-awkward-20's 46 in 8 trials; its cores have ~21).
        at, step, trials = 0, max(1, len(kept) // 2), 0
        stop = self.spent[ci] + budget
        while at < len(kept) and trials < DELETION_TRIALS and self.spent[ci] < stop:
            rest = kept[:at] + kept[at + step :]
            if not rest:
                step = max(1, step // 2)
                if len(kept) == 1:
                    break
                continue
            if not self.within_packable(ci, rest):  # else it packs, known without a search
                trials += 1
                a = self.packs(ci, dict(rest), limit=TRIAL_LIMIT)
                if a.packing is None and a.proven:
                    kept = rest
                    continue
                if a.packing is None:
                    break  # undecided: the others, alike, mostly are too
            if step > 1:
                step //= 2
            else:
                at += 1
        return sorted(kept)

    def fit(self, counts: list[int]) -> list[int]:
        """`counts` with, on every component that does not pack, the members least worth
        taken off until first fit packs it (never below a class's floor)."""
        out = list(counts)
        for ci in sorted({self.agg.cap_of[v] for v, n in enumerate(counts) if n}):
            if self.packs(ci, out, exact=False).packing is None:
                self.repair(ci, out)
        return out

    def fresh(self, ci: int, counts: list[int]) -> Packing | None:
        """Plain first-fit decreasing of the counts on ci afresh (pack.plain_first_fit; never
        a cached exact packing)."""
        return plain_first_fit(self.agg.capacity[ci], self.entries(self.key(ci, counts)[1]))

    def repair(self, ci: int, counts: list[int], fresh: bool = False) -> bool:
        """Take members off component ci (in place) until it packs (with `fresh`: until
        first fit packs it afresh); False if it cannot."""
        agg = self.agg

        def packs(trial: list[int]) -> bool:
            if fresh:
                return self.fresh(ci, trial) is not None
            return self.packs(ci, trial, exact=False).packing is not None

        floors = agg.floors
        variables = agg.variables
        # Each class of the component's members placed anywhere (its other candidates too):
        # per class, not over every variable (bench L: 17 repairs per hint, 11k variables).
        placed = {
            g: sum(counts[u] for u in agg.choices[g])
            for g in {variables[v][0] for v in self.by_cap[ci]}
        }
        removable: list[int] = []  # one entry per member, least worth first
        for v in sorted(self.by_cap[ci], key=lambda v: (agg.groups[variables[v][0]].weight, v)):
            g = variables[v][0]
            floor = floors[g] if floors else 0
            n = min(counts[v], max(0, placed[g] - floor))
            placed[g] -= n
            removable.extend([v] * n)

        def without(r: int) -> list[int]:
            trial = list(counts)
            for v in removable[:r]:
                trial[v] -= 1
            return trial

        lo, hi = 0, len(removable)
        if not packs(without(hi)):
            return False
        while lo < hi:  # the fewest removals that pack (first fit is nearly monotone)
            mid = (lo + hi) // 2
            if packs(without(mid)):
                hi = mid
            else:
                lo = mid + 1
        counts[:] = without(hi)
        return True

    def canonical(self, ci: int, counts: list[int]) -> Packing:
        """The same counts get the same nodes, however the solver reached them: a fresh
        first-fit packing, or the solver's witness when first fit finds none."""
        found = pack(self.agg.capacity[ci], self.entries(self.key(ci, counts)[1]), exact=False)
        return found.packing or self.witness(ci, counts)

    def assign(
        self,
        counts: list[int],
        packings: dict[int, Packing] | None = None,
    ) -> dict[int, list[tuple[str, int]]]:
        """Per routed index placed: (node set id, node index) of each of its pods (a
        service's replicas, a job's task) or whole nodes: from `packings` (per capacity
        component, of these counts) where given, else the canonical packing."""
        agg = self.agg
        members = agg.members_of(counts)
        out: dict[int, list[tuple[str, int]]] = {}
        for ci in sorted({agg.cap_of[v] for v in members}):
            given = (packings or {}).get(ci)
            packing = given if given is not None else self.canonical(ci, counts)
            for v in self.by_cap[ci]:
                if v not in members:
                    continue
                where = packing.nodes_of(v)
                per = agg.items[v].whole or agg.items[v].pods
                for k, i in enumerate(members[v]):
                    out[i] = where[k * per : (k + 1) * per]
        return out

    def witness(self, ci: int, counts: list[int]) -> Packing:
        found = self.packs(ci, counts).packing
        assert found is not None, "the plan's counts do not pack"
        return found
