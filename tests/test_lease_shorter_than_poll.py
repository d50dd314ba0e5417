"""A shared store whose ``lease`` is shorter than its ``poll`` (``lease=1, poll=5``) keeps
its leases: a process renews them every ``lease / 3`` whatever its ``poll``, the timer
waking for the renewal before the poll bound (``Coordinator.wake``;
docs/decisions/checking-input.md, the bullet of 2026-12-08 on a lease shorter than
the poll).  So the combination is taken, not refused: ``poll`` bounds how long a verb
takes to reach the other processes, ``lease`` how long a stalled holder keeps its runs,
and neither bounds the other.
"""

from __future__ import annotations

from pathlib import Path

from lldsched import FakeClock, OneTime, Scheduler
from lldsched.stores.sqlite import SqliteTaskStore
from tests import jobs
from tests.conftest import T0
from tests.waits import wait_until

LEASE = 1.0
POLL = 5.0
STEP = 0.4  # more than a renewal's interval (lease / 3), far less than the poll


def test_leases_are_renewed_between_polls_when_the_lease_is_shorter(tmp_path: Path) -> None:
    store = SqliteTaskStore(tmp_path / "tasks.db", shared=True, lease=LEASE, poll=POLL)
    clock = FakeClock(T0)
    scheduler = Scheduler(store=store, clock=clock)
    jobs.GATE.clear()
    try:
        scheduler.schedule("long", jobs.gated_with_context, OneTime(T0), id="long")
        scheduler.start()
        wait_until(lambda: len(store.leases()) == 1 and scheduler.task("long").running,
                   timeout=20, what="the run in flight")  # fmt: skip
        (first,) = store.leases()
        coordinator = scheduler._coordinator
        assert coordinator is not None
        now = clock.now()  # the timer's next wake: the renewal, before the poll bound
        assert coordinator.wake(now, None) <= now + LEASE / 3
        for _ in range(int(3 * LEASE / STEP)):  # three leases long, under one poll
            clock.advance(STEP)
            now = clock.now()
            wait_until(lambda now=now: store.leases()[0].expires_at > now,  # type: ignore[misc]
                       timeout=20, what="the renewal")  # fmt: skip
        (lease,) = store.leases()
        assert (lease.token, lease.holder) == (first.token, first.holder)  # never taken over
        assert lease.expires_at > first.expires_at + 2 * LEASE
        (run,) = scheduler.task("long").runs
        assert run.context is not None
        assert not run.context.lease_lost
    finally:
        jobs.GATE.set()
        scheduler.shutdown()
        store.close()
        jobs.GATE.clear()
