"""A verb's hold whose connection was lost inside names why, as every other failure does.

psycopg ends a transaction whose connection was lost inside without a word, so the
hold's end raised its own "its connection was lost before its COMMIT": the deadline's
cut was not named (the operator was not told it was the client's deadline), and the
server's own words (an administrator's ``pg_terminate_backend``, a restart) were lost.
Its :class:`~lldsched.storecalls.HoldNotCommitted` now names the deadline's reason
when the deadline cut the connection, psycopg's words for the call that failed on it
otherwise; and either way the caches are put back as before the hold (a write made
again is stored).
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest

from lldsched import StoreError, TaskStatus
from lldsched.persistence import TaskSnapshot
from lldsched.storecalls import HoldNotCommitted
from lldsched.stores.postgres import PostgresTaskStore
from tests.pg_server import PostgresServer
from tests.tcp_proxy import TcpProxy
from tests.test_store_postgres_cut_reason import CUT
from tests.test_store_postgres_hold_edges import terminate
from tests.test_store_sqlite import snapshot, task

TERMINATED = "terminating connection due to administrator command"  # the server's words


def paused(task_id: str) -> TaskSnapshot:
    return snapshot(task(id=task_id))._replace(status=TaskStatus.PAUSED)


def hold_lost(store: PostgresTaskStore, lose: Callable[[], None]) -> tuple[HoldNotCommitted, str]:
    """A hold on ``b`` that writes it, then loses its connection (``lose()``) and fails
    to write ``a``: the hold's error, and the error of the write inside."""
    store.save(snapshot(task(id="a")))
    store.save(snapshot(task(id="b")))
    inside: list[str] = []
    with pytest.raises(HoldNotCommitted) as caught, store.verb_held("b", also=("a",)):
        store.save(paused("b"))
        lose()
        try:
            store.save(paused("a"))
        except StoreError as exc:
            inside.append(str(exc))
            raise
    assert len(inside) == 1
    return caught.value, inside[0]


def undone(store: PostgresTaskStore, error: HoldNotCommitted, dsn: str) -> None:
    """Nothing of the hold is stored, and its write made again is."""
    assert list(error.written) == ["b"]
    with PostgresTaskStore(dsn) as other:
        row = other.get("b")
        assert row is not None and row.status is TaskStatus.SCHEDULED
        store.save(paused("b"))
        row = other.get("b")
        assert row is not None and row.status is TaskStatus.PAUSED


def test_a_hold_whose_connection_the_deadline_cut_names_the_deadline(
    postgres_server: PostgresServer, postgres_dsn: str
) -> None:
    with TcpProxy("127.0.0.1", postgres_server.port) as proxy:
        dsn = proxy.dsn(postgres_dsn, port=postgres_server.port)
        with PostgresTaskStore(dsn, timeout=1) as store:
            backend: list[int] = []

            def lose() -> None:
                assert store._connection is not None
                backend.append(store._connection.info.backend_pid)
                proxy.black_hole()  # the write of a is never answered: the deadline cuts it

            error, inside = hold_lost(store, lose)
            proxy.heal()
            assert CUT in inside
            assert CUT in str(error), error
            assert "server closed" not in str(error)
            # The server never heard of the cut: its session keeps the hold's row locks
            # until it ends it (idle in a transaction for a lease); ended here at once.
            with psycopg.connect(postgres_dsn, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s, 10000)", (backend[0],))
            undone(store, error, postgres_dsn)


def test_a_hold_whose_session_the_server_ended_says_the_servers_words(
    postgres_dsn: str,
) -> None:
    with PostgresTaskStore(postgres_dsn, timeout=1) as store:
        error, inside = hold_lost(store, lambda: terminate(store))
        assert TERMINATED in inside
        assert TERMINATED in str(error), error
        assert CUT not in str(error)
        undone(store, error, postgres_dsn)


def test_a_call_refused_inside_a_hold_lost_says_why_it_was_lost(postgres_dsn: str) -> None:
    """The calls after the loss are refused (a new connection would write outside the
    hold), naming why the connection was lost."""
    with PostgresTaskStore(postgres_dsn, timeout=1) as store:
        store.save(snapshot(task(id="b")))
        refused: list[str] = []
        with pytest.raises(HoldNotCommitted), store.verb_held("b"):
            store.save(paused("b"))
            terminate(store)
            with pytest.raises(StoreError):
                store.get("b")  # fails on the lost connection
            with pytest.raises(StoreError) as caught:
                store.get("b")  # refused
            refused.append(str(caught.value))
        assert "nothing more is written inside it" in refused[0]
        assert TERMINATED in refused[0], refused[0]
