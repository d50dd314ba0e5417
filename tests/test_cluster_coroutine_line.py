"""A loop task's claim given back leaves the event loop's line; what else waits there stays.

A process whose coroutine slots are all taken (``max_coroutines=1``, held by a long
run) holds two things in its event loop's line: a loop task's run claimed in the same
batch (an ``async def`` action, not begun: its claim is given back at the renewals,
and its entry leaves the line, settled), and the awaitable a thread task's action
returned (begun on a worker, a run in flight: it waits for a slot, and stays).  Taking
the one out must not count the other as settled too: ``metrics().coroutines`` goes from
3 to 2 (the long run and the awaitable), and both are run once the slot frees.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Coroutine, Iterator
from typing import Any

import pytest

from lldsched import FakeClock, OneTime, Scheduler
from lldsched.coordination import CoordinatedStore
from tests import cluster_jobs
from tests.cluster import StoreSpec, open_store
from tests.waits import wait_until

LEASE = 30.0  # no claim expires within a test
POLL = 0.05


def handed() -> Coroutine[Any, Any, None]:
    """A thread task's action that returns a coroutine: the worker hands it to the loop."""
    return cluster_jobs.quick_async()


@pytest.fixture
def store(store_spec: StoreSpec) -> Iterator[CoordinatedStore]:
    opened = open_store(store_spec, lease=LEASE, poll=POLL)
    yield opened
    cluster_jobs.released.set()  # whatever happened, no run is left holding a slot
    opened.close()


def _coroutines(scheduler: Scheduler) -> int:
    return scheduler.metrics(timeout=10).coroutines


def _renewal(scheduler: Scheduler, clock: FakeClock) -> None:
    """Advance ``clock`` by a renewal interval and wait for the timer's wake after it."""
    step = clock.now()
    clock.advance(LEASE / 3)

    def woke() -> bool:
        at = scheduler.metrics(timeout=10).timer_woke
        return at is not None and at > step

    wait_until(woke, timeout=10, what="the renewal")


def _ran(scheduler: Scheduler, task_id: str) -> bool:
    return scheduler.task(task_id).run_count >= 1


def test_a_claim_given_back_leaves_the_awaitable_waiting_beside_it_counted(
    store: CoordinatedStore,
) -> None:
    cluster_jobs.released.clear()
    clock = FakeClock(time.time())
    start = clock.now()
    busy = Scheduler(workers=1, store=store, clock=clock, max_coroutines=1)
    busy.schedule("long", cluster_jobs.held_until_released_async, OneTime(start), id="long")
    busy.schedule("quick", cluster_jobs.quick_async, OneTime(start + 0.1), id="quick")
    busy.schedule("handed", handed, OneTime(start + 0.1), id="handed")
    clock.advance(0.2)
    busy.start()
    try:
        # "long" on the loop; "quick" and "handed"'s awaitable in its line.  The three are
        # counted once in the line, a moment before the loop begins "long" (a loaded
        # machine's full run saw that moment): the state is waited for as a whole.
        def three_in_hand() -> bool:
            return (
                _coroutines(busy) == 3 and busy.task("long").running and busy.task("handed").running
            )

        wait_until(three_in_hand, timeout=10, what="three in hand, long and handed running")
        for _ in range(2):  # the renewal that notes "quick" unbegun, the one that gives it back
            _renewal(busy, clock)
        assert _coroutines(busy) == 2  # "quick" left the line; the awaitable is still there
        assert sorted(lease.task_id for lease in store.leases()) == ["handed", "long"]
        cluster_jobs.released.set()
        for task_id in ("handed", "quick"):
            wait_until(functools.partial(_ran, busy, task_id), timeout=10, what=task_id)
        assert busy.wait_idle(timeout=10)
        assert _coroutines(busy) == 0
        assert [busy.task(t).run_count for t in ("long", "quick", "handed")] == [1, 1, 1]
    finally:
        cluster_jobs.released.set()
        busy.shutdown()
