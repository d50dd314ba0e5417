"""Shutdown: stop timing first, then drain or drop; idempotent; final."""

from __future__ import annotations

import threading

import pytest

from lldsched import EventLog, FakeClock, OneTime, Scheduler, SchedulerStateError, TaskStatus
from tests.conftest import SchedulerFactory


def blocker() -> tuple[threading.Event, threading.Event, object]:
    started, release = threading.Event(), threading.Event()

    def action() -> None:
        started.set()
        release.wait(5)

    return started, release, action


def test_shutdown_stops_the_timer_before_draining_the_pool(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    started, release, action = blocker()
    scheduler = make_scheduler(workers=1, clock=clock)
    busy = scheduler.schedule("busy", action, OneTime(delay=0))  # type: ignore[arg-type]
    later = scheduler.schedule("later", lambda: None, OneTime(delay=10))
    assert started.wait(5)
    closing = threading.Thread(target=scheduler.shutdown, kwargs={"timeout": 10})
    closing.start()
    assert scheduler._timer is not None
    scheduler._timer.join(5)
    assert not scheduler._timer.is_alive()  # timing stopped while the pool is still busy
    clock.advance(10)  # "later" falls due during the drain: nobody dispatches it
    release.set()
    closing.join(5)
    assert busy.status is TaskStatus.SUCCEEDED
    assert later.status is TaskStatus.SCHEDULED and later.history == ()


class ParkingFakeClock(FakeClock):
    """A fake clock that tells the test each time the timer parks."""

    def __init__(self, start: float) -> None:
        super().__init__(start)
        self.parked = threading.Event()

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        self.parked.set()
        super().wait(condition, deadline)


def test_drain_runs_what_is_queued_and_drop_does_not_but_in_flight_work_finishes(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    outcomes = {}
    for drain in (True, False):
        started, release, action = blocker()
        parking = ParkingFakeClock(clock.now())
        scheduler = make_scheduler(workers=1, clock=parking)
        busy = scheduler.schedule("busy", action, OneTime(delay=0))  # type: ignore[arg-type]
        assert started.wait(5)
        queued = [scheduler.schedule(f"q{i}", lambda: None, OneTime(delay=1)) for i in range(3)]
        parking.parked.clear()
        parking.advance(1)
        assert parking.parked.wait(5)  # the timer moved all three to the hand-off queue
        assert scheduler.pending() == []
        if drain:
            closing = threading.Thread(target=scheduler.shutdown, kwargs={"drain": True})
            closing.start()
            release.set()
            closing.join(5)
        else:
            assert scheduler.shutdown(drain=False, timeout=0.05) is False  # busy still runs
            release.set()
            assert scheduler.shutdown(timeout=5) is True
        assert busy.status is TaskStatus.SUCCEEDED  # in flight: always finishes
        outcomes[drain] = [task.run_count for task in queued]
    assert outcomes == {True: [1, 1, 1], False: [0, 0, 0]}


def test_shutdown_is_idempotent_and_final(make_scheduler: SchedulerFactory) -> None:
    scheduler = make_scheduler()
    task = scheduler.schedule("x", lambda: None, OneTime(delay=3600))
    assert scheduler.shutdown() is True
    assert scheduler.shutdown() is True
    assert not scheduler.running
    with pytest.raises(SchedulerStateError, match="cannot schedule 'y'"):
        scheduler.schedule("y", lambda: None, OneTime(delay=0))
    with pytest.raises(SchedulerStateError, match="already stopped"):
        scheduler.start()
    scheduler.pause(task.id)
    with pytest.raises(SchedulerStateError, match=f"cannot resume '{task.id}'"):
        scheduler.resume(task.id)
    assert scheduler.cancel(task.id) is True  # stopping things is still allowed


def test_the_context_manager_starts_and_shuts_down(clock: FakeClock) -> None:
    log = EventLog()
    with Scheduler(workers=2, clock=clock, listeners=[log]) as scheduler:
        assert scheduler.running
        scheduler.schedule("x", lambda: None, OneTime(delay=0))
        assert log.wait_for(lambda e: e.record is not None, timeout=5) is not None
    assert not scheduler.running
    assert scheduler._pool.alive == 0


def test_a_scheduler_that_never_started_shuts_down_cleanly() -> None:
    scheduler = Scheduler()
    scheduler.schedule("x", lambda: None, OneTime(delay=0))
    assert scheduler.shutdown() is True
    with pytest.raises(SchedulerStateError):
        scheduler.start()
