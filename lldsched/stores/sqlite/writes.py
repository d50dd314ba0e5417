"""The SQLite store's :class:`~lldsched.persistence.TaskStore` writes: ``save``,
``save_all``, ``delete``, ``resave`` and ``purge``, mixed into
:class:`~lldsched.stores.sqlite.SqliteTaskStore` (:class:`SqliteWrites`).

An unshared store writes each here, one transaction a call, and keeps the caches the
writes read (the definitions its rows hold, the records each task keeps): a finished
task is forgotten.  In shared mode ``save``, ``save_all`` and ``resave`` hand over to
:mod:`lldsched.stores.sqlite.shared_writes`; ``delete`` and ``purge`` write the removal
the other processes' feeds read, and ``purge`` leaves a row another process wrote or
leases.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence

from lldsched.model import ExecutionRecord, TaskStatus
from lldsched.persistence import TaskSnapshot, finished
from lldsched.storechecks import id_asked
from lldsched.stores.codec import check_written, encode_task
from lldsched.stores.sqlite.parts import SqliteParts
from lldsched.stores.sqlite.rows import INSERT_RECORD, immediate, written
from lldsched.stores.sqlite.shared import bump

__all__ = ["SqliteWrites"]


class SqliteWrites(SqliteParts):
    """The SQLite store's ``TaskStore`` writes (see the module docstring)."""

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        """Write the task's state (its definition too, the first time and whenever it
        changed) and ``record``, in one transaction.  :class:`ValidationError` if the
        definition cannot be stored (at registration: nothing is written, and nothing
        registered); :class:`ValidationError` too, nothing written, for text no durable
        store keeps (:func:`~lldsched.stores.codec.check_written`)."""
        check_written(snapshot, () if record is None else (record,))
        task = snapshot.task
        task_id = task.id
        if self._shared is not None:
            self._save_shared(snapshot, record)
            return
        with self._using("save task", task_id) as connection:
            statement, parameters = self._row(snapshot)
            if record is None:  # one statement: a transaction of its own
                connection.execute(statement, parameters)
            else:
                with immediate(connection):
                    connection.execute(statement, parameters)
                    self._seq += 1
                    count = self._append(connection, record, seq=self._seq)
                self._counts[task_id] = count
            self._saved(snapshot)

    def save_all(self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord]) -> None:
        """Write the task's state and every one of ``records`` (a run's, then the slots
        it skipped) in one transaction: all or none (:func:`~lldsched.storecalls.
        save_all`).  In shared mode a run's settle carries them, fenced by its token."""
        check_written(snapshot, records)
        if self._shared is not None:
            self._save_all_shared(snapshot, records)
            return
        with self._using("save task", snapshot.task.id) as connection:
            statement, parameters = self._row(snapshot)
            with immediate(connection):
                connection.execute(statement, parameters)
                for record in records:
                    self._seq += 1
                    count = self._append(connection, record, seq=self._seq)
                    self._counts[record.task_id] = count
            self._saved(snapshot)

    def _row(self, snapshot: TaskSnapshot) -> tuple[str, dict[str, object]]:
        """The statement that writes ``snapshot``'s row, and its parameters: its state,
        and its definition too the first time and whenever it changed (caller holds the
        lock; the dead letter's sequence moves on for a FAILED one)."""
        task = snapshot.task
        definition = None if self._defined.get(task.id) == task else encode_task(task)
        self._dead_seq += snapshot.status is TaskStatus.FAILED
        return written(
            snapshot,
            status=snapshot.status.value,
            failed_seq=self._dead_seq,
            definition=definition,
        )

    def _saved(self, snapshot: TaskSnapshot) -> None:
        """``snapshot`` was written (caller holds the lock): a finished task is forgotten
        (nothing runs it again: keep nothing of it in memory), any other remembered."""
        task = snapshot.task
        if finished(snapshot):
            self._defined.pop(task.id, None)
            self._counts.pop(task.id, None)
        else:
            self._defined[task.id] = task

    def _append(self, connection: sqlite3.Connection, record: ExecutionRecord, *, seq: int) -> int:
        """Insert ``record`` as number ``seq``, trimming its task's oldest records past the
        bound; returns how many the task keeps now (as far as this process knows: in
        shared mode the others' records are counted at the trim)."""
        task_id = record.task_id
        connection.execute(
            INSERT_RECORD,
            (
                task_id, seq, record.attempt, record.due, record.slot, record.worker,
                record.started, record.finished, record.ok, record.error, record.timed_out,
                record.misfire, record.result, record.token, record.name, record.node,
            ),
        )  # fmt: skip
        count = self._counts.get(task_id, 0) + 1
        if self.retention is not None and count > self.retention + self._slack:
            if self._shared is not None:  # the other processes append too: count them
                (count,) = connection.execute(
                    "SELECT count(*) FROM records WHERE task_id = ?", (task_id,)
                ).fetchone()
            connection.execute(  # trim in batches, not at every record
                "DELETE FROM records WHERE task_id = ? AND seq IN "
                "(SELECT seq FROM records WHERE task_id = ? ORDER BY seq LIMIT ?)",
                (task_id, task_id, max(0, count - self.retention)),
            )
            count = self.retention
        return count

    def delete(self, task_id: str) -> None:
        """Forget ``task_id``: its row and its records (in shared mode its lease too, and
        the other processes hear of it), whoever wrote the row last (a user's
        ``remove()``; a purge as a task retires is :meth:`purge`)."""
        id_asked(task_id, "delete")
        with self._using("delete task", task_id) as connection:
            shared = self._shared
            if shared is not None and shared.muted:
                return
            with immediate(connection, self._gate):
                removal = self._delete(connection, task_id)
            self._deleted(task_id, removal)

    def resave(self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord] = ()) -> bool:
        """Write ``snapshot`` again, a row a store outage left stale, with ``records`` (the
        records the writes that failed carried): in shared mode only while its row is
        one this process wrote or read and no live lease holds it
        (:meth:`_resave_shared`); True if written (:func:`~lldsched.storecalls.resave`).
        An unshared store has no other writer: it saves."""
        check_written(snapshot, records)
        if self._shared is not None:
            return self._resave_shared(snapshot, records)
        if records:
            self.save_all(snapshot, records)
        else:
            self.save(snapshot)
        return True

    def purge(self, task_id: str) -> bool:
        """Delete ``task_id``, which retired in this process, as :meth:`delete` does, only
        while its row is one this process wrote or read and no live lease of another
        process holds it (shared mode: a row another process wrote since, a registration
        of the id again, is left for the change feed to bring in; a row another process
        claimed, a take-over of a run whose settle here was refused, is its holder's, run
        there); True if it is gone (:func:`~lldsched.storecalls.purge`).  An unshared
        store has no other writer: it deletes."""
        with self._using("purge task", task_id) as connection:
            shared = self._shared
            if shared is not None and shared.muted:
                return True
            with immediate(connection, self._gate):
                if shared is not None:
                    row = connection.execute(
                        "SELECT version, EXISTS (SELECT 1 FROM leases l WHERE l.task_id = t.id "
                        "AND l.holder != ? AND l.expires_at > ?) FROM tasks t WHERE t.id = ?",
                        (shared.node, time.time(), task_id),  # the host's clock, as the feed's
                    ).fetchone()
                    if row is not None and (row[1] or not shared.knows(task_id, row[0])):
                        return False
                removal = self._delete(connection, task_id)
            self._deleted(task_id, removal)
        return True

    def _delete(self, connection: sqlite3.Connection, task_id: str) -> int | None:
        """Inside a transaction, under the lock: delete ``task_id``'s row and records (in
        shared mode its lease too, and a removal for the feed); the removal's version
        (None: unshared), for :meth:`_deleted` once the transaction committed."""
        connection.execute("DELETE FROM records WHERE task_id = ?", (task_id,))
        connection.execute("DELETE FROM tasks WHERE id = ?", (task_id,))
        shared = self._shared
        if shared is None:
            return None
        if shared.hold is not None:
            shared.hold.wrote(task_id, None)
        connection.execute("DELETE FROM leases WHERE task_id = ?", (task_id,))
        version = bump(connection, "change")
        connection.execute(
            "INSERT INTO removed (version, task_id) VALUES (?, ?)", (version, task_id)
        )
        return version

    def _deleted(self, task_id: str, removal: int | None) -> None:
        """Under the lock, once the delete committed: forget ``task_id``, and in shared mode
        its lease and its removal's version, which the feed leaves out as this process's
        own.  Before the commit, a removal rolled back (a full disk) left its version
        counted as this one's, and another process's removal numbered alike was left out."""
        shared = self._shared
        if shared is not None and removal is not None:
            shared.deleted(task_id, removal)
        self._defined.pop(task_id, None)
        self._counts.pop(task_id, None)
