"""metrics(): one read of a runtime's health and load (lldsched/core/metrics.py).

Every field of :class:`~lldsched.core.metrics.Metrics` is pinned here on the runtime
that fills it: the timer's liveness (and its death), the pool's load (busy, the
hand-off queue, the coroutines), the backlog and its lag, the registry and the dead
letter, the records counted by outcome (every outcome, equal to the records a
simulation keeps, and still counting after a task retires or is removed), the
listeners' drops and the store's health; and the error path of a lock held past the
timeout (a bad timeout is a row of ``tests/test_bad_input_table.py``, on both runtimes).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    Metrics,
    Misfire,
    MisfirePolicy,
    OneTime,
    Outcome,
    Overlap,
    RetryPolicy,
    Scheduler,
    SchedulerBusyError,
    SchedulerStateError,
    Simulation,
    StoreError,
    TaskEvent,
)
from lldsched.logs import TIMER
from lldsched.sim import fixed
from tests.conftest import T0, SchedulerFactory, settle
from tests.waits import wait_until

ZERO = dict.fromkeys(Outcome, 0)


def noop() -> None:
    return None


def fail() -> None:
    raise RuntimeError("no")


def _outcomes(**counts: int) -> dict[Outcome, int]:
    """Every outcome, 0 but those given (by name)."""
    return {**ZERO, **{Outcome(name): count for name, count in counts.items()}}


# -- the threaded scheduler ------------------------------------------------------------


def test_a_scheduler_not_started_has_no_timer_and_counts_nothing(
    make_scheduler: SchedulerFactory,
) -> None:
    scheduler = make_scheduler(start=False, workers=3, clock=FakeClock(T0))
    metrics = scheduler.metrics()
    assert isinstance(metrics, Metrics)
    assert metrics == Metrics(
        at=T0,
        state="new",
        timer_alive=False,
        timer_woke=None,
        workers=3,
        busy=0,
        handoff=0,
        coroutines=0,
        queued=0,
        lag=0.0,
        tasks=0,
        dead_letter=0,
        outcomes=ZERO,
        dropped_events=0,
        store_ok=True,
    )
    assert not metrics.alive and metrics.runs == 0
    assert list(metrics.outcomes) == list(Outcome)  # every series, in the enum's order


def test_a_started_scheduler_is_alive_and_says_when_its_timer_last_woke(
    make_scheduler: SchedulerFactory,
) -> None:
    clock = FakeClock(T0)
    scheduler = make_scheduler(clock=clock)
    wait_until(lambda: scheduler.metrics().timer_woke == T0, timeout=5, what="the first wake")
    metrics = scheduler.metrics()
    assert (metrics.state, metrics.timer_alive, metrics.alive) == ("running", True, True)
    clock.advance(30)  # a clock moved by hand wakes the timer at once
    scheduler.schedule("tick", noop, OneTime(delay=0))
    settle(scheduler)
    assert scheduler.metrics().timer_woke == T0 + 30


def test_a_scheduler_shut_down_is_not_alive(make_scheduler: SchedulerFactory) -> None:
    scheduler = make_scheduler(clock=FakeClock(T0))
    assert scheduler.shutdown(timeout=5)
    metrics = scheduler.metrics()
    assert (metrics.state, metrics.timer_alive, metrics.alive) == ("stopped", False, False)


class BreakingClock(FakeClock):
    """A fake clock whose wait raises once ``broken`` is set: the timer thread dies."""

    def __init__(self, start: float) -> None:
        super().__init__(start)
        self.broken = False

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        if self.broken:
            raise RuntimeError("the clock broke")
        super().wait(condition, deadline)


def test_a_dead_timer_leaves_a_scheduler_that_says_it_is_dead(
    make_scheduler: SchedulerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    clock = BreakingClock(T0)
    scheduler = make_scheduler(clock=clock)
    wait_until(lambda: scheduler.metrics().timer_woke is not None, timeout=5, what="a wake")
    clock.broken = True
    task = scheduler.schedule("tick", noop, OneTime(delay=60))  # a new head wakes the timer
    wait_until(lambda: not scheduler.metrics().timer_alive, timeout=5, what="the timer's death")
    metrics = scheduler.metrics()
    assert (scheduler.running, metrics.state, metrics.alive) == (False, "dead", False)
    assert "the timer thread died" in caplog.text
    assert "dead" in repr(scheduler)
    # The verbs that need the timer say why they cannot work, at once (not after a timeout).
    with pytest.raises(SchedulerStateError, match="timer thread died"):
        scheduler.wait_idle(timeout=60)
    with pytest.raises(SchedulerStateError, match="timer thread died"):
        scheduler.wait_drained(timeout=60)
    with pytest.raises(SchedulerStateError, match=f"run_now {task.id!r}.*timer thread died"):
        scheduler.run_now(task.id)
    with pytest.raises(SchedulerStateError, match=r"start\(\).*timer thread died"):
        scheduler.start()
    # Bookkeeping still works (a durable store keeps it for the next process), and the
    # shutdown stops the rest (the fixture asserts it returns True).
    assert scheduler.pause(task.id)
    assert scheduler.shutdown(timeout=5)
    assert (scheduler.running, scheduler.metrics().state) == (False, "stopped")


def test_a_dead_timer_s_traceback_is_said_once_in_the_log_not_again_by_python(
    make_scheduler: SchedulerFactory,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The timer logs its death with the traceback; it re-raised as well, so Python's
    ``threading.excepthook`` printed the same traceback a second time ("Exception in
    thread lldsched-1-timer"), outside the logging a service configured."""
    escaped: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: escaped.append(args.exc_value))
    clock = BreakingClock(T0)
    scheduler = make_scheduler(clock=clock)
    wait_until(lambda: scheduler.metrics().timer_woke is not None, timeout=5, what="a wake")
    clock.broken = True
    scheduler.schedule("tick", noop, OneTime(delay=60))  # a new head wakes the timer
    wait_until(lambda: not scheduler.metrics().timer_alive, timeout=5, what="the timer's death")
    deaths = [r for r in caplog.records if "the timer thread died" in r.getMessage()]
    assert len(deaths) == 1 and deaths[0].exc_info is not None
    assert repr(deaths[0].exc_info[1]) == "RuntimeError('the clock broke')"
    assert escaped == []


class HeldLog(logging.Handler):
    """Holds the thread that logs the timer's death inside the log call until let go:
    the timer thread, still alive, of a scheduler already marked dead."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = threading.Event()
        self.let_go = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "the timer thread died" in record.getMessage():
            self.inside.set()
            self.let_go.wait(10)


def test_a_scheduler_whose_timer_is_dying_is_not_alive_while_its_thread_ends(
    make_scheduler: SchedulerFactory,
) -> None:
    """A liveness probe reading ``alive`` in the moment between the timer's death and its
    thread's end (it logs the death on its way out) hears the scheduler is dead: both
    ``state == "running"`` and ``timer_alive`` are asked, not either."""
    clock = BreakingClock(T0)
    held = HeldLog()
    logger = logging.getLogger(TIMER)
    logger.addHandler(held)
    try:
        scheduler = make_scheduler(clock=clock)
        wait_until(lambda: scheduler.metrics().timer_woke is not None, timeout=5, what="a wake")
        clock.broken = True
        scheduler.schedule("tick", noop, OneTime(delay=60))  # a new head wakes the timer
        assert held.inside.wait(10), "the timer's death was not logged"
        metrics = scheduler.metrics()
        assert (metrics.state, metrics.timer_alive, metrics.alive) == ("dead", True, False)
    finally:
        held.let_go.set()
        logger.removeHandler(held)


def test_a_wait_idle_under_way_when_the_timer_dies_raises_at_once(
    make_scheduler: SchedulerFactory,
) -> None:
    clock = BreakingClock(T0)
    scheduler = make_scheduler(clock=clock)
    wait_until(lambda: scheduler.metrics().timer_woke is not None, timeout=5, what="a wake")
    scheduler.schedule("later", noop, OneTime(delay=60))  # not drained for 60 s
    raised: list[BaseException] = []

    def wait() -> None:
        try:
            scheduler.wait_drained(timeout=60)
        except BaseException as exc:
            raised.append(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    wait_until(lambda: len(scheduler._idle_waiters) == 1, timeout=5, what="the waiter to wait")
    clock.broken = True
    scheduler.schedule("sooner", noop, OneTime(delay=30))  # a new head: the timer wakes, dies
    waiter.join(10)
    assert not waiter.is_alive(), "wait_drained() waited on after the timer died"
    assert len(raised) == 1 and isinstance(raised[0], SchedulerStateError), raised
    assert "timer thread died" in str(raised[0])


def _one_worker_held(
    make_scheduler: SchedulerFactory, clock: FakeClock, **options: Any
) -> tuple[Scheduler, threading.Event]:
    """A scheduler of one worker, held by a run until the event returned is set."""
    started, release = threading.Event(), threading.Event()

    def hold() -> None:
        started.set()
        assert release.wait(5)

    scheduler = make_scheduler(clock=clock, workers=1, **options)
    scheduler.schedule("hold", hold, OneTime(delay=0))
    assert started.wait(5)
    return scheduler, release


def test_busy_handoff_queued_and_lag_add_up_to_the_runs_handed_out(
    make_scheduler: SchedulerFactory,
) -> None:
    clock = FakeClock(T0)
    scheduler, release = _one_worker_held(make_scheduler, clock, handoff=1)
    scheduler.schedule("second", noop, OneTime(delay=0))  # to the hand-off queue
    scheduler.schedule("third", noop, OneTime(delay=0))  # stays in the heap: no room
    scheduler.schedule("later", noop, OneTime(delay=600))
    wait_until(lambda: scheduler.metrics().handoff == 1, timeout=5, what="the hand-off")
    clock.advance(45)  # both waiting entries are 45 s late now
    metrics = scheduler.metrics()
    assert (metrics.busy, metrics.handoff, metrics.coroutines) == (1, 1, 0)
    assert (metrics.queued, metrics.lag, metrics.tasks) == (2, 45.0, 4)
    release.set()
    settle(scheduler)
    metrics = scheduler.metrics()
    assert (metrics.busy, metrics.handoff, metrics.queued, metrics.lag) == (0, 0, 1, 0.0)
    assert metrics.outcomes == _outcomes(ok=3) and metrics.runs == 3


def test_the_lag_is_the_oldest_due_entry_in_the_hand_off_queue_when_the_heap_is_empty(
    make_scheduler: SchedulerFactory,
) -> None:
    clock = FakeClock(T0)
    scheduler, release = _one_worker_held(make_scheduler, clock)
    scheduler.schedule("waiting", noop, OneTime(delay=0))
    wait_until(lambda: scheduler.metrics().handoff == 1, timeout=5, what="the hand-off")
    clock.advance(7)
    metrics = scheduler.metrics()
    assert (metrics.queued, metrics.handoff, metrics.lag) == (0, 1, 7.0)
    release.set()
    settle(scheduler)


@pytest.mark.parametrize("verb", ["pause", "cancel", "remove", "reschedule", "replace"])
def test_an_entry_handed_out_then_stopped_or_moved_is_no_work_waiting(
    make_scheduler: SchedulerFactory, verb: str
) -> None:
    """A task paused, cancelled, removed or moved while its entry waits in the hand-off
    queue behind a long run leaves a tombstone there: no run waits, so neither
    ``handoff`` nor ``lag`` counts it (they did: a health check said "due work waits
    900 s" of a task paused to relieve the pool), as the heap's tombstones are not."""
    clock = FakeClock(T0)
    scheduler, release = _one_worker_held(make_scheduler, clock, handoff=1)
    scheduler.schedule("waiting", noop, FixedRate(3600), id="waiting")
    scheduler.schedule("live", noop, OneTime(delay=60), id="live")  # in the heap: no room
    wait_until(lambda: scheduler.metrics().handoff == 1, timeout=5, what="the hand-off")
    if verb == "reschedule":
        scheduler.reschedule("waiting", FixedRate(3600, start_delay=5000))
    elif verb == "replace":
        scheduler.schedule(
            "waiting", noop, FixedRate(3600, start_delay=5000), id="waiting", replace_existing=True
        )
    else:
        getattr(scheduler, verb)("waiting")
    clock.advance(900)  # "live" is 840 s late; "waiting" is due no more
    metrics = scheduler.metrics()
    assert (metrics.busy, metrics.handoff, metrics.lag) == (1, 0, 840.0)
    release.set()
    settle(scheduler)
    metrics = scheduler.metrics()
    assert (metrics.busy, metrics.handoff, metrics.lag) == (0, 0, 0.0)


def test_coroutine_runs_are_counted_apart_from_the_busy_workers(
    make_scheduler: SchedulerFactory,
) -> None:
    release = threading.Event()
    started = threading.Event()

    async def hold() -> None:
        started.set()
        await asyncio.get_running_loop().run_in_executor(None, release.wait, 5)

    scheduler = make_scheduler(clock=FakeClock(T0), workers=2, max_coroutines=1)
    scheduler.schedule("first", hold, OneTime(delay=0))
    scheduler.schedule("second", hold, OneTime(delay=0))  # waits for the loop's one slot
    assert started.wait(5)
    wait_until(lambda: scheduler.metrics().coroutines == 2, timeout=5, what="both on the loop")
    metrics = scheduler.metrics()
    assert (metrics.busy, metrics.handoff, metrics.coroutines) == (0, 0, 2)
    release.set()
    settle(scheduler)
    metrics = scheduler.metrics()
    assert (metrics.busy, metrics.coroutines) == (0, 0)
    assert metrics.outcomes == _outcomes(ok=2)


async def _no_op() -> None:
    return None


def test_a_coroutine_run_waiting_for_a_slot_is_late_and_a_cancelled_one_not_counted(
    make_scheduler: SchedulerFactory,
) -> None:
    """With the event loop's slots all taken, a loop task's due entry waits in the
    runner's line: ``lag`` read 0.0 of it however long it waited (a health check on
    ``lag`` missed a full coroutine lane), and an entry cancelled there counted in
    ``coroutines`` until the loop dropped it.  The simulation reads the same
    (``test_the_simulation_s_coroutine_lane_full_is_late_as_on_threads``)."""
    release = threading.Event()
    started = threading.Event()

    async def hold() -> None:
        started.set()
        await asyncio.get_running_loop().run_in_executor(None, release.wait, 5)

    clock = FakeClock(T0)
    scheduler = make_scheduler(clock=clock, workers=1, max_coroutines=1)
    scheduler.schedule("hog", hold, OneTime(delay=0), id="hog")
    scheduler.schedule("late", _no_op, OneTime(delay=0), id="late")  # waits for the slot
    scheduler.schedule("gone", _no_op, OneTime(delay=0), id="gone")  # waits, then cancelled
    assert started.wait(5)
    wait_until(lambda: scheduler.metrics().coroutines == 3, timeout=5, what="all on the loop")
    scheduler.cancel("gone")
    clock.advance(900)
    metrics = scheduler.metrics()
    assert (metrics.busy, metrics.handoff, metrics.coroutines) == (0, 0, 2)
    assert (metrics.queued, metrics.lag) == (0, 900.0)
    release.set()
    settle(scheduler)
    metrics = scheduler.metrics()
    assert (metrics.coroutines, metrics.lag) == (0, 0.0)
    assert metrics.outcomes == _outcomes(ok=2)


def test_failures_the_dead_letter_and_given_up_slots_are_counted(
    make_scheduler: SchedulerFactory,
) -> None:
    clock = FakeClock(T0)
    scheduler = make_scheduler(clock=clock)
    once = RetryPolicy(max_attempts=1)
    doomed = scheduler.schedule("doomed", fail, OneTime(delay=0), retry=once)
    scheduler.schedule("flaky", fail, FixedRate(60), retry=RetryPolicy(max_attempts=2))
    settle(scheduler)
    clock.advance(1)  # the flaky slot's retry (1 s of backoff), which gives the slot up
    settle(scheduler)
    metrics = scheduler.metrics()
    assert metrics.outcomes == _outcomes(failed=2, given_up=1)
    assert (metrics.dead_letter, metrics.tasks) == (1, 2)
    assert scheduler.redrive(doomed.id)
    metrics = scheduler.metrics()
    assert metrics.dead_letter == 0 and metrics.outcomes == _outcomes(failed=2, given_up=1)


def test_the_counts_go_on_growing_when_tasks_retire_or_are_removed(
    make_scheduler: SchedulerFactory,
) -> None:
    scheduler = make_scheduler(clock=FakeClock(T0), retain_finished=1)
    for _ in range(3):
        scheduler.schedule("once", noop, OneTime(delay=0))
    recurring = scheduler.schedule("tick", noop, FixedRate(60))
    settle(scheduler)
    assert scheduler.metrics().tasks == 2  # the recurring one and the last one-off
    scheduler.remove(recurring.id)
    metrics = scheduler.metrics()
    assert metrics.tasks == 1 and metrics.outcomes == _outcomes(ok=4)
    assert len(scheduler.records()) < 4  # what the histories still hold: not a counter


def test_events_the_listeners_dropped_are_counted(make_scheduler: SchedulerFactory) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow(event: TaskEvent) -> None:
        entered.set()
        assert release.wait(5)

    scheduler = make_scheduler(clock=FakeClock(T0), listeners=[slow], listener_backlog=1)
    scheduler.schedule("a", noop, OneTime(delay=600))
    assert entered.wait(5)  # the listener holds the first event
    for name in ("b", "c", "d"):
        scheduler.schedule(name, noop, OneTime(delay=600))  # a backlog of one: two dropped
    metrics = scheduler.metrics()
    assert metrics.dropped_events == scheduler.dropped_events == 2
    release.set()


class _DownStore(InMemoryTaskStore):
    """Writes raise while ``down`` (a server down); a write blocks while ``gate`` is
    armed, and says so (a disk that hangs, under the scheduler's lock)."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.gate: threading.Event | None = None
        self.blocked = threading.Event()

    def save(self, snapshot: Any, record: Any = None) -> None:
        gate = self.gate
        if gate is not None:
            self.blocked.set()
            assert gate.wait(5)
        if self.down:
            raise StoreError("connection refused: the server is down")
        super().save(snapshot, record)


def test_store_ok_is_false_while_the_store_fails_and_true_again_once_it_writes(
    make_scheduler: SchedulerFactory,
) -> None:
    clock = FakeClock(T0)
    store = _DownStore()
    scheduler = make_scheduler(clock=clock, store=store)
    task = scheduler.schedule("tick", noop, FixedRate(60))
    settle(scheduler)
    assert scheduler.metrics().store_ok
    store.down = True
    clock.advance(60)
    settle(scheduler)
    metrics = scheduler.metrics()
    assert not metrics.store_ok and metrics.outcomes == _outcomes(ok=2)  # kept in memory
    store.down = False
    assert scheduler.pause(task.id)  # a write that succeeds ends the outage
    assert scheduler.metrics().store_ok


def test_store_ok_is_false_once_a_write_found_the_store_closed(
    make_scheduler: SchedulerFactory,
) -> None:
    clock = FakeClock(T0)
    store = InMemoryTaskStore()
    scheduler = make_scheduler(clock=clock, store=store)
    scheduler.schedule("tick", noop, FixedRate(60))
    settle(scheduler)
    store.close()
    clock.advance(60)
    settle(scheduler)
    assert not scheduler.metrics().store_ok


def test_a_lock_held_past_the_timeout_raises_a_timeout_naming_it(
    make_scheduler: SchedulerFactory,
) -> None:
    clock = FakeClock(T0)
    store = _DownStore()
    scheduler = make_scheduler(clock=clock, store=store)
    scheduler.schedule("tick", noop, OneTime(delay=60))
    store.gate = gate = threading.Event()  # the run's first write hangs, under the lock
    clock.advance(60)
    assert store.blocked.wait(5)
    with pytest.raises(SchedulerBusyError, match=r"metrics\(timeout=0\.05\)") as raised:
        scheduler.metrics(timeout=0.05)
    assert isinstance(raised.value, TimeoutError)  # what a probe's except clause names
    store.gate = None
    gate.set()
    settle(scheduler)
    assert scheduler.metrics(timeout=timedelta(seconds=5)).outcomes == _outcomes(ok=1)


# -- the simulation --------------------------------------------------------------------


def _every_outcome() -> Simulation:
    """A simulated half hour in which every outcome but ``missed`` is recorded."""
    sim = Simulation(workers=8, start=T0)
    sim.schedule("ok", FixedRate(60), duration=fixed(1))
    sim.schedule("flaky", FixedRate(600), fails=1.0, retry=RetryPolicy(max_attempts=2))
    sim.schedule(
        "slow", OneTime(delay=0), duration=fixed(10), timeout=1, retry=RetryPolicy(max_attempts=1)
    )
    sim.schedule("overrun", FixedRate(10), duration=fixed(25))
    sim.schedule("buffered", FixedRate(60), duration=fixed(150), overlap=Overlap.BUFFER_ONE)
    sim.schedule("cut", FixedRate(60), duration=fixed(150), overlap=Overlap.CANCEL_OTHER)
    # runs ending while others of the task are still in flight (a record of its own path)
    sim.schedule(
        "beside", FixedRate(60), duration=fixed(150), overlap=Overlap.ALLOW, max_instances=3
    )
    upstream = sim.schedule("upstream", FixedRate(600), duration=fixed(30))
    sim.schedule("downstream", FixedRate(600), duration=fixed(1), depends_on=[upstream.id])
    return sim.run_for(1800)


def test_the_simulation_counts_every_outcome_as_its_records_do() -> None:
    sim = _every_outcome()
    outcomes = sim.metrics().outcomes
    assert {outcome for outcome, count in outcomes.items() if count} == set(Outcome) - {
        Outcome.MISSED
    }
    assert Counter(outcomes) == Counter(record.outcome for record in sim.records())
    assert sim.metrics().runs == sum(record.outcome.ran for record in sim.records())


def test_the_simulation_reports_its_pool_its_backlog_and_its_dead_letter() -> None:
    sim = Simulation(workers=1, start=T0)
    sim.schedule("first", OneTime(delay=0), duration=fixed(30))
    sim.schedule("second", OneTime(delay=0), duration=fixed(30))
    sim.schedule("doomed", OneTime(delay=100), fails=1.0, retry=RetryPolicy(max_attempts=1))
    sim.run_for(10)
    metrics = sim.metrics()
    assert metrics == Metrics(
        at=T0 + 10,
        state="running",
        timer_alive=True,
        timer_woke=T0 + 10,
        workers=1,
        busy=1,
        handoff=0,
        coroutines=0,
        queued=2,  # second (due, waiting for the worker) and doomed
        lag=10.0,
        tasks=3,
        dead_letter=0,
        outcomes=ZERO,
        dropped_events=0,
        store_ok=True,
    )
    assert metrics.alive
    sim.run_for(200)
    metrics = sim.metrics()
    assert (metrics.busy, metrics.queued, metrics.lag, metrics.dead_letter) == (0, 0, 0.0, 1)
    assert metrics.outcomes == _outcomes(ok=2, failed=1)


def test_the_simulation_s_coroutine_lane_full_is_late_as_on_threads() -> None:
    """A coroutine task's due entry waiting for the lane's one slot counts in ``lag``
    (it read 0.0), and one cancelled there counts nowhere, as ``Scheduler.metrics()``
    reads them (its test above: ``test_a_coroutine_run_waiting_for_a_slot_is_late...``)."""
    sim = Simulation(workers=1, start=T0, max_coroutines=1)
    sim.schedule("hog", OneTime(delay=0), action=_no_op, duration=fixed(2000), id="hog")
    sim.schedule("late", OneTime(delay=0), action=_no_op, duration=fixed(5), id="late")
    sim.schedule("gone", OneTime(delay=0), action=_no_op, duration=fixed(5), id="gone")
    sim.run_for(0)
    sim.cancel("gone")
    sim.run_for(900)
    metrics = sim.metrics()
    assert (metrics.busy, metrics.coroutines, metrics.queued, metrics.lag) == (0, 2, 0, 900.0)
    sim.run_for(2000)
    metrics = sim.metrics()
    assert (metrics.coroutines, metrics.lag) == (0, 0.0)
    assert metrics.outcomes == _outcomes(ok=2)


def test_records_a_store_restored_are_not_counted_and_misfires_decided_at_start_are() -> None:
    store = InMemoryTaskStore()
    first = Simulation(workers=1, start=T0, store=store)
    first.schedule("tick", FixedRate(60), misfire=MisfirePolicy(Misfire.SKIP, grace=0))
    first.run_for(120)
    assert first.metrics().outcomes == _outcomes(ok=3)
    restarted = Simulation(workers=1, start=T0 + 600, store=store)  # slots passed meanwhile
    outcomes = restarted.metrics().outcomes
    assert outcomes[Outcome.OK] == 0 and outcomes[Outcome.MISSED] > 0
    assert Counter(outcomes) == Counter(record.outcome for record in restarted.records())


def test_a_metrics_timeout_longer_than_a_thread_can_wait_is_as_long_as_it_takes(
    make_scheduler: SchedulerFactory,
) -> None:
    """``metrics(timeout=1e10)`` raised ``OverflowError`` ("timestamp out of range for
    platform time_t") from the lock's acquire; so did ``shutdown(timeout=1e10)``."""
    scheduler = make_scheduler(clock=FakeClock(T0))
    assert scheduler.metrics(timeout=1e10).state == "running"
    assert scheduler.shutdown(timeout=1e10)
