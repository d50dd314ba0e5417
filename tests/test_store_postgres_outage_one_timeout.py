"""A PostgreSQL store's call during an outage waits one ``timeout`` at most, the settles
it holds back and writes first included, and so does a verb whose hold finds the server
out of reach, all its calls together (docs/decisions/store-failures.md, "One timeout a PostgreSQL
call, and a verb's").

Each store call first writes the settles an outage held back (so that no statement of
its own lands ahead of them).  During an outage that retry waited its timeout, and then
the call's own connection waited another: two timeouts for each call, three for the
first one into a black hole (the settles' second try on a new connection between the
two).  Nothing here measures time: each wait a call makes is counted, a connection it
tries to open (each waits its ``connect_timeout`` in a black hole) or a round trip its
deadline cuts (each waited ``timeout``), through the TCP proxy of ``tests/tcp_proxy.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lldsched import FixedRate, Scheduler, StoreError, TaskStatus
from lldsched.coordination import Claim
from lldsched.stores.postgres import PostgresTaskStore
from tests import jobs
from tests.conftest import T0
from tests.pg_server import PostgresServer
from tests.tcp_proxy import TcpProxy
from tests.test_store_postgres_batches import finished, hold_back
from tests.test_store_sqlite import record, snapshot, task


@pytest.fixture
def proxy(postgres_server: PostgresServer) -> Iterator[TcpProxy]:
    with TcpProxy("127.0.0.1", postgres_server.port) as proxy:
        yield proxy


class Claimed(PostgresTaskStore):
    """A store and the claim it holds of task ``a`` (``claimed``)."""

    claimed: Claim


@pytest.fixture
def store(postgres_server: PostgresServer, postgres_dsn: str, proxy: TcpProxy) -> Iterator[Claimed]:
    """A store through the proxy (``timeout=1``: a black hole's cut after 1 s), task ``a``
    claimed by it, its settles held back until something writes them (``hold_back``)."""
    store = Claimed(proxy.dsn(postgres_dsn, port=postgres_server.port), timeout=1)
    try:
        store.save(snapshot(task(id="a")))
        (store.claimed,) = store.claim(now=T0, limit=1)
        hold_back(store)
        yield store
    finally:
        # Reset first: the listener's reconnection the black hole holds fails at once,
        # which close() waited for otherwise (up to 2 s: postgres/listen's stop()).
        proxy.reset()
        proxy.heal()
        store.close()


def settle(store: Claimed) -> None:
    """Queue the settle of ``a``'s run (not written yet)."""
    token = store.claimed.token
    store.save(finished("a"), record("a", 0)._replace(token=token, node=store.node))


def waits(store: PostgresTaskStore) -> Callable[[], int]:
    """What counts the waits ``store``'s calls make from now on: each connection it tries
    to open, and each round trip its deadline cut."""
    opened = [0]
    connect = store._connect
    expired = store._deadline.expired

    def counted() -> Any:
        opened[0] += 1
        return connect()

    store._connect = counted  # type: ignore[method-assign]
    return lambda: opened[0] + store._deadline.expired - expired


def test_a_call_whose_held_settles_found_the_server_away_connects_no_more(
    store: Claimed, proxy: TcpProxy
) -> None:
    """The server refusing: the settles' try to connect is the call's one try, and the
    call fails with that failure, its own statement not sent (before: a second try)."""
    proxy.reset()
    settle(store)
    store.flush()  # held: the server is away
    assert store._settles.waiting
    counted = waits(store)
    with pytest.raises(StoreError) as raised:
        store.save(snapshot(task(id="b")))
    assert counted() == 1
    assert "timeout this call shares is spent, so nothing more is sent in it" in str(raised.value)
    assert store._settles.waiting  # still held, tried first again by the next call
    proxy.heal()
    store.save(snapshot(task(id="b")))  # the settle first, then b
    assert not store._settles.waiting
    assert store.get("b") is not None


def test_the_first_call_into_a_black_hole_waits_one_timeout_its_settles_included(
    store: Claimed, proxy: TcpProxy
) -> None:
    """A settle queued, the network then black-holed: the call's first round trip (the
    settle's) is cut at the call's timeout, and the call neither tries the settles again
    on a new connection nor opens one of its own (before: a cut and two connects)."""
    settle(store)
    proxy.black_hole()
    counted = waits(store)
    with pytest.raises(StoreError) as raised:
        store.save(snapshot(task(id="b")))
    assert counted() == 1
    assert store._deadline.expired == 1
    assert "failed: no answer within 1 s" in str(raised.value)  # the settle's, cut
    assert "timeout this call shares is spent, so nothing more is sent in it" in str(raised.value)
    assert store._settles.waiting


def test_each_later_call_into_a_black_hole_waits_one_timeout(
    store: Claimed, proxy: TcpProxy
) -> None:
    """The connection gone, a settle held: each call tries to connect once, for the
    settles (before: once for them, once for itself)."""
    settle(store)
    proxy.black_hole()
    store.flush()  # the settle's round trip cut: held
    assert store._settles.waiting
    for call in (
        lambda: store.save(snapshot(task(id="b"))),
        store.changes,
        lambda: store.get("a"),
    ):
        counted = waits(store)
        with pytest.raises(StoreError) as raised:
            call()
        assert counted() == 1
        assert "connection timeout expired" in str(raised.value)
        del store._connect  # the method again, for the next count


@pytest.mark.parametrize("held", [True, False], ids=["settle-held", "nothing-held"])
def test_a_verb_whose_hold_finds_the_server_out_of_reach_waits_one_timeout_in_all(
    store: Claimed, proxy: TcpProxy, open_store: Callable[..., PostgresTaskStore], held: bool
) -> None:
    """A ``pause`` makes three store calls (its hold, its read of the feed, its write),
    each writing the settles held back first: six waits before (three with nothing held:
    its hold's round trip cut, then a connect for each call after it), three with one
    timeout a call; now its hold finds the server out of reach (no connection to be
    had; its round trip cut) and the calls after it fail at once.  The pause is done in
    the registry, and its row written once the store answers."""
    scheduler = Scheduler(store=store)
    try:
        scheduler.schedule("x", jobs.noop, FixedRate(3600, start_delay=3600), id="x")
        proxy.black_hole()
        if held:
            settle(store)
            store.flush()  # the settle's round trip cut: held
        counted = waits(store)
        scheduler.pause("x")
        assert counted() == 1
        assert scheduler.task("x").status is TaskStatus.PAUSED
        assert store._settles.waiting is held
        proxy.heal()
    finally:
        scheduler.shutdown()  # not started: writes the rows the outage left stale
    row = open_store().get("x")
    assert row is not None and row.status is TaskStatus.PAUSED
    assert not store._settles.waiting


def test_a_verb_whose_hold_fails_at_once_makes_its_calls_as_ever(
    store: Claimed, proxy: TcpProxy, open_store: Callable[..., PostgresTaskStore]
) -> None:
    """The connection found dead (reset, as by a server's restart), the server there: the
    hold fails at once, and the verb's read of the feed connects again and its write is
    stored, unheld, as before (nothing refused for want of time)."""
    scheduler = Scheduler(store=store)
    try:
        scheduler.schedule("x", jobs.noop, FixedRate(3600, start_delay=3600), id="x")
        proxy.reset()
        proxy.heal()
        counted = waits(store)
        scheduler.pause("x")
        assert counted() == 1  # the feed's read connects again; the write uses it
        row = open_store().get("x")
        assert row is not None and row.status is TaskStatus.PAUSED
    finally:
        scheduler.shutdown()


@pytest.mark.parametrize("held", [True, False], ids=["settle-held", "nothing-held"])
def test_a_registration_into_a_black_hole_waits_one_timeout_in_all(
    store: Claimed, proxy: TcpProxy, open_store: Callable[..., PostgresTaskStore], held: bool
) -> None:
    """A ``schedule`` of a new task makes two store calls (its read of the feed, its
    write), and holds no row: each waited its own timeout (its read's round trip cut,
    then its write's connect; with a settle held, a connect each).  Now the read that
    finds the server out of reach spends the registration's one timeout, and its write
    fails at once: the registration raises, as every registration in an outage, and
    nothing is registered; the same call once the store answers registers it."""
    scheduler = Scheduler(store=store)
    try:
        proxy.black_hole()
        if held:
            settle(store)
            store.flush()  # the settle's round trip cut: held
        counted = waits(store)
        with pytest.raises(StoreError) as raised:
            scheduler.schedule("y", jobs.noop, FixedRate(3600, start_delay=3600), id="y")
        assert counted() == 1
        assert "timeout this call shares is spent, so nothing more is sent in it" in str(
            raised.value
        )
        assert "y" not in [t.id for t in scheduler.tasks()]
        proxy.heal()
        scheduler.schedule("y", jobs.noop, FixedRate(3600, start_delay=3600), id="y")
    finally:
        scheduler.shutdown()
    assert open_store().get("y") is not None
    assert not store._settles.waiting


def stale_rows(store: Claimed, proxy: TcpProxy, *, held: bool) -> Scheduler:
    """A scheduler whose rows an outage left stale (three paused tasks, the network
    black-holed), a settle held (``held``) or not."""
    scheduler = Scheduler(store=store)
    for name in ("x0", "x1", "x2"):
        scheduler.schedule(name, jobs.noop, FixedRate(3600, start_delay=3600), id=name)
    proxy.black_hole()
    if held:
        settle(store)
        store.flush()  # the settle's round trip cut: held
    for name in ("x0", "x1", "x2"):
        scheduler.pause(name)  # in the registry; its row stale
    return scheduler


@pytest.mark.parametrize("held", [True, False], ids=["settle-held", "nothing-held"])
def test_a_shutdown_writes_the_rows_an_outage_left_stale_in_one_timeout(
    store: Claimed, proxy: TcpProxy, held: bool
) -> None:
    """A shutdown's last writes in an outage: the rows it left stale (three paused
    tasks), then the settles held back.  Each row's write waited its own timeout (seven
    waits in all with a settle held: three rows, the flush, three rows again); a rewrite
    of the rows is one call of the deadline's, as a verb's calls are (three: the rows,
    the flush, the rows after it, however many rows).  And the flush is no longer
    counted a success when the store held its settles again, or had none to write
    (nothing sent): the rows are not tried once more after it.  Two waits with a settle
    held (the rows, the flush), one without (the rows; the flush sends nothing)."""
    scheduler = stale_rows(store, proxy, held=held)
    counted = waits(store)
    scheduler.shutdown(timeout=None)  # its store steps waited for whatever they take
    assert counted() == (2 if held else 1)
    assert store._settles.waiting is held


@pytest.mark.parametrize("held", [True, False], ids=["settle-held", "nothing-held"])
def test_a_flush_the_store_did_not_write_is_no_success(
    store: Claimed, proxy: TcpProxy, held: bool
) -> None:
    """The flush a started ``wait_idle()`` makes once the registry is idle (and a
    shutdown's): in an outage the store holds the settles again, or has none to send,
    and returns.  It was counted a success all the same, which wrote the stale rows
    again (another timeout, past ``wait_idle``'s own bound by two timeouts, not one);
    now nothing is counted, and the outage goes on, its rows stale.  Once the store
    answers, a flush that writes the settles is a success as before: the rows are
    written and the outage ends."""
    scheduler = stale_rows(store, proxy, held=held)
    coordinator = scheduler._coordinator
    writes = scheduler._core.store_writes
    assert coordinator is not None and writes is not None and writes.outage is not None
    counted = waits(store)
    coordinator.flush(lock=scheduler._lock)
    assert counted() == (1 if held else 0)
    assert writes.outage is not None and set(writes.outage.stale) == {"x0", "x1", "x2"}
    proxy.heal()
    if held:
        coordinator.flush(lock=scheduler._lock)  # writes the settle: the rows follow
        assert writes.outage is None
    scheduler.shutdown(timeout=None)
    assert not store._settles.waiting


def claimed_unbegun(scheduler: Scheduler, ids: list[str]) -> None:
    """Register ``ids``, and claim a run of each as the timer does, never begun (the
    scheduler is not started): a shutdown gives the claims back."""
    for name in ids:
        scheduler.schedule(name, jobs.noop, FixedRate(3600), id=name)
    coordinator = scheduler._coordinator
    assert coordinator is not None
    with scheduler._lock:
        later = scheduler._clock.now() + 60  # every one of them due
        assert len(coordinator.claim(later, len(ids), later)) == len(ids)


def test_a_shutdown_gives_back_its_claims_in_one_timeout(
    store: Claimed, proxy: TcpProxy, open_store: Callable[..., PostgresTaskStore]
) -> None:
    """Ten claims handed out and never begun, given back by the shutdown (a ``release``
    each, so that the other processes need not wait for their leases to expire).  In a
    black hole each release waited its own timeout (ten waits: a round trip cut, then a
    connect for each after it), the scheduler's lock and the store's held throughout, so
    a ``close()`` after the shutdown waited for all of them; now they are one call of the
    deadline's, as a verb's calls are: one wait, the claims not given back expiring on
    their own.  While the server answers each one is given back, as before."""
    ids = [f"c{n}" for n in range(10)]
    scheduler = Scheduler(store=store)
    claimed_unbegun(scheduler, ids)
    proxy.black_hole()
    counted = waits(store)
    scheduler.shutdown(timeout=None)  # its store steps waited for whatever they take
    assert counted() == 1  # the releases' one timeout (nothing else left to write)
    proxy.heal()
    other = open_store()
    later = scheduler._clock.now() + 60
    assert other.claim(now=later, limit=len(ids)) == []  # still leased: they expire
    # While the server answers, every claim is given back: another process claims them.
    again = Scheduler(store=open_store())
    answered = [f"d{n}" for n in range(10)]
    claimed_unbegun(again, answered)
    again.shutdown(timeout=None)
    claims = other.claim(now=again._clock.now() + 60, limit=len(answered))
    assert sorted(claim.task_id for claim in claims) == answered
