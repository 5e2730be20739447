"""The packing checker's data: nodes, work, one component's problem and its verdict.

Shared by router/plan/packing.py (bounds, first fit, per-node search) and
router/plan/patterns.py (node patterns), which import it and not each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Node:
    """What one node has free: whole GPUs, MIG slices per profile, CPUs, memory (MiB)."""

    gpus: int
    cpus: int
    memory: int
    slices: tuple[tuple[str, int], ...] = ()
    idle: bool = True  # nothing runs on it: whole-node work may take it

    def slice_count(self, profile: str) -> int:
        return dict(self.slices).get(profile, 0)


@dataclass(frozen=True)
class Work:
    """`units` identical units of placement `name` on `target`, each `tasks` tasks on
    distinct nodes, each task `gpus` whole GPUs, `slices` MIG slices, `cpus`, `memory`."""

    name: str
    target: str
    units: int
    tasks: int
    gpus: int
    cpus: int
    memory: int
    slices: tuple[tuple[str, int], ...] = ()
    whole: bool = False

    @property
    def shape(self) -> tuple[object, ...]:
        return (self.target, self.tasks, self.gpus, self.cpus, self.memory, self.slices, self.whole)


# Node patterns as (task type key, count) pairs (Problem.seed).
Seed = tuple[tuple[tuple[tuple[object, ...], int], ...], ...]


@dataclass
class Problem:
    """One capacity component: its nodes, which of them each target reaches, its work."""

    id: str
    node_ids: list[str]  # printable, e.g. "hpc/h100[3]"
    nodes: list[Node]
    reach: dict[str, tuple[int, ...]]  # target id -> positions in `nodes`
    work: list[Work]
    # Node patterns known to fit these nodes, as (task type key, count) pairs (the keys of
    # router/plan/patterns.py `_types`): column generation starts from them as well. The
    # referee gives each re-pack its component's own LP patterns (patterns.lp_patterns).
    seed: Seed = ()


@dataclass
class Verdict:
    """packs: True (an assignment is given), False (proved impossible), None (unknown)."""

    problem: str
    packs: bool | None
    how: str  # "empty", "bound", "first fit", "extended", "constructive", "exact", "limit"
    reason: str = ""
    # work name -> one list of node positions per unit (one position per task)
    assignment: dict[str, list[list[int]]] = field(default_factory=dict)


def fits(task: Work, node: Node) -> bool:
    """Can one task of `task` run on an otherwise empty `node` (its current free capacity)?"""
    if task.whole and not node.idle:
        return False
    if task.gpus > node.gpus or task.cpus > node.cpus or task.memory > node.memory:
        return False
    return all(n <= node.slice_count(p) for p, n in task.slices)


def deal(counts: dict[tuple[int, int], int], c: int, works: list[Work]) -> list[list[list[int]]]:
    """Split class c's per-node task counts into units of `tasks` distinct nodes each.

    Tasks listed node by node, task t goes to unit t mod U (U units in all): a node holds at
    most U tasks of the class, so its tasks land in different units (McNaughton's wrap-around)."""
    seq = [i for (k, i), n in sorted(counts.items()) if k == c for _ in range(n)]
    total = sum(w.units for w in works)
    units: list[list[int]] = [[] for _ in range(total)]
    for t, i in enumerate(seq):
        units[t % total].append(i)
    out: list[list[list[int]]] = []
    start = 0
    for w in works:
        out.append(units[start : start + w.units])
        start += w.units
    return out
