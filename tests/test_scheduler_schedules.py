"""Schedules on the running threaded scheduler: overrun policies and fixed delay, on a fake clock
that the actions themselves advance (so a 150-second run takes no real time)."""

from __future__ import annotations

from collections.abc import Callable

from lldsched import FakeClock, FixedDelay, FixedRate, OverrunPolicy, TaskStatus
from tests.conftest import SchedulerFactory, settle


def runs_for(clock: FakeClock, *durations: float) -> Callable[[], None]:
    """An action whose n-th run takes durations[n] fake seconds (0 once they run out)."""
    remaining = list(durations)

    def action() -> None:
        clock.advance(remaining.pop(0) if remaining else 0)

    return action


def test_fixed_rate_skip_after_an_overrun_moves_to_the_first_slot_after_the_finish(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(workers=1, clock=clock)
    t = clock.now()
    task = scheduler.schedule("report", runs_for(clock, 150), FixedRate(60, OverrunPolicy.SKIP))
    settle(scheduler)
    runs = [r for r in task.history if r.outcome.ran]
    assert [r.duration for r in runs] == [150]
    assert task.next_run_at == t + 180 and task.status is TaskStatus.SCHEDULED
    clock.advance(30)
    settle(scheduler)
    assert [r.due - t for r in task.history if r.outcome.ran] == [0, 180]


def test_fixed_rate_catch_up_after_an_overrun_runs_each_missed_slot_at_once(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(workers=1, clock=clock)
    t = clock.now()
    task = scheduler.schedule("report", runs_for(clock, 150), FixedRate(60, OverrunPolicy.CATCH_UP))
    settle(scheduler)
    assert [(r.due - t, r.started - t) for r in task.history] == [(0, 0), (60, 150), (120, 150)]
    assert task.next_run_at == t + 180


def test_fixed_delay_is_measured_from_the_finish_of_each_run(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(workers=1, clock=clock)
    t = clock.now()
    task = scheduler.schedule("poll", runs_for(clock, 7, 3), FixedDelay(10))
    settle(scheduler)
    assert task.next_run_at == t + 17
    clock.advance(10)
    settle(scheduler)
    assert [r.started - t for r in task.history] == [0, 17]
    assert task.next_run_at == t + 17 + 3 + 10
