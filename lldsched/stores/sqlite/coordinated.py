"""The shared mode of :class:`~lldsched.stores.sqlite.SqliteTaskStore`: its
:class:`~lldsched.coordination.CoordinatedStore` methods (docs/CLUSTER.md).

:class:`CoordinatedMethods` is mixed into the store, as the core's definition
verbs are into the core: claims, renewal, release, the fenced settle, what a claim
decided without a run, the change feed, a row taken over or owed, and muting, each under
the store's one lock, on its one connection, taken through the store's ``_using``
(SQLite's errors become a StoreError naming the file and the call).  The statements and
the per-process state are in :mod:`lldsched.stores.sqlite.shared`; the row statements
both modes write with in :mod:`lldsched.stores.sqlite.rows`; the shared mode's
``save``, ``save_all`` and ``resave``, and the row writes under a new version that a
settle makes too, in :mod:`lldsched.stores.sqlite.shared_writes`; a verb's hold in
:mod:`lldsched.stores.sqlite.holds`.  Every method raises
:class:`~lldsched.errors.StoreError` on a store opened without ``shared=True``.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Collection, Iterator, Sequence

from lldsched.coordination import DIED_UNSHARED, Change, Claim, Lease
from lldsched.core.names import runnable
from lldsched.errors import LeaseLost, StoreError
from lldsched.model import ExecutionRecord
from lldsched.persistence import Task, TaskSnapshot, finished
from lldsched.stores.codec import check_written, encode_task
from lldsched.stores.rowvalues import check_take_over, plan_ends
from lldsched.stores.sqlite.parts import SqliteParts
from lldsched.stores.sqlite.rows import (
    RESUME_AT,
    SLOT,
    TASK_COLUMNS,
    TASKS,
    fetch,
    immediate,
    snapshot_of,
)
from lldsched.stores.sqlite.shared import TAKE as _TAKE
from lldsched.stores.sqlite.shared import SharedState, bump
from lldsched.stores.sqlite.shared_writes import redefine_row

__all__ = ["CoordinatedMethods"]

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


class CoordinatedMethods(SqliteParts):
    """The CoordinatedStore methods of SqliteTaskStore: mixed into it."""

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
        <lldsched.coordination.CoordinatedStore.claim>`."""
        with self._using("claim runs") as connection:
            shared = self._coordinated()
            shared.check_file()  # a removed or replaced file: claim nothing (StoreError)
            if self._claim is not None:  # its lock file deleted: claimed again, or StoreError
                self._claim.check()
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
                # a run that ended its task ends it after a pause (postgres/lease_sql._ENDS),
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
                    # postgres/lease_sql._AS_RESUMED); the run's PAUSED once kept it paused.
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
        The same rule as PostgreSQL's (``postgres/lease_sql._WHEN``)."""
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
        <lldsched.coordination.CoordinatedStore.misfired>`.  :class:`LeaseLost` (nothing
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
        :meth:`CoordinatedStore.changes <lldsched.coordination.CoordinatedStore.changes>`).
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
        :meth:`CoordinatedStore.take_over <lldsched.coordination.CoordinatedStore.take_over>`."""
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
                version = redefine_row(connection, definition)
            shared.unreadable.read(task_id)
            self._defined[task_id] = definition
            self._wrote(shared, snapshot, version)
        return snapshot

    def owe(self, snapshot: TaskSnapshot) -> bool:
        """Write what the at-least-once rule decided for a ``running`` row no lease holds
        (an unshared process died mid-run): ``snapshot``, and an expired lease for its
        owed attempt, in one transaction, only while the row is still so; True if written.
        See :meth:`CoordinatedStore.owe <lldsched.coordination.CoordinatedStore.owe>`."""
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


def _version(change: Change) -> int:
    return change.version
