"""A run a shutdown cut does not spend its attempt (docs/decisions/logging.md, "A run a shutdown
cut does not spend its attempt"): a coroutine cancelled, a process-isolated run killed
(``shutdown(drain=False)``, or a drain out of time) leaves its task due at its slot
with its attempt, on both runtimes, and a durable store runs it once after the restart.
Before, the cut spent the attempt: a task on its last one was dead-lettered."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    OneTime,
    Overlap,
    RetryPolicy,
    ScheduledTask,
    Scheduler,
    Simulation,
    SqliteTaskStore,
    TaskStatus,
)
from lldsched.model import ExecutionRecord, TaskEvent
from tests.cluster import StoreSpec, open_store
from tests.processes import held_before_a_child, killed_pid
from tests.waits import wait_until

ONCE = RetryPolicy(max_attempts=1)
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
CUT = "CancelledError: scheduler shut down"
KILLED = "CancelledError: the scheduler shut down without draining ("  # a worker process's
BOUND = 20.0  # seconds: the most a wait below may take


async def hangs_until(marker: str, release: str) -> str:
    """Write ``marker``, then wait until the file ``release`` exists (at most 60 s)."""
    Path(marker).write_text("started")
    deadline = time.monotonic() + 60
    while not Path(release).exists() and time.monotonic() < deadline:
        await asyncio.sleep(0.01)  # the polling interval of a bounded wait
    return "released"


async def done() -> str:
    return "done"


def kept_due(task: ScheduledTask, record: ExecutionRecord) -> tuple[object, ...]:
    """What a cut run leaves its task with: its status, attempt and due instant, and the
    run's due instant (the same)."""
    return (task.status, task.attempt, task.next_run_at, record.due)


def restart_runs_it_once(path: Path, task_id: str, release: Path) -> None:
    """A scheduler started on the store at ``path`` runs ``task_id`` once more, its
    first attempt, and it succeeds."""
    release.write_text("go")
    with SqliteTaskStore(path) as store:
        restarted = Scheduler(store=store)
        task = restarted.task(task_id)
        assert (task.status, task.attempt) == (TaskStatus.SCHEDULED, 0)
        restarted.start()
        try:
            wait_until(lambda: task.status is TaskStatus.SUCCEEDED, timeout=BOUND, what="the rerun")
        finally:
            assert restarted.shutdown(timeout=10)
        ran = [r for r in task.history if r.outcome == "ok"]
        assert [(r.attempt, r.result) for r in ran] == [(1, "'released'")]
        assert restarted.dead_letter() == []


@pytest.mark.parametrize("drain", [False, True])
@pytest.mark.parametrize("isolation", ["coroutine", "process"])
def test_a_last_attempt_cut_by_shutdown_stays_due_and_a_restart_runs_it_once(
    tmp_path: Path, isolation: str, drain: bool
) -> None:
    marker, release = tmp_path / "started", tmp_path / "release"
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(store=store, workers=1)
        if isolation == "process":
            task = scheduler.schedule(
                "held", "tests.process_jobs:held", OneTime(delay=0), isolation="process",
                args=[str(marker), str(release)], retry=ONCE,
            )  # fmt: skip
        else:
            task = scheduler.schedule(
                "held", hangs_until, OneTime(delay=0), args=[str(marker), str(release)],
                retry=ONCE,
            )  # fmt: skip
        scheduler.start()
        wait_until(marker.exists, timeout=BOUND, what="the run started")
        assert scheduler.shutdown(drain=drain, timeout=2.0)  # cut 1 s in (no drain: a child at 0)
        (record,) = task.history
        # Its record says which shutdown cut it: a worker process killed at once without
        # a drain, or by a drain out of time (before, "without draining" for both).  A
        # coroutine is cancelled at the grace either way (waited for until then, drained
        # or not), and its record names no drain.
        said = {
            ("coroutine", False): CUT,
            ("coroutine", True): CUT,
            ("process", False): "CancelledError: the scheduler shut down without draining (",
            ("process", True): "CancelledError: the scheduler shut down, its drain out of time "
            "after 1 s (",
        }[isolation, drain]
        assert record.error is not None and record.error.startswith(said), record.error
        assert isolation != "coroutine" or record.error == CUT
        assert (record.ok, record.outcome, record.attempt) == (False, "cancelled", 1)
        # Not dead-lettered: due at its slot again, its one attempt unspent
        assert scheduler.dead_letter() == []
        assert kept_due(task, record) == (TaskStatus.SCHEDULED, 0, record.due, record.due)
    restart_runs_it_once(path, task.id, release)


def test_a_recurring_task_cut_by_shutdown_keeps_its_slot(caplog: pytest.LogCaptureFixture) -> None:
    """Its last attempt cut: the slot is not given up, the task waits for it again, and
    the run's line says it was stopped (the run settled as any other: not "could not
    settle", its line lost)."""
    caplog.set_level(logging.INFO, logger="lldsched")
    started = threading.Event()

    async def hangs() -> None:
        started.set()
        await asyncio.sleep(3600)

    scheduler = Scheduler(workers=1).start()
    task = scheduler.schedule("hourly", hangs, FixedRate(3600), retry=ONCE)
    assert started.wait(BOUND)
    assert scheduler.shutdown(drain=False, timeout=1.0)  # cancelled 0.5 s in (it never ends)
    (record,) = task.history
    assert (record.outcome, record.misfire) == ("cancelled", "cancelled")  # not given_up
    assert kept_due(task, record) == (TaskStatus.SCHEDULED, 0, record.slot, record.due)
    stopped = f"task {task.id} 'hourly' attempt 1 stopped: {CUT}"
    assert stopped in caplog.messages
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


@pytest.mark.parametrize("isolation", ["coroutine", "process"])
def test_the_simulation_keeps_a_cut_last_attempt_due_and_a_restart_runs_it_once(
    tmp_path: Path, isolation: str
) -> None:
    path = tmp_path / "tasks.db"
    release = tmp_path / "release"
    release.write_text("go")  # the simulation calls the action at once: its duration is modelled
    options: dict[str, Any] = (
        {"action": done} if isolation == "coroutine"
        else {"action": "tests.process_jobs:held", "isolation": "process",
              "args": [str(tmp_path / "pid"), str(release)]}
    )  # fmt: skip
    with SqliteTaskStore(path) as store:
        sim = Simulation(workers=1, start=T0, store=store)
        task = sim.schedule("held", OneTime(delay=0), duration=3600, retry=ONCE, **options)
        sim.run(T0 + 10)
        assert sim.shutdown(drain=False, timeout=5)
        (record,) = task.history
        # A coroutine is cancelled at the timeout, a worker process killed at once
        # (test_both_runtimes_kill_an_isolated_run_at_once_without_a_drain).
        cut_at, said = (T0 + 15, CUT) if isolation == "coroutine" else (T0 + 10, KILLED)
        assert (record.ok, record.outcome, record.finished) == (False, "cancelled", cut_at)
        assert record.error is not None and record.error.startswith(said)
        assert sim.dead_letter() == []
        assert kept_due(sim.task(task.id), record) == (TaskStatus.SCHEDULED, 0, T0, T0)
    if isolation == "coroutine":  # a simulation restarted on the store runs it once
        with SqliteTaskStore(path) as store:
            again = Simulation(workers=1, start=T0 + 20, store=store)
            assert (again.task(task.id).status, again.task(task.id).attempt) == (
                TaskStatus.SCHEDULED, 0)  # fmt: skip
            again.run(T0 + 100)
            ran = [r for r in again.task(task.id).history if r.outcome == "ok"]
            assert [(r.attempt, r.result) for r in ran] == [(1, "'done'")]
            assert again.task(task.id).status is TaskStatus.SUCCEEDED
    else:
        restart_runs_it_once(path, task.id, release)


@pytest.mark.parametrize("runtime", ["threaded", "simulation"])
def test_both_runtimes_kill_an_isolated_run_at_once_without_a_drain(
    tmp_path: Path, runtime: str
) -> None:
    """``shutdown(drain=False, timeout=5)`` 10 s into an isolated run that would take an
    hour: the threaded runtime kills its child at once, and so does the simulation,
    at the same instant and in the same words (before, the simulation let it run on to
    the timeout and cut it there, recorded ``CancelledError: scheduler shut down``)."""
    marker, release = tmp_path / "started", tmp_path / "release"
    options: dict[str, Any] = {
        "isolation": "process", "args": [str(marker), str(release)], "retry": ONCE
    }  # fmt: skip
    if runtime == "threaded":
        clock = FakeClock(T0)
        scheduler = Scheduler(workers=1, clock=clock)
        task = scheduler.schedule("held", "tests.process_jobs:held", OneTime(delay=0), **options)
        scheduler.start()
        try:
            wait_until(marker.exists, timeout=BOUND, what="the run started")
            clock.set(T0 + 10)
            assert scheduler.shutdown(drain=False, timeout=5)
        finally:
            release.write_text("go")  # (a child left alive by a failure ends)
        (record,) = task.history
        pid = killed_pid(record.error)
        after = task
    else:
        release.write_text("go")  # the simulation calls the action at once: modelled
        sim = Simulation(workers=1, start=T0)
        task = sim.schedule(
            "held", OneTime(delay=0), action="tests.process_jobs:held", duration=3600, **options
        )
        sim.run(T0 + 10)
        assert sim.shutdown(drain=False, timeout=5)
        (record,) = task.history
        pid, after = None, sim.task(task.id)
    process = "its worker process" if pid is None else f"its worker process {pid}"
    assert record.error == (
        f"CancelledError: the scheduler shut down without draining ({process} was killed)"
    )
    assert (record.ok, record.outcome, record.started, record.finished) == (
        False, "cancelled", T0, T0 + 10)  # fmt: skip
    assert kept_due(after, record) == (TaskStatus.SCHEDULED, 0, T0, T0)


# -- a cut task is due: listed as due after the shutdown, on both runtimes -------------


def test_a_task_cut_by_shutdown_is_listed_due_as_one_never_started_is() -> None:
    """``pending()`` and ``queue_stats()`` after the shutdown list every task left due:
    the cut one (due at its slot) with the one due later, in the order they would run.
    Before, the cut task was left out, its task due and never listed."""
    started = threading.Event()

    async def hangs() -> None:
        started.set()
        await asyncio.sleep(3600)

    scheduler = Scheduler(workers=1).start()
    cut = scheduler.schedule("cut", hangs, OneTime(delay=0), retry=ONCE)
    later = scheduler.schedule("later", done, OneTime(delay=3600))
    assert started.wait(BOUND)
    assert scheduler.shutdown(drain=False, timeout=1.0)  # cancelled 0.5 s in (it never ends)
    (record,) = cut.history
    assert kept_due(cut, record) == (TaskStatus.SCHEDULED, 0, record.due, record.due)
    assert [task.id for task in scheduler.pending()] == [cut.id, later.id]
    assert scheduler.queue_stats().live == 2


def test_the_simulation_lists_a_task_cut_by_shutdown_due() -> None:
    sim = Simulation(workers=1, start=T0)
    cut = sim.schedule("cut", OneTime(delay=0), action=done, duration=3600, retry=ONCE)
    later = sim.schedule("later", OneTime(delay=7200), action=done)
    sim.run(T0 + 10)
    assert sim.shutdown(drain=False, timeout=5)
    (record,) = sim.task(cut.id).history
    assert kept_due(sim.task(cut.id), record) == (TaskStatus.SCHEDULED, 0, T0, T0)
    assert [task.id for task in sim.pending()] == [cut.id, later.id]
    assert sim.queue_stats().live == 2


def test_a_drain_out_of_time_does_not_begin_the_run_it_cut_again(tmp_path: Path) -> None:
    """A drain out of time kills the process-isolated run still going and goes on
    handing out thread runs: the cut task, due again at its slot (before the
    shutdown's instant), is listed due, not begun a second time (its worker process
    would not take it: a begin and a put-back announced for nothing)."""
    marker, release = tmp_path / "started", tmp_path / "release"
    events: list[TaskEvent] = []
    scheduler = Scheduler(workers=2, listeners=[events.append]).start()
    cut = scheduler.schedule(
        "held", "tests.process_jobs:held", OneTime(delay=0), isolation="process",
        args=[str(marker), str(release)], retry=ONCE,
    )  # fmt: skip
    wait_until(marker.exists, timeout=BOUND, what="the run started")
    try:
        assert scheduler.shutdown(timeout=2.0)  # killed 1 s in, a drain out of time
    finally:
        release.write_text("go")
    (record,) = cut.history
    assert (record.outcome, record.attempt) == ("cancelled", 1)
    assert kept_due(cut, record) == (TaskStatus.SCHEDULED, 0, record.due, record.due)
    begun = [e for e in events if e.task_id == cut.id and e.status is TaskStatus.RUNNING]
    assert len(begun) == 1
    assert [task.id for task in scheduler.pending()] == [cut.id]


def test_a_shared_store_s_run_cut_by_shutdown_is_settled_due_and_another_process_runs_it(
    tmp_path: Path, store_spec: StoreSpec
) -> None:
    """On a shared store the cut run's settle, fenced by its claim's token, writes the
    task due at its slot with its attempt unspent and drops the lease: the next
    process runs it, its first attempt.  Before, the settle spent the attempt (a task
    on its last one was dead-lettered, for every process)."""
    marker, release = tmp_path / "started", tmp_path / "release"
    with contextlib.closing(open_store(store_spec)) as store:
        scheduler = Scheduler(store=store, workers=1)
        task = scheduler.schedule(
            "held", hangs_until, OneTime(delay=0), args=[str(marker), str(release)], retry=ONCE
        )
        scheduler.start()
        wait_until(marker.exists, timeout=BOUND, what="the run started")
        assert scheduler.shutdown(drain=False, timeout=2.0)  # cancelled 1 s in
        (record,) = task.history
        assert (record.outcome, record.attempt) == ("cancelled", 1) and record.token is not None
        assert kept_due(task, record) == (TaskStatus.SCHEDULED, 0, record.due, record.due)
        assert store.leases() == []  # settled: the lease is dropped
    release.write_text("go")
    with contextlib.closing(open_store(store_spec)) as store:
        other = Scheduler(store=store)
        again = other.task(task.id)
        assert (again.status, again.attempt) == (TaskStatus.SCHEDULED, 0)
        assert [(r.outcome, r.attempt) for r in store.records(task.id)] == [("cancelled", 1)]
        other.start()
        try:
            wait_until(
                lambda: again.status is TaskStatus.SUCCEEDED, timeout=BOUND, what="the rerun"
            )
        finally:
            assert other.shutdown(timeout=10)
        outcomes = [(r.outcome, r.attempt, r.result) for r in store.records(task.id)]
        assert outcomes == [("cancelled", 1, None), ("ok", 1, "'released'")]
        assert other.dead_letter() == []


# -- a task whose runs may overlap: its last run out keeps its slot --------------------


def test_an_overlapping_task_s_last_run_cut_by_shutdown_keeps_its_slot() -> None:
    """``Overlap.CANCEL_OTHER``: the run of the 00:00 slot is the only one in flight, the
    01:00 slot queued behind it.  Cut, it keeps its slot (due again at 00:00, its attempt
    unspent, the 01:00 slot behind it), as a task whose runs do not overlap does.
    Before, it was recorded failed: its only attempt spent, its slot given up."""
    started = threading.Event()

    async def hangs() -> None:
        started.set()
        await asyncio.sleep(3600)

    scheduler = Scheduler(workers=1).start()
    task = scheduler.schedule(
        "hourly", hangs, FixedRate(3600), retry=ONCE, overlap=Overlap.CANCEL_OTHER
    )
    assert started.wait(BOUND)
    assert scheduler.shutdown(drain=False, timeout=1.0)  # cancelled 0.5 s in (it never ends)
    (record,) = task.history
    assert (record.outcome, record.error) == ("cancelled", CUT)
    assert kept_due(task, record) == (TaskStatus.SCHEDULED, 0, record.slot, record.due)
    assert [t.id for t in scheduler.pending()] == [task.id]
    assert scheduler.queue_stats().live == 1  # the 01:00 slot's entry is dead


def test_the_simulation_keeps_an_overlapping_task_s_cut_slot() -> None:
    sim = Simulation(workers=1, start=T0)
    task = sim.schedule("hourly", FixedRate(3600), action=done, duration=7200, retry=ONCE,
                        overlap=Overlap.CANCEL_OTHER)  # fmt: skip
    sim.run(T0 + 10)
    assert sim.shutdown(drain=False, timeout=5)
    (record,) = sim.task(task.id).history
    assert (record.outcome, record.slot) == ("cancelled", T0)
    assert kept_due(sim.task(task.id), record) == (TaskStatus.SCHEDULED, 0, T0, T0)
    assert [t.id for t in sim.pending()] == [task.id]
    assert sim.queue_stats().live == 1


def test_an_awaitable_the_closed_loop_refused_leaves_its_task_due() -> None:
    """A plain function whose thread part outlived the shutdown's timeout returns its
    awaitable to a closed loop: the shutdown stopped that run before its awaitable ran,
    a cut as one cancelled waiting for the loop is (the simulation cuts such an
    awaitable at its deadline so).  Before, it was recorded failed, its attempt spent:
    dead-lettered on its last."""
    scheduler = Scheduler(workers=1)
    closed = threading.Event()

    def returns_late() -> Any:  # until the shutdown closed the loop
        wait_until(lambda: scheduler._coroutines._closed, timeout=BOUND, what="the loop closed")
        closed.set()
        return done()

    task = scheduler.schedule("late", returns_late, OneTime(delay=0), retry=ONCE)
    scheduler.start()
    wait_until(lambda: task.status is TaskStatus.RUNNING, timeout=BOUND, what="the run began")
    scheduler.shutdown(drain=False, timeout=0.5)  # False: the thread run outlived it
    assert closed.wait(BOUND)
    wait_until(lambda: bool(task.history), timeout=BOUND, what="the run's record")
    (record,) = task.history
    assert record.error == "SchedulerStateError: the scheduler shut down before the coroutine ran"
    assert (record.ok, record.outcome) == (False, "cancelled")
    assert kept_due(task, record) == (TaskStatus.SCHEDULED, 0, record.due, record.due)
    assert scheduler.dead_letter() == []
    assert [t.id for t in scheduler.pending()] == [task.id]


def test_a_claimed_run_shutdown_stopped_before_its_child_took_it_is_settled_due(
    tmp_path: Path, store_spec: StoreSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a shared store a process-isolated run begun on its claim, whose worker process
    the shutdown closed before a child took it, is settled as a cut (fenced by its
    token): recorded cancelled, the task due at its slot with its attempt unspent, the
    lease dropped.  Before, it was settled failed, its attempt spent: a one-off with one
    attempt dead-lettered for every process, having never run."""
    with contextlib.closing(open_store(store_spec)) as store:
        scheduler = Scheduler(store=store, workers=1)
        taking, go = held_before_a_child(scheduler, monkeypatch, BOUND)
        pool = scheduler._processes
        task = scheduler.schedule(
            "once", "tests.process_jobs:add", OneTime(delay=0), isolation="process",
            args=[1, 2], retry=ONCE,
        )  # fmt: skip
        scheduler.start()
        assert taking.wait(BOUND)  # begun on its claim, no child yet
        stopper = threading.Thread(target=scheduler.shutdown, kwargs={"drain": False})
        stopper.start()
        wait_until(lambda: pool._closed, timeout=BOUND, what="the pool closed")
        go.set()
        stopper.join(BOUND)
        assert not stopper.is_alive()
        (record,) = task.history
        assert (record.outcome, record.attempt) == ("cancelled", 1) and record.token is not None
        assert kept_due(task, record) == (TaskStatus.SCHEDULED, 0, record.due, record.due)
        assert store.leases() == []
    with contextlib.closing(open_store(store_spec)) as store:
        again = Scheduler(store=store).task(task.id)
        assert (again.status, again.attempt, again.next_run_at) == (
            TaskStatus.SCHEDULED, 0, record.due)  # fmt: skip
