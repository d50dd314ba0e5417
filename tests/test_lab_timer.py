"""The lab's timer decisions stay honest: each broken variant shows its failure, and the
real timer does not (lldsched.lab.timer)."""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable

import pytest

from lldsched.clock import SystemClock
from lldsched.core.duequeue import TaskQueue
from lldsched.core.task import Entry
from lldsched.lab import VariantError, _support
from lldsched.lab._support import ObservedClock, captured_log, middle_half, timer_parked
from lldsched.lab.timer import (
    IfScheduler,
    PollingClock,
    SilentPushScheduler,
    WaitingClock,
    measure_polling,
    measure_timer,
    run_due_now_behind_parked_timer,
    run_early_on_spurious_wakeup,
)
from lldsched.schedules.simple import OneTime
from lldsched.threaded.scheduler import Scheduler


def test_a_polling_timer_wakes_while_idle_and_the_real_one_does_not() -> None:
    polled = measure_timer("poll 10 ms", PollingClock(0.01), idle=0.2, samples=1)
    real = measure_timer("Condition.wait", WaitingClock(), idle=0.2, samples=1)
    assert polled.wakeups_per_s >= 10  # at most 20 in 0.2 s at 10 ms; a busy machine sleeps longer
    assert real.wakeups_per_s == 0


def test_a_silent_push_leaves_a_task_due_now_behind_the_parked_timer() -> None:
    assert run_due_now_behind_parked_timer(SilentPushScheduler, patience=0.3) == (False, 43200.0)


def test_the_real_push_wakes_the_parked_timer_so_the_task_due_now_runs_at_once() -> None:
    assert run_due_now_behind_parked_timer(Scheduler, patience=5.0) == (True, 0.0)


def test_an_if_instead_of_while_runs_a_task_early_on_a_spurious_wakeup() -> None:
    assert run_early_on_spurious_wakeup(IfScheduler, patience=5.0) == (True, -60.0)


def test_the_real_timer_parks_again_after_a_spurious_wakeup() -> None:
    assert run_early_on_spurious_wakeup(Scheduler, patience=0.3) == (False, 0.0)


def test_the_observed_clock_counts_the_timers_waits_and_wakes_it_without_moving_time() -> None:
    clock = ObservedClock(0)
    scheduler = Scheduler(workers=1, clock=clock)
    scheduler.schedule("later", lambda: None, OneTime(delay=60))
    with scheduler:
        assert clock.parked()
        waits = clock.waits
        clock.spurious_wakeup()
        assert clock.parked(more_than=waits)
        assert clock.now() == 0


def test_polling_measured_on_no_sample_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="samples must be a whole number >= 1, got 0"):
        measure_polling((0.01,), idle=0.1, samples=0)


@pytest.mark.parametrize(
    ("intervals", "idle", "said"),
    [
        ((-0.01,), 0.1, "poll interval must be finite and > 0 seconds, got -0.01"),
        ((0.01, 0), 0.1, "poll interval must be finite and > 0 seconds, got 0"),
        ((0.01,), 0, "idle must be finite and > 0 seconds, got 0"),
    ],
)
def test_polling_measured_with_a_bad_interval_or_window_is_refused_naming_it(
    intervals: tuple[float, ...], idle: float, said: str
) -> None:
    """A negative interval killed the timer thread (time.sleep refused it there), and the
    learner read "the scheduler's timer thread died"; an idle window of 0 divided by it."""
    with pytest.raises(ValueError, match=re.escape(said)):
        measure_polling(intervals, idle=idle, samples=1)


@pytest.mark.parametrize("patience", [0, -1, float("nan")])
@pytest.mark.parametrize(
    "experiment", [run_due_now_behind_parked_timer, run_early_on_spurious_wakeup]
)
def test_patience_that_is_not_a_positive_time_is_refused_naming_it(
    experiment: Callable[..., object], patience: float
) -> None:
    """Event.wait took -1 or NaN as 0: the real push "did not run in time" (False)."""
    said = f"patience must be finite and > 0 seconds, got {patience!r}"
    with pytest.raises(ValueError, match=re.escape(said)):
        experiment(Scheduler, patience=patience)


def test_a_polling_clock_with_an_interval_below_zero_is_refused_naming_it() -> None:
    """It was built, and its first wait killed the timer thread."""
    with pytest.raises(ValueError, match=re.escape("poll interval must be finite and > 0")):
        PollingClock(-0.01)


@pytest.mark.parametrize(
    ("idle", "samples", "said"),
    [
        (0, 1, "idle must be finite and > 0 seconds, got 0"),
        (0.1, 0, "samples must be a whole number >= 1, got 0"),
    ],
)
def test_one_timer_measured_over_no_time_or_no_sample_is_refused_naming_it(
    idle: float, samples: int, said: str
) -> None:
    """An idle window of 0 divided by zero; no sample gave a lateness of NaN."""
    with pytest.raises(ValueError, match=re.escape(said)):
        measure_timer("Condition.wait", WaitingClock(), idle=idle, samples=samples)


def test_a_timer_s_lateness_comes_with_the_middle_half_of_its_runs() -> None:
    """A median alone read as a verdict: on a busy machine the real timer's median was
    1.7 ms and a 1 ms poll's 1.2 ms, one run in three.  The spread says when two
    strategies lie within each other's noise."""
    result = measure_timer("Condition.wait", WaitingClock(), idle=0.05, samples=4)
    assert result.lateness_low_ms <= result.lateness_ms <= result.lateness_high_ms


def test_the_middle_half_of_one_value_or_none_is_that_value_or_nan() -> None:
    assert middle_half([2.0]) == (2.0, 2.0)
    assert all(math.isnan(value) for value in middle_half([]))
    assert middle_half([1.0, 2.0, 3.0, 4.0, 5.0]) == (2.0, 4.0)


class _ForgetfulQueue(TaskQueue):
    """A learner's queue that never hands an entry out (its pop_due forgot to)."""

    def pop_due(self, now: float, limit: int) -> list[Entry]:
        return []


class ForgetfulScheduler(Scheduler):
    queue_type = _ForgetfulQueue


@pytest.mark.parametrize(
    ("experiment", "said"),
    [
        (run_due_now_behind_parked_timer, "the task 'due now' never ran"),
        (run_early_on_spurious_wakeup, "the task 'due in 60 s' never ran"),
    ],
)
def test_a_variant_that_loses_the_task_is_told_so_by_name_instead_of_hanging(
    experiment: Callable[..., object], said: str
) -> None:
    """Its timer spun on the scheduler's lock (a FakeClock's wait for a passed instant
    returns at once) and the experiment hung for good."""
    with pytest.raises(VariantError, match=f"ForgetfulScheduler: {said}") as caught:
        experiment(ForgetfulScheduler, patience=0.1)
    assert "its pop_due handed out nothing" in str(caught.value)


@pytest.mark.parametrize(
    "experiment", [run_due_now_behind_parked_timer, run_early_on_spurious_wakeup]
)
@pytest.mark.parametrize(
    "given", [_ForgetfulQueue, Scheduler(workers=1)], ids=["queue", "instance"]
)
def test_a_timer_experiment_given_no_scheduler_class_says_how_a_queue_plugs_in(
    experiment: Callable[..., object], given: object
) -> None:
    """A queue class read "TaskQueue.__init__() got an unexpected keyword argument
    'workers'", an instance "'Scheduler' object is not callable"."""
    with pytest.raises(
        TypeError, match=r"scheduler_type must be a Scheduler class .*queue_type = YourQueue"
    ):
        experiment(given, patience=0.1)


class _RaisingQueue(TaskQueue):
    """A learner's queue whose pop_due raises: it kills the timer thread."""

    def pop_due(self, now: float, limit: int) -> list[Entry]:
        raise RuntimeError("a learner's bug")


class RaisingScheduler(Scheduler):
    queue_type = _RaisingQueue


def test_a_variant_that_kills_the_timer_is_told_so_with_its_own_error_as_the_cause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """It read "cannot wait_idle(): the scheduler's timer thread died", then the drain
    called the broken pop_due again and raised from deep inside shutdown().  It is told
    once the timer died, with no patience waited out: here the patience is longer than
    the test may run."""
    monkeypatch.setattr(_support, "VARIANT_PATIENCE", 3600.0)
    with pytest.raises(VariantError, match="RaisingScheduler: its timer thread died") as caught:
        run_due_now_behind_parked_timer(RaisingScheduler, patience=0.1)
    assert str(caught.value.__cause__) == "a learner's bug"


def test_the_wait_for_the_timer_to_park_ends_when_a_variant_killed_the_timer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An experiment on a queue variant first waits for the timer to park; a timer its
    queue killed never parks, and that wait took its whole 5 s before the experiment
    named the variant.  Here the patience is longer than the test may run."""
    monkeypatch.setattr(_support, "VARIANT_PATIENCE", 3600.0)
    clock = ObservedClock(0)
    scheduler = RaisingScheduler(workers=1, clock=clock)
    with captured_log():
        scheduler.start()
        try:
            assert not timer_parked(clock, scheduler)
        finally:
            scheduler.shutdown(drain=False)


def test_a_clock_of_ones_own_that_counts_no_wakeups_is_told_what_to_subclass() -> None:
    """It read "'SystemClock' object has no attribute 'wakeups'" after starting a scheduler."""
    with pytest.raises(TypeError, match="subclass WaitingClock or PollingClock"):
        measure_timer("mine", SystemClock(), idle=0.1, samples=1)  # type: ignore[arg-type]


class _PollingQueue(TaskQueue):
    """A learner's polling timer written into the queue: pop_due waits, sleeping, until
    the head is due; but ``now`` is the instant it was called with, which never moves, so
    it loops for good, holding the scheduler's lock."""

    def pop_due(self, now: float, limit: int) -> list[Entry]:
        while (due := self.next_due()) is not None and due > now:
            time.sleep(0.001)
        return super().pop_due(now, limit)


class PollingQueueScheduler(Scheduler):
    queue_type = _PollingQueue


@pytest.mark.parametrize(
    "experiment", [run_due_now_behind_parked_timer, run_early_on_spurious_wakeup]
)
def test_a_variant_that_holds_the_lock_for_good_is_stopped_and_named_not_waited_for(
    monkeypatch: pytest.MonkeyPatch, experiment: Callable[..., object]
) -> None:
    """Its experiment's next schedule() waited for the lock for ever: the notebook's cell
    hung until the kernel was interrupted, and the timer thread spun on after it."""
    monkeypatch.setattr(_support, "VARIANT_PATIENCE", 0.5)
    before = set(threading.enumerate())
    raised: list[BaseException] = []

    def run() -> None:
        try:
            experiment(PollingQueueScheduler, patience=0.1)
        except BaseException as error:
            raised.append(error)

    trial = threading.Thread(target=run, daemon=True)
    trial.start()
    trial.join(30)
    assert not trial.is_alive(), "the experiment hung on the lock its variant held"
    (error,) = raised
    assert isinstance(error, VariantError), repr(error)
    assert str(error).startswith("PollingQueueScheduler: _PollingQueue.pop_due (line "), error
    assert "held the scheduler's lock 0.5 s without returning" in str(error)
    assert type(error.__cause__).__name__ == "HeldTheLock"
    left = [t for t in set(threading.enumerate()) - before if t.is_alive()]
    for thread in left:  # the lock watch ends within its patience once closed
        thread.join(1)
    assert [t.name for t in left if t.is_alive()] == []
