"""An injected clock whose ``now()`` raises while a worker reads it: the run is recorded
failed with the clock's error, its task is not left RUNNING, and the worker lives on."""

from __future__ import annotations

import logging
import threading

import pytest

from lldsched import FakeClock, OneTime, TaskStatus
from tests.conftest import SchedulerFactory

T0 = 1_800_000_000.0


class _GlitchingClock(FakeClock):
    """Raises from ``now()`` once, at the first reading a worker thread takes after
    ``armed`` is set (the timer's readings are left alone: its death is another test's)."""

    def __init__(self, start: float) -> None:
        super().__init__(start)
        self.armed = threading.Event()
        self.raised = threading.Event()

    def now(self) -> float:
        if (
            self.armed.is_set()
            and not self.raised.is_set()
            and "worker" in threading.current_thread().name
        ):
            self.raised.set()
            raise RuntimeError("the clock broke")
        return super().now()


@pytest.mark.parametrize("where", ["start", "finish", "deadline"])
def test_a_clock_raising_in_a_worker_fails_the_run_and_settles_it(
    make_scheduler: SchedulerFactory, caplog: pytest.LogCaptureFixture, where: str
) -> None:
    clock = _GlitchingClock(T0)
    scheduler = make_scheduler(clock=clock, workers=1)
    if where != "finish":
        clock.armed.set()  # the first reading in the worker: its start, or its deadline's
    ran = threading.Event()

    def job() -> None:
        ran.set()
        clock.armed.set()  # "finish": the reading after the action returned

    timeout = 60.0 if where == "deadline" else None
    task = scheduler.schedule("glitch", job, OneTime(at=T0), id="glitch", timeout=timeout)
    with caplog.at_level(logging.WARNING):
        assert scheduler.wait_idle(timeout=5)
    assert clock.raised.is_set()
    assert scheduler.task(task.id).status is TaskStatus.RETRYING  # a failed run: not RUNNING
    (record,) = [r for r in scheduler.records() if r.task_id == task.id]
    assert not record.ok and record.error is not None
    assert "RuntimeError: the clock broke" in record.error and "clock" in record.error
    assert "could not s" not in caplog.text  # neither "could not start" nor "settle"
    # The worker lives on: the next run runs.
    after = threading.Event()
    scheduler.schedule("after", after.set, OneTime(at=T0), id="after")
    assert after.wait(5)
    assert scheduler.wait_idle(timeout=5)
