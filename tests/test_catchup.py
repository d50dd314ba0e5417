"""CatchUp: the plan a task follows for a few runs before its own schedule takes over."""

from __future__ import annotations

from lldsched import ExecutionRecord, FixedRate
from lldsched.schedules.catchup import FIRST_RUN, SCHEDULE_DECIDES, CatchUp, slot_first


def ran(slot: float, finished: float) -> ExecutionRecord:
    return ExecutionRecord("t", "t", 1, slot, slot, 0, slot, finished, True)


def test_the_slots_come_first_then_what_follows_then_the_own_schedule() -> None:
    plan = CatchUp(FixedRate(60), [60, 120], 500.0)
    answers = [plan.next_run(ran(0, 1), 1) for _ in range(3)]
    assert answers == [60, 120, 500.0] and plan.spent
    assert plan.next_run(ran(500, 501), 501) == 560  # spent: the own schedule answers


def test_first_run_follows_with_the_own_schedule_counted_from_the_finish() -> None:
    plan = CatchUp(FixedRate(60, start_delay=30), [], FIRST_RUN)
    assert plan.next_run(ran(0, 45), 45) == 75 and plan.spent


def test_slot_first_puts_a_slot_in_front_of_a_schedule_or_of_a_plan() -> None:
    own = FixedRate(60)
    assert slot_first(own, 600).next_run(ran(100, 101), 101) == 600
    plan = slot_first(CatchUp(own, [60, 120], SCHEDULE_DECIDES), 30)
    assert [plan.next_run(ran(0, 1), 1) for _ in range(3)] == [30, 60, 120]
    assert plan.next_run(ran(120, 121), 121) == 180 and plan.inner is own
    spent = CatchUp(own, [], 500.0)
    spent.next_run(ran(0, 1), 1)
    assert slot_first(spent, 900).next_run(ran(0, 1), 1) == 900


def test_a_plan_reads_as_what_it_hands_out() -> None:
    # What a log line names when the schedule behind a plan raises (core/runs.py).
    own = FixedRate(60)
    assert repr(CatchUp(own, [60.0, 120.0], SCHEDULE_DECIDES, shift=-3600)) == (
        "CatchUp(FixedRate(60), 2 slots left, then its schedule, a record moved by -3600 s)"
    )
    assert repr(CatchUp(own, [], FIRST_RUN)) == (
        "CatchUp(FixedRate(60), 0 slots left, then its first run)"
    )
    assert repr(CatchUp(own, [], 500.0)) == "CatchUp(FixedRate(60), 0 slots left, then 500.0)"
