"""The SQLite store's file format: its schema, its version, and opening a file by it.

:class:`~lldsched.stores.sqlite.SqliteTaskStore` keeps its tasks in one file whose
schema is versioned with ``PRAGMA user_version`` (:data:`SCHEMA_VERSION`) and marked
with ``PRAGMA application_id`` (:data:`APPLICATION_ID`).  This module owns that
format: the tables (the shared mode's are :data:`~lldsched.stores.sqlite.shared.SHARED_SCHEMA`),
the steps from each older version (:data:`MIGRATIONS`), and, mixed into the store as
:class:`FileFormat`, what opening a file does by it: refuse one that is not a readable
lldsched store (a newer version, another application's, a corrupted one: nothing is
written to it), create a new one whole, or migrate an older one in one transaction.
It takes no lock of the store's: the store opens its file before anyone else can reach
it (a shared store's writes here pass its gate, which the store gives them).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time

from lldsched.errors import StoreError
from lldsched.logs import STORE
from lldsched.stores.sqlite.file import PRIVATE, unopenable
from lldsched.stores.sqlite.gate import WriteGate
from lldsched.stores.sqlite.parts import SqliteParts
from lldsched.stores.sqlite.rows import (
    AT_OPEN,
    AT_SHARED_OPEN,
    COLUMNS,
    failure,
    immediate,
    misread,
    rollback,
    within,
)
from lldsched.stores.sqlite.shared import SHARED_SCHEMA

__all__ = ["APPLICATION_ID", "MIGRATIONS", "SCHEMA_VERSION", "FileFormat"]

log = logging.getLogger(STORE)

SCHEMA_VERSION = 10
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
    waited        REAL,                 -- the slot a run_now put off (TaskSnapshot.waited)
    slot          REAL,                 -- a resumed plan's run: its slot (TaskSnapshot.slot),
    slot_due      REAL,                 -- read while next_run_at is this (sqlite/rows.SLOT)
    resume_at     REAL,                 -- waited when it is the slot to resume at
    grid          REAL,                 -- a fixed rate's grid origin (TaskSnapshot.grid)
    blocked_due   REAL,                 -- the slot a moved wait was found blocked at
    blocked_slot  REAL,                 -- (TaskSnapshot.blocked_due and blocked_slot)
    blocked_next  REAL                  -- read while version is this (sqlite/rows.BLOCKED)
);  -- no comma in a comment: ALTER TABLE ... DROP COLUMN takes one for the column's
    -- start (resume_at: TaskSnapshot.resumes, sqlite/rows.RESUME_AT)
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
    node      TEXT,                     -- the process that ran it (shared mode); NULL: none
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
    5: (  # 5 -> 6: a resumed plan's run's slot
        "ALTER TABLE tasks ADD COLUMN slot REAL",
        "ALTER TABLE tasks ADD COLUMN slot_due REAL",
    ),
    6: ("ALTER TABLE records ADD COLUMN node TEXT",),  # 6 -> 7: the process each run had
    7: ("ALTER TABLE tasks ADD COLUMN resume_at REAL",),  # 7 -> 8: a plan's slot to resume at
    8: ("ALTER TABLE tasks ADD COLUMN grid REAL",),  # 8 -> 9: a fixed rate's grid origin
    9: (  # 9 -> 10: the slot a wait a reschedule moved was found blocked at
        "ALTER TABLE tasks ADD COLUMN blocked_due REAL",
        "ALTER TABLE tasks ADD COLUMN blocked_slot REAL",
        "ALTER TABLE tasks ADD COLUMN blocked_next REAL",
    ),
}
"""The SQL statements that take a file from schema version ``n`` to ``n + 1``."""


def unreadable_database(path: str, error: sqlite3.DatabaseError) -> StoreError:
    """The refusal of a file SQLite cannot read as a database (``file is not a database``:
    not SQLite; ``database disk image is malformed``: a store cut short, a copy that
    stopped), saying what to do: the store's own file is damaged, another was named."""
    return StoreError(
        f"{path!r} is not a readable SQLite database ({error}); it was left untouched. "
        "If it is the store's file, it is damaged: restore it from a backup or move it "
        "aside; if not, name the store's file"
    )


def corrupted(path: str, problems: list[str]) -> StoreError:
    """The refusal of a file whose ``PRAGMA quick_check`` found ``problems``."""
    return StoreError(
        f"{path!r} is corrupted (quick_check: {'; '.join(problems[:3])}); "
        "it was left untouched: restore it from a backup or move it aside"
    )


def quick_check(connection: sqlite3.Connection) -> list[str]:
    """What ``PRAGMA quick_check`` finds wrong with the file (``["ok"]``: nothing)."""
    try:
        return [row[0] for row in connection.execute("PRAGMA quick_check")]
    except sqlite3.DatabaseError as exc:
        return [str(exc)]


class FileFormat(SqliteParts):
    """Checking, creating and migrating the store's file: mixed into the SQLite store."""

    def _check(self, connection: sqlite3.Connection) -> int | None:
        """Refuse a file that is not a readable lldsched store; its schema version, or
        None for a new (empty) file.

        Only reads: nothing is written to a file that is refused.
        """
        try:
            # One read transaction for the three reads: another opener creating the file
            # meanwhile is seen before or after, never half way (read one at a time, its
            # application id was 0 and its tables there: "not an lldsched store").
            connection.execute("BEGIN")
            try:
                (application_id,) = connection.execute("PRAGMA application_id").fetchone()
                (version,) = connection.execute("PRAGMA user_version").fetchone()
                tables = [
                    name
                    for (name,) in connection.execute(
                        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
                    )
                ]
            finally:
                rollback(connection)  # it only read
        except sqlite3.OperationalError as exc:  # locked or busy: readable, but not now;
            # or a -shm SQLite may not create beside it (its folder's permissions)
            because = None if self.path in PRIVATE else unopenable(self.path)
            raise failure(self.path, "read its header", exc, because=because) from exc
        except sqlite3.DatabaseError as exc:
            raise unreadable_database(self.path, exc) from None
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
        problems = quick_check(connection)
        if problems != ["ok"]:
            raise corrupted(self.path, problems)
        return int(version)

    def _check_values(
        self, connection: sqlite3.Connection, *, shared: bool = False, most: int = 20
    ) -> None:
        """Refuse a file holding a value of another type than the store writes in a
        column it uses without decoding it (:data:`~lldsched.stores.sqlite.rows.COLUMNS`,
        the tables of :data:`~lldsched.stores.sqlite.rows.AT_OPEN`: a task's priority,
        version, dead-letter order, a lease, a counter): a row edited by hand or written
        by another tool, which SQLite's type affinity let keep a text it cannot read as a
        number (``'three'``, an ISO date) in a numeric column, would fail at its first
        use, deep inside, or be misread.  A task's status and state are not scanned here:
        each row is checked as it is read (:func:`~lldsched.stores.rowvalues.snapshot_from`),
        so a bad one is refused by itself and the others load (docs/DECISIONS.md).  A
        ``shared`` open scans only the counters
        (:data:`~lldsched.stores.sqlite.rows.AT_SHARED_OPEN`): a task's other columns and
        its lease are its own, checked as its row is read
        (:func:`~lldsched.stores.rowvalues.check_kept`), so a bad one leaves that task out,
        not every process of a cluster stopped.  A
        :class:`StoreError` naming the table, the row, the column and the value of each
        (of the first ``most`` rows per table); only reads.  At open; in a
        migration's transaction, before it commits (the columns it adds are checked too,
        and a refused file is left as it was)."""
        said: list[str] = []
        for table in AT_SHARED_OPEN if shared else AT_OPEN:
            key, kinds = COLUMNS[table]
            wrong = " OR ".join(kind.wrong(column) for column, kind in kinds.items())
            rows = connection.execute(
                f"SELECT {', '.join((*key, *kinds))} FROM {table} WHERE {wrong} LIMIT {most}"
            ).fetchall()
            for row in rows:
                said += misread(table, row[: len(key)], row[len(key) :], tuple(kinds))
            if len(rows) == most:
                said.append(f"(the first {most} rows of table {table} holding one)")
        if said:
            raise StoreError(
                f"{self.path!r} holds a value the store cannot read: "
                + ";\n  ".join(said)
                + ";\nthe file was left untouched. A row edited by hand or written by another "
                "tool? SQLite keeps a text it cannot read as a number as text. Set each "
                "value right (or delete its row) and open the store again"
            )

    def _migrate(
        self,
        connection: sqlite3.Connection,
        version: int,
        *,
        shared: bool,
        gate: WriteGate | None = None,
    ) -> None:
        """Bring a file of an older schema ``version`` to :data:`SCHEMA_VERSION`, whole or
        not at all (``shared``: the opener's mode, as :meth:`_check_values` takes it;
        ``gate``: a shared store's, passed as by every other shared write)."""
        try:
            with immediate(connection, gate):
                # Read again under the write lock: another opener may have migrated it.
                (version,) = connection.execute("PRAGMA user_version").fetchone()
                for step in range(version, SCHEMA_VERSION):
                    for statement in MIGRATIONS[step]:
                        connection.execute(statement)
                self._check_values(connection, shared=shared)  # refused: rolled back
                connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot migrate {self.path!r} from store schema version {version} to "
                f"{SCHEMA_VERSION}: {exc}; it was left as it was"
            ) from None
        log.info(
            "migrated %r from store schema version %d to %d", self.path, version, SCHEMA_VERSION
        )

    def _create(
        self,
        connection: sqlite3.Connection,
        synchronous: str,
        timeout: float,
        gate: WriteGate | None = None,
    ) -> bool:
        """Create the store in the new, empty file; False if another opener (shared
        stores open together) created it while this one waited for the write lock:
        nothing of this attempt is written, and the caller opens the file as it is.
        ``timeout``: how long to wait for the others' locks (the store's); ``gate``: a
        shared store's, passed for the creating transaction as by every shared write
        (the switch to WAL before it is not a write transaction: see :func:`_wal`)."""
        mode = _wal(connection, timeout)
        if mode != "wal" and self.path not in PRIVATE:  # a private database has no WAL
            log.warning(  # which store: a process may open several
                "SQLite could not use WAL mode for %r (got %r); writes will be slower",
                self.path,
                mode,
            )
        connection.execute(f"PRAGMA synchronous = {synchronous}")
        left = timeout if gate is None else gate.acquire()
        try:  # one transaction: a store is created whole or not at all
            with within(connection, left, timeout if gate is None else gate.busy):
                connection.executescript(
                    f"BEGIN IMMEDIATE; {_SCHEMA}; {SHARED_SCHEMA}; "
                    f"PRAGMA application_id = {APPLICATION_ID}; "
                    f"PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
                )
        except sqlite3.OperationalError:
            rollback(connection)
            if self._check(connection) is None:  # still empty: a real failure
                raise
            return False  # its first CREATE met the other opener's tables
        except BaseException:
            rollback(connection)
            raise
        finally:
            if gate is not None:
                gate.release()
        if self.path not in PRIVATE:  # a new file where one was meant (a volume not mounted)
            log.info(
                "created a new, empty store at %r: no store was there (if one was meant to "
                "be, check the path and that its volume is mounted)",
                os.path.abspath(self.path),
            )
        return True

    def _keep_wal(self, connection: sqlite3.Connection, timeout: float) -> None:
        """Switch a store's existing file back to WAL mode when it is in another journal
        mode, once it was checked (a refused file is untouched): a copy made with
        ``VACUUM INTO`` (a backup docs/OPERATIONS.md names) is in rollback-journal mode,
        and a store restored from it stayed so, unsaid, its readers blocking its writes
        and its writes slower.  One ``PRAGMA`` read at open when it is in WAL mode already.
        A switch SQLite refuses (a file system without WAL, a lock held past
        ``timeout``) is a warning, as at creation: the store works, slower."""
        (mode,) = connection.execute("PRAGMA journal_mode").fetchone()
        if mode == "wal":
            return
        try:
            now = _wal(connection, timeout)
        except sqlite3.OperationalError as exc:  # a lock held past timeout
            now = str(exc)
        if now == "wal":
            log.info("switched %r from journal mode %r to WAL", self.path, mode)
        else:
            log.warning(
                "%r is in journal mode %r, and switching it to WAL gave %r: writes will be slower",
                self.path,
                mode,
                now,
            )


def _wal(connection: sqlite3.Connection, timeout: float) -> str:
    """Switch a file to WAL mode (a new one, or one found in another mode: see
    :meth:`FileFormat._keep_wal`); the journal mode it is in after.

    Openers switching one new file together (shared stores started at once) each read
    it, then want it alone: SQLite sees they would wait for each other for ever and
    answers all but one "database is locked" at once, without its busy timeout.  The
    one refused tries again, holding nothing now: it waits for the other's switch as
    for any lock, and finds the file in WAL mode.  Each refusal let another opener
    switch it, so this ends; past ``timeout`` the refusal is the error."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            (mode,) = connection.execute("PRAGMA journal_mode = WAL").fetchone()
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() >= deadline:
                raise
            continue
        return str(mode)
