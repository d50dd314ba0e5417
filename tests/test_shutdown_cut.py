"""A run a shutdown cut does not spend its attempt (docs/DECISIONS.md, "A run a shutdown
cut does not spend its attempt"): a coroutine cancelled, a process-isolated run killed
(``shutdown(drain=False)``, or a drain out of time) leaves its task due at its slot
with its attempt, on both runtimes, and a durable store runs it once after the restart.
Before, the cut spent the attempt: a task on its last one was dead-lettered."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    FixedRate,
    OneTime,
    RetryPolicy,
    ScheduledTask,
    Scheduler,
    Simulation,
    SqliteTaskStore,
    TaskStatus,
)
from lldsched.model import ExecutionRecord
from tests.waits import wait_until

ONCE = RetryPolicy(max_attempts=1)
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
CUT = "CancelledError: scheduler shut down"
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


@pytest.mark.parametrize("isolation", ["coroutine", "process"])
def test_a_last_attempt_cut_by_shutdown_stays_due_and_a_restart_runs_it_once(
    tmp_path: Path, isolation: str
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
        assert scheduler.shutdown(drain=False, timeout=2.0)  # cancelled 1 s in
        (record,) = task.history
        assert record.error is not None and record.error.startswith(
            CUT if isolation == "coroutine" else "CancelledError: the scheduler shut down"
        )
        assert (record.ok, record.outcome, record.attempt) == (False, "cancelled", 1)
        # Not dead-lettered: due at its slot again, its one attempt unspent
        assert scheduler.dead_letter() == []
        assert kept_due(task, record) == (TaskStatus.SCHEDULED, 0, record.due, record.due)
    restart_runs_it_once(path, task.id, release)


def test_a_recurring_task_cut_by_shutdown_keeps_its_slot() -> None:
    """Its last attempt cut: the slot is not given up, the task waits for it again."""
    started = threading.Event()

    async def hangs() -> None:
        started.set()
        await asyncio.sleep(3600)

    scheduler = Scheduler(workers=1).start()
    task = scheduler.schedule("hourly", hangs, FixedRate(3600), retry=ONCE)
    assert started.wait(BOUND)
    assert scheduler.shutdown(drain=False, timeout=2.0)  # cancelled 1 s in
    (record,) = task.history
    assert (record.outcome, record.misfire) == ("cancelled", "cancelled")  # not given_up
    assert kept_due(task, record) == (TaskStatus.SCHEDULED, 0, record.slot, record.due)


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
              "args": [os.devnull, str(release)]}
    )  # fmt: skip
    with SqliteTaskStore(path) as store:
        sim = Simulation(workers=1, start=T0, store=store)
        task = sim.schedule("held", OneTime(delay=0), duration=3600, retry=ONCE, **options)
        sim.run(T0 + 10)
        assert sim.shutdown(drain=False, timeout=5)
        (record,) = task.history
        assert (record.ok, record.outcome, record.finished) == (False, "cancelled", T0 + 15)
        assert record.error is not None and record.error.startswith(CUT)
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
