"""A real network cut between a scheduler and its PostgreSQL server (a TCP proxy the test
cuts, ``tests/tcp_proxy.py``): the cut process loses its lease, another process takes the
run over with a larger token, the cut process's late settle is refused by the token once
the network is back, and it then claims and runs again.  No slot is claimed twice in one
fencing epoch: every token is claimed once."""

from __future__ import annotations

import logging
import queue
from collections.abc import Iterator

import pytest

from lldsched import OneTime, Scheduler
from lldsched.stores.postgres import PostgresTaskStore
from tests import cluster_jobs, jobs
from tests.pg_server import PostgresServer
from tests.tcp_proxy import TcpProxy
from tests.waits import wait_until

LEASE = 1.0


@pytest.fixture
def proxy(postgres_server: PostgresServer) -> Iterator[TcpProxy]:
    with TcpProxy("127.0.0.1", postgres_server.port) as proxy:
        yield proxy


@pytest.fixture(autouse=True)
def _fresh_jobs() -> Iterator[None]:
    while not cluster_jobs.seen.empty():
        cluster_jobs.seen.get_nowait()
    cluster_jobs.gate.clear()
    yield
    cluster_jobs.gate.set()  # never leave a worker waiting


def next_seen() -> tuple[str, int | None, bool, str | None]:
    try:
        return cluster_jobs.seen.get(timeout=20)
    except queue.Empty:
        raise AssertionError("no run reported within 20 s") from None


def test_a_process_cut_from_the_database_loses_its_lease_its_late_settle_is_refused_and_it_recovers(
    postgres_server: PostgresServer,
    postgres_dsn: str,
    proxy: TcpProxy,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.CRITICAL, logger="lldsched")  # the cut logs every failed call
    cut_dsn = proxy.dsn(postgres_dsn, port=postgres_server.port)
    cut_store = PostgresTaskStore(cut_dsn, lease=LEASE, poll=0.1, timeout=2)
    other_store = PostgresTaskStore(postgres_dsn, lease=LEASE, poll=0.1)
    reader = PostgresTaskStore(postgres_dsn)
    cut = Scheduler(store=cut_store, workers=2)
    other = Scheduler(store=other_store, workers=2)
    try:
        cut.schedule("held", cluster_jobs.held_past_its_lease, OneTime(delay=0), id="held")
        cut.start()
        task_id, first, _, _ = next_seen()
        assert task_id == "held" and first is not None

        proxy.cut()  # mid-run: its renewals fail from now on
        other.start()
        # Both, in either order: the cut run's flag goes up (no renewal for a lease), and
        # the other process takes the run over once the lease expired on the server.
        reports = sorted([next_seen(), next_seen()], key=lambda seen: seen[1] or 0)
        assert reports[0] == ("held", first, True, "lease")
        task_id, second, _, _ = reports[1]
        assert task_id == "held" and second is not None and second > first
        wait_until(
            lambda: [r.token for r in reader.records("held")] == [second],
            timeout=20,
            what="the takeover's settle",
        )

        proxy.restore()
        cluster_jobs.gate.set()  # the cut run ends now, after the network is back
        wait_until(lambda: cut_store.rejected == 1, timeout=20, what="the late settle refused")
        assert [r.token for r in reader.records("held")] == [second]  # the stale write lost

        assert other.shutdown(timeout=10)  # now only the cut process can run what comes
        reader_scheduler = Scheduler(store=reader)  # not started: it registers
        reader_scheduler.schedule("after", jobs.note, OneTime(delay=0), args=("after",), id="after")
        wait_until(
            lambda: len(reader.records("after")) == 1,
            timeout=20,
            what="the recovered process to claim, run and settle a new task",
        )
        (after,) = reader.records("after")
        assert after.ok and after.token is not None and after.token > second
        assert len({first, second, after.token}) == 3  # each claim its own epoch
        reader_scheduler.shutdown()
    finally:
        cluster_jobs.gate.set()
        cut.shutdown(timeout=10)
        other.shutdown(timeout=10)
        for store in (cut_store, other_store, reader):
            store.close()
