"""The :class:`~lldsched.persistence.TaskStore` writes of a
:class:`~lldsched.stores.postgres.PostgresTaskStore`: ``save``, ``save_all``,
``delete``, ``resave`` and ``purge``.

:class:`PostgresWrites` is mixed into the store.  Each write of a task's row is one
transaction (``_transaction``): if it does not commit, what the store's caches say of
the task is put back as it was, as the database's row is.  A run's settle (a record
carrying a fencing token) is not written here: it is queued for the store's writer
thread (:mod:`~lldsched.stores.postgres.batch`; ``_fenced``), and the claims, leases
and the change feed are :class:`~lldsched.stores.postgres.coordinated.PostgresCoordination`'s.
A row written here that becomes the earliest due, or that another node's live lease
holds, is announced on the store's channel; a task's records are trimmed to
``retention`` every tenth of it (``_append``, ``_trim``); a removal, ``delete``'s or
``purge``'s, leaves a row for the other nodes' feeds (``_delete``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from typing import Any

from lldsched.errors import StoreClosedError, StoreError, ValidationError
from lldsched.logs import STORE
from lldsched.model import ExecutionRecord, TaskStatus
from lldsched.persistence import TaskSnapshot, finished
from lldsched.storechecks import id_asked
from lldsched.stores.codec import check_written, encode_task
from lldsched.stores.postgres import sql
from lldsched.stores.postgres.driver import Connection, psycopg
from lldsched.stores.postgres.parts import PostgresParts
from lldsched.stores.postgres.rows import check_keepable, record_row, state_row

log = logging.getLogger(STORE)

__all__ = ["PostgresWrites"]

_ABSENT: Any = object()  # a cache without the task (_transaction)


class PostgresWrites(PostgresParts):
    """The TaskStore writes: mixed into PostgresTaskStore."""

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        """Write the task's state (and ``record``); :class:`ValidationError` for a
        registration of an id another node registered (nothing written).  A record
        carrying a fencing token is a settle (:meth:`settle`): refused when its lease was
        lost, counted in :attr:`rejected` and logged, not raised.  Writes nothing while
        :meth:`muted`, or for the RUNNING state of a run whose lease this node holds.

        A settle is queued and written with the others waiting, by the store's writer
        thread (:mod:`lldsched.stores.postgres.batch`); :meth:`flush` waits for it.
        Text no durable store keeps is a :class:`ValidationError`, nothing written or
        queued (:func:`~lldsched.stores.codec.check_written`)."""
        if self._muted:
            return
        check_written(snapshot, () if record is None else (record,))
        token = None if record is None else record.token
        if token is not None and record is not None:
            self._lost.pop(snapshot.task.id, None)  # the run is over: settled, or refused
            self._fenced(snapshot, (record,), token=token)
            return
        if snapshot.status is TaskStatus.RUNNING and snapshot.task.id in self._held:
            self._redefine(snapshot, writer=self.node)
            return  # the lease says so
        if snapshot.status is TaskStatus.RUNNING and snapshot.task.id in self._lost:
            self._redefine(snapshot, writer="")
            return  # the row's state is its new holder's
        task_id = snapshot.task.id
        with (
            self._using("save task", task_id) as connection,
            self._transaction(connection, task_id),
        ):
            self._write(connection, snapshot)
            if record is not None:
                self._append(connection, record)

    def _redefine(self, snapshot: TaskSnapshot, *, writer: str) -> None:
        """A RUNNING save, whose state is not this node's to write: a definition new here
        (a modify, a reschedule, a replacement during the run) is written alone, to a row
        that is there (a write of the verb's hold, if inside one, noted as :meth:`_write`
        notes its own).  Of a run whose lease this node holds (``writer`` this node): the
        state is the lease's, and the run's settle, finding the row its own
        (``postgres/lease_sql._OWN``), decides the status and the next slot as before.  Before,
        that settle wrote the definition, and a node killed before its settle lost it:
        the slot was taken over and run under the old one.  Of a run whose lease a
        renewal found lost (taken over, or gone with its task; ``writer`` ''): the row's
        state is its new holder's, and a row written ``running`` is claimed by no node
        (the task never ran again), or a removed row came back; every node, this one
        included, reads the row again.  A definition PostgreSQL cannot keep is refused
        here (:func:`~lldsched.stores.postgres.rows.check_keepable`), and the caller
        puts the old one back."""
        task = snapshot.task
        if self._defined.get(task.id) == task:
            return
        check_keepable(task)
        if self._hold is not None:
            self._hold.wrote(task.id, snapshot)
        parameters = {
            "id": task.id,
            "name": task.name,
            "definition": encode_task(task),
            "priority": int(task.priority),
            "writer": writer,
        }
        with self._using("save the definition of task", task.id) as connection:
            if connection.execute(sql.REDEFINE, parameters).rowcount == 1:
                self._defined[task.id] = task

    def save_all(self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord]) -> None:
        """Write the task's state and every one of ``records`` (a run's, then the slots it
        skipped), all or none (:func:`~lldsched.storecalls.save_all`): a run's settle
        is queued with all of them, written in one statement."""
        if self._muted:
            return
        check_written(snapshot, records)
        token = records[0].token
        if token is not None:
            self._lost.pop(snapshot.task.id, None)  # the run is over: settled, or refused
            self._fenced(snapshot, records, token=token)
            return
        task_id = snapshot.task.id
        with (
            self._using("save task", task_id) as connection,
            self._transaction(connection, task_id),
        ):
            self._write(connection, snapshot)
            for record in records:
                self._append(connection, record)

    def _fenced(
        self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord], *, token: int
    ) -> None:
        """Records carrying the fencing token ``token``: a run's settle, queued with them,
        or records added to the settle queued under it."""
        self._refuse_if_forked()
        if self._closed:
            raise StoreClosedError(f"the store {self.dsn!r} is closed")
        if self._settles.add(snapshot, records, token=token):
            if self._settles.unwritten:  # the interpreter's exit refused the writer thread
                self._write_here()
            return
        # Records after their run's settle was taken (SKIPPED slots): once we hold the
        # connection, that settle's outcome is known; it decides these.
        with self._using("save the records of task", snapshot.task.id) as connection:
            if self._settles.add(snapshot, records, token=token):
                return  # its batch failed: held (SettleQueue.hold), these join it
            if not self._settles.outcome(token):
                return  # refused (or dropped): what follows it is dropped too
            with self._transaction(connection, snapshot.task.id):  # the settle: the row exists
                self._write(connection, snapshot, unknown=sql.UPSERT)
                for record in records:
                    self._append(connection, record)

    def _write_here(self) -> None:
        """Write the settles queued on the caller's thread: the interpreter's exit refused
        the writer thread (:attr:`SettleQueue.unwritten
        <lldsched.stores.postgres.batch.SettleQueue.unwritten>`), and a settle left queued
        as the process ends is a run made twice, once its lease expires.  ``flush()``
        without its wake: the caller may hold its scheduler's lock (a worker settling a
        run), which the wake takes; the next ``flush()`` wakes it."""
        with self._call():
            self._write_settles()

    def _write(
        self, connection: Connection, snapshot: TaskSnapshot, *, unknown: str = sql.INSERT_NEW
    ) -> None:
        """Write the row (the definition too when it changed) and NOTIFY if it became the
        earliest due, or if another node's live lease holds it (a verb its run must
        follow: :data:`~lldsched.stores.postgres.sql.NOTIFY_IF_EARLIEST`).  ``unknown``:
        the statement for a task this node has not seen yet, a registration (refused if
        another node registered the id) unless a record after
        a settle, whose lease proved the row exists, says
        :data:`~lldsched.stores.postgres.sql.UPSERT`.  A finished task
        (:func:`~lldsched.persistence.finished`) is forgotten by the caches, as
        :meth:`_forget_finished` says; so a finished snapshot of a task not known here
        is an update too (it is never a new registration: a replacement of a finished
        task, its definition written in full)."""
        task = snapshot.task
        if self._hold is not None:
            self._hold.wrote(task.id, snapshot)
        state = {
            **state_row(snapshot),
            "slot": snapshot.slot,
            "blocked_due": snapshot.blocked_due,
            "blocked_slot": snapshot.blocked_slot,
            "writer": self.node,
        }
        known = self._defined.get(task.id)
        done = finished(snapshot)
        # The state alone, to a row there, or one another node removed (the feed brings
        # the removal); a row deleted by hand is written whole again.
        updated = known == task and (
            connection.execute(sql.UPDATE, state).fetchone() is not None
            or not self._deleted_by_hand(connection, task.id)
        )
        if not updated:
            check_keepable(task)
            row = {
                **state,
                "name": task.name,
                "definition": encode_task(task),
                "priority": int(task.priority),
            }
            statement = sql.UPSERT if known is not None or done else unknown
            if connection.execute(statement, row).fetchone() is None:
                raise ValidationError(  # a registration here of an id another node registered
                    f"task id {task.id!r} is already registered by another scheduler on "
                    f"{self.dsn!r}; pass replace_existing=True to update it"
                )
            if snapshot.blocked_due is not None:  # an insert's version is the trigger's
                connection.execute(sql.BLOCKED_VERSION, {"id": task.id})
            self._defined[task.id] = task
        connection.execute(
            sql.NOTIFY_IF_EARLIEST, {**state, "node": self.node, "channel": self._channel}
        )
        if done:
            self._forget_finished(task.id)

    def _deleted_by_hand(self, connection: Connection, task_id: str) -> bool:
        """Whether ``task_id``, whose row this node wrote and an ``UPDATE`` just found
        gone, was deleted by no node (no removal of it kept: a ``DELETE`` or ``TRUNCATE``
        by hand, a backup restored), and so is written again whole by :meth:`_write`,
        saying so.  A removal by a node is kept until every feed read past it, this
        node's too, whose scheduler then drops the task (it is not saved again).  Before,
        such a row was left gone without a word: the task, listed by its scheduler, had
        no row to be claimed from, and its later writes each an ``UPDATE`` of no row."""
        if connection.execute(sql.REMOVED, {"id": task_id}).fetchone() is not None:
            return False
        log.warning(
            "store %r had no row of task %r, which no scheduler removed (deleted or truncated "
            "by hand, or a backup restored?): written again from this scheduler's registry",
            self.dsn,
            task_id,
        )
        return True

    def _forget_finished(self, task_id: str) -> None:
        """``task_id`` finished (succeeded or cancelled, no run in flight): nothing runs it
        again, so the caches this node wrote through forget it (under the lock).  Before,
        they held every task ever saved.  The feed's ``_seen`` is another matter: it is
        forgotten in :meth:`changes`, once the feed can no longer read the row again."""
        self._defined.pop(task_id, None)
        self._added.pop(task_id, None)

    def _append(self, connection: Connection, record: ExecutionRecord) -> None:
        """Insert ``record``; every tenth of ``retention``, trim its task's oldest."""
        connection.execute(sql.INSERT_RECORD, record_row(record))
        if self._added_records(record.task_id, 1):
            self._trim(connection, record.task_id)

    def _added_records(self, task_id: str, count: int) -> bool:
        """``count`` records of ``task_id`` were inserted: True when a trim of its oldest
        is due (every tenth of ``retention``).  The count stays above that mark until
        :meth:`_trim` succeeds, so a trim that failed is due again at the next insert."""
        if self.retention is None:
            return False
        added = self._added[task_id] = self._added.get(task_id, 0) + count
        return added > max(1, self.retention // 10)

    def _trim(self, connection: Connection, task_id: str) -> None:
        """Trim ``task_id``'s oldest records to ``retention``; its count starts again
        (unless :meth:`_forget_finished` forgot the task meanwhile: not counted again)."""
        connection.execute(sql.TRIM_RECORDS, {"id": task_id, "keep": self.retention})
        if task_id in self._added:
            self._added[task_id] = 0

    def _trim_after_batch(self, task_ids: list[str]) -> None:
        """Trim the tasks a batch of settles made due (caller holds the lock), once the
        batch's outcomes are reported.  Housekeeping: a trim that fails is logged by
        :class:`~lldsched.core.store.writes.StoreWrites` as any failing call of this store
        (once an outage, then at debug level), the rest are left, and each is tried again
        at its task's next insert (:meth:`_added_records`).  A finished task, forgotten,
        is not: its records stay untrimmed until it has new ones (a replacement)."""
        for task_id in task_ids:
            try:
                self._trim(self._open(), task_id)
            except (psycopg.Error, StoreError) as exc:
                self._batches.call_failed(
                    exc,
                    "records trim",
                    f"trim of {task_id!r}'s oldest records: tried again at its next record",
                )
                return
        if task_ids and self._batches.outage is not None:
            self._batches.succeeded("records trim")

    def delete(self, task_id: str) -> None:
        """Forget ``task_id`` and its records (the other nodes' feeds say it was removed),
        whoever wrote the row last (a user's ``remove()``; a purge as a task retires is
        :meth:`purge`)."""
        id_asked(task_id, "delete")
        if self._muted:
            return
        with (
            self._using("delete task", task_id) as connection,
            self._transaction(connection, task_id),
        ):
            self._delete(connection, task_id)

    def resave(self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord] = ()) -> bool:
        """Write ``snapshot`` again, a row a store outage left stale, with ``records`` (the
        records the writes that failed carried), only while its row is one this node
        wrote or read (as :meth:`purge` knows one) and no live lease holds it (the
        database's clock), in one transaction; False (nothing written) otherwise, or when
        it is gone (:func:`~lldsched.storecalls.resave`): another node's write is the
        feed's to bring in, a lease's row its holder's settle to write.  A run this node
        holds writes nothing of the row (its settle will), as :meth:`save` does: only
        ``records``."""
        task_id = snapshot.task.id
        if self._muted:
            return True
        check_written(snapshot, records)
        held = snapshot.status is TaskStatus.RUNNING and task_id in self._held
        if held and not records:
            return True
        with (
            self._using("save task again", task_id) as connection,
            self._transaction(connection, task_id),
        ):
            if not held:
                if not self._known(connection, task_id, sql.KNOWN_UNLEASED):  # or gone
                    return False
                self._write(connection, snapshot, unknown=sql.UPSERT)  # the row exists
            for record in records:
                self._append(connection, record)
        return True

    def purge(self, task_id: str) -> bool:
        """Delete ``task_id``, which retired on this node, as :meth:`delete` does, only
        while its row is one this node wrote or read and no live lease of another node
        holds it; True if it is gone (:func:`~lldsched.storecalls.purge`).  A row another
        node wrote since (a registration of the id again) is left, for the change feed to
        bring in: known is a row this node wrote last, one written before the feed's last
        horizon (the feed read it), or the version the feed last gave unless another node
        removed the id since (:data:`~lldsched.stores.postgres.sql.KNOWN_ROW`).  A row
        another node's live lease holds is left too
        (:data:`~lldsched.stores.postgres.sql.HELD_ELSEWHERE`): its run is in flight there,
        a take-over of a run whose settle here was refused (the run ended its task here,
        which retired), and its settle is that node's to write; before, the purge deleted
        it under that run."""
        if self._muted:
            return True
        with (
            self._using("purge task", task_id) as connection,
            self._transaction(connection, task_id),
        ):
            known = self._known(connection, task_id, sql.KNOWN_ROW)  # None: gone
            if known is False:
                return False
            lease = {"id": task_id, "node": self.node}
            if known and connection.execute(sql.HELD_ELSEWHERE, lease).fetchone():
                return False  # its run is in flight on that node
            self._delete(connection, task_id)
        return True

    @contextlib.contextmanager
    def _transaction(self, connection: Connection, task_id: str) -> Iterator[None]:
        """One transaction writing ``task_id``'s row (a savepoint of a verb's hold): if it
        does not commit, what this node's caches say of the task is put back as it was
        before it (its definition written, its lease, its records counted, its decoded
        text, the version its feed gave), as the database's row is.  They are told as
        each statement runs, inside the transaction: before, a registration whose COMMIT
        failed (a connection lost, a deferred check) or whose record was refused was taken
        as stored, and made again was an ``UPDATE`` of no row (nothing stored, no error); a
        replacement refused so kept the old definition when made again; a removal refused
        so took the task's later writes for another node's registration."""
        caches: tuple[dict[str, Any], ...] = (
            self._defined, self._held, self._added, self._decoded, self._seen,
        )  # fmt: skip
        before = [cache.get(task_id, _ABSENT) for cache in caches]
        try:
            with connection.transaction():
                self._bound(connection)
                yield
        except BaseException:
            for cache, value in zip(caches, before, strict=True):
                if value is _ABSENT:
                    cache.pop(task_id, None)
                else:
                    cache[task_id] = value
            raise

    def _known(self, connection: Connection, task_id: str, query: str) -> bool | None:
        """Inside a transaction: the id's lock taken first (the lock order, as in
        :meth:`_delete`), then ``query`` (:data:`~lldsched.stores.postgres.sql.KNOWN_ROW`
        or ``KNOWN_UNLEASED``) asked of the row, which it locks: True if this node wrote
        or read it (and no live lease holds it, for the second), None if there is none."""
        connection.execute(sql.LOCK_ID, {"id": task_id})
        row = connection.execute(
            query,
            {"id": task_id, "node": self.node, "since": self._since,
             "seen": self._seen.get(task_id)},
        ).fetchone()  # fmt: skip
        return None if row is None else bool(row[0])

    def _delete(self, connection: Connection, task_id: str) -> None:
        """Inside a transaction, under the lock: delete ``task_id``'s row and records, with
        a removal for the other nodes' feeds, and forget it (the version the feed gave
        too: a row registered again is another node's, or this one's next write).

        The id's lock (:data:`~lldsched.stores.postgres.sql.LOCK_ID`) is taken first, as
        every insert of a row takes it (``FIRST_VERSION``), always before the row's own
        lock (a caller that locks the row takes it before that, or the two orders would
        deadlock): a registration racing this removal on another node waits for its
        commit and starts past it, or this removal waits for that registration's and
        deletes its row.  The removal's version is one past the row's as deleted
        (:data:`~lldsched.stores.postgres.sql.REMOVE`): an id's versions grow in commit
        order.  A row another node's live lease holds (its run in flight there) is
        announced on the channel, as any other verb's write to it is: that node stops
        the run at once, not at its next renewal or poll."""
        if self._hold is not None:
            self._hold.wrote(task_id, None)
        connection.execute(sql.LOCK_ID, {"id": task_id})
        connection.execute(sql.REMOVE, {"id": task_id, "node": self.node, "channel": self._channel})
        connection.execute("DELETE FROM records WHERE task_id = %s", (task_id,))
        self._defined.pop(task_id, None)
        self._held.pop(task_id, None)
        self._added.pop(task_id, None)
        self._decoded.pop(task_id, None)
        self._seen.pop(task_id, None)
