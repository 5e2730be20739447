"""One more member by a large neighbourhood search from the plan's own packing.

The last fill's last resort (greedy._repaired), on components past greedy.TOPPED_NODES
whose nodes differ (running work on each makes nearly every node a class of its own, so the
node patterns are per-node counts) and on one node class under more shapes than the node
patterns' model takes. There a member left out often fits once a handful of nodes trade
pods: the audit's justfit medium seed 1 (37 nodes in 36 classes, 61 CPUs each, at most 16
CPUs free on any node after the plan) takes a 20- or 21-CPU job once 3-9 nodes change.
The regions (region.py: the roomiest nodes re-packed) miss them, and CP-SAT's search of
the whole component finds them by the luck of its seed (for the 21-CPU job, under one of
eight seeds and linearization levels in 2 deterministic s).

Here the per-node model of the component (pack.node_model) gets the new member as optional
(z), the plan's packing as the hint (a solution with z = 0), and the objective
(N + 1)·z − Σ_n c_n, where c_n says node n's counts differ from the plan's: CP-SAT's LNS
alone (its neighbourhoods relax a few nodes' counts of the hint at a time and ask for a
better objective, which only z = 1 gives) finds those packings at 0.4-0.7 deterministic s,
changing 5-9 nodes. One worker, the search interleaved (deterministic whatever the machine),
stopped at the first solution with z = 1; no proof: a member it does not place is
undecided, not out.
"""

from __future__ import annotations

from router.solve.eject import Nodes
from router.solve.nodes import Item
from router.solve.pack import Entry, Packing, node_model, witness

REPAIR_LIMIT = 1.0  # deterministic s of one try
# Node × kind pairs of the model at most (pack.EXACT_CELLS is the exact tries' on small
# components): the audit's mig medium seed 1 has 133 nodes and some 100 kinds in one pool.
REPAIR_CELLS = 40_000


def repaired(state: Nodes, key: int, limit: float = REPAIR_LIMIT) -> tuple[Packing | None, float]:
    """A packing of `state`'s members and one more of `key` that differs from `state` on as
    few nodes as the search finds, or None; and the deterministic s spent."""
    from ortools.sat.python import cp_model

    cap = state.cap
    counts: dict[int, int] = {k: n for k, n in state.placed.items() if n}
    counts[key] = counts.get(key, 0) + 1
    entries = [Entry(k, state.items[k], state.allowed[k], n) for k, n in sorted(counts.items())]
    built = node_model(cap, entries, every_node=True, cells=REPAIR_CELLS)
    if built is None:
        return None, 0.0
    model, x = built.model, built.x
    kind = {e.key: built.keys.index((e.item, e.allowed)) for e in entries}
    at = {g_j: n for n, g_j in enumerate(built.nodes)}
    held: dict[tuple[int, int], int] = {}  # the plan's counts per (kind, node)
    for n in range(len(state.free)):
        for k, per in state.content[n].items():
            cell = (kind[k], at[state.group[n], state.offset[n]])
            if cell not in x:
                return None, 0.0  # a pod the model has no room for: no hint to start from
            held[cell] = held.get(cell, 0) + (1 if per < 0 else per)
    z = model.new_bool_var("z")
    new = kind[key]
    for k, kind_key in enumerate(built.keys):
        item = kind_key[0]
        assert isinstance(item, Item)
        per = item.whole or item.pods
        need = sum(e.members for e in built.kinds[kind_key]) * per
        cells = [x[k, n] for n in range(len(built.nodes)) if (k, n) in x]
        model.add(sum(cells) == (need - per + per * z if k == new else need))
    changed = [model.new_bool_var("") for _ in built.nodes]
    for (k, n), v in x.items():
        model.add(v == held.get((k, n), 0)).only_enforce_if(~changed[n])
        model.add_hint(v, held.get((k, n), 0))
    for c in changed:
        model.add_hint(c, False)
    model.add_hint(z, False)
    model.maximize((len(built.nodes) + 1) * z - sum(changed))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.interleave_search = True
    solver.parameters.use_lns_only = True
    solver.parameters.random_seed = 0
    solver.parameters.max_deterministic_time = limit
    found: dict[tuple[int, int], int] = {}

    class FirstPlaced(cp_model.CpSolverSolutionCallback):
        """Keeps the counts of the first solution with z = 1 and stops there."""

        def on_solution_callback(self) -> None:
            if not found and self.value(z):
                found.update((c, int(self.value(v))) for c, v in x.items())
                self.stop_search()

    solver.solve(model, FirstPlaced())
    spent = solver.deterministic_time
    if not found:
        return None, spent
    return witness(cap, entries, built, found), spent
