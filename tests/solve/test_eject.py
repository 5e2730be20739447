"""solve/eject.py on hand-made nodes: one more member, pods of the plan moved to make room."""

from __future__ import annotations

from router.solve.eject import Nodes
from router.solve.nodes import Capacity, Item, NodeGroup
from router.solve.pack import Block, Packing

GiB = 1024
FULL = (0, 16, 64 * GiB)
A = Item(0, 1, (0, 12, 8 * GiB))  # CPU-heavy
B = Item(0, 1, (0, 2, 40 * GiB))  # memory-heavy
NEW = Item(0, 1, (0, 8, 32 * GiB))


def _cap(sets: tuple[str, ...] = ("k", "k")) -> Capacity:
    groups = [NodeGroup(s, 1, FULL, True, (i,)) for i, s in enumerate(sets)]
    targets = {s: frozenset({s}) for s in sets}
    return Capacity(sets[0], ("gpus", "cpus", "memory"), FULL, groups, targets)


def _packing(cap: Capacity, per_node: list[dict[int, int]], items: dict[int, Item]) -> Packing:
    p = Packing(cap)
    for g, content in enumerate(per_node):
        free = list(FULL)
        for key, n in content.items():
            free = [f - n * d for f, d in zip(free, items[key].demand, strict=True)]
            p.placed[key] = p.placed.get(key, 0) + n
        p.blocks.append(Block(g, 0, 1, tuple(free), not content, tuple(sorted(content.items()))))
    return p


def _loads(p: Packing, items: dict[int, Item]) -> list[tuple[int, ...]]:
    """Each node's used amounts, recomputed from its content (and its free amount checked)."""
    out = []
    for b in p.blocks:
        used = [0, 0, 0]
        for key, n in b.content:
            used = [u + n * d for u, d in zip(used, items[key].demand, strict=True)]
        assert [f - u for f, u in zip(FULL, used, strict=True)] == list(b.free)
        assert all(u <= f for u, f in zip(used, FULL, strict=True))
        out.append(tuple(used))
    return out


def test_a_pod_of_the_plan_moves_over_to_make_room() -> None:
    # node 0: A (4 CPUs, 56 GiB free), node 1: B (14 CPUs, 24 GiB free): NEW (8 CPUs, 32 GiB)
    # fits neither beside the plan; A moves to node 1 and NEW takes node 0.
    items = {0: A, 1: B, 2: NEW}
    sets = frozenset({"k"})
    cap = _cap()
    nodes = Nodes(_packing(cap, [{0: 1}, {1: 1}], items), items, dict.fromkeys(items, sets))
    assert nodes.insert(2)
    p = nodes.packing()
    assert p.placed == {0: 1, 1: 1, 2: 1}
    assert [dict(b.content) for b in p.blocks] == [{2: 1}, {0: 1, 1: 1}]
    _loads(p, items)


def test_a_member_that_does_not_fit_leaves_the_nodes_as_they_were() -> None:
    # No two of the three share a node (17 CPUs, 100 GiB, 17 CPUs): two nodes hold two.
    items = {0: A, 1: Item(0, 1, (0, 5, 40 * GiB)), 2: Item(0, 1, (0, 5, 60 * GiB))}
    sets = frozenset({"k"})
    cap = _cap()
    start = _packing(cap, [{0: 1}, {1: 1}], items)
    nodes = Nodes(start, items, dict.fromkeys(items, sets))
    assert not nodes.insert(2)
    assert nodes.packing().blocks == start.blocks
    assert nodes.packing().placed == start.placed


def test_pods_move_only_onto_nodes_of_their_own_targets() -> None:
    # The same nodes as the first test, but A may only run on node set "a" (node 0): the
    # move that made room there is not allowed, and nothing else does.
    items = {0: A, 1: B, 2: NEW}
    cap = _cap(("a", "b"))
    allowed = {0: frozenset({"a"}), 1: frozenset({"b"}), 2: frozenset({"a", "b"})}
    nodes = Nodes(_packing(cap, [{0: 1}, {1: 1}], items), items, allowed)
    assert not nodes.insert(2)
    allowed[0] = frozenset({"a", "b"})
    nodes = Nodes(_packing(cap, [{0: 1}, {1: 1}], items), items, allowed)
    assert nodes.insert(2)


def test_nodes_alike_are_tried_once_so_the_move_that_makes_room_is_found() -> None:
    # 200 full nodes of two D (8 CPUs, 32 GiB: what NEW asks), then node X with A (4 CPUs,
    # 56 GiB free) and node Y with B (14 CPUs, 24 GiB free). NEW goes where a D was, that D
    # where A was, A beside B. Tried on every full node alike (each D ejected, then every
    # node searched for it), the search ran out of its STEPS before X; once per signature
    # it is found.
    d = Item(0, 1, (0, 8, 32 * GiB))
    items = {0: A, 1: B, 2: NEW, 3: d}
    group = NodeGroup("k", 202, FULL, True, tuple(range(202)))
    cap = Capacity("k", ("gpus", "cpus", "memory"), FULL, [group], {"k": frozenset({"k"})})
    p = Packing(cap, placed={0: 1, 1: 1, 3: 400})
    p.blocks = [
        Block(0, 0, 200, (0, 0, 0), False, ((3, 2),)),
        Block(0, 200, 1, (0, 4, 56 * GiB), False, ((0, 1),)),
        Block(0, 201, 1, (0, 14, 24 * GiB), False, ((1, 1),)),
    ]
    nodes = Nodes(p, items, dict.fromkeys(items, frozenset({"k"})))
    assert nodes.insert(2)
    after = nodes.packing()
    assert after.placed == {0: 1, 1: 1, 2: 1, 3: 400}
    contents = [dict(b.content) for b in after.blocks]
    assert contents[0] == {2: 1, 3: 1} and contents[1:200] == [{3: 2}] * 199
    assert contents[200:] == [{3: 1}, {0: 1, 1: 1}]
    _loads(after, items)
