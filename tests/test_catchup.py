"""CatchUp: the plan a task follows for a few runs before its own schedule takes over."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from lldsched import ExecutionRecord, FixedDelay, FixedRate, OverrunPolicy
from lldsched.checks import FINEST
from lldsched.schedules.base import next_run_and_skipped
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


def test_a_run_that_outlasts_the_slot_to_resume_at_of_a_microsecond_rate_skips_each_slot() -> None:
    # The finest period there is, in 2027: slots a period apart are 0.95 or 1.19 us
    # apart as floats (a float's step there is 0.24 us), never one slot counted twice.
    # The run from the slot before the one to resume at outlasts it by two periods: that
    # slot and the next are skipped, and the one after runs, each a slot of its own.
    start = 1_800_000_000.0
    then = start + 3e-6
    plan = CatchUp(FixedRate(FINEST), [], then, resumes=True)
    due, skipped = next_run_and_skipped(plan, ran(start, start + 5.1e-6), limit=10)
    assert due is not None and len(skipped) == 2 and skipped[0] == then
    assert all(later - earlier > FINEST / 2 for earlier, later in pairwise([*skipped, due]))


def test_the_plans_last_run_hands_back_to_the_own_schedule_skipped_slots_included() -> None:
    plan = CatchUp(FixedRate(60), [60], SCHEDULE_DECIDES)
    assert next_run_and_skipped(plan, ran(0, 1), limit=10) == (60, ())
    # The last run (60) took until 250: 120, 180 and 240 passed, skipped as by the rate.
    assert next_run_and_skipped(plan, ran(60, 250), limit=10) == (300, [120, 180, 240])
    assert plan.spent


def test_a_slot_to_resume_at_is_skipped_by_a_run_that_outlasts_it_a_decided_one_is_not() -> None:
    def answer(plan: CatchUp, finished: float) -> tuple[float | None, Sequence[float]]:
        return next_run_and_skipped(plan, ran(0, finished), limit=10)

    rate = FixedRate(60)
    assert answer(CatchUp(rate, [], 600.0, resumes=True), 590) == (600.0, ())
    assert answer(CatchUp(rate, [], 600.0, resumes=True), 650) == (660, [600.0])
    # CATCH_UP runs every slot late, the slot to resume at too.
    catching_up = FixedRate(60, OverrunPolicy.CATCH_UP)
    assert answer(CatchUp(catching_up, [], 600.0, resumes=True), 650) == (600.0, ())
    # run_now's put-off slot (slot_first) runs late, as decided.
    assert answer(slot_first(rate, 600.0), 650) == (600.0, ())
    # The plan made anew keeps what its slot to resume at is.
    moved = CatchUp(rate, [30], 600.0, resumes=True).shifted(-60)
    # Where a misfire decision's runs end (kept with the row) moves with the clock too.
    decided = CatchUp(rate, [30, 90], SCHEDULE_DECIDES, until=150).shifted(-60)
    assert (decided.slots, decided.until) == ((-30, 30), 90)
    assert next_run_and_skipped(moved, ran(0, 1), limit=10) == (-30, ())
    assert next_run_and_skipped(moved, ran(-30, 650), limit=10) == (690, [540.0, 600, 660])
    put_off = slot_first(CatchUp(rate, [], 600.0, resumes=True), 30)
    assert next_run_and_skipped(put_off, ran(0, 1), limit=10) == (30, ())
    assert next_run_and_skipped(put_off, ran(30, 650), limit=10) == (690, [600.0, 660])
    # A fixed delay has no slots to skip: the slot to resume at runs late, as before.
    assert answer(CatchUp(FixedDelay(60), [], 600.0, resumes=True), 650) == (600.0, ())
