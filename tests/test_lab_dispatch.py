"""The lab's listener decision stays honest: a listener under the lock holds every run while
it blocks; off the lock, runs go on (lldsched.lab.dispatch)."""

from __future__ import annotations

import logging
import re

import pytest

from lldsched.clock import FakeClock
from lldsched.lab import VariantError, _support, dispatch
from lldsched.lab.dispatch import (
    InlineDispatcher,
    InlineListenerScheduler,
    measure_listener_latency,
    runs_while_a_listener_blocks,
)
from lldsched.listeners import EventLog
from lldsched.model import TaskEvent, TaskStatus
from lldsched.schedules.simple import OneTime
from lldsched.threaded.scheduler import Scheduler


def test_a_listener_under_the_lock_holds_every_run_while_it_blocks() -> None:
    assert not runs_while_a_listener_blocks(InlineListenerScheduler, patience=0.3)


def test_a_listener_off_the_lock_blocks_no_run() -> None:
    assert runs_while_a_listener_blocks(Scheduler, patience=5.0)


def test_a_latency_burst_of_no_task_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="tasks must be a whole number >= 1, got 0"):
        measure_listener_latency((0.0,), tasks=0)


def test_a_listener_delay_below_zero_is_refused_naming_it() -> None:
    """It was measured, and reported as a listener taking -1 ms per event."""
    said = "listener delay must be finite and >= 0 seconds, got -0.001"
    with pytest.raises(ValueError, match=re.escape(said)):
        measure_listener_latency((0.0, -0.001), tasks=1)


@pytest.mark.parametrize("patience", [0, -1, float("nan")])
def test_patience_that_is_not_a_positive_time_is_refused_naming_it(patience: float) -> None:
    said = f"patience must be finite and > 0 seconds, got {patience!r}"
    with pytest.raises(ValueError, match=re.escape(said)):
        runs_while_a_listener_blocks(Scheduler, patience=patience)


def test_each_way_s_latency_is_its_quietest_burst(monkeypatch: pytest.MonkeyPatch) -> None:
    """Load only ever adds lateness: one burst on a busy machine put the runs off the
    lock later (22.8 ms at the median) than those under it (19.2 ms).  Each way reports
    the burst with the smallest median of ``repeats``, as ``timeit`` its fastest."""
    bursts = {
        Scheduler: iter([(22.8, 40.0), (0.4, 1.0), (3.0, 2.0)]),
        InlineListenerScheduler: iter([(19.2, 40.0), (25.0, 50.0), (30.0, 45.0)]),
    }
    monkeypatch.setattr(
        dispatch, "_burst_lateness", lambda kind, delay, *, tasks: next(bursts[kind])
    )
    (point,) = measure_listener_latency((0.001,), tasks=1, repeats=3)
    assert point == (1.0, 0.4, 19.2, 1.0, 40.0)


def test_a_latency_measured_over_no_repeat_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="repeats must be a whole number >= 1, got 0"):
        measure_listener_latency((0.0,), repeats=0)


def test_a_listener_under_the_lock_cannot_act_on_its_scheduler() -> None:
    """Why the lab's dispatcher has no queue for the events a listener's verb publishes
    (a ``Simulation``'s has: ``Hearing``): under the lock no verb of a listener gets
    that far.  ``shutdown`` is the one verb that gives up (the others wait for good): at
    its timeout, having stopped nothing, while the listeners still hear the event."""
    log = EventLog()
    said: list[bool] = []
    scheduler = InlineListenerScheduler(workers=2, clock=FakeClock(0))

    def verbs(event: TaskEvent) -> None:
        if event.status is TaskStatus.RUNNING:
            said.extend([scheduler.shutdown(drain=False, timeout=0), scheduler.running])

    scheduler.add_listener(verbs)
    scheduler.add_listener(log)
    scheduler.schedule("a", lambda: None, OneTime(delay=0), id="a")
    scheduler.start()
    try:
        assert scheduler.wait_idle()
    finally:
        assert scheduler.shutdown(timeout=5)
    assert said == [False, True]  # the lock held past the timeout: nothing stopped
    assert [(e.previous, e.status) for e in log.events] == [
        (None, TaskStatus.SCHEDULED),
        (TaskStatus.SCHEDULED, TaskStatus.RUNNING),
        (TaskStatus.RUNNING, TaskStatus.SUCCEEDED),
    ]


def test_a_listener_that_raises_at_every_event_under_the_lock_is_logged_once_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """As the real dispatcher logs it: one ERROR with its traceback, DEBUG lines after."""

    def broken(_event: TaskEvent) -> None:
        raise RuntimeError("listener down")

    scheduler = InlineListenerScheduler(workers=1, clock=FakeClock(0), listeners=[broken])
    with caplog.at_level(logging.DEBUG, logger="lldsched.listeners"):
        scheduler.schedule("a", lambda: None, OneTime(delay=0), id="a")
        scheduler.start()
        try:
            assert scheduler.wait_idle()
        finally:
            assert scheduler.shutdown(timeout=5)
    levels = [r.levelno for r in caplog.records if r.name == "lldsched.listeners"]
    assert levels == [logging.ERROR, logging.DEBUG, logging.DEBUG]  # 3 events, 1 traceback


class _SilentDispatcher(InlineDispatcher):
    """A learner's dispatcher that drops every event."""

    def publish(self, event: TaskEvent) -> None:
        pass


class SilentDispatchScheduler(Scheduler):
    dispatcher_type = _SilentDispatcher


def test_a_dispatcher_that_delivers_nothing_gets_no_answer_but_a_variant_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The listener never blocked, and the experiment answered "B ran while the listener
    was blocked": True, as the real dispatcher does.  Then it said so after its whole
    patience, 5 s; now once the scheduler is idle, every event delivered by its
    dispatcher's account: here the patience is longer than the test may run."""
    monkeypatch.setattr(_support, "VARIANT_PATIENCE", 3600.0)
    monkeypatch.setattr(dispatch, "VARIANT_PATIENCE", 3600.0)
    with pytest.raises(VariantError, match="SilentDispatchScheduler: the listener never heard A"):
        runs_while_a_listener_blocks(SilentDispatchScheduler, patience=0.1)
