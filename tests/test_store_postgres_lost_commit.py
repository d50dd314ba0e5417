"""A commit whose reply never comes: the PostgreSQL store's statement committed on the
server, and the connection died before the client heard so (a connection cut at that
instant, a proxy that drops the reply).  The client cannot tell it from a statement
that never ran; what the store does next must be right either way.

- A claim: the lease is in the database, this node's, its token unknown here.  Before,
  nobody could claim the slot until the lease expired (30 s by default), and then it was
  "taken over" as if this process had died mid-run (a WARNING, the attempt owed).  Now
  this node's next claim takes it at once: a lease of this node whose token it does not
  hold is a claim whose reply it lost (nothing ran under it).
- A settle: the immediate retry on a new connection is in
  ``tests/test_store_postgres_batches.py``.  Here the retry fails too (the server out of
  reach a moment longer), and the batch is held and written again later, when its lease
  is long gone (the lost commit dropped it).  Before, it was then refused as if the
  lease had been taken over: a WARNING, ``rejected`` counted, and the records its run
  decided after its own (queued while it was held) dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lldsched import StoreError, TaskStatus
from lldsched.stores.postgres import PostgresTaskStore, lease_sql
from tests.conftest import T0
from tests.pg_server import PostgresServer
from tests.tcp_proxy import TcpProxy
from tests.test_store_postgres_batches import ReplyLost, hold_back
from tests.test_store_sqlite import record, snapshot, task

Opener = Callable[..., PostgresTaskStore]


def _lose_the_reply_once(store: PostgresTaskStore, proxy: TcpProxy, statement: str) -> list[bool]:
    """The store's next connection loses ``statement``'s reply, and the retry's connection
    is refused until the test heals ``proxy``; [True] until it has."""
    live = store._open
    armed = [True]

    def opened() -> Any:
        if armed:
            armed.pop()
            return ReplyLost(live(), proxy, statement=statement, heal=False)
        return live()

    store._open = opened  # type: ignore[method-assign]
    return armed


@pytest.fixture
def proxied(
    postgres_server: PostgresServer, postgres_dsn: str
) -> Iterator[tuple[TcpProxy, PostgresTaskStore]]:
    """A store (lease 60 s) on a fresh schema through a TCP proxy, task "a" saved in it."""
    with TcpProxy("127.0.0.1", postgres_server.port) as proxy:
        store = PostgresTaskStore(proxy.dsn(postgres_dsn, port=postgres_server.port), lease=60)
        try:
            store.save(snapshot(task(id="a")))
            yield proxy, store
        finally:
            store.close()


def test_a_claim_whose_reply_was_lost_is_claimed_again_at_once_by_its_node(
    proxied: tuple[TcpProxy, PostgresTaskStore],
    open_store: Opener,
    caplog: pytest.LogCaptureFixture,
) -> None:
    proxy, store = proxied
    armed = _lose_the_reply_once(store, proxy, lease_sql.CLAIM)
    with pytest.raises(StoreError) as failed:
        store.claim(now=T0, limit=1)
    assert not armed and "failed" in str(failed.value)
    (lost,) = open_store().leases()  # committed: this node's, its token unknown here
    assert lost.holder == store.node
    proxy.heal()
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        (claim,) = store.claim(now=T0, limit=1)  # not in a lease's time
    assert claim.task_id == "a" and claim.token > lost.token
    assert not claim.taken_over  # nothing ran under the lost one: no attempt owed
    assert [lease.token for lease in open_store().leases()] == [claim.token]
    assert not caplog.records


def test_a_claim_of_another_node_whose_lease_is_live_is_not_taken(open_store: Opener) -> None:
    """Only this node's own lost claims are taken again: another node's live lease stays."""
    mine, other = open_store(lease=60), open_store(lease=60)
    mine.save(snapshot(task(id="a")))
    (taken,) = other.claim(now=T0, limit=1)
    assert mine.claim(now=T0, limit=1) == []
    assert [lease.token for lease in mine.leases()] == [taken.token]


def test_a_settle_whose_reply_was_lost_and_whose_retry_failed_is_written_once_later(
    proxied: tuple[TcpProxy, PostgresTaskStore],
    open_store: Opener,
    caplog: pytest.LogCaptureFixture,
) -> None:
    proxy, store = proxied
    (claim,) = store.claim(now=T0, limit=1)
    hold_back(store)
    armed = _lose_the_reply_once(store, proxy, lease_sql.SETTLE)
    ran = snapshot(task(id="a"))._replace(next_run_at=T0 + 60, run_count=1)
    store.save(ran, record("a", 0)._replace(token=claim.token))
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        store.flush()  # committed, the reply lost, the retry refused: held
        assert not armed and store._settles.waiting
        # a slot the run's finish decided, under its token, joins the held settle
        later = record("a", 1)._replace(token=claim.token)
        store.save(ran._replace(next_run_at=T0 + 120), later)
        proxy.heal()
        store.flush()
    assert not store._settles.waiting
    assert store._settles.outcome(claim.token) is True
    assert store.rejected == 0
    assert not [r for r in caplog.records if "was not stored" in r.getMessage()]
    reader = open_store()
    records = reader.records("a")
    assert [(r.started, r.token) for r in records] == [(T0, claim.token), (T0 + 1, claim.token)]
    row = reader.get("a")
    assert row is not None and row.status is TaskStatus.SCHEDULED
    assert row.next_run_at == T0 + 120 and row.run_count == 1
    assert reader.leases() == []
