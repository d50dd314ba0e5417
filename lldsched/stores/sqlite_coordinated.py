"""The shared mode of :class:`~lldsched.stores.sqlite.SqliteTaskStore`: its
:class:`~lldsched.persistence.CoordinatedStore` methods (docs/CLUSTER.md).

:class:`CoordinatedMethods` is mixed into the store, as the core's definition
verbs are into the core: claims, renewal, release, the fenced settle, the change
feed and muting, each under the store's one lock, on its one connection, taken
through the store's ``_using`` (SQLite's errors become a StoreError naming the file
and the call).  The
statements and the per-process state are in :mod:`lldsched.stores.sqlite_shared`;
the row statements both modes write with in :mod:`lldsched.stores.sqlite_rows`.
Every method raises :class:`~lldsched.errors.StoreError` on a store opened
without ``shared=True``.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import TYPE_CHECKING

from lldsched.core.names import runnable
from lldsched.errors import LeaseLost, StoreError, ValidationError
from lldsched.logs import CLUSTER
from lldsched.model import ExecutionRecord, TaskStatus
from lldsched.persistence import DIED_UNSHARED, Change, Claim, Lease, Task, TaskSnapshot, finished
from lldsched.stores.codec import check_written, encode_task
from lldsched.stores.held import HeldWrites
from lldsched.stores.rowvalues import check_take_over, plan_ends
from lldsched.stores.sqlite_gate import WriteGate
from lldsched.stores.sqlite_rows import (
    LAST_FAILED,
    RESUME_AT,
    SLOT,
    TASK_COLUMNS,
    TASKS,
    begin,
    failure,
    fetch,
    immediate,
    rollback,
    snapshot_of,
    written,
)
from lldsched.stores.sqlite_shared import TAKE as _TAKE
from lldsched.stores.sqlite_shared import SharedState, bump

__all__ = ["CoordinatedMethods"]

log = logging.getLogger(CLUSTER)

_CONTROL = ("paused", "cancelled")  # statuses a control verb writes, which win over a settle
_OWED = ("retrying", "failed")  # a run that ends so decides, a new definition followed or not
_LIVE = ("scheduled", "retrying")  # the statuses a claim picks (a resume writes one)
# A row a shared write never makes (a held run's RUNNING save writes nothing): one an
# unshared process left as it died mid-run, for ``owe`` to decide.
_EXPIRED = 0.0  # the expiry of the lease ``owe`` writes: the epoch (finite, as every lease's)
_RUNNING_UNLEASED = """
SELECT 1 FROM tasks t WHERE t.id = ? AND t.status = 'running'
   AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.task_id = t.id)
"""


class CoordinatedMethods:
    """The CoordinatedStore methods of SqliteTaskStore: mixed into it."""

    # What the store provides (lldsched.stores.sqlite.SqliteTaskStore).
    path: str
    _lock: threading.RLock
    _shared: SharedState | None
    _connection: sqlite3.Connection | None
    _defined: dict[str, Task]
    _counts: dict[str, int]
    _gate: WriteGate | None
    if TYPE_CHECKING:

        def _using(
            self, doing: str, task_id: str | None = None
        ) -> contextlib.AbstractContextManager[sqlite3.Connection]: ...
        def _append(
            self, connection: sqlite3.Connection, record: ExecutionRecord, *, seq: int
        ) -> int: ...
        def _refuse_if_forked(self) -> None: ...

    @property
    def shared(self) -> bool:
        """True when opened with ``shared=True``: the runtime coordinates through claims."""
        return self._shared is not None

    @property
    def node(self) -> str:
        """This process's holder id in the leases it takes (shared mode)."""
        return self._coordinated().node

    @property
    def lease(self) -> float:
        """Seconds a claim lasts unless renewed (shared mode)."""
        return self._coordinated().lease

    @property
    def poll(self) -> float:
        """The longest a scheduler goes without claiming and reading changes (shared mode)."""
        return self._coordinated().poll

    @property
    def rejected(self) -> int:
        """Settles refused so far because their lease was lost (shared mode)."""
        return self._coordinated().rejected

    def claim(
        self,
        *,
        now: float,
        limit: int,
        among: Collection[str] | None = None,
        leaving: Collection[str] = (),
    ) -> list[Claim]:
        """Claim up to ``limit`` due runs (only of ``among``, none of ``leaving``), each
        with a lease and a fresh fencing token; see :meth:`CoordinatedStore.claim
        <lldsched.persistence.CoordinatedStore.claim>`."""
        with self._using("claim runs") as connection:
            shared = self._coordinated()
            shared.check_file()  # a removed or replaced file: claim nothing (StoreError)
            return shared.claim(connection, now=now, limit=limit, among=among, leaving=leaving)

    def renew(self, *, tokens: Collection[int], now: float) -> set[int]:
        """Extend the leases this process holds with ``tokens``; the tokens still held."""
        with self._using("renew leases") as connection:
            return self._coordinated().renew(connection, tokens=tokens, now=now)

    def release(self, *, task_id: str, token: int) -> None:
        """Give back a claim that will not run here (ignored if no longer held)."""
        with self._using("release the claim of task", task_id) as connection:
            self._coordinated().release(connection, task_id=task_id, token=token)

    def settle(self, snapshot: TaskSnapshot, record: ExecutionRecord, *, token: int) -> None:
        """Write the run's record and the task's state after it, and drop the lease, only
        while the lease with ``token`` is held; :class:`LeaseLost` (nothing written)
        otherwise.  A pause or cancel another process wrote during the run wins over
        the run's status (the task stays paused or cancelled; the record is kept; a run
        that succeeded or failed for good ends its task all the same after a pause), and
        so does the due instant of a new definition this process had not followed
        (:meth:`_unfollowed`)."""
        self._settle(snapshot, (record,), token=token)

    def _settle(
        self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord], *, token: int
    ) -> None:
        """:meth:`settle` with every one of ``records`` (the run's, then the slots it
        skipped) in its one transaction."""
        check_written(snapshot, records)
        task_id = snapshot.task.id
        with self._using("settle task", task_id) as connection:
            shared = self._coordinated()
            with immediate(connection, self._gate):
                row = connection.execute(
                    "SELECT status, version FROM tasks WHERE id = ?", (task_id,)
                ).fetchone()
                unfollowed = None
                known = self._defined.get(task_id, snapshot.task)
                # Written elsewhere since this process last wrote or read the row (a row it
                # only loaded at its start counts as read: the cursor is past it; compared
                # with `seen` alone, such a row's pause or cancel was taken for its own).
                elsewhere = row is not None and not shared.knows(task_id, row[1])
                if row is not None and (
                    elsewhere or (known is not snapshot.task and known != snapshot.task)
                ):  # rare: read before the lease goes, which holds the slot that was run
                    unfollowed = self._unfollowed(connection, snapshot, token=token)
                if not shared.take_lease(connection, task_id=task_id, token=token):
                    shared.refetch.add(task_id)  # the new holder's state is the truth
                    raise LeaseLost(task_id=task_id, token=token)
                status = snapshot.status.value
                # A pause or cancel written elsewhere during the run wins over its status;
                # a run that ended its task ends it after a pause (postgres_sql._ENDS),
                # while a cancel is final, as in one process.
                overridden = (
                    elsewhere
                    and row is not None
                    and row[0] in _CONTROL
                    and (row[0] == "cancelled" or status not in ("succeeded", "failed"))
                )
                if overridden:  # a control verb from elsewhere, written during the run
                    status = row[0]
                    if status == "cancelled":
                        snapshot = snapshot._replace(next_run_at=None)
                elif elsewhere and status == "paused" and row is not None and row[0] in _LIVE:
                    # Paused here (or followed so) during the run, then resumed elsewhere
                    # after that: the task is runnable again from the run's next slot, as
                    # one process returns a task resumed mid-run to its run (PostgreSQL's
                    # postgres_sql._AS_RESUMED); the run's PAUSED once kept it paused.
                    status = runnable(snapshot.attempt).value
                    overridden = True
                if unfollowed is not None:  # read back: this process follows the row
                    if unfollowed is not snapshot and not overridden:
                        status = row[0]  # the write's status goes with its when
                    snapshot = unfollowed
                    overridden = True
                version = self._write_state(connection, snapshot, status=status)
                for record in records:
                    count = self._append(connection, record, seq=bump(connection, "record"))
                    self._counts[task_id] = count
            shared.settled[task_id] = token
            if overridden:
                shared.refetch.add(task_id)  # this process must follow the row, not its own
            else:
                self._wrote(shared, snapshot, version)

    def _unfollowed(
        self, connection: sqlite3.Connection, snapshot: TaskSnapshot, *, token: int
    ) -> TaskSnapshot | None:
        """Inside a settle, for a row written since this process last read it (or read
        and not yet followed): ``snapshot`` with the row's due instant, attempt and plan
        if that write was a new definition (a reschedule, a replacement) that moved the
        due instant from the slot and attempt the lease holds; None otherwise.  This
        process's registry had not taken the new schedule, so the run could not count
        it from its finish; the write's own due instant stands.  A definition this
        process had followed was counted from the finish, and its settle decides, as
        in one process.  A run that owes its slot a retry, or failed it for good, decides
        all the same (``snapshot`` itself is returned): one process retries first, then
        counts the new schedule, and a new definition never changes whether a task runs.
        The same rule as PostgreSQL's (``postgres_sql._WHEN``)."""
        task_id = snapshot.task.id
        lease = connection.execute(
            "SELECT slot, attempt FROM leases WHERE task_id = ? AND token = ?", (task_id, token)
        ).fetchone()
        row = connection.execute(
            f"SELECT definition, next_run_at, attempt, waited, {SLOT.format(t='')}, "
            f"{RESUME_AT.format(t='')}, grid FROM tasks WHERE id = ?",
            (task_id,),
        ).fetchone()
        if lease is None or row is None or row[0] == encode_task(snapshot.task):
            return None
        if (row[1], row[2]) == tuple(lease):
            return None  # the when stayed where the claim found it: the run decides it
        if snapshot.status.value in _OWED:
            return snapshot
        resumes, until = plan_ends(row[3], row[5])
        return snapshot._replace(
            next_run_at=row[1], attempt=row[2], waited=row[3], slot=row[4], resumes=resumes,
            until=until, grid=row[6],
        )  # fmt: skip

    def misfired(
        self,
        snapshot: TaskSnapshot,
        records: Sequence[ExecutionRecord],
        *,
        token: int,
        release: bool,
    ) -> None:
        """Write what the claim with ``token`` decided for its slot without running it (a
        misfire, or a slot its dependencies held), in one transaction, only while that
        lease is held; see :meth:`CoordinatedStore.misfired
        <lldsched.persistence.CoordinatedStore.misfired>`.  :class:`LeaseLost` (nothing
        written, counted in :attr:`rejected`) otherwise."""
        check_written(snapshot, records)
        task_id = snapshot.task.id
        with self._using("write what the claim decided for task", task_id) as connection:
            shared = self._coordinated()
            with immediate(connection, self._gate):
                if release:
                    held = shared.take_lease(connection, task_id=task_id, token=token)
                else:
                    held = (
                        connection.execute(
                            "UPDATE leases SET slot = ? WHERE task_id = ? AND token = ?",
                            (snapshot.next_run_at, task_id, token),
                        ).rowcount
                        == 1
                    )
                if not held:
                    shared.rejected += 1
                    shared.refetch.add(task_id)  # the new holder's state is the truth
                    raise LeaseLost(task_id=task_id, token=token)
                version = self._write_state(connection, snapshot, status=snapshot.status.value)
                count = None
                for record in records:
                    count = self._append(connection, record, seq=bump(connection, "record"))
            if count is not None:
                self._counts[task_id] = count
            self._wrote(shared, snapshot, version)

    def changes(self) -> list[Change]:
        """Task rows other processes wrote since the last call, oldest first (see
        :meth:`CoordinatedStore.changes <lldsched.persistence.CoordinatedStore.changes>`).
        A row whose definition no longer imports here is logged and left out (its state
        still given for a task this process has); so is a row whose status this release
        does not know, given as removed for a task this process has
        (:class:`~lldsched.stores.unreadable.Unreadable`)."""
        with self._using("read the change feed") as connection:
            shared = self._coordinated()
            rows, removed = shared.changed_rows(connection)
        found: list[Change] = [Change(task_id, version, None) for version, task_id in removed]
        for _, task_id in removed:
            shared.unreadable.read(task_id)  # a row left out here is gone
        unreadable = shared.unreadable
        for task_id, version, definition, status, *state, leased in rows:
            try:
                unreadable.again(task_id, definition, status)  # what failed: not tried again
                snapshot = snapshot_of(task_id, definition, status, state)
            except StoreError as exc:  # newer code's: its state, with the definition known
                with self._lock:
                    known = self._defined.get(task_id)
                if unreadable.failed(task_id, definition, exc, known):  # left out here
                    if known is not None:  # had here: gone from here, nothing written
                        # (a version that is no integer, a row set wrong, sorts first)
                        number = version if type(version) is int else 0
                        found.append(Change(task_id, number, None, bool(leased)))
                    continue
                snapshot = snapshot_of(task_id, definition, status, state, task=known)
            else:
                unreadable.read(task_id)
            found.append(Change(task_id, version, snapshot, bool(leased)))
        with self._lock:  # a finished task is not cached: its row is written in full again
            for change in found:
                if change.snapshot is None or finished(change.snapshot):
                    self._defined.pop(change.task_id, None)
                    self._counts.pop(change.task_id, None)
                else:
                    self._defined[change.task_id] = change.snapshot.task
        found.sort(key=_version)
        return found

    def unloaded(self) -> list[str]:
        """The ids of the tasks in the store this process left out, sorted: rows whose
        definition it cannot load (another release's, in a rolling deploy), each said
        once at WARNING (:class:`~lldsched.stores.unreadable.Unreadable`).  The processes that
        can load them run them; this one neither deletes nor rewrites them."""
        self._refuse_if_forked()  # before the lock (as _using does)
        with self._lock:
            return self._coordinated().unreadable.left_out()

    def take_over(self, definition: Task) -> TaskSnapshot | None:
        """A registration here, with ``replace_existing=True``, of a task this process
        left out (:meth:`unloaded`): the row takes ``definition`` and keeps its state and
        history, as any replacement does; the row's snapshot with it.  None when the task
        is not one left out here (or its row is gone): nothing written.  See
        :meth:`CoordinatedStore.take_over <lldsched.persistence.CoordinatedStore.take_over>`."""
        task_id = definition.id
        with self._using("replace task", task_id) as connection:
            shared = self._coordinated()
            if shared.unreadable.text(task_id) is None:
                return None
            with immediate(connection, self._gate):
                one = f"SELECT {TASK_COLUMNS} FROM {TASKS} WHERE t.id = ?"
                found = fetch(connection, one, (task_id,))
                row = found[0] if found else None
                if row is None:
                    shared.unreadable.read(task_id)
                    return None
                check_take_over(task_id, row[2])  # a status this release does not know: refused
                # A value it cannot read (BadValue): refused before anything is written.
                snapshot = snapshot_of(row[0], row[1], row[2], list(row[3:]), task=definition)
                version = _redefine_row(connection, definition)
            shared.unreadable.read(task_id)
            self._defined[task_id] = definition
            self._wrote(shared, snapshot, version)
        return snapshot

    def owe(self, snapshot: TaskSnapshot) -> bool:
        """Write what the at-least-once rule decided for a ``running`` row no lease holds
        (an unshared process died mid-run): ``snapshot``, and an expired lease for its
        owed attempt, in one transaction, only while the row is still so; True if written.
        See :meth:`CoordinatedStore.owe <lldsched.persistence.CoordinatedStore.owe>`."""
        due = snapshot.next_run_at
        if due is None:
            return False
        check_written(snapshot, ())
        task_id = snapshot.task.id
        with self._using("write the attempt owed of task", task_id) as connection:
            shared = self._coordinated()
            with immediate(connection, self._gate):
                if not connection.execute(_RUNNING_UNLEASED, (task_id,)).fetchone():
                    return False  # written first by another process, or gone
                version = self._write_state(connection, snapshot, status=snapshot.status.value)
                connection.execute(
                    _TAKE,
                    (task_id, due, snapshot.attempt, bump(connection, "token"), DIED_UNSHARED,
                     _EXPIRED),
                )  # fmt: skip
            self._wrote(shared, snapshot, version)
        return True

    def changed(self) -> bool:
        """True when another process committed since the last :meth:`changes` (one pragma;
        if none did, the removals a day old are trimmed here: :meth:`SharedState.changed`)."""
        with self._using("read the change feed") as connection:
            return self._coordinated().changed(connection)

    def subscribe(self, wake: Callable[[], None]) -> None:
        """SQLite tells no other process of a commit: ``wake`` is never called, and the
        scheduler's bounded wait (``poll``) is how changes are noticed."""
        self._refuse_if_forked()  # as every other call (a scheduler made in a child)
        self._coordinated()

    def flush(self) -> None:
        """Nothing to write: every settle is written when it is made (shared SQLite keeps
        its one writer's transactions short rather than batching them)."""
        self._refuse_if_forked()  # as every other call

    @contextlib.contextmanager
    def muted(self) -> Iterator[None]:
        """Inside, ``save`` and ``delete`` write nothing: the caller is applying another
        process's change to its own registry."""
        self._refuse_if_forked()  # before the lock (as _using does)
        with self._lock:
            shared = self._coordinated()
            shared.muted += 1
        try:
            yield
        finally:
            with self._lock:
                shared.muted -= 1

    @contextlib.contextmanager
    def verb_held(self, task_id: str, also: Sequence[str] = ()) -> Iterator[None]:
        """Inside, this process writes alone: a control verb (pause, cancel, resume,
        modify, ...) reads the change feed and writes its rows in one transaction that
        holds SQLite's write lock (``BEGIN IMMEDIATE``) and this store's lock throughout
        (see :func:`~lldsched.persistence.verb_held`): every row, ``also``'s included.  So
        no other process's write (a run's settle) lands between the row the verb read and
        the row it writes, which then wrote back the row as it was before that run.  Every
        write inside is a savepoint of it (:func:`~lldsched.stores.sqlite_rows.immediate`);
        what they wrote is committed at the end, whatever the block raised (the verb's
        registry has it).  The write lock not taken within ``timeout`` (another process
        holds it that long): the block runs unheld, as before, and a write of it that
        fails is a failed write (its rewrite is conditional:
        :func:`~lldsched.persistence.resave`).

        A hold whose end fails stored none of them: its COMMIT failing (a full disk), or
        its transaction found gone at the end (SQLite rolls a whole transaction back on
        some errors of a statement inside, a full disk or an I/O error: the writes before
        it were lost; a call after it is refused, :meth:`_hold_gone`, where it committed
        alone, outside the hold, and let the hold's write gate go).  Then the caches are
        put back as they were before them (the feed's cursor too, which this process's own
        writes move on: a version rolled back is taken again by another process's next write)
        and :class:`~lldsched.persistence.HoldNotCommitted` names every task written
        (:mod:`lldsched.stores.held`), for the runtime to write again, and what failed:
        the call inside whose failure SQLite rolled the transaction back, and SQLite's
        words (:meth:`_ended_hold`), or the COMMIT's error.

        A hold inside a hold (on this store, the outer one still under way) is the outer
        one's: its writes are the outer transaction's, which holds every row already,
        stored or not with them and said once, by the outer hold, as PostgreSQL's
        (``PostgresTaskStore._hold_inside``).  Before, its ``BEGIN IMMEDIATE`` failed
        ("cannot start a transaction within a transaction"), taken for a write lock not
        had within ``timeout``: the block ran "unheld" (in the outer transaction all the
        same), its own error chained to that one, and the failed begin let the write gate
        go (:mod:`~lldsched.stores.sqlite_gate`), which the outer hold held: the other
        processes' writes then waited for its end in SQLite's busy handler."""
        with self._using("take the write lock for a verb on task", task_id) as connection:
            shared = self._coordinated()
            if shared.hold is not None:  # a hold inside a hold: the outer one's
                yield
                return
            gate = self._gate
            try:
                begin(connection, gate)  # in turn with the other processes' writes
            except sqlite3.OperationalError:  # locked past the timeout: as before, unheld
                yield
                return
            held = shared.hold = HeldWrites(
                (self._defined, self._counts, shared.seen, shared.settled, shared.held)
            )
            cursor, removals = shared.cursor, set(shared.removals)
            try:
                yield
            finally:
                shared.hold = None
                failed: StoreError | None = None
                try:
                    if connection.in_transaction:
                        connection.execute("COMMIT")
                    else:  # rolled back under the hold by a statement that failed inside
                        failed = held.ended_error(
                            f"the SQLite store {self.path!r}",
                            "found its transaction rolled back at its end, by no call of the "
                            "store's that failed",
                        )
                except sqlite3.Error as exc:
                    rollback(connection)
                    failed = failure(self.path, "commit it", exc)
                    failed.__cause__ = exc
                except BaseException:
                    rollback(connection)
                    raise
                finally:
                    if gate is not None:
                        gate.release()
                if failed is not None:
                    shared.cursor = min(shared.cursor, cursor)  # read again from there
                    shared.removals &= removals  # the hold's own removals are undone
                    raise held.undo(failed) from failed.__cause__  # what ended it

    def _ended_hold(self, doing: str, error: sqlite3.Error, failed: StoreError) -> None:
        """A call (``doing``: ``"save task 'a'"``) failed with SQLite's ``error`` (``failed``:
        the StoreError it raises; caller holds the lock): inside a verb's hold whose
        transaction SQLite rolled back with it (a full disk, an I/O error), noted for the
        hold's end to name (:meth:`HeldWrites.ended_error
        <lldsched.stores.held.HeldWrites.ended_error>`: the first such call, and how many
        failed after it).  Before, it said only that SQLite rolled its transaction back,
        not on what nor why."""
        shared, connection = self._shared, self._connection
        if shared is None or shared.hold is None or connection is None:
            return
        if not connection.in_transaction:
            shared.hold.ended(
                doing,
                "and SQLite rolled its transaction back",
                f"{type(error).__name__}: {error}",
                failed,
            )

    def _hold_gone(self, doing: str, task_id: str | None) -> StoreError:
        """The error of a call (``doing``, of ``task_id``) made inside a verb's hold whose
        transaction is gone (SQLite rolled it back under a call inside that failed, a full
        disk or an I/O error), refused by :class:`~lldsched.stores.sqlite._Using` and
        counted for the hold's end after the call that ended it (caller holds the lock).
        As PostgreSQL's hold refuses a call once its connection is lost
        (``PostgresTaskStore._hold_lost``).  Before, the call ran in a transaction of its
        own: a write committed alone, outside the hold, which then named it among the
        writes not stored, and let go the write gate the hold held
        (:mod:`~lldsched.stores.sqlite_gate`: ``flock`` on a descriptor that holds it
        succeeds), the rest of the hold run with the gate free."""
        shared = self._shared
        assert shared is not None and shared.hold is not None
        held = shared.hold
        held.failed_after()
        if held.ended_by is None:  # a statement run on the connection directly
            why = "rolled back by no call of the store's that failed"
        else:
            ended, _, said, _ = held.ended_by
            why = f"SQLite rolled it back when the call inside to {ended} failed: {said}"
        done = doing if task_id is None else f"{doing} {task_id!r}"
        return StoreError(
            f"the SQLite store {self.path!r} failed to {done}: the verb's hold it was called "
            f"in has no transaction any more ({why}); nothing more is written inside it"
        )

    def leases(self) -> list[Lease]:
        """Every lease row, expired ones included, by token (for people, tests and
        the runtime's ``metrics()``: ``CoordinatedStore.leases``)."""
        with self._using("read the leases") as connection:
            return self._coordinated().leases(connection)

    def _coordinated(self) -> SharedState:
        if self._shared is None:
            raise StoreError(
                f"the store {self.path!r} was opened without shared=True: it coordinates nothing"
            )
        return self._shared

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
                        version = _redefine_row(connection, task)
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
                        _redefine_row(connection, task)
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
        connection.execute("UPDATE tasks SET version = ? WHERE id = ?", (version, snapshot.task.id))
        return version


def _version(change: Change) -> int:
    return change.version


def _redefine_row(connection: sqlite3.Connection, definition: Task) -> int:
    """Inside a shared-mode transaction: write ``definition`` (name, text, priority) to its
    row, if there, keeping the row's state, under a new version; returns the version."""
    version = bump(connection, "change")
    connection.execute(
        "UPDATE tasks SET name = ?, definition = ?, priority = ?, version = ? WHERE id = ?",
        (definition.name, encode_task(definition), definition.priority, version, definition.id),
    )
    return version


def _settles(record: ExecutionRecord) -> bool:
    """Whether ``record``, of a run on a claim (its token set), is that run's own record,
    which settles it (fenced by the token, the lease dropped): one whose outcome is a
    run's (ok, failed, timed out, given up, or cancelled: a run a shutdown cut, its task
    written due at its slot, or one ``Overlap.CANCEL_OTHER`` cut), not a slot it skipped
    (written after that settle).  As PostgreSQL's store settles every such record."""
    misfire = record.misfire
    return misfire is None or misfire.ran
