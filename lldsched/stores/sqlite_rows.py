"""The rows of an SQLite store: the statements that write a task's row and a record, and
the conversions from rows back to values, shared by its unshared and shared modes
(:mod:`lldsched.stores.sqlite`, :mod:`lldsched.stores.sqlite_coordinated`), and the
:class:`~lldsched.errors.StoreError` an SQLite error becomes (:func:`failure`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from lldsched.errors import StoreError
from lldsched.model import ExecutionRecord, Outcome
from lldsched.persistence import FINISHED_STATUSES, Task, TaskSnapshot
from lldsched.stores.codec import decode_task, status_of

__all__ = [
    "COUNT_UNFINISHED",
    "FINISHED",
    "INSERT_RECORD",
    "RECORD_COLUMNS",
    "SLOT",
    "TASK_COLUMNS",
    "UPDATE",
    "UPSERT",
    "failure",
    "immediate",
    "record_of",
    "rollback",
    "snapshot_of",
]

# A row's ``slot`` (TaskSnapshot.slot) is written with the due instant it belongs to
# (``slot_due``), and read only while the row is still due then: a process of an older
# release (a rolling upgrade) writes rows without it, and its settle or reschedule moves
# the due instant, which leaves the slot behind; read, a later run would record it.
SLOT = "CASE WHEN {t}slot_due = {t}next_run_at THEN {t}slot END"
"""The one rule reading a row's slot (``{t}``: the table's alias and a dot, or nothing)."""

UPDATE = """
UPDATE tasks SET status = ?1, next_run_at = ?2, attempt = ?3, run_count = ?4,
    failure_count = ?5, last_error = ?6, running = ?7,
    failed_seq = CASE WHEN ?1 = 'failed' THEN coalesce(failed_seq, ?8) END, waited = ?10,
    slot = ?11, slot_due = ?2
WHERE id = ?9
"""
UPSERT = """
INSERT INTO tasks (status, next_run_at, attempt, run_count, failure_count, last_error,
    running, failed_seq, id, waited, slot, slot_due, name, definition, priority)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, CASE WHEN ?1 = 'failed' THEN ?8 END, ?9, ?10, ?11, ?2, ?12,
    ?13, ?14)
ON CONFLICT (id) DO UPDATE SET name = excluded.name, definition = excluded.definition,
    priority = excluded.priority, status = excluded.status,
    next_run_at = excluded.next_run_at, attempt = excluded.attempt,
    run_count = excluded.run_count, failure_count = excluded.failure_count,
    last_error = excluded.last_error, running = excluded.running, waited = excluded.waited,
    slot = excluded.slot, slot_due = excluded.slot_due,
    failed_seq = CASE WHEN ?1 = 'failed' THEN coalesce(tasks.failed_seq, ?8) END
"""
INSERT_RECORD = """
INSERT INTO records (task_id, seq, attempt, due, slot, worker, started, finished, ok, error,
    timed_out, misfire, result, token, name, node)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
TASK_COLUMNS = (  # a task row as snapshot_of reads it
    "id, definition, status, next_run_at, attempt, run_count, "
    f"failure_count, last_error, running, waited, {SLOT.format(t='')}"
)
RECORD_COLUMNS = (  # the name the run had; a record written before schema 5 has none kept
    "r.task_id, coalesce(r.name, t.name), r.attempt, r.due, r.slot, r.worker, r.started, "
    "r.finished, r.ok, r.error, r.timed_out, r.misfire, r.result, r.token, r.node"
)


def failure(
    path: str, doing: str, error: sqlite3.Error, *, because: str | None = None
) -> StoreError:
    """The :class:`StoreError` an SQLite store raises (``from error``) when SQLite failed
    ``doing`` (``"save task 'a'"``, ``"claim runs"``) on the file at ``path``: the file
    and the operation named, what ``because`` says of it if given (the likely cause,
    :func:`~lldsched.stores.sqlite_file.unopenable`), then SQLite's own words
    (``database or disk is full``, ``attempt to write a readonly database``,
    ``database is locked``, ``unable to open database file``)."""
    kind = type(error).__name__
    why = "" if because is None else f" ({because})"
    return StoreError(f"the SQLite store {path!r} failed to {doing}{why}: {kind}: {error}")


def rollback(connection: sqlite3.Connection) -> None:
    """Roll back the open transaction, if SQLite has not already (it does on some errors)."""
    if connection.in_transaction:
        connection.execute("ROLLBACK")


@contextmanager
def immediate(connection: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction (``BEGIN IMMEDIATE``: the write lock taken at once),
    committed at the end of the block, rolled back if the block (or the commit) raises.
    Inside a transaction already open (a verb's, ``CoordinatedMethods.verb_held``, which
    holds the write lock from its read of the change feed to its writes): a savepoint of
    it, released at the end, rolled back to if the block raises."""
    if connection.in_transaction:
        connection.execute("SAVEPOINT inner")
        try:
            yield connection
            connection.execute("RELEASE inner")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK TO inner")
                connection.execute("RELEASE inner")
            raise
        return
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield connection
        connection.execute("COMMIT")
    except BaseException:
        rollback(connection)
        raise


def snapshot_of(
    task_id: str, definition: str, status: str, state: list[Any], *, task: Task | None = None
) -> TaskSnapshot:
    """The snapshot a row describes; ``task``: the definition to give it instead of the
    row's (one this process cannot load: :class:`~lldsched.stores.codec.Unreadable`).
    A status this release does not know is an
    :class:`~lldsched.stores.codec.UnknownStatus`, whatever ``task``."""
    status_value = status_of(task_id, status)  # UnknownStatus: a newer release's
    next_run_at, attempt, run_count, failure_count, last_error, running, waited, slot = state
    successes = run_count - failure_count  # a Window's max_runs counts these
    if task is None:
        task = decode_task(task_id, definition, runs=successes)
    return TaskSnapshot(
        task, status_value, next_run_at, attempt, run_count, failure_count, last_error,
        bool(running), waited, slot,
    )  # fmt: skip


def record_of(row: tuple[Any, ...]) -> ExecutionRecord:
    (
        task_id, name, attempt, due, slot, worker, started, finished, ok, error, timed_out,
        misfire, result, token, node,
    ) = row  # fmt: skip
    return ExecutionRecord(
        task_id=task_id,
        name=name,
        attempt=attempt,
        due=due,
        slot=slot,
        worker=worker,
        started=started,
        finished=finished,
        ok=bool(ok),
        error=error,
        timed_out=bool(timed_out),
        misfire=None if misfire is None else Outcome(misfire),
        result=result,
        token=token,
        node=node,
    )


FINISHED = tuple(status.value for status in FINISHED_STATUSES)
"""The statuses of a finished task, as stored (with no run in flight:
:func:`lldsched.persistence.finished`)."""

COUNT_UNFINISHED = (
    "SELECT task_id, count(*) FROM records WHERE task_id NOT IN "
    f"(SELECT id FROM tasks WHERE status IN {FINISHED!r} AND NOT running) GROUP BY task_id"
)
"""The records kept per task, of the tasks :func:`lldsched.persistence.finished` is not
true of."""
