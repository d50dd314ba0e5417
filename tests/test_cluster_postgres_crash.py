"""PostgreSQL crashes (``pg_ctl stop -m immediate``: every server process killed, crash
recovery at the next start) while two schedulers each have a run in flight, and the runs
end while the server is down (docs/CLUSTER.md, "Failure matrix", "The database
restarts").

``tests/test_cluster_postgres.py`` restarts the server cleanly (``-m fast``: every
session told, a checkpoint written) with one run in flight that ends after the restart;
here the sessions die without a word, both settles fail and are held, and the server
comes back through crash recovery.  The throwaway server runs with
``synchronous_commit`` off (tests/pg_server.py), so a crash may lose the commits of the
last fraction of a second, which a production server (on, the default) keeps: the test
writes a checkpoint before the crash to stand for that; what a crash that loses commits
does is docs/CLUSTER.md's restore row.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lldsched import FixedRate, OneTime, Outcome, Scheduler
from lldsched.stores.postgres import PostgresTaskStore
from tests import jobs
from tests.pg_server import PostgresServer
from tests.waits import wait_until

LEASE = 30.0  # longer than the outage: no lease expires, so nothing is taken over


@pytest.fixture(autouse=True)
def _gate() -> Iterator[None]:
    jobs.GATE.clear()
    yield
    jobs.GATE.set()


def _holds(store: PostgresTaskStore, scheduler: Scheduler) -> str:
    """The id of the one task ``scheduler`` runs now (its store holds that lease)."""
    wait_until(lambda: any(task.running for task in scheduler.tasks()), timeout=20, what="a run")
    (running,) = [task.id for task in scheduler.tasks() if task.running]
    assert [lease.task_id for lease in store.leases() if lease.holder == store.node] == [running]
    return running


def test_runs_in_flight_on_two_nodes_across_a_crash_of_the_server_settle_once_each(
    postgres_server: PostgresServer, postgres_dsn: str
) -> None:
    with (
        PostgresTaskStore(postgres_dsn, poll=0.1, lease=LEASE, timeout=2) as first,
        PostgresTaskStore(postgres_dsn, poll=0.1, lease=LEASE, timeout=2) as second,
    ):
        # One worker each: a node whose worker is busy claims nothing, so the task
        # registered once the first runs its own is the second's.
        one = Scheduler(store=first, workers=1)
        other = Scheduler(store=second, workers=1)
        halted = False
        try:
            one.schedule("a", jobs.gated, FixedRate(3600), id="a")
            one.start()
            mine = _holds(first, one)
            other.start()
            one.schedule("b", jobs.gated, FixedRate(3600), id="b")
            theirs = _holds(second, other)
            assert (mine, theirs) == ("a", "b")
            claims = {lease.task_id: lease.token for lease in first.leases()}
            postgres_server.sql("CHECKPOINT")  # what synchronous_commit = on keeps (docstring)
            postgres_server.halt(mode="immediate")
            halted = True
            jobs.GATE.set()  # both runs end while the server is down: their settles fail
            wait_until(
                lambda: len(one.records()) == len(other.records()) == 1,
                timeout=20,
                what="each run's end in its own process",
            )
            postgres_server.resume()
            halted = False
            wait_until(
                lambda: {r.task_id for r in first.records("a") + first.records("b")} == {"a", "b"},
                timeout=30,
                what="both held settles written",
            )
            # A task registered after the crash runs under a token above both claims: the
            # sequence came through recovery, and no node took the server for a restored one.
            one.schedule("after", jobs.noop, OneTime(delay=0), id="after")
            wait_until(lambda: bool(first.records("after")), timeout=30, what="a new run")
            assert one.metrics().store_ok and other.metrics().store_ok
        finally:
            jobs.GATE.set()
            if halted:
                postgres_server.resume()
            assert one.shutdown(timeout=10) and other.shutdown(timeout=10)
        for task_id, holder in ((mine, first), (theirs, second)):
            (record,) = first.records(task_id)  # once each, under the claim's own token
            assert record.outcome is Outcome.OK and record.token == claims[task_id]
            assert record.node == holder.node
        (after,) = first.records("after")
        assert after.token is not None and after.token > max(claims.values())
        assert first.rejected == 0 and second.rejected == 0
        assert not first.leases()
