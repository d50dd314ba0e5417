"""The shared side of :class:`~lldsched.stores.postgres.PostgresTaskStore`: its
:class:`~lldsched.coordination.CoordinatedStore` methods (docs/CLUSTER.md).

:class:`PostgresCoordination` is mixed into the store, as
:class:`~lldsched.stores.sqlite.coordinated.CoordinatedMethods` is into the SQLite one:
claims, renewal and release of leases, what a claim decided without a run (a misfire, a
slot its dependencies held), the change feed, the LISTEN subscription and muting.  The
fenced settle (written now, or queued and written in batches) is
:class:`~lldsched.stores.postgres.settles.PostgresSettles`', mixed in beside it.  Each
statement runs under the store's one lock on its one connection (``_using``); the SQL is
:mod:`lldsched.stores.postgres.lease_sql`'s (claims, leases) and
:mod:`lldsched.stores.postgres.sql`'s (the feed), the rows
:mod:`lldsched.stores.postgres.rows`'.

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

from lldsched.coordination import DIED_UNSHARED, Change, Claim, Lease, claim_narrowed
from lldsched.errors import LeaseLost, StoreError, doc_url
from lldsched.logs import CLUSTER
from lldsched.model import ExecutionRecord
from lldsched.persistence import FINISHED_STATUSES, Task, TaskSnapshot, finished
from lldsched.schedules.objects import wrapped_schedule
from lldsched.stores.codec import check_written, encode_task
from lldsched.stores.postgres import lease_sql, sql
from lldsched.stores.postgres.listen import Listener
from lldsched.stores.postgres.parts import PostgresParts
from lldsched.stores.postgres.rows import snapshot_of
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
        statement = lease_sql.CLAIM
        # Never claimed here: the tasks this node cannot run (left out), and those the
        # caller cannot start now (``among``, ``leaving``).
        narrowed = claim_narrowed(self._unreadable.left_out(), among, leaving)
        if narrowed is not None:
            only, ids = narrowed
            statement = lease_sql.CLAIM_AMONG if only else lease_sql.CLAIM_LEAVING
            parameters["ids"] = ids
        with self._using("claim runs") as connection:
            parameters["held"] = list(self._held.values())  # the rest: lost replies (_LOST_REPLY)
            rows = connection.execute(statement, parameters).fetchall()
            seen = self._seen  # the versions the feed last gave; the row's writer says if ours
            claims = []
            for *claimed, writer, holder in rows:
                claim = Claim(*claimed)
                if claim.taken_over:  # the process whose lease expired: the WARNING's
                    claim = claim._replace(taken_from=holder)
                if writer != self.node and seen.get(claim.task_id, -1) < claim.version:
                    claim = claim._replace(stale=True)  # written elsewhere since the feed's read
                claims.append(claim)
            if claims and min(claim.token for claim in claims) <= self._given:
                for claim in claims:  # the database's, not this node's: given back
                    connection.execute(
                        lease_sql.RELEASE, {"task_id": claim.task_id, "token": claim.token}
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
                lease_sql.RENEW, {"tokens": list(tokens), "node": self.node, "lease": self.lease}
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
            connection.execute(lease_sql.RELEASE, {"task_id": task_id, "token": token})
            if self._held.get(task_id) == token:
                del self._held[task_id]

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
        <lldsched.coordination.CoordinatedStore.misfired>`.  :class:`LeaseLost` (nothing
        written, counted in :attr:`rejected`) otherwise."""
        check_written(snapshot, records)
        task_id = snapshot.task.id
        with self._using("write what the claim decided for task", task_id) as connection:
            with self._transaction(connection, task_id):
                # Lock order: the id (a new definition's upsert takes it: FIRST_VERSION),
                # the task's row, then its lease (as the claim and the settle).
                lease = {"task_id": task_id, "token": token}
                connection.execute(sql.LOCK_ID, {"id": task_id})
                connection.execute(lease_sql.LOCK_TASK, lease)
                if release:
                    held = connection.execute(lease_sql.RELEASE, lease).rowcount == 1
                else:
                    moved = connection.execute(
                        lease_sql.MOVE_LEASE, {**lease, "slot": snapshot.next_run_at}
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
        version (they start past the removals kept: ``postgres/tables.FIRST_VERSION``), and
        a finished task's memory is bounded like the registry.

        The row of a task whose settle (or misfire decision) this node had refused since
        the last call is given too, whoever wrote it and whatever version was given
        before (:data:`~lldsched.stores.postgres.sql.REREAD`, a second statement only
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
        # (the row is the id's state in this snapshot: postgres/sql._LIVE_ROW_WINS).
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
        :meth:`CoordinatedStore.take_over <lldsched.coordination.CoordinatedStore.take_over>`."""
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
        <lldsched.coordination.CoordinatedStore.owe>`."""
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
            if connection.execute(lease_sql.RUNNING_UNLEASED, {"id": task_id}).fetchone() is None:
                return False  # written first by another node, or gone
            self._write(connection, snapshot, unknown=sql.UPSERT)
            connection.execute(
                lease_sql.OWED_LEASE,
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
        :meth:`~lldsched.stores.postgres.settles.PostgresSettles.flush` once a settle
        was refused (the row to read again).  Behind a pooler that lends its sessions a
        transaction at a time (:attr:`pooled`) it does not LISTEN: the LISTEN would be
        the lent server connection's, its notifications never this store's; the
        runtime's poll reads other nodes' writes (docs/OPERATIONS.md, "Behind
        PgBouncer")."""
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
