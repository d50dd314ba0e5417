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
(:meth:`~lldsched.stores.sqlite.schema.FileFormat._keep_wal`).  The schema is
versioned with ``PRAGMA user_version`` and the file marked with
``PRAGMA application_id``: a file from a newer lldsched, or one that is not an
lldsched store, is refused with a :class:`~lldsched.errors.StoreError`, as is a
corrupted one (``PRAGMA quick_check`` at open) and one whose bookkeeping holds a value
of another type than the store writes (text SQLite kept in a numeric column: a row
edited by hand, :meth:`~lldsched.stores.sqlite.schema.FileFormat._check_values`: every
table unshared, the counters alone in shared mode); nothing is written to a file that
was refused. A task's row or its lease holding a value no write of lldsched makes (of
another type, or out of its range) is refused as it is read, by itself
(:func:`~lldsched.stores.rowvalues.snapshot_from`, :func:`~lldsched.stores.rowvalues.check_kept`):
a shared store leaves that task out and runs the others. A file of an older schema version is
migrated at open, in one transaction (:data:`~lldsched.stores.sqlite.schema.MIGRATIONS`;
version 1 had no ``result`` column; the format is
:mod:`lldsched.stores.sqlite.schema`'s). A definition whose callable no longer imports
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

**Errors.**  Every call takes the lock and the connection through
:class:`~lldsched.stores.sqlite.connection.SqliteConnection` (mixed in), the one place
SQLite's own errors (a full disk, a read-only file, a database locked
past ``timeout``) become a :class:`~lldsched.errors.StoreError` naming the file and
the call, raised from SQLite's (docs/decisions/store-failures.md, "A store's errors are StoreErrors,
whichever the store").  A file deleted or replaced under the open (unshared) store is
one too, naming the path (:mod:`lldsched.stores.sqlite.file`, checked at most once a
second).

**One store per file.**  An open store claims its file (an OS lock on the sidecar
``<file>.lock``, see :mod:`lldsched.stores.sqlite.claim`) until :meth:`close`: a second
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
settle, the change feed) are in :mod:`lldsched.stores.sqlite.coordinated`, the shared
mode's ``save``, ``save_all`` and ``resave`` in :mod:`lldsched.stores.sqlite.shared_writes`,
a verb's hold in :mod:`lldsched.stores.sqlite.holds` (all three mixed in), the SQL in
:mod:`lldsched.stores.sqlite.shared`, the row statements both modes share in
:mod:`lldsched.stores.sqlite.rows`.  Shared and unshared openers of one file
refuse each other (the sidecar lock is taken shared, see
:mod:`lldsched.stores.sqlite.claim`).

What the store reads back (``load_all`` and the history reads) is
:mod:`lldsched.stores.sqlite.reads`' and what it writes (``save``, ``save_all``,
``delete``, ``resave``, ``purge``) :mod:`lldsched.stores.sqlite.writes`' (both mixed
in, in both modes); this module opens the file, and closes it.  What the mixins share
(the members set here, the methods one calls of another) is declared once, by their
common base
:class:`~lldsched.stores.sqlite.parts.SqliteParts`.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Callable
from datetime import timedelta
from types import TracebackType
from typing import NoReturn

from lldsched.checks import flag, seconds, whole_or_none
from lldsched.coordination import lease_seconds, poll_seconds
from lldsched.errors import ValidationError, shown
from lldsched.logs import STORE
from lldsched.persistence import Task
from lldsched.stores import forks
from lldsched.stores.sqlite import forks as sqlite_forks
from lldsched.stores.sqlite.claim import FileClaim
from lldsched.stores.sqlite.connection import SqliteConnection
from lldsched.stores.sqlite.coordinated import CoordinatedMethods
from lldsched.stores.sqlite.file import (
    PRIVATE,
    FileWatch,
    check_encodable,
    create_owner_only,
    leave_no_frames,
    refuse_empty,
    refuse_folder,
    refuse_read_only,
    refuse_url,
    still_names,
    unopenable,
)
from lldsched.stores.sqlite.gate import WriteGate, gate_for
from lldsched.stores.sqlite.holds import SqliteHolds
from lldsched.stores.sqlite.reads import SqliteReads
from lldsched.stores.sqlite.rows import (
    COUNT_UNFINISHED,
    LAST_FAILED,
    failure,
)
from lldsched.stores.sqlite.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION, FileFormat
from lldsched.stores.sqlite.shared import SharedState
from lldsched.stores.sqlite.shared_writes import SharedWrites
from lldsched.stores.sqlite.writes import SqliteWrites
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


class SqliteTaskStore(
    SqliteWrites,
    SqliteConnection,
    CoordinatedMethods,
    SharedWrites,
    SqliteHolds,
    SqliteReads,
    FileFormat,
):
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
    claim lasts unless renewed (seconds, default 30, at least
    :data:`~lldsched.coordination.SHORTEST_LEASE`), ``poll`` the longest a
    scheduler goes without claiming and reading the others' changes (seconds,
    default 1, at least :data:`~lldsched.coordination.SHORTEST_POLL`).  Either given
    without ``shared=True`` raises ``ValidationError``: an unshared store would ignore
    it.  See docs/CLUSTER.md.
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
        held = float(lease_seconds(30.0 if lease is None else lease))
        every = float(poll_seconds(1.0 if poll is None else poll))
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
        # A fork waits for the constructor as for a call (sqlite_forks.py); refused in a
        # child forked while a call of its parent was inside this file
        begun = None if self.path in PRIVATE else sqlite_forks.opening(self.path)
        try:
            connection = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            sqlite_forks.not_opened(begun)
            raise failure(self.path, "open the file", exc, because=_unopenable(self.path)) from exc
        # Whether the path still names the file opened (sqlite/file.py); None: a private
        # database, which has no path, or a shared store, which checks at every claim.
        self._watch = None if shared or self.path in PRIVATE else FileWatch(self.path)
        claim: FileClaim | None = None
        gate: WriteGate | None = None  # a shared store's (sqlite/gate.py); None: no flock
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
            sqlite_forks.not_opened(begun)
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
        # Every shared write passes it (sqlite/gate.py); None: unshared, or no flock (Windows).
        self._gate = gate
        # Guards the connection (one statement or transaction at a time) and the
        # caches below.  Taken inside the scheduler's lock when the core saves;
        # never held while calling anything outside this store.
        self._lock = threading.RLock()  # re-entered inside a verb's hold (verb_held)
        self._calls = 0  # the calls under way on it, nested ones counted (sqlite/connection.py)
        # Why a transaction no call owns could not be rolled back (sqlite/connection.py).
        self._left_open: sqlite3.Error | None = None
        if begun is None:  # a private database: a forked child's own copy, unless torn
            forks.private(self, repr(self.path))
        else:  # a file: uWSGI, forking without the hooks, would not refuse its copies
            forks.opened_before_uwsgi_forks(repr(self.path))
            sqlite_forks.opened(self, begun)  # a fork waits for its calls under way
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

    def _moved(self) -> bool:
        """Whether the path no longer names the file this store opened (deleted, replaced,
        moved away): its ``-wal`` is then checkpointed before the close
        (:func:`~lldsched.stores.sqlite.file.leave_no_frames`).  False for a private
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
