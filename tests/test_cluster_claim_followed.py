"""A claim handed to a worker and not yet begun keeps its slot when the process follows
a write another process made meanwhile that left the task due at that slot (a
``modify``); a write that moved the task (a ``reschedule``) still gives the claim back,
as one process drops a run such a verb made before it began (docs/CLUSTER.md, "A verb
between a claim and its run").

Before, following any such write queued the task again, which killed the entry the claim
had handed out: the worker found a tombstone, the claim was given back, and the same
slot was claimed again under another token (one slot, two claims).  With PostgreSQL's
NOTIFY of a verb on a leased row, the runner follows the write at once, so the window
between a claim and its begin was enough.  The test widens that window: the runner's
one worker lets the scheduler's lock go as it takes the claimed entry, and waits for
the test before it begins it (:func:`_hold_first_begin`).  The other scheduler's fake
clock is far behind: it follows the store and claims nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lldsched import FakeClock, FixedRate, OneTime, Priority, Scheduler
from lldsched.coordination import CoordinatedStore
from lldsched.core.task import Entry
from lldsched.persistence import TaskSnapshot
from tests import jobs
from tests.cluster import StoreSpec, follows, opened
from tests.waits import wait_until

HEARD = 10.0  # how long a scheduler may take to follow a write: far more than it needs

VERBS: dict[str, Callable[[Scheduler], object]] = {
    "priority": lambda s: s.modify("t", priority=Priority.HIGH),
    "timeout": lambda s: s.modify("t", timeout=600.0),
    # An instant of the real clock's: the follower's own is far behind.
    "reschedule": lambda s: s.reschedule("t", OneTime(time.time() + 3600)),
}


def _hold_first_begin(scheduler: Scheduler) -> tuple[threading.Event, threading.Event]:
    """Make ``scheduler``'s workers (one) wait, the scheduler's lock let go, before they
    begin the first entry they take: set as it waits, and the event that lets it go on."""
    taken, go = threading.Event(), threading.Event()
    pool: Any = scheduler._pool
    prepare = pool._prepare
    lock = scheduler._lock

    def held(entry: Entry, worker: int) -> object:
        if not taken.is_set():
            taken.set()
            lock.release()  # as a worker not yet scheduled to take it is
            try:
                go.wait(HEARD * 2)
            finally:
                lock.acquire()
        return prepare(entry, worker)

    pool._prepare = held
    return taken, go


def _row(store: CoordinatedStore, task_id: str) -> TaskSnapshot | None:
    """``task_id``'s row as ``store`` reads it (None: there is none)."""
    return next((row for row in store.load_all() if row.task.id == task_id), None)


@pytest.fixture
def stores(store_spec: StoreSpec) -> Iterator[list[CoordinatedStore]]:
    """The runner's store, the follower's and one to read the store with."""
    with opened(store_spec, 3, poll=0.05, lease=30.0) as three:
        yield three


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_write_elsewhere_between_a_claim_and_its_begin_keeps_the_claim_if_due_still(
    stores: list[CoordinatedStore], schedulers: list[Scheduler], verb: str
) -> None:
    runner_store, follower_store, reader = stores
    runner = Scheduler(workers=1, store=runner_store)
    follower = Scheduler(workers=1, store=follower_store, clock=FakeClock(time.time() - 1e5))
    schedulers.extend([runner, follower])
    taken, go = _hold_first_begin(runner)
    runner.schedule("t", jobs.noop, FixedRate(3600), id="t")
    follower.start()
    runner.start()
    try:
        assert taken.wait(HEARD)  # claimed, its entry with the worker, not begun
        (claim,) = reader.leases()
        wait_until(lambda: follows(follower, "t", lambda task: True), timeout=HEARD,
                   what="the follower to read the registration")  # fmt: skip
        VERBS[verb](follower)
        written = _row(reader, "t")
        assert written is not None
        wait_until(lambda: runner.task("t").definition == written.task, timeout=HEARD,
                   what="the runner to follow the write")  # fmt: skip
    finally:
        go.set()
    wait_until(lambda: not reader.leases(), timeout=HEARD, what="the claim to end")
    records = [(record.slot, record.token) for record in reader.records("t")]
    if verb == "reschedule":  # moved: the claim given back, its slot not run, the new when kept
        assert records == []
        row = _row(reader, "t")
        assert row is not None and row.next_run_at == written.next_run_at
    else:  # the slot run once, under the claim's own token: never claimed again
        assert records == [(claim.slot, claim.token)]
        assert runner.task("t").next_run_at == claim.slot + 3600
