"""Reading a durable store to show it, importing none of the code its tasks name: what
``python -m lldsched tasks`` lists (:mod:`lldsched.cli.storetasks`).

A store's own reads (``load_all``, ``get``) import each task's action, its retry
policy's class and its schedule's (:func:`~lldsched.stores.codec.decode_task`), and
opening one claims the file (SQLite) or installs the schema (PostgreSQL).  An operator's
shell is not the service's environment, and a scheduler may hold the file: a
:class:`Peek` opens neither way.  It reads the rows with the stores' own columns and
checks (``TASK_COLUMNS`` / ``SNAPSHOT_COLUMNS``, :func:`~lldsched.stores.codec.snapshot_from`),
its definition decoded with ``imports=False`` (an action is its path as text,
:class:`~lldsched.stores.codec.NotImported`), and writes nothing:

* SQLite: the file opened read-only (``mode=ro``), no claim taken, so it reads beside a
  scheduler holding the file, shared or not (WAL: a reader never blocks a writer);
  a path with no file, or a file that is no lldsched store of this schema version, is
  refused, never created;
* PostgreSQL: one connection (psycopg imported only then), its session read-only; a
  database without the store's tables, or of another schema version, is refused, never
  installed.

Every failure is a :class:`~lldsched.errors.StoreError` naming the store (a dsn's
password hidden, :func:`~lldsched.stores.postgres_listen.redact`).  A row the store
cannot read (a status this release does not know, a value no write makes) is listed as
its error, the others read.
"""

from __future__ import annotations

import os
import sqlite3
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from lldsched.errors import StoreError
from lldsched.model import ExecutionRecord
from lldsched.persistence import TaskSnapshot
from lldsched.stores.codec import SharedParts, decode_task, record_from, snapshot_from

__all__ = ["Peek", "Row", "peek_postgres", "peek_sqlite"]

_LAST = (
    "SELECT {columns} FROM records r JOIN tasks t ON t.id = r.task_id"
    " WHERE r.task_id = {p} ORDER BY r.seq DESC LIMIT {p}"
)
_LATEST = "SELECT {columns} FROM tasks t {last}"  # the listing's tasks' last records
_LAST_SQLITE = (  # a task's last record: the largest seq of its key, one look-up each
    "CROSS JOIN records r ON r.task_id = t.id"  # CROSS: the tasks first, never the records
    " AND r.seq = (SELECT max(m.seq) FROM records m WHERE m.task_id = t.id)"
)
_LAST_POSTGRES = (  # the same, as PostgreSQL plans it best: a backward scan of the key
    "CROSS JOIN LATERAL (SELECT * FROM records m WHERE m.task_id = t.id"
    " ORDER BY m.seq DESC LIMIT 1) r"
)
_DEAD = "SELECT id FROM tasks WHERE status = 'failed' ORDER BY failed_seq, position"


class Row(NamedTuple):
    """A task's row: its snapshot, or (``snapshot`` None) why it cannot be read; with a
    snapshot, its ``definition`` as stored (the text a load decodes, importing)."""

    id: str
    snapshot: TaskSnapshot | None
    error: str | None = None
    definition: str = ""


class Peek:
    """A durable store opened to read, importing nothing, writing nothing.  ``where``
    names it in messages (a dsn with its password hidden)."""

    def __init__(
        self, where: str, query: Callable[[str, Sequence[object]], list[Any]],
        close: Callable[[], object], *, placeholder: str, tasks: str, records: str,
        last: str, state: slice, kept: slice,
    ) -> None:  # fmt: skip
        self.where = where
        self._query = query
        self._close = close
        self._p = placeholder
        self._tasks = tasks  # SELECT ... FROM tasks and leases, to add a WHERE to
        self._records = records  # the records' columns
        self._last = last  # joins a task (t) to its last record (r): _LAST_SQLITE, _LAST_POSTGRES
        self._state = state  # where a row's state and kept values are
        self._kept = kept

    def tasks(self, task_id: str | None = None, *, status: str | None = None) -> list[Row]:
        """Every task's row in the order first saved (``task_id``'s alone, if given; only
        those whose stored status is ``status``, if given).  Only the rows asked for are
        decoded: the filter is the statement's; and what their definitions have alike
        (schedules, retry policies) once (:class:`~lldsched.stores.codec.SharedParts`: the
        rows of equal parts share one schedule object)."""
        if task_id is not None:
            rows = self._query(f"{self._tasks} WHERE t.id = {self._p}", (task_id,))
        elif status is not None:
            statement = f"{self._tasks} WHERE t.status = {self._p} ORDER BY t.position"
            rows = self._query(statement, (status,))
        else:
            rows = self._query(f"{self._tasks} ORDER BY t.position", ())
        shared = SharedParts()
        return [self._row(row, shared) for row in rows]

    def dead_letter(self) -> list[str]:
        """The ids of the FAILED tasks, in the order they failed (as the stores')."""
        return [task_id for (task_id,) in self._query(_DEAD, ())]

    def records(self, task_id: str, last: int) -> list[ExecutionRecord]:
        """The last ``last`` records of ``task_id``, oldest first."""
        statement = _LAST.format(columns=self._records, p=self._p)
        rows = self._query(statement, (task_id, last))
        rows.reverse()
        return [record_from(row) for row in rows]

    def latest(self, *, status: str | None = None) -> dict[str, ExecutionRecord]:
        """Each task's last record, by task id (a task with none is absent); only those of
        the tasks whose stored status is ``status``, if given, as :meth:`tasks` filters.
        One statement, which reads a task's last record by the records' key: a listing of
        the dead letter reads the failed tasks' records, not every task's (before, a
        window over every record of the store, each task's last one decoded)."""
        statement = _LATEST.format(columns=self._records, last=self._last)
        if status is None:
            rows = self._query(statement, ())
        else:
            rows = self._query(f"{statement} WHERE t.status = {self._p}", (status,))
        return {record.task_id: record for record in map(record_from, rows)}

    def close(self) -> None:
        self._close()

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
            return Row(task_id, snapshot, definition=definition)
        except StoreError as exc:
            return Row(str(task_id), None, str(exc))


def peek_sqlite(path: str) -> Peek:
    """The SQLite store file at ``path``, opened read-only; :class:`StoreError` if there is
    none, or it is no lldsched store this release reads."""
    from lldsched.stores.sqlite_rows import RECORD_COLUMNS, TASK_COLUMNS, TASKS, failure, fetch
    from lldsched.stores.sqlite_schema import APPLICATION_ID, SCHEMA_VERSION

    if not os.path.isfile(path):
        raise StoreError(f"there is no SQLite store file at {path!r}")
    uri = f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True, timeout=5.0, check_same_thread=False)
    except sqlite3.Error as exc:
        raise failure(path, "open the file to read", exc) from exc
    try:  # a file that is no database opens, and fails here: closed, as every refusal
        (application,) = connection.execute("PRAGMA application_id").fetchone()
        (version,) = connection.execute("PRAGMA user_version").fetchone()
    except sqlite3.Error as exc:
        connection.close()
        raise failure(path, "open the file to read", exc) from exc
    if application != APPLICATION_ID:
        connection.close()
        raise StoreError(f"{path!r} is not an lldsched store file")
    if version != SCHEMA_VERSION:
        connection.close()
        raise StoreError(
            f"the SQLite store {path!r} has schema version {version}; this lldsched reads "
            f"{SCHEMA_VERSION}: run the command with the lldsched the service runs"
        )

    def query(statement: str, parameters: Sequence[object]) -> list[Any]:
        try:
            return fetch(connection, statement, parameters)
        except sqlite3.Error as exc:
            raise failure(path, "read", exc) from exc

    return Peek(
        repr(path), query, connection.close, placeholder="?",
        tasks=f"SELECT {TASK_COLUMNS} FROM {TASKS}", records=RECORD_COLUMNS,
        last=_LAST_SQLITE,
        state=slice(3, 13), kept=slice(13, None),
    )  # fmt: skip


def peek_postgres(dsn: str, *, timeout: float = 10.0) -> Peek:
    """The PostgreSQL store ``dsn`` names, read on one read-only session;
    :class:`StoreError` if it cannot be reached or holds no store this release reads.
    ``ImportError`` (install the extra) without psycopg."""
    from lldsched.stores import postgres_sql as sql
    from lldsched.stores.postgres_listen import connect, psycopg, redact, scrubbed

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
        (found,) = query("SELECT pg_catalog.to_regclass('lldsched_meta') IS NOT NULL", ())[0]
        if not found:
            raise StoreError(f"there is no lldsched store at {where} (no table lldsched_meta)")
        rows = query("SELECT value FROM lldsched_meta WHERE name = 'schema'", ())
        version = rows[0][0] if rows else None
        if version != str(sql.SCHEMA_VERSION):
            raise StoreError(
                f"the PostgreSQL store {where} has schema version {version}; this lldsched "
                f"reads {sql.SCHEMA_VERSION}: run the command with the lldsched the service runs"
            )
    except BaseException:
        connection.close()
        raise
    return Peek(
        where, query, connection.close, placeholder="%s",
        tasks=f"SELECT {sql.SNAPSHOT_COLUMNS} FROM {sql.TASKS}", records=sql.RECORD_COLUMNS,
        last=_LAST_POSTGRES,
        state=slice(3, 13), kept=slice(13, 22),
    )  # fmt: skip
