"""What the reasons of a plan cache or skip must not change, on small random platforms
(bounded Hypothesis): PlanState read in the aggregate model's terms against the expanded
per-workload rows; one summary (and one not-preempted note) per class of unplaced workloads
against each workload's own; explain's cheapest displacement, bounds first, against solving
every candidate in order."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import router
from router.explain.blocking import (
    PlanState,
    best_displacement,
    blocking,
    cover_bound,
    displacement,
    least_work,
)
from router.explain.reasons import summarise
from router.plan.build import Plan
from router.plan.preempted import not_preempted
from tests.helpers import INVENTORY, job
from tests.profiles import BOUNDED

pytestmark = pytest.mark.slow

POLICY = """
policy t
rule big: when kind == "training" and gpus >= 8 -> slurm exclusive
rule train: when kind == "training" route slurm else route kubernetes
rule serve: when kind == "inference" route kubernetes prefer lower cost
rule rest: route any prefer lower cost
"""
QUOTA = """
quota team_a:
  for team == "a"
  limit gpus <= {amount}
"""
SPREAD = """
spread web:
  for kind == "inference"
  by labels.app
  across name
"""


def serve(name: str, app: str, gpus: int, cpus: int, replicas: int) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "inference",
        "team": "b",
        "gpus": gpus,
        "cpus": cpus,
        "memory": "16GiB",
        "image": "ghcr.io/x/web:1",
        "labels": {"app": app},
        "replicas": {"min": replicas, "max": replicas},
    }


@st.composite
def workloads(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A few shapes, each drawn several times: classes of identical workloads, some of them
    partly placed, partly left out."""
    shapes = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["training", "batch", "inference"]),
                st.sampled_from([0, 1, 2, 4, 8, 16]),
                st.sampled_from([2, 8, 30, 60]),
                st.sampled_from(["a", "b"]),
                st.sampled_from(["low", "normal", "high"]),
            ),
            min_size=1,
            max_size=4,
        )
    )
    out: list[dict[str, Any]] = []
    for s, (kind, gpus, cpus, team, priority) in enumerate(shapes):
        for k in range(draw(st.integers(2, 6))):
            name = f"s{s}-{k}"
            if kind == "inference":
                out.append(serve(name, f"app{s % 2}", min(gpus, 4), min(cpus, 40), 1 + k % 2))
            else:
                memory = f"{max(8, cpus * 4)}GiB"
                out.append(
                    job(name, kind=kind, gpus=gpus, cpus=cpus, memory=memory, team=team)
                    | {"priority": priority}
                )
    return out


@st.composite
def platforms(draw: st.DrawFn) -> dict[str, Any]:
    inventory = copy.deepcopy(INVENTORY)
    for cluster in inventory["clusters"]:
        for part in cluster.get("partitions", cluster.get("node_pools", [])):
            part["nodes"] = draw(st.integers(1, 2))
            part.pop("max_nodes", None)
    policy = POLICY
    if draw(st.booleans()):
        policy += QUOTA.format(amount=draw(st.sampled_from([4, 8, 16, 24])))
    if draw(st.booleans()):
        policy += SPREAD
    return {"policy": policy, "inventory": inventory, "workloads": draw(workloads())}


def plan_of(
    platform: dict[str, Any], previous: dict[str, str] | None = None
) -> tuple[router.Platform, Plan]:
    p = router.Platform.from_objects(
        policy=platform["policy"], inventory=platform["inventory"], workloads=platform["workloads"]
    )
    before = None
    if previous is not None:
        before = {"placements": [{"workload": n, "target_id": t} for n, t in previous.items()]}
    return p, router.plan(p, before).built


def reference_state(plan: Plan) -> dict[str, Any]:
    """The plan's usage straight from the expanded per-workload rows (as PlanState was built
    before it read the aggregate)."""
    problem = plan.problem
    chosen = set()
    for name, cand in plan.solve.assignment.items():
        i = next(i for i, d in enumerate(problem.decisions) if d.workload.name == name)
        chosen |= {
            v for v in problem.choices[i] if problem.variables[v][1].target.id == cand.target.id
        }
    rows_of: dict[int, list[tuple[int, int]]] = {}
    members = []
    for r, row in enumerate(problem.rows):
        for coef, v in row.terms:
            rows_of.setdefault(v, []).append((r, coef))
        members.append([(v, coef) for coef, v in row.terms if v in chosen])
    weight = next({v: c for c, v in lv.terms} for lv in problem.levels if lv.name == "placed_work")
    return {"rows_of": rows_of, "members": members, "weight": weight}


@settings(BOUNDED, max_examples=30, suppress_health_check=list(HealthCheck))
@given(platforms())
def test_class_cache_and_aggregate_state_change_no_reason(platform: dict[str, Any]) -> None:
    p, plan = plan_of(platform)
    state = PlanState(plan.problem, plan.solve.assignment, plan.solve.nodes)
    ref = reference_state(plan)
    for v in range(len(plan.problem.variables)):
        assert state.rows(v) == ref["rows_of"].get(v, [])
        assert state.weight(v) == ref["weight"][v]
    for r, mine in enumerate(ref["members"]):
        assert state.members(r) == mine
        assert state.used[r] == sum(c for _, c in mine)

    rel = p.project.relative
    status = plan.solve.status
    cache: dict[Any, Any] = {}
    for u in plan.unplaced:
        # Each alone, from a state of its own (no class cache, no overflows shared).
        own = PlanState(plan.problem, plan.solve.assignment, plan.solve.nodes)
        alone = summarise(u.decision, own, rel, status)
        shared = summarise(u.decision, state, rel, status, cache)
        assert (shared.reasons, shared.fix) == (alone.reasons, alone.fix)
        assert (u.reasons, u.fix) == (alone.reasons, alone.fix)  # what plan.json says
        if u.decision.candidates:
            check_displacement(state, blocking(state, state.index[u.decision.workload.name]))


def check_displacement(state: PlanState, b: Any) -> None:
    """best_displacement (bounds first, solves skipped) against solving every candidate in
    candidate order, and its bounds against each solve."""
    best = None
    for v in b.candidates:
        d = displacement(state, v, b.overflows[v])
        lower, least = least_work(state, b.overflows[v]), cover_bound(state, b.overflows[v])
        if d is None:
            continue
        assert lower is not None and least is not None
        assert lower <= d[1] and least <= d[1]
        assert displacement(state, v, b.overflows[v], max(lower, least)) == d
        if best is not None and d[1] >= best[2]:
            continue
        gone = frozenset(state.workload_of(m).name for m in d[0])
        if state.room.blocked(v, without=gone) is None:
            best = (v, d[0], d[1])
    assert best_displacement(state, b) == best


@settings(BOUNDED, max_examples=15, suppress_health_check=list(HealthCheck))
@given(platforms(), st.data())
def test_not_preempted_per_class_is_each_workloads_own(platform: dict[str, Any], data: Any) -> None:
    # The previous plan: the platform's smallest workloads planned alone; the others are new
    # and bigger, and find planned work that is worth less in their way, yet protected.
    ws = sorted(platform["workloads"], key=lambda w: (w["gpus"], w["cpus"], w["name"]))
    k = data.draw(st.integers(1, len(ws)))
    _, first = plan_of(platform | {"workloads": ws[:k]})
    previous = {p.workload.name: p.target.id for p in first.placements}
    _, plan = plan_of(platform, previous)
    state = plan.state
    named = {d.workload.name: d.workload for d in plan.decisions}
    cache: dict[Any, Any] = {}
    for u in plan.unplaced:
        if not u.decision.candidates:
            continue
        assert state is not None
        alone = not_preempted(u.decision, state, plan.solve.assignment, previous, named)
        shared = not_preempted(u.decision, state, plan.solve.assignment, previous, named, cache)
        assert shared == alone
        if alone is not None and not any(r.startswith("preempted on") for r in u.reasons):
            assert u.reasons[-1] == alone  # what plan.json says


def test_one_class_is_summarised_once_and_each_member_says_the_same() -> None:
    # Four identical 16-GPU exclusive jobs (two nodes each) for two h100 and two a100 nodes:
    # two of them wait, of one class, with one reason computed for both.
    inventory = copy.deepcopy(INVENTORY)
    platform = {
        "policy": POLICY,
        "inventory": inventory,
        "workloads": [job(f"j{k}", gpus=16, cpus=64, memory="256GiB") for k in range(4)],
    }
    p, plan = plan_of(platform)
    left = [u for u in plan.unplaced if u.decision.candidates]
    assert len(left) == 2
    state = PlanState(plan.problem, plan.solve.assignment, plan.solve.nodes)
    keys = {state.class_key(state.index[u.decision.workload.name]) for u in left}
    assert len(keys) == 1
    cache: dict[Any, Any] = {}
    got = [summarise(u.decision, state, p.project.relative, "OPTIMAL", cache) for u in left]
    assert len(cache) == 1
    assert got[0].reasons == got[1].reasons == left[0].reasons == left[1].reasons
    assert got[0].reasons is not got[1].reasons  # each Unplaced may add its own notes
    # The two members' own blockings differ only in their variables.
    b0, b1 = (blocking(state, state.index[u.decision.workload.name]) for u in left)
    assert b0.candidates != b1.candidates and b0.core == b1.core


def test_not_preempted_once_per_class_and_priority() -> None:
    # Four planned 8-GPU jobs fill both GPU partitions; three new ones of the same priority
    # but more work would be worth displacing one each, and planned work keeps its place.
    planned = [job(f"a{k}", gpus=8, cpus=8, memory="32GiB") for k in range(4)]
    new = [job(f"z{k}", gpus=8, cpus=60, memory="32GiB") for k in range(3)]
    platform = {"policy": POLICY, "inventory": copy.deepcopy(INVENTORY), "workloads": planned}
    _, first = plan_of(platform)
    previous = {p.workload.name: p.target.id for p in first.placements}
    assert sorted(previous) == ["a0", "a1", "a2", "a3"]
    _, plan = plan_of(platform | {"workloads": planned + new}, previous)
    assert [u.decision.workload.name for u in plan.unplaced] == ["z0", "z1", "z2"]
    note = (
        "not preempted for it on hpc/a100, hpc/h100: planned a0, a2 (priority normal or "
        "higher; only higher priority preempts)"
    )
    assert all(u.reasons[-1] == note for u in plan.unplaced)
    assert plan.state is not None
    named = {d.workload.name: d.workload for d in plan.decisions}
    cache: dict[Any, Any] = {}
    for u in plan.unplaced:
        got = not_preempted(u.decision, plan.state, plan.solve.assignment, previous, named, cache)
        assert got == note
    assert len(cache) == 1
