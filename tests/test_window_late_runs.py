"""A run that ends after its task was cancelled or removed counts in no ``Window``
(docs/decisions/lifecycle.md, "A run that ends after its task was cancelled counts
toward nothing"), on both runtimes: a task registered again under the removed task's
id, with the same window, counts its own runs only, whether it was registered before
that run ended or after, and whether the runs were one or several at once."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    OneTime,
    Overlap,
    ScheduledTask,
    Simulation,
    TaskStatus,
    Window,
)
from lldsched.schedules.decorators import Window as WindowType
from tests.conftest import T0, SchedulerFactory, settle

WAIT = 10.0  # bound of every wait below: a failing test fails, it never hangs

RUNTIMES = ["threaded", "simulated"]
SHAPES = ["recurring", "one-off", "overlapping"]


def _window(shape: str) -> WindowType:
    if shape == "one-off":
        return Window(OneTime(delay=0), max_runs=3)
    return Window(FixedRate(60), max_runs=3)


def _options(shape: str) -> dict[str, Any]:
    return {"overlap": Overlap.ALLOW, "max_instances": 2} if shape == "overlapping" else {}


def _in_flight(shape: str) -> int:
    """How many runs of the old task are in flight when it leaves."""
    return 2 if shape == "overlapping" else 1


class _Threads:
    """The threaded scheduler on a fake clock; each run of ``old`` blocks until its
    own gate is set."""

    def __init__(self, make_scheduler: SchedulerFactory, **options: Any) -> None:
        self.clock = FakeClock(T0)
        self.scheduler = make_scheduler(clock=self.clock, workers=4, **options)
        self.gates = [threading.Event() for _ in range(2)]
        self.begun = 0
        self.started = threading.Semaphore(0)

    def _block(self) -> None:
        gate = self.gates[self.begun]
        self.begun += 1  # the runs begin a slot apart: one at a time
        self.started.release()
        assert gate.wait(WAIT)

    def start_old(self, window: WindowType, shape: str) -> ScheduledTask:
        task = self.scheduler.schedule("old", self._block, window, id="x", **_options(shape))
        for step in range(_in_flight(shape)):
            if step:
                self.clock.advance(60)
            assert self.started.acquire(timeout=WAIT)
        return task

    def add_new(self, window: WindowType, shape: str) -> ScheduledTask:
        return self.scheduler.schedule("new", _noop, window, id="x", **_options(shape))

    def end_old(self, old: ScheduledTask, shape: str) -> None:
        for gate in self.gates[: _in_flight(shape)]:
            gate.set()
        settle(self.scheduler)
        assert old.runs == ()  # every run of it has ended

    def ids(self) -> list[str]:
        return [task.id for task in self.scheduler.tasks()]

    def run_out(self, task: ScheduledTask) -> None:
        for _ in range(6):  # three runs a minute apart, and room to show one too many
            settle(self.scheduler)
            if task.status is not TaskStatus.SCHEDULED:
                return
            self.clock.advance(60)

    def leave(self, verb: str) -> None:
        getattr(self.scheduler, verb)("x")

    def replace(self, window: WindowType, shape: str) -> ScheduledTask:
        return self.scheduler.schedule(
            "new", _noop, window, id="x", replace_existing=True, **_options(shape)
        )


class _Simulated:
    """The simulation: each run of ``old`` takes 90 s, so a second one begins (at
    T0 + 60) beside the first when the task allows it."""

    def __init__(self, **options: Any) -> None:
        self.sim = Simulation(start=T0, workers=4, **options)

    def start_old(self, window: WindowType, shape: str) -> ScheduledTask:
        task = self.sim.schedule("old", window, id="x", duration=90, **_options(shape))
        self.sim.run(T0 + 70)
        assert len(task.runs) == _in_flight(shape)
        return task

    def add_new(self, window: WindowType, shape: str) -> ScheduledTask:
        return self.sim.schedule("new", window, id="x", duration=1, **_options(shape))

    def end_old(self, old: ScheduledTask, shape: str) -> None:
        self.sim.run(T0 + 200)
        assert old.runs == ()

    def ids(self) -> list[str]:
        return [task.id for task in self.sim.tasks()]

    def run_out(self, task: ScheduledTask) -> None:
        self.sim.run(T0 + 3600)

    def leave(self, verb: str) -> None:
        getattr(self.sim, verb)("x")

    def replace(self, window: WindowType, shape: str) -> ScheduledTask:
        return self.sim.schedule(
            "new", window, id="x", duration=1, replace_existing=True, **_options(shape)
        )


def _noop() -> None:
    return None


def _runtime(
    runtime: str, make_scheduler: SchedulerFactory, **options: Any
) -> _Threads | _Simulated:
    if runtime == "threaded":
        return _Threads(make_scheduler, **options)
    return _Simulated(**options)


def _successes(task: ScheduledTask) -> int:
    return len([record for record in task.history if record.ok])


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("registered", ["before its run ends", "after its run ended"])
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_removed_tasks_late_run_counts_nothing_for_the_task_registered_again_under_its_id(
    runtime: str, registered: str, shape: str, make_scheduler: SchedulerFactory
) -> None:
    """A task with ``Window(..., max_runs=3)`` is removed with its run (or, allowed to
    overlap, its two runs) in flight, and a task registered again under its id with the
    same window.  Before, the removed task's last run to end counted under the id, after
    ``remove`` had cleared it: the new task began at one, and ran twice of its three
    (a one-off's count read two after its one run).  Now the new task counts its own
    runs only."""
    driven = _runtime(runtime, make_scheduler)
    window = _window(shape)
    old = driven.start_old(window, shape)
    driven.leave("remove")
    assert window.runs_counted("x") == 0
    if registered == "before its run ends":
        new = driven.add_new(window, shape)
        driven.end_old(old, shape)
    else:
        driven.end_old(old, shape)
        assert window.runs_counted("x") == 0
        new = driven.add_new(window, shape)
    driven.run_out(new)
    assert old.status is TaskStatus.CANCELLED and _successes(old) == _in_flight(shape)
    assert new.status is TaskStatus.SUCCEEDED
    if shape == "one-off":
        assert _successes(new) == 1 and window.runs_counted("x") == 1  # its own run only
    else:
        assert _successes(new) == 3 and window.runs_counted("x") == 0  # retired at the third


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_cancelled_tasks_late_run_counts_nothing_and_a_replace_runs_nothing(
    runtime: str, shape: str, make_scheduler: SchedulerFactory
) -> None:
    """A task cancelled with its runs in flight keeps its window's count as the cancel
    left it as they end (before, the last of them counted: nothing follows it, and the
    count read one more than the runs that counted toward the task's end), and
    registered again with ``replace_existing`` it stays CANCELLED and runs nothing."""
    driven = _runtime(runtime, make_scheduler)
    window = _window(shape)
    old = driven.start_old(window, shape)
    driven.leave("cancel")
    driven.end_old(old, shape)
    assert old.status is TaskStatus.CANCELLED and _successes(old) == _in_flight(shape)
    assert window.runs_counted("x") == 0
    replaced = driven.replace(window, shape)
    assert replaced is old and replaced.status is TaskStatus.CANCELLED
    driven.run_out(replaced)
    assert _successes(replaced) == _in_flight(shape) and window.runs_counted("x") == 0


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_task_cancelled_mid_run_retires_after_its_run_and_leaves_no_count(
    runtime: str, shape: str, make_scheduler: SchedulerFactory
) -> None:
    """Retirement waits for the last run of a task to end (``retain_finished=0``: at
    once then), so the count it forgets is the last: a task registered again under the
    id, with the same window, counts from none.  (It held before this change too: a
    guard, not a fix.)"""
    driven = _runtime(runtime, make_scheduler, retain_finished=0)
    window = _window(shape)
    old = driven.start_old(window, shape)
    driven.leave("cancel")
    assert driven.ids() == ["x"]  # held while its runs are in flight
    driven.end_old(old, shape)
    assert driven.ids() == [] and window.runs_counted("x") == 0
    new = driven.add_new(window, shape)
    driven.run_out(new)
    assert new.status is TaskStatus.SUCCEEDED
    assert _successes(new) == (1 if shape == "one-off" else 3)
