"""An SQLite store file opened to be shown (:class:`~lldsched.stores.peek.Peek`): read-only,
no claim taken, so it reads beside a scheduler holding the file, shared or not (WAL: a
reader never blocks a writer); a path with no file, or a file that is no lldsched store
of this schema version, is refused, never created, as is one the store's open refuses
(not SQLite, cut short, failing ``PRAGMA quick_check``), in the store's words.
"""

from __future__ import annotations

import os
import sqlite3
import time
import urllib.parse
from collections.abc import Sequence
from typing import Any

from lldsched.errors import StoreError
from lldsched.stores.peek import Peek
from lldsched.stores.sqlite.claim import held_unshared
from lldsched.stores.sqlite.file import no_room
from lldsched.stores.sqlite.rows import RECORD_COLUMNS, TASK_COLUMNS, TASKS, failure, fetch
from lldsched.stores.sqlite.schema import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    corrupted,
    quick_check,
    unreadable_database,
)

__all__ = ["peek_sqlite"]

_LAST = (  # a task's last record, if any: the largest seq of its key, one look-up each
    "LEFT JOIN records r ON r.task_id = t.id"  # LEFT: the tasks first, never the records
    " AND r.seq = (SELECT max(m.seq) FROM records m WHERE m.task_id = t.id)"
)
_LISTED = (  # what a listing shows of a task (rowvalues.listed_from): the JSON parts too
    "t.id, json_quote(json_extract(t.definition, '$.name')), t.status, t.next_run_at,"
    " t.attempt, json_quote(json_extract(t.definition, '$.schedule')), t.running"
)


def peek_sqlite(path: str) -> Peek:
    """The SQLite store file at ``path``, opened read-only; :class:`StoreError` if there is
    none, or it is no lldsched store this release reads."""
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
        last=_LAST, listed=_LISTED,
        state=slice(3, 15), kept=slice(15, None),
        now=time.time,  # a shared file's leases expire by its host's wall clock, this one's
        held=lambda: held_unshared(path),  # its claim tried, not taken
    )  # fmt: skip
