"""Failures on the threaded scheduler: retries, dead letter, redrive, timeouts, and nothing a
task or a listener does can kill a worker or stall the timer."""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable

import pytest

from lldsched import (
    EventLog,
    FakeClock,
    InMemoryTaskStore,
    OneTime,
    RetryPolicy,
    RunContext,
    ScheduledTask,
    Scheduler,
    TaskEvent,
    TaskStatus,
)
from lldsched.threaded.parts import Begun, Outcome
from tests.conftest import SchedulerFactory, settle
from tests.harness import RecordingStore


def failing(times: int, message: str = "not yet") -> Callable[[], None]:
    left = [times]

    def action() -> None:
        if left[0] > 0:
            left[0] -= 1
            raise RuntimeError(message)

    return action


def test_retry_backoff_is_one_second_then_two_then_success(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("import", failing(2), OneTime(delay=0))
    settle(scheduler)
    assert task.status is TaskStatus.RETRYING and task.next_run_at == clock.now() + 1
    clock.advance(0.999)
    settle(scheduler)
    assert task.run_count == 1  # not a millisecond early
    clock.advance(0.001)
    settle(scheduler)
    assert task.status is TaskStatus.RETRYING and task.next_run_at == clock.now() + 2
    clock.advance(2)
    settle(scheduler)
    history = task.history
    assert [r.attempt for r in history] == [1, 2, 3] and history[-1].ok
    assert [b.due - a.finished for a, b in itertools.pairwise(history)] == [1, 2]
    assert task.status is TaskStatus.SUCCEEDED


def test_exhausted_retries_fail_into_the_dead_letter_with_every_transition_stored(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    store = RecordingStore()
    scheduler = make_scheduler(clock=clock, store=store)
    task = scheduler.schedule(
        "cleanup", failing(99, "disk is full"), OneTime(delay=0),
        retry=RetryPolicy(max_attempts=2),
    )  # fmt: skip
    settle(scheduler)
    clock.advance(1)
    settle(scheduler)
    assert task.status is TaskStatus.FAILED and scheduler.dead_letter() == [task.id]
    assert task.last_error == "RuntimeError: disk is full"
    assert [s for _, s in store.saved] == ["scheduled", "running", "retrying", "running", "failed"]
    snapshot = store.get(task.id)
    assert snapshot is not None and snapshot.status is TaskStatus.FAILED
    assert [r.ok for r in store.records(task.id)] == [False, False]


def test_redrive_runs_a_dead_task_again_with_a_fresh_attempt_counter(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule(
        "cleanup",
        failing(1),
        OneTime(delay=0),
        retry=RetryPolicy.never(),
    )
    settle(scheduler)
    assert task.status is TaskStatus.FAILED
    assert scheduler.redrive(task.id) is True
    settle(scheduler)
    assert task.status is TaskStatus.SUCCEEDED and scheduler.dead_letter() == []
    assert [(r.attempt, r.ok) for r in task.history] == [(1, False), (1, True)]


def test_a_run_over_its_timeout_is_recorded_timed_out_and_its_cooperative_flag_is_set(
    make_scheduler: SchedulerFactory,
) -> None:
    seen: list[RunContext] = []
    flagged = threading.Event()

    def slow(ctx: RunContext) -> None:
        seen.append(ctx)
        if ctx.wait(10):  # returns early only because the flag goes up
            flagged.set()

    scheduler = make_scheduler()
    task = scheduler.schedule(
        "slow", slow, OneTime(delay=0), timeout=0.05, retry=RetryPolicy.never()
    )
    assert flagged.wait(5)
    settle(scheduler)
    (record,) = task.history
    assert record.timed_out and record.outcome == "timed_out"
    # The deadline counts from the run's begin (at or after its due instant), its duration
    # from the action's start, a moment later: the flag went up no earlier than the
    # timeout after the due instant, though the duration may read a little under it (it
    # read 0.04997 under load).
    assert record.finished - record.due >= 0.05
    assert seen[0].cancelled and seen[0].reason == "timeout"
    assert task.status is TaskStatus.FAILED


def patient_running(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> tuple[Scheduler, ScheduledTask, threading.Event]:
    """A one-off run with a 1 s timeout that waits on its flag, running once this returns;
    the event is set once its flag went up."""
    started, flagged = threading.Event(), threading.Event()

    def patient(ctx: RunContext) -> None:
        started.set()
        if ctx.wait(10):  # returns early only because the flag goes up
            flagged.set()

    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule(
        "patient", patient, OneTime(delay=0), timeout=1, retry=RetryPolicy.never()
    )
    assert started.wait(5)
    return scheduler, task, flagged


@pytest.mark.parametrize("budget", [1, 2], ids=["as-registered", "timeout-raised"])
def test_a_run_stopped_by_its_timeout_is_recorded_timed_out_whatever_duration_it_measured(
    make_scheduler: SchedulerFactory, budget: int
) -> None:
    # Judged by its duration alone, a run its deadline stopped measured exactly its
    # timeout here (its start and its deadline one reading, as the run began), and was
    # recorded a success; on a coarse clock under load it measured less, when its start
    # was still read as the action started, a tick after the deadline was armed.
    clock = FakeClock(1_800_000_000.0)
    scheduler, task, flagged = patient_running(make_scheduler, clock)
    if budget != 1:  # raised during the run: its deadline re-armed from its begin
        scheduler.modify(task.id, timeout=budget)
    clock.advance(budget)  # its deadline falls due: the run measures its budget, not more
    assert flagged.wait(5)
    settle(scheduler)
    (record,) = task.history
    assert record.duration == budget
    assert record.timed_out and record.outcome == "timed_out" and not record.ok
    assert record.error == f"TimeoutError: stopped at its {budget} s timeout"
    assert task.status is TaskStatus.FAILED


def test_a_run_its_worker_was_slow_to_start_measures_its_timeout_from_its_begin(
    make_scheduler: SchedulerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker that got to the action 0.4 s after it began the run (under load): the
    # deadline counted from the begin, ``started`` was read as the action started, so a
    # run its 1 s deadline stopped recorded 0.6 s, shorter than its timeout, and a
    # lateness of 0.4 s that no wait for a worker made.  ``started`` is the begin now,
    # the reading the deadline counts from (docs/decisions/threaded.md, "A thread run
    # starts as its worker begins it").
    clock = FakeClock(1_800_000_000.0)
    execute = Scheduler._execute

    def slow_to_start(self: Scheduler, job: Begun) -> Outcome:
        clock.advance(0.4)  # the worker, let go of the lock, gets to the action late
        return execute(self, job)

    monkeypatch.setattr(Scheduler, "_execute", slow_to_start)
    scheduler, task, flagged = patient_running(make_scheduler, clock)
    clock.advance(0.6)  # the deadline, a second after the begin, falls due
    assert flagged.wait(5)
    settle(scheduler)
    (record,) = task.history
    assert (record.started, record.finished) == (record.due, record.due + 1)
    assert record.duration == 1 and record.lateness == 0
    assert record.error == "TimeoutError: stopped at its 1 s timeout"


@pytest.mark.parametrize(
    ("modified", "flagged", "error"),
    [
        ((), (), "TimeoutError: ran 30 s, over its 5 s budget"),
        # dropped once its flag went up: the flag stays, judged by the budget that raised it
        ((), (None,), "TimeoutError: ran 30 s, over its 5 s budget"),
        ((3,), (), "TimeoutError: ran 30 s, over its 3 s budget"),  # judged by the new one
    ],
    ids=["as-registered", "timeout-dropped-after-its-flag", "timeout-lowered"],
)
def test_a_thread_that_runs_on_past_its_deadline_is_recorded_with_the_time_it_ran(
    make_scheduler: SchedulerFactory,
    modified: tuple[float | None, ...],
    flagged: tuple[float | None, ...],
    error: str,
) -> None:
    # A thread cannot be stopped: one that ignores its raised flag runs on, here 25 s
    # past its 5 s deadline.  Its record said "stopped at its 5 s timeout" (nothing
    # stopped it), and on a FakeClock jump it said "ran 30 s, over its 5 s budget" when
    # the worker finished before the timer raised the flag; the simulation says the
    # latter, and a modify(timeout=3) during the run is judged by the new budget, as
    # there (docs/decisions/changing-a-task.md, "Changing a task").
    clock = FakeClock(1_800_000_000.0)
    started, release = threading.Event(), threading.Event()
    contexts: list[RunContext] = []

    def stubborn(ctx: RunContext) -> None:
        contexts.append(ctx)
        started.set()
        assert release.wait(5)  # the flag goes up meanwhile: ignored

    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule(
        "stubborn", stubborn, OneTime(delay=0), timeout=5, retry=RetryPolicy.never()
    )
    assert started.wait(5)
    for timeout in modified:
        scheduler.modify(task.id, timeout=timeout)
    clock.advance(5)
    assert contexts[0].wait(5) and contexts[0].reason == "timeout"  # its deadline passed
    for timeout in flagged:
        scheduler.modify(task.id, timeout=timeout)
    clock.advance(25)
    release.set()
    settle(scheduler)
    (record,) = task.history
    assert record.duration == 30.0
    assert record.timed_out and not record.ok
    assert record.error == error
    assert task.status is TaskStatus.FAILED


def test_a_raising_task_and_a_raising_listener_leave_every_worker_alive(
    make_scheduler: SchedulerFactory, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    def bad_listener(event: TaskEvent) -> None:
        raise ValueError("listener bug")

    log = EventLog()
    scheduler = make_scheduler(workers=2, clock=clock, listeners=[bad_listener, log])
    with caplog.at_level(logging.ERROR, logger="lldsched"):
        broken = [
            scheduler.schedule(f"boom{i}", failing(99), OneTime(delay=0), retry=RetryPolicy.never())
            for i in range(4)
        ]
        settle(scheduler)
    assert all(t.status is TaskStatus.FAILED for t in broken)
    assert "listener bug" in caplog.text  # logged, with its traceback
    assert scheduler._pool.alive == 2  # both workers survived four failures
    after = [scheduler.schedule(f"ok{i}", lambda: None, OneTime(delay=0)) for i in range(4)]
    settle(scheduler)
    assert all(t.status is TaskStatus.SUCCEEDED for t in after)
    assert len(log.runs()) == 8  # the listener after the raising one saw everything


def test_a_thread_run_that_raises_is_recorded_failed_not_timed_out(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    # An action that raises, with no timeout, failed: its record says so, and is no
    # timeout.  (mutation15, running.py: `_execute`'s `False` for a raised error as
    # True: every failure was recorded timed_out.)
    scheduler = make_scheduler(workers=1, clock=clock)
    task = scheduler.schedule(
        "boom", failing(1, "bad input"), OneTime(delay=0), retry=RetryPolicy.never()
    )
    settle(scheduler)
    (record,) = task.history
    assert (record.ok, record.timed_out, record.error) == (
        False,
        False,
        "RuntimeError: bad input",
    )
    assert record.outcome == "failed" and task.status is TaskStatus.FAILED


def test_a_listener_blocked_on_an_event_does_not_delay_the_next_due_task(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    unblock = threading.Event()
    blocked = threading.Event()

    def stuck_listener(event: TaskEvent) -> None:
        blocked.set()
        unblock.wait(10)

    ran = threading.Event()
    try:
        scheduler = make_scheduler(clock=clock, listeners=[stuck_listener])
        scheduler.schedule("first", lambda: None, OneTime(delay=0))
        assert blocked.wait(5)
        scheduler.schedule("next", ran.set, OneTime(delay=5))
        clock.advance(5)
        assert ran.wait(5)
        assert scheduler.wait_idle(timeout=0.05) is False  # events still wait for the listener
    finally:
        unblock.set()


def test_a_store_that_raises_mid_run_is_logged_and_the_scheduler_carries_on(
    make_scheduler: SchedulerFactory, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    class FlakyStore(InMemoryTaskStore):
        def save(self, snapshot, record=None):  # type: ignore[no-untyped-def]
            if snapshot.status is TaskStatus.RUNNING:
                raise OSError("disk hiccup")
            super().save(snapshot, record)

    store = FlakyStore()
    scheduler = make_scheduler(clock=clock, store=store)
    with caplog.at_level(logging.ERROR, logger="lldsched"):
        task = scheduler.schedule("x", lambda: None, OneTime(delay=0))
        settle(scheduler)
    assert task.status is TaskStatus.SUCCEEDED
    snapshot = store.get(task.id)
    assert snapshot is not None and snapshot.status is TaskStatus.SUCCEEDED
    assert f"failed (a save of {task.id})" in caplog.text


class _InterruptingStore(InMemoryTaskStore):
    """Raises ``error`` (a BaseException that is not an Exception) from ``save`` while
    ``armed`` holds statuses, for a snapshot with one of them."""

    def __init__(self, error: type[BaseException]) -> None:
        super().__init__()
        self.error = error
        self.armed: set[TaskStatus] = set()

    def save(self, snapshot, record=None):  # type: ignore[no-untyped-def]
        if snapshot.status in self.armed:
            raise self.error("raised inside save")
        super().save(snapshot, record)


@pytest.mark.parametrize("error", [KeyboardInterrupt, SystemExit])
def test_a_save_raising_a_base_exception_in_a_worker_leaves_the_worker_alive_and_the_run_settled(
    make_scheduler: SchedulerFactory,
    clock: FakeClock,
    log: EventLog,
    caplog: pytest.LogCaptureFixture,
    error: type[BaseException],
) -> None:
    store = _InterruptingStore(error)
    store.armed = {TaskStatus.RUNNING, TaskStatus.SUCCEEDED}  # the worker's saves
    scheduler = make_scheduler(clock=clock, store=store, listeners=[log], workers=1)
    with caplog.at_level(logging.ERROR, logger="lldsched"):
        first = scheduler.schedule("first", lambda: "one", OneTime(delay=0))
        settle(scheduler)  # hung until its timeout: the worker died with the run unsettled
        second = scheduler.schedule("second", lambda: "two", OneTime(delay=0))
        settle(scheduler)  # ran: the one worker is still there
    assert first.status is TaskStatus.SUCCEEDED and second.status is TaskStatus.SUCCEEDED
    assert [r.result for r in log.runs("first")] == ["'one'"]
    assert [r.result for r in log.runs("second")] == ["'two'"]
    assert f"failed (a save of {first.id})" in caplog.text and error.__name__ in caplog.text


def test_a_save_raising_keyboard_interrupt_on_the_main_thread_reaches_the_caller_the_change_kept(
    make_scheduler: SchedulerFactory, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    store = _InterruptingStore(KeyboardInterrupt)
    scheduler = make_scheduler(clock=clock, store=store)
    task = scheduler.schedule("later", lambda: None, OneTime(delay=60))
    store.armed = {TaskStatus.PAUSED}
    with caplog.at_level(logging.ERROR, logger="lldsched"), pytest.raises(KeyboardInterrupt):
        scheduler.pause(task.id)
    assert task.status is TaskStatus.PAUSED  # the registry holds the change
    assert f"failed (a save of {task.id})" in caplog.text
    store.armed = set()
    scheduler.resume(task.id)  # the scheduler is usable after the interrupt
    stored = store.get(task.id)
    assert stored is not None and stored.status is TaskStatus.SCHEDULED


@pytest.mark.parametrize("verb", ["cancel", "pause", "remove"])
def test_a_keyboard_interrupt_in_a_verbs_save_reaches_the_caller_once_the_verb_is_whole(
    make_scheduler: SchedulerFactory, clock: FakeClock, log: EventLog, verb: str
) -> None:
    # The save raised the interrupt again on the main thread at once, half-way through
    # the verb: the task was CANCELLED (or PAUSED) but its running coroutine went on (never
    # cancelled), the listeners never heard the change, a cancelled task's dependents
    # stayed BLOCKED, and a remove left the task registered.  Now the verb is whole first.
    import asyncio

    started = threading.Event()

    async def forever() -> None:
        started.set()
        await asyncio.sleep(3600)

    store = _InterruptingStore(KeyboardInterrupt)
    scheduler = make_scheduler(clock=clock, store=store, listeners=[log])
    task = scheduler.schedule("forever", forever, OneTime(delay=0), id="up")
    waiting = None
    if verb == "cancel":  # a dependent due now waits, BLOCKED, for its upstream
        waiting = scheduler.schedule("down", lambda: None, OneTime(delay=0), depends_on=["up"])
    assert started.wait(5)
    if waiting is not None:
        assert log.wait_for(lambda e: e.status is TaskStatus.BLOCKED, timeout=5) is not None
    store.armed = {TaskStatus.PAUSED if verb == "pause" else TaskStatus.CANCELLED}
    with pytest.raises(KeyboardInterrupt):
        getattr(scheduler, verb)(task.id)
    store.armed = set()
    settle(scheduler)  # the coroutine was cancelled, and its run recorded
    (record,) = task.history
    assert record.error == f"CancelledError: task {'paused' if verb == 'pause' else 'cancelled'}"
    changed = TaskStatus.PAUSED if verb == "pause" else TaskStatus.CANCELLED
    heard = log.wait_for(lambda e: e.task_id == "up" and e.status is changed, timeout=5)
    assert heard is not None and heard.previous is TaskStatus.RUNNING
    if verb == "remove":
        assert "up" not in [t.id for t in scheduler.tasks()]
    if waiting is not None:
        assert waiting.status is TaskStatus.FAILED  # its upstream was cancelled


@pytest.mark.parametrize("verb", ["cancel", "remove"])
def test_a_keyboard_interrupt_in_a_simulated_verbs_save_comes_once_the_verb_is_whole(
    verb: str,
) -> None:
    # The core's cancel and remove go on after their save: the dependents of a task
    # cancelled fail, a task removed is forgotten.  The interrupt came out of the save.
    from lldsched import Simulation

    store = _InterruptingStore(KeyboardInterrupt)
    sim = Simulation(workers=1, start=0.0, store=store)
    up = sim.schedule("up", OneTime(at=100.0), duration=1, id="up")
    down = sim.schedule("down", OneTime(at=0.0), duration=1, id="down", depends_on=["up"])
    sim.run(1.0)
    assert down.status is TaskStatus.BLOCKED
    store.armed = {TaskStatus.CANCELLED}
    with pytest.raises(KeyboardInterrupt):
        sim.remove("down") if verb == "remove" else sim.cancel("up")
    if verb == "cancel":
        assert up.status is TaskStatus.CANCELLED and down.status is TaskStatus.FAILED
    else:
        assert [task.id for task in sim.tasks()] == ["up"] and store.get("down") is None
