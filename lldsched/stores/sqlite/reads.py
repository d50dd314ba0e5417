"""What a :class:`~lldsched.stores.sqlite.SqliteTaskStore` reads back: the tasks a
scheduler restores at start (:meth:`SqliteReads.load_all`) and what recovery and
people read (the :class:`~lldsched.persistence.HistoryStore` reads: a task's latest
snapshot, its records, the dead letter, the count of tasks).

:class:`SqliteReads` is mixed into the store, as
:class:`~lldsched.stores.sqlite.coordinated.CoordinatedMethods` is; the store's module
opens the file and holds its writes.  ``load_all`` reads every row before it raises
(:func:`~lldsched.stores.unreadable.load_each`: one :class:`~lldsched.errors.StoreError`
naming each task that cannot be loaded, nothing written; a shared store's scheduler
asks for such a task to be left out instead, to the processes that can load it), then
stores again under the callable's own path a definition that named it by an alias
(:func:`~lldsched.stores.codec.renamed`).  Each read, and that rewrite, goes through
the store's ``_using``, where SQLite's own errors become a ``StoreError``.
"""

from __future__ import annotations

import logging

from lldsched.errors import StoreError
from lldsched.logs import STORE
from lldsched.model import ExecutionRecord
from lldsched.persistence import TaskSnapshot, finished
from lldsched.storechecks import id_asked, records_asked
from lldsched.stores.codec import renamed
from lldsched.stores.sqlite.parts import SqliteParts
from lldsched.stores.sqlite.rows import RECORD_COLUMNS, TASK_COLUMNS, TASKS, fetch, immediate
from lldsched.stores.sqlite.rows import record_of as _record
from lldsched.stores.sqlite.rows import snapshot_of as _snapshot
from lldsched.stores.unreadable import load_each

__all__ = ["SqliteReads"]

log = logging.getLogger(STORE)


class SqliteReads(SqliteParts):
    """The store's reads (restore, history): mixed into the store."""

    def load_all(self, *, leave_out: bool = False) -> list[TaskSnapshot]:
        """Every stored task, in the order first saved, its callable imported.

        :class:`StoreError` naming every task that cannot be loaded (a callable that
        no longer imports, a definition that is no longer valid); nothing is written.
        With ``leave_out`` (a shared store, at its scheduler's start) such a task is left
        out instead, said once and listed by :meth:`unloaded`, for the processes that
        can load it (docs/CLUSTER.md, "Rolling deploys").
        Once all loaded, a definition naming its callable by an alias (a function
        renamed, its old name kept) is stored under the callable's own path
        (:func:`~lldsched.stores.codec.renamed`).
        """
        with self._using("read the tasks") as connection:
            rows = fetch(connection, f"SELECT {TASK_COLUMNS} FROM {TASKS} ORDER BY t.position")
        unreadable = self._coordinated().unreadable if leave_out else None
        snapshots, kept = load_each(
            rows,
            lambda row: _snapshot(row[0], row[1], row[2], list(row[3:])),  # id, definition, status
            store=repr(self.path),
            delete="SqliteTaskStore(path).delete(task_id)",
            unreadable=unreadable,
        )
        moved = renamed(snapshots, [row[1] for row in kept], store=repr(self.path))
        with self._lock:
            if moved:  # each row only if no one rewrote it since (a shared store's other writers)
                try:
                    # Through _using, as every call: a transaction another call left open
                    # is rolled back first, or the rewrite refused.  Before, it ran as a
                    # savepoint of that transaction, rolled back with it, unsaid.
                    with (
                        self._using("store the moved callables") as connection,
                        immediate(connection, self._gate),
                    ):
                        connection.executemany(
                            "UPDATE tasks SET definition = ? WHERE id = ? AND definition = ?",
                            moved,
                        )
                except StoreError as exc:  # the rows keep the alias, which still imports
                    log.warning("cannot store the moved callables in %r: %s", self.path, exc)
            self._defined.update(
                (snapshot.task.id, snapshot.task)
                for snapshot in snapshots
                if not finished(snapshot)
            )
        return snapshots

    def get(self, task_id: str) -> TaskSnapshot | None:
        """The latest snapshot of ``task_id``, or None."""
        id_asked(task_id, "get")
        with self._using("read task", task_id) as connection:
            rows = fetch(
                connection, f"SELECT {TASK_COLUMNS} FROM {TASKS} WHERE t.id = ?", (task_id,)
            )
        if not rows:
            return None
        (row,) = rows
        _, definition, status, *state = row
        return _snapshot(task_id, definition, status, state)

    def records(self, task_id: str | None = None) -> list[ExecutionRecord]:
        """The records kept for ``task_id`` (every task's when None), oldest first;
        at most ``retention`` per task."""
        task_id = records_asked(task_id)
        keep = -1 if self.retention is None else self.retention  # LIMIT -1: no limit
        with self._using("read the records") as connection:
            if task_id is not None:
                rows = fetch(
                    connection,
                    f"SELECT {RECORD_COLUMNS} FROM records r JOIN tasks t ON t.id = r.task_id "
                    "WHERE r.task_id = ? ORDER BY r.seq DESC LIMIT ?",
                    (task_id, keep),
                )
                rows.reverse()
            else:
                rows = fetch(
                    connection,
                    f"SELECT {RECORD_COLUMNS} FROM ("
                    "  SELECT *, row_number() OVER (PARTITION BY task_id ORDER BY seq DESC) AS n"
                    "  FROM records) r JOIN tasks t ON t.id = r.task_id "
                    "WHERE ? < 0 OR r.n <= ? ORDER BY r.seq",
                    (keep, keep),
                )
        return [_record(row) for row in rows]

    def dead_letter(self) -> list[str]:
        """Ids of FAILED tasks, in the order they failed."""
        with self._using("read the dead letter") as connection:
            rows = connection.execute(
                "SELECT id FROM tasks WHERE status = 'failed' ORDER BY failed_seq, position"
            )
            return [task_id for (task_id,) in rows]

    def __len__(self) -> int:
        with self._using("count the tasks") as connection:
            (count,) = connection.execute("SELECT count(*) FROM tasks").fetchone()
            return int(count)
