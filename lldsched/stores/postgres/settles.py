"""The fenced settles of :class:`~lldsched.stores.postgres.PostgresTaskStore`: a run's
record and its task's state, written only while the run's lease is held
(:meth:`PostgresSettles.settle`, now; or queued by the store's ``save`` and written in
batches, one statement a batch, by the writer thread of
:mod:`lldsched.stores.postgres.batch` or by :meth:`PostgresSettles.flush`).

:class:`PostgresSettles` is mixed into the store beside
:class:`~lldsched.stores.postgres.coordinated.PostgresCoordination` (the other
:class:`~lldsched.coordination.CoordinatedStore` methods).  A batch that cannot be
written is held and tried again first at the store's next statement, and its outage
said once (:class:`~lldsched.core.store.writes.StoreWrites`); a batch whose session died
is tried once more, and a settle whose reply was lost, found stored, is counted written,
not refused (:meth:`PostgresSettles._settled_before`).  Each statement runs under the
store's one lock on its one connection; the SQL is
:data:`~lldsched.stores.postgres.lease_sql.SETTLE`.
"""

from __future__ import annotations

import logging
from typing import Any

from lldsched.errors import LeaseLost, StoreError
from lldsched.logs import CLUSTER
from lldsched.model import ExecutionRecord
from lldsched.persistence import TaskSnapshot, finished
from lldsched.stores.codec import check_written
from lldsched.stores.postgres import lease_sql, sql
from lldsched.stores.postgres.batch import Pending, settle_parameters
from lldsched.stores.postgres.driver import lost, psycopg
from lldsched.stores.postgres.parts import PostgresParts
from lldsched.stores.postgres.redact import scrubbed

__all__ = ["PostgresSettles"]

log = logging.getLogger(CLUSTER)


class PostgresSettles(PostgresParts):
    """The fenced settles of PostgresTaskStore: mixed into it (see the module docstring)."""

    def settle(self, snapshot: TaskSnapshot, record: ExecutionRecord, *, token: int) -> None:
        """Drop the lease with ``token``, write the task's state and ``record``, in one
        statement, now (the settles queued before it first); :class:`LeaseLost`
        (nothing written, counted in :attr:`rejected`) if the lease is no longer held.
        If another node rewrote the row during the run, its write wins and the run adds
        only its counts and its record; the run still decides the due instant when
        that write left it at the claimed slot, or when this node had followed it
        (``postgres/lease_sql._WHEN``)."""
        check_written(snapshot, (record,))
        with self._using("settle task", snapshot.task.id):
            refused = self._settle_batch([Pending(token, snapshot, (record,))])
        if refused:
            raise LeaseLost(task_id=snapshot.task.id, token=token)

    def flush(self) -> None:
        """Write every settle queued now, in one statement (the writer thread does so as
        soon as it can; the runtime calls this at shutdown and in ``wait_idle()``).  A
        settle refused is logged and counted in :attr:`rejected`, its task's row given
        again by the next :meth:`changes`, and the ``wake`` given to :meth:`subscribe`
        called once the lock is let go, so that the scheduler reads it now; a batch that
        cannot be written is held and tried again before the store's next statement
        (:meth:`~lldsched.stores.postgres.batch.SettleQueue.hold`: a run whose lease
        another node took over meanwhile is refused then), and logged as the core logs a
        failing store, once an outage (``_write_settles``)."""
        self._refuse_if_forked()
        with self._call():  # one timeout for all it sends
            if not self._closed:
                self._write_settles()
            wake = self._wake if self._reread_wake else None
            self._reread_wake = False
        if wake is not None:  # outside the lock (the scheduler's is taken before it)
            wake()

    @property
    def settles_waiting(self) -> bool:
        """True while a run's settle waits to be written: queued for the next batch, or
        held after a batch failed (written again first by the next call).  What
        :meth:`flush` would send; still True after it when the store held them again (an
        outage), which the runtime does not count a success
        (:func:`~lldsched.storecalls.settles_waiting`)."""
        return self._settles.waiting

    def _write_settles(self) -> None:
        """Write the queued settles (caller holds the lock).  A batch that fails is
        logged by :class:`~lldsched.core.store.writes.StoreWrites`, the one rule of a
        failing store: the first of an outage at error level with its traceback, each
        later one at debug level, and one warning when a batch is written again,
        counting the batches failed, the settles not stored and the runs' records
        written late.  The settles of a batch that fails are held
        (:meth:`~lldsched.stores.postgres.batch.SettleQueue.hold`) and taken again,
        first, by the next call here."""
        if self._holding is not None:
            # Inside a verb's hold they would be its writes, stored or rolled back with it,
            # yet reported written at once: they wait for its end (the writer thread waits
            # at the lock).  Each was queued by a run that ended after the hold began (one
            # queued before is written as the hold begins): another thread's, its order
            # with the verb's writes unset, as another node's settle's is.
            return
        batch = self._settles.take()
        if not batch:
            return
        try:
            refused = self._settle_batch(batch)
        except StoreError as exc:
            new = sum(not pending.tried for pending in batch)  # not counted before
            dropped = self._settles.hold(batch)  # written again at the next statement
            self._batches.call_failed(
                exc,
                "settle batch",
                f"write of {len(batch)} settles: held, and written again at the store's next "
                "statement (a run whose lease expires first is taken over)",
                writes=new,
                dropped=sum(len(pending.records) for pending in dropped),
            )
            return
        if self._batches.outage is not None:
            late = [pending for pending in batch if pending.tried and pending.token not in refused]
            self._batches.succeeded(
                "settle batch",
                rewritten=len(late),
                late=sum(r.outcome.ran for pending in late for r in pending.records),
                refused=sum(pending.tried and pending.token in refused for pending in batch),
            )
        for pending in batch:
            if pending.token in refused:
                lost = LeaseLost(task_id=pending.snapshot.task.id, token=pending.token)
                log.warning("%s", lost.settle_refused(pending.records[0].attempt))

    def _settle_batch(self, batch: list[Pending]) -> set[int]:
        """Write ``batch`` in one statement (caller holds the lock); the tokens refused.
        A batch whose session died (the server ended a stalled one, or restarted, or the
        network dropped the connection) is tried once more on a new connection, so that a
        lease taken over meanwhile is told apart (refused) from an outage (StoreError).

        The session may have died after the statement committed, its reply lost on the
        way: the second try then finds those leases gone, dropped by the first.  So after
        a second try, a token it refused whose run's record the store holds (the same
        task, token, attempt, start and finish: only that settle writes it) is written
        (:meth:`_settled_before`), not refused: before, it was reported as a lease lost
        (a WARNING, counted in :attr:`rejected`), and the records its run decided after
        its own were dropped (docs/DECISIONS.md, the PostgreSQL store under Persistence).

        So too a batch held after a failure (a settle ``tried`` before): its failed try
        may have committed, its reply lost, and the second try failed as well (the server
        out of reach a moment longer); the try that writes it later finds its lease gone.
        A record its run decided after that try (queued while it was held) is written
        then (:meth:`_write_after`)."""
        parameters = settle_parameters(
            batch, node=self.node, channel=self._channel, defined=self._defined, seen=self._seen
        )
        before: dict[int, int] = {}  # token -> its records stored by a try whose reply was lost
        try:
            try:
                rows = self._open().execute(lease_sql.SETTLE, parameters).fetchall()
                retried = any(pending.tried for pending in batch)
            except psycopg.Error:
                connection = self._connection
                if connection is not None and not lost(connection):
                    raise
                rows = self._open().execute(lease_sql.SETTLE, parameters).fetchall()
                retried = True
            if retried and not all(written for _, written, _, _ in rows):
                rows, before = self._settled_before(batch, rows)
        except psycopg.Error as exc:
            self._settles.done((pending.token, False) for pending in batch)
            raise StoreError(
                f"the PostgreSQL store {self.dsn!r} failed: "
                f"{self._deadline.reason(scrubbed(exc, self._dsn))}"
            ) from None
        except StoreError:  # no connection to be had (the server is away): not written
            self._settles.done((pending.token, False) for pending in batch)
            raise
        by_token = {pending.token: pending for pending in batch}
        refused: set[int] = set()
        outcomes: list[tuple[int, bool]] = []
        trims: list[str] = []  # the tasks whose records are due a trim
        for token, written, own, _ in rows:
            pending = by_token[token]
            task = pending.snapshot.task
            outcomes.append((token, bool(written)))
            if not written:
                refused.add(token)
                self._reread.add(task.id)  # the new holder's row: this registry's truth
                self._reread_wake = True
                continue
            if own:
                self._defined[task.id] = task
            if self._added_records(task.id, len(pending.records)):
                trims.append(task.id)
            if own and finished(pending.snapshot):
                self._forget_finished(task.id)
        self.rejected += len(refused)
        self._forget(set(by_token))
        self._settles.done(outcomes)  # the batch was written, whatever the trims do
        self._write_after([(by_token[token], count) for token, count in before.items()])
        self._trim_after_batch(trims)
        return refused

    def _write_after(self, settled: list[tuple[Pending, int]]) -> None:
        """The records of each settle in ``settled`` that its lost-reply try did not store
        (it stored ``count``: those queued after it joined it while it was held), and
        its task's state with them, as records after a written settle are written
        (``PostgresWrites._fenced``).  One that fails is logged, not raised: the
        batch was written, and its outcome told."""
        for pending, count in settled:
            if len(pending.records) <= count:
                continue
            task_id = pending.snapshot.task.id
            try:
                connection = self._open()
                with self._transaction(connection, task_id):
                    self._write(connection, pending.snapshot, unknown=sql.UPSERT)
                    for record in pending.records[count:]:
                        self._append(connection, record)
            except (psycopg.Error, StoreError) as exc:
                log.warning(
                    "the PostgreSQL store %r stored the settle of task %r (token %d) whose "
                    "reply was lost, but not the %d records its run decided after it: %s",
                    self.dsn,
                    task_id,
                    pending.token,
                    len(pending.records) - count,
                    scrubbed(exc, self._dsn) if isinstance(exc, psycopg.Error) else exc,
                )

    def _settled_before(
        self, batch: list[Pending], rows: list[Any]
    ) -> tuple[list[Any], dict[int, int]]:
        """``rows``, a later try's answer to :data:`~lldsched.stores.postgres.lease_sql.SETTLE`
        for ``batch`` after an earlier one's session died, with each refused token that the
        earlier try wrote (its run's record is there:
        :data:`~lldsched.stores.postgres.lease_sql.SETTLED`) marked written; ``own``
        unknown for those, so False (the caches this node keeps of what it wrote are not
        updated: its next write sends the definition again); and, for each of those, how
        many of its records that try stored.  One statement, on the connection the later
        try used."""
        by_token = {pending.token: pending for pending in batch}
        refused = [by_token[row[0]] for row in rows if not row[1]]
        found = self._open().execute(lease_sql.SETTLED, {
            "id": [pending.snapshot.task.id for pending in refused],
            "token": [pending.token for pending in refused],
            "attempt": [pending.records[0].attempt for pending in refused],
            "started": [pending.records[0].started for pending in refused],
            "finished": [pending.records[0].finished for pending in refused],
        }).fetchall()  # fmt: skip
        written = {int(token): int(count) for token, count in found}
        return [
            (token, True, False, notified) if token in written else (token, ok, own, notified)
            for token, ok, own, notified in rows
        ], written
