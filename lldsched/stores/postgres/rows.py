"""The rows a PostgreSQL store writes and reads back.

Written: a task's state columns and a record's columns, as parameters, shared by the
single statements (:mod:`lldsched.stores.postgres`) and the batched settle
(:mod:`lldsched.stores.postgres.batch`), which unnests them as arrays.  Read: a
snapshot, its definition and a record, from the columns the store's queries select
(``SNAPSHOT_COLUMNS``, :mod:`lldsched.stores.postgres.sql`).

Refused before a definition is written (:func:`check_keepable`): an id over the bound on
every store, which PostgreSQL keeps as an index key, a ``ValidationError`` naming it,
where psycopg's words named neither the task nor the value (text no durable store keeps,
a NUL or a lone surrogate, is refused as the definition is encoded:
``stores.codec.check_text``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lldsched.model import ExecutionRecord
from lldsched.persistence import Task, TaskSnapshot
from lldsched.storechecks import check_id_size
from lldsched.stores.rowvalues import record_from, resume_at, snapshot_from

__all__ = [
    "check_keepable",
    "record_of",
    "record_row",
    "snapshot_of",
    "state_row",
]


def check_keepable(task: Task) -> None:
    """Refuse a task whose id is over :data:`~lldsched.storechecks.MAX_ID_BYTES`, the
    bound on every store (PostgreSQL keeps an id as an index key): a registration checked
    it already (``check_task_id``); this is the store's own guard, for a definition
    written to it directly or with an id no registration checked (a row another store
    kept).  Asked when a definition is written (a registration, a replacement), the one
    time the id and name reach the database new, and for a replacement during a run,
    written alone as it is made (``PostgresWrites._redefine``); text no durable store
    keeps (a NUL, a lone surrogate) is :func:`~lldsched.stores.codec.check_text`'s, asked
    as the definition is encoded."""
    check_id_size(task.id, nothing="written")


def state_row(snapshot: TaskSnapshot) -> dict[str, Any]:
    """The task row's state columns (not its definition) that ``snapshot`` sets, but for
    ``slot``, ``blocked_due`` and ``blocked_slot``, which a settle never sets
    (:data:`~lldsched.stores.postgres.lease_sql.SETTLE`, whose arrays these are); every other
    write adds them (``PostgresWrites._write``)."""
    return {
        "id": snapshot.task.id,
        "status": snapshot.status.value,
        "next_run_at": snapshot.next_run_at,
        "attempt": snapshot.attempt,
        "run_count": snapshot.run_count,
        "failure_count": snapshot.failure_count,
        "last_error": snapshot.last_error,
        "running": snapshot.running,
        "waited": snapshot.waited,
        "resume_at": resume_at(snapshot),  # read with waited: rowvalues.plan_ends
        "grid": snapshot.grid,
    }


def record_row(record: ExecutionRecord) -> dict[str, Any]:
    """A record's columns: its fields (the task's name as the run had it: a rename
    leaves it), the misfire outcome as its text."""
    row = record._asdict()
    row["misfire"] = None if record.misfire is None else record.misfire.value
    return row


def snapshot_of(row: Sequence[Any], task: Task | None = None) -> TaskSnapshot:
    """The snapshot a row of SNAPSHOT_COLUMNS describes (``task``: its definition, if it
    is decoded already, or the one this process has of a row it cannot load).  Every
    value is checked by :func:`~lldsched.stores.rowvalues.snapshot_from`, the one rule of both
    durable stores' rows: an :class:`~lldsched.stores.unreadable.UnknownStatus` for a status
    this release does not know (whatever ``task``), a
    :class:`~lldsched.stores.unreadable.BadValue` naming each value out of its range (a
    negative attempt, a NaN or infinite due instant; what is kept beside the state, a
    priority of 7, a NaN ``slot_due``, and its lease's ``slot, attempt, token, holder,
    expires_at``, all NULL for none: :func:`~lldsched.stores.rowvalues.check_kept`, as
    SQLite's rows), before the definition is decoded.  Before, the lease was not read: a
    NaN or infinite expiry, never past on the database's clock, held the task for good
    without a word."""
    return snapshot_from(row[0], row[1], row[2], row[3:15], task=task, kept=row[15:24])


record_of = record_from
"""The record a row of RECORD_COLUMNS describes (:func:`~lldsched.stores.rowvalues.record_from`,
both stores' rule: an outcome this release does not know, a NaN instant, a BadValue)."""
