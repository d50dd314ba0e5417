"""Control verbs on a task in an awkward state, as a user meets them, on both runtimes
where the state exists on both: paused with its run in flight, past its timeout with
its thread still running, just after giving a slot up.  Each verb is written through
the store once and heard once (an event whose ``previous`` equals its status, no
record), the run in flight lands its record on the task, and the task is due where
docs/decisions/lifecycle.md ("Lifecycle") and docs/decisions/changing-a-task.md ("Changing a task")
says.  The other pairs are pinned where their rules live (tests/test_reschedule.py, test_modify.py,
test_run_now.py, test_task_ids.py, test_retire.py, test_dependencies.py);
tests/test_concurrent_verbs.py checks the verbs' promises across threads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from lldsched import (
    FixedRate,
    RetryPolicy,
    RunContext,
    ScheduledTask,
    Scheduler,
    Simulation,
    TaskStatus,
)
from tests.conftest import T0
from tests.harness import RecordingStore
from tests.runtimes import KINDS, Driven

WAIT = 5.0  # the bound of every wait below: a failing test fails, it never hangs


class Flight:
    """One run in flight, 30 s long, on either runtime: a thread held on a gate while
    the fake clock moves, or a simulated run of that duration."""

    def __init__(self, driven: Driven) -> None:
        self.driven = driven
        self.started = threading.Event()
        self.gate = threading.Event()
        self.contexts: list[RunContext] = []

    def schedule(self, schedule: FixedRate, **options: object) -> ScheduledTask:
        runtime = self.driven.runtime
        if isinstance(runtime, Scheduler):
            return runtime.schedule("long", self.held, schedule, **options)  # type: ignore[arg-type]
        return runtime.schedule("long", schedule, duration=30, **options)  # type: ignore[arg-type]

    def held(self, ctx: RunContext) -> None:
        self.contexts.append(ctx)
        self.started.set()
        assert self.gate.wait(WAIT)  # its flag may go up meanwhile: ignored

    def begin(self) -> None:
        """Start the run at T0 (and see it start)."""
        if self.threaded:
            assert self.started.wait(WAIT)
        else:
            self.driven.run_until(T0)

    def end(self) -> None:
        """Let the run end at T0 + 30."""
        if self.threaded:
            self.driven.clock.set(T0 + 30)
            self.gate.set()
            self.driven.settle()
        else:
            self.driven.run_until(T0 + 30)

    @property
    def threaded(self) -> bool:
        return self.driven.kind == "threaded"


STORES: dict[int, RecordingStore] = {}  # each Driven's store, by id(driven)


def with_store(kind: str) -> Driven:
    """``kind``'s runtime with a store that keeps the order of its writes
    (:func:`store_of`)."""
    store = RecordingStore()
    driven = Driven(kind, store=store)
    STORES[id(driven)] = store
    return driven


def store_of(driven: Driven) -> RecordingStore:
    return STORES[id(driven)]


@pytest.fixture(params=KINDS)
def driven(request: pytest.FixtureRequest) -> Iterator[Driven]:
    """Both runtimes, each with a store that keeps the order of its writes."""
    runtime = with_store(request.param)
    yield runtime
    runtime.close()
    del STORES[id(runtime)]


def said(driven: Driven, task: ScheduledTask) -> list[tuple[str | None, str, bool]]:
    """What the listener heard of ``task`` (once everything settled): each event's
    previous status, status, and whether it carries a record."""
    return [
        (e.previous and e.previous.value, e.status.value, e.record is not None)
        for e in driven.events
        if e.task_id == task.id
    ]


def test_a_task_paused_mid_run_and_rescheduled_stays_paused_due_from_its_runs_finish(
    driven: Driven,
) -> None:
    # Work owed first (the run in flight), then the new schedule counts from its finish;
    # paused all along, so nothing runs until resume.
    store = store_of(driven)
    flight = Flight(driven)
    task = flight.schedule(FixedRate(60))
    flight.begin()
    assert driven.runtime.pause(task.id)
    writes = len(store.saved)
    driven.runtime.reschedule(task.id, FixedRate(45, start_delay=45))
    assert store.saved[writes:] == [(task.id, "paused")]  # once, through the store
    assert task.status is TaskStatus.PAUSED and task.running
    flight.end()
    (record,) = task.history  # the run in flight lands on the task, as it ended
    assert record.ok and (record.started, record.finished) == (T0, T0 + 30)
    assert task.status is TaskStatus.PAUSED and task.next_run_at == T0 + 30 + 45
    assert driven.runtime.pending() == []
    driven.run_until(T0 + 200)
    assert len(task.history) == 1  # paused: nothing ran
    assert driven.runtime.resume(task.id)  # its first slot passed while paused: at once
    driven.run_until(T0 + 230)
    assert [r.due - T0 for r in task.history] == [0, 200]
    assert task.next_run_at == T0 + 245
    assert said(driven, task) == [
        (None, "scheduled", False),
        ("scheduled", "running", False),
        ("running", "paused", False),
        ("paused", "paused", False),  # the reschedule, heard once
        ("paused", "paused", True),  # the run's end
        ("paused", "scheduled", False),
        ("scheduled", "running", False),
        ("running", "scheduled", True),
    ]


def test_run_now_after_a_slot_was_given_up_adds_one_run_and_keeps_the_grid(
    driven: Driven,
) -> None:
    calls = [0]

    def fails_twice() -> None:
        calls[0] += 1
        if calls[0] <= 2:
            raise RuntimeError("database restarting")

    store = store_of(driven)
    retry = RetryPolicy(max_attempts=2, initial_backoff=5)
    task = driven.add("hourly", FixedRate(60), action=fails_twice, retry=retry)
    driven.run_until(T0 + 10)
    assert [r.outcome for r in task.history] == ["failed", "given_up"]
    assert task.status is TaskStatus.SCHEDULED and task.attempt == 0
    assert task.next_run_at == T0 + 60
    writes, heard = len(store.saved), len(said(driven, task))
    assert driven.runtime.run_now(task.id)
    assert store.saved[writes : writes + 1] == [(task.id, "scheduled")]  # then its run's
    driven.run_until(T0 + 130)
    assert [(r.attempt, r.due - T0, r.ok) for r in task.history] == [
        (1, 0, False), (2, 5, False), (1, 10, True), (1, 60, True), (1, 120, True),
    ]  # fmt: skip
    assert task.next_run_at == T0 + 180
    a_run = [("scheduled", "running", False), ("running", "scheduled", True)]
    # the run_now heard once, then its run and the slots at 60 and 120
    assert said(driven, task)[heard:] == [("scheduled", "scheduled", False), *a_run * 3]


@pytest.mark.parametrize("verb", ["pause", "cancel"])
def test_a_thread_past_its_timeout_and_still_running_is_paused_or_cancelled(
    verb: str,
) -> None:
    # Python cannot stop the thread: its flag is up, it runs on.  A pause holds what
    # follows its run (the retry its timeout asks for, attempt kept, for resume); a cancel
    # ends the task when the run ends, with no retry.  One write and one event for the verb,
    # no second run while the first is still going, and the run's record on the task.
    driven = with_store("threaded")
    scheduler = driven.runtime
    assert isinstance(scheduler, Scheduler)
    flight = Flight(driven)
    try:
        store = store_of(driven)
        retry = RetryPolicy(max_attempts=2, initial_backoff=1)
        task = flight.schedule(FixedRate(60), timeout=5, retry=retry)
        flight.begin()
        driven.clock.set(T0 + 6)
        (ctx,) = flight.contexts
        assert ctx.wait(WAIT) and ctx.reason == "timeout"  # its deadline passed
        assert task.status is TaskStatus.RUNNING and task.run_count == 0  # not recorded yet
        writes = len(store.saved)
        assert getattr(driven.runtime, verb)(task.id)
        status = TaskStatus.PAUSED if verb == "pause" else TaskStatus.CANCELLED
        assert store.saved[writes:] == [(task.id, status.value)]
        driven.clock.set(T0 + 20)  # the retry would be due, were the run over: it is not
        assert scheduler.wait_idle(timeout=0) is False  # still running, alone
        assert len(flight.contexts) == 1
        flight.end()
        (record,) = task.history
        assert record.timed_out and record.error == "TimeoutError: ran 30 s, over its 5 s budget"
        assert task.status is status
        assert said(driven, task) == [
            (None, "scheduled", False),
            ("scheduled", "running", False),
            ("running", status.value, False),  # the verb, heard once
            (status.value, status.value, True),  # the run's end
        ]
        if verb == "pause":
            assert (task.attempt, task.next_run_at) == (1, T0 + 31)  # the retry, held
            flight.started.clear()
            assert driven.runtime.resume(task.id)
            driven.clock.set(T0 + 31)
            assert flight.started.wait(WAIT) and len(flight.contexts) == 2
            assert flight.contexts[1].attempt == 2
        else:
            assert task.next_run_at is None and driven.runtime.dead_letter() == []
            assert len(flight.contexts) == 1
    finally:
        flight.gate.set()
        driven.close()
        del STORES[id(driven)]


def test_a_task_removed_mid_run_announces_its_runs_record_and_leaves_no_trace(
    driven: Driven,
) -> None:
    """A task removed while its run is in flight: the run ends, its record is heard once
    (CANCELLED to CANCELLED, as a run of a task cancelled mid-run), handed back by the
    run's end (the simulation's step names it; a worker settles on it), and nothing is
    written: the store forgot the task, and its id may be registered again.  Before this
    test a ``finish`` answering None for that run survived mutation testing: the
    simulation's step then said "finish" with no record, and a worker never settled."""
    store = store_of(driven)
    flight = Flight(driven)
    task = flight.schedule(FixedRate(60))
    flight.begin()
    assert driven.runtime.remove(task.id) is task and task.status is TaskStatus.CANCELLED
    writes = len(store.saved)
    if flight.threaded:
        flight.end()  # settles: wait_idle() counts the run done
    else:
        assert isinstance(driven.runtime, Simulation)
        step = driven.runtime.step()
        assert step is not None and (step.kind, step.task_id) == ("finish", task.id)
        assert step.record is not None and step.record.ok
        assert (step.record.started, step.record.finished) == (T0, T0 + 30)
    heard = [e for e in driven.events if e.task_id == task.id]
    assert [(e.previous, e.status) for e in heard] == [
        (None, TaskStatus.SCHEDULED),
        (TaskStatus.SCHEDULED, TaskStatus.RUNNING),
        (TaskStatus.RUNNING, TaskStatus.CANCELLED),
        (TaskStatus.CANCELLED, TaskStatus.CANCELLED),
    ]
    record = heard[-1].record
    assert record is not None and record.ok and (record.slot, record.finished) == (T0, T0 + 30)
    assert store.saved[writes:] == [] and store.get(task.id) is None
    assert store.records(task.id) == []
    assert task.status is TaskStatus.CANCELLED and task.next_run_at is None
    assert driven.runtime.tasks() == [] and driven.runtime.pending() == []
