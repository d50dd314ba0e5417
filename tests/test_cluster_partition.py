"""Network partitions between one scheduler and its PostgreSQL server, made by a TCP
proxy the test drives (``tests/tcp_proxy.py``): a black hole (bytes accepted, nothing
forwarded, nothing reset), connections reset, 200 ms of latency, and the heal.

What an operator of three processes on one database is promised (docs/CLUSTER.md,
"Network partitions"): a call into a black hole fails within the store's ``timeout``;
a black-holed holder raises its runs' flags once its trust runs out (before another
process can take them over: an order of two real clocks, proved link by link elsewhere,
not here; see that test), and its late settle is refused once the network is back; a
node whose connections are reset says so once, and loses and duplicates nothing once
healed; 200 ms per round trip keeps every lease; the LISTEN connection notices a black
hole and listens again after the heal.  Every wait is bounded; leases are short.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from typing import NamedTuple, TypeVar

import pytest

from lldsched import FakeClock, OneTime, Scheduler
from lldsched.errors import StoreError
from lldsched.stores.postgres import PostgresTaskStore
from lldsched.threaded.shared import coordinator
from lldsched.threaded.shared.leasewatch import trusted_for
from tests import cluster_jobs, jobs
from tests.pg_server import PostgresServer
from tests.tcp_proxy import TcpProxy
from tests.waits import wait_until

Seen = TypeVar("Seen")


@pytest.fixture
def proxy(postgres_server: PostgresServer) -> Iterator[TcpProxy]:
    with TcpProxy("127.0.0.1", postgres_server.port) as proxy:
        yield proxy


@pytest.fixture
def via_proxy(postgres_server: PostgresServer, postgres_dsn: str, proxy: TcpProxy) -> str:
    """The test's dsn, through the proxy."""
    return proxy.dsn(postgres_dsn, port=postgres_server.port)


LEASE = 3.0  # the black-holed tests' lease: a takeover within seconds
TRUST_FROM = 1000.0  # where the cut node's trust clock stands until the test moves it


class BlackHoled(NamedTuple):
    """Two schedulers on one database, ``cut`` reaching it through the proxy (``timeout=1``),
    ``other`` directly, and a ``reader``: the black-holed holder's tests.  ``cut`` trusts
    its leases by ``trust``, a fake clock standing at ``TRUST_FROM`` until the test moves
    it: its trust runs out when the test says so, never after some real time (every
    renewal that succeeded began at ``TRUST_FROM``)."""

    cut_store: PostgresTaskStore
    cut: Scheduler
    other: Scheduler
    reader: PostgresTaskStore
    trust: FakeClock


@pytest.fixture
def black_holed(
    via_proxy: str, postgres_dsn: str, proxy: TcpProxy, monkeypatch: pytest.MonkeyPatch
) -> Iterator[BlackHoled]:
    """:class:`BlackHoled`, neither scheduler started; healed, shut down and closed after."""
    cut_store = PostgresTaskStore(via_proxy, lease=LEASE, poll=0.1, timeout=1)
    other_store = PostgresTaskStore(postgres_dsn, lease=LEASE, poll=0.1)
    reader = PostgresTaskStore(postgres_dsn)
    other = Scheduler(store=other_store, workers=2)  # trusts by time.monotonic
    trust = FakeClock(TRUST_FROM)
    with monkeypatch.context() as patch:
        patch.setattr(coordinator, "LEASE_CLOCK", trust)  # read once, by cut's coordinator
        cut = Scheduler(store=cut_store, workers=2)
    try:
        yield BlackHoled(cut_store, cut, other, reader, trust)
    finally:
        cluster_jobs.gate.set()  # never leave a worker waiting
        proxy.heal()
        cut.shutdown(drain=False, timeout=10)
        other.shutdown(drain=False, timeout=10)
        for store in (cut_store, other_store, reader):
            store.close()


def held_tokens(reader: PostgresTaskStore) -> list[int]:
    """The tokens of the leases the database holds now."""
    return [lease.token for lease in reader.leases()]


def outage_said(caplog: pytest.LogCaptureFixture) -> bool:
    """Whether a store call failed (the outage's first failure, said at ERROR)."""
    return any(
        record.levelno >= logging.ERROR and "failed (a " in record.getMessage()
        for record in caplog.records
    )


@pytest.fixture(autouse=True)
def _fresh_jobs() -> Iterator[None]:
    for channel in (cluster_jobs.seen, cluster_jobs.moments):
        while not channel.empty():
            channel.get_nowait()
    # Both events are module-wide: test_cluster_control leaves ``released`` set, and a set
    # event lets a held run end at once (this test file's runs would hold no lease).
    cluster_jobs.gate.clear()
    cluster_jobs.released.clear()
    yield
    cluster_jobs.gate.set()  # never leave a worker waiting
    cluster_jobs.released.set()


def _next(channel: queue.Queue[Seen], what: str) -> Seen:
    try:
        return channel.get(timeout=20)
    except queue.Empty:
        raise AssertionError(f"no {what} within 20 s") from None


def test_a_call_into_a_black_hole_fails_within_the_stores_timeout(
    via_proxy: str, proxy: TcpProxy
) -> None:
    """The middlebox acknowledges every byte, so keepalives and tcp_user_timeout see a
    healthy connection: only the client's own deadline ends the call (it hung for good)."""
    store = PostgresTaskStore(via_proxy, timeout=1)
    try:
        proxy.black_hole()
        failed: list[BaseException] = []

        def call() -> None:
            try:
                store.get("anything")
            except StoreError as exc:
                failed.append(exc)

        caller = threading.Thread(target=call, daemon=True)
        caller.start()
        caller.join(timeout=10)
        assert not caller.is_alive(), "a call into a black hole still waits after 10 s"
        (error,) = failed
        assert "no answer within 1 s" in str(error)
        proxy.heal()
        assert store.get("anything") is None  # a new connection: it works again
    finally:
        proxy.heal()
        store.close()


def test_a_black_holed_holder_raises_its_flag_once_its_trust_runs_out_its_late_settle_refused(
    black_holed: BlackHoled, proxy: TcpProxy, caplog: pytest.LogCaptureFixture
) -> None:
    """Black-holed mid-run, the holder's store calls fail one after another, each after
    its ``timeout``, and its run's flag stays down while a renewal still vouches for the
    lease (its trust clock, a fake, stands still).  Once the test moves that clock on by
    ``trusted_for(lease)`` the flag goes up (reason ``"lease"``: its lease watch, or the
    next failed renewal), the lease row still the holder's.  Another process then takes
    the run over with a larger token, and the holder's late settle is refused once the
    network is back: the database keeps the takeover's record only.

    Not proved here: that the flag goes up *before* another process can take the run
    over.  The test orders the two itself (it waits for the flag, then starts the other
    process), so that order could not fail, and no test can make it fail without real
    time.  The flag is due on the holder's ``time.monotonic`` (``lease - lease / 6``
    after the last successful renewal *began*), the takeover on the server's
    ``clock_timestamp()`` (``lease`` after the renewal's statement): two clocks no test
    moves together.  A fake trust clock is unrelated to the server's, and the server's
    cannot be faked (the store calls ``pg_catalog.clock_timestamp()`` by its qualified
    name; tests/test_store_postgres.py shows no search_path shadows it).  The order
    rests on three things: the renewal begins before its statement runs (program order);
    both clocks count real seconds (a drift under ``lease / 6`` per lease, and no step of
    the server's wall clock); and the watch thread gets the processor within what is
    left of ``lease / 6`` after its deadline.  The last two are properties of real
    time: this test asserted them by timing the flag and the takeover with
    ``time.monotonic`` across threads, and failed under a load of 6 (commit 310808b).
    Each link a test can prove without real time is proved elsewhere: the watch's
    deadline on a fake clock (tests/test_leasewatch.py); the trust counted from a
    reading taken before the call (tests/test_lease_trust.py, where a shared SQLite
    store's expiry and the trust are both on fake clocks, so the whole order, flag
    ``lease / 6`` before the takeover, is proved there); PostgreSQL's expiry at least
    ``lease`` after a reading of the server's clock taken before the call, and no
    takeover before that expiry (tests/test_store_postgres_claims.py:
    ``test_expiry_is_measured_on_the_database_clock_not_the_claimers``,
    ``test_an_expired_lease_is_taken_over_with_a_larger_token_and_the_late_settle_is_refused``).
    docs/decisions/persistence.md ("The black-holed holder's order is argued, not timed")."""
    caplog.set_level(logging.ERROR, logger="lldsched")  # the outage's first failure
    cut_store, cut, other, reader, trust = black_holed
    cut.schedule("held", cluster_jobs.held_past_its_lease, OneTime(delay=0), id="bh-held")
    cut.start()
    kind, first = _next(cluster_jobs.moments, "the run started")
    assert kind == "started" and isinstance(first, int)
    assert _next(cluster_jobs.seen, "the run started") == ("bh-held", first, False, None)
    assert held_tokens(reader) == [first]

    proxy.black_hole()  # mid-run: nothing it sends is answered, nothing is reset
    wait_until(lambda: outage_said(caplog), timeout=20, what="a black-holed call to fail")
    assert cluster_jobs.moments.empty(), "the flag went up while the lease was trusted"
    trust.advance(trusted_for(LEASE))  # no renewal succeeded since the claim: trust out
    assert _next(cluster_jobs.moments, "the flag") == ("flag", first)
    assert _next(cluster_jobs.seen, "the flag") == ("bh-held", first, True, "lease")
    assert held_tokens(reader) == [first]  # the flag gave nothing up: no other token yet

    other.start()  # it takes the run over once the lease expired on the database
    kind, second = _next(cluster_jobs.moments, "the takeover")
    assert kind == "started" and isinstance(second, int) and second > first
    assert _next(cluster_jobs.seen, "the takeover") == ("bh-held", second, False, None)
    wait_until(
        lambda: [r.token for r in reader.records("bh-held")] == [second],
        timeout=20,
        what="the takeover's settle",
    )

    proxy.heal()
    cluster_jobs.gate.set()  # the cut run ends now that the network is back
    wait_until(lambda: cut_store.rejected == 1, timeout=15, what="the late settle refused")
    assert [r.token for r in reader.records("bh-held")] == [second]  # the stale one lost
    assert cluster_jobs.moments.empty() and cluster_jobs.seen.empty()


def test_a_coroutine_whose_lease_was_counted_lost_behind_a_black_hole_is_stopped_after_the_heal(
    black_holed: BlackHoled, proxy: TcpProxy, caplog: pytest.LogCaptureFixture
) -> None:
    """Black-holed for longer than its lease, the holder counts its lease lost (a renewal
    failed with none vouching any more) while the other process takes the run over.  A
    coroutine cannot look at its flag: once healed, the holder's renewal must find the
    lease gone and cancel it.  It used to stop renewing a lease once counted lost, and the
    coroutine ran on to its end beside the one that took the slot over."""
    caplog.set_level(logging.WARNING, logger="lldsched.cluster")
    _, cut, other, reader, trust = black_holed
    cut.schedule("async", cluster_jobs.until_cancelled, OneTime(delay=0), id="bh-async")
    cut.start()
    wait_until(lambda: cut.task("bh-async").running and bool(reader.leases()), timeout=20,
               what="the coroutine to start")  # fmt: skip
    (held,) = reader.leases()

    proxy.black_hole()
    trust.advance(trusted_for(LEASE))  # no renewal vouches any more: the next failure counts
    other.start()
    wait_until(lambda: "lost the lease of task bh-async" in caplog.text, timeout=20,
               what="the cut holder to count its lease lost")  # fmt: skip
    wait_until(lambda: other.task("bh-async").running, timeout=20, what="the takeover")
    (taken,) = reader.leases()
    assert taken.token > held.token
    # (The cut scheduler is not asked: its timer, in one black-holed call after another
    # under the scheduler's lock, leaves the test's thread waiting for that lock.)

    proxy.heal()
    wait_until(lambda: not cut.task("bh-async").running, timeout=20,
               what="the cut coroutine to be cancelled after the heal")  # fmt: skip
    (record,) = cut.task("bh-async").history
    assert record.error is not None and "no longer holds its lease" in record.error
    assert [lease.token for lease in reader.leases()] == [taken.token]
    # The run taken over ends only when cancelled: cancelled here, or the fixture's
    # shutdown(timeout=10) waits 9 s for it before cancelling it itself.
    other.cancel("bh-async")


def test_a_node_whose_connections_are_reset_says_so_once_and_runs_every_slot_once_when_healed(
    via_proxy: str,
    postgres_dsn: str,
    proxy: TcpProxy,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="lldsched")
    store = PostgresTaskStore(via_proxy, lease=2.0, poll=0.1, timeout=1)
    reader = PostgresTaskStore(postgres_dsn)
    scheduler = Scheduler(store=store, workers=2)
    ids = [f"reset-{n}" for n in range(12)]
    try:
        scheduler.start()
        for task_id in ids[:4]:
            scheduler.schedule(task_id, jobs.note, OneTime(delay=0), args=(task_id,), id=task_id)
        wait_until(
            lambda: all(reader.records(task_id) for task_id in ids[:4]),
            timeout=15,
            what="the runs before the outage",
        )
        proxy.reset()
        registrar = Scheduler(store=reader)  # not started: it registers, as another node
        for n, task_id in enumerate(ids[4:]):
            registrar.schedule(
                task_id, jobs.note, OneTime(delay=0.1 * n), args=(task_id,), id=task_id
            )
        before = proxy.accepted
        wait_until(
            lambda: proxy.accepted >= before + 5, timeout=15, what="five reconnections refused"
        )
        proxy.heal()
        wait_until(
            lambda: all(reader.records(task_id) for task_id in ids),
            timeout=15,
            what="every slot run after the heal",
        )
        assert scheduler.wait_idle(timeout=10)
        records = [record for task_id in ids for record in reader.records(task_id)]
        assert len(records) == len(ids) and all(record.ok for record in records)  # once each
        tokens = [record.token for record in records]
        assert len(set(tokens)) == len(tokens)
        registrar.shutdown()
    finally:
        proxy.heal()
        scheduler.shutdown(timeout=10)
        store.close()
        reader.close()
    said = [(r.levelno, r.getMessage()) for r in caplog.records if r.levelno >= logging.WARNING]
    failing = [text for level, text in said if level >= logging.ERROR and "failed" in text]
    back = [text for _, text in said if "recovered" in text or "again" in text]
    assert len(failing) == 1, said  # the outage said once, at its start...
    assert len(back) >= 1, said  # ...and its end; every failure between at debug level


def test_200_ms_per_round_trip_keeps_every_lease(
    via_proxy: str, postgres_dsn: str, proxy: TcpProxy
) -> None:
    # A lease many round trips long, and a timeout below lease / 3, as docs/CLUSTER.md
    # ("Latency") advises: a failed renewal is retried while the lease holds.
    lease = 4.0
    slow_store = PostgresTaskStore(via_proxy, lease=lease, poll=0.2, timeout=1.2)
    other_store = PostgresTaskStore(postgres_dsn, lease=lease, poll=0.1)
    reader = PostgresTaskStore(postgres_dsn)
    slow = Scheduler(store=slow_store, workers=1)
    other = Scheduler(store=other_store, workers=1)
    try:
        proxy.delay(0.2)
        slow.schedule("slow", cluster_jobs.held_until_released, OneTime(delay=0), id="lat-held")
        slow.start()
        other.start()
        started, first, _, _ = _next(cluster_jobs.seen, "the run started")
        assert started == "lat-held", f"a run of another test's task told first: {started!r}"
        # Over three leases, through 200 ms round trips: renewed each time, never taken over.
        expiries: set[float] = set()

        def renewed_for_three_leases() -> bool:
            expiries.update(held.expires_at for held in reader.leases() if held.token == first)
            return len(expiries) >= 2 and max(expiries) - min(expiries) >= 3 * lease

        wait_until(renewed_for_three_leases, timeout=30, what="three leases of renewals")
        assert all(held.token == first for held in reader.leases())  # nobody else claimed it
        assert cluster_jobs.seen.empty(), "the run was flagged or taken over"
        cluster_jobs.released.set()
        assert _next(cluster_jobs.seen, "the run's end") == ("lat-held", first, False, None)
        wait_until(lambda: len(reader.records("lat-held")) == 1, timeout=15, what="its settle")
        assert [r.token for r in reader.records("lat-held")] == [first]
        assert slow_store.rejected == 0
    finally:
        cluster_jobs.released.set()
        proxy.heal()
        slow.shutdown(timeout=10)
        other.shutdown(timeout=10)
        for store in (slow_store, other_store, reader):
            store.close()


def test_the_listener_notices_a_black_hole_and_listens_again_after_the_heal(
    via_proxy: str, proxy: TcpProxy, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="lldsched")
    woken = threading.Event()
    store = PostgresTaskStore(via_proxy, timeout=1)
    try:
        store.subscribe(woken.set)
        assert woken.wait(10)  # listening (it wakes once when it starts)
        woken.clear()
        proxy.black_hole()
        wait_until(
            lambda: any("lost its connection (" in r.getMessage() for r in caplog.records),
            timeout=10,
            what="the listener to notice the black hole",
        )
        assert not woken.is_set()
        proxy.heal()
        wait_until(
            lambda: any("listens again" in r.getMessage() for r in caplog.records),
            timeout=10,
            what="the listener to listen again",
        )
        assert woken.wait(5)  # and it woke the timer: what was sent meanwhile is lost
    finally:
        proxy.heal()
        store.close()
