"""The rows of an SQLite store: the statements that write a task's row and a record, and
the conversions from rows back to values, shared by its unshared and shared modes
(:mod:`lldsched.stores.sqlite`, :mod:`lldsched.stores.sqlite_coordinated`), and the
:class:`~lldsched.errors.StoreError` an SQLite error becomes (:func:`failure`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

from lldsched.errors import StoreError
from lldsched.model import ExecutionRecord, Outcome
from lldsched.persistence import FINISHED_STATUSES, Task, TaskSnapshot
from lldsched.stores.codec import BadValue, decode_task, status_of

__all__ = [
    "AT_OPEN",
    "COLUMNS",
    "COUNT_UNFINISHED",
    "FINISHED",
    "INSERT_RECORD",
    "RECORD_COLUMNS",
    "SLOT",
    "TASK_COLUMNS",
    "UPDATE",
    "UPSERT",
    "Kind",
    "failure",
    "immediate",
    "misread",
    "record_of",
    "rollback",
    "snapshot_of",
]


class Kind(NamedTuple):
    """What the store writes in a column: the SQLite storage classes (``typeof``) of its
    values, and for a flag, that it is 0 or 1.  SQLite's type affinity stores a
    well-formed numeric text as its number (``'2'`` in an ``INTEGER`` column is 2), and
    keeps any other text as text (``'three'``, an ISO date): what is not of its kind is
    a value the store cannot read (:func:`misread`)."""

    classes: tuple[str, ...]
    said: str  # as the error says it: "an integer"
    flag: bool = False

    def holds(self, value: object) -> bool:
        """Whether ``value``, as the driver read it, is one of this kind."""
        return _TYPEOF.get(type(value)) in self.classes and (not self.flag or value in (0, 1))

    def wrong(self, column: str) -> str:
        """The SQL condition true of a row whose ``column`` is not of this kind."""
        classes = ", ".join(f"'{name}'" for name in self.classes)
        flag = f" OR {column} NOT IN (0, 1)" if self.flag else ""
        return f"typeof({column}) NOT IN ({classes}){flag}"


_TYPEOF = {int: "integer", float: "real", str: "text", bytes: "blob", type(None): "null"}
INTEGER = Kind(("integer",), "an integer")
INTEGER_OR_NULL = Kind(("integer", "null"), "an integer or NULL")
REAL = Kind(("real",), "a real")  # REAL affinity stores an integer as a real
REAL_OR_NULL = Kind(("real", "null"), "a real or NULL")
TEXT = Kind(("text",), "a text")
TEXT_OR_NULL = Kind(("text", "null"), "a text or NULL")
FLAG = Kind(("integer",), "0 or 1", flag=True)

COLUMNS: dict[str, tuple[tuple[str, ...], dict[str, Kind]]] = {
    "tasks": (
        ("id",),
        {
            "id": TEXT, "name": TEXT, "definition": TEXT, "status": TEXT,
            "next_run_at": REAL_OR_NULL, "attempt": INTEGER, "run_count": INTEGER,
            "failure_count": INTEGER, "last_error": TEXT_OR_NULL, "running": FLAG,
            "failed_seq": INTEGER_OR_NULL, "priority": INTEGER, "version": INTEGER,
            "waited": REAL_OR_NULL, "slot": REAL_OR_NULL, "slot_due": REAL_OR_NULL,
        },
    ),
    "records": (
        ("task_id", "seq"),
        {
            "task_id": TEXT, "seq": INTEGER, "attempt": INTEGER, "due": REAL, "slot": REAL,
            "worker": INTEGER, "started": REAL, "finished": REAL, "ok": FLAG,
            "error": TEXT_OR_NULL, "timed_out": FLAG, "misfire": TEXT_OR_NULL,
            "result": TEXT_OR_NULL, "token": INTEGER_OR_NULL, "name": TEXT_OR_NULL,
            "node": TEXT_OR_NULL,
        },
    ),
    "leases": (
        ("task_id",),
        {
            "task_id": TEXT, "slot": REAL, "attempt": INTEGER, "token": INTEGER,
            "holder": TEXT, "expires_at": REAL,
        },
    ),
    "counters": (("name",), {"name": TEXT, "value": INTEGER}),
}  # fmt: skip
"""Each table a store reads values from: the columns naming a row, and the kind of each
column (the schemas' types, :mod:`lldsched.stores.sqlite_schema`,
:data:`~lldsched.stores.sqlite_shared.SHARED_SCHEMA`).  Checked for every row at open
(:meth:`~lldsched.stores.sqlite_schema.FileFormat._check_values`, all but ``records``),
and a task's row or a record as it is read (:func:`snapshot_of`, :func:`record_of`)."""

AT_OPEN = ("tasks", "leases", "counters")
"""The tables whose every row is checked at open: one row per task or fewer.  Not
``records``, which holds up to ``retention`` rows per task (a thousand by default: 20
million for 20,000 tasks, a scan of seconds); a record is checked as it is read."""


def misread(
    table: str, key: Sequence[object], row: Sequence[object], columns: Sequence[str]
) -> list[str]:
    """Each value of ``row`` (the values of ``columns`` of ``table``, a row named by
    ``key``, the values of its key columns) that is not of its column's kind
    (:data:`COLUMNS`), said as ``"table tasks, row id='a', column attempt holds the text
    'three', where the store writes an integer"``; none: an empty list."""
    names, kinds = COLUMNS[table]
    said: list[str] = []
    for column, value in zip(columns, row, strict=True):
        kind = kinds[column]
        if not kind.holds(value):
            where = " ".join(f"{name}={part!r}" for name, part in zip(names, key, strict=True))
            said.append(
                f"table {table}, row {where}, column {column} holds the "
                f"{_TYPEOF.get(type(value), type(value).__name__)} {value!r}, "
                f"where the store writes {kind.said}"
            )
    return said


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
    "r.finished, r.ok, r.error, r.timed_out, r.misfire, r.result, r.token, r.node, r.seq"
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


_STATE = (  # the state columns of TASK_COLUMNS, as snapshot_of reads them
    "next_run_at", "attempt", "run_count", "failure_count", "last_error", "running", "waited",
    "slot",
)  # fmt: skip


def snapshot_of(
    task_id: str, definition: str, status: str, state: list[Any], *, task: Task | None = None
) -> TaskSnapshot:
    """The snapshot a row describes; ``task``: the definition to give it instead of the
    row's (one this process cannot load: :class:`~lldsched.stores.codec.Unreadable`).
    A status this release does not know is an
    :class:`~lldsched.stores.codec.UnknownStatus`, whatever ``task``."""
    status_value = status_of(task_id, status)  # UnknownStatus: a newer release's
    said = misread("tasks", (task_id,), state, _STATE)
    if said:  # a row edited by hand, or written by another tool, since the open
        raise BadValue(task_id, said)
    next_run_at, attempt, run_count, failure_count, last_error, running, waited, slot = state
    successes = run_count - failure_count  # a Window's max_runs counts these
    if task is None:
        task = decode_task(task_id, definition, runs=successes)
    return TaskSnapshot(
        task, status_value, next_run_at, attempt, run_count, failure_count, last_error,
        bool(running), waited, slot,
    )  # fmt: skip


_RECORD = (  # the columns of RECORD_COLUMNS, as record_of reads them
    "task_id", "name", "attempt", "due", "slot", "worker", "started", "finished", "ok", "error",
    "timed_out", "misfire", "result", "token", "node",
)  # fmt: skip


def record_of(row: tuple[Any, ...]) -> ExecutionRecord:
    """The record a row of :data:`RECORD_COLUMNS` describes; :class:`BadValue` naming each
    value the store cannot read (:func:`misread`)."""
    (
        task_id, name, attempt, due, slot, worker, started, finished, ok, error, timed_out,
        misfire, result, token, node, seq,
    ) = row  # fmt: skip
    # Every column at the cost of one test each (a history read is thousands of rows);
    # misread, which says which and how, only for a row that fails one.
    if not (
        type(due) is float and type(slot) is float and type(started) is float
        and type(finished) is float and type(attempt) is int and type(worker) is int
        and type(ok) is int and 0 <= ok <= 1
        and type(timed_out) is int and 0 <= timed_out <= 1
        and type(task_id) is str and (name is None or type(name) is str)
        and (error is None or type(error) is str) and (misfire is None or type(misfire) is str)
        and (result is None or type(result) is str) and (token is None or type(token) is int)
        and (node is None or type(node) is str)
    ):  # fmt: skip
        said = misread("records", (task_id, seq), row[:-1], _RECORD)
        if said:
            raise BadValue(task_id, said)
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
