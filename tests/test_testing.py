"""lldsched.testing.Stepper: a real Scheduler on a FakeClock, stepped through each due
instant by a test, every wait bounded, every refusal naming what it refused."""

from __future__ import annotations

import asyncio
import math
import threading
import warnings
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from lldsched import (
    EventLog,
    FakeClock,
    FixedRate,
    OneTime,
    Outcome,
    RetryPolicy,
    Scheduler,
    SchedulerShutDownError,
    SchedulerStateError,
    Simulation,
    SystemClock,
    TaskEvent,
    TaskNotFoundError,
    TaskStatus,
    ValidationError,
)
from lldsched.testing import SettleTimeoutError, Stepper
from tests.conftest import T0


def noop() -> None:
    return None


def broken() -> None:
    raise RuntimeError("the API is down")


@pytest.fixture
def steps() -> Iterator[Stepper]:
    with Stepper(Scheduler(workers=2, clock=FakeClock(T0), history_limit=None)) as stepper:
        yield stepper


# -- time, visited one due instant at a time --------------------------------------------


def test_each_run_starts_at_its_own_due_instant_not_at_the_end(steps: Stepper) -> None:
    steps.scheduler.schedule("tick", noop, FixedRate(60), id="tick")
    assert steps.advance(300) == T0 + 300
    runs = steps.records("tick")
    assert [r.started - T0 for r in runs] == [0, 60, 120, 180, 240, 300]
    assert all(r.outcome.value == "ok" and r.lateness == 0 for r in runs)


def test_a_retry_runs_at_its_finish_plus_backoff_and_the_slot_then_goes_to_the_dead_letter(
    steps: Stepper,
) -> None:
    retry = RetryPolicy(max_attempts=3, initial_backoff=10)
    steps.scheduler.schedule("sync", broken, OneTime(delay=100), retry=retry, id="sync")
    steps.advance(129)  # the third attempt is due at 100 + 10 + 20 = 130
    assert [(r.attempt, r.started - T0) for r in steps.records("sync")] == [(1, 100), (2, 110)]
    assert steps.scheduler.task("sync").status is TaskStatus.RETRYING
    steps.advance(1)
    assert [r.started - T0 for r in steps.records("sync")] == [100, 110, 130]
    assert steps.scheduler.dead_letter() == ["sync"]


def test_advance_by_zero_runs_what_is_due_now_and_advance_to_takes_a_datetime(
    steps: Stepper,
) -> None:
    steps.scheduler.schedule("now", noop, OneTime(delay=0), id="now")
    assert steps.advance(0) == T0
    assert [r.started for r in steps.records("now")] == [T0]
    later = datetime.fromtimestamp(T0 + 3600, UTC)
    steps.scheduler.schedule("later", noop, OneTime(at=later), id="later")
    assert steps.advance_to(later) == T0 + 3600
    assert [r.started for r in steps.records("later")] == [T0 + 3600]
    assert steps.advance(timedelta(minutes=1)) == steps.now == T0 + 3660


def test_settle_waits_for_a_run_queued_by_a_verb_without_moving_the_clock(
    steps: Stepper,
) -> None:
    task = steps.scheduler.schedule("report", noop, FixedRate(3600), id="report")
    steps.advance(10)
    assert steps.scheduler.run_now("report")
    steps.settle()
    assert [r.started - T0 for r in steps.records("report")] == [0, 10]
    assert task.next_run_at == T0 + 3600 and steps.now == T0 + 10


def test_a_run_a_listener_queues_is_waited_for_in_the_same_advance() -> None:
    def alert_on_failure(event: TaskEvent) -> None:
        if event.record is not None and not event.record.ok:
            scheduler.run_now("alert")

    scheduler = Scheduler(clock=FakeClock(T0), listeners=[alert_on_failure])
    with Stepper(scheduler) as steps:
        scheduler.schedule("alert", noop, OneTime(at=T0 + 86400), id="alert")
        never = RetryPolicy.never()
        scheduler.schedule("import", broken, OneTime(delay=60), retry=never, id="import")
        steps.advance(60)
        assert [r.started - T0 for r in steps.records("alert")] == [60]


def test_the_scheduler_is_started_by_the_stepper_or_may_already_run() -> None:
    fresh = Scheduler(clock=FakeClock(T0))
    with Stepper(fresh):
        assert fresh.running
    assert not fresh.running  # shut down at the end of the block
    started = Scheduler(clock=FakeClock(T0)).start()
    with Stepper(started) as steps:
        started.schedule("once", noop, OneTime(delay=5), id="once")
        steps.advance(5)
        assert started.task("once").status is TaskStatus.SUCCEEDED


def test_a_run_due_at_the_start_has_finished_when_the_stepper_is_built() -> None:
    """The constructor starts the scheduler and waits, as every step does: the test's
    first line sees the start instant's runs done, not a run racing it (a ``pause`` on
    the next line stopped the first run only some of the time: ten fixtures in a row
    all see it run, which before happened about once in 60,000)."""
    for _ in range(10):
        calls: list[float] = []
        scheduler = Scheduler(clock=FakeClock(T0), history_limit=None)
        scheduler.schedule("sync", calls.append, FixedRate(600), id="sync", args=(T0,))
        with Stepper(scheduler) as steps:
            assert calls == [T0] and [r.outcome for r in scheduler.records()] == [Outcome.OK]
            scheduler.pause("sync")
            steps.advance(3600)
            assert calls == [T0]


def test_a_run_due_at_the_start_that_hangs_fails_the_construction_naming_it() -> None:
    release = threading.Event()
    scheduler = Scheduler(clock=FakeClock(T0))
    scheduler.schedule("export", release.wait, OneTime(delay=0), id="export")
    try:
        with (
            warnings.catch_warnings(),
            pytest.raises(
                SettleTimeoutError,
                match=r"within 0\.2 s at 2026-01-05T09:00:00\+00:00 .*still running: export",
            ),
        ):
            warnings.simplefilter("error")  # nor an unclosed warning for the half-built one
            Stepper(scheduler, timeout=0.2)
        assert not scheduler.running  # shut down (bounded), not left to the test
    finally:
        release.set()
    assert scheduler.shutdown(timeout=5)


# -- reading the records of one task ---------------------------------------------------


def test_records_of_one_task_leave_the_others_out_and_outlive_retirement() -> None:
    scheduler = Scheduler(clock=FakeClock(T0), retain_finished=timedelta(0))
    with Stepper(scheduler) as steps:
        scheduler.schedule("once", noop, OneTime(delay=1), id="once")
        scheduler.schedule("other", noop, FixedRate(1), id="other")
        steps.advance(3)
        assert [r.task_id for r in steps.records("once")] == ["once"]
        assert len(steps.records("other")) == 4
        scheduler.schedule("kick", noop, OneTime(delay=0))  # retires what finished before
        steps.settle()
        with pytest.raises(TaskNotFoundError, match="retired"):
            scheduler.task("once")
        assert [r.started - T0 for r in steps.records("once")] == [1]
        with pytest.raises(TaskNotFoundError, match="'nightly'"):
            steps.records("nightly")


# -- refusals: each names what it refused, and changes nothing ------------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (-1, "got -1"),
        (math.nan, "got nan"),
        (math.inf, "got inf"),
        (-math.inf, "got -inf"),
        (timedelta(seconds=-5), "(-5 seconds)"),
        ("60", "got '60'"),
        (True, "got True"),
        (None, "got None"),
    ],
)
def test_advance_by_a_negative_non_finite_or_non_number_names_it_and_moves_nothing(
    steps: Stepper, value: Any, shown: str
) -> None:
    steps.scheduler.schedule("tick", noop, FixedRate(60), id="tick")
    steps.settle()
    with pytest.raises(ValidationError, match=r"advance\(\) takes finite seconds >= 0") as caught:
        steps.advance(value)
    assert shown in str(caught.value)
    assert steps.now == T0 and len(steps.records("tick")) == 1


def test_advance_to_an_instant_before_now_names_both_and_moves_nothing(steps: Stepper) -> None:
    steps.advance(60)
    with pytest.raises(ValidationError, match="cannot go back") as caught:
        steps.advance_to(T0)
    assert "2026-01-05T09:01:00+00:00" in str(caught.value)
    assert "2026-01-05T09:00:00+00:00" in str(caught.value)
    with pytest.raises(ValidationError, match="timezone-aware"):
        steps.advance_to(datetime(2026, 1, 5, 12))  # a naive datetime is ambiguous
    assert steps.now == T0 + 60


def test_a_scheduler_on_another_clock_or_another_runtime_is_refused() -> None:
    real = Scheduler(clock=SystemClock())
    with pytest.raises(ValidationError, match=r"clock=FakeClock\(\.\.\.\), got clock=SystemClock"):
        Stepper(real)
    assert not real.running  # refused before it was started
    with pytest.raises(ValidationError, match="Stepper steps a Scheduler, got <Simulation"):
        Stepper(Simulation())  # type: ignore[arg-type]  # a mistake mypy catches too


@pytest.mark.parametrize("timeout", [0, -1, math.nan, "5"])
def test_a_timeout_that_is_not_positive_seconds_is_refused(timeout: Any) -> None:
    scheduler = Scheduler(clock=FakeClock(T0))
    with pytest.raises(ValidationError, match="Stepper timeout must be"):
        Stepper(scheduler, timeout=timeout)
    assert not scheduler.running


# -- a job that blocks: a bounded wait, naming it --------------------------------------


def test_a_job_that_blocks_fails_the_advance_after_the_timeout_naming_the_task() -> None:
    release = threading.Event()
    scheduler = Scheduler(clock=FakeClock(T0))
    steps = Stepper(scheduler, timeout=0.2)
    try:
        scheduler.schedule("export", release.wait, OneTime(delay=30), id="export")
        with pytest.raises(SettleTimeoutError) as caught:
            steps.advance(60)
        message = str(caught.value)
        assert "did not settle within 0.2 s at 2026-01-05T09:00:30+00:00" in message
        assert "still running: export (attempt 1)" in message
        assert steps.now == T0 + 30  # it stopped at the instant that did not settle
        release.set()
        assert steps.advance(30) == T0 + 60  # released: the stepper goes on
        assert [r.started - T0 for r in steps.records("export")] == [30]
    finally:
        release.set()
        steps.close()


def test_a_coroutine_that_outlasts_the_wait_is_told_its_timeout_counts_real_seconds() -> None:
    never = asyncio.Event()

    async def fetch() -> None:
        await never.wait()  # a feed that never answers

    scheduler = Scheduler(clock=FakeClock(T0), history_limit=None)
    with Stepper(scheduler, timeout=0.2) as steps:
        scheduler.schedule("prices", fetch, OneTime(delay=0), id="prices", timeout=30)
        scheduler.schedule("report", noop, OneTime(delay=0), id="report", timeout=0.1)
        with pytest.raises(SettleTimeoutError) as caught:
            steps.settle()
        assert str(caught.value).endswith(
            "still running: prices (attempt 1), its timeout 30 s longer than this "
            "wait (a coroutine's or a worker process's timeout counts real seconds: shorten "
            "it in the test with scheduler.modify('prices', timeout=...))"
        )  # the report's timeout, shorter than the wait, is not in it: it ran
        steps.scheduler.modify("prices", timeout=0.05)  # re-armed from its start: cut now
        steps.settle()
        assert [r.outcome for r in steps.records("prices")] == [Outcome.TIMED_OUT]


def test_closing_while_a_job_blocks_says_so_and_a_with_block_keeps_the_tests_own_error() -> None:
    release = threading.Event()
    scheduler = Scheduler(clock=FakeClock(T0))
    try:
        with (
            pytest.raises(SettleTimeoutError, match="did not settle"),  # not the close's
            Stepper(scheduler, timeout=0.2) as steps,
        ):
            scheduler.schedule("export", release.wait, OneTime(delay=0))
            steps.settle()
        blocked = Scheduler(clock=FakeClock(T0))
        steps = Stepper(blocked, timeout=0.2)
        blocked.schedule("export", release.wait, OneTime(delay=0), id="export")
        with pytest.raises(SettleTimeoutError) as caught:
            steps.close()
        assert str(caught.value) == (  # the run named, as a step's timeout names it
            "the scheduler did not shut down within 0.2 s at 2026-01-05T09:00:00+00:00 "
            "(1767603600.0): still running: export (attempt 1)"
        )
    finally:
        release.set()
    assert scheduler.shutdown(timeout=5) and blocked.shutdown(timeout=5)


def test_a_task_due_again_at_once_after_every_run_is_reported_not_spun_on_forever() -> None:
    clock = FakeClock(T0)
    log = EventLog()
    scheduler = Scheduler(clock=clock, listeners=[log])
    with Stepper(scheduler, timeout=0.3) as steps:

        def again(event: TaskEvent) -> None:  # a listener that asks for one more run, always
            if event.record is not None:
                scheduler.run_now("loop")

        scheduler.add_listener(again)
        scheduler.schedule("loop", noop, FixedRate(3600, start_delay=3600), id="loop")
        assert scheduler.run_now("loop")
        with pytest.raises(SettleTimeoutError, match=r"did not settle within 0\.3 s"):
            steps.settle()
        scheduler.remove_listener(again)
        scheduler.cancel("loop")
    assert len(log.runs()) > 1


# -- after shutdown -----------------------------------------------------------------------


def test_after_close_every_step_is_refused_naming_the_verb_and_close_is_idempotent() -> None:
    scheduler = Scheduler(clock=FakeClock(T0))
    steps = Stepper(scheduler)
    steps.close()
    steps.close()
    assert not scheduler.running
    calls: list[tuple[str, Callable[[], object]]] = [
        ("advance", lambda: steps.advance(1)),
        ("advance_to", lambda: steps.advance_to(T0 + 1)),
        ("settle", steps.settle),
    ]
    for verb, call in calls:
        with pytest.raises(
            SchedulerShutDownError,  # as every verb of a shut-down scheduler raises
            match=rf"cannot {verb}\(\): the Stepper's scheduler is shut down "
            r"\(<Scheduler \S+ stopped",
        ):
            call()
    assert steps.now == T0
    with pytest.raises(SchedulerShutDownError, match=r"can run, got <Scheduler .*already stopped"):
        Stepper(scheduler)


def test_a_scheduler_shut_down_behind_the_steppers_back_is_refused_too() -> None:
    scheduler = Scheduler(clock=FakeClock(T0))
    steps = Stepper(scheduler)
    assert scheduler.shutdown(timeout=5)
    with pytest.raises(SchedulerShutDownError, match=r"cannot advance\(\): .* shut down"):
        steps.advance(1)
    steps.close()  # nothing left to stop: no error
    assert "Stepper at 2026-01-05T09:00:00+00:00" in repr(steps)


def test_a_scheduler_an_action_shuts_down_mid_step_is_said_shut_down() -> None:
    scheduler = Scheduler(clock=FakeClock(T0))
    with Stepper(scheduler) as steps:
        scheduler.schedule(
            "stop", lambda: scheduler.shutdown(drain=False, timeout=5), OneTime(delay=60)
        )
        with pytest.raises(
            SchedulerShutDownError,
            match=r"the scheduler was shut down while the Stepper waited at "
            r"2026-01-05T09:01:00\+00:00 .*<Scheduler \S+ stopped",
        ):
            steps.advance(120)
        assert steps.now == T0 + 60  # stopped at the instant it was shut down


class _BreaksOnWait(FakeClock):
    """A fake clock whose waits raise once ``broken`` is set: the timer thread dies.
    ``raised`` is set as the first wait raises."""

    broken = False

    def __init__(self, start: float) -> None:
        super().__init__(start)
        self.raised = threading.Event()

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        if self.broken:
            self.raised.set()
            raise RuntimeError("the clock broke")
        super().wait(condition, deadline)


def test_a_scheduler_whose_timer_died_is_refused_saying_so() -> None:
    clock = _BreaksOnWait(T0)
    scheduler = Scheduler(clock=clock)
    steps = Stepper(scheduler)
    clock.broken = True
    try:
        scheduler.schedule("tick", lambda: None, OneTime(delay=60))  # wakes the timer: it dies
        # before the clock moves (a timer waking late at T0+60 would run the task first)
        assert clock.raised.wait(timeout=5)
        for call in (lambda: steps.advance(60), steps.settle):  # at once, not after the
            # Stepper's timeout; a mistake to fix, not a shutdown a test may race
            with pytest.raises(
                SchedulerStateError, match=r"timer thread died.*shutdown\(\) it"
            ) as dead:
                call()
            assert not isinstance(dead.value, SchedulerShutDownError)
        with pytest.raises(SchedulerStateError, match=r"can run, got <Scheduler .* dead") as dead:
            Stepper(scheduler)
        assert not isinstance(dead.value, SchedulerShutDownError)
    finally:
        assert scheduler.shutdown(timeout=5)


def test_a_task_that_stays_due_without_running_is_reported_after_the_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The scheduler never leaves a due entry unrun while idle; were it to (a runtime
    bug), the stepper would set the clock to that instant for ever: it stops at its
    timeout instead."""
    scheduler = Scheduler(clock=FakeClock(T0))
    with Stepper(scheduler, timeout=0.2) as steps:
        steps.advance(30)
        stale = SimpleNamespace(next_run_at=T0 + 30)  # what pending() would say, for ever
        monkeypatch.setattr(scheduler, "pending", lambda: [stale])
        with pytest.raises(SettleTimeoutError, match=r"did not settle within 0\.2 s at .*:30"):
            steps.advance(60)
        assert steps.now == T0 + 30


def test_an_unclosed_stepper_warns_when_collected_naming_the_fix_a_closed_one_does_not() -> None:
    scheduler = Scheduler(clock=FakeClock(T0))
    steps = Stepper(scheduler)
    with pytest.warns(RuntimeWarning, match=r"unclosed <Stepper at .*steps\.close\(\)") as said:
        del steps  # a test that forgot the with block: its stepper goes at its end
    assert len(said) == 1 and scheduler.running  # said, not shut down behind the test
    assert scheduler.shutdown(timeout=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        closed = Stepper(Scheduler(clock=FakeClock(T0)))
        closed.close()
        del closed
        stopped = Scheduler(clock=FakeClock(T0))
        left = Stepper(stopped)
        assert stopped.shutdown(timeout=5)  # shut down without the stepper: nothing runs on
        del left
