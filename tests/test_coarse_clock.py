"""A coarse clock, as Windows' ``time.time()`` and ``time.monotonic()`` tick (every
15.6 ms before Python 3.13): the threaded scheduler on a :class:`SystemClock` whose
readings are quantised to 16 ms.

Due times that differ read as one instant, a run takes "0 s", a deadline falls due at
the tick it was set in: every run still happens once, in due order, a timeout still
stops its run, and the timer does not spin (it waits on the remaining time, which a
coarse reading only makes longer) nor takes the two clocks' ticks for a jump.
Nothing here sleeps a fixed time: each test waits on the scheduler or an event.
"""

from __future__ import annotations

import itertools
import logging
import math
import threading
import time

import pytest

from lldsched import (
    EventLog,
    FixedDelay,
    FixedRate,
    OneTime,
    Priority,
    RetryPolicy,
    RunContext,
    Scheduler,
    SystemClock,
    TaskStatus,
)

TICK = 0.016
BOUND = 20.0  # seconds: the most any wait below may take


def _quantised(reading: float) -> float:
    return math.floor(reading / TICK) * TICK


class CoarseClock(SystemClock):
    """Wall and monotonic time read in whole ticks of 16 ms (each clock on its own
    phase, as on Windows); counts the timer's waits."""

    __slots__ = ("waits",)

    def __init__(self) -> None:
        self.waits = 0

    def now(self) -> float:
        return _quantised(time.time())

    def monotonic(self) -> float:
        return _quantised(time.monotonic() + 0.005)  # another phase than the wall clock's

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        self.waits += 1
        super().wait(condition, deadline)


@pytest.fixture
def clock() -> CoarseClock:
    return CoarseClock()


def test_the_coarse_clock_reads_whole_ticks(clock: CoarseClock) -> None:
    for reading in (clock.now(), clock.monotonic()):
        assert abs(reading / TICK - round(reading / TICK)) < 1e-6


def test_runs_due_within_one_tick_all_run_once_in_due_then_priority_order(
    clock: CoarseClock,
) -> None:
    log = EventLog()
    scheduler = Scheduler(workers=1, clock=clock, listeners=[log])
    at = clock.now() + 10 * TICK  # all registered before the first is due
    order = []
    ran: list[str] = []  # in the order the one worker ran them
    for n, priority in enumerate([Priority.LOW, Priority.HIGH, Priority.NORMAL] * 3):
        due = at + (n // 3) * TICK / 4  # three groups inside one tick: one reading for all
        task = scheduler.schedule(
            f"t{n}", ran.append, OneTime(at=due), priority=priority, args=(f"task-{n + 1}",)
        )
        order.append((due, priority, task.id))
    with scheduler:
        log.wait_for(lambda event: len(scheduler.records()) == len(order), timeout=BOUND)
        records = scheduler.records()
    assert ran == [task_id for *_, task_id in sorted(order)]
    assert all(record.ok and record.finished >= record.started for record in records)
    # records() is in finish-timestamp order: runs that finished within one tick read
    # as one instant and come in task order (docs/decisions/platforms.md, "Coarse clocks").
    assert [record.finished for record in records] == sorted(r.finished for r in records)
    assert all(task.status is TaskStatus.SUCCEEDED for task in scheduler.tasks())


def test_a_run_that_takes_0_s_is_recorded_and_the_next_delay_counts_from_it(
    clock: CoarseClock,
) -> None:
    log = EventLog()
    with Scheduler(workers=1, clock=clock, listeners=[log]) as scheduler:
        task = scheduler.schedule("quick", lambda: None, FixedDelay(TICK / 8))
        log.wait_for(lambda event: len(scheduler.task(task.id).history) >= 6, timeout=BOUND)
        scheduler.pause(task.id)
        history = list(scheduler.task(task.id).history)
    assert any(record.duration == 0.0 for record in history)  # a run inside one tick
    for before, after in itertools.pairwise(history):
        assert after.due == pytest.approx(before.finished + TICK / 8)  # never before its due
        assert after.started >= before.finished
    # Waits per run: the timer wakes when the delay has passed by the real clock and
    # waits again until the reading catches up, a few times a tick at most, never a spin.
    assert clock.waits < 60 * len(history), clock.waits


def test_a_timeout_shorter_than_a_tick_stops_the_run_and_is_recorded(clock: CoarseClock) -> None:
    stopped = threading.Event()

    def patient(ctx: RunContext) -> None:
        if ctx.wait(BOUND):  # True once the flag is raised (timeout or cancel)
            stopped.set()

    with Scheduler(workers=1, clock=clock) as scheduler:
        task = scheduler.schedule(
            "patient", patient, OneTime(delay=0), timeout=TICK / 4,
            retry=RetryPolicy(max_attempts=1),
        )  # fmt: skip
        assert stopped.wait(BOUND)  # the deadline fell due at a later tick and was raised
        assert scheduler.wait_idle(timeout=BOUND)
    (record,) = scheduler.task(task.id).history
    assert record.timed_out and not record.ok
    # the deadline was raised only once the coarse clock saw at least one tick go by since
    # the run began (`started`, the reading its deadline counts from, at or after `due`);
    # two epoch readings near 1.8e9 s differ by a tick give back 0.0159998 s (a double
    # keeps ~0.2 µs at that size).  Before, `started` was read later, as the action
    # started: a worker slow to get there under load read a later tick (duration 0.0).
    assert record.duration >= TICK - 1e-6
    assert record.finished - record.due >= TICK - 1e-6


def test_a_backoff_shorter_than_a_tick_retries(clock: CoarseClock) -> None:
    attempts = []

    def flaky() -> None:
        attempts.append(clock.now())
        if len(attempts) < 3:
            raise RuntimeError("not yet")

    log = EventLog()
    with Scheduler(workers=1, clock=clock, listeners=[log]) as scheduler:
        task = scheduler.schedule(
            "flaky", flaky, OneTime(delay=0),
            retry=RetryPolicy(max_attempts=3, initial_backoff=0.001, jitter=0),
        )  # fmt: skip
        log.wait_for(lambda event: event.status is TaskStatus.SUCCEEDED, timeout=BOUND)
    assert scheduler.task(task.id).status is TaskStatus.SUCCEEDED
    assert [record.attempt for record in scheduler.task(task.id).history] == [1, 2, 3]


def test_a_rate_of_one_tick_runs_each_slot_once_and_sees_no_clock_jump(
    clock: CoarseClock, caplog: pytest.LogCaptureFixture
) -> None:
    log = EventLog()
    with (
        caplog.at_level(logging.WARNING, logger="lldsched"),
        Scheduler(workers=1, clock=clock, listeners=[log]) as scheduler,
    ):
        task = scheduler.schedule("tick", lambda: None, FixedRate(TICK))
        log.wait_for(lambda event: len(scheduler.task(task.id).history) >= 10, timeout=BOUND)
        scheduler.pause(task.id)
        dues = [record.due for record in scheduler.task(task.id).history]
    assert len(set(dues)) == len(dues)  # each slot once
    assert dues == sorted(dues)
    assert not [r for r in caplog.records if "jumped" in r.getMessage()]
