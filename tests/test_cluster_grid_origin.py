"""A fixed rate's grid across the processes of a shared store (SQLite and PostgreSQL):
the row keeps the grid's origin (``TaskSnapshot.grid``), so a process that loads the row
(started after the task ran) or follows it (the change feed: another process resumed
the task, which started a grid there) counts the slots from the origin the writer
counts from, the very floats (docs/decisions/schedules.md, "A fixed rate's grid origin is kept
in the row").  Before, a process that loaded the row started a grid at the row's slot,
and one that followed it kept the origin it had: each a rounding off the writer's grid
a handover, which adds up."""

from __future__ import annotations

import pytest

from lldsched import FakeClock, FixedRate, Scheduler, Window
from lldsched.testing import Stepper
from tests import jobs
from tests.cluster import StoreSpec, opened
from tests.conftest import T0

RATE = FixedRate(1 / 3 + 0.1)  # an awkward float: its sums at the epoch are no grid's
HALF = RATE.period / 2


@pytest.mark.parametrize("wrapped", [False, True], ids=["rate", "window"])
def test_processes_started_one_after_another_count_the_first_grid(
    store_spec: StoreSpec, wrapped: bool
) -> None:
    """Wrapped in a ``Window``, the rate passes its origin on: the row keeps it, and each
    process counts from it (docs/decisions/schedules.md, "A fixed rate's grid origin passes
    through a Window"); before, the row kept none and each run stepped by a sum."""
    schedule = Window(RATE, end=T0 + 86_400) if wrapped else RATE
    now = T0
    with opened(store_spec, 1) as (store,):
        for life in range(8):  # each process loads the row the one before left
            with Stepper(Scheduler(store=store, clock=FakeClock(now))) as steps:
                if life == 0:
                    steps.scheduler.schedule("poll", jobs.noop, schedule, id="poll")
                now = RATE.slot_at(T0, 3 * life + 2) + HALF
                steps.advance_to(now)
        slots = [record.slot for record in store.records("poll")]
        (row,) = store.load_all()
    assert slots == [RATE.slot_at(T0, k) for k in range(24)]
    assert (row.next_run_at, row.grid) == (RATE.slot_at(T0, 24), T0)


def test_a_process_following_a_resume_made_elsewhere_counts_the_grid_it_started(
    store_spec: StoreSpec,
) -> None:
    """The follower loads the row before the resume, and reads the resume and the runs
    after it from the feed: it takes the grid the resume started with the row."""
    resumed = T0 + 7.77
    follower_clock = FakeClock(T0)
    with opened(store_spec, 2) as (first, second):
        with Stepper(Scheduler(store=first, clock=FakeClock(T0))) as steps:
            writer = steps.scheduler
            writer.schedule("poll", jobs.noop, RATE, id="poll")
            follower = Scheduler(store=second, clock=follower_clock)  # started below
            steps.advance_to(RATE.slot_at(T0, 2) + HALF)
            assert writer.pause("poll")
            steps.advance_to(resumed)
            assert writer.resume("poll")  # a new grid, from the resumed run
            handed_over = RATE.slot_at(resumed, 4) + HALF
            steps.advance_to(handed_over)
        follower_clock.set(handed_over)
        with Stepper(follower) as steps:  # follows the writer's rows, then runs on
            steps.advance_to(RATE.slot_at(resumed, 14) + HALF)
        slots = [record.slot for record in first.records("poll")]
        (row,) = first.load_all()
    assert slots[:3] == [RATE.slot_at(T0, k) for k in range(3)]
    assert slots[3:] == [RATE.slot_at(resumed, j) for j in range(15)]
    assert row.grid == resumed
