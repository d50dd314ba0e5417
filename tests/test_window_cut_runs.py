"""A run ``Overlap.CANCEL_OTHER`` cut is no success (docs/decisions/overlap.md, "A run
CANCEL_OTHER cut is no success"), on both runtimes: when it is the last run out of its
task's flight with no slot queued behind it, its schedule is shown it as it was recorded
(cancelled, not ``ok``), so a ``Window`` counts it toward nothing; and, as before, it is
never retried, gives no slot up and leaves the task going on as after a success.

Each case has a run cut by the next slot's run, which ends first (a thread that does not
look at its flag runs on; the simulation ends a cut run at the cut, and the next slot's
run here takes no time), so the cut run is the last out; what left no slot queued behind
it is a ``reschedule`` made between the two ends, the ``max_runs``-th run ending beside
it, or a schedule whose slots end there."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lldsched import (
    EventLog,
    FakeClock,
    FixedRate,
    Overlap,
    RetryPolicy,
    ScheduledTask,
    Scheduler,
    Simulation,
    TaskEvent,
    TaskStatus,
    Window,
)
from lldsched.model import ExecutionRecord, Outcome
from tests.conftest import T0, SchedulerFactory, settle
from tests.waits import wait_until

WAIT = 10.0  # bound of every wait below: a failing test fails, it never hangs
RUNTIMES = ["threaded", "simulated"]


def _durations(*seconds: float) -> Callable[[Any, int], float]:
    """A simulated task's duration model: ``seconds`` in turn, then runs that take none."""
    drawn: Iterator[float] = iter(seconds)
    return lambda rng, attempt: next(drawn, 0.0)


class _Blocked:
    """A threaded task's action: its ``blocked``-th runs (from 0) wait for their gate,
    each told to stop by its flag and not looking (a thread Python cannot stop); the
    others end at once."""

    def __init__(self, *blocked: int) -> None:
        self.gates = {index: threading.Event() for index in blocked}
        self.begun = itertools.count()
        self.started = threading.Semaphore(0)

    def __call__(self) -> None:
        gate = self.gates.get(next(self.begun))
        self.started.release()
        if gate is not None:
            assert gate.wait(WAIT)

    def begin(self) -> None:
        assert self.started.acquire(timeout=WAIT)


def _outcomes(task: ScheduledTask) -> list[tuple[float, str]]:
    return [(r.slot - T0, r.outcome.value) for r in task.history]


def _successes(task: ScheduledTask) -> int:
    return len([r for r in task.history if r.ok])


def _recorded(task: ScheduledTask, runs: int) -> None:
    wait_until(lambda: len(task.history) >= runs, timeout=WAIT, what=f"{runs} records")


def _run_out(scheduler: Scheduler, clock: FakeClock, task: ScheduledTask) -> None:
    """Step a minute at a time while ``task`` is due: its runs a minute apart, and room
    to show one too many."""
    for _ in range(6):
        settle(scheduler)
        if task.status is not TaskStatus.SCHEDULED:
            return
        clock.advance(60)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_cut_run_counts_toward_no_max_runs_of_a_window_given_while_it_runs(
    runtime: str, make_scheduler: SchedulerFactory
) -> None:
    """The run of T0 is cut by the slot of T0 + 60, whose run ends first; the task is
    then given ``Window(FixedRate(60), max_runs=3)`` (its one success counted, as a
    restart counts it), and the cut run ends last.  Before, it was shown to the window
    as a success, and the task ended after two successful runs of its three."""
    window = Window(FixedRate(60), max_runs=3)
    if runtime == "threaded":
        clock = FakeClock(T0)
        scheduler = make_scheduler(clock=clock, workers=2)
        action = _Blocked(0)
        task = scheduler.schedule("x", action, FixedRate(60), id="x", overlap=Overlap.CANCEL_OTHER)
        action.begin()
        clock.advance(60)  # the slot of T0 + 60 begins, cuts the run of T0, and ends
        _recorded(task, 1)
        scheduler.reschedule("x", window)
        action.gates[0].set()  # the cut run ends, the last one out
        _run_out(scheduler, clock, task)
    else:
        sim = Simulation(workers=2, start=T0)

        def given_the_window_at_the_first_success(event: TaskEvent) -> None:
            # the simulation tells a listener at once, the cut run still in flight
            if event.record is not None and event.record.ok and not window.runs_counted("x"):
                assert len(sim.task("x").runs) == 1
                sim.reschedule("x", window)

        sim.add_listener(given_the_window_at_the_first_success)
        task = sim.schedule(
            "x", FixedRate(60), id="x", duration=_durations(90), overlap=Overlap.CANCEL_OTHER
        )
        sim.run(T0 + 1000)
    assert _outcomes(task)[:2] == [(60, "ok"), (0, "cancelled")]
    assert task.status is TaskStatus.SUCCEEDED
    assert _successes(task) == 3  # was 2: the cut run counted as the window's second


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_cut_run_ending_after_the_max_runs_th_leaves_the_window_no_count(
    runtime: str, make_scheduler: SchedulerFactory
) -> None:
    """``Window(FixedRate(60), max_runs=2)``: the run of T0 + 60 is cut by the slot of
    T0 + 120, whose run, the second success, ends first and ends the task; the cut run
    ends last.  Before, the window counted it as a success after the task's last, and
    kept that count (one) for the task, which had ended."""
    window = Window(FixedRate(60), max_runs=2)
    if runtime == "threaded":
        clock = FakeClock(T0)
        scheduler = make_scheduler(clock=clock, workers=2)
        action = _Blocked(1)
        task = scheduler.schedule("x", action, window, id="x", overlap=Overlap.CANCEL_OTHER)
        action.begin()
        _recorded(task, 1)
        clock.advance(60)
        action.begin()  # the run of T0 + 60, which waits
        clock.advance(60)  # the slot of T0 + 120 begins, cuts it, and ends
        _recorded(task, 2)
        action.gates[1].set()
        settle(scheduler)
    else:
        sim = Simulation(workers=2, start=T0)
        task = sim.schedule(
            "x", window, id="x", duration=_durations(0, 90), overlap=Overlap.CANCEL_OTHER
        )
        sim.run(T0 + 1000)
    assert _outcomes(task) == [(0, "ok"), (120, "ok"), (60, "cancelled")]
    assert task.status is TaskStatus.SUCCEEDED
    assert window.runs_counted("x") == 0  # was 1


class _TwoSlots:
    """A schedule of one's own: slots at T0 and T0 + 60, the next one after a run's
    finish; it keeps the records of the runs it is asked about."""

    def __init__(self) -> None:
        self.seen: list[ExecutionRecord] = []

    def first_run(self, now: float) -> float | None:
        return T0 if now <= T0 else None

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        if record.task_id:  # not the slot listing's question (no run)
            self.seen.append(record)
        following = T0 + 60
        return following if record.slot < following and record.finished < following else None


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_cut_run_is_shown_to_its_schedule_as_cancelled_and_is_neither_retried_nor_given_up(
    runtime: str, make_scheduler: SchedulerFactory
) -> None:
    """A plain schedule whose last slot cuts the run before it: the cut run, the last
    out, is shown to the schedule as it was recorded (before: ``ok``, no error, as if
    it had succeeded), and what the user sees besides is as it was: a record
    ``cancelled``, one failure counted and no slot given up, no retry (three attempts
    allowed), no dead letter (``fail_after_given_up=1``), the task SUCCEEDED, and each
    record heard once."""
    schedule = _TwoSlots()
    log = EventLog()
    retry = RetryPolicy(max_attempts=3, fail_after_given_up=1)
    options: dict[str, Any] = {"overlap": Overlap.CANCEL_OTHER, "retry": retry, "id": "x"}
    if runtime == "threaded":
        clock = FakeClock(T0)
        scheduler = make_scheduler(clock=clock, workers=2, listeners=[log])
        action = _Blocked(0)
        task = scheduler.schedule("x", action, schedule, **options)
        action.begin()
        clock.advance(60)  # the last slot begins, cuts the run of T0, and ends
        _recorded(task, 1)
        action.gates[0].set()
        settle(scheduler)
        assert log.wait_for(lambda e: e.status is TaskStatus.SUCCEEDED, timeout=WAIT)
        dead = scheduler.dead_letter()
    else:
        sim = Simulation(workers=2, start=T0, listeners=[log])
        task = sim.schedule("x", schedule, duration=_durations(90), **options)
        sim.run(T0 + 1000)
        dead = sim.dead_letter()
    assert _outcomes(task) == [(60, "ok"), (0, "cancelled")]
    cut = task.history[1]
    seen = schedule.seen[-1]
    assert (seen.slot, seen.ok, seen.outcome) == (T0, False, Outcome.CANCELLED)  # was ok
    assert seen == cut
    assert task.status is TaskStatus.SUCCEEDED and dead == []
    assert (task.run_count, task.failure_count, task.given_up) == (2, 1, 0)
    assert [e.record.outcome for e in log.events if e.record is not None] == [
        Outcome.OK,
        Outcome.CANCELLED,
    ]
    last = log.events[-1]
    assert (last.previous, last.status, last.record) == (
        TaskStatus.RUNNING,
        TaskStatus.SUCCEEDED,
        cut,
    )


@pytest.mark.parametrize(
    ("runtime", "overlap"),
    [
        ("threaded", Overlap.CANCEL_OTHER),  # the run of T0 cut by the slot of T0 + 60
        ("threaded", Overlap.ALLOW),
        ("simulated", Overlap.ALLOW),  # the simulation ends a cut run at the cut
    ],
)
def test_a_success_beside_a_run_in_flight_counts_in_a_window_given_while_they_run(
    runtime: str, overlap: Overlap, make_scheduler: SchedulerFactory
) -> None:
    """The runs of T0 and T0 + 60 are in flight when the task is given
    ``Window(FixedRate(60), max_runs=3)`` (no success yet to count); the second ends
    first, beside the first, and succeeds.  Before, that success counted in no window
    (only a run with a slot queued behind it did), and the task ran four successful
    runs of its three; with ``CANCEL_OTHER`` the cut run, counted as a success, made up
    for it (three), until a cut run counted toward nothing."""
    window = Window(FixedRate(60), max_runs=3)
    options: dict[str, Any] = {"id": "x", "overlap": overlap}
    if overlap is Overlap.ALLOW:
        options["max_instances"] = 2
    if runtime == "threaded":
        clock = FakeClock(T0)
        scheduler = make_scheduler(clock=clock, workers=2)
        action = _Blocked(0, 1)
        task = scheduler.schedule("x", action, FixedRate(60), **options)
        action.begin()
        clock.advance(60)
        action.begin()  # the run of T0 + 60, beside the run of T0
        scheduler.reschedule("x", window)
        action.gates[1].set()
        _recorded(task, 1)
        action.gates[0].set()
        _run_out(scheduler, clock, task)
    else:
        sim = Simulation(workers=2, start=T0)
        task = sim.schedule("x", FixedRate(60), duration=_durations(150, 30), **options)
        sim.run(T0 + 70)
        assert len(task.runs) == 2
        sim.reschedule("x", window)
        sim.run(T0 + 1000)
    first = "cancelled" if overlap is Overlap.CANCEL_OTHER else "ok"
    assert _outcomes(task)[:2] == [(60, "ok"), (0, first)]
    assert task.status is TaskStatus.SUCCEEDED
    assert _successes(task) == 3  # was 4 (3 with CANCEL_OTHER, until the cut counted none)
