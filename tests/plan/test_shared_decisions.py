"""Decisions of one routing signature share what the evaluator made for it: the (frozen)
candidates always, the lists too with share_candidates (what `router plan` and the bench use),
and a shared list refuses to be changed in place. Plans are the same either way."""

from __future__ import annotations

import dataclasses

import pytest

import router
from router.evaluate.evaluate import Decision, SharedList
from tests.helpers import EXAMPLE


@pytest.fixture(scope="module")
def platform() -> router.Platform:
    return router.load(EXAMPLE)


def _twins(platform: router.Platform, share: bool) -> tuple[Decision, Decision]:
    ev = platform.evaluator(share)
    base = platform.workloads[0]
    twin = base.model_copy(update={"name": base.name + "-twin"})
    return ev.decide(base), ev.decide(twin)


def test_shared_lists_are_one_list_and_refuse_changes(platform: router.Platform) -> None:
    a, b = _twins(platform, True)
    assert a is not b and a.workload is not b.workload
    assert a.candidates and a.candidates is b.candidates
    assert isinstance(a.excluded, SharedList)
    with pytest.raises(TypeError, match="shared by the decisions"):
        b.candidates.append(b.candidates[0])
    with pytest.raises(TypeError):
        b.candidates.sort(key=lambda c: c.rank)
    assert sorted(b.candidates, key=lambda c: c.rank) == b.candidates


def test_own_lists_share_only_the_frozen_candidates(platform: router.Platform) -> None:
    a, b = _twins(platform, False)
    assert a.candidates == b.candidates and a.candidates is not b.candidates
    assert a.candidates[0] is b.candidates[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.candidates[0].rank = 5  # type: ignore[misc]
    b.candidates.pop()
    assert len(a.candidates) == len(b.candidates) + 1


def test_plans_are_the_same_with_and_without_shared_lists() -> None:
    shared = router.plan(router.load(EXAMPLE), share_candidates=True)
    own = router.plan(router.load(EXAMPLE), share_candidates=False)
    assert shared.json() == own.json()
    assert shared.files() == own.files()
