"""The records of the runs a store outage made are written once the store is back, in order.

While a store fails, a task's failed writes carry the records of its runs; they are held
(bounded: ``core/store/outagerecords.Held``) and written with the task's row when a write
succeeds again, before any later record of the task, each once.  Before, they were
counted and never written: after the outage the store's history had a hole where the
scheduler's history in memory had the runs (docs/decisions/store-failures.md, "The runs of a store
outage are written late").
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    RetryPolicy,
    Scheduler,
    SqliteTaskStore,
    StoreError,
    TaskStatus,
)
from lldsched.core.store.outagerecords import HELD, HELD_RUNS, OUTAGE_CAP, Held
from lldsched.core.store.writes import StoreWrites
from lldsched.model import ExecutionRecord, Outcome
from lldsched.persistence import TaskSnapshot
from tests import jobs
from tests.cluster import StoreSpec, opened
from tests.conftest import T0
from tests.runtimes import KINDS, Driven
from tests.waits import wait_until

DOWN = "connection refused: the server is down"


class Down(SqliteTaskStore):
    """A SQLite store whose writes fail while ``down`` is set, writing nothing; with
    ``fail_at``, the write of the record numbered so (1: the next record appended) fails
    inside its transaction, which SQLite rolls back (a disk full among the records)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.down = False
        self.fail_at: int | None = None

    def _refuse_if_down(self) -> None:
        if self.down:
            raise StoreError(DOWN)

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        self._refuse_if_down()
        super().save(snapshot, record)

    def save_all(self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord]) -> None:
        self._refuse_if_down()
        super().save_all(snapshot, records)

    def delete(self, task_id: str) -> None:
        self._refuse_if_down()
        super().delete(task_id)

    def _append(self, connection: sqlite3.Connection, record: ExecutionRecord, *, seq: int) -> int:
        if self.fail_at is not None:
            self.fail_at -= 1
            if self.fail_at == 0:
                self.fail_at = None
                raise sqlite3.OperationalError("database or disk is full")
        return super()._append(connection, record, seq=seq)


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Down]:
    opened = Down(tmp_path / "tasks.db")
    with opened:
        yield opened


def test_the_runs_of_an_outage_are_stored_in_order_once_the_store_is_back(
    kind: str, store: Down, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A database blip of ten minutes: the runs made meanwhile (successes, a failure and
    its retry, a one-off that finished) are in the store afterwards as the scheduler's
    history has them, and a restart reads them back."""
    driven = Driven(kind, store=store)
    try:
        rate = driven.add("rate", FixedRate(60), id="rate")
        retried = driven.add(
            "retried",
            FixedRate(120, start_delay=30),
            action=jobs.broken,
            id="retried",
            retry=RetryPolicy(max_attempts=2, initial_backoff=5),
        )
        once = driven.add("once", OneTime(delay=200), id="once")
        driven.run_until(driven.now + 100)
        store.down = True
        with caplog.at_level(logging.WARNING, logger="lldsched"):
            driven.run_until(driven.now + 600)
            assert store.records("once") == []  # its run is in memory only
            store.down = False
            driven.run_until(driven.now + 130)
        tasks = (rate, retried, once)
        histories = {task.id: list(task.history) for task in tasks}
        assert len(histories["rate"]) == len(histories["retried"]) == 14
        for task in tasks:
            assert store.records(task.id) == histories[task.id], task.id
        (recovered,) = [r for r in caplog.records if "recovered" in r.getMessage()]
        assert "were written late, in order" in recovered.getMessage()
    finally:
        driven.close()
    store.close()
    with SqliteTaskStore(tmp_path / "tasks.db") as reopened:  # what a restart reads
        for task_id, history in histories.items():
            assert reopened.records(task_id) == history


class Counting(InMemoryTaskStore):
    """An in-memory store (no ``save_all``: one ``save`` a record) whose saves numbered in
    ``failing`` (1: the next) raise, writing nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.saves = 0
        self.failing: set[int] = set()

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        self.saves += 1
        if self.saves in self.failing:
            raise StoreError(DOWN)
        super().save(snapshot, record)


def ran(task_id: str, n: int, outcome: Outcome = Outcome.OK) -> ExecutionRecord:
    """The record of run ``n`` of ``task_id`` (started at ``n``), ending as ``outcome``."""
    at = float(n)
    return ExecutionRecord(
        task_id, task_id, 1, at, at, 0, at, at + 0.5, outcome is Outcome.OK,
        None if outcome is Outcome.OK else "RuntimeError: no", outcome is Outcome.TIMED_OUT,
        None,
    )  # fmt: skip


def raised(message: str = DOWN) -> StoreError:
    try:
        raise StoreError(message)
    except StoreError as caught:
        return caught


def held_writes(store: Any) -> tuple[StoreWrites, TaskSnapshot]:
    """A StoreWrites over ``store`` and a stored snapshot of task ``t`` to write with."""
    Scheduler(clock=FakeClock(T0), store=store).schedule("t", jobs.noop, OneTime(delay=60), id="t")
    (snapshot,) = store.load_all()
    return StoreWrites(store, current=lambda task_id: snapshot), snapshot


@pytest.mark.parametrize("engine", ["one save a record", "sqlite, one transaction"])
def test_a_late_write_that_fails_among_its_records_writes_none_twice(
    engine: str, tmp_path: Path
) -> None:
    """Five runs' records held; the task's next write (a sixth run) fails at its third
    record: a store that writes record by record keeps the two written and holds the
    rest, SQLite rolls the transaction back and holds all; either way the next write
    that succeeds stores each of the six once, in order."""
    store: Any = Counting() if engine == "one save a record" else Down(tmp_path / "t.db")
    writes, snapshot = held_writes(store)
    records = [ran("t", n) for n in range(6)]
    for record in records[:5]:
        writes.failed(raised(), "save", "t", snapshot, records=[record])
    if isinstance(store, Counting):
        store.failing = {store.saves + 3}
    else:
        store.fail_at = 3
    writes.save("t", snapshot, records[5:])
    outage = writes.outage
    assert outage is not None and "t" in outage.stale  # still failing
    written = 2 if isinstance(store, Counting) else 0
    assert store.records("t") == records[:written]
    assert outage.records["t"].records() == records[written:]  # the rest, still held
    writes.succeeded("save", "another")  # the store takes writes: the rest written
    assert writes.outage is None
    assert store.records("t") == records  # each once, in order
    if isinstance(store, Down):
        store.close()


def test_the_records_an_outage_folded_say_what_happened_in_utc() -> None:
    """What ``tasks show`` prints for the record standing for the ones an outage folded,
    as a misfire's cap record reads: that a store outage held them back, which are kept
    one by one, how many of which outcome it stands for, from when to when in UTC (not
    seconds since the epoch), and what became of them and of the task.  Before:
    "OutageCap: a store outage held back more than 10 records of no run of this task;
    this record stands for 3 skipped records, the slots from 1767604260.0 to
    1767604380.0"."""
    held = Held()
    for n in range(HELD + 3):  # a minutely task's skipped slots, from 09:01
        held.add(ran("t", 0)._replace(slot=T0 + 60 * (n + 1), ok=False, misfire=Outcome.SKIPPED))
    for n in range(HELD_RUNS + 2):  # its runs, started from 09:00 every minute
        held.add(ran("t", 0)._replace(started=T0 + 60 * n))
    assert T0 == 1767603600.0  # 2026-01-05T09:00:00Z
    outage = (
        "were held back by a store outage (the store refused its writes), to be written once "
        "it took writes again"
    )
    after = (
        "folded into this one, the first of them, the others not kept; the task went on as "
        "ever (the outage held back its records, not its runs)"
    )
    assert [r.error for r in held.records() if r.error is not None] == [
        f"OutageCap: more than 10 records of no run of this task {outage}; the first 10 are "
        "recorded one by one, and this record stands for every later skipped one (3 records), "
        "from 2026-01-05T09:11:00.000+00:00 to 2026-01-05T09:13:00.000+00:00 (their slots): "
        f"{after}",
        f"OutageCap: more than 100 records of runs of this task {outage}; the latest 100 are "
        "recorded one by one, and this record stands for every earlier ok one (2 records), "
        "from 2026-01-05T09:00:00.000+00:00 to 2026-01-05T09:01:00.000+00:00 (when they "
        f"started): {after}",
    ]


def test_past_the_bound_the_older_runs_fold_into_one_record_per_outcome(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The latest :data:`HELD_RUNS` runs of a task are held one by one; the older ones fold
    into one record per outcome, in the place of its first, its error text saying how
    many it stands for: the drop is recorded in the store and counted in the log."""
    store = InMemoryTaskStore()
    writes, snapshot = held_writes(store)
    older = [ran("t", n, Outcome.OK if n % 2 else Outcome.FAILED) for n in range(6)]
    latest = [ran("t", n) for n in range(6, 6 + HELD_RUNS)]
    for record in [*older, *latest]:
        writes.failed(raised(), "save", "t", snapshot, records=[record])
    outage = writes.outage
    assert outage is not None and outage.records["t"].count == 6 + HELD_RUNS
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        writes.succeeded("save", "another")
    stood = (
        f"{OUTAGE_CAP} more than {HELD_RUNS} records of runs of this task were held back by a "
        "store outage (the store refused its writes), to be written once it took writes "
        f"again; the latest {HELD_RUNS} are recorded one by one, and this record stands for "
        "every earlier"
    )
    as_ever = (
        "(when they started): folded into this one, the first of them, the others not kept; "
        "the task went on as ever (the outage held back its records, not its runs)"
    )
    assert store.records("t") == [
        older[0]._replace(
            error=f"{stood} failed one (3 records), from 1970-01-01T00:00:00.000+00:00 to "
            f"1970-01-01T00:00:04.000+00:00 {as_ever}"
        ),
        older[1]._replace(
            error=f"{stood} ok one (3 records), from 1970-01-01T00:00:01.000+00:00 to "
            f"1970-01-01T00:00:05.000+00:00 {as_ever}"
        ),
        *latest,
    ]
    (recovered,) = [r for r in caplog.records if "recovered" in r.getMessage()]
    assert recovered.getMessage().endswith(
        f"the records of {HELD_RUNS} runs they carried were written late, in order; 6 records "
        f"of runs, before the latest {HELD_RUNS} of a task, were written folded into one "
        f"record per outcome ({OUTAGE_CAP} ...))"
    )


def test_a_task_deleted_once_the_store_is_back_is_not_written_again_with_its_records() -> None:
    """A task whose records are held and whose delete (a ``remove()``) is the first write
    to succeed: its records go with it (counted as dropped), and its row is not written
    back from the snapshot that failed.  Before, it stayed stale for its records and the
    rewrite that followed stored it again: the removed task came back at the restart."""
    store = InMemoryTaskStore()
    writes, snapshot = held_writes(store)
    skipped = ran("t", 1)._replace(misfire=Outcome.SKIPPED, ok=False, attempt=0)
    assert not skipped.outcome.ran
    writes.failed(raised(), "save", "t", snapshot, records=[skipped, ran("t", 2)])
    store.delete("t")
    writes.succeeded("delete", "t")
    outage = writes.outage
    assert outage is not None and outage.stale == {} and outage.dropped == 2
    writes.succeeded("save", "another")  # the rewrite that follows: nothing to write
    assert writes.outage is None
    assert store.load_all() == [] and store.records("t") == []


def fail_one_settle(store: Any, engine: str, failed: list[int]) -> None:
    """Make ``store``'s first settle fail as a server away would (nothing written): the
    SQLite store's one transaction, the PostgreSQL store's batch; ``failed`` gets its
    token."""
    if engine == "sqlite":
        settle = store._settle

        def failing(
            snapshot: TaskSnapshot, records: Sequence[ExecutionRecord], *, token: int
        ) -> None:
            if not failed:
                failed.append(token)
                raise StoreError(DOWN)
            settle(snapshot, records, token=token)

        store._settle = failing
        return
    write = store._settle_batch

    def failing_batch(batch: list[Any]) -> set[int]:
        if not failed:
            failed.append(batch[0].token)
            store._settles.done((pending.token, False) for pending in batch)
            raise StoreError(DOWN)
        written: set[int] = write(batch)
        return written

    store._settle_batch = failing_batch


def test_a_shared_stores_settle_that_failed_is_written_again_fenced_by_its_token(
    store_spec: StoreSpec,
) -> None:
    """A run whose settle the shared store failed (a server away for a moment): the settle
    is held and written again at the process's next store call, under its token (its lease
    still this process's): the run's record is stored, once, and its slot is not run
    again.  Before, the settle was dropped: the record was lost and, once its lease
    expired, the slot ran a second time."""
    failed: list[int] = []
    with opened(store_spec, 2, lease=30.0, poll=0.05) as (store, reader):
        fail_one_settle(store, store_spec.engine, failed)
        jobs.CALLS.clear()
        scheduler = Scheduler(workers=1, store=store).start()
        try:
            task = scheduler.schedule(
                "once", jobs.note, OneTime(delay=0), args=("once",), id="once"
            )
            wait_until(lambda: bool(failed), timeout=10, what="the settle failed")
            wait_until(
                lambda: len(reader.records("once")) == 1 and scheduler.metrics().store_ok,
                timeout=10,
                what="the settle written again",
            )
            assert scheduler.wait_idle(timeout=5)
            assert reader.records("once") == list(task.history)
            assert [r.token for r in reader.records("once")] == failed  # its own token
            assert reader.leases() == []  # nothing left to expire and run again
            (stored,) = reader.load_all()
            assert stored.status is TaskStatus.SUCCEEDED and stored.run_count == 1
            assert len(jobs.CALLS) == 1
        finally:
            assert scheduler.shutdown(timeout=5)
