"""A process claims a run from a shared store only when it has room to start it: a free
worker for a thread task's run, a free coroutine slot (``max_coroutines``) for a loop
task's (docs/CLUSTER.md, "Claim"; docs/DECISIONS.md, "A process claims only what it can
start").

Before, a process with a loop task (an ``async def`` action) registered claimed the
hand-off queue's whole room whatever its workers and its event loop were doing: a
process whose coroutine slots were all taken by a long run held a loop task's run in its
event loop's line, its lease renewed, while an idle process could have run it, and gave
it back only at its second renewal after the claim (a renewal interval, ``lease / 3``,
at least); and a process whose workers were all busy took thread tasks' runs the same
way, only because it had a loop task.

On fake clocks: the busy process's clock never reaches a renewal, so it gives nothing
back, and the other process runs the slot only if the busy one left it unclaimed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from lldsched import FakeClock, OneTime, Scheduler
from lldsched.persistence import CoordinatedStore
from tests import cluster_jobs, jobs
from tests.cluster import StoreSpec, open_store
from tests.waits import wait_until

LEASE = 30.0  # a renewal every 10 s of the busy process's clock, which stands still
POLL = 0.05
HELD_ASYNC = cluster_jobs.held_until_released_async  # holds its coroutine slot until released


@pytest.fixture
def stores(store_spec: StoreSpec) -> Iterator[list[CoordinatedStore]]:
    """Two connections to one shared store (once per engine)."""
    opened = [open_store(store_spec, lease=LEASE, poll=POLL) for _ in range(2)]
    yield opened
    cluster_jobs.released.set()  # whatever happened, no run is left holding a slot
    for store in opened:
        store.close()


def _woken(scheduler: Scheduler, clock: FakeClock) -> None:
    """Move ``clock`` a millisecond (far from a renewal) and wait for the timer's wake
    after it: whatever that wake claims is claimed (``metrics()`` takes the lock the timer
    holds from its wake to its next wait)."""
    step = clock.now()
    clock.advance(0.001)

    def woke() -> bool:
        woke = scheduler.metrics(timeout=10).timer_woke
        return woke is not None and woke > step

    wait_until(woke, timeout=10, what="the timer's wake")


def _node_of_run(scheduler: Scheduler, task_id: str) -> str | None:
    (record,) = scheduler.task(task_id).history
    return record.node


def test_a_process_whose_coroutine_slots_are_taken_leaves_a_loop_task_s_run_to_an_idle_one(
    stores: list[CoordinatedStore],
) -> None:
    busy_store, idle_store = stores
    cluster_jobs.released.clear()
    clock = FakeClock(time.time())
    busy = Scheduler(workers=1, store=busy_store, clock=clock, max_coroutines=1)
    busy.schedule("long", HELD_ASYNC, OneTime(clock.now()), id="long")
    busy.start()
    idle: Scheduler | None = None
    try:
        wait_until(lambda: busy.task("long").running, timeout=10, what="the long run")
        busy.schedule("quick", cluster_jobs.quick_async, OneTime(clock.now()), id="quick")
        _woken(busy, clock)  # its chance to claim "quick": it has no slot to start it in
        assert busy.metrics(timeout=10).coroutines == 1  # "long" alone, none waiting
        idle = Scheduler(workers=1, store=idle_store, clock=FakeClock(clock.now())).start()
        # No renewal on the busy process's clock: nothing it claimed was given back.
        wait_until(lambda: idle.task("quick").run_count == 1, timeout=10, what="the run")
        assert _node_of_run(idle, "quick") == idle_store.node
        assert busy.task("long").running
    finally:
        cluster_jobs.released.set()
        busy.shutdown()
        if idle is not None:
            idle.shutdown()


def test_a_process_whose_workers_are_busy_leaves_a_thread_task_s_run_though_it_has_loop_tasks(
    stores: list[CoordinatedStore],
) -> None:
    """The other side: a loop task registered (not due) gave a process whose one worker
    was busy the whole room too, so it claimed a thread task's run that waited for that
    worker, while another process stood idle."""
    busy_store, idle_store = stores
    cluster_jobs.released.clear()
    clock = FakeClock(time.time())
    busy = Scheduler(workers=1, store=busy_store, clock=clock)
    busy.schedule("later", cluster_jobs.quick_async, OneTime(clock.now() + 3600), id="later")
    busy.schedule("long", cluster_jobs.held_until_released, OneTime(clock.now()), id="long")
    busy.start()
    idle: Scheduler | None = None
    try:
        wait_until(lambda: busy.task("long").running, timeout=10, what="the long run")
        busy.schedule("report", jobs.noop, OneTime(clock.now()), id="report")
        _woken(busy, clock)  # its chance to claim "report": no worker to start it
        assert busy.metrics(timeout=10).handoff == 0
        idle = Scheduler(workers=1, store=idle_store, clock=FakeClock(clock.now())).start()
        wait_until(lambda: idle.task("report").run_count == 1, timeout=10, what="the run")
        assert _node_of_run(idle, "report") == idle_store.node
        assert busy.task("long").running
    finally:
        cluster_jobs.released.set()
        busy.shutdown()
        if idle is not None:
            idle.shutdown()


def test_the_coroutine_slot_that_frees_wakes_the_timer_that_left_runs_unclaimed(
    stores: list[CoordinatedStore],
) -> None:
    """On a fake clock the timer wakes only when notified (no poll, no renewal: the clock
    never moves), so the loop task's run due while the one coroutine slot was taken is
    claimed only because that slot, freed, woke the timer."""
    store = stores[0]
    cluster_jobs.released.clear()
    clock = FakeClock(time.time())
    busy = Scheduler(workers=1, store=store, clock=clock, max_coroutines=1).start()
    try:
        busy.schedule("long", HELD_ASYNC, OneTime(clock.now()), id="long")
        wait_until(lambda: busy.task("long").running, timeout=10, what="the long run")
        busy.schedule("quick", cluster_jobs.quick_async, OneTime(clock.now()), id="quick")
        cluster_jobs.released.set()
        wait_until(lambda: busy.task("quick").run_count == 1, timeout=10, what="the run")
        assert busy.wait_idle(timeout=10)
    finally:
        cluster_jobs.released.set()
        busy.shutdown()


def test_a_loop_task_s_run_is_claimed_and_run_while_every_worker_is_busy(
    stores: list[CoordinatedStore],
) -> None:
    """A run needs room of its own kind only: with the one worker held by a long thread
    run, a loop task's run is still claimed here and runs on the event loop (claiming
    nothing while the workers are busy would hold it behind the thread run, in a process
    alone on its store for as long as that run lasts)."""
    store = stores[0]
    cluster_jobs.released.clear()
    clock = FakeClock(time.time())
    busy = Scheduler(workers=1, store=store, clock=clock).start()
    try:
        busy.schedule("long", cluster_jobs.held_until_released, OneTime(clock.now()), id="long")
        wait_until(lambda: busy.task("long").running, timeout=10, what="the long run")
        busy.schedule("quick", cluster_jobs.quick_async, OneTime(clock.now()), id="quick")
        wait_until(lambda: busy.task("quick").run_count == 1, timeout=10, what="the run")
        assert busy.task("long").running
    finally:
        cluster_jobs.released.set()
        busy.shutdown()


def test_a_thread_task_s_run_is_claimed_and_run_while_every_coroutine_slot_is_taken(
    stores: list[CoordinatedStore],
) -> None:
    """The same the other way: ``max_coroutines`` taken, a worker idle."""
    store = stores[0]
    cluster_jobs.released.clear()
    clock = FakeClock(time.time())
    busy = Scheduler(workers=1, store=store, clock=clock, max_coroutines=1).start()
    try:
        busy.schedule("long", HELD_ASYNC, OneTime(clock.now()), id="long")
        wait_until(lambda: busy.task("long").running, timeout=10, what="the long run")
        busy.schedule("report", jobs.noop, OneTime(clock.now()), id="report")
        wait_until(lambda: busy.task("report").run_count == 1, timeout=10, what="the run")
        assert busy.task("long").running
    finally:
        cluster_jobs.released.set()
        busy.shutdown()


def test_a_claim_takes_only_the_tasks_it_is_told_it_may(
    stores: list[CoordinatedStore],
) -> None:
    """The store's side: ``among`` claims only those ids, ``leaving`` none of them; the
    rest stay unclaimed, due, for the next claim."""
    store = stores[0]
    clock = FakeClock(time.time())
    scheduler = Scheduler(workers=1, store=store, clock=clock)  # registers; never started
    for task_id in ("a", "b", "c"):
        scheduler.schedule(task_id, jobs.noop, OneTime(clock.now()), id=task_id)
    now = clock.now()
    assert store.claim(now=now, limit=5, among=[]) == []
    assert store.claim(now=now, limit=5, among=["x"]) == []  # no such task
    among = store.claim(now=now, limit=5, among=["a", "b", "x"], leaving=["a"])
    assert [claim.task_id for claim in among] == ["b"]
    leaving = store.claim(now=now, limit=5, leaving=["a", "x"])
    assert [claim.task_id for claim in leaving] == ["c"]
    assert store.claim(now=now, limit=5, among=["b", "c"]) == []  # held already
    assert [claim.task_id for claim in store.claim(now=now, limit=5)] == ["a"]
