"""SqliteTaskStore: the durable TaskStore, one SQLite file from the standard library.

Every transition of every task is written through (``save``), so a scheduler
opened on the same file after a crash or a restart finds its tasks, their
statuses, their recent records and the dead letter (see :mod:`lldsched.core.recovery`).

**The file.**  WAL journal mode: a write appends to the log and readers never
block it.  ``synchronous=NORMAL`` by default: a committed transaction survives
the process being killed (what the crash test checks); a power cut or an OS
crash may lose the last transactions before a checkpoint, never consistency.
Pass ``synchronous="FULL"`` to sync at every commit as well (slower).  The
schema is versioned with ``PRAGMA user_version`` and the file marked with
``PRAGMA application_id``: a file from a newer lldsched, or one that is not an
lldsched store, is refused with a :class:`~lldsched.errors.StoreError`, as is a
corrupted one (``PRAGMA quick_check`` at open); nothing is written to a file
that was refused.  A file of an older schema version is migrated at open, in one
transaction (:data:`MIGRATIONS`; version 1 had no ``result`` column).  A
definition whose callable no longer imports makes ``load_all`` raise, naming the
task, again without touching the file; one whose path imported it under an alias
(a function renamed or moved, its old name kept) is rewritten to the function's own
path once every task has loaded (:func:`~lldsched.stores.codec.renamed`).

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
the call, raised from SQLite's (docs/DECISIONS.md, "A store's errors are StoreErrors,
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
any of them reach the others through a change feed.  The methods are in
:mod:`lldsched.stores.sqlite_coordinated` (mixed in), the SQL in
:mod:`lldsched.stores.sqlite_shared`, the row statements both modes share in
:mod:`lldsched.stores.sqlite_rows`.  Shared and unshared openers of one file
refuse each other (the sidecar lock is taken shared, see
:mod:`lldsched.stores.claim`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import sys
import threading
from collections.abc import Sequence
from datetime import timedelta
from types import TracebackType
from typing import NoReturn

from lldsched.checks import flag, seconds, whole_or_none
from lldsched.errors import StoreClosedError, StoreError, ValidationError
from lldsched.logs import STORE
from lldsched.model import ExecutionRecord, TaskStatus
from lldsched.persistence import Task, TaskSnapshot, finished
from lldsched.stores import forks
from lldsched.stores.claim import FileClaim
from lldsched.stores.codec import encode_task, load_each, renamed
from lldsched.stores.sqlite_coordinated import CoordinatedMethods
from lldsched.stores.sqlite_file import FileWatch, unopenable
from lldsched.stores.sqlite_rows import (
    COUNT_UNFINISHED,
    INSERT_RECORD,
    RECORD_COLUMNS,
    UPDATE,
    UPSERT,
    failure,
    immediate,
)
from lldsched.stores.sqlite_rows import record_of as _record
from lldsched.stores.sqlite_rows import rollback as _rollback
from lldsched.stores.sqlite_rows import snapshot_of as _snapshot
from lldsched.stores.sqlite_shared import SHARED_SCHEMA, SharedState, bump

__all__ = ["APPLICATION_ID", "MIGRATIONS", "SCHEMA_VERSION", "SqliteTaskStore"]

log = logging.getLogger(STORE)

SCHEMA_VERSION = 5
APPLICATION_ID = 0x6C6C6473  # "llds"

_SCHEMA = """
CREATE TABLE tasks (
    position      INTEGER PRIMARY KEY,  -- the order tasks were first saved in
    id            TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL,
    definition    TEXT NOT NULL,        -- JSON, see lldsched.stores.codec
    status        TEXT NOT NULL,
    next_run_at   REAL,
    attempt       INTEGER NOT NULL,
    run_count     INTEGER NOT NULL,
    failure_count INTEGER NOT NULL,
    last_error    TEXT,
    running       INTEGER NOT NULL,     -- an attempt was in flight
    failed_seq    INTEGER,              -- dead-letter order; NULL unless FAILED
    priority      INTEGER NOT NULL DEFAULT 1,  -- claim order in shared mode (HIGH = 0 first)
    version       INTEGER NOT NULL DEFAULT 0,  -- shared mode: the write that left the row so
    waited        REAL                  -- the slot a run_now put off (TaskSnapshot.waited)
);
CREATE TABLE records (                -- clustered by task: one b-tree, no separate index
    task_id   TEXT NOT NULL,
    seq       INTEGER NOT NULL,         -- the order records were saved in, across tasks
    attempt   INTEGER NOT NULL,
    due       REAL NOT NULL,
    slot      REAL NOT NULL,
    worker    INTEGER NOT NULL,
    started   REAL NOT NULL,
    finished  REAL NOT NULL,
    ok        INTEGER NOT NULL,
    error     TEXT,
    timed_out INTEGER NOT NULL,
    misfire   TEXT,
    result    TEXT,                     -- the action's return value as text (a bounded repr)
    token     INTEGER,                  -- the fencing token of the run's claim (shared mode)
    name      TEXT,                     -- the task's name at the run; NULL: written before 5
    PRIMARY KEY (task_id, seq)
) WITHOUT ROWID;
"""

MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: ("ALTER TABLE records ADD COLUMN result TEXT",),  # 1 -> 2: records keep results
    2: (  # 2 -> 3: leases, fencing tokens and versions for shared mode (docs/CLUSTER.md)
        "ALTER TABLE tasks ADD COLUMN priority INTEGER NOT NULL DEFAULT 1",
        "ALTER TABLE tasks ADD COLUMN version INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE records ADD COLUMN token INTEGER",
        "UPDATE tasks SET priority = coalesce(json_extract(definition, '$.priority'), 1)",
        *SHARED_SCHEMA.split(";"),
    ),
    3: ("ALTER TABLE tasks ADD COLUMN waited REAL",),  # 3 -> 4: a run_now's slot kept
    4: ("ALTER TABLE records ADD COLUMN name TEXT",),  # 4 -> 5: the name each run had
}
"""The SQL statements that take a file from schema version ``n`` to ``n + 1``."""

_SYNCHRONOUS = ("NORMAL", "FULL")
_PRIVATE = ("", ":memory:")  # SQLite's private databases: nobody else can open them


def _create_owner_only(path: str) -> None:
    """Create ``path`` empty (SQLite reads that as a new database) with mode 0600, unless
    it exists: a store holds its tasks' arguments and results in plain text, and SQLite
    would create it as the umask says (0644 by default: readable by every user).  Its
    ``-wal`` and ``-shm`` files take the database file's mode.  A file that exists keeps
    its mode (an operator's ``chmod g+rw`` for a group of users stays).  Any other
    failure is left to ``sqlite3.connect``, which names it."""
    with contextlib.suppress(OSError):  # FileExistsError: as it is; others: connect says
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _unopenable(path: str) -> str | None:
    """What is wrong with a store's path that SQLite could not open (None for a private
    database, which has no path)."""
    return None if path in _PRIVATE else unopenable(path)


def _check_encodable(path: str) -> None:
    """Refuse, naming it, a path the file system encoding cannot encode: under the C
    locale with UTF-8 mode off (``LC_ALL=C PYTHONUTF8=0``: a minimal container, a cron
    job's environment) it is ASCII, and a non-ASCII path raised a bare
    ``UnicodeEncodeError`` that named no file.  A ``ValidationError`` is a ``ValueError``,
    as that error was.  A name read from the file system (surrogates) encodes back.
    Nor can a path hold a NUL (``"\\x00"``), which no file name does: ``open`` raised a
    bare ``ValueError("embedded null byte")``, quoting nothing."""
    if "\x00" in path:
        raise ValidationError(
            f"the SQLite store path {path!r} cannot be a file name: it holds a NUL"
        )
    encoding = sys.getfilesystemencoding()
    try:
        os.fsencode(path)
    except UnicodeEncodeError as exc:
        raise ValidationError(
            f"the SQLite store path {path!r} cannot be a file name here: the file system "
            f"encoding {encoding!r} (from the locale) cannot encode {path[exc.start : exc.end]!r}; "
            "run Python in UTF-8 mode (PYTHONUTF8=1 or -X utf8), under a UTF-8 locale, "
            "or give an ASCII path"
        ) from exc


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
        lock = self.store._lock
        lock.acquire()
        try:
            return self.store._open()
        except BaseException:
            lock.release()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.store._lock.release()
        if isinstance(error, sqlite3.Error):
            doing = self.doing if self.task_id is None else f"{self.doing} {self.task_id!r}"
            raise failure(self.store.path, doing, error) from error


class SqliteTaskStore(CoordinatedMethods):
    """A durable :class:`~lldsched.persistence.TaskStore` in one SQLite file (WAL mode).

    ``retention`` bounds the records kept per task (default 1,000; ``None``: keep
    all); ``synchronous`` is ``"NORMAL"`` (the default: a commit survives a killed
    process) or ``"FULL"`` (also a power loss, slower); ``timeout`` is how long a
    write waits for a lock held by another connection (seconds, default 5).
    Use it as a context manager, or call :meth:`close`: the file stays claimed
    until then, and a second store on it raises :class:`StoreError`.  A path that
    cannot be opened raises a :class:`StoreError` naming it and what is wrong with it
    (a folder that does not exist, a file where a folder should be, a folder at the
    path, a folder that cannot be written), not SQLite's bare "unable to open database
    file"; the folder is never created for you.

    ``shared=True`` lets several schedulers (processes of one host) share the file
    as a :class:`~lldsched.persistence.CoordinatedStore`: ``lease`` is how long a
    claim lasts unless renewed (seconds, default 30), ``poll`` the longest a
    scheduler goes without claiming and reading the others' changes (seconds,
    default 1).  See docs/CLUSTER.md.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        retention: int | None = 1000,
        synchronous: str = "NORMAL",
        timeout: float | timedelta = 5.0,
        shared: bool = False,
        lease: float | timedelta = 30.0,
        poll: float | timedelta = 1.0,
    ) -> None:
        if not isinstance(path, str | os.PathLike):
            raise ValidationError(f"path must be a file name (a str or a Path), got {path!r}")
        whole_or_none(retention, name="retention", at_least=1)
        if synchronous not in _SYNCHRONOUS:
            raise ValidationError(f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        flag(shared, name="shared")
        timeout = float(seconds(timeout, name="timeout", at_least=0))
        lease = float(seconds(lease, name="lease", above=0))
        poll = float(seconds(poll, name="poll", above=0))
        if shared and os.fspath(path) in _PRIVATE:
            raise ValidationError(
                f"shared=True needs a file other processes can open, got {os.fspath(path)!r}"
            )
        self.path = os.fspath(path)
        _check_encodable(self.path)
        self._opened_in = forks.current[0]  # the process this store belongs to (forks.py)
        self.retention = retention
        self._slack = 0 if retention is None else max(1, retention // 10)
        if self.path not in _PRIVATE:
            _create_owner_only(self.path)
        try:
            connection = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise failure(self.path, "open the file", exc, because=_unopenable(self.path)) from exc
        # Whether the path still names the file opened (sqlite_file.py); None: a private
        # database, which has no path, or a shared store, which checks at every claim.
        self._watch = None if shared or self.path in _PRIVATE else FileWatch(self.path)
        claim: FileClaim | None = None
        try:
            version = self._check(connection)  # a refused file is refused before it is claimed
            if shared:
                claim = FileClaim.shared(self.path)
            elif self.path not in _PRIVATE:
                claim = FileClaim(self.path)
                if version is None:  # another store may have created it meanwhile
                    version = self._check(connection)
            if version is None and not self._create(connection, synchronous):
                version = self._check(connection)  # another opener created it first: as it is
            if version is not None:
                connection.execute(f"PRAGMA synchronous = {synchronous}")
                if version < SCHEMA_VERSION:
                    self._migrate(connection, version)
            (dead_seq,) = connection.execute(
                "SELECT coalesce(max(failed_seq), 0) FROM tasks"
            ).fetchone()
            counts = dict(connection.execute(COUNT_UNFINISHED))
            (last_seq,) = connection.execute("SELECT coalesce(max(seq), 0) FROM records").fetchone()
            self._shared = (  # None: this store shares nothing
                SharedState(connection, path=os.path.abspath(self.path), lease=lease, poll=poll)
                if shared
                else None
            )
        except BaseException as exc:
            connection.close()
            if claim is not None:
                claim.release()
            if isinstance(exc, sqlite3.Error):  # a read-only file, a full disk, a lock
                raise failure(
                    self.path, "open the file", exc, because=_unopenable(self.path)
                ) from exc
            raise
        self._claim = claim  # None for a private in-memory database
        # Guards the connection (one statement or transaction at a time) and the
        # caches below.  Taken inside the scheduler's lock when the core saves;
        # never held while calling anything outside this store.
        self._lock = threading.Lock()
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

    # -- opening ---------------------------------------------------------------------

    def _check(self, connection: sqlite3.Connection) -> int | None:
        """Refuse a file that is not a readable lldsched store; its schema version, or
        None for a new (empty) file.

        Only reads: nothing is written to a file that is refused.
        """
        try:
            (application_id,) = connection.execute("PRAGMA application_id").fetchone()
            (version,) = connection.execute("PRAGMA user_version").fetchone()
            tables = [
                name
                for (name,) in connection.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
                )
            ]
        except sqlite3.OperationalError as exc:  # locked or busy: readable, but not now
            raise failure(self.path, "read its header", exc) from exc
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"{self.path!r} is not a readable SQLite database ({exc}); it was left untouched"
            ) from None
        if application_id == 0 and version == 0 and not tables:
            return None
        if application_id != APPLICATION_ID:
            raise StoreError(
                f"{self.path!r} is an SQLite database but not an lldsched store "
                f"(application_id {application_id:#x}, tables {tables}); it was left untouched"
            )
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path!r} has store schema version {version}, newer than this lldsched "
                f"understands ({SCHEMA_VERSION}): upgrade lldsched to open it. "
                "The file was left untouched"
            )
        if version != SCHEMA_VERSION and not all(
            step in MIGRATIONS for step in range(version, SCHEMA_VERSION)
        ):
            raise StoreError(
                f"{self.path!r} has unknown store schema version {version} "
                f"(expected {SCHEMA_VERSION}); it was left untouched"
            )
        try:
            problems = [row[0] for row in connection.execute("PRAGMA quick_check")]
        except sqlite3.DatabaseError as exc:
            problems = [str(exc)]
        if problems != ["ok"]:
            raise StoreError(
                f"{self.path!r} is corrupted (quick_check: {'; '.join(problems[:3])}); "
                "it was left untouched: restore it from a backup or move it aside"
            )
        return int(version)

    def _migrate(self, connection: sqlite3.Connection, version: int) -> None:
        """Bring a file of an older schema ``version`` to :data:`SCHEMA_VERSION`, whole or
        not at all."""
        try:
            with immediate(connection):
                # Read again under the write lock: another opener may have migrated it.
                (version,) = connection.execute("PRAGMA user_version").fetchone()
                for step in range(version, SCHEMA_VERSION):
                    for statement in MIGRATIONS[step]:
                        connection.execute(statement)
                connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot migrate {self.path!r} from store schema version {version} to "
                f"{SCHEMA_VERSION}: {exc}; it was left as it was"
            ) from None
        log.info(
            "migrated %r from store schema version %d to %d", self.path, version, SCHEMA_VERSION
        )

    def _create(self, connection: sqlite3.Connection, synchronous: str) -> bool:
        """Create the store in the new, empty file; False if another opener (shared
        stores open together) created it while this one waited for the write lock:
        nothing of this attempt is written, and the caller opens the file as it is."""
        (mode,) = connection.execute("PRAGMA journal_mode = WAL").fetchone()
        if mode != "wal":
            log.warning("SQLite could not use WAL mode here (got %r); writes will be slower", mode)
        connection.execute(f"PRAGMA synchronous = {synchronous}")
        try:  # one transaction: a store is created whole or not at all
            connection.executescript(
                f"BEGIN IMMEDIATE; {_SCHEMA}; {SHARED_SCHEMA}; "
                f"PRAGMA application_id = {APPLICATION_ID}; "
                f"PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
            )
        except sqlite3.OperationalError:
            _rollback(connection)
            if self._check(connection) is None:  # still empty: a real failure
                raise
            return False  # its first CREATE met the other opener's tables
        except BaseException:
            _rollback(connection)
            raise
        return True

    # -- the TaskStore protocol --------------------------------------------------------

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        """Write the task's state (its definition too, the first time and whenever it
        changed) and ``record``, in one transaction.  :class:`ValidationError` if the
        definition cannot be stored (at registration: nothing is written, and nothing
        registered)."""
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
        it skipped) in one transaction: all or none (:func:`~lldsched.persistence.
        save_all`).  In shared mode a run's settle carries them, fenced by its token."""
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

    def _row(self, snapshot: TaskSnapshot) -> tuple[str, tuple[object, ...]]:
        """The statement that writes ``snapshot``'s row, and its parameters: its state,
        and its definition too the first time and whenever it changed (caller holds the
        lock; the dead letter's sequence moves on for a FAILED one)."""
        task = snapshot.task
        definition = None if self._defined.get(task.id) == task else encode_task(task)
        self._dead_seq += snapshot.status is TaskStatus.FAILED
        state = (
            snapshot.status.value, snapshot.next_run_at, snapshot.attempt,
            snapshot.run_count, snapshot.failure_count, snapshot.last_error,
            snapshot.running, self._dead_seq, task.id, snapshot.waited,
        )  # fmt: skip
        if definition is None:
            return UPDATE, state
        return UPSERT, (*state, task.name, definition, task.priority)

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
                record.misfire, record.result, record.token, record.name,
            ),
        )  # fmt: skip
        count = self._counts.get(task_id, 0) + 1
        if self.retention is not None and count > self.retention + self._slack:
            if self._shared is not None:  # the other processes append too: count them
                (count,) = connection.execute(
                    "SELECT count(*) FROM records WHERE task_id = ?", (task_id,)
                ).fetchone()
            connection.execute(  # trim in batches, not at every record
                "DELETE FROM records WHERE task_id = ?1 AND seq IN "
                "(SELECT seq FROM records WHERE task_id = ?1 ORDER BY seq LIMIT ?2)",
                (task_id, max(0, count - self.retention)),
            )
            count = self.retention
        return count

    def delete(self, task_id: str) -> None:
        """Forget ``task_id``: its row and its records (in shared mode its lease too, and
        the other processes hear of it)."""
        with self._using("delete task", task_id) as connection:
            shared = self._shared
            if shared is not None and shared.muted:
                return
            with immediate(connection):
                connection.execute("DELETE FROM records WHERE task_id = ?", (task_id,))
                connection.execute("DELETE FROM tasks WHERE id = ?", (task_id,))
                if shared is not None:
                    connection.execute("DELETE FROM leases WHERE task_id = ?", (task_id,))
                    version = bump(connection, "change")
                    connection.execute(
                        "INSERT INTO removed (version, task_id) VALUES (?, ?)", (version, task_id)
                    )
                    shared.removals.add(version)
                    shared.held.pop(task_id, None)
            self._defined.pop(task_id, None)
            self._counts.pop(task_id, None)

    def load_all(self) -> list[TaskSnapshot]:
        """Every stored task, in the order first saved, its callable imported.

        :class:`StoreError` naming every task that cannot be loaded (a callable that
        no longer imports, a definition that is no longer valid); nothing is written.
        Once all loaded, a definition naming its callable by an alias (a function
        renamed, its old name kept) is stored under the callable's own path
        (:func:`~lldsched.stores.codec.renamed`).
        """
        with self._using("read the tasks") as connection:
            rows = connection.execute(
                "SELECT id, definition, status, next_run_at, attempt, run_count, "
                "failure_count, last_error, running, waited FROM tasks ORDER BY position"
            ).fetchall()
        snapshots = load_each(
            rows,
            lambda row: _snapshot(row[0], row[1], row[2], list(row[3:])),  # id, definition, status
            store=repr(self.path),
            delete="SqliteTaskStore(path).delete(task_id)",
        )
        moved = renamed(snapshots, [row[1] for row in rows], store=repr(self.path))
        with self._lock:
            if moved:  # each row only if no one rewrote it since (a shared store's other writers)
                try:
                    with immediate(self._open()) as connection:
                        connection.executemany(
                            "UPDATE tasks SET definition = ?1 WHERE id = ?2 AND definition = ?3",
                            moved,
                        )
                except sqlite3.Error as exc:  # the rows keep the alias, which still imports
                    log.warning("cannot store the moved callables in %r: %s", self.path, exc)
            self._defined.update(
                (snapshot.task.id, snapshot.task)
                for snapshot in snapshots
                if not finished(snapshot)
            )
        return snapshots

    # -- what recovery and people read back (HistoryStore) -------------------------------

    def get(self, task_id: str) -> TaskSnapshot | None:
        """The latest snapshot of ``task_id``, or None."""
        with self._using("read task", task_id) as connection:
            row = connection.execute(
                "SELECT id, definition, status, next_run_at, attempt, run_count, "
                "failure_count, last_error, running, waited FROM tasks WHERE id = ?",
                (task_id,),
            ).fetchone()
        if row is None:
            return None
        _, definition, status, *state = row
        return _snapshot(task_id, definition, status, state)

    def records(self, task_id: str | None = None) -> list[ExecutionRecord]:
        """The records kept for ``task_id`` (every task's when None), oldest first;
        at most ``retention`` per task."""
        keep = -1 if self.retention is None else self.retention  # LIMIT -1: no limit
        with self._using("read the records") as connection:
            if task_id is not None:
                rows = connection.execute(
                    f"SELECT {RECORD_COLUMNS} FROM records r JOIN tasks t ON t.id = r.task_id "
                    "WHERE r.task_id = ? ORDER BY r.seq DESC LIMIT ?",
                    (task_id, keep),
                ).fetchall()
                rows.reverse()
            else:
                rows = connection.execute(
                    f"SELECT {RECORD_COLUMNS} FROM ("
                    "  SELECT *, row_number() OVER (PARTITION BY task_id ORDER BY seq DESC) AS n"
                    "  FROM records) r JOIN tasks t ON t.id = r.task_id "
                    "WHERE ? < 0 OR r.n <= ? ORDER BY r.seq",
                    (keep, keep),
                ).fetchall()
        return [_record(row) for row in rows]

    def dead_letter(self) -> list[str]:
        """Ids of FAILED tasks, in the order they failed."""
        with self._using("read the dead letter") as connection:
            rows = connection.execute(
                "SELECT id FROM tasks WHERE status = 'failed' ORDER BY failed_seq, position"
            )
            return [task_id for (task_id,) in rows]

    def __len__(self) -> int:
        with self._using("count the tasks") as connection:
            (count,) = connection.execute("SELECT count(*) FROM tasks").fetchone()
            return int(count)

    # -- lifetime ------------------------------------------------------------------------

    def close(self) -> None:
        """Close the file and release its claim (idempotent).  Every call after this
        raises ``StoreClosedError`` (a ``StoreError``); the file can be opened again at
        once.  Close a store after its scheduler's ``shutdown()``."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None
            if self._claim is not None:
                self._claim.release()  # after the connection: nothing written past it

    def _using(self, doing: str, task_id: str | None = None) -> _Using:
        """The connection, under the lock, for one operation (``doing``, of ``task_id``
        when it is one task's): ``with self._using("save task", task_id) as connection``.
        SQLite's own errors inside become a :class:`StoreError` naming the file and the
        operation (:class:`_Using`)."""
        return _Using(self, doing, task_id)

    def _open(self) -> sqlite3.Connection:
        if self._opened_in != forks.current[0] and self.path not in _PRIVATE:
            raise forks.refuse(repr(self.path), self._opened_in)  # a forked child's copy
        if self._connection is None:
            raise StoreClosedError(f"the store {self.path!r} is closed")
        watch = self._watch
        if watch is not None and watch.due():  # deleted or replaced under it: StoreError
            watch.check()
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
