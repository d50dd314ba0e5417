"""The lab's shutdown decisions stay honest: notify instead of notify_all leaves workers
asleep; stopping the pool before the timer loses work (lldsched.lab.shutdown)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from lldsched.lab import VariantError, shutdown
from lldsched.lab._support import CountingCondition, captured_log
from lldsched.lab.shutdown import (
    CountingPool,
    ExecutorPoolFirstScheduler,
    ExecutorTimerFirstScheduler,
    NotifyOnePool,
    PoolFirstScheduler,
    TimerFirstScheduler,
    run_shutdown_while_work_falls_due,
    run_shutdown_with_idle_workers,
)
from lldsched.threaded.pool import WorkerPool
from lldsched.threaded.scheduler import Scheduler


def test_notify_instead_of_notify_all_leaves_workers_asleep_at_shutdown() -> None:
    outcome = run_shutdown_with_idle_workers(NotifyOnePool, workers=4, timeout=0.3)
    assert outcome == (False, 3)


def test_notify_all_wakes_every_worker_at_shutdown() -> None:
    assert run_shutdown_with_idle_workers(CountingPool, workers=4, timeout=5.0) == (True, 0)


def test_stopping_the_pool_before_the_timer_loses_the_work_that_falls_due() -> None:
    outcome = run_shutdown_while_work_falls_due(ExecutorPoolFirstScheduler, burst=10)
    assert (outcome.ran, outcome.queued, outcome.lost) == (0, 0, 10)
    assert outcome.timer_died and not outcome.idle_after


def test_stopping_the_timer_first_keeps_the_work_that_falls_due_with_either_pool() -> None:
    for variant in (TimerFirstScheduler, ExecutorTimerFirstScheduler):
        outcome = run_shutdown_while_work_falls_due(variant, burst=10)
        assert (outcome.ran, outcome.queued, outcome.lost) == (0, 10, 0), variant
        assert not outcome.timer_died and outcome.idle_after


def test_the_real_pool_refuses_work_once_shut_down_so_pool_first_loses_nothing_there() -> None:
    outcome = run_shutdown_while_work_falls_due(PoolFirstScheduler, burst=10)
    assert (outcome.lost, outcome.timer_died) == (0, False)


def test_the_pool_first_timers_death_is_logged_and_reaches_no_excepthook(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The dying timer is logged once and raises nothing further (threaded/timer.py), so
    the lab has no thread death of its own to silence."""
    escaped: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: escaped.append(args.exc_value))
    outcome = run_shutdown_while_work_falls_due(ExecutorPoolFirstScheduler, burst=10)
    assert outcome.timer_died
    assert escaped == []


def test_captured_log_leaves_a_threads_death_to_threading_excepthook(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An exception that escapes a thread during an experiment is a bug of the lab, not
    noise by design: capturing the log does not hide it."""
    escaped: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: escaped.append(args.exc_value))

    def die() -> None:
        raise RuntimeError("unexpected")

    with captured_log() as records:
        thread = threading.Thread(target=die)
        thread.start()
        thread.join(5.0)
    assert [str(exc) for exc in escaped] == ["unexpected"]
    assert records == []


@pytest.mark.parametrize("burst", [0, -1, 2.5, True])
def test_a_burst_of_no_whole_task_is_refused_naming_it(burst: object) -> None:
    """With -1 tasks the experiment reported -1 lost; with 2.5 it raised a TypeError about
    range()."""
    with pytest.raises(ValueError, match=f"burst must be a whole number >= 1, got {burst!r}"):
        run_shutdown_while_work_falls_due(TimerFirstScheduler, burst=burst)  # type: ignore[arg-type]


def test_a_scheduler_that_is_not_one_of_the_lab_s_orders_is_refused_naming_it() -> None:
    """The real Scheduler has no pool to observe: it raised AttributeError 'lab_pool'."""
    with pytest.raises(
        TypeError,
        match=r"scheduler_type must be .* got <class 'lldsched\.threaded\.scheduler\.Scheduler'>",
    ):
        run_shutdown_while_work_falls_due(Scheduler)  # type: ignore[arg-type]


def test_a_pool_that_counts_no_parked_worker_is_refused_naming_it() -> None:
    """The real WorkerPool's condition counts nothing: a bare AssertionError named nothing."""
    with pytest.raises(
        TypeError,
        match=r"pool_type must be a CountingPool .* got <class '.*\.WorkerPool'>",
    ):
        run_shutdown_with_idle_workers(WorkerPool)  # type: ignore[arg-type]


class _RaisingOrder(TimerFirstScheduler):
    """A learner's order whose shutdown raises."""

    def shutdown(self, drain: bool = True, timeout: float | timedelta | None = 5.0) -> bool:
        raise RuntimeError("a learner's bug")


class _PoolLeftOpen(TimerFirstScheduler):
    """A learner's order that returns before it stops anything."""

    def shutdown(self, drain: bool = True, timeout: float | timedelta | None = 5.0) -> bool:
        return True


def test_an_order_whose_shutdown_raises_is_told_so_not_reported_as_losing_nothing() -> None:
    """Its error went to threading.excepthook on the lab's thread, and the outcome read
    "10 ran, 0 lost, wait_idle returns": the real order's answer."""
    with pytest.raises(VariantError, match="_RaisingOrder: its shutdown\\(\\) raised") as caught:
        run_shutdown_while_work_falls_due(_RaisingOrder)
    assert str(caught.value.__cause__) == "a learner's bug"


def test_an_order_that_never_shuts_the_pool_is_told_so() -> None:
    with pytest.raises(VariantError, match="_PoolLeftOpen: its shutdown\\(\\) never shut the pool"):
        run_shutdown_while_work_falls_due(_PoolLeftOpen)


class _UncountedCondition(CountingCondition):
    """A learner's condition that parks its waiters without counting them."""

    def wait(self, timeout: float | None = None) -> bool:
        return threading.Condition.wait(self, timeout)


class _UncountedPool(CountingPool):
    condition_type = _UncountedCondition


def test_a_pool_whose_workers_never_park_in_the_counted_condition_is_told_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The experiment went on after 5 s as if they had, and shut an unobserved pool down;
    then it told so after the whole 5 s.  It is told once every worker reached its wait:
    here the patience is longer than the test may run."""
    monkeypatch.setattr(shutdown, "VARIANT_PATIENCE", 3600.0)
    with pytest.raises(
        VariantError, match=r"_UncountedPool: only 0 of its 4 workers parked .*4 reached their wait"
    ):
        run_shutdown_with_idle_workers(_UncountedPool)
