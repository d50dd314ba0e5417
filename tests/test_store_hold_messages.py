"""What a verb's hold whose transaction a call inside ended says (SQLite and PostgreSQL).

A verb's hold is one transaction (:func:`lldsched.storecalls.verb_held`).  A call inside
that fails can take it down with it: on PostgreSQL a statement outside a savepoint of its
own (a read: the records a dependency recount reads, on a lock timeout) aborts it; on
SQLite a full disk or an I/O error rolls it back.  The hold's end then raises
:class:`~lldsched.storecalls.HoldNotCommitted`, and before, it said only "a statement
inside failed, aborting it" (PostgreSQL) or "its transaction was rolled back by SQLite":
not which call, nor the database's words, so an operator reading the log could not tell a
lock timeout from anything else.  It now names the call and the database's words (the
SQLSTATE on PostgreSQL), the call's own error its ``__cause__``: the first call that
ended the transaction, the cause, and how many calls inside failed after it (they fail
because it did).  Before, a PostgreSQL hold whose connection was lost after a read had
aborted it named the loss, the last failure, and not the read.

And its message said things twice: a hold whose connection was lost said "a verb's hold
was not committed, ...: ... the connection of a verb's hold was lost (...); it was not
committed".  A hold inside a hold that a call aborted raised a plain StoreError (no
``written``), and the rollback to its savepoint let the outer hold commit without the
inner one's writes, which the store's caches kept as written (never written again).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psycopg
import pytest

from lldsched import (
    EventLog,
    FakeClock,
    FixedRate,
    Scheduler,
    SqliteTaskStore,
    StoreError,
    TaskStatus,
)
from lldsched.persistence import TaskSnapshot
from lldsched.storecalls import HoldNotCommitted
from lldsched.stores.postgres import PostgresTaskStore
from tests import jobs
from tests.pg_faults import fail_in_wait
from tests.test_cluster_verb_hold import T0, FillingSqlite
from tests.test_store_postgres_hold_edges import terminate
from tests.test_store_postgres_hold_lost_reason import TERMINATED, hold_lost
from tests.test_store_sqlite import snapshot, task

Opener = Callable[..., PostgresTaskStore]

LOCK_TIMEOUT = (  # PostgreSQL's words, then what they mean for the store (postgres/redact)
    "canceling statement due to lock timeout (a lock_timeout set for the role or the "
    "database ran out: another session holds a lock on the store's tables (pg_locks "
    "names it)) (SQLSTATE 55P03)"
)


def paused(task_id: str) -> TaskSnapshot:
    return snapshot(task(id=task_id))._replace(status=TaskStatus.PAUSED)


@contextmanager
def records_locked(store: PostgresTaskStore) -> Iterator[None]:
    """Inside, a read of the records on ``store``'s connection fails at once on a lock
    timeout (another session holds the table)."""
    store._open().execute("SET lock_timeout = '10ms'")
    with psycopg.connect(store._dsn) as admin:
        admin.execute("LOCK TABLE records IN ACCESS EXCLUSIVE MODE")
        yield


def status(store: PostgresTaskStore, task_id: str) -> TaskStatus | None:
    row = store.get(task_id)
    return None if row is None else row.status


def test_a_read_that_aborts_a_postgres_hold_is_named_with_the_databases_words(
    open_store: Opener,
) -> None:
    store, other = open_store(), open_store()
    for task_id in ("a", "b"):
        store.save(snapshot(task(id=task_id)))
    failed: list[StoreError] = []  # (pytest.raises inside would be the hold's to swallow)
    with records_locked(store), pytest.raises(HoldNotCommitted) as raised, store.verb_held("a"):
        store.save(paused("a"))
        try:
            store.records("b")
        except StoreError as exc:
            failed.append(exc)
        with pytest.raises(StoreError, match="current transaction is aborted"):
            store.records("a")  # fails because the first did: only counted
    error = raised.value
    assert str(error) == (
        "a verb's hold was not committed, none of its writes is stored ('a'): the "
        f"PostgreSQL store {store.dsn!r} failed to read the records of task 'b' inside it, "
        f"outside a savepoint of its own, which aborted its transaction: {LOCK_TIMEOUT}; "
        "1 later call inside it failed too"
    )
    assert error.__cause__ is failed[0]  # the read's own error, its whole words
    assert "canceling statement due to lock timeout" in str(failed[0])
    assert list(error.written) == ["a"]
    assert status(other, "a") is TaskStatus.SCHEDULED
    store.save(paused("a"))  # the caches put back: written again, stored
    assert status(other, "a") is TaskStatus.PAUSED


def test_a_postgres_hold_a_read_aborted_then_lost_names_the_read_and_counts_the_rest(
    open_store: Opener,
) -> None:
    """Before, the hold's end named the last failure, the loss ("lost its connection
    (terminating connection ...)"), raised from no call, and not the read whose lock
    timeout had already aborted the hold."""
    store, other = open_store(), open_store()
    for task_id in ("a", "b"):
        store.save(snapshot(task(id=task_id)))
    failed: list[StoreError] = []
    with records_locked(store), pytest.raises(HoldNotCommitted) as raised, store.verb_held("a"):
        store.save(paused("a"))
        try:
            store.records("b")  # aborts the hold: the cause
        except StoreError as exc:
            failed.append(exc)
        terminate(store)  # then the server ends the hold's session
        for _ in range(2):
            try:
                store.get("b")  # fails on the lost connection; then refused (a new one
            except StoreError as exc:  # would write outside the hold)
                failed.append(exc)
    read, lost, refused = failed
    assert "canceling statement due to lock timeout" in str(read)
    assert TERMINATED in str(lost)
    assert "nothing more is written inside it" in str(refused)
    assert TERMINATED in str(refused)  # the refused call says why the connection went
    error = raised.value
    assert str(error) == (
        "a verb's hold was not committed, none of its writes is stored ('a'): the "
        f"PostgreSQL store {store.dsn!r} failed to read the records of task 'b' inside it, "
        f"outside a savepoint of its own, which aborted its transaction: {LOCK_TIMEOUT}; "
        "2 later calls inside it failed too"
    )
    assert error.__cause__ is read
    assert status(other, "a") is TaskStatus.SCHEDULED
    store.save(paused("a"))  # the caches put back: written again, stored
    assert status(other, "a") is TaskStatus.PAUSED


def test_a_hold_inside_a_hold_that_a_read_aborted_is_said_once_and_loses_no_write(
    open_store: Opener,
) -> None:
    """Before, the inner hold raised a plain StoreError naming nothing written, and the
    outer one committed ``a`` while ``b``'s write, rolled back with the inner hold's
    savepoint, stayed cached as written."""
    store, other = open_store(), open_store()
    for task_id in ("a", "b", "c"):
        store.save(snapshot(task(id=task_id)))
    inner: list[BaseException] = []
    with records_locked(store), pytest.raises(HoldNotCommitted) as raised, store.verb_held("a"):
        store.save(paused("a"))
        try:
            with store.verb_held("b"):
                store.save(paused("b"))
                with suppress(StoreError):
                    store.records("c")
        except BaseException as exc:
            inner.append(exc)
            raise
    assert inner == []  # the inner hold ends as the block inside it did
    assert str(raised.value) == (
        "a verb's hold was not committed, none of its writes is stored ('a', 'b'): the "
        f"PostgreSQL store {store.dsn!r} failed to read the records of task 'c' inside it, "
        f"outside a savepoint of its own, which aborted its transaction: {LOCK_TIMEOUT}"
    )
    assert set(raised.value.written) == {"a", "b"}
    assert (status(other, "a"), status(other, "b")) == (TaskStatus.SCHEDULED,) * 2
    store.save(paused("b"))  # the caches put back: written again, stored
    assert status(other, "b") is TaskStatus.PAUSED


def test_a_hold_inside_a_hold_whose_rows_are_locked_elsewhere_fails_alone(
    open_store: Opener,
) -> None:
    """The inner hold takes its row locks in a savepoint of their own: a lock timeout
    there refuses that hold (its verb runs unheld), and the outer one goes on."""
    store, other = open_store(), open_store()
    for task_id in ("a", "b"):
        store.save(snapshot(task(id=task_id)))
    store._open().execute("SET lock_timeout = '10ms'")
    refused: list[str] = []
    with psycopg.connect(store._dsn) as admin:
        admin.execute("SELECT id FROM tasks WHERE id = 'b' FOR UPDATE")  # held until its end
        with store.verb_held("a"):
            try:
                with store.verb_held("b"):
                    refused.append("entered")
            except StoreError as exc:
                refused.append(str(exc))
            store.save(paused("a"))
    (said,) = refused  # the lock statement's own error; not entered
    assert said.startswith(
        f"the PostgreSQL store {store.dsn!r} failed: {LOCK_TIMEOUT.split(' (SQLSTATE')[0]}"
        "\nCONTEXT:  while locking tuple"
    ), said
    assert status(other, "a") is TaskStatus.PAUSED


def test_a_hold_whose_connection_was_lost_says_it_was_not_committed_once(
    postgres_dsn: str,
) -> None:
    with PostgresTaskStore(postgres_dsn, timeout=1) as store:
        error, inside = hold_lost(store, lambda: terminate(store))
        assert str(error) == (
            "a verb's hold was not committed, none of its writes is stored ('b'): the "
            f"PostgreSQL store {store.dsn!r} failed to save task 'a' inside it, which lost "
            f"its connection: {TERMINATED} (SQLSTATE 57P01)"
        )
        assert inside == f"the PostgreSQL store {store.dsn!r} failed: {TERMINATED}"
        assert str(error.__cause__) == inside  # the write's own error


@contextmanager
def filling(path: Path) -> Iterator[FillingSqlite]:
    """A shared store at ``path`` (tasks ``up`` and ``d`` stored) whose disk fills up as
    ``d``'s row is written, once ``failing`` is set; closed at the end."""
    store = FillingSqlite(path, shared=True)
    try:
        with sqlite3.connect(path) as setup:
            setup.execute("CREATE TABLE filler (x)")
        for task_id in ("up", "d"):
            store.save(snapshot(task(id=task_id)))
        yield store
    finally:
        store.close()


def disk_filled(store: FillingSqlite, writes: int) -> tuple[HoldNotCommitted, list[StoreError]]:
    """A hold on ``up`` that writes it, then ``d`` ``writes`` times on a full disk (the
    first rolls the hold back): the hold's error, and those of ``d``'s writes."""
    failed: list[StoreError] = []  # (pytest.raises inside would be the hold's to swallow)
    store.failing = True
    with pytest.raises(HoldNotCommitted) as raised, store.verb_held("up", also=("d",)):
        store.save(paused("up"))
        for _ in range(writes):
            try:
                store.save(paused("d"))
            except StoreError as exc:
                failed.append(exc)
    store.failing = False
    return raised.value, failed


def test_a_full_disk_that_rolls_an_sqlite_hold_back_is_named_with_sqlites_words(
    tmp_path: Path,
) -> None:
    with filling(tmp_path / "tasks.db") as store:
        error, failed = disk_filled(store, 1)
        assert str(error) == (
            "a verb's hold was not committed, none of its writes is stored ('up'): the "
            f"SQLite store {store.path!r} failed to save task 'd' inside it, and SQLite "
            "rolled its transaction back: OperationalError: database or disk is full"
        )
        assert error.__cause__ is failed[0]
        assert isinstance(failed[0].__cause__, sqlite3.OperationalError)
        row = store.get("up")
        assert row is not None and row.status is TaskStatus.SCHEDULED
        store.save(paused("up"))
        row = store.get("up")
        assert row is not None and row.status is TaskStatus.PAUSED


def test_an_sqlite_hold_a_full_disk_rolled_back_counts_the_calls_that_failed_after(
    tmp_path: Path,
) -> None:
    """The rule PostgreSQL's hold follows: the first call that ended the transaction is
    named, the calls that failed after it counted.  Before, the later ones went unsaid."""
    with filling(tmp_path / "tasks.db") as store:
        error, failed = disk_filled(store, 2)  # the second write fails on the disk again
        assert len(failed) == 2
        assert str(error) == (
            "a verb's hold was not committed, none of its writes is stored ('up'): the "
            f"SQLite store {store.path!r} failed to save task 'd' inside it, and SQLite "
            "rolled its transaction back: OperationalError: database or disk is full; "
            "1 later call inside it failed too"
        )
        assert error.__cause__ is failed[0]


def test_an_sqlite_hold_whose_commit_fails_names_the_store_and_sqlites_error(
    tmp_path: Path,
) -> None:
    """Before, its message ended in SQLite's bare words ("FOREIGN KEY constraint
    failed"): not the store, nor that the COMMIT failed, nor the error's kind, as every
    other failure of the store says them.  (A deferred foreign key checked at the COMMIT
    is a COMMIT that really fails.)"""
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path, shared=True) as store:
        store.save(snapshot(task(id="up")))
        with sqlite3.connect(path) as setup:
            setup.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
            setup.execute("CREATE TABLE child (p INTEGER REFERENCES parent (id))")
        connection = store._connection
        assert connection is not None
        connection.execute("PRAGMA foreign_keys = ON")
        with pytest.raises(HoldNotCommitted) as raised, store.verb_held("up"):
            store.save(paused("up"))
            connection.execute("PRAGMA defer_foreign_keys = ON")
            connection.execute("INSERT INTO child VALUES (1)")  # no parent: the COMMIT fails
        connection.execute("PRAGMA foreign_keys = OFF")
        assert str(raised.value) == (
            "a verb's hold was not committed, none of its writes is stored ('up'): the "
            f"SQLite store {store.path!r} failed to commit it: IntegrityError: FOREIGN KEY "
            "constraint failed"
        )
        assert isinstance(raised.value.__cause__, sqlite3.IntegrityError)
        row = store.get("up")
        assert row is not None and row.status is TaskStatus.SCHEDULED


def test_a_runtime_whose_hold_a_read_aborted_logs_the_read_and_loses_nothing(
    postgres_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The replacement of a dependent on a shared store (its hold reads the records its
    new upstreams are counted from, on a lock timeout): the read's failure begins the
    outage (ERROR, its words); the hold's error, at DEBUG as the outage's next failure,
    names that read; ``store_ok`` is False; the listener hears the replacement, which
    stays registered and is stored once the store answers."""
    caplog.set_level(logging.DEBUG, logger="lldsched")
    store = PostgresTaskStore(postgres_dsn)
    other = PostgresTaskStore(postgres_dsn)
    scheduler = Scheduler(store=store, clock=FakeClock(T0))
    heard = EventLog()
    scheduler.add_listener(heard)
    try:
        for task_id in ("u1", "u2", "x"):
            scheduler.schedule(task_id, jobs.noop, FixedRate(60), id=task_id)
        scheduler.schedule("r", jobs.noop, FixedRate(60), id="r", depends_on=["u1"])
        registered = heard.wait_for(lambda event: event.task_id == "r")
        caplog.clear()
        with records_locked(store):
            scheduler.schedule(
                "r", jobs.noop, FixedRate(60), id="r", depends_on=["u1", "u2"],
                replace_existing=True,
            )  # fmt: skip
        outage = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(outage) == 1 and outage[0].exc_info is not None
        assert "canceling statement due to lock timeout" in str(outage[0].exc_info[1])
        (hold,) = [
            r.args[-1]
            for r in caplog.records
            if isinstance(r.args, tuple) and isinstance(r.args[-1], HoldNotCommitted)
        ]
        assert isinstance(hold, HoldNotCommitted)
        assert str(hold) == (
            "a verb's hold was not committed, none of its writes is stored ('r'): the "
            f"PostgreSQL store {store.dsn!r} failed to read the records of task 'r' inside "
            f"it, outside a savepoint of its own, which aborted its transaction: {LOCK_TIMEOUT}; "
            "2 later calls inside it failed too"  # the records of u1 and u2, read after it
        )
        assert hold.__cause__ is outage[0].exc_info[1]  # the read the outage began with
        assert not scheduler.metrics().store_ok
        replaced = heard.wait_for(lambda event: event.task_id == "r" and event is not registered)
        assert replaced is not None
        assert (replaced.previous, replaced.status) == (TaskStatus.SCHEDULED,) * 2
        assert scheduler.task("r").depends_on == ("u1", "u2")  # nothing registered lost
        row = other.get("r")
        assert row is not None and row.task.depends_on == ("u1",)  # rolled back
        scheduler.pause("x")  # a store call that succeeds: the stale row written again
        row = other.get("r")
        assert row is not None and row.task.depends_on == ("u1", "u2")
        assert scheduler.metrics().store_ok
    finally:
        scheduler.shutdown()
        store.close()
        other.close()


@pytest.mark.parametrize("sent", [False, True], ids=["before-it-is-sent", "once-it-is-sent"])
def test_a_postgres_hold_whose_commits_reply_is_lost_says_whether_its_writes_may_be_stored(
    open_store: Opener, monkeypatch: pytest.MonkeyPatch, sent: bool
) -> None:
    """The hold's COMMIT fails in psycopg's wait for its round trip (the connection lost):
    not yet sent, nothing of the hold is stored and the message says so; once sent, its
    reply unread, the server may have committed it (here it has), and the message says
    whether the writes are stored is not known.  Before, it said "none of its writes is
    stored" both times, though the row was paused on the server."""
    store, other = open_store(), open_store()
    store.save(snapshot(task(id="a")))
    with pytest.raises(HoldNotCommitted) as raised, store.verb_held("a"):
        store.save(paused("a"))
        # The hold's COMMIT is its next round trip.
        fail_in_wait(monkeypatch, psycopg.OperationalError("the connection was lost"), sent=sent)
    monkeypatch.undo()
    head = (
        "a verb's hold may not have been committed, whether its writes are stored is not known"
        if sent
        else "a verb's hold was not committed, none of its writes is stored"
    )
    assert str(raised.value) == (
        f"{head} ('a'): the PostgreSQL store {store.dsn!r} failed: the connection was lost"
    )
    assert status(other, "a") is (TaskStatus.PAUSED if sent else TaskStatus.SCHEDULED)
