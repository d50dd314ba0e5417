"""A PostgreSQL store opened before a fork, in the forked child (lldsched/stores/forks.py):
``close()`` lets go of the child's copies alone, and every other call is refused, without
touching the parent's session (the socket the child shares with it) or waiting for a
lock a thread of the parent held at the fork."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from lldsched import FakeClock, OneTime, Scheduler
from lldsched.stores.postgres import PostgresTaskStore
from tests import jobs
from tests.conftest import T0
from tests.forking import held_by_another_thread, in_child
from tests.test_store_postgres_batches import finished, hold_back
from tests.test_store_sqlite import record, snapshot, task

OpenStore = Callable[..., PostgresTaskStore]


def session(store: PostgresTaskStore) -> int:
    """The server process of ``store``'s session (a new one after a reconnection)."""
    with store._using("read the session") as connection:
        row = connection.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def store(open_store: OpenStore) -> Iterator[PostgresTaskStore]:
    """A store holding one task, listening (its listener's thread and connection are
    copied into the child as the rest is)."""
    opened = open_store()
    Scheduler(store=opened, clock=FakeClock(T0)).schedule(
        "job", jobs.noop, OneTime(T0 + 3600), id="job"
    )
    opened.subscribe(lambda: None)
    yield opened


@pytest.fixture
def lock_held(store: PostgresTaskStore) -> Iterator[None]:
    """Another thread holds ``store``'s lock throughout (a call of it under way there,
    as when a server forks its workers while the scheduler saves)."""
    with held_by_another_thread(store._lock):
        yield


def test_close_in_a_child_forked_while_a_call_held_the_lock_returns(
    store: PostgresTaskStore, lock_held: None
) -> None:
    """Before, the child's ``close()`` flushed under the store's lock, which the thread
    that held it at the fork never lets go in the child: it hung for good (a gunicorn
    ``worker_exit``, an ``atexit`` hook closing a store opened at import)."""
    assert in_child(store.close, bound=10) == "None"  # not "hung"


def test_close_in_a_forked_child_leaves_the_parents_session_alone(
    store: PostgresTaskStore,
) -> None:
    """The child's copy of the connection is the parent's socket: closing it sent the
    server the end of the session (libpq's Terminate), which ended the parent's; its
    next call failed as a lost server."""
    before = session(store)
    assert in_child(store.close) == "None"
    assert session(store) == before  # the same session, not a new one after a failure
    assert [s.task.id for s in store.load_all()] == ["job"]


def test_a_child_forked_with_a_settle_queued_neither_writes_it_nor_refuses_its_close(
    open_store: OpenStore,
) -> None:
    """The settles queued at the fork are the parent's runs': the child writes none of
    them (its flush is refused, its close drops its copies), and the parent writes its
    own once."""
    store = open_store()
    hold_back(store)
    store.save(snapshot(task(id="a")))
    (claim,) = store.claim(now=T0 + 1e9, limit=1)
    store.save(finished("a"), record("a", 0)._replace(token=claim.token))
    assert store._settles.waiting
    refused = in_child(store.flush)
    assert refused.startswith("StoreError: the store "), refused
    assert in_child(store.close) == "None"
    store.flush()
    assert store.rejected == 0  # the parent's settle was its own to write
    assert [r.token for r in store.records("a")] == [claim.token]


VERBS: dict[str, Callable[[PostgresTaskStore], object]] = {
    "save": lambda store: store.save(snapshot(task(id="b"))),
    "settle": lambda store: store.save(
        snapshot(task(id="job")), record("job", 0)._replace(token=1)
    ),
    "delete": lambda store: store.delete("job"),
    "purge": lambda store: store.purge("job"),
    "load_all": lambda store: store.load_all(),
    "claim": lambda store: store.claim(now=T0 + 1e9, limit=1),
    "renew": lambda store: store.renew(tokens={1}, now=T0),
    "release": lambda store: store.release(task_id="job", token=1),
    "flush": lambda store: store.flush(),
    "leases": lambda store: store.leases(),
    "subscribe": lambda store: store.subscribe(lambda: None),
    "verb_held": lambda store: store.verb_held("job").__enter__(),
}


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_every_call_in_a_forked_child_is_refused_saying_so(
    store: PostgresTaskStore, lock_held: None, verb: str
) -> None:
    """Refused before the store's lock is waited for (a call under way at the fork holds
    it for good in the child) and before anything queued is written: the StoreError says
    to open the store after the fork.  Before, every one waited for the lock for good; a
    settle was queued for a writer thread started in the child, and a subscription
    listened on a connection of the child's."""
    outcome = in_child(lambda: VERBS[verb](store), bound=10)
    assert outcome.startswith("StoreError: the store "), outcome
    assert "Open the store in each process after the fork" in outcome


def test_every_call_after_close_in_a_forked_child_is_refused_as_the_forks(
    store: PostgresTaskStore,
) -> None:
    def close_then_claim() -> object:
        store.close()
        assert store.closed
        return store.claim(now=T0 + 1e9, limit=1)

    outcome = in_child(close_then_claim)
    assert outcome.startswith("StoreError: the store "), outcome
    assert "Open the store in each process after the fork" in outcome
    assert not store.closed  # the parent's is open
    assert [s.task.id for s in store.load_all()] == ["job"]
