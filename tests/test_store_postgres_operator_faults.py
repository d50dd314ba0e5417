"""A PostgreSQL server an operator changed under a running store, other than a network
outage (tests/test_store_postgres_outage_one_timeout.py, tests/test_cluster_partition.py):
a session that became read-only (a failover to a standby), the store's tables dropped, a
table locked, its rows truncated.  What the store says names the cause and what to do,
the operator's ``lldsched tasks`` does not hang, and a row deleted by hand is written
again.  Against the real server (docs/decisions/store-failures.md,
"A server an operator changed under a PostgreSQL store")."""

from __future__ import annotations

import threading
import urllib.parse

import psycopg
import pytest

from lldsched import FakeClock, FixedRate, Scheduler, StoreError, TaskNotFoundError, TaskStatus
from lldsched.stores.postgres import PostgresTaskStore
from lldsched.stores.postgres.peek import peek_postgres
from tests import jobs
from tests.conftest import T0
from tests.test_store_sqlite import snapshot, task
from tests.waits import wait_until


def test_a_session_made_read_only_says_the_server_takes_no_writes_and_the_verb_is_written_later(
    postgres_dsn: str,
) -> None:
    """After a failover the dsn reaches a standby (or the role's sessions default to read
    only): PostgreSQL says "cannot execute UPDATE in a read-only transaction", and the
    store said no more.  It now says what that means; the registration refused meanwhile
    is not registered, and the pause made meanwhile is written once the server takes
    writes again."""
    store = PostgresTaskStore(postgres_dsn, timeout=2)
    scheduler = Scheduler(store=store, clock=FakeClock(T0))
    try:
        scheduler.schedule("a", jobs.noop, FixedRate(60), id="a")
        connection = store._connection
        assert connection is not None
        connection.execute("SET default_transaction_read_only = on")  # as a standby's
        with pytest.raises(StoreError, match="read-only transaction") as refused:
            scheduler.schedule("b", jobs.noop, FixedRate(60), id="b")
        assert "the server takes no writes: a standby" in str(refused.value)
        assert "password" not in str(refused.value).replace("password=***", "")
        assert [t.id for t in scheduler.tasks()] == ["a"]  # nothing registered
        assert scheduler.pause("a")  # the scheduler goes on; the write fails, held stale
        connection.execute("SET default_transaction_read_only = off")  # the primary back
        assert scheduler.schedule("b", jobs.noop, FixedRate(60), id="b")
        with PostgresTaskStore(postgres_dsn) as other:
            stored = {s.task.id: s.status for s in other.load_all()}
        assert stored == {"a": TaskStatus.PAUSED, "b": TaskStatus.SCHEDULED}
    finally:
        scheduler.shutdown()
        store.close()


def test_the_stores_tables_dropped_under_it_are_said_gone_with_what_to_do(
    postgres_dsn: str,
) -> None:
    """An operator dropped the store's schema and made it again empty: "relation "tasks"
    does not exist" alone did not say that the store's own tables were dropped."""
    schema = urllib.parse.unquote(postgres_dsn).rsplit("search_path=", 1)[1]
    with PostgresTaskStore(postgres_dsn, timeout=2) as store:
        store.save(snapshot(task(id="a")))
        with psycopg.connect(postgres_dsn, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE; CREATE SCHEMA {schema}")
        with pytest.raises(StoreError, match='relation "tasks" does not exist') as failed:
            store.get("a")
        assert "the store's tables are gone" in str(failed.value)


def test_lldsched_tasks_on_a_table_an_operator_locked_gives_up_at_its_timeout(
    postgres_dsn: str,
) -> None:
    """``lldsched tasks --store postgresql://...`` (its read, ``peek_postgres``) read a
    table an operator held ``LOCK TABLE ... ACCESS EXCLUSIVE`` on: it waited for the lock's
    release, for good, where the store's own statements give up at its ``timeout``.  Now
    each of its statements does too, saying why."""
    with PostgresTaskStore(postgres_dsn) as store:
        store.save(snapshot(task(id="a")))
    outcome: list[BaseException | int] = []
    with psycopg.connect(postgres_dsn) as holder:
        holder.execute("LOCK TABLE tasks IN ACCESS EXCLUSIVE MODE")

        def read() -> None:
            try:
                reader = peek_postgres(postgres_dsn, timeout=1)
                try:
                    outcome.append(len(list(reader.listing())))
                finally:
                    reader.close()
            except BaseException as exc:  # the test's result, asserted below
                outcome.append(exc)

        reading = threading.Thread(target=read, daemon=True)
        reading.start()
        try:
            wait_until(lambda: bool(outcome), timeout=30, what="the read to give up")
        finally:
            holder.rollback()  # the lock released: a read still waiting ends (before: 1 row)
            reading.join()
    (result,) = outcome
    assert isinstance(result, StoreError), result
    assert "canceling statement due to statement timeout" in str(result)
    assert "a lock another session holds on the store's tables" in str(result)


def test_a_lock_held_past_the_stores_timeout_cut_by_its_deadline_names_the_lock_too(
    postgres_dsn: str,
) -> None:
    """A statement waiting on an operator's ``LOCK TABLE`` past the store's ``timeout`` is
    ended by the client's deadline when it fires before the server's ``statement_timeout``
    (both are ``timeout``, the deadline's begun first; here the server's is off, so the
    deadline always does).  Its message said only "the network or the server is silent",
    though the server had answered the call's connection: it now names a lock another
    session holds too, and where to look, without claiming it is one."""
    with PostgresTaskStore(postgres_dsn, timeout=1) as store:
        store.save(snapshot(task(id="a")))
        connection = store._connection
        assert connection is not None
        connection.execute("SET statement_timeout = 0")  # the deadline alone bounds it
        with psycopg.connect(postgres_dsn) as holder:
            holder.execute("LOCK TABLE tasks IN ACCESS EXCLUSIVE MODE")
            try:
                with pytest.raises(StoreError, match="no answer within 1 s") as cut:
                    store.get("a")
            finally:
                holder.rollback()
        assert "the network or the server is silent" in str(cut.value)
        assert "a lock another session holds on the store's tables" in str(cut.value)
        assert "pg_locks" in str(cut.value)
        assert store.get("a") is not None  # the store reconnects once the lock is gone


def test_a_row_deleted_by_hand_is_written_again_whole_at_its_tasks_next_write(
    postgres_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """An operator truncated the tasks table under a running scheduler: its next write of
    a task was an ``UPDATE`` of no row, taken for a removal by another node, so a
    ``pause`` returned True and stored nothing, and the task had no row for good.  A row
    no scheduler removed is now written again whole, said once; one that another
    scheduler removed is still that scheduler's removal."""
    store = PostgresTaskStore(postgres_dsn, timeout=2)
    scheduler = Scheduler(store=store, clock=FakeClock(T0))
    try:
        scheduler.schedule("a", jobs.noop, FixedRate(60), id="a")
        scheduler.schedule("b", jobs.noop, FixedRate(60), id="b")
        with PostgresTaskStore(postgres_dsn) as other:
            other.delete("b")  # a removal by another scheduler: kept for the feeds
            with psycopg.connect(postgres_dsn, autocommit=True) as admin:
                admin.execute("TRUNCATE tasks CASCADE")  # by hand: no removal kept of 'a'
            assert scheduler.pause("a")
            with pytest.raises(TaskNotFoundError):  # the feed brought the removal
                scheduler.pause("b")
            stored = {s.task.id: s.status for s in other.load_all()}
        assert stored == {"a": TaskStatus.PAUSED}
        said = [r.getMessage() for r in caplog.records if "no scheduler removed" in r.message]
        assert len(said) == 1 and "'a'" in said[0] and "truncated by hand" in said[0]
    finally:
        scheduler.shutdown()
        store.close()
