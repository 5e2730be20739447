"""solve/preempt.py: which planned work keeps its place, and the start that puts it back."""

from __future__ import annotations

from router.solve.preempt import planned_start, protected
from tests.solve.handmade import Cls, aggregate, var


def test_planned_work_is_protected_from_equal_or_lower_priority() -> None:
    agg = aggregate(
        [Cls(1, 1, [("t1", 0)], priority=2, previous="t1"), Cls(1, 1, [("t1", 0)], priority=2)],
        {"t1": 1},
    )
    assert protected(agg) == [True, False]


def test_a_higher_priority_newcomer_on_its_target_lifts_the_protection() -> None:
    agg = aggregate(
        [Cls(1, 1, [("t1", 0)], priority=2, previous="t1"), Cls(1, 1, [("t1", 0)], priority=8)],
        {"t1": 1},
    )
    assert protected(agg) == [False, False]
    # ... but not a newcomer that wants other targets only
    agg = aggregate(
        [Cls(1, 1, [("t1", 0)], priority=2, previous="t1"), Cls(1, 1, [("t2", 0)], priority=8)],
        {"t1": 1, "t2": 1},
    )
    assert protected(agg) == [True, False]


def test_preemptible_planned_work_is_never_protected() -> None:
    agg = aggregate([Cls(1, 1, [("t1", 0)], previous="t1", preemptible=True)], {"t1": 1})
    assert protected(agg) == [False]


def test_planned_start_puts_work_back_then_elsewhere_and_floors_what_it_placed() -> None:
    # Three planned members were on t1, which now holds two: two go back, one to t2.
    agg = aggregate(
        [Cls(3, 1, [("t1", 0), ("t2", 1)], previous="t1"), Cls(2, 1, [("t2", 0)])],
        {"t1": 2, "t2": 2},
    )
    found = planned_start(agg)
    assert found is not None
    start, floors = found
    assert start[var(agg, 0, "t1")] == 2 and start[var(agg, 0, "t2")] == 1
    assert floors == [3, 0]  # protected: all three stay placed; the newcomer has no floor
    assert start[var(agg, 1, "t2")] == 1  # completed first-fit: t2's last place


def test_no_planned_work_no_start() -> None:
    assert planned_start(aggregate([Cls(1, 1, [("t1", 0)])], {"t1": 1})) is None


def test_the_rule_is_the_one_plan_json_and_explain_use() -> None:
    """solve/preempt.py and plan/preempted.py read one rule (models/workload.py)."""
    from router.models import Workload
    from router.models.workload import keeps_its_place
    from router.plan.preempted import holds_its_place

    for planned_p, preemptible, newcomer_p in [(2, False, 2), (2, False, 4), (4, True, 1)]:
        agg = aggregate(
            [
                Cls(1, 1, [("t1", 0)], priority=planned_p, previous="t1", preemptible=preemptible),
                Cls(1, 1, [("t1", 0)], priority=newcomer_p),
            ],
            {"t1": 1},
        )
        planned = Workload.model_validate(
            {"name": "a", "priority": planned_p, "preemptible": preemptible}
        )
        newcomer = Workload.model_validate({"name": "b", "priority": newcomer_p})
        rule = keeps_its_place(planned_p, preemptible, newcomer_p)
        assert protected(agg)[0] == holds_its_place(planned, newcomer) == rule
    assert [
        keeps_its_place(2, False, 2),
        keeps_its_place(2, False, 4),
        keeps_its_place(4, True, 1),
    ] == [True, False, False]
