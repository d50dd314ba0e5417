"""Nodes started at the same instant on a PostgreSQL database with no schema yet, or with an
older one: each opener waits for the others' install under one advisory lock
(``lldsched/stores/postgres/schema.py``), so the schema is created, or upgraded, once and
every node opens it (docs/CLUSTER.md, "PostgreSQL: `PostgresTaskStore`").

The race is forced, not hoped for: the test holds the install's advisory lock until every
opener waits for it, then lets it go, so they take it one after another, each having
begun its transaction before the first one's install committed.
"""

from __future__ import annotations

import logging
import threading

import psycopg
import pytest

from lldsched import OneTime, Scheduler
from lldsched.stores.postgres import PostgresTaskStore
from lldsched.stores.postgres.tables import SCHEMA_VERSION
from tests import jobs
from tests.test_store_postgres import BEFORE_9, schema_of
from tests.waits import wait_until

OPENERS = 3
INSTALL_LOCK = 7106659  # the install's advisory lock key (postgres/schema.SchemaInstall)

WAITING = """
SELECT count(*) FROM pg_catalog.pg_locks
 WHERE locktype = 'advisory' AND NOT granted AND classid = 0 AND objid = %s AND objsubid = 1
"""


def _open_together(dsn: str, admin: str) -> list[PostgresTaskStore | BaseException]:
    """``OPENERS`` stores opened on ``dsn`` in threads at once, each waiting for the install
    lock a session on ``admin`` holds until all of them wait; what each open gave."""
    opened: list[PostgresTaskStore | BaseException] = []
    lock = threading.Lock()

    def open_one() -> None:
        try:
            store: PostgresTaskStore | BaseException = PostgresTaskStore(dsn, timeout=20)
        except Exception as exc:  # reported by the test
            store = exc
        with lock:
            opened.append(store)

    with psycopg.connect(admin) as holder:  # one transaction, committed at the end
        holder.execute("SELECT pg_catalog.pg_advisory_xact_lock(%s)", (INSTALL_LOCK,))
        threads = [threading.Thread(target=open_one) for _ in range(OPENERS)]
        for thread in threads:
            thread.start()
        with psycopg.connect(admin, autocommit=True) as watcher:

            def all_waiting() -> bool:
                row = watcher.execute(WAITING, (INSTALL_LOCK,)).fetchone()
                return row is not None and row[0] == OPENERS

            wait_until(all_waiting, timeout=30, what="every opener waiting for the install")
    for thread in threads:  # the holder's commit let the lock go
        thread.join(60)
    return opened


def with_isolation(dsn: str, level: str | None) -> str:
    """``dsn`` (a URI with ``options``) whose sessions begin each transaction at ``level``
    by default (``default_transaction_isolation``), as a DBA's ``ALTER DATABASE`` or
    ``ALTER ROLE ... SET`` makes every session of it; None: the server's, READ COMMITTED."""
    if level is None:
        return dsn
    return f"{dsn}%20-cdefault_transaction_isolation%3D{level.replace(' ', '%5C%20')}"


LEVELS = [None, "repeatable read", "serializable"]
LEVEL_IDS = ["default", "repeatable-read", "serializable"]


@pytest.mark.parametrize("level", LEVELS, ids=LEVEL_IDS)
def test_nodes_opening_a_new_database_together_create_its_schema_once(
    level: str | None, postgres_dsn: str
) -> None:
    """Whatever isolation level the database's sessions begin at (before, at REPEATABLE
    READ or SERIALIZABLE every opener but the first failed: its snapshot, taken by the
    statement that waited for the lock, had no tables, and its CREATE TABLE then found
    the first one's)."""
    opened = _open_together(with_isolation(postgres_dsn, level), postgres_dsn)
    stores = [store for store in opened if isinstance(store, PostgresTaskStore)]
    try:
        assert stores == opened, [str(error) for error in opened if error not in stores]
        assert schema_of(postgres_dsn) == str(SCHEMA_VERSION)
        Scheduler(store=stores[0]).schedule("once", jobs.noop, OneTime(delay=60), id="once")
        for store in stores:
            assert [snapshot.task.id for snapshot in store.load_all()] == ["once"]
    finally:
        for store in stores:
            store.close()


@pytest.mark.parametrize("level", LEVELS, ids=LEVEL_IDS)
def test_nodes_opening_an_older_database_together_upgrade_it_once(
    level: str | None, postgres_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """As above, for an upgrade (before, every opener but the first read version 8 from
    its old snapshot and failed adding the column the first had added)."""
    with PostgresTaskStore(postgres_dsn) as store:
        Scheduler(store=store).schedule("kept", jobs.noop, OneTime(delay=60), id="kept")
    with psycopg.connect(postgres_dsn) as connection:  # as version 8 left it
        connection.execute(BEFORE_9)
        connection.execute("UPDATE lldsched_meta SET value = '8'")
    caplog.set_level(logging.INFO, logger="lldsched.store")
    opened = _open_together(with_isolation(postgres_dsn, level), postgres_dsn)
    stores = [store for store in opened if isinstance(store, PostgresTaskStore)]
    try:
        assert stores == opened, [str(error) for error in opened if error not in stores]
        assert schema_of(postgres_dsn) == str(SCHEMA_VERSION)
        upgrades = [r for r in caplog.records if "from store schema version 8" in r.getMessage()]
        assert len(upgrades) == 1
        for store in stores:
            assert [snapshot.task.id for snapshot in store.load_all()] == ["kept"]
    finally:
        for store in stores:
            store.close()
