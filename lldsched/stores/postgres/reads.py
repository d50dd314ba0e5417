"""What a :class:`~lldsched.stores.postgres.PostgresTaskStore` reads back: the tasks a
scheduler restores at start (:meth:`PostgresReads.load_all`) and what recovery and
people read (the :class:`~lldsched.persistence.HistoryStore` reads: a task's latest
snapshot, its records, the dead letter, the count of tasks).

:class:`PostgresReads` is mixed into the store, as
:class:`~lldsched.stores.postgres.coordinated.PostgresCoordination` is; the store's
writes are :class:`~lldsched.stores.postgres.writes.PostgresWrites`'.  ``load_all``
reads every row before it raises (:func:`~lldsched.stores.unreadable.load_each`: one
:class:`~lldsched.errors.StoreError` naming each task that cannot be loaded, nothing
written; a scheduler's start asks for such a task to be left out instead, to the nodes
that can load it), then stores again under the callable's own path a definition that
named it by an alias (:func:`~lldsched.stores.codec.renamed`).
"""

from __future__ import annotations

import logging
from typing import Any

from lldsched.errors import StoreError
from lldsched.logs import STORE
from lldsched.model import ExecutionRecord
from lldsched.persistence import TaskSnapshot
from lldsched.storechecks import id_asked, records_asked
from lldsched.stores.codec import renamed
from lldsched.stores.postgres import sql
from lldsched.stores.postgres.driver import psycopg
from lldsched.stores.postgres.parts import PostgresParts
from lldsched.stores.postgres.rows import record_of, snapshot_of
from lldsched.stores.unreadable import load_each

__all__ = ["PostgresReads", "one_row"]

log = logging.getLogger(STORE)


class PostgresReads(PostgresParts):
    """The store's reads (restore, history): mixed into the store."""

    def load_all(self, *, leave_out: bool = False) -> list[TaskSnapshot]:
        """Every stored task, in the order first saved, its callable imported;
        :class:`StoreError` naming every task that cannot be loaded (nothing written).
        With ``leave_out`` (a threaded scheduler's start) such a task (another release's
        action, in a rolling deploy) is left out instead, said once and listed by
        :meth:`unloaded`, for the nodes that can load it (docs/CLUSTER.md, "Rolling
        deploys").
        A definition naming its callable by an alias (a function renamed, its old name
        kept) is then stored under the callable's own path
        (:func:`~lldsched.stores.codec.renamed`)."""
        with self._using("read the tasks") as connection:
            rows = connection.execute(
                f"SELECT {sql.SNAPSHOT_COLUMNS} FROM {sql.TASKS} ORDER BY t.position"
            ).fetchall()
        snapshots, kept = load_each(
            rows,
            self._read_snapshot,
            store=repr(self.dsn),
            delete="PostgresTaskStore(dsn).delete(task_id)",
            unreadable=self._unreadable if leave_out else None,
        )
        moved = renamed(snapshots, [row[1] for row in kept], store=repr(self.dsn))
        if moved:  # each row only if no node rewrote it since; the same callable: no feed
            try:
                with (
                    self._using("store the moved callables") as connection,
                    connection.transaction(),
                ):
                    connection.cursor().executemany(
                        "UPDATE tasks SET definition = %s WHERE id = %s AND definition = %s",
                        moved,
                    )
            except StoreError as exc:  # the rows keep the alias, which still imports
                log.warning("cannot store the moved callables in %r: %s", self.dsn, exc)
        with self._lock:
            for snapshot, row in zip(snapshots, kept, strict=True):
                self._defined[snapshot.task.id] = snapshot.task
                self._seen[snapshot.task.id] = row[-1]
        return snapshots

    def get(self, task_id: str) -> TaskSnapshot | None:
        """The latest snapshot of ``task_id``, or None."""
        id_asked(task_id, "get")
        with self._using("read task", task_id) as connection:
            row = connection.execute(
                f"SELECT {sql.SNAPSHOT_COLUMNS} FROM {sql.TASKS} WHERE t.id = %s", (task_id,)
            ).fetchone()
        return None if row is None else snapshot_of(row)

    def records(self, task_id: str | None = None) -> list[ExecutionRecord]:
        """The records kept for ``task_id`` (every task's when None), oldest first; at most
        ``retention`` per task."""
        task_id = records_asked(task_id)
        keep = self.retention
        with self._using(
            "read the records" if task_id is None else "read the records of task", task_id
        ) as connection:
            if task_id is not None:
                rows = connection.execute(
                    f"SELECT {sql.RECORD_COLUMNS} FROM records r JOIN tasks t ON t.id = r.task_id"
                    " WHERE r.task_id = %s ORDER BY r.seq DESC LIMIT %s",
                    (task_id, keep),
                ).fetchall()
                rows.reverse()
            else:
                rows = connection.execute(
                    f"SELECT {sql.RECORD_COLUMNS} FROM ("
                    "  SELECT *, pg_catalog.row_number() OVER "
                    "    (PARTITION BY task_id ORDER BY seq DESC) AS n"
                    "  FROM records) r JOIN tasks t ON t.id = r.task_id "
                    "WHERE %(keep)s::bigint IS NULL OR r.n <= %(keep)s ORDER BY r.seq",
                    {"keep": keep},
                ).fetchall()
        return [record_of(row) for row in rows]

    def dead_letter(self) -> list[str]:
        """Ids of FAILED tasks, in the order they failed."""
        with self._using("read the dead letter") as connection:
            rows = connection.execute(
                "SELECT id FROM tasks WHERE status = 'failed' ORDER BY failed_seq, position"
            ).fetchall()
        return [task_id for (task_id,) in rows]

    def __len__(self) -> int:
        with self._using("count the tasks") as connection:
            (count,) = one_row(connection.execute("SELECT pg_catalog.count(*) FROM tasks"))
        return int(count)


def one_row(cursor: psycopg.Cursor[tuple[Any, ...]]) -> tuple[Any, ...]:
    """The one row of an aggregate query."""
    row = cursor.fetchone()
    if row is None:  # pragma: no cover - aggregate queries always return a row
        raise StoreError("the PostgreSQL store returned no row")
    return row
