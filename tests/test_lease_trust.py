"""A claim is trusted from no later than the clock reading its store's expiry counts from
(``Coordinator.looked`` in lldsched/threaded/shared.py).

A shared SQLite store writes a claim's expiry as ``now + lease``, ``now`` being the timer's
reading at the top of its wake; the renewal and the change feed run between that reading
and the claim.  Trusting the claim from an instant taken after them let a process whose
feed was slow (here: held by the test for more than ``lease / 6``) keep its run's flag
down past the store's expiry, while another process could take the run over.  Both
clocks are fakes: the scheduler's (the store's expiry) and the one leases are trusted by
(``time.monotonic`` in production), moved by the test.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lldsched import FakeClock, OneTime, Scheduler, SqliteTaskStore
from lldsched.threaded import shared
from lldsched.threaded.leasewatch import renewal_every, trusted_for
from tests import cluster_jobs
from tests.waits import wait_until

LEASE = 30.0
START = 1000.0
FEED_TOOK = renewal_every(LEASE) / 2 + 1.0  # more than lease / 6 between reading and claim


class HeldFeed(SqliteTaskStore):
    """A shared store whose first look at the change feed from another thread than the
    test's (the timer's, at its first wake) waits for the test."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, shared=True, lease=LEASE)
        self.entered = threading.Event()  # set when the first look began
        self.go_on = threading.Event()  # set by the test: the look ends
        self._test = threading.current_thread()  # its looks (a registration's) are not held
        self._held = False  # the timer's first look was held (only the timer's thread sets it)

    def changed(self) -> bool:
        if not self._held and threading.current_thread() is not self._test:
            self._held = True
            self.entered.set()
            if not self.go_on.wait(10):
                raise AssertionError("the test never let the change feed go on")
        return super().changed()


@pytest.fixture
def trust(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """The clock leases are trusted by, a fake the test moves."""
    clock = FakeClock(START)
    monkeypatch.setattr(shared, "MONOTONIC", clock)
    return clock


@pytest.fixture
def gate() -> Iterator[None]:
    """cluster_jobs.held_past_its_lease's gate, closed, and opened at the end."""
    cluster_jobs.gate.clear()
    yield
    cluster_jobs.gate.set()


def test_a_claim_is_trusted_from_the_reading_its_expiry_counts_from_not_after_the_feed(
    tmp_path: Path, trust: FakeClock, gate: None
) -> None:
    path = tmp_path / "tasks.db"
    wall = FakeClock(START)  # the scheduler's: the store's expiry is on it
    task_id = "held-past-a-slow-feed"  # held_past_its_lease holds a task's first run only
    store = HeldFeed(path)
    with store, SqliteTaskStore(path, shared=True, lease=LEASE) as other:
        scheduler = Scheduler(workers=1, store=store, clock=wall)
        scheduler.schedule(task_id, cluster_jobs.held_past_its_lease, OneTime(START), id=task_id)
        scheduler.start()
        try:
            assert store.entered.wait(10), "the timer never looked at the change feed"
            trust.advance(FEED_TOOK)  # the timer read its clock, then the feed took this long
            store.go_on.set()
            name, token, _, _ = cluster_jobs.seen.get(timeout=10)  # the claimed run started
            assert (name, token) == (task_id, other.leases()[0].token)
            assert token is not None
            (lease,) = other.leases()
            assert lease.expires_at == START + LEASE  # from the timer's reading, before the feed

            # No renewal (the scheduler's clock stands still: its timer renews nothing), and
            # the trust clock reaches lease / 6 before the store's expiry: the flag goes up.
            trust.set(START + trusted_for(LEASE))
            try:
                seen = cluster_jobs.seen.get(timeout=10)
            except queue.Empty:
                pytest.fail(
                    f"no flag at {trust.now()}, lease / 6 before the store's expiry "
                    f"{lease.expires_at}: the claim was trusted from after the change feed"
                )
            assert seen == (task_id, token, True, "lease")

            # At the store's expiry another process takes the run over; the late settle of
            # the flagged run is refused.
            (takeover,) = other.claim(now=lease.expires_at, limit=1)
            assert (takeover.task_id, takeover.taken_over) == (task_id, True)
            assert takeover.token > token
            cluster_jobs.gate.set()
            wait_until(lambda: store.rejected == 1, timeout=10, what="the late settle refused")
            assert other.records(task_id) == []
        finally:
            cluster_jobs.gate.set()
            scheduler.shutdown()
