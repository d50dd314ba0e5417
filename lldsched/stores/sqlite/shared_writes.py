"""The shared mode's ``save``, ``save_all`` and ``resave`` of a
:class:`~lldsched.stores.sqlite.SqliteTaskStore` (opened with ``shared=True``), and the
row write under a new version that every shared write makes, a settle's included.

:class:`SharedWrites` is mixed into the store.  A run's record (its fencing token set)
is a fenced settle (``_settle_fenced``: a lease lost is counted and logged, not raised);
the RUNNING save of a run this process holds writes no state (its lease says so), only a
new definition (:func:`redefine_row`); anything else writes the row (``_save_shared``),
and a row a store outage left stale is written again only while it is this process's
(``_resave_shared``).  Each row is written under a new version
(``_write_state``), for the other processes' change feed, which is told
(``_wrote``: a finished task is forgotten by the caches then).  The claims, leases, the
settle itself and the feed are
:class:`~lldsched.stores.sqlite.coordinated.CoordinatedMethods`'; an unshared store's
writes are the store's own (:mod:`lldsched.stores.sqlite`).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Sequence

from lldsched.errors import LeaseLost, ValidationError
from lldsched.logs import CLUSTER
from lldsched.model import ExecutionRecord, TaskStatus
from lldsched.persistence import Task, TaskSnapshot, finished
from lldsched.stores.codec import encode_task
from lldsched.stores.sqlite.parts import SqliteParts
from lldsched.stores.sqlite.rows import LAST_FAILED, immediate, written
from lldsched.stores.sqlite.shared import SharedState, bump

__all__ = ["SharedWrites", "redefine_row"]

log = logging.getLogger(CLUSTER)


class SharedWrites(SqliteParts):
    """The shared mode's row writes: mixed into SqliteTaskStore."""

    def _save_shared(self, snapshot: TaskSnapshot, record: ExecutionRecord | None) -> None:
        """``save`` in shared mode: a run's record is a fenced settle; a RUNNING snapshot
        of a task whose lease this process holds writes nothing (the lease says so);
        anything else writes the row, visible to the other processes' feed."""
        task = snapshot.task
        task_id = task.id
        shared = self._shared
        assert shared is not None
        if record is not None and record.token is not None:
            if _settles(record):
                self._settle_fenced(snapshot, (record,), token=record.token)
                return
            self._refuse_if_forked()  # before the lock (as _using does)
            with self._lock:  # a slot the run skipped: written only after its settle was
                if shared.settled.get(task_id) != record.token:
                    return
        with self._using("save task", task_id) as connection:
            if shared.muted:
                return
            if snapshot.status is TaskStatus.RUNNING and task_id in shared.held:
                # The run's state is its lease's.  A redefinition during it (a modify, a
                # reschedule, a replacement) is written alone, now, its state left to the
                # lease and the run's settle; before, the settle wrote it, and a process
                # killed before its settle lost it (the slot taken over, run on the old).
                if self._defined.get(task_id) != task:
                    with immediate(connection, self._gate):
                        version = redefine_row(connection, task)
                    if shared.hold is not None:
                        shared.hold.wrote(task_id, snapshot)
                    self._defined[task_id] = task
                    shared.wrote(task_id, version, finished=False)
                return
            if snapshot.status is TaskStatus.RUNNING and task_id in shared.lost:
                # A run whose lease went (taken over, or its task removed): the row's state
                # is its new holder's, and a row written `running` is claimed by no one.
                # A redefinition made here during it is written alone, if the row is there.
                if self._defined.get(task_id) != task:
                    with immediate(connection, self._gate):
                        redefine_row(connection, task)
                    self._defined[task_id] = task
                    shared.refetch.add(task_id)  # the row's state, for this registry
                return
            definition = None if self._defined.get(task_id) == task else encode_task(task)
            with immediate(connection, self._gate):
                if (
                    task_id not in self._defined
                    and not finished(snapshot)  # forgotten here (_wrote), not unknown
                    and connection.execute(
                        "SELECT 1 FROM tasks WHERE id = ?", (task_id,)
                    ).fetchone()
                ):  # a registration here of an id another process registered
                    raise ValidationError(
                        f"task id {task_id!r} is already registered by another scheduler on "
                        f"{self.path!r}; pass replace_existing=True to update it"
                    )
                version = self._write_state(
                    connection, snapshot, status=snapshot.status.value, definition=definition
                )
                if record is not None:
                    count = self._append(connection, record, seq=bump(connection, "record"))
                    self._counts[task_id] = count
            self._defined[task_id] = task
            self._wrote(shared, snapshot, version)

    def _resave_shared(
        self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord] = ()
    ) -> bool:
        """``resave`` in shared mode: write the row a store outage left stale only while
        its version is one this process wrote or read (:meth:`SharedState.knows`) and no
        live lease holds it, in one transaction; False (nothing written) otherwise, or
        when it is gone: another process's write is the feed's to bring in, a lease's
        row its holder's settle to write.  A run this process holds writes nothing (its
        settle will), as ``save`` does, but ``records``, the records the writes that
        failed carried, written alone."""
        task = snapshot.task
        task_id = task.id
        shared = self._shared
        assert shared is not None
        with self._using("save task again", task_id) as connection:
            if shared.muted:
                return True
            if snapshot.status is TaskStatus.RUNNING and task_id in shared.held:
                if records:
                    with immediate(connection, self._gate):
                        self._append_all(connection, task_id, records)
                return True
            definition = None if self._defined.get(task_id) == task else encode_task(task)
            with immediate(connection, self._gate):
                row = connection.execute(
                    "SELECT version, EXISTS (SELECT 1 FROM leases l WHERE l.task_id = t.id "
                    "AND l.expires_at > ?) FROM tasks t WHERE t.id = ?",
                    (time.time(), task_id),  # the host's clock, as the feed's lease flag
                ).fetchone()
                if row is None or row[1] or not shared.knows(task_id, row[0]):
                    return False
                version = self._write_state(
                    connection, snapshot, status=snapshot.status.value, definition=definition
                )
                self._append_all(connection, task_id, records)
            self._defined[task_id] = task
            self._wrote(shared, snapshot, version)
        return True

    def _append_all(
        self, connection: sqlite3.Connection, task_id: str, records: Sequence[ExecutionRecord]
    ) -> None:
        """Inside a transaction: append ``records`` of ``task_id``, in order."""
        for record in records:
            self._counts[task_id] = self._append(connection, record, seq=bump(connection, "record"))

    def _save_all_shared(self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord]) -> None:
        """``save_all`` in shared mode: a run's record with the records of the slots it
        skipped is one settle, one transaction, fenced by the run's token; anything
        else is saved a record at a time."""
        first = records[0]
        if first.token is not None and _settles(first):
            self._settle_fenced(snapshot, records, token=first.token)
            return
        for record in records:
            self._save_shared(snapshot, record)

    def _settle_fenced(
        self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord], *, token: int
    ) -> None:
        """Settle the run whose record is ``records[0]``; a lease lost meanwhile is
        counted in ``rejected`` and logged (the core treats a failed save as logged)."""
        try:
            self._settle(snapshot, records, token=token)
        except LeaseLost as exc:
            shared = self._shared
            assert shared is not None
            with self._lock:
                shared.rejected += 1
            log.warning("%s", exc.settle_refused(records[0].attempt))

    def _wrote(self, shared: SharedState, snapshot: TaskSnapshot, version: int) -> None:
        """This process wrote ``snapshot``'s row as ``version`` (under the lock): the feed
        is told (:meth:`SharedState.wrote`), and a finished task is forgotten by the
        caches too, as in one process (:func:`~lldsched.persistence.finished`):
        nothing runs it again, and a later save writes its definition in full.  Without
        it, the caches held every task ever saved (docs/DECISIONS.md)."""
        task_id = snapshot.task.id
        done = finished(snapshot)
        shared.wrote(task_id, version, finished=done)
        if done:
            self._defined.pop(task_id, None)
            self._counts.pop(task_id, None)

    def _write_state(
        self,
        connection: sqlite3.Connection,
        snapshot: TaskSnapshot,
        *,
        status: str,
        definition: str | None = None,
    ) -> int:
        """Inside a shared-mode transaction: write the row's state (and ``definition`` when
        given) under a new version; returns the version."""
        shared = self._shared
        if shared is not None and shared.hold is not None:
            shared.hold.wrote(snapshot.task.id, snapshot)
        version = bump(connection, "change")
        (last_failed,) = connection.execute(LAST_FAILED).fetchone()
        dead_seq = last_failed + 1
        connection.execute(
            *written(snapshot, status=status, failed_seq=dead_seq, definition=definition)
        )
        connection.execute(  # and the slot found blocked it wrote with it (sqlite/rows.BLOCKED)
            "UPDATE tasks SET version = ?, blocked_next = ? WHERE id = ?",
            (version, version, snapshot.task.id),
        )
        return version


def redefine_row(connection: sqlite3.Connection, definition: Task) -> int:
    """Inside a shared-mode transaction: write ``definition`` (name, text, priority) to its
    row, if there, keeping the row's state, under a new version; returns the version.  A
    slot found blocked the row's version keeps (:data:`~lldsched.stores.sqlite.rows.BLOCKED`)
    is kept with the new one."""
    version = bump(connection, "change")
    connection.execute(
        "UPDATE tasks SET name = ?, definition = ?, priority = ?, version = ?,"
        " blocked_next = CASE WHEN blocked_next = version THEN ? END WHERE id = ?",
        (
            definition.name, encode_task(definition), definition.priority, version, version,
            definition.id,
        ),
    )  # fmt: skip
    return version


def _settles(record: ExecutionRecord) -> bool:
    """Whether ``record``, of a run on a claim (its token set), is that run's own record,
    which settles it (fenced by the token, the lease dropped): one whose outcome is a
    run's (ok, failed, timed out, given up, or cancelled: a run a shutdown cut, its task
    written due at its slot, or one ``Overlap.CANCEL_OTHER`` cut), not a slot it skipped
    (written after that settle).  As PostgreSQL's store settles every such record."""
    misfire = record.misfire
    return misfire is None or misfire.ran
