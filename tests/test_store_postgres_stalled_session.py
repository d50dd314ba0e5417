"""A PostgreSQL session stalled inside a transaction (a process stopped or cut mid-write)
does not keep its rows locked for good: every session of the store is opened with
``idle_in_transaction_session_timeout`` = the lease (docs/CLUSTER.md, the row of a
process that stalls), the server ends it, its rows are free, and the store goes on on a new
connection.  Against the real server."""

from __future__ import annotations

import psycopg
import pytest

from lldsched import FakeClock, FixedRate, Scheduler, TaskStatus
from lldsched.stores.postgres import PostgresTaskStore
from tests import jobs
from tests.conftest import T0
from tests.waits import wait_until

LEASE = 0.5  # the server ends a session idle in a transaction after this many seconds


def test_a_session_stalled_in_a_transaction_is_ended_by_the_server_at_the_lease(
    postgres_dsn: str,
) -> None:
    store = PostgresTaskStore(postgres_dsn, lease=LEASE)
    other = PostgresTaskStore(postgres_dsn)
    scheduler = Scheduler(store=store, clock=FakeClock(T0))
    try:
        scheduler.schedule("r", jobs.noop, FixedRate(60), id="r")
        connection = store._connection
        assert connection is not None
        (idle,) = connection.execute("SHOW idle_in_transaction_session_timeout").fetchone() or ()
        assert idle == "500ms"
        stalled = connection.info.backend_pid
        with psycopg.connect(postgres_dsn, autocommit=True) as admin:

            def gone() -> bool:
                row = admin.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (stalled,)
                ).fetchone()
                return row is not None and row[0] == 0

            def claimable() -> list[tuple[str]]:
                return admin.execute(
                    "SELECT id FROM tasks WHERE id = 'r' FOR UPDATE SKIP LOCKED"
                ).fetchall()

            # Its COMMIT meets a session the server ended: nothing of it written.
            with (
                pytest.raises(psycopg.errors.IdleInTransactionSessionTimeout),
                connection.transaction(),
            ):
                connection.execute("SELECT id FROM tasks WHERE id = 'r' FOR UPDATE")
                assert claimable() == []  # locked by the stalled session: passed over
                wait_until(gone, timeout=30, what="the server to end the stalled session")
            assert gone()
            assert claimable() == [("r",)]  # the row is free again
        assert scheduler.pause("r")  # the store goes on, on a new connection
        row = other.get("r")
        assert row is not None and row.status is TaskStatus.PAUSED
    finally:
        scheduler.shutdown()
        store.close()
        other.close()
