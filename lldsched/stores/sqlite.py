"""SqliteTaskStore: the durable TaskStore, one SQLite file from the standard library.

Every transition of every task is written through (``save``), so a scheduler
opened on the same file after a crash or a restart finds its tasks, their
statuses, their recent records and the dead letter (see :mod:`lldsched.core.recovery`).

**The file.**  WAL journal mode: a write appends to the log and readers never
block it.  ``synchronous=NORMAL`` by default: a committed transaction survives
the process being killed (what the crash test checks); a power cut or an OS
crash may lose the last transactions before a checkpoint, never consistency.
Pass ``synchronous="FULL"`` to sync at every commit as well (slower).  A file
found in another journal mode (a ``VACUUM INTO`` copy restored) is switched back to
WAL at open, once it was checked
(:meth:`~lldsched.stores.sqlite_schema.FileFormat._keep_wal`).  The schema is
versioned with ``PRAGMA user_version`` and the file marked with
``PRAGMA application_id``: a file from a newer lldsched, or one that is not an
lldsched store, is refused with a :class:`~lldsched.errors.StoreError`, as is a
corrupted one (``PRAGMA quick_check`` at open) and one whose bookkeeping holds a value
of another type than the store writes (text SQLite kept in a numeric column: a row
edited by hand, :meth:`~lldsched.stores.sqlite_schema.FileFormat._check_values`: every
table unshared, the counters alone in shared mode); nothing is written to a file that
was refused. A task's row or its lease holding a value no write of lldsched makes (of
another type, or out of its range) is refused as it is read, by itself
(:func:`~lldsched.stores.rowvalues.snapshot_from`, :func:`~lldsched.stores.rowvalues.check_kept`):
a shared store leaves that task out and runs the others. A file of an older schema version is
migrated at open, in one transaction (:data:`~lldsched.stores.sqlite_schema.MIGRATIONS`;
version 1 had no ``result`` column; the format is
:mod:`lldsched.stores.sqlite_schema`'s). A definition whose callable no longer imports
makes ``load_all`` raise, naming the task, again without touching the file; one whose
path imported it under an alias (a function renamed or moved, its old name kept) is
rewritten to the function's own path once every task has loaded
(:func:`~lldsched.stores.codec.renamed`).

**Rows.**  ``tasks`` holds one row per task: the definition as JSON (see
:mod:`lldsched.stores.codec`; no pickle) and its latest state.  ``records``
appends one row per execution record; at most ``retention`` per task are kept
(the oldest go first; between trims a task may hold up to 10% more, never
returned).  The dead letter is the FAILED rows in the order they failed.

**Threads.**  One connection (``check_same_thread=False``) behind one lock.
The scheduler already serialises every ``save`` under its own lock, and SQLite
admits one writer at a time, so connections per thread would buy no
parallelism; they would add WAL contention between our own writers and lose the
single order of writes.  The lock makes the store safe on its own for callers
outside the scheduler (a reader thread calling ``records()``, the simulation).

**Errors.**  Every call takes the lock and the connection through :class:`_Using`,
the one place SQLite's own errors (a full disk, a read-only file, a database locked
past ``timeout``) become a :class:`~lldsched.errors.StoreError` naming the file and
the call, raised from SQLite's (docs/decisions/store-failures.md, "A store's errors are StoreErrors,
whichever the store").  A file deleted or replaced under the open (unshared) store is
one too, naming the path (:mod:`lldsched.stores.sqlite_file`, checked at most once a
second).

**One store per file.**  An open store claims its file (an OS lock on the sidecar
``<file>.lock``, see :mod:`lldsched.stores.claim`) until :meth:`close`: a second
``SqliteTaskStore`` on the same file, in this process or another, raises
:class:`~lldsched.errors.StoreError` naming the file and its holder, instead of two
schedulers running every task twice.  The claim dies with its process, SIGKILL
included, so a restart after a crash opens the file at once.

**Shared mode** (``shared=True``, docs/CLUSTER.md).  Several schedulers, in the
processes of one host, share the file: each due run is claimed by one of them
through a lease with a fencing token, renewed while it runs, and settled with a
write that is refused once the lease was taken over; control verbs written by
any of them reach the others through a change feed.  Its
:class:`~lldsched.coordination.CoordinatedStore` methods (claims, leases, the fenced
settle, the change feed) are in :mod:`lldsched.stores.sqlite_coordinated`, the shared
mode's ``save``, ``save_all`` and ``resave`` in :mod:`lldsched.stores.sqlite_shared_writes`,
a verb's hold in :mod:`lldsched.stores.sqlite_holds` (all three mixed in), the SQL in
:mod:`lldsched.stores.sqlite_shared`, the row statements both modes share in
:mod:`lldsched.stores.sqlite_rows`.  Shared and unshared openers of one file
refuse each other (the sidecar lock is taken shared, see
:mod:`lldsched.stores.claim`).

What the store reads back (``load_all`` and the history reads) is
:mod:`lldsched.stores.sqlite_reads`' (mixed in, in both modes); this module opens the
file and holds the writes.  What the mixins share (the members set here, the methods one
calls of another) is declared once, by their common base
:class:`~lldsched.stores.sqlite_parts.SqliteParts`.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from types import TracebackType
from typing import NoReturn

from lldsched.checks import flag, seconds, whole_or_none
from lldsched.errors import StoreClosedError, StoreError, ValidationError, shown
from lldsched.logs import STORE
from lldsched.model import ExecutionRecord, TaskStatus
from lldsched.persistence import Task, TaskSnapshot, finished
from lldsched.storechecks import id_asked
from lldsched.stores import forks
from lldsched.stores.claim import FileClaim
from lldsched.stores.codec import check_written, encode_task
from lldsched.stores.sqlite_coordinated import CoordinatedMethods
from lldsched.stores.sqlite_file import (
    PRIVATE,
    FileWatch,
    check_encodable,
    create_owner_only,
    leave_no_frames,
    no_room,
    refuse_empty,
    refuse_folder,
    refuse_read_only,
    refuse_url,
    still_names,
    unopenable,
)
from lldsched.stores.sqlite_gate import WriteGate, gate_for
from lldsched.stores.sqlite_holds import SqliteHolds
from lldsched.stores.sqlite_reads import SqliteReads
from lldsched.stores.sqlite_rows import (
    COUNT_UNFINISHED,
    INSERT_RECORD,
    LAST_FAILED,
    failure,
    immediate,
    written,
)
from lldsched.stores.sqlite_schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION, FileFormat
from lldsched.stores.sqlite_shared import SharedState, bump
from lldsched.stores.sqlite_shared_writes import SharedWrites
from lldsched.stores.unclosed import collected

__all__ = ["APPLICATION_ID", "MIGRATIONS", "SCHEMA_VERSION", "SqliteTaskStore"]

log = logging.getLogger(STORE)

_SYNCHRONOUS = ("NORMAL", "FULL")


def _unopenable(path: str) -> str | None:
    """What is wrong with a store's path that SQLite could not open (None for a private
    database, which has no path)."""
    return None if path in PRIVATE else unopenable(path)


def _check_path_like(path: os.PathLike[str]) -> None:
    """Refuse a path-like whose ``__fspath__`` does not give a ``str``, naming it: one that
    gives ``bytes`` raised a bare ``TypeError`` ("a bytes-like object is required, not
    'str'") from deep inside the open, one that gives anything else or raises a
    ``TypeError`` naming no store.  The store's paths are text (its messages, the
    sidecar lock's name, the shared mode's absolute path)."""
    try:
        given: object = path.__fspath__()
    except Exception as exc:
        raise ValidationError(
            f"path {path!r} is not a file name: its __fspath__() raised {exc!r}"
        ) from exc
    if not isinstance(given, str):
        raise ValidationError(
            f"path {path!r} is not a file name the store can open: its __fspath__() gave "
            f"{given!r}, not a str (a bytes path: decode it with os.fsdecode)"
        )


_LEFT_IN_CHILD: list[sqlite3.Connection] = []
"""The connections a forked child's ``close()`` dropped unclosed: held, so that the
collector never closes them either (:meth:`SqliteTaskStore._let_go_in_child`)."""


class _Using:
    """A store's connection under its lock for one operation, and the one place SQLite's
    own errors (a full disk, a read-only file, a database locked past ``timeout``, a
    table gone from a damaged file) become a :class:`StoreError` naming the file and the
    operation, raised ``from`` SQLite's (its ``__cause__``): a caller catches one type
    whichever store it has, as the PostgreSQL store's errors are StoreErrors too.

    A class, not a ``contextlib.contextmanager``: ``save`` takes it twice a run; over
    the bare lock a generator-based one added about 1.5 microseconds a call, this one
    about 0.3 (a save is some 30)."""

    __slots__ = ("doing", "store", "task_id")

    def __init__(self, store: SqliteTaskStore, doing: str, task_id: str | None) -> None:
        self.store = store
        self.doing = doing  # what is done, said in the error: "save task", "read the records"
        self.task_id = task_id  # the task it is done to, or None

    def __enter__(self) -> sqlite3.Connection:
        store = self.store
        if store._opened_in != forks.current[0]:  # a forked child: refused before the lock,
            store._refuse_if_forked()  # which a thread of the parent may have held at the fork
        lock = store._lock
        lock.acquire()
        try:
            connection = store._open()
            shared = store._shared
            if shared is not None and shared.hold is not None and not connection.in_transaction:
                raise store._hold_gone(self.doing, self.task_id)  # rolled back under the hold
            return connection
        except BaseException:
            lock.release()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        store = self.store
        if isinstance(error, sqlite3.Error):
            raise self._failed(error)
        if store._locked_out is not None:  # waits cut: given back once a write got through
            try:
                store._write_got_through()
            finally:
                store._lock.release()
            return
        store._lock.release()

    def _failed(self, error: sqlite3.Error) -> StoreError:
        """The StoreError for SQLite's ``error`` (its ``__cause__``), once a verb's hold it
        ended was told (under the lock, then let go: the hold is the lock holder's)."""
        store = self.store
        doing = self.doing if self.task_id is None else f"{self.doing} {self.task_id!r}"
        code = getattr(error, "sqlite_errorcode", 0)  # none on an error raised by hand
        if code & 0xFF == sqlite3.SQLITE_BUSY and store._shared is None:
            because: str | None = store._locked()
        else:
            because = None if store.path in PRIVATE else no_room(store.path)  # a statvfs
        failed = failure(store.path, doing, error, because=because)
        failed.__cause__ = error
        try:
            store._ended_hold(doing, error, failed)
        finally:
            store._lock.release()
        return failed


class SqliteTaskStore(CoordinatedMethods, SharedWrites, SqliteHolds, SqliteReads, FileFormat):
    """A durable :class:`~lldsched.persistence.TaskStore` in one SQLite file (WAL mode).

    ``retention`` bounds the records kept per task (default 1,000; ``None``: keep
    all); ``synchronous`` is ``"NORMAL"`` (the default: a commit survives a killed
    process) or ``"FULL"`` (also a power loss, slower); ``timeout`` is how long a
    write waits for a lock held by another connection (seconds, default 5; an unshared
    store that waited it in vain waits no more until a write gets through).
    Use it as a context manager, or call :meth:`close`: the file stays claimed
    until then, and a second store on it raises :class:`StoreError`.  A path that
    cannot be opened raises a :class:`StoreError` naming it and what is wrong with it
    (a folder that does not exist, a file where a folder should be, a folder at the
    path, a folder that cannot be written), not SQLite's bare "unable to open database
    file"; the folder is never created for you.  A file (or its ``-wal`` or ``-shm``)
    this process may not write is refused too, naming it: SQLite would open it
    read-only, and every write after would fail.

    ``shared=True`` lets several schedulers (processes of one host) share the file
    as a :class:`~lldsched.coordination.CoordinatedStore`: ``lease`` is how long a
    claim lasts unless renewed (seconds, default 30), ``poll`` the longest a
    scheduler goes without claiming and reading the others' changes (seconds,
    default 1).  Either given without ``shared=True`` raises ``ValidationError``: an
    unshared store would ignore it.  See docs/CLUSTER.md.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        retention: int | None = 1000,
        synchronous: str = "NORMAL",
        timeout: float | timedelta = 5.0,
        shared: bool = False,
        lease: float | timedelta | None = None,
        poll: float | timedelta | None = None,
    ) -> None:
        if not isinstance(path, str | os.PathLike):
            raise ValidationError(f"path must be a file name (a str or a Path), got {shown(path)}")
        if not isinstance(path, str):  # a path-like's __fspath__ may give bytes, or raise
            _check_path_like(path)
        if isinstance(path, str):  # a Path is a file's, never a URL
            refuse_url(path)
            refuse_empty(path)
            refuse_folder(path)
        whole_or_none(retention, name="retention", at_least=1)
        if synchronous not in _SYNCHRONOUS:
            raise ValidationError(
                f"synchronous must be 'NORMAL' or 'FULL', got {shown(synchronous)}"
            )
        flag(shared, name="shared")
        timeout = float(seconds(timeout, name="timeout", at_least=0))
        held = float(seconds(30.0 if lease is None else lease, name="lease", above=0))
        every = float(seconds(1.0 if poll is None else poll, name="poll", above=0))
        if not shared:  # an unshared store holds no lease and polls nothing: not ignored
            for name, given in (("lease", lease), ("poll", poll)):
                if given is not None:
                    raise ValidationError(
                        f"{name}={given!r} applies only to a shared store (shared=True); "
                        f"an unshared store would ignore it"
                    )
        if shared and os.fspath(path) in PRIVATE:
            raise ValidationError(
                f"shared=True needs a file other processes can open, got {os.fspath(path)!r}"
            )
        self.path = os.fspath(path)
        check_encodable(self.path)
        self._opened_in = forks.current[0]  # the process this store belongs to (forks.py)
        self.retention = retention
        self._slack = 0 if retention is None else max(1, retention // 10)
        if self.path not in PRIVATE:
            create_owner_only(self.path)
            refuse_read_only(self.path)
        try:
            connection = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise failure(self.path, "open the file", exc, because=_unopenable(self.path)) from exc
        # Whether the path still names the file opened (sqlite_file.py); None: a private
        # database, which has no path, or a shared store, which checks at every claim.
        self._watch = None if shared or self.path in PRIVATE else FileWatch(self.path)
        claim: FileClaim | None = None
        gate: WriteGate | None = None  # a shared store's (sqlite_gate.py); None: no flock
        try:
            version = self._check(connection)  # a refused file is refused before it is claimed
            if shared:
                claim = FileClaim.shared(self.path)
                # Every shared write passes it, those at open too (creation, migration,
                # the record counter): in turn with the other processes' writes.
                gate = gate_for(os.path.abspath(self.path), timeout)
                if gate is not None:  # SQLite's wait leaves the gate's its patience
                    connection.execute(f"PRAGMA busy_timeout = {int(gate.busy * 1000)}")
            elif self.path not in PRIVATE:
                claim = FileClaim(self.path)
                if version is None:  # another store may have created it meanwhile
                    version = self._check(connection)
            if version is None and not self._create(connection, synchronous, timeout, gate):
                version = self._check(connection)  # another opener created it first: as it is
            if version is not None:
                connection.execute(f"PRAGMA synchronous = {synchronous}")
                if version < SCHEMA_VERSION:  # checks the values before it commits
                    self._migrate(connection, version, shared=shared, gate=gate)
                else:  # only reads: a refused file is untouched
                    self._check_values(connection, shared=shared)
                self._keep_wal(connection, timeout)  # a VACUUM INTO copy restored: not WAL
            (dead_seq,) = connection.execute(LAST_FAILED).fetchone()
            counts = dict(connection.execute(COUNT_UNFINISHED))
            (last_seq,) = connection.execute("SELECT coalesce(max(seq), 0) FROM records").fetchone()
            self._shared = (  # None: this store shares nothing
                SharedState(
                    connection,
                    path=os.path.abspath(self.path),
                    lease=held,
                    poll=every,
                    records=last_seq,
                    gate=gate,
                )
                if shared
                else None
            )
        except BaseException as exc:
            connection.close()
            if gate is not None:
                gate.close()
            if claim is not None:
                claim.release()
            if isinstance(exc, sqlite3.Error):  # a read-only file, a full disk, a lock
                raise failure(
                    self.path, "open the file", exc, because=_unopenable(self.path)
                ) from exc
            raise
        self._claim = claim  # None for a private in-memory database
        # Every shared write passes it (sqlite_gate.py); None: unshared, or no flock (Windows).
        self._gate = gate
        # Guards the connection (one statement or transaction at a time) and the
        # caches below.  Taken inside the scheduler's lock when the core saves;
        # never held while calling anything outside this store.
        self._lock = threading.RLock()  # re-entered inside a verb's hold (verb_held)
        if self.path in PRIVATE:  # a forked child's own copy, unless torn (forks.py)
            forks.private(self, repr(self.path))
        else:  # a file: uWSGI, forking without the hooks, would not refuse its copies
            forks.opened_before_uwsgi_forks(repr(self.path))
        self._connection: sqlite3.Connection | None = connection
        # id -> the definition its row holds: a save whose definition differs (a
        # replace, reschedule or modify) writes it again.  Compared with ==, which
        # checks each field by identity first: an unchanged definition costs
        # about ten pointer comparisons, not an encoding.
        # Neither cache holds a finished task (succeeded or cancelled, no run in flight:
        # see finished()), so a service that runs one-off tasks all day holds, here too,
        # only what its scheduler still holds; the row and its records stay in the file.
        self._defined: dict[str, Task] = {}
        self._counts: dict[str, int] = counts  # records kept per unfinished task
        self._dead_seq: int = dead_seq
        self._seq: int = last_seq  # of the last record saved
        # An unshared store whose write found the file locked past its timeout (another
        # program's transaction): its calls wait for no lock until a write gets through
        # (_locked).  None: they wait ``timeout``; else the connection's total_changes then.
        self._locked_out: int | None = None
        self._busy_ms = int(timeout * 1000)  # the connection's busy_timeout (unshared)

    # -- the TaskStore protocol --------------------------------------------------------

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

    # -- lifetime ------------------------------------------------------------------------

    def close(self) -> None:
        """Close the file and release its claim (idempotent).  Every call after this
        raises ``StoreClosedError`` (a ``StoreError``); the file can be opened again at
        once.  Close a store after its scheduler's ``shutdown()``.

        In a child forked since the store was opened, only the child's copies are let
        go (:meth:`_let_go_in_child`), but for a private database's, the child's own, if
        no call of it was under way at the fork (:mod:`forks <lldsched.stores.forks>`)."""
        if self._opened_in != forks.current[0] and (
            self.path not in PRIVATE or forks.is_torn(self._lock)
        ):
            self._let_go_in_child()
            return
        with self._lock:
            if self._connection is not None:
                if self._moved():  # its frames into the file they belong to, not left at the path
                    leave_no_frames(self._connection, self.path)
                self._connection.close()
                self._connection = None
            if self._gate is not None:
                self._gate.close()
            if self._claim is not None:
                self._claim.release()  # after the connection: nothing written past it

    def _locked(self) -> str:
        """What to say of an unshared store's call that found the file's write lock held
        past ``timeout`` (SQLite's "database is locked"); from now on its calls wait for no
        lock (``busy_timeout`` 0) until a write gets through (:meth:`_write_got_through`).
        Every save is made under the scheduler's lock: each waited the whole ``timeout``
        while another program's transaction held the file, and the scheduler with it (a
        verb, ``metrics()``, the runs' starts), for as long as that transaction lasted.
        The caller holds the store's lock."""
        connection = self._connection
        if self._locked_out is None and connection is not None:
            try:
                connection.execute("PRAGMA busy_timeout = 0")
            except sqlite3.Error:
                pass  # the next call waits as before: nothing worse
            else:
                self._locked_out = connection.total_changes
        return (
            f"another program holds its write lock past the {self._busy_ms / 1000:g} s "
            "timeout: a transaction left open (`fuser` names the process); until a write "
            "gets through, the store's calls do not wait for it"
        )

    def _write_got_through(self) -> None:
        """Give the connection back its ``busy_timeout`` once a write committed since the
        lock was found held (a read gets through a held lock: WAL).  The caller holds the
        store's lock."""
        connection = self._connection
        if connection is not None and connection.total_changes != self._locked_out:
            try:
                connection.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            except sqlite3.Error:
                return  # tried again at the next call
            self._locked_out = None

    def _moved(self) -> bool:
        """Whether the path no longer names the file this store opened (deleted, replaced,
        moved away): its ``-wal`` is then checkpointed before the close
        (:func:`~lldsched.stores.sqlite_file.leave_no_frames`).  False for a private
        database."""
        if self._watch is not None:
            return not self._watch.names_it()
        shared = self._shared
        return shared is not None and not still_names(shared.path, shared.file)

    def __del__(self, _collected: Callable[..., None] = collected) -> None:
        """Collected open (dropped without ``close()``: a notebook cell run again): a
        ``ResourceWarning`` naming its path, then closed as ``close()`` closes it, its
        claim and its write gate too (:mod:`~lldsched.stores.unclosed`).  Before, the
        store said nothing, and Python 3.13's ``sqlite3`` said "unclosed database" of a
        connection it did not name; a shared store's write gate whose thread had waited
        for the lock was never collected (that thread waits for its next write, or its
        close), and kept its descriptor and thread for the life of the process."""
        if getattr(self, "_connection", None) is not None:  # none if its constructor raised
            _collected(self, self.close, opened_in=self._opened_in)

    def _let_go_in_child(self) -> None:
        """``close()`` in a child forked since the store was opened: the store's lock and
        SQLite's own may have been held at the fork by a thread the child does not have
        (a save under way), so neither is taken, and the connection is never closed (its
        close would wait on SQLite's lock, or write to the ``-shm`` the parent maps): it
        is dropped, kept from the collector (:data:`_LEFT_IN_CHILD`).  The gate's and the
        claim's descriptors are the child's copies; closing them leaves the parent's
        locks.  Before, a child forked while a save waited for the database (a gunicorn
        worker closing a store opened at import) hung in ``close()`` for good."""
        connection, self._connection = self._connection, None
        if connection is not None:
            _LEFT_IN_CHILD.append(connection)
        if self._gate is not None:
            self._gate.close()  # the child's copy only (WriteGate.close)
        if self._claim is not None:
            self._claim.release()  # let go at the fork already (claim._let_go_in_child)

    def _using(self, doing: str, task_id: str | None = None) -> _Using:
        """The connection, under the lock, for one operation (``doing``, of ``task_id``
        when it is one task's): ``with self._using("save task", task_id) as connection``.
        SQLite's own errors inside become a :class:`StoreError` naming the file and the
        operation (:class:`_Using`)."""
        return _Using(self, doing, task_id)

    def _refuse_if_forked(self) -> None:
        """Refuse a call in a child forked since the store was opened (:mod:`forks
        <lldsched.stores.forks>`), before anything else: before the store's lock is
        waited for.  A thread of the parent inside a store call at the fork (a save, a
        claim) leaves the child's copy of the lock held, and the child has no thread to
        let it go: every call but :meth:`close` waited for it for good.  Called by
        :class:`_Using` (every call that reads or writes: there, on every save, only once
        the process id differs, its one comparison inline), and by the calls that take the
        lock without it.  A private database is the child's own copy: not refused here,
        but by its lock, a :class:`~lldsched.stores.forks.Torn`, if another thread was
        inside a call of it at the fork."""
        if self._opened_in != forks.current[0] and self.path not in PRIVATE:
            raise forks.refuse(repr(self.path), self._opened_in)  # a forked child's copy

    def _open(self) -> sqlite3.Connection:
        """The connection (caller holds the lock, taken once :meth:`_refuse_if_forked`
        let the call through)."""
        if self._connection is None:
            raise StoreClosedError(f"the store {self.path!r} is closed")
        watch = self._watch
        if watch is not None and watch.due():  # deleted or replaced under it: StoreError
            watch.check()
            if self._claim is not None:  # its lock file deleted: claimed again, or StoreError
                try:
                    self._claim.check()
                except StoreError:
                    watch.at_every_call()  # until the other opener lets go
                    raise
        return self._connection

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called (a scheduler's verbs then refuse)."""
        return self._connection is None

    def __enter__(self) -> SqliteTaskStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __reduce__(self) -> NoReturn:
        raise forks.not_sent(repr(self.path))  # multiprocessing's spawn would send a copy

    def __repr__(self) -> str:
        state = "closed" if self._connection is None else "open"
        return f"SqliteTaskStore({self.path!r}, {state})"
