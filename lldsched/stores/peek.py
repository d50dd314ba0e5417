"""Reading a durable store to show it, importing none of the code its tasks name: what
``python -m lldsched tasks`` lists (:mod:`lldsched.cli.storetasks`).

A store's own reads (``load_all``, ``get``) import each task's action, its retry
policy's class and its schedule's (:func:`~lldsched.stores.codec.decode_task`), and
opening one claims the file (SQLite) or installs the schema (PostgreSQL).  An operator's
shell is not the service's environment, and a scheduler may hold the file: a
:class:`Peek` opens neither way.  It reads the rows with the stores' own columns and
checks (``TASK_COLUMNS`` / ``SNAPSHOT_COLUMNS``, :func:`~lldsched.stores.rowvalues.snapshot_from`),
its definition decoded with ``imports=False`` (an action is its path as text,
:class:`~lldsched.stores.codec.NotImported`), and writes nothing:

* SQLite: the file opened read-only (``mode=ro``), no claim taken, so it reads beside a
  scheduler holding the file, shared or not (WAL: a reader never blocks a writer);
  a path with no file, or a file that is no lldsched store of this schema version, is
  refused, never created, as is one the store's open refuses (not SQLite, cut short,
  failing ``PRAGMA quick_check``), in the store's words;
* PostgreSQL: one connection (psycopg imported only then), its session read-only; a
  database without the store's tables, or of another schema version, is refused, never
  installed.

Every failure is a :class:`~lldsched.errors.StoreError` naming the store (a dsn's
password hidden, :func:`~lldsched.stores.postgres_redact.redact`).  A row the store
cannot read (a status this release does not know, a value no write makes) is listed as
its error, the others read.

A table of every task (:meth:`Peek.listing`) reads of each only what it shows: the
columns, and the name and schedule the database reads out of the definition's JSON
(SQLite's ``json_extract``, PostgreSQL's ``->``), each checked as every read checks it;
``show`` (:meth:`Peek.tasks`) and ``--json`` (:meth:`Peek.whole`) decode rows whole.
Its runs in flight (a shared store's leases, :meth:`Peek.leases`) are one statement of
their own after it.
"""

from __future__ import annotations

import os
import sqlite3
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from lldsched.coordination import Lease
from lldsched.errors import StoreError
from lldsched.model import ExecutionRecord
from lldsched.persistence import TaskSnapshot
from lldsched.stores.codec import SharedParts, decode_task
from lldsched.stores.rowvalues import Listed, listed_from, record_from, snapshot_from

__all__ = ["Last", "Listed", "Peek", "Row", "peek_postgres", "peek_sqlite"]

_LAST = (
    "SELECT {columns} FROM records r JOIN tasks t ON t.id = r.task_id"
    " WHERE r.task_id = {p} ORDER BY r.seq DESC LIMIT {p}"
)
_MOST_ROWS = 2**63 - 1
"""The largest ``LIMIT`` both engines take (a signed 64-bit integer): a larger count of
records asks for every one, as this does."""
_LAST_SQLITE = (  # a task's last record, if any: the largest seq of its key, one look-up each
    "LEFT JOIN records r ON r.task_id = t.id"  # LEFT: the tasks first, never the records
    " AND r.seq = (SELECT max(m.seq) FROM records m WHERE m.task_id = t.id)"
)
_LAST_POSTGRES = (  # the same, as PostgreSQL plans it best: a backward scan of the key
    "LEFT JOIN LATERAL (SELECT * FROM records m WHERE m.task_id = t.id"
    " ORDER BY m.seq DESC LIMIT 1) r ON true"
)
_LISTED_SQLITE = (  # what a listing shows of a task (rowvalues.listed_from): the JSON parts too
    "t.id, json_quote(json_extract(t.definition, '$.name')), t.status, t.next_run_at,"
    " t.attempt, json_quote(json_extract(t.definition, '$.schedule'))"
)
_LISTED_POSTGRES = (
    "t.id, (t.definition::json -> 'name')::text, t.status, t.next_run_at, t.attempt,"
    " (t.definition::json -> 'schedule')::text"
)
_LEASE_KEPT = slice(4, 9)  # the lease's slot, attempt, token, holder, expires_at (KEPT_COLUMNS)
_RECORD = len(ExecutionRecord._fields) + 1  # record_from's columns: a record's, and its seq


class Row(NamedTuple):
    """A task's row: its snapshot, or (``snapshot`` None) why it cannot be read; with a
    snapshot, its ``definition`` as stored (the text a load decodes, importing), and the
    ``lease`` a claim holds on it, if any (a shared store's run in flight, the lease of a
    process that died included, until it is taken over; an unshared store holds none)."""

    id: str
    snapshot: TaskSnapshot | None
    error: str | None = None
    definition: str = ""
    lease: Lease | None = None


Last = ExecutionRecord | None
"""A task's last record, None if it has none."""


class Peek:
    """A durable store opened to read, importing nothing, writing nothing.  ``where``
    names it in messages (a dsn with its password hidden); ``now()`` reads the clock its
    leases expire by; ``held()`` tells whether a live unshared store holds it (an SQLite
    file's claim tried, not taken: :func:`~lldsched.stores.claim.held_unshared`; None
    where it cannot be told; False for PostgreSQL, always shared, whose runs in flight
    are leases)."""

    def __init__(
        self, where: str, query: Callable[[str, Sequence[object]], list[Any]],
        close: Callable[[], object], *, placeholder: str, tasks: str, columns: str,
        records: str, last: str, listed: str, state: slice, kept: slice,
        now: Callable[[], float], held: Callable[[], bool | None] = lambda: None,
    ) -> None:  # fmt: skip
        self.where = where
        self.now = now
        self.held = held  # whether a live unshared store holds it (None: cannot be told)
        self._query = query
        self._close = close
        self._p = placeholder
        self._tasks = tasks  # the tasks and their leases: TASKS
        self._columns = columns  # a task's row, FROM them: TASK_COLUMNS, SNAPSHOT_COLUMNS
        self._records = records  # the records' columns
        self._last = last  # joins a task (t) to its last record (r): _LAST_SQLITE, _LAST_POSTGRES
        self._listed = listed  # a listing's columns: _LISTED_SQLITE, _LISTED_POSTGRES
        self._state = state  # where a row's state and kept values are
        self._kept = kept

    def tasks(self, task_id: str | None = None, *, status: str | None = None) -> list[Row]:
        """Every task's row in the order first saved (``task_id``'s alone, if given; only
        those whose stored status is ``status``, if given: the dead letter's, ``failed``,
        in the order they failed).  Only the rows asked for are decoded: the filter is the
        statement's; and what their definitions have alike (schedules, retry policies) once
        (:class:`~lldsched.stores.codec.SharedParts`: the rows of equal parts share one
        schedule object)."""
        statement = f"SELECT {self._columns} FROM {self._tasks}"
        if task_id is not None:
            rows = self._query(f"{statement} WHERE t.id = {self._p}", (task_id,))
        else:
            where, parameters = self._where(status)
            rows = self._query(f"{statement}{where}", parameters)
        shared = SharedParts()
        return [self._row(row, shared) for row in rows]

    def whole(self, *, status: str | None = None) -> Iterator[tuple[Row, Last]]:
        """Each task's row decoded whole, as :meth:`tasks` orders and filters them, with its
        last record: one statement, which reads a task's last record by the records' key
        (a listing of the dead letter reads the failed tasks' records, no other's).  Each
        row is decoded as it is taken (the driver's rows are fetched whole: psycopg holds a
        whole result, and SQLite's is read again whole when a text is not UTF-8,
        ``sqlite_rows.fetch``)."""
        where, parameters = self._where(status)
        columns = f"{self._columns}, {self._records}"
        statement = f"SELECT {columns} FROM {self._tasks} {self._last}{where}"
        shared = SharedParts()
        for row in self._query(statement, parameters):
            yield self._row(row[:-_RECORD], shared), _last(row[-_RECORD:])

    def listing(self, *, status: str | None = None) -> Iterator[tuple[Listed | Row, Last]]:
        """What a table of the tasks shows, as :meth:`whole` orders and filters them: of
        each task, only the columns the table shows and the two parts of its definition
        it shows (name, schedule), which the database reads out of the JSON
        (:func:`~lldsched.stores.rowvalues.listed_from`; no row decoded whole, no snapshot
        built), with its last record.  A row one of those values is wrong in is read
        whole (:meth:`tasks`): a :class:`Row`, with the error that read names.  A
        definition the database cannot parse as JSON fails the whole statement: then
        every row is read whole (:meth:`whole`), as before."""
        where, parameters = self._where(status)
        statement = f"SELECT {self._listed}, {self._records} FROM tasks t {self._last}{where}"
        try:
            rows = self._query(statement, parameters)
        except StoreError:  # a definition that is no JSON; else the store's error, again
            yield from self.whole(status=status)
            return
        schedules: dict[str, Any] = {}
        for row in rows:
            listed: Listed | Row | None = listed_from(row[:-_RECORD], schedules)
            if listed is None:
                read = self.tasks(row[0])
                if not read:  # removed since
                    continue
                listed = read[0]
            yield listed, _last(row[-_RECORD:])

    def leases(self) -> dict[str, object]:
        """Each lease's task id and expiry as stored (unchecked; by :meth:`now`'s clock):
        a shared store's runs in flight, at most one a task, so few (an unshared store
        holds only the attempts a process that died mid-run left owed, ``DIED_UNSHARED``).
        One statement of its own, read after :meth:`listing`'s rows, not joined to them:
        its cost did not show beside the table's (docs/PERFORMANCE.md, "`lldsched tasks`
        on a large store")."""
        return dict(self._query("SELECT task_id, expires_at FROM leases", ()))

    def records(self, task_id: str, last: int) -> list[ExecutionRecord]:
        """The last ``last`` records of ``task_id``, oldest first (every one, for a ``last``
        past what a ``LIMIT`` takes: ``--records 99999999999999999999`` was SQLite's
        ``OverflowError`` and PostgreSQL's "bigint out of range")."""
        statement = _LAST.format(columns=self._records, p=self._p)
        rows = self._query(statement, (task_id, min(last, _MOST_ROWS)))
        rows.reverse()
        return [record_from(row) for row in rows]

    def close(self) -> None:
        self._close()

    def _where(self, status: str | None) -> tuple[str, tuple[object, ...]]:
        """The filter and order of a listing: every task in the order first saved, or
        those in ``status``; the dead letter's (``failed``) in the order they failed."""
        if status is None:
            return " ORDER BY t.position", ()
        order = "t.failed_seq, t.position" if status == "failed" else "t.position"
        return f" WHERE t.status = {self._p} ORDER BY {order}", (status,)

    def _row(self, row: Sequence[Any], shared: SharedParts) -> Row:
        task_id, definition, status = row[0], row[1], row[2]
        state, kept = list(row[self._state]), list(row[self._kept])
        runs, failures = state[2], state[3]
        good = type(runs) is int and type(failures) is int  # else snapshot_from names them
        try:
            task = decode_task(
                task_id,
                definition,
                runs=runs - failures if good else 0,
                imports=False,
                shared=shared,
            )
            snapshot = snapshot_from(task_id, definition, status, state, task=task, kept=kept)
            held = kept[_LEASE_KEPT]  # checked with the row; no holder: no lease
            lease = None if held[3] is None else Lease(task_id, *held)
            return Row(task_id, snapshot, definition=definition, lease=lease)
        except StoreError as exc:
            return Row(str(task_id), None, str(exc))


def _last(record: Sequence[Any]) -> Last:
    """The record of a row's last columns (:data:`_LAST_SQLITE`), None for none."""
    return None if record[0] is None else record_from(record)


def peek_sqlite(path: str) -> Peek:
    """The SQLite store file at ``path``, opened read-only; :class:`StoreError` if there is
    none, or it is no lldsched store this release reads."""
    from lldsched.stores.claim import held_unshared
    from lldsched.stores.sqlite_file import no_room
    from lldsched.stores.sqlite_rows import RECORD_COLUMNS, TASK_COLUMNS, TASKS, failure, fetch
    from lldsched.stores.sqlite_schema import (
        APPLICATION_ID,
        SCHEMA_VERSION,
        corrupted,
        quick_check,
        unreadable_database,
    )

    if os.path.isdir(path):
        raise StoreError(f"{path!r} is a folder, not an SQLite store file: name the store's file")
    if not os.path.isfile(path):
        raise StoreError(f"there is no SQLite store file at {path!r}")
    # A path that begins with two slashes (SQLAlchemy's sqlite:////srv/jobs.db, given as
    # --store, leaves //srv/jobs.db; abspath keeps them, as POSIX lets it) would begin
    # the URI's authority ("invalid uri authority: srv"): an empty one goes first.
    where = urllib.parse.quote(os.path.abspath(path))
    uri = f"file:{'//' if where.startswith('//') else ''}{where}?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True, timeout=5.0, check_same_thread=False)
    except sqlite3.Error as exc:
        raise failure(path, "open the file to read", exc, because=no_room(path)) from exc
    try:  # a file that is no database opens, and fails here: closed, as every refusal
        (application,) = connection.execute("PRAGMA application_id").fetchone()
        (version,) = connection.execute("PRAGMA user_version").fetchone()
    except sqlite3.Error as exc:  # a -shm it could not make on a full disk: "disk I/O error"
        connection.close()
        if isinstance(exc, sqlite3.DatabaseError) and not isinstance(
            exc, sqlite3.OperationalError
        ):  # not SQLite, or cut short: what the store's open says
            raise unreadable_database(path, exc) from exc
        raise failure(path, "open the file to read", exc, because=no_room(path)) from exc
    if application != APPLICATION_ID:
        connection.close()
        raise StoreError(f"{path!r} is not an lldsched store file")
    if version != SCHEMA_VERSION:
        connection.close()
        raise StoreError(
            f"the SQLite store {path!r} has schema version {version}; this lldsched reads "
            f"{SCHEMA_VERSION}: run the command with the lldsched the service runs"
        )
    problems = quick_check(connection)  # the store's open refuses the file so: said here too
    if problems != ["ok"]:
        connection.close()
        raise corrupted(path, problems)

    def query(statement: str, parameters: Sequence[object]) -> list[Any]:
        try:
            return fetch(connection, statement, parameters)
        except sqlite3.Error as exc:
            raise failure(path, "read", exc) from exc

    return Peek(
        repr(path), query, connection.close, placeholder="?",
        tasks=TASKS, columns=TASK_COLUMNS, records=RECORD_COLUMNS,
        last=_LAST_SQLITE, listed=_LISTED_SQLITE,
        state=slice(3, 15), kept=slice(15, None),
        now=time.time,  # a shared file's leases expire by its host's wall clock, this one's
        held=lambda: held_unshared(path),  # its claim tried, not taken
    )  # fmt: skip


def peek_postgres(dsn: str, *, timeout: float = 10.0) -> Peek:
    """The PostgreSQL store ``dsn`` names, read on one read-only session whose statements
    each wait ``timeout`` seconds at most (a table locked by another session included);
    :class:`StoreError` if it cannot be reached, holds no store this release reads, or a
    statement runs out of time.
    ``ImportError`` (install the extra) without psycopg."""
    from lldsched.stores import postgres_sql as sql
    from lldsched.stores import postgres_tables
    from lldsched.stores.postgres_driver import psycopg
    from lldsched.stores.postgres_listen import connect
    from lldsched.stores.postgres_redact import redact, scrubbed

    where = repr(redact(dsn))
    connection = connect(dsn, timeout=timeout)  # StoreError naming the redacted dsn

    def query(statement: str, parameters: Sequence[object]) -> list[Any]:
        try:
            cursor = connection.execute(statement, parameters)
            return cursor.fetchall() if cursor.description is not None else []
        except psycopg.Error as exc:
            raise StoreError(f"the PostgreSQL store {where} failed: {scrubbed(exc, dsn)}") from None

    try:
        query("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", ())
        # A statement waits no longer than ``timeout``: one behind a lock an operator holds
        # on a table (LOCK TABLE) waited for its release, the command hanging for good.
        query(
            "SELECT pg_catalog.set_config('statement_timeout', %s, false)",
            (str(max(1, round(timeout * 1000))),),
        )
        (found,) = query("SELECT pg_catalog.to_regclass('lldsched_meta') IS NOT NULL", ())[0]
        if not found:
            raise StoreError(f"there is no lldsched store at {where} (no table lldsched_meta)")
        rows = query("SELECT value FROM lldsched_meta WHERE name = 'schema'", ())
        version = rows[0][0] if rows else None
        if version != str(postgres_tables.SCHEMA_VERSION):
            raise StoreError(
                f"the PostgreSQL store {where} has schema version {version}; this lldsched "
                f"reads {postgres_tables.SCHEMA_VERSION}: run the command with the lldsched the "
                "service runs"
            )
    except BaseException:
        connection.close()
        raise

    def now() -> float:  # the database's clock, which its leases expire by
        (instant,) = query(f"SELECT {sql.DB_NOW}", ())[0]
        return float(instant)

    return Peek(
        where, query, connection.close, placeholder="%s",
        tasks=sql.TASKS, columns=sql.SNAPSHOT_COLUMNS, records=sql.RECORD_COLUMNS,
        last=_LAST_POSTGRES, listed=_LISTED_POSTGRES,
        state=slice(3, 15), kept=slice(15, 24), now=now,
        held=lambda: False,  # always shared: none holds it unshared, its runs are leases
    )  # fmt: skip
