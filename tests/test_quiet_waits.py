"""``wait_idle()``, ``wait_drained()`` and the Stepper called from the scheduler's own
threads: they raise at once instead of waiting, until their timeout, for a run or a
delivery that is the caller itself."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from lldsched import (
    FakeClock,
    OneTime,
    Scheduler,
    SchedulerStateError,
    TaskEvent,
    TaskStatus,
)
from lldsched.testing import Stepper
from tests.conftest import SchedulerFactory, settle

WAITS: dict[str, Callable[[Scheduler], object]] = {
    "wait_idle()": lambda scheduler: scheduler.wait_idle(timeout=30),
    "wait_drained()": lambda scheduler: scheduler.wait_drained(timeout=30),
}


@pytest.mark.parametrize("verb", sorted(WAITS))
def test_a_wait_for_quiet_from_an_action_raises_naming_the_thread(
    make_scheduler: SchedulerFactory, clock: FakeClock, verb: str
) -> None:
    scheduler = make_scheduler(clock=clock)
    raised: list[BaseException] = []

    def waits() -> None:
        try:
            WAITS[verb](scheduler)
        except SchedulerStateError as exc:
            raised.append(exc)

    task = scheduler.schedule("waits", waits, OneTime(delay=0))
    settle(scheduler)  # it waited 30 s for itself before: this settle timed out at 5
    (error,) = raised
    assert str(error).startswith(f"{verb} was called from one of this scheduler's own threads")
    assert "lldsched-" in str(error)  # the worker's name
    assert task.history[0].ok  # the action went on and returned


def test_a_wait_for_quiet_from_a_listener_raises_and_delivery_goes_on(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    raised: list[BaseException] = []
    heard: list[str] = []

    def listener(event: TaskEvent) -> None:
        heard.append(event.name)
        if event.status is TaskStatus.SUCCEEDED:
            try:
                scheduler.wait_idle(timeout=30)
            except SchedulerStateError as exc:
                raised.append(exc)

    scheduler.add_listener(listener)
    scheduler.schedule("first", lambda: None, OneTime(delay=0))
    settle(scheduler)
    scheduler.schedule("second", lambda: None, OneTime(delay=0))
    settle(scheduler)
    assert len(raised) == 2 and "own threads" in str(raised[0])
    assert heard == ["first", "first", "first", "second", "second", "second"]


def test_a_wait_for_quiet_from_a_coroutine_run_raises(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    raised: list[BaseException] = []

    async def waits() -> None:
        try:
            scheduler.wait_idle(timeout=30)
        except SchedulerStateError as exc:
            raised.append(exc)

    scheduler.schedule("waits", waits, OneTime(delay=0))
    settle(scheduler)
    (error,) = raised
    assert str(error).startswith("wait_idle() was called from one of this scheduler's own")


def test_a_stepper_advanced_from_an_action_raises_and_leaves_the_clock_where_it_was(
    clock: FakeClock,
) -> None:
    raised: list[BaseException] = []
    with Stepper(Scheduler(clock=clock)) as steps:
        start = steps.now

        def steps_itself() -> None:
            try:
                steps.advance(60)
            except SchedulerStateError as exc:
                raised.append(exc)

        steps.scheduler.schedule("steps", steps_itself, OneTime(delay=0))
        steps.settle()
        assert steps.now == start  # the clock did not move
    (error,) = raised
    assert "wait_idle() was called from one of this scheduler's own threads" in str(error)


@pytest.mark.parametrize("verb", sorted(WAITS))
def test_a_wait_for_quiet_before_start_raises_when_a_run_is_due_and_nothing_ran(
    make_scheduler: SchedulerFactory, clock: FakeClock, verb: str
) -> None:
    # A start() forgotten: the wait returned True at once, as if the due run had run.
    scheduler = make_scheduler(clock=clock, start=False)
    assert WAITS[verb](scheduler) is True  # nothing due: quiet, truly
    task = scheduler.schedule("due", lambda: None, OneTime(delay=0))
    with pytest.raises(SchedulerStateError) as raised:
        WAITS[verb](scheduler)
    assert str(raised.value) == (
        f"{verb} on a scheduler that was not started: what is due would not run before "
        "its timeout.  Call start() first"
    )
    assert (task.status, task.run_count) == (TaskStatus.SCHEDULED, 0)  # nothing lost
    scheduler.start()
    assert WAITS[verb](scheduler) is True
    assert (task.status, task.run_count) == (TaskStatus.SUCCEEDED, 1)


def test_wait_drained_before_start_counts_work_due_later_too(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock, start=False)
    scheduler.schedule("later", lambda: None, OneTime(delay=60))
    assert scheduler.wait_idle(timeout=30) is True  # nothing due at the clock's now
    with pytest.raises(SchedulerStateError, match="not started"):
        scheduler.wait_drained(timeout=30)


def held_running(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> tuple[Scheduler, threading.Event]:
    """A scheduler with a run in flight once this returns, until the event is set."""
    began, release = threading.Event(), threading.Event()

    def held() -> None:
        began.set()
        release.wait(10)

    scheduler = make_scheduler(clock=clock)
    scheduler.schedule("held", held, OneTime(delay=0))
    assert began.wait(5)
    return scheduler, release


@pytest.mark.parametrize("verb", ["wait_idle", "wait_drained"])
def test_a_wait_for_quiet_out_of_time_with_a_run_in_flight_says_false(
    make_scheduler: SchedulerFactory, clock: FakeClock, verb: str
) -> None:
    """The run goes on past the wait's timeout: the wait says False, as it ran out (not
    True, nor an error of the wait's own once its time is past)."""
    scheduler, release = held_running(make_scheduler, clock)
    try:
        assert getattr(scheduler, verb)(timeout=0.05) is False
    finally:
        release.set()
    assert getattr(scheduler, verb)(timeout=5) is True


class _Elapsed:
    """``time`` as ``lldsched.threaded.idlewaits`` reads it: ``monotonic()`` gives ``start``
    at its first reading (the wait's deadline is counted from it) and ``start +
    elapsed`` after, so a wait's own timeout is judged without waiting it out; the second
    reading (the wait has found the run in flight) lets ``release`` go."""

    def __init__(self, elapsed: float, release: threading.Event) -> None:
        self.start = 1_000.0
        self.elapsed = elapsed
        self.release = release
        self.readings = 0

    def monotonic(self) -> float:
        self.readings += 1
        if self.readings == 1:
            return self.start
        self.release.set()
        return self.start + self.elapsed


@pytest.mark.parametrize("verb", ["wait_idle", "wait_drained"])
@pytest.mark.parametrize(("elapsed", "quiet"), [(4.0, True), (5.0, False)])
def test_a_wait_for_quiet_gives_up_after_five_seconds_by_default(
    make_scheduler: SchedulerFactory,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    verb: str,
    elapsed: float,
    quiet: bool,
) -> None:
    """The default timeout its docstring and docs/GUIDE.md state: a run in flight 4 s
    into the wait is waited for, and at 5 s the wait says False."""
    import lldsched.threaded.idlewaits as idlewaits

    scheduler, release = held_running(make_scheduler, clock)
    monkeypatch.setattr(idlewaits, "time", _Elapsed(elapsed, release))
    try:
        assert getattr(scheduler, verb)() is quiet
    finally:
        release.set()
        monkeypatch.undo()
    settle(scheduler)
