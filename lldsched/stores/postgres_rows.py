"""The rows a PostgreSQL store writes and reads back.

Written: a task's state columns and a record's columns, as parameters, shared by the
single statements (:mod:`lldsched.stores.postgres`) and the batched settle
(:mod:`lldsched.stores.postgres_batch`), which unnests them as arrays.  Read: a
snapshot, its definition and a record, from the columns the store's queries select
(``SNAPSHOT_COLUMNS``, :mod:`lldsched.stores.postgres_sql`).

Refused before a definition is written (:func:`check_keepable`): an id over the bound on
every store, which PostgreSQL keeps as an index key, a ``ValidationError`` naming it,
where psycopg's words named neither the task nor the value (text no durable store keeps,
a NUL or a lone surrogate, is refused as the definition is encoded:
``stores.codec.check_text``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lldsched.model import ExecutionRecord, Outcome
from lldsched.persistence import Task, TaskSnapshot, check_id_size
from lldsched.stores.codec import decode_task, status_of

__all__ = [
    "check_keepable",
    "definition_of",
    "record_of",
    "record_row",
    "snapshot_of",
    "state_row",
]


def check_keepable(task: Task) -> None:
    """Refuse a task whose id is over :data:`~lldsched.persistence.MAX_ID_BYTES`, the
    bound on every store (PostgreSQL keeps an id as an index key): a registration checked
    it already (``check_task_id``); this is the store's own guard, for a definition
    written to it directly or with an id no registration checked (a row another store
    kept).  Asked when a definition is written (a registration, a replacement), the one
    time the id and name reach the database new, and for a replacement during a run this
    node holds when it is made, before the run's settle writes it
    (``PostgresTaskStore._check_redefined``); text no durable store keeps (a NUL, a lone
    surrogate) is :func:`~lldsched.stores.codec.check_text`'s, asked as the definition is
    encoded."""
    check_id_size(task.id, nothing="written")


def state_row(snapshot: TaskSnapshot) -> dict[str, Any]:
    """The task row's state columns (not its definition) that ``snapshot`` sets, but for
    ``slot``, which a settle never sets (:data:`~lldsched.stores.postgres_sql.SETTLE`,
    whose arrays these are); every other write adds it
    (``PostgresTaskStore._write``)."""
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
    }


def record_row(record: ExecutionRecord) -> dict[str, Any]:
    """A record's columns: its fields (the task's name as the run had it: a rename
    leaves it), the misfire outcome as its text."""
    row = record._asdict()
    row["misfire"] = None if record.misfire is None else record.misfire.value
    return row


def snapshot_of(row: Sequence[Any], task: Task | None = None) -> TaskSnapshot:
    """The snapshot a row of SNAPSHOT_COLUMNS describes (``task``: its definition, decoded);
    a status this release does not know is an :class:`~lldsched.stores.codec.UnknownStatus`,
    whatever ``task``."""
    task_id, _, status, next_run_at, attempt, run_count, failures, error, running, waited, slot = (
        row[:11]
    )
    status_value = status_of(task_id, status)  # UnknownStatus: a newer release's
    if task is None:
        task = definition_of(row)
    return TaskSnapshot(
        task, status_value, next_run_at, attempt, run_count, failures, error, bool(running),
        waited, slot,
    )  # fmt: skip


def definition_of(row: Sequence[Any]) -> Task:
    """The definition of a row of SNAPSHOT_COLUMNS, decoded: a ``Window``'s ``max_runs``
    counts its successful runs (run count minus failures)."""
    return decode_task(row[0], row[1], runs=row[5] - row[6])


def record_of(row: Sequence[Any]) -> ExecutionRecord:
    """The record a row of the records table describes."""
    task_id, name, attempt, due, slot, worker, started, finished, ok, error, *rest = row
    timed_out, misfire, result, token, node = rest
    return ExecutionRecord.of(
        task_id=task_id, name=name, attempt=attempt, due=due, slot=slot, worker=worker,
        started=started, finished=finished, ok=bool(ok), error=error,
        timed_out=bool(timed_out), misfire=None if misfire is None else Outcome(misfire),
        result=result, token=token, node=node,
    )  # fmt: skip
