"""The lines that begin and end a shared store's outage say what a process on it did.

A scheduler of one process goes on in memory through an outage: its runs start from its
own queue.  A process on a shared store starts a run only from a claim the store grants
(threaded/timer.py), so while its claims fail it starts none, and the line said so
wrongly: "the scheduler goes on in memory and its registry stays authoritative", seen
with three processes on PostgreSQL through a server restart, in which no process ran
anything (docs/CLUSTER.md, "Failure matrix"; lldsched/core/store/outage.py, ``SHARED_OUTAGE``).

A run's settle that failed is held and made again once the store answers, refused by its
token if its lease was taken over meanwhile.  The line that ends the outage counted that
settle as a row left stale ("those tasks' rows are stale until their next transition",
PostgreSQL) or written again ("the rows they left stale were written again (1 row)",
SQLite): seen with a process cut off from PostgreSQL past its lease, its run taken over.
It now says the settle was refused, its lease taken over (``Outage.refused``).

An outage in which no task write failed (the claims alone) ended with "0 task writes not
stored (those tasks' rows are stale until their next transition)", of rows no write had
left stale: a shared store's outage ends only once no row is stale, so the clause was
never true on one.  The line now says what became of the rows left stale, if any.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection, Sequence
from typing import Any

import pytest

from lldsched import FixedRate, Priority, Scheduler, StoreError, TaskStatus
from lldsched.coordination import Claim, CoordinatedStore
from lldsched.model import ExecutionRecord
from lldsched.persistence import TaskSnapshot
from tests import jobs
from tests.cluster import StoreSpec, opened
from tests.test_cluster_settle_refused_view import _expire
from tests.test_cluster_wait_end_outage import fail_the_next_save
from tests.waits import wait_until

HOUR = 3600.0


def test_a_shared_store_s_outage_says_no_run_starts_here_while_its_claims_fail(
    store_spec: StoreSpec, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="lldsched")
    down = threading.Event()
    down.set()
    with opened(store_spec, 1, poll=0.05) as (store,):
        claim = store.claim

        def failing(*, now: float, limit: int, among: Collection[str] | None = None,
                    leaving: Collection[str] = ()) -> list[Claim]:  # fmt: skip
            if down.is_set():
                raise StoreError("the server is restarting")
            return claim(now=now, limit=limit, among=among, leaving=leaving)

        store.claim = failing  # type: ignore[method-assign]
        scheduler = Scheduler(store=store)
        try:
            task = scheduler.schedule("beat", jobs.noop, FixedRate(HOUR), id="beat")  # due now
            scheduler.start()

            def said(level: int, text: str) -> list[Any]:
                return [r for r in caplog.records if r.levelno == level and text in r.message]

            wait_until(lambda: bool(said(logging.DEBUG, "still failing")), timeout=30,
                       what="a second claim failing")  # fmt: skip
            (began,) = said(logging.ERROR, "failed (a claim)")
            assert "starts no run while the store fails its claims" in began.message
            assert "goes on in memory" not in began.message
            assert task.run_count == 0  # true: nothing ran while the claims failed
            down.clear()
            assert scheduler.wait_idle(timeout=30)
            wait_until(lambda: task.run_count == 1, timeout=30, what="the run once claimed")
            # No task write failed: nothing was left stale, and the end says nothing of it
            (ended,) = said(logging.WARNING, "recovered (a claim succeeded)")
            assert ended.message.endswith("failed during the outage, 0 task writes not stored")
        finally:
            scheduler.shutdown()


def fail_settles_while(
    store: CoordinatedStore, engine: str, down: threading.Event, failed: list[int]
) -> None:
    """Make ``store``'s settles fail as a server away would (nothing written) while
    ``down`` is set: the SQLite store's one transaction, the PostgreSQL store's batch
    (tests/test_store_outage_records.py fails the first alone); ``failed`` gets the
    tokens."""
    if engine == "sqlite":
        settle = store._settle  # type: ignore[attr-defined]

        def failing(
            snapshot: TaskSnapshot, records: Sequence[ExecutionRecord], *, token: int
        ) -> None:
            if down.is_set():
                failed.append(token)
                raise StoreError("the server is away")
            settle(snapshot, records, token=token)

        store._settle = failing  # type: ignore[attr-defined]
        return
    write = store._settle_batch  # type: ignore[attr-defined]

    def failing_batch(batch: list[Any]) -> set[int]:
        if down.is_set():
            failed.extend(pending.token for pending in batch)
            store._settles.done((pending.token, False) for pending in batch)  # type: ignore[attr-defined]
            raise StoreError("the server is away")
        refused: set[int] = write(batch)
        return refused

    store._settle_batch = failing_batch  # type: ignore[attr-defined]


def test_a_settle_refused_when_made_again_is_said_refused_not_a_row_left_stale(
    store_spec: StoreSpec, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="lldsched")
    down, failed = threading.Event(), list[int]()
    down.set()
    jobs.GATE.clear()
    # lease=300: no renewal within the test (every 100 s), so nothing here finds the
    # lease gone before the settle is made again
    with opened(store_spec, 2, lease=300.0, poll=0.05) as (store, other):
        fail_settles_while(store, store_spec.engine, down, failed)
        scheduler = Scheduler(workers=1, store=store)
        try:
            scheduler.schedule("slow", jobs.gated, FixedRate(HOUR), id="slow")  # due now
            scheduler.start()
            wait_until(lambda: bool(store.leases()), timeout=30, what="slow's run claimed")
            _expire(store_spec)  # as a process cut off past its lease
            (claim,) = other.claim(now=time.time(), limit=1)
            assert claim.task_id == "slow" and claim.taken_over
            jobs.GATE.set()  # the run ends; its settle fails, held
            wait_until(lambda: bool(failed), timeout=30, what="the settle failed")
            down.clear()  # made again: refused by its token

            def ended() -> list[logging.LogRecord]:
                return [r for r in caplog.records if "recovered (a " in r.message]

            wait_until(lambda: bool(ended()), timeout=30, what="the outage's end said")
            (said,) = ended()
            assert "1 settle refused when made again: its lease was taken over meanwhile" in (
                said.message
            )
            assert "stale" not in said.message  # no row was left stale, none written
            assert store.rejected == 1 and other.records("slow") == []
            assert [lease.token for lease in other.leases()] == [claim.token]
        finally:
            jobs.GATE.set()
            scheduler.shutdown()
            jobs.GATE.clear()


def test_a_row_left_to_the_process_that_wrote_it_is_said_left_not_stale(
    store_spec: StoreSpec, caplog: pytest.LogCaptureFixture
) -> None:
    """A verb's write that failed is written again only while the row is as this process
    last read it (``storecalls.resave``): a row another process wrote meanwhile is left to
    it, said at INFO.  The line that ends the outage said "those tasks' rows are stale
    until their next transition" of that row; it says now that the row was left to another
    process.  Here a resume whose write failed, the row then changed by another process
    and the rewrite made first, as a running scheduler's claim may make it, before the
    read of the feed (a pause or cancel is kept instead:
    tests/test_cluster_verb_outage.py)."""
    caplog.set_level(logging.INFO, logger="lldsched.store")
    with opened(store_spec, 2, lease=300.0, poll=0.05) as (admin_store, other):
        admin = Scheduler(store=admin_store)  # never started
        try:
            admin.schedule("a", jobs.noop, FixedRate(HOUR), id="a", paused=True)
            fail_the_next_save(admin_store, "a")
            assert admin.resume("a")  # its write fails: the row stale, still paused
            Scheduler(store=other).modify("a", priority=Priority.HIGH)  # another writes it
            writes = admin._core.store_writes
            assert writes is not None
            writes.succeeded("claim")  # before the feed's read: the row changed since
            assert admin.metrics().store_ok
            (left,) = [r for r in caplog.records if "is not written again" in r.message]
            assert left.levelno == logging.INFO and "task a: " in left.message
            (ended,) = [r for r in caplog.records if "recovered (a " in r.message]
            assert ended.message.endswith(
                "1 task write not stored (1 row left stale not written again: another "
                "process wrote, removed or leased it since (the change feed brings its row))"
            )
        finally:
            admin.shutdown()


def test_a_pause_under_another_process_lease_is_written_once_that_lease_is_let_go(
    store_spec: StoreSpec, caplog: pytest.LogCaptureFixture
) -> None:
    """A pause whose write failed, the task then claimed by another process: the row is
    that run's, and the pause wins over its outcome, as one written during the run does
    (docs/CLUSTER.md, "The database restarts").  The row stays stale while the lease is
    live (not left, as it was: the pause was lost), the outage goes on, and once the lease
    is let go the next call writes the pause.  A scheduler never started (verbs only): its
    next verb's read of the feed is that call (tests/test_cluster_wait_end_outage.py)."""
    caplog.set_level(logging.INFO, logger="lldsched.store")
    with opened(store_spec, 2, lease=300.0, poll=0.05) as (admin_store, other):
        admin = Scheduler(store=admin_store)  # never started
        try:
            admin.schedule("a", jobs.noop, FixedRate(HOUR), id="a")  # due now
            admin.schedule("b", jobs.noop, FixedRate(HOUR, start_delay=HOUR), id="b")
            fail_the_next_save(admin_store, "a")
            assert admin.pause("a")  # its write fails: the row stale
            (claim,) = other.claim(now=time.time(), limit=1)  # another process runs it
            assert claim.task_id == "a"
            assert admin.pause("b")  # the next verb: the row leased, kept stale
            assert not admin.metrics().store_ok
            assert not [r for r in caplog.records if "is not written again" in r.message]
            other.release(task_id="a", token=claim.token)
            assert admin.resume("b")  # the next verb: the pause written
            assert admin.metrics().store_ok
            (row,) = [s for s in other.load_all() if s.task.id == "a"]
            assert row.status is TaskStatus.PAUSED
            (ended,) = [r for r in caplog.records if "recovered (a " in r.message]
            assert "the rows they left stale were written again (1 row)" in ended.message
        finally:
            admin.shutdown()
