"""Control verbs on the running scheduler: cancel, pause, resume, also of a running task."""

from __future__ import annotations

import threading

from lldsched import (
    EventLog,
    FakeClock,
    FixedRate,
    OneTime,
    RetryPolicy,
    RunContext,
    TaskStatus,
)
from tests.conftest import SchedulerFactory, settle


def test_cancel_tombstones_the_queued_entry_and_the_task_never_runs(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    """The cancelled entry is not the head: a tombstone on top is dropped whenever the
    timer next looks (``next_due``), which a cancel may or may not have woken it for."""
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("digest", lambda: None, FixedRate(3600, start_delay=120))
    keep = scheduler.schedule("keep", lambda: None, OneTime(delay=60))
    settle(scheduler)
    assert scheduler.cancel(task.id) is True
    assert scheduler.queue_stats() == (2, 1)  # still in the heap, as a tombstone
    assert scheduler.pending() == [keep]
    clock.advance(120)
    settle(scheduler)
    assert task.status is TaskStatus.CANCELLED and task.history == ()
    assert keep.status is TaskStatus.SUCCEEDED and scheduler.queue_stats() == (0, 0)


def test_pause_holds_a_slot_and_resume_runs_it_at_once(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("digest", lambda: None, FixedRate(3600, start_delay=60))
    scheduler.pause(task.id)
    clock.advance(600)
    settle(scheduler)
    assert task.status is TaskStatus.PAUSED and task.run_count == 0
    assert scheduler.resume(task.id) is True
    settle(scheduler)
    (record,) = task.history
    assert record.started == clock.now()  # at once, not a period later
    assert task.next_run_at == clock.now() + 3600


def test_pause_answers_whether_this_call_paused_the_task(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    """As ``pause``'s docstring says: False for a task already paused, finished or
    failed (a paused task is live: ``cancel`` of one answers True)."""
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("digest", lambda: None, FixedRate(3600, start_delay=60))
    failed = scheduler.schedule("boom", _raises, OneTime(delay=0), retry=RetryPolicy(1))
    settle(scheduler)
    assert (scheduler.pause(task.id), scheduler.pause(task.id)) == (True, False)
    assert failed.status is TaskStatus.FAILED and scheduler.pause(failed.id) is False
    assert scheduler.cancel(task.id) is True and scheduler.pause(task.id) is False


def _raises() -> None:
    raise RuntimeError("boom")


def _running(scheduler_task_name: str, log: EventLog) -> None:
    started = log.wait_for(
        lambda e: e.name == scheduler_task_name and e.status is TaskStatus.RUNNING, timeout=5
    )
    assert started is not None


def test_pause_of_a_running_task_takes_effect_at_once_and_nothing_follows_the_run(
    make_scheduler: SchedulerFactory, clock: FakeClock, log: EventLog
) -> None:
    release = threading.Event()
    scheduler = make_scheduler(clock=clock, listeners=[log])
    task = scheduler.schedule("tick", lambda: release.wait(5), FixedRate(10))
    _running("tick", log)
    assert scheduler.pause(task.id) is True
    assert task.status is TaskStatus.PAUSED  # at once, while the run is still going
    release.set()
    settle(scheduler)
    clock.advance(100)
    settle(scheduler)
    assert task.run_count == 1 and task.status is TaskStatus.PAUSED
    assert scheduler.pending() == []


def test_cancel_of_a_running_task_takes_effect_at_once_the_run_finishes_and_nothing_follows(
    make_scheduler: SchedulerFactory, clock: FakeClock, log: EventLog
) -> None:
    flags: list[RunContext] = []

    def cooperative(ctx: RunContext) -> None:
        flags.append(ctx)
        ctx.wait(5)  # returns as soon as cancel raises the flag

    scheduler = make_scheduler(clock=clock, listeners=[log])
    task = scheduler.schedule("job", cooperative, FixedRate(10))
    _running("job", log)
    assert scheduler.cancel(task.id) is True and task.status is TaskStatus.CANCELLED
    settle(scheduler)
    clock.advance(100)
    settle(scheduler)
    assert flags[0].cancelled and flags[0].reason == "cancelled"
    assert task.run_count == 1 and task.status is TaskStatus.CANCELLED
    assert scheduler.pending() == [] and task.next_run_at is None
