"""Independent parts of the aggregated model: connected components of the graph whose nodes
are targets, joined by every class (all its candidate targets), every quota or spread row
(all the targets it counts on) and every capacity component (targets sharing nodes). No row
and no class spans two components, so each is solved on its own and the optimum of the whole
is the sum of theirs — for every objective level.
"""

from __future__ import annotations

from dataclasses import dataclass

from router.solve.aggregate import Aggregate


@dataclass
class Component:
    groups: list[int]
    variables: list[int]  # aggregate variable indices, increasing
    rows: list[int]  # aggregate row indices, increasing


def components(agg: Aggregate) -> list[Component]:
    """The model's components, made once per model (the LP bound and the solver both ask;
    its classes and rows do not change once built). Read only: callers share them."""
    size = (len(agg.variables), len(agg.rows))
    if agg.parts is None or agg.parts[0] != size:
        agg.parts = (size, _components(agg))
    found: list[Component] = agg.parts[1]
    return found


def _components(agg: Aggregate) -> list[Component]:
    parent: dict[str, str] = {}

    def find(a: str) -> str:
        root = a
        while parent.setdefault(root, root) != root:
            root = parent[root]
        while parent[a] != root:  # path compression
            parent[a], a = root, parent[a]
        return root

    def union(ids: list[str]) -> None:
        first = find(ids[0])
        for other in ids[1:]:
            o = find(other)
            if o != first:
                # The smaller id is the root, so the result does not depend on the order.
                first, o = min(first, o), max(first, o)
                parent[o] = first

    ids = [c.target.id for c in agg.all_candidates()]
    for g in range(len(agg.groups)):
        union([ids[v] for v in agg.choices[g]])
    for row in agg.rows:
        union(sorted({ids[v] for _, v in row.terms}))
    for cap in agg.capacity:  # targets on the same nodes pack together
        union(cap.targets)

    by_root: dict[str, Component] = {}
    for g in range(len(agg.groups)):
        root = find(ids[agg.choices[g][0]])
        comp = by_root.setdefault(root, Component([], [], []))
        comp.groups.append(g)
        comp.variables.extend(agg.choices[g])
    for r, row in enumerate(agg.rows):
        by_root[find(ids[row.terms[0][1]])].rows.append(r)
    return [by_root[k] for k in sorted(by_root)]
