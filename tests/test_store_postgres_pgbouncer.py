"""The PostgreSQL store behind PgBouncer in transaction pooling mode (tests/pg_bouncer.py):
a session is a server connection lent for one transaction, so nothing the store relies
on may be a session's (docs/OPERATIONS.md, "Behind PgBouncer").  The engine-agnostic
cluster tests run through it too (the ``pgbouncer`` engine of tests/cluster.py); what is
here is the pooler's own.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import psycopg
import pytest

from lldsched import FixedRate, Scheduler
from lldsched.errors import StoreError
from lldsched.stores.postgres import PostgresTaskStore
from tests import jobs
from tests.pg_bouncer import PgBouncer
from tests.test_store_sqlite import snapshot, task
from tests.waits import wait_until


@pytest.fixture
def pooled_dsn(pgbouncer: PgBouncer) -> str:
    """A fresh schema and role (a pool of its own) behind the session's PgBouncer."""
    return pgbouncer.create_schema()


@pytest.fixture(autouse=True)
def _clear_calls() -> Iterator[None]:
    jobs.CALLS.clear()
    yield
    jobs.CALLS.clear()


def test_a_store_behind_the_pooler_leaves_no_setting_on_the_server_connection_it_was_lent(
    pooled_dsn: str,
) -> None:
    """The store's session settings (its statement timeout, its isolation, its
    search_path) were set on the server connection the pooler lent it, which the
    pooler then lends the next client of the pool: another application's statements
    cut at the store's timeout.  The store was this role's only client: its pool has
    that one server connection, lent next to the application here."""
    with PostgresTaskStore(pooled_dsn, timeout=7) as store:
        store.save(snapshot(task(id="t")))  # a write, a read
    with psycopg.connect(pooled_dsn, autocommit=True) as application:
        (timeout,) = application.execute("SHOW statement_timeout").fetchone() or ("",)
        (idle,) = application.execute("SHOW idle_in_transaction_session_timeout").fetchone() or (
            "",
        )
    assert (timeout, idle) == ("0", "0")  # the role's defaults, not the store's 7 s, 30 s


def test_a_statement_run_often_is_not_prepared_on_a_server_connection_lent_to_another(
    pooled_dsn: str,
) -> None:
    """psycopg prepares a statement on its sixth run; behind a transaction pooler the
    prepared statement is the server connection's, and the next run, lent another
    (the first one busy with another client's transaction), failed: "prepared statement
    _pg3_0 does not exist"."""
    with (
        PostgresTaskStore(pooled_dsn) as store,
        psycopg.connect(pooled_dsn) as other,
    ):
        for _ in range(8):
            assert store.get("nothing") is None
        with other.transaction():  # takes the server connection the store last had
            other.execute("SELECT 1")
            for _ in range(3):
                assert store.get("nothing") is None  # lent another one


def test_a_pooled_role_whose_sessions_default_to_serializable_is_refused_naming_the_setting(
    pgbouncer: PgBouncer,
) -> None:
    """The store cannot set READ COMMITTED on a pooled session (its single statements run
    on whichever server connection, at its default): refused at open, naming what to set,
    instead of claims failing "could not serialize access" under load."""
    dsn = pgbouncer.create_schema(default_transaction_isolation="serializable")
    with pytest.raises(StoreError, match="connection pooler") as refused:
        PostgresTaskStore(dsn)
    assert "ALTER ROLE <user> SET default_transaction_isolation = 'read committed'" in str(
        refused.value
    )
    assert "'serializable'" in str(refused.value)


def test_a_transaction_of_the_store_on_a_pooled_session_has_the_session_bounds(
    pooled_dsn: str,
) -> None:
    """The idle-in-transaction bound (a process stalled inside a verb's hold keeps rows
    locked) and the statement bound are set for each such transaction alone."""
    with PostgresTaskStore(pooled_dsn, lease=5, timeout=3) as store:
        store.save(snapshot(task(id="t")))
        with store.verb_held("t"):
            connection = store._connection
            assert connection is not None
            shown = [
                connection.execute(f"SHOW {name}").fetchone()
                for name in ("idle_in_transaction_session_timeout", "statement_timeout")
            ]
        assert shown == [("5s",), ("3s",)]


def test_a_direct_store_is_not_pooled(postgres_dsn: str) -> None:
    with PostgresTaskStore(postgres_dsn) as store:
        assert not store.pooled


def test_a_store_behind_the_pooler_leaves_no_lent_server_connection_listening(
    pooled_dsn: str,
) -> None:
    """A LISTEN through a transaction pooler is the server connection's it was lent: the
    store's listener heard nothing, and the pool lent that connection, listening, to
    other clients.  Every server connection of the pool is taken here at once (more
    clients in a transaction than it has), so the one that listened would be among them."""
    with PostgresTaskStore(pooled_dsn) as store:
        store.subscribe(lambda: None)
        assert not [t for t in threading.enumerate() if t.name == "lldsched-pg-listen"]
        clients = [psycopg.connect(pooled_dsn) for _ in range(4)]
        try:
            channels = [c.execute("SELECT pg_listening_channels()").fetchall() for c in clients]
        finally:
            for client in clients:
                client.close()
    assert channels == [[]] * 4


def test_a_scheduler_behind_the_pooler_reads_another_nodes_task_at_its_poll(
    pooled_dsn: str,
) -> None:
    """No LISTEN behind a transaction pooler (it would be a lent server connection's):
    a task registered by another node is read at the next poll and run once."""
    with (
        PostgresTaskStore(pooled_dsn, poll=0.2) as mine,
        PostgresTaskStore(pooled_dsn) as other,
    ):
        scheduler = Scheduler(store=mine).start()
        try:
            registrar = Scheduler(store=other)  # not started: it only registers
            registrar.schedule("elsewhere", jobs.note, FixedRate(3600), args=("x",), id="e")
            wait_until(lambda: len(jobs.CALLS) == 1, timeout=20, what="the run")
            registrar.shutdown()
        finally:
            assert scheduler.shutdown(timeout=10)
        (record,) = mine.records("e")
        assert record.ok and record.node == mine.node
