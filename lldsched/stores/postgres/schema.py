"""The PostgreSQL store's schema in a database: created, accepted, upgraded or refused.

:class:`SchemaInstall` is the part of :class:`~lldsched.stores.postgres.PostgresTaskStore`
that, at open, creates the schema (:data:`~lldsched.stores.postgres.tables.SCHEMA`) in an
empty database, accepts one of this version (``lldsched_meta``'s ``schema`` row),
upgrades an older one in place, in one transaction
(:data:`~lldsched.stores.postgres.tables.UPGRADES`), and refuses anything else, saying why
and what to do (:func:`schema_refused`), a read-only database (a standby) included.
Once open, a store follows the version too: its change feed reads it at every poll, and a
newer one (a newer release upgraded the database meanwhile) makes it refuse every later
call (:meth:`SchemaInstall._follow_schema`).  An
advisory lock keeps two processes opening a new or an older database from racing; the
store's own lock is not taken (the connection is not shared yet).  The tables and their
upgrades are :mod:`lldsched.stores.postgres.tables`'; the other SQL
:mod:`lldsched.stores.postgres.sql`'s.
"""

from __future__ import annotations

import logging
import re

from lldsched.errors import StoreError
from lldsched.logs import STORE
from lldsched.stores.postgres import tables
from lldsched.stores.postgres.driver import Connection, psycopg
from lldsched.stores.postgres.parts import PostgresParts
from lldsched.stores.postgres.redact import scrubbed

__all__ = ["SchemaInstall", "newer", "schema_refused"]

log = logging.getLogger(STORE)


def newer(version: str | None) -> bool:
    """Whether ``version`` (``lldsched_meta``'s schema value, None if it has none) is a
    later release's than this lldsched's :data:`SCHEMA_VERSION
    <lldsched.stores.postgres.tables.SCHEMA_VERSION>`."""
    return version is not None and version.isdigit() and int(version) > tables.SCHEMA_VERSION


def schema_refused(dsn: str, version: str | None, *, since_open: bool = False) -> str:
    """Why a store of schema ``version`` (``lldsched_meta``'s, None if it has none) is
    refused, and what to do: an older lldsched meets a newer schema on a downgrade or
    in a rolling upgrade, a newer one an older schema it has no migration for.
    ``since_open``: a newer lldsched upgraded the database after this process opened it
    (its change feed read the version: :meth:`SchemaInstall._follow_schema`)."""
    understood = tables.SCHEMA_VERSION
    number = int(version) if version is not None and version.isdigit() else None
    if newer(version):
        advice = (
            f"newer than this lldsched understands ({understood}): it was written by a "
            "newer lldsched; upgrade lldsched to open it"
        )
    elif number is not None:
        advice = f"older than this lldsched's ({understood}), and it has no migration for it"
    else:
        advice = f"not a version this lldsched knows (it understands {understood})"
    refused = f"{dsn!r} has store schema version {version}, {advice}. It was left untouched"
    if since_open:
        refused += (
            ". It was upgraded after this process opened it, and this process writes nothing "
            "more to it: restart it on the newer lldsched"
        )
    return refused


def _no_schema(dsn: str, path: str, *, user: str, schema: str | None, unusable: str | None) -> str:
    """Why a store cannot be created where its ``search_path`` (``path``) puts it, and
    what to do (PostgreSQL's own words name neither the schema nor the privilege):
    ``schema`` is the first of the path ``user`` may use (None: none), ``unusable`` the
    first of the path that exists but that ``user`` may not use (no ``USAGE``).  Called
    when the path selects no schema, or one ``user`` may not create tables in."""
    first = path.split(",")[0].strip()
    if schema is not None:
        return (
            f"{dsn!r} could not be opened: user {_ident(user)} may not create tables in schema "
            f"{_ident(schema)} (no CREATE privilege): GRANT CREATE ON SCHEMA {_ident(schema)} "
            f"TO {_ident(user)}, or open the store once as a user who may (the others then "
            "only read and write its tables); nothing was written"
        )
    if unusable is not None:
        advice = (
            f"its search_path {path!r} names schema {_ident(unusable)}, which user "
            f"{_ident(user)} may not use (no USAGE privilege): GRANT USAGE, CREATE ON SCHEMA "
            f"{_ident(unusable)} TO {_ident(user)}, or name a schema it may use"
        )
    elif first in ("", '""'):
        advice = "its search_path is empty: name a schema in it (options=-csearch_path=NAME)"
    else:
        advice = (
            f"its search_path {path!r} names no schema that exists: create the first "
            f"(CREATE SCHEMA {first}), or name one that exists"
        )
    return (
        f"{dsn!r} could not be opened: no schema has been selected to create in: {advice}; "
        "nothing was written"
    )


def _ident(name: str) -> str:
    """``name`` as an SQL statement names it: quoted unless PostgreSQL would keep it as is."""
    if re.fullmatch(r"[a-z_][a-z0-9_$]*", name):
        return name
    return '"{}"'.format(name.replace('"', '""'))


class SchemaInstall(PostgresParts):
    """Installing the schema at open: mixed into the PostgreSQL store."""

    def _follow_schema(self, version: str | None) -> None:
        """Refuse from now on (every call: ``PostgresConnection._open``) if ``version``,
        the schema the change feed read, is newer than this release's: a newer release
        upgraded the database after this process opened it, and this release's SQL is
        not to be run against that schema (caller holds the store's lock)."""
        if newer(version):
            self._refused = schema_refused(self.dsn, version, since_open=True)
            raise StoreError(self._refused)

    def _install(self, connection: Connection) -> None:
        """Create the schema in an empty database, accept ours, upgrade an older one in
        place (:data:`~lldsched.stores.postgres.tables.UPGRADES`, in this one transaction:
        whole or not at all), refuse anything else.  An advisory lock keeps two processes
        opening a new or an older database from racing."""
        with connection.transaction():
            # A migration may take longer than a statement is let to (sql.SESSION).
            connection.execute("SET LOCAL statement_timeout = 0")
            connection.execute("SELECT pg_catalog.pg_advisory_xact_lock(7106659)")  # lldsched's key
            (read_only,) = connection.execute(
                "SELECT pg_catalog.current_setting('transaction_read_only')"
            ).fetchone() or ("off",)
            if read_only == "on":  # a standby, or default_transaction_read_only
                raise StoreError(
                    f"{self.dsn!r} is read-only (a standby, or default_transaction_read_only "
                    "is on), and a store writes at every registration, claim and settle: "
                    "give the primary's dsn. It was left untouched"
                )
            present = {
                name
                for (name,) in connection.execute(
                    "SELECT tablename FROM pg_catalog.pg_tables "
                    "WHERE schemaname = pg_catalog.current_schema() AND tablename = ANY(%s)",
                    (list(tables.TABLES),),
                )
            }
            if not present:
                (schema, path, user, may_create, unusable) = connection.execute(
                    tables.WHERE_TO_CREATE
                ).fetchone() or (None, "", "", False, None)
                if not may_create:  # the CREATE would fail
                    raise StoreError(
                        _no_schema(self.dsn, path, user=user, schema=schema, unusable=unusable)
                    )
                connection.execute(tables.SCHEMA)
                return
            if "lldsched_meta" not in present:
                raise StoreError(
                    f"{self.dsn!r} holds tables named like lldsched's ({sorted(present)}) "
                    "but is not an lldsched store; it was left untouched"
                )
            row = connection.execute(
                "SELECT value FROM lldsched_meta WHERE name = 'schema'"
            ).fetchone()
            version = None if row is None else row[0]
            if version is not None and version.isdigit() and int(version) in tables.UPGRADES:
                self._upgrade(connection, int(version))
            elif version != str(tables.SCHEMA_VERSION):
                raise StoreError(schema_refused(self.dsn, version))

    def _upgrade(self, connection: Connection, version: int) -> None:
        """Bring a database of schema ``version`` to :data:`SCHEMA_VERSION
        <lldsched.stores.postgres.tables.SCHEMA_VERSION>` (inside the caller's transaction)."""
        try:
            for step in range(version, tables.SCHEMA_VERSION):
                connection.execute(tables.UPGRADES[step])
        except psycopg.Error as exc:
            raise StoreError(
                f"{self.dsn!r} could not be upgraded from store schema version {version} to "
                f"{tables.SCHEMA_VERSION}: {scrubbed(exc, self._dsn)}; it was left as it "
                "was"
            ) from None
        log.info(
            "upgraded %r from store schema version %d to %d",
            self.dsn,
            version,
            tables.SCHEMA_VERSION,
        )
