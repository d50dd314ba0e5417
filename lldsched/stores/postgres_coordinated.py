"""The shared side of :class:`~lldsched.stores.postgres.PostgresTaskStore`: its
:class:`~lldsched.persistence.CoordinatedStore` methods (docs/CLUSTER.md).

:class:`PostgresCoordination` is mixed into the store, as
:class:`~lldsched.stores.sqlite_coordinated.CoordinatedMethods` is into the SQLite
one: claims, renewal and release of leases, the fenced settle (queued and written
in batches: :mod:`lldsched.stores.postgres_batch`), what a claim decided without a
run (a misfire, a slot its dependencies held), the change feed, the LISTEN
subscription and muting.  Each statement runs under the store's one lock on its one
connection (``_using``); the SQL is :mod:`lldsched.stores.postgres_sql`'s, the rows
:mod:`lldsched.stores.postgres_rows`'.

What the store remembers per task goes as the task does: at its removal here
(``_delete``), at one another node made when the feed gives it (its lease in ``_held``,
its records counted in ``_added``, its definition), and at its finish, this node's or
another's (:meth:`PostgresCoordination.changes`).  Before, a task another node removed
kept its ``_added`` count, and its lease when this node held an unbegun claim on it,
for good.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any

from lldsched.errors import LeaseLost, StoreError, doc_url
from lldsched.logs import CLUSTER
from lldsched.model import ExecutionRecord
from lldsched.persistence import (
    DIED_UNSHARED,
    FINISHED_STATUSES,
    Change,
    Claim,
    Lease,
    Task,
    TaskSnapshot,
    claim_narrowed,
    finished,
)
from lldsched.schedules.objects import wrapped_schedule
from lldsched.stores import postgres_sql as sql
from lldsched.stores.codec import check_written, encode_task
from lldsched.stores.postgres_batch import Pending, settle_parameters
from lldsched.stores.postgres_driver import psycopg
from lldsched.stores.postgres_listen import Listener
from lldsched.stores.postgres_parts import PostgresParts
from lldsched.stores.postgres_redact import scrubbed
from lldsched.stores.postgres_rows import snapshot_of
from lldsched.stores.rowvalues import check_take_over, lease_from

__all__ = ["PostgresCoordination"]

log = logging.getLogger(CLUSTER)

_FINISHED = frozenset(status.value for status in FINISHED_STATUSES)  # as rows store them


def _order(item: tuple[int, Change], removed: dict[str, int]) -> tuple[int, int, int]:
    """Where a change read by the feed is applied: by its transaction id (``item[0]``),
    then its version; a row (one with a snapshot) of an id removed in the same read
    (``removed``: its removals' greatest transaction id) after those removals, however
    their ids were ordered (transaction ids are not commit order)."""
    xid, change = item
    if change.snapshot is not None and change.task_id in removed:
        xid = max(xid, removed[change.task_id])
    return xid, change.snapshot is not None, change.version


def rewound(dsn: str, first: int, given: int) -> str:
    """Why a node refuses every call once its claim was given a fencing token at or below
    one given before (at its open, or to a claim of its own): the database was restored
    under it (a dump restored into the schema it uses, its sequence ``fencing_token``
    gone back with it).  Claimed, the slots run since that dump would run again, with
    tokens already given."""
    return (
        f"the PostgreSQL store {dsn!r} was restored or rewound since this process opened "
        f"it (its fencing tokens restart at {first}, and {given} was given already): this "
        "process no longer claims anything, since it would run again the slots run since "
        "that copy was taken, with fencing tokens already given. Stop every process on "
        "the database, then restart them on the one to keep "
        f"({doc_url('docs/OPERATIONS.md#backing-up-and-restoring-a-store')})"
    )


class PostgresCoordination(PostgresParts):
    """The CoordinatedStore methods of PostgresTaskStore: mixed into it."""

    def claim(
        self,
        *,
        now: float,
        limit: int,
        among: Collection[str] | None = None,
        leaving: Collection[str] = (),
    ) -> list[Claim]:
        """Claim up to ``limit`` runs due at ``now`` (the scheduler's clock), only of the
        tasks ``among`` if given, none of ``leaving`` nor of a task this node left out (it
        cannot load it: :meth:`unloaded`); each lease lasts :attr:`lease` seconds on the
        database's clock.  One statement."""
        if limit <= 0:
            return []
        parameters: dict[str, object] = {
            "now": now,
            "limit": limit,
            "node": self.node,
            "lease": self.lease,
        }
        statement = sql.CLAIM
        # Never claimed here: the tasks this node cannot run (left out), and those the
        # caller cannot start now (``among``, ``leaving``).
        narrowed = claim_narrowed(self._unreadable.left_out(), among, leaving)
        if narrowed is not None:
            only, ids = narrowed
            statement = sql.CLAIM_AMONG if only else sql.CLAIM_LEAVING
            parameters["ids"] = ids
        with self._using("claim runs") as connection:
            parameters["held"] = list(self._held.values())  # the rest: lost replies (_LOST_REPLY)
            rows = connection.execute(statement, parameters).fetchall()
            seen = self._seen  # the versions the feed last gave; the row's writer says if ours
            claims = []
            for *claimed, writer in rows:
                claim = Claim(*claimed)
                if writer != self.node and seen.get(claim.task_id, -1) < claim.version:
                    claim = claim._replace(stale=True)  # written elsewhere since the feed's read
                claims.append(claim)
            if claims and min(claim.token for claim in claims) <= self._given:
                for claim in claims:  # the database's, not this node's: given back
                    connection.execute(
                        sql.RELEASE, {"task_id": claim.task_id, "token": claim.token}
                    )
                self._refused = rewound(self.dsn, min(c.token for c in claims), self._given)
                raise StoreError(self._refused)
            for claim in claims:
                self._held[claim.task_id] = claim.token
                self._lost.pop(claim.task_id, None)
                self._given = max(self._given, claim.token)
        return claims

    def renew(self, *, tokens: Collection[int], now: float) -> set[int]:
        """Extend this node's unexpired leases with ``tokens`` by :attr:`lease` seconds of
        the database's clock (``now`` is not used: expiry is the server's); the tokens
        still held."""
        if not tokens:
            return set()
        with self._using("renew leases") as connection:
            rows = connection.execute(
                sql.RENEW, {"tokens": list(tokens), "node": self.node, "lease": self.lease}
            ).fetchall()
            held = {token for (token,) in rows}
            gone = set(tokens) - held
            for task_id, token in self._held.items():
                if token in gone:  # its run goes on here: its RUNNING saves write no state
                    self._lost[task_id] = token
            self._forget(gone)
        return held

    def release(self, *, task_id: str, token: int) -> None:
        """Give back a claim that will not run here (a lease no longer held is ignored)."""
        with self._using("release the claim of task", task_id) as connection:
            connection.execute(sql.RELEASE, {"task_id": task_id, "token": token})
            if self._held.get(task_id) == token:
                del self._held[task_id]

    def settle(self, snapshot: TaskSnapshot, record: ExecutionRecord, *, token: int) -> None:
        """Drop the lease with ``token``, write the task's state and ``record``, in one
        statement, now (the settles queued before it first); :class:`LeaseLost`
        (nothing written, counted in :attr:`rejected`) if the lease is no longer held.
        If another node rewrote the row during the run, its write wins and the run adds
        only its counts and its record; the run still decides the due instant when
        that write left it at the claimed slot, or when this node had followed it
        (``postgres_sql._WHEN``)."""
        check_written(snapshot, (record,))
        with self._using("settle task", snapshot.task.id):
            refused = self._settle_batch([Pending(token, snapshot, (record,))])
        if refused:
            raise LeaseLost(task_id=snapshot.task.id, token=token)

    def misfired(
        self,
        snapshot: TaskSnapshot,
        records: Sequence[ExecutionRecord],
        *,
        token: int,
        release: bool,
    ) -> None:
        """Write what the claim with ``token`` decided for its slot without running it (a
        misfire, or a slot its dependencies held), in one transaction (the settles queued
        before it first), only while that lease is held; see :meth:`CoordinatedStore.misfired
        <lldsched.persistence.CoordinatedStore.misfired>`.  :class:`LeaseLost` (nothing
        written, counted in :attr:`rejected`) otherwise."""
        check_written(snapshot, records)
        task_id = snapshot.task.id
        with self._using("write what the claim decided for task", task_id) as connection:
            with self._transaction(connection, task_id):
                # Lock order: the id (a new definition's upsert takes it: FIRST_VERSION),
                # the task's row, then its lease (as the claim and the settle).
                lease = {"task_id": task_id, "token": token}
                connection.execute(sql.LOCK_ID, {"id": task_id})
                connection.execute(sql.LOCK_TASK, lease)
                if release:
                    held = connection.execute(sql.RELEASE, lease).rowcount == 1
                else:
                    moved = connection.execute(
                        sql.MOVE_LEASE, {**lease, "slot": snapshot.next_run_at}
                    )
                    held = moved.rowcount == 1
                if held:  # the lease proves the row exists: an update, never a
                    # registration (refused as another node's id by a node not loaded)
                    self._write(connection, snapshot, unknown=sql.UPSERT)
                    for record in records:
                        self._append(connection, record)
            if release or not held:
                self._forget({token})
            if not held:
                self.rejected += 1
                self._reread.add(task_id)  # the new holder's row: this registry's truth
                raise LeaseLost(task_id=task_id, token=token)

    def flush(self) -> None:
        """Write every settle queued now, in one statement (the writer thread does so as
        soon as it can; the runtime calls this at shutdown and in ``wait_idle()``).  A
        settle refused is logged and counted in :attr:`rejected`, its task's row given
        again by the next :meth:`changes`, and the ``wake`` given to :meth:`subscribe`
        called once the lock is let go, so that the scheduler reads it now; a batch that
        cannot be written is held and tried again before the store's next statement
        (:meth:`~lldsched.stores.postgres_batch.SettleQueue.hold`: a run whose lease
        another node took over meanwhile is refused then), and logged as the core logs a
        failing store, once an outage (``_write_settles``)."""
        self._refuse_if_forked()
        with self._lock, self._deadline.call():  # one timeout for all it sends
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
        (:func:`~lldsched.persistence.settles_waiting`)."""
        return self._settles.waiting

    def _write_settles(self) -> None:
        """Write the queued settles (caller holds the lock).  A batch that fails is
        logged by :class:`~lldsched.core.storewrites.StoreWrites`, the one rule of a
        failing store: the first of an outage at error level with its traceback, each
        later one at debug level, and one warning when a batch is written again,
        counting the batches failed, the settles not stored and the runs' records
        written late.  The settles of a batch that fails are held
        (:meth:`~lldsched.stores.postgres_batch.SettleQueue.hold`) and taken again,
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
                rows = self._open().execute(sql.SETTLE, parameters).fetchall()
                retried = any(pending.tried for pending in batch)
            except psycopg.Error:
                connection = self._connection
                if connection is not None and not connection.closed and not connection.broken:
                    raise
                rows = self._open().execute(sql.SETTLE, parameters).fetchall()
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
        """``rows``, a later try's answer to :data:`~lldsched.stores.postgres_sql.SETTLE`
        for ``batch`` after an earlier one's session died, with each refused token that the
        earlier try wrote (its run's record is there: :data:`~lldsched.stores.postgres_sql.
        SETTLED`) marked written; ``own`` unknown for those, so False (the caches this
        node keeps of what it wrote are not updated: its next write sends the
        definition again); and, for each of those, how many of its records that try
        stored.  One statement, on the connection the later try used."""
        by_token = {pending.token: pending for pending in batch}
        refused = [by_token[row[0]] for row in rows if not row[1]]
        found = self._open().execute(sql.SETTLED, {
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

    def _forget(self, tokens: Collection[int]) -> None:
        for task_id, held in list(self._held.items()):
            if held in tokens:
                del self._held[task_id]

    def changes(self) -> list[Change]:
        """Rows (and removals) written by other nodes since the previous call, oldest
        first, each at least once; one statement (one snapshot).

        The horizon read (the oldest transaction then in flight) is this feed's cursor
        for :mod:`lldsched.stores.removals`: every removal below it had committed by
        then, and those below a horizon read ``REMOVALS_KEPT`` ago are deleted.  The
        schema version read with it refuses this call and every later one once a newer
        release upgraded the database (``SchemaInstall._follow_schema``).

        The version it gave for a task is forgotten once no read can give that row or
        removal again: a removed id's rows registered again are new here whatever their
        version (they start past the removals kept: ``postgres_sql.FIRST_VERSION``), and
        a finished task's memory is bounded like the registry.

        The row of a task whose settle (or misfire decision) this node had refused since
        the last call is given too, whoever wrote it and whatever version was given
        before (:data:`~lldsched.stores.postgres_sql.REREAD`, a second statement only
        then): the state of the run that took it over, which this node's registry
        follows instead of what its refused run decided."""
        with self._using("read the change feed") as connection:
            rows = connection.execute(
                sql.CHANGES, {"since": self._since, "node": self.node}
            ).fetchall()
            self._follow_schema(rows[0][2])  # the horizon row's: a newer one refuses
            behind = self._horizons.read(int(rows[0][1]))
            if behind is not None:
                connection.execute(sql.TRIM_REMOVALS, {"below": behind})
            reread = self._reread
            missing = sorted(reread - {row[2] for row in rows[1:]})
            if missing:  # rare: a settle refused since the last read, its row not given
                rows += connection.execute(
                    sql.REREAD, {"ids": missing, "node": self.node}
                ).fetchall()
            self._reread = set()
        since = int(rows[0][1])
        found: list[tuple[int, Change]] = []
        # Finished rows and removals no later read can give again (below the horizon):
        # the versions the feed gave for them are forgotten, unless a later one was read.
        passed: list[tuple[str, int]] = []
        for kind, xid, *columns, leased in rows[1:]:
            task_id, version = columns[0], columns[-1]
            if (kind == 2 or (columns[2] in _FINISHED and not columns[8])) and int(xid) < since:
                passed.append((task_id, version))
            if self._seen.get(task_id, -1) >= version and task_id not in reread:
                continue  # read before (a row whose settle here was refused: again)
            snapshot = None
            if kind == 1:
                try:  # what failed here is not tried again
                    self._unreadable.again(task_id, columns[1], columns[2])
                    snapshot = self._read_snapshot(columns)
                except StoreError as exc:  # newer code's: its state, with the definition known
                    with self._lock:
                        known = self._defined.get(task_id)
                    if self._unreadable.failed(task_id, columns[1], exc, known):  # left out
                        if known is not None:  # had here: gone from here, nothing written
                            found.append((int(xid), Change(task_id, version, None, bool(leased))))
                        continue
                    snapshot = snapshot_of(columns, known)
                else:
                    self._unreadable.read(task_id)
            else:
                self._unreadable.read(task_id)  # removed: a row left out here is gone
            found.append((int(xid), Change(task_id, version, snapshot, bool(leased))))
        # By transaction id, except that an id's row comes after its removals read with it
        # (the row is the id's state in this snapshot: postgres_sql._LIVE_ROW_WINS).
        removed: dict[str, int] = {}
        for xid, change in found:
            if change.snapshot is None:
                removed[change.task_id] = max(xid, removed.get(change.task_id, xid))
        found.sort(key=lambda item: _order(item, removed))
        with self._lock:
            self._since = since
            for _, change in found:
                self._seen[change.task_id] = change.version
                if change.snapshot is None or finished(change.snapshot):
                    self._defined.pop(change.task_id, None)
                    self._decoded.pop(change.task_id, None)
                    self._added.pop(change.task_id, None)  # no record is added to it again
                    if change.snapshot is None:  # removed: its lease went with its row, as
                        self._held.pop(change.task_id, None)  # at a removal here (_delete)
                else:
                    self._defined[change.task_id] = change.snapshot.task
            for task_id, version in passed:  # below the horizon: read xid >= since only
                if self._seen.get(task_id, version) <= version:
                    self._seen.pop(task_id, None)
        return [change for _, change in found]

    def unloaded(self) -> list[str]:
        """The ids of the tasks in the database this node left out, sorted: rows whose
        definition it cannot load (another release's, in a rolling deploy), each said
        once at WARNING (:class:`~lldsched.stores.unreadable.Unreadable`).  The nodes that can
        load them run them; this one neither deletes nor rewrites them."""
        return self._unreadable.left_out()

    def take_over(self, definition: Task) -> TaskSnapshot | None:
        """A registration here, with ``replace_existing=True``, of a task this node left
        out (:meth:`unloaded`): the row takes ``definition`` and keeps its state and
        history, as any replacement does; the row's snapshot with it.  None when the task
        is not one left out here (or its row is gone): nothing written.  See
        :meth:`CoordinatedStore.take_over <lldsched.persistence.CoordinatedStore.take_over>`."""
        task_id = definition.id
        if self._unreadable.text(task_id) is None:
            return None
        text = encode_task(definition)
        with (
            self._using("take over task", task_id) as connection,
            self._transaction(connection, task_id),
        ):
            status = connection.execute(
                "SELECT status FROM tasks WHERE id = %s FOR UPDATE", (task_id,)
            ).fetchone()
            if status is not None:
                check_take_over(task_id, status[0])  # a status this release does not know: refused
            row = connection.execute(
                f"{sql.REDEFINE} RETURNING {sql.SNAPSHOT_COLUMNS}",
                {
                    "id": task_id,
                    "name": definition.name,
                    "definition": text,
                    "priority": int(definition.priority),
                    "writer": self.node,
                },
            ).fetchone()
            snapshot = None if row is None else snapshot_of(row, definition)
            if row is not None:
                if self._hold is not None:  # a registration's hold: stored or lost with it
                    self._hold.wrote(task_id, snapshot)
                self._defined[task_id] = definition
                self._seen[task_id] = row[-1]
        self._unreadable.read(task_id)
        return snapshot

    def owe(self, snapshot: TaskSnapshot) -> bool:
        """Write what the at-least-once rule decided for a ``running`` row no lease holds
        (written by a process that died mid-run, outside the shared protocol):
        ``snapshot``, and an expired lease for its owed attempt, in one transaction, only
        while the row is still so; True if written.  See :meth:`CoordinatedStore.owe
        <lldsched.persistence.CoordinatedStore.owe>`."""
        due = snapshot.next_run_at
        if due is None:
            return False
        check_written(snapshot, ())
        task_id = snapshot.task.id
        with (
            self._using("write the attempt owed of task", task_id) as connection,
            self._transaction(connection, task_id),
        ):
            connection.execute(sql.LOCK_ID, {"id": task_id})  # the lock order: id, row, lease
            if connection.execute(sql.RUNNING_UNLEASED, {"id": task_id}).fetchone() is None:
                return False  # written first by another node, or gone
            self._write(connection, snapshot, unknown=sql.UPSERT)
            connection.execute(
                sql.OWED_LEASE,
                {"id": task_id, "slot": due, "attempt": snapshot.attempt, "holder": DIED_UNSHARED},
            )
        return True

    def _read_snapshot(self, row: Sequence[Any]) -> TaskSnapshot:
        """The snapshot of a row; its definition decoded only if its text is not the one
        decoded last time for the task (the feed gives every run settled elsewhere).  A
        decorator (``Window``, ``Jittered``, one's own: a schedule that keeps one in
        ``.schedule``), which may hold a ``Window`` whose state the row's counters
        restore, is decoded every time."""
        task_id, definition = row[0], row[1]
        known = self._decoded.get(task_id)
        if known is not None and known[0] == definition:
            return snapshot_of(row, known[1])
        snapshot = snapshot_of(row)  # its values checked before the definition is decoded
        if wrapped_schedule(snapshot.task.schedule) is None:
            self._decoded[task_id] = (definition, snapshot.task)
        return snapshot

    def leases(self) -> list[Lease]:
        """Every lease row now, expired ones included, by token (for people, tests and
        the runtime's ``metrics()``: ``CoordinatedStore.leases``); a
        :class:`~lldsched.stores.unreadable.BadValue` naming a value no write makes
        (:func:`~lldsched.stores.rowvalues.lease_from`)."""
        with self._using("read the leases") as connection:
            rows = connection.execute(
                "SELECT task_id, slot, attempt, token, holder, expires_at FROM leases "
                "ORDER BY token"
            ).fetchall()
        return [lease_from(row) for row in rows]

    def changed(self) -> bool:
        """Always True: the feed is one indexed query, and only writes that may matter now
        are notified: a task made the earliest due, a row whose run is in flight on
        another node (PostgreSQL's NOTIFY serialises the commits that send it)."""
        return True

    def subscribe(self, wake: Callable[[], None]) -> None:
        """LISTEN on a connection of its own and call ``wake()`` whenever another node
        makes a task the earliest due, or writes a row whose run is in flight here (a
        verb the run must follow), and after every reconnection; and call it from
        :meth:`flush` once a settle was refused (the row to read again).  Behind a
        pooler that lends its sessions a transaction at a time (:attr:`pooled`) it does
        not LISTEN: the LISTEN would be the lent server connection's, its notifications
        never this store's; the runtime's poll reads other nodes' writes
        (docs/OPERATIONS.md, "Behind PgBouncer")."""
        self._refuse_if_forked()  # a child forked would listen for the parent's node
        if self._listener is not None:
            self._listener.stop()
        self._wake = wake
        if self.pooled:  # a LISTEN would be a lent server connection's, not this store's
            log.info(
                "the PostgreSQL store %r is reached through a connection pooler: no LISTEN, "
                "other nodes' writes are read at each poll (%g s)",
                self.dsn,
                self.poll,
            )
            return
        self._listener = Listener(
            self._dsn, channel=self._channel, node=self.node, wake=wake, timeout=self._timeout
        )

    @contextlib.contextmanager
    def muted(self) -> Iterator[None]:
        """Saves and deletes write nothing inside (the runtime is applying another
        node's change, which the row already holds)."""
        self._muted += 1
        try:
            yield
        finally:
            self._muted -= 1
