"""The rows of an SQLite store: the statements that write a task's row and a record, and
the conversions from rows back to values, shared by its unshared and shared modes
(:mod:`lldsched.stores.sqlite`, :mod:`lldsched.stores.sqlite.coordinated`,
:mod:`lldsched.stores.sqlite.shared_writes`), and the
:class:`~lldsched.errors.StoreError` an SQLite error becomes (:func:`failure`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

from lldsched.errors import StoreError
from lldsched.persistence import FINISHED_STATUSES, Task, TaskSnapshot
from lldsched.stores.rowvalues import Undecodable, record_from, resume_at, said, snapshot_from
from lldsched.stores.sqlite.gate import WriteGate

__all__ = [
    "AT_OPEN",
    "AT_SHARED_OPEN",
    "BLOCKED",
    "COLUMNS",
    "COUNT_UNFINISHED",
    "FINISHED",
    "INSERT_RECORD",
    "KEPT_COLUMNS",
    "LAST_FAILED",
    "RECORD_COLUMNS",
    "RESUME_AT",
    "SLOT",
    "TASKS",
    "TASK_COLUMNS",
    "UPDATE",
    "UPSERT",
    "Kind",
    "begin",
    "failure",
    "fetch",
    "immediate",
    "misread",
    "record_of",
    "rollback",
    "snapshot_of",
    "within",
    "written",
]


class Kind(NamedTuple):
    """What the store writes in a column: the SQLite storage classes (``typeof``) of its
    values.  SQLite's type affinity stores a
    well-formed numeric text as its number (``'2'`` in an ``INTEGER`` column is 2), and
    keeps any other text as text (``'three'``, an ISO date): what is not of its kind is
    a value the store cannot read (:func:`misread`)."""

    classes: tuple[str, ...]
    said: str  # as the error says it: "an integer"

    def holds(self, value: object) -> bool:
        """Whether ``value``, as the driver read it, is one of this kind."""
        return _TYPEOF.get(type(value)) in self.classes

    def wrong(self, column: str) -> str:
        """The SQL condition true of a row whose ``column`` is not of this kind."""
        classes = ", ".join(f"'{name}'" for name in self.classes)
        return f"typeof({column}) NOT IN ({classes})"


_TYPEOF = {int: "integer", float: "real", str: "text", bytes: "blob", type(None): "null"}
INTEGER = Kind(("integer",), "an integer")
INTEGER_OR_NULL = Kind(("integer", "null"), "an integer or NULL")
REAL = Kind(("real",), "a real")  # REAL affinity stores an integer as a real
REAL_OR_NULL = Kind(("real", "null"), "a real or NULL")
TEXT = Kind(("text",), "a text")

COLUMNS: dict[str, tuple[tuple[str, ...], dict[str, Kind]]] = {
    "tasks": (
        ("id",),
        {
            "id": TEXT, "name": TEXT, "definition": TEXT, "failed_seq": INTEGER_OR_NULL,
            "priority": INTEGER, "version": INTEGER, "slot_due": REAL_OR_NULL,
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
"""The values of each table a store uses without decoding them, checked for every row
at open (:meth:`~lldsched.stores.sqlite.schema.FileFormat._check_values`): the columns
naming a row, and the kind of each column (the schemas' types,
:mod:`lldsched.stores.sqlite.schema`, :data:`~lldsched.stores.sqlite.shared.SHARED_SCHEMA`).
A task's status and state columns and a record's columns are not here: they are checked
as each row is read, type and range, by the one rule of both durable stores' rows
(:func:`~lldsched.stores.rowvalues.snapshot_from`, :func:`~lldsched.stores.rowvalues.record_from`),
so a row set wrong is refused by itself, the others read (docs/decisions/persistence.md, "A row
holding a value no write of lldsched makes")."""

AT_OPEN = tuple(COLUMNS)
"""The tables whose every row an unshared open checks: one row per task or fewer (not
``records``, which holds up to ``retention`` rows per task, a thousand by default: 20
million for 20,000 tasks, a scan of seconds)."""
AT_SHARED_OPEN = ("counters",)
"""The tables whose every row a shared open checks: the counters, which are no task's
(every claim and write of every process numbers from them).  A value of a task's row or
of its lease is that task's alone, refused as the row is read
(:func:`~lldsched.stores.rowvalues.check_kept`): the shared store leaves the task out and
runs the others, as for a bad state value (docs/DECISIONS.md)."""


def misread(
    table: str, key: Sequence[object], row: Sequence[object], columns: Sequence[str]
) -> list[str]:
    """Each value of ``row`` (the values of ``columns`` of ``table``, a row named by
    ``key``, the values of its key columns) that is not of its column's kind
    (:data:`COLUMNS`), said as ``"table tasks, row id='a', column attempt holds the text
    'three', where the store writes an integer"``; none: an empty list."""
    names, kinds = COLUMNS[table]
    where = " ".join(f"{name}={part!r}" for name, part in zip(names, key, strict=True))
    return [
        said(table, where, column, value, kinds[column].said)
        for column, value in zip(columns, row, strict=True)
        if not kinds[column].holds(value)
    ]


# A row's ``slot`` (TaskSnapshot.slot) is written with the due instant it belongs to
# (``slot_due``), and read only while the row is still due then: a process of an older
# release (a rolling upgrade) writes rows without it, and its settle or reschedule moves
# the due instant, which leaves the slot behind; read, a later run would record it.
SLOT = "CASE WHEN {t}slot_due = {t}next_run_at THEN {t}slot END"
"""The one rule reading a row's slot (``{t}``: the table's alias and a dot, or nothing)."""

# Whether a row's ``waited`` is the slot its plan resumes at (TaskSnapshot.resumes), or
# where its runs end (TaskSnapshot.until): the row keeps that slot itself (``resume_at``,
# written by rowvalues.resume_at), read with ``waited`` (rowvalues.plan_ends): a slot to resume at
# only while ``waited`` is still that slot.  A process of an older release (a rolling
# upgrade) writes ``waited`` without it: a slot of its own (a run_now's) is not read as one
# to resume at, and a row it never wrote reads neither, as before.
RESUME_AT = "{t}resume_at"
"""The column read as a row's ``resumes`` and ``until`` (``{t}`` as in :data:`SLOT`)."""

# The slot a BLOCKED row's wait was found blocked at, when a reschedule moved its next
# slot (TaskSnapshot.blocked_due, blocked_slot), is written with the row's version
# (``blocked_next``: every shared write makes a new one, sqlite/shared_writes; an
# unshared write keeps it) and read only while the row is still that version: a process
# of an older release (a rolling upgrade) writes rows without it, and the values an
# earlier wait left would name a slot that never waited in a wait it blocked later, the
# same due instant included (it released the wait before that instant, and found that
# slot blocked again).  Before, the values were read while the row was still due at the
# instant they were written with, which such a wait is.
BLOCKED = (
    "CASE WHEN {t}blocked_next = {t}version THEN {t}blocked_due END, "
    "CASE WHEN {t}blocked_next = {t}version THEN {t}blocked_slot END"
)
"""The one rule reading a row's ``blocked_due, blocked_slot`` (``{t}`` as in :data:`SLOT`)."""

# A statement that uses a parameter twice names its parameters (``:status``), passed as a
# mapping; the others take ``?`` in order.  Numbered ones (``?NNN``) made Python 3.12.0 to
# 3.12.3 warn at every call (a DeprecationWarning, an error under ``-W error``: CPython
# gh-117995), docs/decisions/platforms.md, "Python 3.12 and 3.13".
UPDATE = """
UPDATE tasks SET status = :status, next_run_at = :next_run_at, attempt = :attempt,
    run_count = :run_count, failure_count = :failure_count, last_error = :last_error,
    running = :running,
    failed_seq = CASE WHEN :status = 'failed' THEN coalesce(failed_seq, :failed_seq) END,
    waited = :waited, slot = :slot, slot_due = :next_run_at, resume_at = :resume_at,
    grid = :grid, blocked_due = :blocked_due, blocked_slot = :blocked_slot,
    blocked_next = version
WHERE id = :id
"""
UPSERT = """
INSERT INTO tasks (status, next_run_at, attempt, run_count, failure_count, last_error,
    running, failed_seq, id, waited, slot, slot_due, resume_at, grid, blocked_due,
    blocked_slot, blocked_next, name, definition, priority)
VALUES (:status, :next_run_at, :attempt, :run_count, :failure_count, :last_error, :running,
    CASE WHEN :status = 'failed' THEN :failed_seq END, :id, :waited, :slot, :next_run_at,
    :resume_at, :grid, :blocked_due, :blocked_slot, 0, :name, :definition,
    :priority)  -- blocked_next: the version's DEFAULT
ON CONFLICT (id) DO UPDATE SET name = excluded.name, definition = excluded.definition,
    priority = excluded.priority, status = excluded.status,
    next_run_at = excluded.next_run_at, attempt = excluded.attempt,
    run_count = excluded.run_count, failure_count = excluded.failure_count,
    last_error = excluded.last_error, running = excluded.running, waited = excluded.waited,
    slot = excluded.slot, slot_due = excluded.slot_due, resume_at = excluded.resume_at,
    grid = excluded.grid, blocked_due = excluded.blocked_due,
    blocked_slot = excluded.blocked_slot, blocked_next = tasks.version,
    failed_seq = CASE WHEN :status = 'failed' THEN coalesce(tasks.failed_seq, :failed_seq) END
"""
INSERT_RECORD = """
INSERT INTO records (task_id, seq, attempt, due, slot, worker, started, finished, ok, error,
    timed_out, misfire, result, token, name, node)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
LAST_FAILED = "SELECT coalesce(max(failed_seq), 0) FROM tasks WHERE typeof(failed_seq) = 'integer'"
"""The dead letter's last place: a ``failed_seq`` that is no integer (a row set wrong
past the store, refused as it is read) is passed over (``max`` took a text for it, and
the next place was a text plus one)."""
KEPT_COLUMNS = (
    "t.failed_seq, t.priority, t.version, t.slot_due, "
    "k.slot, k.attempt, k.token, k.holder, k.expires_at"
)
"""What the store keeps beside a task's state (and its lease's, ``k``: NULL for none),
checked as the row is read (:func:`~lldsched.stores.rowvalues.check_kept`), after the state."""
TASKS = "tasks t LEFT JOIN leases k ON k.task_id = t.id"
"""The table :data:`TASK_COLUMNS` reads: a task's row and its lease, if any."""
TASK_COLUMNS = (  # a task row as snapshot_of reads it, FROM TASKS
    "t.id, t.definition, t.status, t.next_run_at, t.attempt, t.run_count, "
    f"t.failure_count, t.last_error, t.running, t.waited, {SLOT.format(t='t.')}, "
    f"{RESUME_AT.format(t='t.')}, t.grid, {BLOCKED.format(t='t.')}, " + KEPT_COLUMNS
)
RECORD_COLUMNS = (  # the name the run had; a record written before schema 5 has none kept
    "r.task_id, coalesce(r.name, t.name), r.attempt, r.due, r.slot, r.worker, r.started, "
    "r.finished, r.ok, r.error, r.timed_out, r.misfire, r.result, r.token, r.node, r.seq"
)


def written(
    snapshot: TaskSnapshot, *, status: str, failed_seq: int, definition: str | None
) -> tuple[str, dict[str, object]]:
    """The statement that writes ``snapshot``'s row and its parameters: :data:`UPDATE`,
    or :data:`UPSERT` with ``definition`` when given (``status``: the status written;
    ``failed_seq``: the dead letter's next place, kept only by a FAILED row)."""
    task = snapshot.task
    state: dict[str, object] = {
        "status": status, "next_run_at": snapshot.next_run_at, "attempt": snapshot.attempt,
        "run_count": snapshot.run_count, "failure_count": snapshot.failure_count,
        "last_error": snapshot.last_error, "running": snapshot.running,
        "failed_seq": failed_seq, "id": task.id, "waited": snapshot.waited,
        "slot": snapshot.slot, "resume_at": resume_at(snapshot), "grid": snapshot.grid,
        "blocked_due": snapshot.blocked_due, "blocked_slot": snapshot.blocked_slot,
    }  # fmt: skip
    if definition is None:
        return UPDATE, state
    return UPSERT, state | {"name": task.name, "definition": definition, "priority": task.priority}


def fetch(
    connection: sqlite3.Connection,
    statement: str,
    parameters: Sequence[object] | Mapping[str, object] = (),
) -> list[Any]:
    """Every row ``statement`` reads.  A text that is not UTF-8 (SQLite keeps any bytes as
    text: a row written by another tool, or damaged) failed the whole read in the driver,
    every task's, naming the column and no task; read again then, each such text is an
    :class:`~lldsched.stores.rowvalues.Undecodable`, which the row's check names with its task
    and column (:func:`~lldsched.stores.rowvalues.snapshot_from`,
    :func:`~lldsched.stores.rowvalues.record_from`) and the other rows are read.  Nothing is
    paid for it while every text decodes."""
    try:
        return connection.execute(statement, parameters).fetchall()
    except sqlite3.OperationalError as exc:
        if not str(exc).startswith("Could not decode to UTF-8"):
            raise
    connection.text_factory = _text_or_bytes
    try:
        return connection.execute(statement, parameters).fetchall()
    finally:
        connection.text_factory = str


def _text_or_bytes(raw: bytes) -> str | Undecodable:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return Undecodable(raw)


def failure(
    path: str, doing: str, error: sqlite3.Error, *, because: str | None = None
) -> StoreError:
    """The :class:`StoreError` an SQLite store raises (``from error``) when SQLite failed
    ``doing`` (``"save task 'a'"``, ``"claim runs"``) on the file at ``path``: the file
    and the operation named, what ``because`` says of it if given (the likely cause,
    :func:`~lldsched.stores.sqlite.file.unopenable`), then SQLite's own words
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
def immediate(
    connection: sqlite3.Connection, gate: WriteGate | None = None
) -> Iterator[sqlite3.Connection]:
    """One write transaction (``BEGIN IMMEDIATE``: the write lock taken at once),
    committed at the end of the block, rolled back if the block (or the commit) raises.
    ``gate``: a shared store's (:mod:`lldsched.stores.sqlite.gate`), passed before the
    ``BEGIN`` and let go after the end, so writers of all processes take the lock in
    turn; its :class:`~lldsched.stores.sqlite.gate.WriteLockTimeout` is an
    ``sqlite3.OperationalError``, as SQLite's "database is locked" is.
    Inside a transaction already open (a verb's, ``SqliteHolds.verb_held``, which
    holds the write lock, and the gate, from its read of the change feed to its writes):
    a savepoint of it, released at the end, rolled back to if the block raises."""
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
    if gate is None:  # an unshared store's writes: as they were
        connection.execute("BEGIN IMMEDIATE")
    else:
        begin(connection, gate)
    try:
        yield connection
        connection.execute("COMMIT")
    except BaseException:
        rollback(connection)
        raise
    finally:
        if gate is not None:
            gate.release()


def begin(connection: sqlite3.Connection, gate: WriteGate | None) -> None:
    """``BEGIN IMMEDIATE``, after passing ``gate`` (if any): the caller lets the gate go
    after its ``COMMIT`` or ``ROLLBACK``.  If it raises, nothing is held."""
    if gate is None:
        connection.execute("BEGIN IMMEDIATE")
        return
    left = gate.acquire()
    try:
        if left >= gate.busy:  # the usual case: inside the gate, every step counts
            connection.execute("BEGIN IMMEDIATE")
        else:  # it blocked for the gate: SQLite's wait gets what is left of the timeout
            with within(connection, left, gate.busy):
                connection.execute("BEGIN IMMEDIATE")
    except BaseException:
        gate.release()
        raise


@contextmanager
def within(connection: sqlite3.Connection, left: float, busy: float) -> Iterator[None]:
    """SQLite's busy handler waits at most ``left`` seconds inside the block, ``busy``
    (the connection's own) again after it.  A gated write waited for the gate first;
    SQLite's lock is then free unless a writer that takes no gate holds it (an older
    release, the ``sqlite3`` shell), and SQLite's wait for it gets what the gate left of
    the store's timeout: the two waits together stay within it.  A shared store's
    connection waits ``WriteGate.busy``, its timeout
    less the gate's patience, so a write that got the gate within its patience
    (``left >= busy``, every write but those that blocked for it) costs nothing more."""
    if left >= busy:
        yield
        return
    connection.execute(f"PRAGMA busy_timeout = {int(left * 1000)}")
    try:
        yield
    finally:
        connection.execute(f"PRAGMA busy_timeout = {int(busy * 1000)}")


def snapshot_of(
    task_id: str, definition: str, status: str, state: list[Any], *, task: Task | None = None
) -> TaskSnapshot:
    """The snapshot a row describes (its state: the columns of :data:`TASK_COLUMNS` after
    the status, :data:`KEPT_COLUMNS` last); ``task``: the definition to give it instead
    of the row's (one this
    process cannot load: :class:`~lldsched.stores.unreadable.Unreadable`).  Every value is
    checked by :func:`~lldsched.stores.rowvalues.snapshot_from`, the one rule of both
    durable stores' rows: an :class:`~lldsched.stores.unreadable.UnknownStatus` for a status
    this release does not know (whatever ``task``), a
    :class:`~lldsched.stores.unreadable.BadValue` naming each value of the wrong type or out
    of its range."""
    return snapshot_from(task_id, definition, status, state[:12], task=task, kept=state[12:])


record_of = record_from
"""The record a row of :data:`RECORD_COLUMNS` describes
(:func:`~lldsched.stores.rowvalues.record_from`, both stores' rule)."""


FINISHED = tuple(status.value for status in FINISHED_STATUSES)
"""The statuses of a finished task, as stored (with no run in flight:
:func:`lldsched.persistence.finished`)."""

COUNT_UNFINISHED = (
    "SELECT task_id, count(*) FROM records WHERE task_id NOT IN "
    f"(SELECT id FROM tasks WHERE status IN {FINISHED!r} AND NOT running) GROUP BY task_id"
)
"""The records kept per task, of the tasks :func:`lldsched.persistence.finished` is not
true of."""
