"""A process claims a run from a shared store only when it has room to start it: a free
worker for a thread task's run, a free coroutine slot (``max_coroutines``) for a loop
task's (an ``async def`` action).  The runs due meanwhile stay unclaimed for a process
that can start them (docs/CLUSTER.md, "Claim"; docs/decisions/persistence.md, "A process claims only
what it can start").

Before, a process claimed up to the free room of its hand-off queue (16 per worker)
whatever its workers were doing, and renewed those claims while they waited: a process
with one worker held by an hour-long run kept every other due task of the cluster for
that hour, its slots skipped, while the other processes stood idle.  Then, a process
with a loop task registered still did: with its coroutine slots taken by a long run it
held a loop task's run in its event loop's line, and with its workers busy it held
thread tasks' runs, until it gave them back a renewal interval later.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    Metrics,
    OneTime,
    Scheduler,
    SqliteTaskStore,
    TaskStatus,
)
from lldsched.coordination import Claim, CoordinatedStore, Lease
from lldsched.errors import StoreError
from tests import cluster_jobs, jobs
from tests.cluster import POOLED, StoreSpec, open_store
from tests.store_doubles import HookedStore, StoreCall
from tests.waits import wait_until

ENGINES = POOLED  # through PgBouncer too (tests/cluster.py)

LEASE = 30.0  # no claim expires within a test
POLL = 0.05  # the busy process's timer wakes often: it has every chance to claim
HELD_ASYNC = cluster_jobs.held_until_released_async  # holds its coroutine slot until released


@pytest.fixture
def stores(store_spec: StoreSpec) -> Iterator[list[CoordinatedStore]]:
    """Two connections to one shared store (once per engine)."""
    opened = [open_store(store_spec, lease=LEASE, poll=POLL) for _ in range(2)]
    yield opened
    cluster_jobs.released.set()  # whatever happened, no run is left holding a worker
    for store in opened:
        store.close()


def _running(scheduler: Scheduler) -> list[str]:
    return [task.id for task in scheduler.tasks() if task.running]


def _renewal(scheduler: Scheduler, clock: FakeClock) -> None:
    """Advance ``clock`` by a renewal interval and wait for the timer's wake after it."""
    step = clock.now()
    clock.advance(LEASE / 3)
    wait_until(lambda: _woke_since(scheduler, step), timeout=10, what="the renewal")


def _ran(scheduler: Scheduler, task_id: str, times: int) -> bool:
    return scheduler.task(task_id).run_count >= times


def _woke_since(scheduler: Scheduler, instant: float) -> bool:
    """The timer's last wake came after ``instant``: the claims of that wake are made
    (``metrics()`` takes the lock the timer holds from its wake to its next wait)."""
    woke = scheduler.metrics(timeout=10).timer_woke
    return woke is not None and woke > instant


def test_a_process_whose_workers_are_all_busy_leaves_due_runs_to_the_others(
    stores: list[CoordinatedStore],
) -> None:
    busy_store, other_store = stores
    cluster_jobs.released.clear()
    busy = Scheduler(workers=1, store=busy_store).start()
    try:
        busy.schedule("long", cluster_jobs.held_until_released, OneTime(busy.now), id="long")
        wait_until(lambda: busy.task("long").running, timeout=10, what="the long run")
        busy.schedule("report", jobs.noop, FixedRate(60), id="report")
        registered = time.time()
        wait_until(lambda: _woke_since(busy, registered), timeout=10, what="a wake after it")
        # The one worker is busy: "report" is due and left unclaimed, so another
        # process takes it now instead of when the long run ends.
        claims = other_store.claim(now=time.time(), limit=5)
        assert [claim.task_id for claim in claims] == ["report"]
        other_store.release(task_id="report", token=claims[0].token)
        cluster_jobs.released.set()
        # Its worker free again, the busy process claims and runs it.
        wait_until(lambda: busy.task("report").run_count == 1, timeout=10, what="the run")
    finally:
        cluster_jobs.released.set()
        busy.shutdown()


def test_the_worker_that_goes_idle_wakes_the_timer_that_left_runs_unclaimed(
    stores: list[CoordinatedStore],
) -> None:
    """On a fake clock the timer wakes only when notified (no poll, no renewal: the clock
    never moves), so the run due while the one worker was busy is claimed only because
    that worker, going idle, woke the timer."""
    store = stores[0]
    cluster_jobs.released.clear()
    busy = Scheduler(workers=1, store=store, clock=FakeClock(time.time())).start()
    try:
        busy.schedule("long", cluster_jobs.held_until_released, OneTime(busy.now), id="long")
        wait_until(lambda: busy.task("long").running, timeout=10, what="the long run")
        busy.schedule("report", jobs.noop, OneTime(busy.now), id="report")
        cluster_jobs.released.set()
        wait_until(lambda: busy.task("report").run_count == 1, timeout=10, what="the run")
    finally:
        cluster_jobs.released.set()
        busy.shutdown()


def test_a_claimed_run_that_waits_a_renewal_interval_behind_a_long_one_is_given_back(
    stores: list[CoordinatedStore], caplog: pytest.LogCaptureFixture
) -> None:
    """Two runs due at once are claimed in one batch by a process with one idle worker:
    the first turns out long, and the second waited behind it for as long, its lease
    renewed, while the other process stood idle.  Now a claim still not begun at the
    second renewal after it was made (a whole renewal interval, ``lease / 3``) is given
    back, and the other process claims it.  On a fake clock: the renewals come as it is
    advanced, and nothing else moves it."""
    busy_store, other_store = stores
    caplog.set_level("INFO", logger="lldsched")
    cluster_jobs.released.clear()
    clock = FakeClock(time.time())
    busy = Scheduler(workers=1, store=busy_store, clock=clock)
    for task_id in ("a", "b"):  # whichever the worker takes first holds it
        busy.schedule(task_id, cluster_jobs.held_until_released, OneTime(clock.now()), id=task_id)
    busy.start()
    try:
        wait_until(lambda: bool(_running(busy)), timeout=10, what="the long run")
        (running,) = _running(busy)
        waiting = "b" if running == "a" else "a"
        assert other_store.claim(now=time.time(), limit=5) == []  # both claimed
        for _ in range(2):  # the renewal that notes it unbegun, the one that gives it back
            _renewal(busy, clock)
        claims = other_store.claim(now=time.time(), limit=5)
        assert [claim.task_id for claim in claims] == [waiting]
        assert busy.task(running).running  # the run begun keeps its lease
        gave_back = (
            "gave back 1 claimed run(s) not begun for a renewal interval (10 s), waiting "
            f"behind longer runs here: the store hands them out again ({waiting})"
        )
        assert gave_back in caplog.messages
        other_store.release(task_id=waiting, token=claims[0].token)
        cluster_jobs.released.set()
        # Its worker free again, the busy process claims and runs it (its tombstone
        # settled on the way).
        wait_until(lambda: busy.task(waiting).run_count == 1, timeout=10, what="the run")
        assert busy.wait_idle(timeout=10)
    finally:
        cluster_jobs.released.set()
        busy.shutdown()


def test_a_claimed_run_taken_over_before_it_began_is_never_begun_here(tmp_path: Path) -> None:
    """A claim waiting behind a long run whose lease another process took over (this
    one stalled past its expiry: no renewal in time) is found gone by the next renewal
    and dropped, never begun: once the worker is free it runs nothing of a slot the other
    process holds (it ran it, a second time, its settle refused after).  On a fake clock,
    and so on SQLite alone: its claims' expiry counts from the claimer's clock
    (PostgreSQL's from the server's, which no test moves)."""
    path = tmp_path / "tasks.db"
    with (
        SqliteTaskStore(path, shared=True, lease=LEASE, poll=POLL) as busy_store,
        SqliteTaskStore(path, shared=True, lease=LEASE, poll=POLL) as other_store,
    ):
        _taken_over_before_it_began(busy_store, other_store)


def _taken_over_before_it_began(
    busy_store: CoordinatedStore, other_store: CoordinatedStore
) -> None:
    cluster_jobs.released.clear()
    clock = FakeClock(time.time())
    start = clock.now()
    busy = Scheduler(workers=1, store=busy_store, clock=clock)
    for task_id in ("a", "b"):  # whichever the worker takes first holds it
        busy.schedule(task_id, cluster_jobs.held_until_released, OneTime(start), id=task_id)
    busy.start()
    try:
        wait_until(lambda: bool(_running(busy)), timeout=10, what="the long run")
        (running,) = _running(busy)
        waiting = "b" if running == "a" else "a"
        (takeover,) = other_store.claim(now=start + LEASE + 1, limit=5, among=[waiting])
        assert takeover.taken_over
        _renewal(busy, clock)  # finds the waiting claim's lease gone
        assert busy.task(running).running  # the run begun keeps its lease
        cluster_jobs.released.set()
        wait_until(lambda: _ran(busy, running, 1), timeout=10, what="the long run's end")
        _renewal(busy, clock)  # a wake after the worker went idle
        assert busy.task(waiting).run_count == 0
        assert busy_store.rejected == 0
        assert [lease.token for lease in other_store.leases()] == [takeover.token]
    finally:
        cluster_jobs.released.set()
        busy.shutdown()


def test_a_claim_given_back_leaves_no_lag_on_the_busy_process_while_another_runs_it(
    stores: list[CoordinatedStore],
) -> None:
    """The claim given back (as above) left its entry in the busy process's hand-off
    queue, a tombstone until its one worker was free: ``metrics()`` counted it as a run
    waiting there, ``handoff`` 1 and a ``lag`` growing from the slot's due instant (20 s
    here, and on), while the other process ran the task's slots on time, a false
    ``lldsched_lag_seconds`` alert.  Its entry now leaves the queue as the claim is given
    back.  On fake clocks: renewals and slots come as they are advanced."""
    busy_store, other_store = stores
    cluster_jobs.released.clear()
    clock = FakeClock(time.time())
    start = clock.now()
    busy = Scheduler(workers=1, store=busy_store, clock=clock)
    busy.schedule("long", cluster_jobs.held_until_released, OneTime(start), id="long")
    # Due just after "long": claimed with it in one batch, behind it in the queue.
    busy.schedule("quick", jobs.noop, FixedRate(0.5, start_delay=0.1), id="quick")
    clock.advance(0.2)
    busy.start()
    other: Scheduler | None = None
    try:
        wait_until(lambda: _running(busy) == ["long"], timeout=10, what="the long run")
        for _ in range(2):  # the renewal that notes "quick" unbegun, the one that gives it back
            _renewal(busy, clock)
        other_clock = FakeClock(clock.now())
        other = Scheduler(workers=1, store=other_store, clock=other_clock).start()
        for runs in range(1, 4):
            other_clock.advance(0.5)
            wait_until(functools.partial(_ran, other, "quick", runs), timeout=10, what="its run")
        metrics = busy.metrics(timeout=10)
        assert (metrics.busy, metrics.handoff, metrics.lag) == (1, 0, 0.0)
        assert busy.task("long").running
    finally:
        cluster_jobs.released.set()
        busy.shutdown()
        if other is not None:
            other.shutdown()


def test_a_busy_process_counts_no_lag_for_a_run_in_flight_in_another_but_does_for_one_unclaimed(
    stores: list[CoordinatedStore],
) -> None:
    """A process whose one worker is busy claims nothing, and so kept the due entry of a
    task that another process was running (its row, read from the change feed, due at
    the slot being run): ``metrics()`` counted it as due work waiting, ``queued`` 1 and a
    ``lag`` growing from that slot, for as long as the other process's run lasted, while
    nothing waited (a false ``lldsched_lag_seconds`` alert in a cluster whose every
    worker is busy).  Now such a process drops the due entries of the tasks another
    process holds a live lease on; a run due that no process claimed (none has room)
    still counts, in every process.  On fake clocks: wakes come as they are advanced."""
    busy_store, other_store = stores
    cluster_jobs.released.clear()
    clock = FakeClock(time.time())
    busy = Scheduler(workers=1, store=busy_store, clock=clock)
    busy.schedule("long", cluster_jobs.held_until_released, OneTime(clock.now()), id="long")
    busy.start()
    other: Scheduler | None = None
    try:
        wait_until(lambda: _running(busy) == ["long"], timeout=10, what="the long run")
        other_clock = FakeClock(clock.now())
        other = Scheduler(workers=1, store=other_store, clock=other_clock).start()
        other.schedule("report", cluster_jobs.held_until_released, OneTime(other_clock.now()),
                       id="report")  # fmt: skip
        wait_until(lambda: _running(other) == ["report"], timeout=10, what="its run there")
        clock.advance(5)  # the report's run has gone on for 5 s, on time
        _woken(busy, clock)  # reads the feed: "report", due at the slot running there
        metrics = busy.metrics(timeout=10)
        assert (metrics.busy, metrics.queued, metrics.lag) == (1, 0, 0.0)
        # Due now, and no process has a free worker: it waits, and every process says so.
        busy.schedule("late", jobs.noop, OneTime(clock.now()), id="late")
        clock.advance(2)
        _woken(busy, clock)
        other_clock.advance(7)
        _woken(other, other_clock)
        for scheduler in (busy, other):
            metrics = scheduler.metrics(timeout=10)
            assert (metrics.busy, metrics.queued) == (1, 1) and metrics.lag > 1
        assert [lease.task_id for lease in busy_store.leases()] == ["long", "report"]
        cluster_jobs.released.set()
        wait_until(lambda: busy_store.load_all() != [] and all(
            snapshot.status is TaskStatus.SUCCEEDED for snapshot in busy_store.load_all()
        ), timeout=10, what="every run")  # fmt: skip
    finally:
        cluster_jobs.released.set()
        busy.shutdown()
        if other is not None:
            other.shutdown()


class _FeedFails(HookedStore):
    """A shared SQLite store whose change feed fails while ``failing`` is set, and that
    counts the timer's reads of the leases."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, lease=LEASE, poll=POLL)
        self.failing = threading.Event()
        self.leases_read = 0

    def before(self, call: StoreCall) -> None:
        if call == "changed" and self.failing.is_set():
            raise StoreError("the feed fails (a test's outage)")

    def leases(self) -> list[Lease]:
        if not self.by_the_test():
            self.leases_read += 1
        return super().leases()


def test_a_busy_process_does_not_read_the_leases_at_a_wake_whose_store_calls_failed(
    tmp_path: Path,
) -> None:
    """The read of the leases that keeps a run in flight elsewhere out of ``lag`` (above)
    is one more store call under the scheduler's lock: at a wake whose feed read failed
    (an outage: in a black hole each call takes the store's ``timeout``) it is not made,
    so a verb still waits for no more than one wake's calls.  On a fake clock: wakes come
    as it is advanced."""
    store = _FeedFails(tmp_path / "tasks.db")
    cluster_jobs.released.clear()
    clock = FakeClock(time.time())
    busy = Scheduler(workers=1, store=store, clock=clock)
    busy.schedule("long", cluster_jobs.held_until_released, OneTime(clock.now()), id="long")
    busy.start()
    try:
        wait_until(lambda: _running(busy) == ["long"], timeout=10, what="the long run")
        busy.schedule("late", jobs.noop, OneTime(clock.now()), id="late")  # no room: waits
        _woken(busy, clock)
        assert store.leases_read >= 1  # a due entry, no room: the leases are read
        store.failing.set()
        read = store.leases_read
        for _ in range(3):
            _woken(busy, clock)
        assert store.leases_read == read and busy.metrics(timeout=10).queued == 1
        store.failing.clear()
        _woken(busy, clock)  # the poll after the failed wake has passed: it reads again
        assert store.leases_read > read
    finally:
        cluster_jobs.released.set()
        busy.shutdown()
        store.close()


def _waiting_for_a_slot(scheduler: Scheduler) -> int:
    """How many coroutine runs ``scheduler`` has handed to its event loop, not settled."""
    return scheduler.metrics(timeout=10).coroutines


def test_a_loop_task_claim_given_back_leaves_the_event_loop_s_line(
    stores: list[CoordinatedStore],
) -> None:
    """The same for a loop task (an ``async def`` action) waiting for a slot on the event
    loop, ``max_coroutines`` taken by a long coroutine run of the same batch: the claim
    given back left its entry in the event loop's line, counted in
    ``metrics().coroutines`` (and so by ``wait_idle()`` and a drain) until the slot freed
    and a begin found no claim for it.  Its entry now leaves the line as the claim is
    given back; and, no slot free, this process does not claim the run again (before, a
    process with loop tasks claimed whatever its slots held, so it claimed the run again
    in the tick that gave it back: docs/decisions/persistence.md, "A process claims only what it can
    start").  On a fake clock: the renewals come as it is advanced."""
    store = stores[0]
    cluster_jobs.released.clear()
    clock = FakeClock(time.time())
    start = clock.now()
    busy = Scheduler(workers=1, store=store, clock=clock, max_coroutines=1)
    busy.schedule("long", cluster_jobs.held_until_released_async, OneTime(start), id="long")
    # Due just after "long": claimed with it in one batch, behind it in the line.
    quick = FixedRate(0.5, start_delay=0.1)
    busy.schedule("quick", cluster_jobs.quick_async, quick, id="quick")
    clock.advance(0.2)
    busy.start()
    try:
        wait_until(lambda: _running(busy) == ["long"], timeout=10, what="the long run")
        assert _waiting_for_a_slot(busy) == 2  # "long" on the loop, "quick" waiting
        for _ in range(2):  # the renewal that notes "quick" unbegun, the one that gives it back
            _renewal(busy, clock)
        assert _waiting_for_a_slot(busy) == 1  # given back, and not claimed again
        assert [lease.task_id for lease in store.leases()] == ["long"]
        for _ in range(2):
            _renewal(busy, clock)
            assert _waiting_for_a_slot(busy) == 1
        assert busy.task("long").running
        cluster_jobs.released.set()
        wait_until(functools.partial(_ran, busy, "quick", 1), timeout=10, what="its run")
        assert busy.wait_idle(timeout=10)
        assert busy.task("quick").run_count == 1  # one run of the one slot due
    finally:
        cluster_jobs.released.set()
        busy.shutdown()


def _woken(scheduler: Scheduler, clock: FakeClock) -> None:
    """Move ``clock`` a millisecond (far from a renewal) and wait for the timer's wake
    after it: whatever that wake claims is claimed."""
    step = clock.now()
    clock.advance(0.001)
    wait_until(lambda: _woke_since(scheduler, step), timeout=10, what="the timer's wake")


def _ran_there(idle: Scheduler, idle_store: CoordinatedStore, busy: Scheduler) -> None:
    """Wait for ``idle`` to run "due" (its record says it did) while "long" still holds
    ``busy``'s room."""
    wait_until(lambda: idle.task("due").run_count == 1, timeout=10, what="the run")
    (record,) = idle.task("due").history
    assert record.node == idle_store.node
    assert busy.task("long").running


class Busy(NamedTuple):
    """A process held by one long run of one kind, and a run of that kind due meanwhile."""

    options: dict[str, Any]  # the busy Scheduler's
    long: Callable[..., Any]  # holds the one worker, or the one coroutine slot
    due: Callable[..., Any]  # the run due while it does
    waiting: Callable[[Metrics], int]  # how many of its runs wait here for room


BUSY = {
    "coroutine slots": Busy(
        {"max_coroutines": 1}, HELD_ASYNC, cluster_jobs.quick_async, lambda m: m.coroutines - 1
    ),
    "workers": Busy({}, cluster_jobs.held_until_released, jobs.noop, lambda m: m.handoff),
}


@pytest.mark.parametrize("kind", sorted(BUSY))
def test_a_process_with_loop_tasks_leaves_a_run_it_has_no_room_for_to_an_idle_one(
    stores: list[CoordinatedStore], kind: str
) -> None:
    """The busy process has a loop task registered (not due) and its one worker, or its
    one coroutine slot, held by a long run; a run of that kind comes due.  On fake clocks:
    the busy process's clock never reaches a renewal, so it gives nothing back, and the
    idle process runs the slot only if the busy one left it unclaimed."""
    busy_store, idle_store = stores
    options, long, due, waiting = BUSY[kind]
    cluster_jobs.released.clear()
    clock = FakeClock(time.time())
    busy = Scheduler(workers=1, store=busy_store, clock=clock, **options)
    busy.schedule("later", cluster_jobs.quick_async, OneTime(clock.now() + 3600), id="later")
    busy.schedule("long", long, OneTime(clock.now()), id="long")
    busy.start()
    idle: Scheduler | None = None
    try:
        wait_until(lambda: busy.task("long").running, timeout=10, what="the long run")
        busy.schedule("due", due, OneTime(clock.now()), id="due")
        _woken(busy, clock)  # its chance to claim "due", which it has no room to start
        assert waiting(busy.metrics(timeout=10)) == 0
        idle = Scheduler(workers=1, store=idle_store, clock=FakeClock(clock.now())).start()
        _ran_there(idle, idle_store, busy)
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
    claimed only because that slot, freed, woke the timer (on PostgreSQL the store's
    notice of the long run's settle wakes it too)."""
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


@pytest.mark.parametrize("kind", sorted(BUSY))
def test_a_run_of_the_other_kind_is_claimed_and_run_here_meanwhile(
    stores: list[CoordinatedStore], kind: str
) -> None:
    """A run needs room of its own kind only: with the one worker held by a long thread
    run, a loop task's run is still claimed here and runs on the event loop, and with
    the one coroutine slot held, a thread task's run on the idle worker (claiming
    nothing while either kind is busy would hold the other's runs behind it, in a
    process alone on its store, for as long as the long run lasts)."""
    store = stores[0]
    options, long, _, _ = BUSY[kind]
    other = BUSY["workers" if kind == "coroutine slots" else "coroutine slots"].due
    cluster_jobs.released.clear()
    clock = FakeClock(time.time())
    busy = Scheduler(workers=1, store=store, clock=clock, **options).start()
    try:
        busy.schedule("long", long, OneTime(clock.now()), id="long")
        wait_until(lambda: busy.task("long").running, timeout=10, what="the long run")
        busy.schedule("other", other, OneTime(clock.now()), id="other")
        wait_until(lambda: busy.task("other").run_count == 1, timeout=10, what="the run")
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


class Race(NamedTuple):
    """A task written by another process between the busy process's read of the change
    feed and its claim, as a run of the kind it has no room for."""

    options: dict[str, Any]  # the busy Scheduler's
    long: Callable[..., Any]  # holds the one worker, or the one coroutine slot
    known: Callable[..., Any] | None  # what the busy process knew the task as (None: nothing)
    elsewhere: Callable[..., Any]  # what the other process registers it as, due now
    narrowed: str  # the claim's keyword that narrows it while "long" holds the room
    waiting: Callable[[Metrics], int]  # how many of its runs wait here for room


RACES = {
    # A loop task new to it: it was not among the tasks its claim left out.
    "coroutine slots": Race(
        {"max_coroutines": 1},
        HELD_ASYNC,
        None,
        cluster_jobs.quick_async,
        "leaving",
        lambda m: m.coroutines - 1,
    ),
    # One of its loop tasks replaced by a thread task: it was among those its claim took.
    "workers": Race(
        {},
        cluster_jobs.held_until_released,
        cluster_jobs.quick_async,
        jobs.noop,
        "among",
        lambda m: m.handoff,
    ),
}


@pytest.mark.parametrize("kind", sorted(RACES))
def test_a_run_written_elsewhere_after_the_feed_was_read_is_given_back_if_it_has_no_room(
    stores: list[CoordinatedStore], kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The busy process narrows its claim by the kinds of the tasks it knows, read from
    the change feed at this wake.  Another process registers (or replaces) a task between
    that read and the claim, as a run of the kind with no room here: the claim takes it
    (the store cannot tell its kind), and it waited here, its lease renewed, until the
    give-back a renewal interval on, while an idle process could have run it.  Now, its
    kind learnt from the claim's own read of the feed, it is given back at once.  The
    interleaving is the test's: the other process writes from the busy one's claim call,
    just before the claim runs.  On fake clocks: the busy process never reaches a
    renewal, so the idle one runs the slot only if it was given back at once."""
    busy_store, idle_store = stores
    options, long, known, elsewhere, narrowed, waiting = RACES[kind]
    cluster_jobs.released.clear()
    clock = FakeClock(time.time())
    busy = Scheduler(workers=1, store=busy_store, clock=clock, **options)
    busy.schedule("long", long, OneTime(clock.now()), id="long")
    if known is not None:
        busy.schedule("due", known, OneTime(clock.now() + 3600), id="due")
    idle = Scheduler(workers=1, store=idle_store, clock=FakeClock(clock.now()))  # started below
    raced = threading.Event()
    claim = busy_store.claim
    claimed: set[str] = set()

    def racing_claim(**args: Any) -> list[Claim]:
        # "long" claimed and this claim narrowed for it: it holds the room of its kind,
        # and this wake's feed has been read.
        if "long" in claimed and args.get(narrowed) and not raced.is_set():
            idle.schedule("due", elsewhere, OneTime(clock.now()), id="due", replace_existing=True)
            raced.set()
        claims = claim(**args)
        claimed.update(made.task_id for made in claims)
        return claims

    monkeypatch.setattr(busy_store, "claim", racing_claim)
    busy.start()
    try:
        wait_until(raced.is_set, timeout=10, what="the other process's write")
        wait_until(lambda: busy.task("long").running, timeout=10, what="the long run")
        assert waiting(busy.metrics(timeout=10)) == 0
        assert [lease.task_id for lease in busy_store.leases()] == ["long"]
        idle.start()
        _ran_there(idle, idle_store, busy)
    finally:
        cluster_jobs.released.set()
        busy.shutdown()
        idle.shutdown()
