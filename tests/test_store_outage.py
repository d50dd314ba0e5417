"""A store that fails for a while (a server down, a disk full, a file locked): said once.

The first call that fails is logged at error level with its traceback; each later one
while the outage lasts is counted and logged at debug level; the first call of a kind
that failed and now succeeds ends the outage with one warning naming what was missed
(``lldsched/core/store/outage.py``).  The registry stays authoritative throughout.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    Scheduler,
    SqliteTaskStore,
    StoreError,
    TaskStatus,
)
from lldsched.core.store import writes as storewrites
from lldsched.core.store.outagerecords import HELD, HELD_RUNS, OUTAGE_CAP
from lldsched.core.store.writes import StoreWrites
from lldsched.logs import instant_text
from lldsched.model import ExecutionRecord, Outcome
from lldsched.sim import Simulation
from tests.conftest import T0, settle
from tests.harness import FailingStore
from tests.waits import wait_until


def noop() -> None:
    return None


def logged(caplog: pytest.LogCaptureFixture, level: int) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "lldsched.store" and r.levelno == level]


def test_an_outage_is_said_once_with_its_traceback_and_its_end_with_what_was_missed(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    store = FailingStore()
    scheduler = Scheduler(clock=clock, store=store)
    task = scheduler.schedule("tick", noop, FixedRate(60, start_delay=60))
    with caplog.at_level(logging.DEBUG, logger="lldsched"), scheduler:
        store.down = True
        for _ in range(3):  # three runs: six failed saves (begin, finish)
            clock.advance(60)
            settle(scheduler)
        assert task.run_count == 3  # the registry stays authoritative
        (error,) = logged(caplog, logging.ERROR)
        assert error.exc_info is not None  # the first failure's traceback: the cause
        assert error.getMessage().startswith(f"store {store!r} failed (a save of {task.id}):")
        still = [r for r in logged(caplog, logging.DEBUG) if "still failing" in r.getMessage()]
        assert len(still) == 5 and all(r.exc_info is None for r in still)
        assert "the server is down" in still[0].getMessage()
        assert logged(caplog, logging.WARNING) == []

        store.down = False
        clock.advance(60)
        settle(scheduler)
        (recovered,) = logged(caplog, logging.WARNING)
        assert recovered.getMessage() == (
            f"store {store!r} recovered (a save succeeded) after 180.0 s: 6 calls failed "
            "during the outage, 6 task writes not stored (the rows they left stale were "
            "written again (1 row); the records of 3 runs they carried were written late, in "
            "order)"  # after: since the first run's save failed, three minutes back
        )
        stored = store.get(task.id)
        assert stored is not None and stored.run_count == 4  # written again
        assert store.records(task.id) == list(task.history)  # no hole in the history

        store.down = True  # a second outage is a new one: said again
        clock.advance(60)
        settle(scheduler)
        assert len(logged(caplog, logging.ERROR)) == 2
        store.down = False
    assert len(logged(caplog, logging.ERROR)) == 2


def test_rows_left_stale_are_tried_again_once_a_minute_not_at_the_next_run(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """A daily task's run whose writes failed: the store comes back, and the timer writes
    the row again within two minutes, ending the outage (``store_ok`` True, the readiness
    probe ready).  Before, nothing wrote until the next run, a day later: the probe said
    "the store is failing" of a store up all day, and the row stayed stale that long."""
    store = FailingStore()
    scheduler = Scheduler(clock=clock, store=store, max_wait=None)  # parked for a day
    task = scheduler.schedule("daily", noop, FixedRate(86_400, start_delay=60))
    with caplog.at_level(logging.DEBUG, logger="lldsched"), scheduler:
        store.down = True
        clock.advance(60)
        settle(scheduler)
        assert task.run_count == 1 and not scheduler.metrics().store_ok
        clock.advance(120)  # still failing: tried again, counted, not said again
        settle(scheduler)
        assert not scheduler.metrics().store_ok and logged(caplog, logging.WARNING) == []
        store.down = False
        clock.advance(60)
        wait_until(lambda: scheduler.metrics().store_ok, timeout=5, what="the rewrite")
        (recovered,) = logged(caplog, logging.WARNING)
        assert "recovered (a rewrite of the rows left stale succeeded)" in recovered.getMessage()
        stored = store.get(task.id)
        assert stored is not None and stored.run_count == 1
        assert store.records(task.id) == list(task.history)
        assert len(logged(caplog, logging.ERROR)) == 1  # the tries said nothing more


def test_rows_left_stale_before_start_are_tried_again_at_the_first_wake(
    clock: FakeClock,
) -> None:
    """A pause whose write failed before ``start()``, a minute or more ago: the timer's
    first wake writes the row again, and ``store_ok`` is True with the clock not moved.
    (A first wake taken for one that had just handed runs out would put the try off by
    a minute of a clock that does not move.)"""
    store = FailingStore()
    scheduler = Scheduler(clock=clock, store=store, max_wait=None)
    task = scheduler.schedule("daily", noop, FixedRate(86_400, start_delay=3_600))
    store.down = True
    scheduler.pause(task.id)
    assert not scheduler.metrics().store_ok
    store.down = False
    clock.advance(60)
    with scheduler:
        wait_until(lambda: scheduler.metrics().store_ok, timeout=5, what="the rewrite")
        stored = store.get(task.id)
        assert stored is not None and stored.status is TaskStatus.PAUSED
        assert clock.now() == T0 + 60


def test_a_store_failing_every_other_write_says_each_outage_and_each_recovery(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    class FlakyStore(InMemoryTaskStore):  # a run's record refused once, then taken
        def __init__(self) -> None:
            super().__init__()
            self.refused: set[ExecutionRecord] = set()

        def save(self, snapshot, record=None):  # type: ignore[no-untyped-def]
            if record is not None and record not in self.refused:
                self.refused.add(record)
                raise OSError("disk hiccup")
            super().save(snapshot, record)

    store = FlakyStore()
    scheduler = Scheduler(clock=clock, store=store)
    task = scheduler.schedule("tick", noop, FixedRate(60, start_delay=60))
    with caplog.at_level(logging.WARNING, logger="lldsched"), scheduler:
        for _ in range(2):
            clock.advance(60)
            settle(scheduler)
    errors = logged(caplog, logging.ERROR)
    assert len(errors) == 2 and all(r.exc_info is not None for r in errors)
    assert all("failed (a save of task-1)" in r.getMessage() for r in errors)
    # The begin of the second run was stored, and the first run's record with the row
    # then: the first outage ended, said once; the shutdown wrote the row and the record
    # the second run's finish left: the second ended too.
    recovered, at_shutdown = logged(caplog, logging.WARNING)
    assert "1 call failed during the outage, 1 task write not stored" in recovered.getMessage()
    for message in (recovered.getMessage(), at_shutdown.getMessage()):
        assert "the rows they left stale were written again (1 row); the records of 1 run " in (
            message
        )
    assert store.records(task.id) == list(task.history)  # each record written once


def test_only_a_success_of_a_kind_that_failed_ends_an_outage(
    caplog: pytest.LogCaptureFixture,
) -> None:
    writes = StoreWrites(InMemoryTaskStore())
    with caplog.at_level(logging.DEBUG, logger="lldsched"):
        try:
            raise StoreError("disk full")
        except StoreError as exc:
            writes.failed(exc, "save", "task-1")
        writes.succeeded("read of the change feed")  # a full disk still reads
        writes.succeeded("delete", "another")
        assert writes.outage is not None and writes.outage.kinds == {"save"}
        try:
            raise StoreError("disk full")
        except StoreError as exc:
            writes.call_failed(exc, "claim", "claim")
        assert (writes.outage.calls, writes.outage.writes) == (2, 1)
        writes.succeeded("claim")  # a kind that failed: the outage is over
    assert writes.outage is None
    assert len(logged(caplog, logging.ERROR)) == 1
    (recovered,) = logged(caplog, logging.WARNING)
    message = recovered.getMessage()
    assert "(a claim succeeded) after " in message
    assert " s: 2 calls failed during the outage, 1 task write" in message


def test_a_failed_delete_is_an_outage_the_next_delete_that_succeeds_ends(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # Two finished tasks removed: the first delete fails (its row stays), the second
    # succeeds and ends the outage; the first row is deleted again then.
    store = FailingStore()
    scheduler = Scheduler(clock=clock, store=store)
    for task_id in ("first", "second"):
        scheduler.schedule(task_id, noop, FixedRate(60), id=task_id)
        scheduler.cancel(task_id)
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        store.down = True
        scheduler.remove("first")
        assert not scheduler.metrics().store_ok and store.get("first") is not None
        store.down = False
        scheduler.remove("second")
        assert scheduler.metrics().store_ok
    assert store.load_all() == []
    (recovered,) = logged(caplog, logging.WARNING)
    assert "recovered (a delete succeeded)" in recovered.getMessage()


class RowFailing(InMemoryTaskStore):
    """An in-memory store whose saves of the rows named in ``failing`` raise (one row's
    write refused, the others taken)."""

    def __init__(self) -> None:
        super().__init__()
        self.failing: set[str] = set()

    def save(self, snapshot: Any, record: Any = None) -> None:
        if snapshot.task.id in self.failing:
            raise StoreError(f"row {snapshot.task.id} refused")
        super().save(snapshot, record)


def test_a_stale_row_failing_again_is_a_call_failed_not_a_task_write_counted_twice(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A pause whose write failed leaves its row stale (one task write not stored); the
    next write that succeeds writes that row again, and it fails again: one more call
    failed, but the same task write, not a second.  The line that ends the outage counts
    two calls and one task write."""
    store = RowFailing()
    scheduler = Scheduler(store=store)
    for task_id in ("job", "other"):
        scheduler.schedule(task_id, noop, FixedRate(3_600, start_delay=3_600), id=task_id)
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        store.failing.add("job")
        scheduler.pause("job")  # the outage: job's row stale
        scheduler.pause("other")  # written; job's row written again fails again
        assert not scheduler.metrics().store_ok
        store.failing.clear()
        scheduler.resume("other")  # written; job's row written again
        assert scheduler.metrics().store_ok
    stored = store.get("job")
    assert stored is not None and stored.status is TaskStatus.PAUSED
    (recovered,) = logged(caplog, logging.WARNING)
    message = recovered.getMessage()
    assert "(a save succeeded) after " in message
    assert " s: 2 calls failed during the outage, 1 task write not stored" in message


class Watch(logging.Handler):
    """The ``lldsched`` records as they are emitted, for a test to wait on (no sleep)."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self._changed = threading.Condition()  # guards records; notified at each one

    def emit(self, record: logging.LogRecord) -> None:
        with self._changed:
            self.records.append(record)
            self._changed.notify_all()

    def at(self, level: int) -> list[logging.LogRecord]:
        with self._changed:
            return [r for r in self.records if r.levelno == level]

    def wait_for(self, level: int, text: str, count: int) -> None:
        def enough() -> bool:
            return sum(r.levelno == level and text in r.getMessage() for r in self.records) >= count

        with self._changed:
            assert self._changed.wait_for(enough, timeout=10), f"fewer than {count} {text!r}"


@pytest.fixture
def watch() -> Iterator[Watch]:
    logger = logging.getLogger("lldsched")
    handler, level = Watch(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


@pytest.fixture
def locked(tmp_path: Path) -> Iterator[tuple[str, sqlite3.Connection]]:
    """A SQLite file's path and another connection that can lock it (``BEGIN EXCLUSIVE``)."""
    path = str(tmp_path / "tasks.db")
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    yield path, other
    other.close()


def test_a_sqlite_file_locked_by_another_connection_is_one_outage(
    clock: FakeClock, watch: Watch, locked: tuple[str, sqlite3.Connection]
) -> None:
    path, other = locked
    store = SqliteTaskStore(path, timeout=0)  # no busy wait: a locked file fails at once
    with store:
        scheduler = Scheduler(clock=clock, store=store)
        task = scheduler.schedule("tick", noop, FixedRate(60, start_delay=60))
        with scheduler:
            other.execute("BEGIN EXCLUSIVE")
            for _ in range(3):
                clock.advance(60)
                settle(scheduler)
            other.execute("ROLLBACK")
            clock.advance(60)
            settle(scheduler)
        assert task.run_count == 4
        (error,) = watch.at(logging.ERROR)
        assert error.exc_info is not None and "locked" in str(error.exc_info[1])
        (recovered,) = watch.at(logging.WARNING)
        assert "6 calls failed during the outage, 6 task writes not stored" in (
            recovered.getMessage()
        )
        (row,) = [s for s in store.load_all() if s.task.id == task.id]
        assert row.run_count == 4


def test_a_shared_store_locked_is_said_once_not_at_every_wake(
    watch: Watch, locked: tuple[str, sqlite3.Connection]
) -> None:
    path, other = locked
    store = SqliteTaskStore(path, shared=True, poll=0.01, timeout=0)
    scheduler = Scheduler(store=store)
    task = scheduler.schedule("tick", noop, FixedRate(3600))  # due at once
    other.execute("BEGIN EXCLUSIVE")  # every wake's claim of it fails now
    with store, scheduler:
        watch.wait_for(logging.DEBUG, "still failing", count=20)
        assert task.run_count == 0
        other.execute("ROLLBACK")
        watch.wait_for(logging.WARNING, "recovered", count=1)
    (error,) = watch.at(logging.ERROR)
    assert error.exc_info is not None and "failed (a claim)" in error.getMessage()
    (recovered,) = watch.at(logging.WARNING)
    assert "recovered (a claim succeeded)" in recovered.getMessage()


class FlushFailing(SqliteTaskStore):
    """A shared SQLite store whose batch of held-back settles fails to write while
    ``down`` is set (a PostgreSQL store's writer losing its server looks the same)."""

    down = True

    def flush(self) -> None:
        if self.down:
            raise StoreError("connection refused: the server is down")


class LockSeen(logging.Handler):
    """Notes, at each ``lldsched`` line, whether ``watched`` was held when it was said
    (not ``self.lock``: that is the handler's own, held while it emits)."""

    def __init__(self, watched: Any) -> None:
        super().__init__(level=logging.DEBUG)
        self.watched = watched
        self.seen: list[tuple[str, bool]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append((record.getMessage(), self.watched.locked()))


def test_the_outage_a_failed_flush_counts_is_counted_under_the_schedulers_lock(
    tmp_path: Path,
) -> None:
    """``wait_idle`` flushes a shared store's held-back settles without the scheduler's
    lock (the store's own is enough for the write), but the outage it counts is the
    core's, which the timer and the workers count into under that lock: counted without
    it, a claim failing beside it could begin a second outage (two "failed" lines), be
    counted into one the flush's success just ended (lost from the recovery's count), or
    lose an increment.  The scheduler is not started, so nothing else holds its lock:
    the lock seen held at each line is the flush's own."""
    store = FlushFailing(tmp_path / "tasks.db", shared=True)
    scheduler = Scheduler(store=store)
    name = repr(store)  # as it is said while open
    logger = logging.getLogger("lldsched")
    seen, level = LockSeen(scheduler._lock), logger.level
    logger.addHandler(seen)
    logger.setLevel(logging.DEBUG)
    try:
        with store:
            assert scheduler.wait_idle(timeout=5)  # the flush fails: the outage begins
            assert scheduler.wait_idle(timeout=5)  # fails again: counted in it
            store.down = False
            assert scheduler.wait_idle(timeout=5)  # succeeds: the outage ends
            scheduler.shutdown()
    finally:
        logger.removeHandler(seen)
        logger.setLevel(level)
    said = [(text.split(":")[0], held) for text, held in seen.seen if "store" in text]
    said = [(re.sub(r" after \d+\.\d s$", "", text), held) for text, held in said]
    assert said == [
        (f"store {name} failed (a flush of the settles held back for a batch)", True),
        (f"store {name} still failing", True),
        (f"store {name} recovered (a flush succeeded)", True),  # after the outage's span
    ]


class WrittenElsewhere(FailingStore):
    """A store other processes write too, with a purge of its own
    (``lldsched.storecalls.purge``): it deletes a retiring task's row only while no
    other process wrote it since (``elsewhere`` names the ids one did)."""

    def __init__(self) -> None:
        super().__init__()
        self.elsewhere: set[str] = set()

    def purge(self, task_id: str) -> bool:
        if self.down:
            raise StoreError("connection refused: the server is down")
        if task_id in self.elsewhere:
            return False
        self.delete(task_id)
        return True


def test_a_failed_purge_is_tried_again_as_a_purge_not_as_a_plain_delete(clock: FakeClock) -> None:
    """A task retiring under ``purge_retired`` whose purge failed (an outage) is purged
    again once the store takes writes, with the purge's condition: a row another process
    registered again meanwhile is kept.  Before, the outage's rewrite deleted it (a plain
    ``delete``), and that registration was gone from every process."""
    store = WrittenElsewhere()
    scheduler = Scheduler(clock=clock, store=store, retain_finished=0, purge_retired=True)
    for task_id in ("x", "y", "other"):
        scheduler.schedule(task_id, noop, FixedRate(60), id=task_id)
    store.down = True
    scheduler.cancel("x")  # retires at once: its purge fails
    assert "x" not in {task.id for task in scheduler.tasks()}
    assert not scheduler.metrics().store_ok
    store.down = False
    again = store.get("x")
    assert again is not None
    store.save(again._replace(task=again.task._replace(name="registered elsewhere")))
    store.elsewhere.add("x")
    scheduler.pause("other")  # the store writes again: the rows left stale are written
    assert scheduler.metrics().store_ok
    kept = store.get("x")
    assert kept is not None and kept.task.name == "registered elsewhere"
    store.down = True  # a row only this process wrote: the purge tried again deletes it
    scheduler.cancel("y")
    store.down = False
    scheduler.resume("other")
    assert store.get("y") is None and scheduler.metrics().store_ok


def test_a_waits_blocked_record_refused_with_its_row_is_written_with_the_row_again(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """A dependency wait ends; the store refuses that write (the row SCHEDULED, the wait's
    ``blocked`` record).  The next write that succeeds writes the stale row again, and
    now the record with it: before, the wait was missing from the task's history for
    good (an outage's records were lost).  Its place there decides nothing."""

    class RefusesTheWaitsEnd(InMemoryTaskStore):
        def __init__(self) -> None:
            super().__init__()
            self.refused: list[ExecutionRecord] = []

        def save(self, snapshot, record=None):  # type: ignore[no-untyped-def]
            if record is not None and record.outcome is Outcome.BLOCKED and not self.refused:
                self.refused.append(record)
                raise OSError("disk hiccup")
            super().save(snapshot, record)

    store = RefusesTheWaitsEnd()
    scheduler = Scheduler(clock=clock, store=store)
    with caplog.at_level(logging.WARNING, logger="lldsched"), scheduler:
        scheduler.schedule("extract", noop, OneTime(delay=60), id="extract")
        scheduler.schedule("load", noop, OneTime(delay=0), id="load", depends_on=["extract"])
        settle(scheduler)
        assert scheduler.task("load").status is TaskStatus.BLOCKED
        clock.advance(60)  # extract runs: load's wait ends, its write refused
        settle(scheduler)
    (refused,) = store.refused
    assert [r for r in store.records("load") if r.outcome is Outcome.BLOCKED] == [refused]
    assert any(
        "the rows they left stale were written again" in r.getMessage()
        for r in logged(caplog, logging.WARNING)
    )


def test_a_long_outage_holds_a_bounded_number_of_records_and_says_what_it_folded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A 1 s fixed-rate task whose runs take 1.5 s skips a slot a run, through an 8-hour
    outage: 14,400 runs and 14,400 ``skipped`` records its failed saves carried.  Held
    bounded: the first :data:`HELD` records of no run and the latest :data:`HELD_RUNS`
    runs one by one, one record per outcome standing for the rest (``OutageCap: ...``, as
    ``SkipCap:`` does for a run's skipped slots), counting them; all written once the
    store is back, in the order they were made."""
    store = FailingStore()
    sim = Simulation(workers=1, store=store)
    sim.schedule("tick", FixedRate(1), duration=timedelta(seconds=1.5), id="tick")
    sim.run_for(10)
    made = len(sim.records())
    store.down = True
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        sim.run_for(8 * 3600)
        during = sim.records()[made:]
        slots = [r.slot for r in during if r.outcome is Outcome.SKIPPED]
        runs = [r for r in during if r.outcome.ran]
        assert len(slots) == len(runs) == len(during) // 2 == 14_400
        writes = sim._core.store_writes
        assert writes is not None
        outage = writes.outage
        assert outage is not None and set(outage.records) == {"tick"}
        held = outage.records["tick"]
        # bounded, whatever the outage's length: 10 skipped, 1 for the rest, 1 for the
        # older runs, the latest 100 runs
        assert len(held.records()) == HELD + 1 + 1 + HELD_RUNS
        assert held.count == 28_800  # and every one counted
        store.down = False
        sim.run_for(5)
    assert sim.metrics().store_ok
    # The first write once the store is back (a run's finish and the slot it skipped)
    # joined the records held: written after them, the bound kept.
    assert store.records("tick")[:made] == sim.records()[:made]
    stored = store.records("tick")[made:]
    made_since = sim.records()[made:]
    skipped = [r for r in stored if r.outcome is Outcome.SKIPPED]
    all_skipped = [r for r in made_since if r.outcome is Outcome.SKIPPED]
    standing = skipped[HELD]
    folded = len(all_skipped) - len(skipped) + 1
    assert (
        skipped[:HELD] == all_skipped[:HELD]
        and skipped[HELD + 1 :] == all_skipped[-len(skipped) + HELD + 1 :]
    )
    held_back = "were held back by a store outage (the store refused its writes), to be "
    held_back += "written once it took writes again"
    as_ever = "folded into this one, the first of them, the others not kept; the task went "
    as_ever += "on as ever (the outage held back its records, not its runs)"
    assert standing == all_skipped[HELD]._replace(
        error=f"{OUTAGE_CAP} more than {HELD} records of no run of this task {held_back}; the "
        f"first {HELD} are recorded one by one, and this record stands for every later "
        f"skipped one ({folded:,} records), from {instant_text(slots[HELD])} to "
        f"{instant_text(all_skipped[HELD + folded - 1].slot)} (their slots): {as_ever}"
    )
    ran = [r for r in stored if r.outcome.ran]
    all_ran = [r for r in made_since if r.outcome.ran]
    older, *latest = ran
    runs_folded = len(all_ran) - len(latest)
    assert runs_folded > 14_000 and latest == all_ran[runs_folded:]  # as they were, in order
    assert older == runs[0]._replace(
        error=f"{OUTAGE_CAP} more than {HELD_RUNS} records of runs of this task {held_back}; "
        f"the latest {HELD_RUNS} are recorded one by one, and this record stands for every "
        f"earlier ok one ({runs_folded:,} records), from {instant_text(runs[0].started)} to "
        f"{instant_text(all_ran[runs_folded - 1].started)} (when they started): {as_ever}"
    )
    assert stored == sorted(stored, key=lambda r: r.started)  # in the order they were made
    (recovered,) = logged(caplog, logging.WARNING)
    assert recovered.getMessage().endswith(
        f"the records of {HELD_RUNS} runs they carried were written late, in order; "
        f"{runs_folded:,} records of runs, before the latest {HELD_RUNS} of a task, were "
        f"written folded into one record per outcome ({OUTAGE_CAP} ...); {folded:,} records "
        f"of no run, past the first {HELD} of a task, were written folded into one record "
        f"per outcome ({OUTAGE_CAP} ...))"
    )


def raised(exc: BaseException) -> BaseException:
    """``exc`` as raised and caught (a traceback of its own, as a store's failure)."""
    try:
        raise exc
    except BaseException as caught:
        return caught


def decided(
    task_id: str, slot: float, outcome: Outcome, error: str | None = None
) -> ExecutionRecord:
    return ExecutionRecord(
        task_id, task_id, 0, slot, slot, -1, slot, slot, False, error, False, outcome
    )


def test_an_outages_records_fold_per_outcome_keeping_a_misfire_cap_whole(
    clock: FakeClock,
) -> None:
    """Past the first :data:`HELD` records of a task, each outcome folds into one record
    that stands for the rest; the latest ``MisfireCap:`` record (a restart reads where a
    catch-up plan was cut from it) is kept whole; a run's record is held too, written in
    its place (the last here)."""
    store = InMemoryTaskStore()
    Scheduler(clock=clock, store=store).schedule("t", noop, OneTime(delay=60), id="t")
    snapshot = store.get("t")
    assert snapshot is not None
    writes = StoreWrites(store, current=lambda task_id: snapshot)
    records = [decided("t", float(n), Outcome.BLOCKED) for n in range(HELD)]
    records += [decided("t", 100.0 + n, Outcome.SKIPPED) for n in range(5)]
    records += [decided("t", 200.0 + n, Outcome.MISSED) for n in range(3)]
    records += [decided("t", 300.0, Outcome.MISSED, "MisfireCap: more than 1000 slots")]
    records += [decided("t", 400.0, Outcome.MISSED, "MisfireCap: the latest")]
    run = decided("t", 500.0, Outcome.OK)._replace(misfire=None, ok=True, attempt=1)
    assert run.outcome.ran
    for record in [*records, run]:
        writes.failed(raised(StoreError("down")), "save", "t", snapshot, records=[record])
    outage = writes.outage
    assert outage is not None and outage.runs == 0
    writes.succeeded("save", "another")  # another task's write: the store takes writes
    assert writes.outage is None
    written = [(r.slot, r.outcome, r.error) for r in store.records("t")]
    assert written[:HELD] == [(float(n), Outcome.BLOCKED, None) for n in range(HELD)]
    stood = (
        "OutageCap: more than 10 records of no run of this task were held back by a store "
        "outage (the store refused its writes), to be written once it took writes again; the "
        "first 10 are recorded one by one, and this record stands for every later"
    )
    as_ever = (
        "(their slots): folded into this one, the first of them, the others not kept; the "
        "task went on as ever (the outage held back its records, not its runs)"
    )
    assert written[HELD:] == [
        (
            100.0,
            Outcome.SKIPPED,
            f"{stood} skipped one (5 records), from 1970-01-01T00:01:40.000+00:00 to "
            f"1970-01-01T00:01:44.000+00:00 {as_ever}",
        ),
        (
            200.0,
            Outcome.MISSED,
            f"{stood} missed one (4 records), from 1970-01-01T00:03:20.000+00:00 to "
            f"1970-01-01T00:05:00.000+00:00 {as_ever}",
        ),
        (400.0, Outcome.MISSED, "MisfireCap: the latest"),
        (500.0, Outcome.OK, None),
    ]


@pytest.mark.parametrize(
    ("held", "said"),
    [
        (3, "3 records held were dropped with their rows"),
        (1, "1 record held was dropped with its row"),
    ],
)
def test_records_held_for_a_row_not_written_again_are_counted_as_dropped(
    caplog: pytest.LogCaptureFixture, held: int, said: str
) -> None:
    """A task removed during the outage (its delete failed too) drops the records held
    for its row: said, counted, at the recovery (one in the singular: before, "1 record
    held were dropped with their rows")."""
    store = InMemoryTaskStore()
    writes = StoreWrites(store, current=lambda task_id: None)
    for n in range(held):
        record = decided("t", float(n), Outcome.SKIPPED)
        writes.failed(raised(StoreError("down")), "save", "t", None, records=[record])
    writes.failed(raised(StoreError("down")), "delete", "t")
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        writes.succeeded("delete", "another")
    (recovered,) = logged(caplog, logging.WARNING)
    assert recovered.getMessage().endswith(
        f"(the rows they left stale were written again (1 row); {said})"
    )


def test_a_purge_that_follows_a_failed_save_of_its_row_leaves_it_deleted(
    clock: FakeClock,
) -> None:
    """A task cancelled under ``retain_finished=0, purge_retired=True`` while the store is
    away for a moment: the cancel's save fails (the row stale), the purge as it retires
    right after goes through.  The row is deleted and stays so: the purge is its latest
    write, and the next write that succeeds does not write the cancelled task's row back
    from the save that failed (a restart would restore a task purged from the store)."""
    store = RowFailing()
    scheduler = Scheduler(clock=clock, store=store, retain_finished=0, purge_retired=True)
    for task_id in ("x", "other"):
        scheduler.schedule(task_id, noop, FixedRate(60), id=task_id)
    store.failing.add("x")
    scheduler.cancel("x")  # its save fails; it retires at once, and its purge succeeds
    store.failing.clear()
    assert "x" not in {task.id for task in scheduler.tasks()}
    assert store.get("x") is None
    scheduler.pause("other")  # a save that succeeds ends the outage
    assert scheduler.metrics().store_ok
    assert store.get("x") is None and [s.task.id for s in store.load_all()] == ["other"]


class SaysShared(FailingStore):
    """An in-memory store that says it is shared (what a core's ``StoreWrites`` reads),
    for a ``StoreWrites`` driven by hand; no scheduler takes it (it lacks the leases).
    Its writes raise while ``down`` is set."""

    shared = True


def test_settles_held_past_their_bound_count_their_runs_lost_and_their_other_records_dropped(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """On a shared store an outage holds at most ``HELD_SETTLES`` runs' settles; past it
    the oldest is let go: its run is lost (its lease's, taken over) and the records of no
    run it carried (the slots its finish decided) are dropped, each counted in the line
    that ends the outage."""
    monkeypatch.setattr(storewrites, "HELD_SETTLES", 2)
    store = InMemoryTaskStore()
    Scheduler(store=store).schedule("t", noop, OneTime(delay=60), id="t")
    snapshot = store.get("t")
    assert snapshot is not None
    writes = StoreWrites(SaysShared())
    for token in (1, 2, 3):  # the third settle lets the first go
        run = decided("t", 100.0 * token, Outcome.OK)._replace(ok=True, attempt=1, token=token)
        missed = [decided("t", 100.0 * token + n, Outcome.MISSED) for n in (1, 2)]
        writes.failed(raised(StoreError("down")), "save", "t", snapshot, fenced=True,
                      records=[run, *missed])  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        writes.succeeded("save")
    assert writes.outage is None
    (recovered,) = logged(caplog, logging.WARNING)
    said = recovered.getMessage()
    assert "the records of 1 run whose settles failed are lost" in said
    assert "2 records held were dropped with their rows" in said


def test_a_settle_failing_again_on_the_main_thread_is_counted_not_raised() -> None:
    """A run's settle held by an outage on a shared store is made again at the next call
    that succeeds, which may be a verb's read of the change feed on the main thread.  If
    the settle fails again with the store's ordinary error, that is one more failed call,
    counted, and the verb goes on: only a ``KeyboardInterrupt`` or ``SystemExit`` the
    store raised is raised there to the user.  Once the store writes, the settle is
    stored and the outage ends."""
    store = SaysShared()
    plain = InMemoryTaskStore()
    Scheduler(store=plain).schedule("t", noop, OneTime(delay=60), id="t")
    snapshot = plain.get("t")
    assert snapshot is not None
    writes = StoreWrites(store, current=lambda task_id: None)
    run = decided("t", 100.0, Outcome.OK)._replace(ok=True, attempt=1, token=1)
    store.down = True
    writes.failed(raised(StoreError("down")), "save", "t", snapshot, fenced=True, records=[run])
    writes.succeeded("read of the change feed")  # the settle made again: it fails again
    outage = writes.outage
    assert outage is not None and outage.calls == 2 and len(outage.settles) == 1
    store.down = False
    writes.succeeded("read of the change feed")
    assert writes.outage is None and store.records("t") == [run]
