"""A disk that fills up under a SqliteTaskStore: what the scheduler does.

SQLite says ``sqlite3.OperationalError: database or disk is full`` at the write that
finds no room; an unprivileged test cannot mount a tiny file system, so
:class:`FullDisk` raises it at the writes a test chooses.  What must hold (docs/GUIDE.md,
"Durability"; docs/decisions/store-failures.md, "A store that fails is said once an outage"): the
timer and the workers go on, every run is recorded in memory, the user is told once
(and once more when it ends), and once a write succeeds again the file says what the
registry says, so that a restart on it neither runs again what finished during the
outage nor brings back what was removed.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    OneTime,
    RetryPolicy,
    ScheduledTask,
    Scheduler,
    SqliteTaskStore,
    StoreError,
)
from lldsched.model import ExecutionRecord, TaskStatus
from lldsched.persistence import TaskSnapshot
from lldsched.testing import Stepper
from tests import jobs
from tests.conftest import T0

FULL = "database or disk is full"


class FullDisk(SqliteTaskStore):
    """A SqliteTaskStore whose writes numbered in ``failing`` (1 for the first save or
    delete), and every write while ``full`` is set, meet what SQLite raises on a full
    disk, writing nothing: raised inside the store's own error handling (``_using``), so
    the caller gets what a real full disk gives it, a StoreError naming the file and the
    write, caused by SQLite's error.  ``refused`` lists the writes that failed, as
    ``(doing, task_id)``, for a test to check it failed the writes it means to."""

    def __init__(
        self, path: Path, *, failing: range | set[int] | frozenset[int] = frozenset()
    ) -> None:
        super().__init__(path)
        self.failing = failing
        self.full = False
        self.writes = 0
        self.refused: list[tuple[str, str]] = []

    def _room(self, doing: str, task_id: str) -> None:
        self.writes += 1
        if self.full or self.writes in self.failing:
            self.refused.append((doing, task_id))
            with self._using(doing, task_id):
                raise sqlite3.OperationalError(FULL)

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        self._room("save task", snapshot.task.id)
        super().save(snapshot, record)

    def save_all(self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord]) -> None:
        self._room("save task", snapshot.task.id)  # one write (the records held: late)
        super().save_all(snapshot, records)

    def delete(self, task_id: str) -> None:
        self._room("delete task", task_id)
        super().delete(task_id)


def register(scheduler: Scheduler) -> None:
    scheduler.schedule("once", jobs.note, OneTime(delay=10), args=("once",), id="once")
    scheduler.schedule("dead", jobs.broken, OneTime(delay=20), id="dead",
                       retry=RetryPolicy(max_attempts=2, initial_backoff=5))  # fmt: skip
    scheduler.schedule("rate", jobs.note, FixedRate(60), args=("rate",), id="rate")
    scheduler.schedule("gone", jobs.note, FixedRate(60, start_delay=15), args=("gone",),
                       id="gone")  # fmt: skip


def state(task: TaskSnapshot | ScheduledTask) -> tuple[object, ...]:
    """What a task's row says of it (a stored snapshot, or a registered task)."""
    return (task.status, task.next_run_at, task.attempt, task.run_count, task.failure_count)


def test_a_disk_full_for_a_while_is_said_once_the_timer_goes_on_and_the_file_catches_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tasks.db"
    jobs.CALLS.clear()
    # The disk is full from the first run's begin to the delete, whatever the number of
    # writes between (counting them, the outage came to end before the delete once the
    # runs wrote more, and the removal it is for was no longer made during it).
    store = FullDisk(path)
    with caplog.at_level(logging.DEBUG, logger="lldsched"), store:
        scheduler = Scheduler(clock=FakeClock(T0), store=store)
        register(scheduler)  # before it starts: its four writes come first
        store.full = True
        with Stepper(scheduler, timeout=10) as steps:
            steps.advance(40)  # once, dead (twice), gone, rate: their writes fail
            scheduler.remove("gone")  # its delete fails too
            store.full = False
            assert {task_id for _, task_id in store.refused} == {"once", "dead", "gone", "rate"}
            assert store.refused[-1] == ("delete task", "gone")
            steps.advance(60)  # rate's run at 60 writes again
            assert [label for label, _, _ in jobs.CALLS] == ["rate", "once", "gone", "rate"]
            registry = {task.id: state(task) for task in scheduler.tasks()}
        errors = [r for r in caplog.records if r.levelno == logging.ERROR and "store" in
                  r.getMessage()]  # fmt: skip
        assert len(errors) == 1 and FULL in str(errors[0].exc_info[1])  # type: ignore[index]
        (warning,) = [r for r in caplog.records if "recovered" in r.getMessage()]
        assert f"{len(store.refused)} calls failed" in warning.getMessage()
        on_file = {snapshot.task.id: state(snapshot) for snapshot in store.load_all()}
    assert on_file == registry  # the rows the outage left stale were written again
    assert registry["once"][0] is TaskStatus.SUCCEEDED

    jobs.CALLS.clear()  # the next start, later: nothing finished runs again
    with SqliteTaskStore(path) as reopened:
        scheduler = Scheduler(clock=FakeClock(T0 + 100), store=reopened)
        assert {t.id for t in scheduler.tasks()} == {"once", "dead", "rate"}
        assert scheduler.dead_letter() == ["dead"]
        with Stepper(scheduler, timeout=10) as steps:
            steps.advance(0)
        assert jobs.CALLS == []


def test_whichever_write_finds_the_disk_full_the_file_ends_as_the_registry_says(
    tmp_path: Path,
) -> None:
    """One write fails, the Nth after the registrations, for each N: the next write that
    succeeds ends the outage and sets the file right."""
    n = 4  # the registrations' writes: one that fails raises to the caller (not here)
    while True:
        n += 1
        path = tmp_path / f"full-at-{n}.db"
        store = FullDisk(path, failing={n})
        scheduler = Scheduler(clock=FakeClock(T0), store=store)
        register(scheduler)  # before it starts: its four writes come first
        with store, Stepper(scheduler, timeout=10) as steps:
            steps.advance(40)
            scheduler.remove("gone")
            steps.advance(60)
            writes = store.writes  # the writes of the scenario; the next run writes after
            steps.advance(60)
            registry = {task.id: state(task) for task in scheduler.tasks()}
            on_file = {snapshot.task.id: state(snapshot) for snapshot in store.load_all()}
        assert on_file == registry, f"the write {n} of {writes} failed"
        if n == writes:  # every write of the scenario has failed once
            break


def test_a_one_off_that_finished_and_retired_during_the_outage_is_stored_as_it_finished(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    store = FullDisk(path, failing=range(3, 5))  # the one-off's begin and finish
    scheduler = Scheduler(clock=FakeClock(T0), store=store, retain_finished=0)
    scheduler.schedule("once", jobs.note, OneTime(delay=10), args=("once",), id="once")
    scheduler.schedule("rate", jobs.note, FixedRate(60, start_delay=60), args=("rate",),
                       id="rate")  # fmt: skip
    with store, Stepper(scheduler, timeout=10) as steps:
        steps.advance(10)
        assert [t.id for t in scheduler.tasks()] == ["rate"]  # once retired at once
        steps.advance(50)  # rate's run writes: the outage ends
        stored = store.get("once")
    assert stored is not None and stored.status is TaskStatus.SUCCEEDED
    assert (stored.run_count, stored.running) == (1, False)


def test_a_registration_that_finds_the_disk_full_raises_and_registers_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    store = FullDisk(path, failing={2})
    scheduler = Scheduler(clock=FakeClock(T0), store=store)  # not started: no run writes
    with store:
        first = scheduler.schedule("rate", jobs.noop, FixedRate(60), id="rate")
        with pytest.raises(StoreError, match=f"failed to save task 'once': .*{FULL}") as caught:
            scheduler.schedule("once", jobs.noop, OneTime(delay=10), id="once")
        assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
        assert [task.id for task in scheduler.tasks()] == [first.id]  # nothing else
        again = scheduler.schedule("once", jobs.noop, OneTime(delay=10), id="once")
        assert again.status is TaskStatus.SCHEDULED  # room again: it registers
        assert scheduler.shutdown()
    with SqliteTaskStore(path) as reopened:
        assert [snapshot.task.id for snapshot in reopened.load_all()] == ["rate", "once"]


class Interrupted(FullDisk):
    """A FullDisk whose writes numbered in ``interrupting`` raise ``KeyboardInterrupt``."""

    def __init__(self, path: Path, *, failing: set[int], interrupting: set[int]) -> None:
        super().__init__(path, failing=failing)
        self.interrupting = interrupting

    def _room(self, doing: str, task_id: str) -> None:
        if self.writes + 1 in self.interrupting:
            self.writes += 1
            raise KeyboardInterrupt
        super()._room(doing, task_id)


def test_a_stale_row_that_fails_again_keeps_the_outage_and_is_written_at_the_next_write(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Writes: 1, 2 the registrations; 3 once's begin; 4 its finish (the disk is full);
    # 5 rate's begin succeeds, 6 the rewrite of once's row is interrupted (on a worker:
    # logged, the worker goes on); 7 rate's finish succeeds, 8 the rewrite succeeds.
    store = Interrupted(tmp_path / "tasks.db", failing={4}, interrupting={6})
    scheduler = Scheduler(clock=FakeClock(T0), store=store)
    scheduler.schedule("once", jobs.noop, OneTime(delay=10), id="once")
    scheduler.schedule("rate", jobs.noop, FixedRate(60, start_delay=60), id="rate")
    with caplog.at_level(logging.DEBUG, logger="lldsched"), store:
        with Stepper(scheduler, timeout=10) as steps:
            steps.advance(10)
            steps.advance(50)
            assert store.writes == 8 and scheduler.task("rate").run_count == 1
            stored = store.get("once")
        assert stored is not None and stored.status is TaskStatus.SUCCEEDED
        (warning,) = [r for r in caplog.records if "recovered" in r.getMessage()]
        assert "the rows they left stale were written again (1 row)" in warning.getMessage()
        assert any("KeyboardInterrupt" in r.getMessage() for r in caplog.records)


def test_a_one_off_whose_finish_met_a_full_disk_is_stored_as_it_finished_by_the_shutdown(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """No transition follows the last run before a shutdown, so none wrote its stale row
    again: the file said RUNNING and the next start ran the one-off again, though the
    disk had room by the shutdown.  The shutdown writes the stale rows, its last write."""
    path = tmp_path / "tasks.db"
    store = FullDisk(path, failing={3})  # the one-off's finish (register, begin, finish)
    with store:
        scheduler = Scheduler(clock=FakeClock(T0), store=store).start()
        scheduler.schedule("once", jobs.note, OneTime(delay=0), args=("once",), id="once")
        assert scheduler.wait_idle(timeout=5)
        assert scheduler.task("once").status is TaskStatus.SUCCEEDED
        with caplog.at_level(logging.WARNING, logger="lldsched"):
            assert scheduler.shutdown(timeout=5)
        stored = store.get("once")
    assert stored is not None and stored.status is TaskStatus.SUCCEEDED
    assert (stored.run_count, stored.running) == (1, False)
    assert "recovered" in caplog.text and "written again" in caplog.text
    assert scheduler.metrics(timeout=5).store_ok


def test_a_disk_still_full_at_the_shutdown_leaves_the_rows_stale_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tasks.db"
    store = FullDisk(path, failing=range(3, 1_000))  # full from the one-off's finish on
    with store:
        scheduler = Scheduler(clock=FakeClock(T0), store=store).start()
        scheduler.schedule("once", jobs.note, OneTime(delay=0), args=("once",), id="once")
        assert scheduler.wait_idle(timeout=5)
        with caplog.at_level(logging.WARNING, logger="lldsched"):
            assert scheduler.shutdown(timeout=5)  # every thread stopped all the same
        stored = store.get("once")
    assert stored is not None and stored.running  # what a crash leaves: run again
    (said,) = [r for r in caplog.records if "stale" in r.getMessage()]
    assert said.levelno == logging.WARNING and "once" in said.getMessage()
