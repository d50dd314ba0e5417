"""A PostgreSQL store opened to be shown (:class:`~lldsched.stores.peek.Peek`): one
connection, its session read-only; a database without the store's tables, or of another
schema version, is refused, never installed.  Its messages name the dsn with its
passwords hidden (:func:`~lldsched.stores.postgres.redact.redact`).  psycopg is imported
with this module, as with every module of :mod:`lldsched.stores.postgres`: the command
line imports it only for a ``postgresql://`` store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lldsched.errors import StoreError
from lldsched.stores.peek import Peek
from lldsched.stores.postgres import sql, tables
from lldsched.stores.postgres.driver import psycopg
from lldsched.stores.postgres.listen import connect
from lldsched.stores.postgres.redact import redact, scrubbed

__all__ = ["peek_postgres"]

_LAST = (  # a task's last record, if any, as PostgreSQL plans it best: a backward scan
    "LEFT JOIN LATERAL (SELECT * FROM records m WHERE m.task_id = t.id"
    " ORDER BY m.seq DESC LIMIT 1) r ON true"
)
_LISTED = (  # what a listing shows of a task (rowvalues.listed_from): the JSON parts too
    "t.id, (t.definition::json -> 'name')::text, t.status, t.next_run_at, t.attempt,"
    " (t.definition::json -> 'schedule')::text, t.running"
)


def peek_postgres(dsn: str, *, timeout: float = 10.0) -> Peek:
    """The PostgreSQL store ``dsn`` names, read on one read-only session whose statements
    each wait ``timeout`` seconds at most (a table locked by another session included);
    :class:`StoreError` if it cannot be reached, holds no store this release reads, or a
    statement runs out of time."""
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
        if version != str(tables.SCHEMA_VERSION):
            raise StoreError(
                f"the PostgreSQL store {where} has schema version {version}; this lldsched "
                f"reads {tables.SCHEMA_VERSION}: run the command with the lldsched the "
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
        last=_LAST, listed=_LISTED,
        state=slice(3, 15), kept=slice(15, 24), now=now,
        held=lambda: False,  # always shared: none holds it unshared, its runs are leases
    )  # fmt: skip
