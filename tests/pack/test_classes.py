"""The proof of "no" by node patterns over several node classes (router/plan/classes.py)."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

from router.plan.classes import packed, proves_short
from router.plan.packing import Node, Problem, Work, _bounds, check, check_assignment

DATA = Path(__file__).parent / "data" / "running-m0-p0.json"


def running_m0(extra: bool = True) -> Problem:
    doc = json.loads(DATA.read_text())
    nodes = [Node(g, c, m, (), idle) for g, c, m, idle, n in doc["nodes"] for _ in range(n)]
    work = [
        Work(f"j{k}", "hpc/p0", n, tasks, g, c, m, (), whole)
        for k, (g, c, m, tasks, whole, n) in enumerate(doc["jobs"])
    ]
    if not extra:  # the placed jobs alone: the (1 CPU, 88 GiB) job is one of a shape of its own
        at = next(k for k, w in enumerate(work) if (w.cpus, w.memory) == (1, 90112))
        work[at] = Work(work[at].name, "hpc/p0", work[at].units - 1, 1, 0, 1, 90112)
    ids = [f"hpc/p0[{i}]" for i in range(len(nodes))]
    return Problem("hpc/p0", ids, nodes, {"hpc/p0": tuple(range(len(nodes)))}, work)


def test_the_referees_ask_on_a_running_medium_component_is_decided() -> None:
    """78 nodes of 42 classes: per-node CP-SAT leaves the ask open in its 2 s; the LP over
    the classes proves it does not pack, and the placed jobs alone are not called short."""
    p = running_m0()
    assert len(set(p.nodes)) == 42
    verdict = check(p, 2.0)
    assert verdict.packs is False
    assert "no assignment onto its 78 nodes exists" in verdict.reason
    placed = running_m0(extra=False)
    assert not proves_short(placed, placed.work)


def test_a_dive_over_the_classes_finds_what_the_per_node_search_does_not() -> None:
    """The same component with a (7 CPU, 29 GiB) job asked instead: it packs, by moving a
    dozen jobs over 9 nodes (found by CP-SAT's own search of the whole component in 85 s
    with 8 workers), where per-node CP-SAT in 2 s and the LP over the classes decided
    nothing; the dive on that LP finds a packing, valid node by node."""
    p = running_m0(extra=False)
    asked = replace(p, work=[*p.work, Work("asked", "hpc/p0", 1, 1, 0, 7, 29696)])
    assert not proves_short(asked, asked.work)
    found = packed(asked, asked.work)
    assert found is not None and check_assignment(asked, found) == []
    assert len(found["asked"]) == 1
    verdict = check(asked, 2.0)
    assert verdict.packs is True and check_assignment(asked, verdict.assignment) == []


def test_a_proof_by_classes_is_never_wrong_on_small_cases() -> None:
    """Seeded small cases of two or three node classes (some busy, two targets over
    overlapping node sets, whole-node and 2-node jobs): wherever the LP proves "no", the
    exact per-node search agrees; and it proves some that the totals and the nodes able to
    hold each task (the checker's bounds) do not."""
    proved = beyond = 0
    for seed in range(150):
        rng = random.Random(seed)
        cap = (rng.choice([0, 4, 8]), rng.choice([16, 32, 64]), rng.choice([64, 128]))
        nodes = []
        for _ in range(rng.randint(2, 3)):
            busy = rng.random() < 0.5
            g, c, m = (rng.randint(x // 3, x) if busy else x for x in cap)
            nodes += [Node(g, c, m, (), not busy)] * rng.randint(1, 3)
        everyone = tuple(range(len(nodes)))
        reach = {"a": everyone, "b": everyone[len(nodes) // 2 :]}
        work = [
            Work(
                f"w{k}",
                rng.choice("ab"),
                rng.randint(1, 3),
                rng.choice([1, 1, 2]),
                rng.randint(0, cap[0]),
                rng.randint(1, cap[1] // 2),
                rng.randint(1, cap[2] // 2),
                whole=rng.random() < 0.15,
            )
            for k in range(rng.randint(2, 5))
        ]
        p = Problem("t", [f"n{i}" for i in range(len(nodes))], nodes, reach, work)
        if proves_short(p, work):
            proved += 1
            beyond += not _bounds(p, work)
            assert check(p, 10.0, patterns=False).packs is False, seed
    assert proved > 50 and beyond > 5, (proved, beyond)
