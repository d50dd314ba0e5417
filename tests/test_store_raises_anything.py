"""A coordinated store of a user's own that raises something other than a ``StoreError``
(its driver's exception, a bug) from a call the threaded runtime makes after the fact:
a failed call, logged with its traceback as any store failure is (the outage rule,
lldsched/core/store/outage.py), never the death of the thread it ran on
(``Coordinator._failed`` in lldsched/threaded/shared/coordinator.py;
docs/decisions/store-failures.md, "A coordinated store's call that raises anything").

The Coordinator caught only ``StoreError``: a renewal, a claim or a read of the change
feed that raised a ``RuntimeError`` killed the timer (the scheduler ``"dead"``), a flush
raised out of ``wait_idle``, and a release out of whatever gave the claim back.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lldsched import FakeClock, FixedRate, OneTime, Scheduler, SqliteTaskStore
from lldsched.model import ExecutionRecord, Outcome
from lldsched.policies import Misfire, MisfirePolicy
from lldsched.threaded.shared.leasewatch import renewal_every
from tests import cluster_jobs, jobs
from tests.store_doubles import HookedStore, StoreCall
from tests.waits import wait_until

LEASE = 30.0
START = 1000.0
BUG = "a bug in the user's store"


class Buggy(HookedStore):
    """A shared SQLite store whose call named ``broken`` raises a ``RuntimeError`` when
    made on another thread than the test's (the timer's, a keeper's)."""

    def __init__(self, path: Path, broken: str) -> None:
        super().__init__(path, lease=LEASE)
        self.broken = broken

    def before(self, call: StoreCall) -> None:
        if call == self.broken and not self.by_the_test():
            raise RuntimeError(BUG)


@pytest.fixture(autouse=True)
def released() -> Iterator[None]:
    """cluster_jobs' runs held until the test ends; its queue emptied first."""
    while not cluster_jobs.seen.empty():
        cluster_jobs.seen.get_nowait()
    cluster_jobs.released.clear()
    yield
    cluster_jobs.released.set()


def said_failed(caplog: pytest.LogCaptureFixture, doing: str) -> logging.LogRecord | None:
    """The ERROR line that said the store failed doing ``doing``, if any."""
    for record in caplog.records:
        if record.levelname == "ERROR" and f"failed (a {doing})" in record.getMessage():
            return record
    return None


def timer_died(caplog: pytest.LogCaptureFixture) -> bool:
    return "the timer thread died" in caplog.text


@pytest.mark.parametrize(
    ("broken", "doing"),
    [
        ("renew", "renewal of the leases held"),
        ("claim", "claim"),
        ("changed", "read of the change feed"),
    ],
)
def test_a_timer_call_that_raises_anything_is_a_failed_call_and_the_timer_lives_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, broken: str, doing: str
) -> None:
    """The timer's renewal, claim or read of the change feed raising a ``RuntimeError``
    is said as the store's failure, with its traceback, and the timer goes on waking."""
    caplog.set_level("INFO", logger="lldsched")
    wall = FakeClock(START)
    store = Buggy(tmp_path / "tasks.db", broken="none yet")
    with store:
        scheduler = Scheduler(workers=1, store=store, clock=wall)
        scheduler.schedule("held", cluster_jobs.held_until_released, OneTime(START), id="held")
        scheduler.start()
        try:
            if broken == "renew":  # a lease to renew: the run holds one
                assert cluster_jobs.seen.get(timeout=10)[0] == "held"
            store.broken = broken
            wall.set(START + renewal_every(LEASE))  # a wake: the renewal due, feed, claim
            wait_until(
                lambda: said_failed(caplog, doing) is not None or timer_died(caplog),
                timeout=10,
                what=f"the {doing} to fail",
            )
            assert not timer_died(caplog), caplog.text
            record = said_failed(caplog, doing)
            assert record is not None and record.exc_info is not None
            assert BUG in caplog.text
            assert scheduler.metrics().state == "running"
            store.broken = "none"  # the store works again: the timer still serves
            wall.advance(renewal_every(LEASE))
            wait_until(
                lambda: "recovered" in caplog.text, timeout=10, what="the store said recovered"
            )
            assert scheduler.metrics().state == "running"
        finally:
            cluster_jobs.released.set()
            scheduler.shutdown(timeout=10)


class FlushBuggy(SqliteTaskStore):
    """A shared SQLite store whose flush and release raise a ``RuntimeError``."""

    def flush(self) -> None:
        raise RuntimeError(BUG)

    def release(self, *, task_id: str, token: int) -> None:
        raise RuntimeError(BUG)


def test_a_flush_or_a_release_that_raises_anything_is_a_failed_call(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``wait_idle``'s flush of the settles held back, and a release of a claim, raising
    a ``RuntimeError``: each is said as the store's failure (the first with its
    traceback) and raises nothing out of the caller."""
    caplog.set_level("DEBUG", logger="lldsched")
    store = FlushBuggy(tmp_path / "tasks.db", shared=True)
    with store:
        scheduler = Scheduler(store=store)
        assert scheduler.wait_idle(timeout=5)  # the flush raised: a failed flush
        record = said_failed(caplog, "flush of the settles held back for a batch")
        assert record is not None and record.exc_info is not None
        coordinator = scheduler._coordinator
        assert coordinator is not None
        with scheduler._lock:
            coordinator._release("t", 1)  # as a claim is given back
        assert "release of the claim of t not done" in caplog.text
        scheduler.shutdown()


class MisfireRecordsBuggy(SqliteTaskStore):
    """A shared SQLite store whose first read of a task's records off the test's thread
    (the timer's, deciding a claimed slot's misfire) raises a ``RuntimeError``."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, shared=True, lease=LEASE, poll=1.0)
        self.raised = threading.Event()

    def records(self, task_id: str | None = None) -> list[ExecutionRecord]:
        timer = threading.current_thread() is not threading.main_thread()
        if task_id is not None and timer and not self.raised.is_set():
            self.raised.set()
            raise RuntimeError(BUG)
        return super().records(task_id)


def test_a_misfires_records_read_that_raises_anything_gives_the_claim_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A slot due before the process was there, past grace (SKIP): deciding its misfire
    reads the task's records (for a plan cut at the cap), which raise.  A failed call:
    said, the claim given back, the slot claimed and decided at the next wake.  Before,
    the read raised out of the claim into the timer, which died (nothing dispatched
    again, the claim left to expire)."""
    path = tmp_path / "tasks.db"
    period = 600.0
    seeder_store = SqliteTaskStore(path, shared=True, lease=LEASE, poll=1.0)
    store = MisfireRecordsBuggy(path)
    with seeder_store, store:
        seeder = Scheduler(store=seeder_store, clock=FakeClock(START - 3 * period))  # unstarted
        seeder.schedule("nightly", jobs.noop, FixedRate(period), id="nightly",
                        misfire=MisfirePolicy(Misfire.SKIP))  # fmt: skip
        wall = FakeClock(START)
        scheduler = Scheduler(workers=1, store=store, clock=wall)
        scheduler.start()
        try:
            doing = "read of the records of nightly for its misfire"
            wait_until(
                lambda: said_failed(caplog, doing) is not None or timer_died(caplog),
                timeout=10,
                what="the misfire's records read to fail",
            )
            assert not timer_died(caplog), caplog.text
            assert not seeder_store.leases()  # given back at once
            wall.advance(1.0)  # the next wake (a poll later): claimed and decided
            wait_until(
                lambda: (
                    [r.misfire for r in seeder_store.records("nightly")] == [Outcome.MISSED] * 4
                ),
                timeout=10,
                what="the misfire decided at the next wake",
            )
            assert scheduler.metrics().state == "running"
        finally:
            scheduler.shutdown(timeout=10)
