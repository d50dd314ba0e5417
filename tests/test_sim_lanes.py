"""The simulation's coroutine lane: a coroutine run (an ``async def`` task) takes no virtual
worker, as on threads it takes none (docs/decisions/simulation.md, "A coroutine run takes the
coroutine lane, not a virtual worker"), and is bounded by ``max_coroutines`` alone."""

from __future__ import annotations

import asyncio
import threading

import pytest

from lldsched import (
    EventLog,
    FakeClock,
    OneTime,
    Priority,
    Scheduler,
    TaskStatus,
    ValidationError,
)
from lldsched.sim import Simulation, fixed
from tests.waits import wait_until

T = 1_000_000.0


async def no_op() -> None:
    pass


def plain() -> None:
    pass


def starts(sim: Simulation) -> list[tuple[str, float, int]]:
    """(task, start, worker) of every run, in the order recorded."""
    return [(r.task_id, r.started - T, r.worker) for r in sim.records() if r.outcome.ran]


def one_worker_taken() -> Simulation:
    """One worker, taken from 0 to 50 by "long"; "waits" (a thread task) due at 5 waits
    for it, "co" (a coroutine task) is due at 6."""
    sim = Simulation(workers=1, start=T)
    sim.schedule("long", OneTime(delay=0), action=plain, duration=fixed(50), id="long")
    sim.schedule("waits", OneTime(delay=5), action=plain, duration=fixed(5), id="waits")
    sim.schedule("co", OneTime(delay=6), action=no_op, duration=fixed(5), id="co")
    return sim


def test_two_coroutine_tasks_due_at_once_on_one_worker_start_together() -> None:
    sim = Simulation(workers=1, start=T)
    for name in ("a", "b"):
        sim.schedule(name, OneTime(delay=10), action=no_op, duration=fixed(5), id=name)
    sim.run(T + 100)
    # both on the coroutine lane, numbered as on threads: worker == workers
    assert sorted(starts(sim)) == [("a", 10.0, 1), ("b", 10.0, 1)]
    assert sim.busy == 0


def test_max_coroutines_bounds_the_coroutine_lane() -> None:
    sim = Simulation(workers=4, start=T, max_coroutines=1)
    for name in ("a", "b"):
        sim.schedule(name, OneTime(delay=10), action=no_op, duration=fixed(5), id=name)
    sim.run(T + 100)
    assert starts(sim) == [("a", 10.0, 4), ("b", 15.0, 4)]  # one at a time, on no worker


def test_a_thread_task_waiting_for_a_worker_holds_back_no_coroutine() -> None:
    sim = one_worker_taken()
    sim.run(T + 20)
    assert [task.id for task in sim.pending()] == ["waits"]  # set aside, still pending
    sim.run(T + 100)
    assert sorted(starts(sim)) == [("co", 6.0, 1), ("long", 0.0, 0), ("waits", 50.0, 0)]


def test_a_coroutine_waiting_for_the_lane_holds_back_no_thread_task() -> None:
    sim = Simulation(workers=1, start=T, max_coroutines=1)
    sim.schedule("co1", OneTime(delay=0), action=no_op, duration=fixed(50), id="co1")
    sim.schedule("co2", OneTime(delay=5), action=no_op, duration=fixed(5), id="co2")
    sim.schedule("thread", OneTime(delay=6), action=plain, duration=fixed(5), id="thread")
    sim.run(T + 100)
    assert sorted(starts(sim)) == [("co1", 0.0, 1), ("co2", 50.0, 1), ("thread", 6.0, 0)]


def test_at_one_instant_the_workers_start_first_as_the_timer_hands_them_out_first() -> None:
    log = EventLog()
    sim = Simulation(workers=1, start=T, listeners=[log])
    # the coroutine sorts first in the heap (its priority), the thread task starts first
    sim.schedule("co", OneTime(delay=10), action=no_op, duration=fixed(5), id="co", priority=0)
    sim.schedule("thread", OneTime(delay=10), action=plain, duration=fixed(5), id="thread")
    sim.run(T + 100)
    begun = [e.task_id for e in log.events if e.status is TaskStatus.RUNNING]
    assert begun == ["thread", "co"]


def test_a_task_set_aside_and_cancelled_never_starts() -> None:
    sim = one_worker_taken()
    sim.at(T + 20, lambda: sim.cancel("waits"))
    sim.run(T + 100)
    assert sorted(starts(sim)) == [("co", 6.0, 1), ("long", 0.0, 0)]
    assert sim.pending() == []


def test_a_shutdown_without_drain_starts_nothing_set_aside() -> None:
    sim = one_worker_taken()
    sim.run(T + 20)
    sim.shutdown(drain=False)
    assert sorted(starts(sim)) == [("co", 6.0, 1), ("long", 0.0, 0)]


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_max_coroutines_is_checked_as_on_scheduler(bad: object) -> None:
    with pytest.raises(ValidationError, match="max_coroutines") as simulated:
        Simulation(max_coroutines=bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="max_coroutines") as threaded:
        Scheduler(max_coroutines=bad)  # type: ignore[arg-type]
    assert str(simulated.value) == str(threaded.value)


def test_two_coroutine_tasks_due_at_once_start_together_on_threads_too() -> None:
    """What the simulation now matches: on threads, one worker, both coroutines run at
    once (each waits at a barrier for the other; run one after the other, the first
    fails at its wait's bound)."""
    barrier = asyncio.Barrier(2)

    async def meets() -> None:
        await asyncio.wait_for(barrier.wait(), 30)

    log = EventLog()
    with Scheduler(workers=1, clock=FakeClock(T), listeners=[log]) as scheduler:
        for name in ("a", "b"):
            scheduler.schedule(name, meets, OneTime(delay=0), id=name)
        assert scheduler.wait_idle(60)
    records = sorted((e.record.task_id, e.record.outcome.value, e.record.worker)
                     for e in log.events if e.record is not None)  # fmt: skip
    assert records == [("a", "ok", 1), ("b", "ok", 1)]


@pytest.mark.parametrize("was", [Priority.NORMAL, Priority.LOW])
def test_a_coroutine_entry_not_due_yet_takes_a_new_priority_as_on_threads(was: Priority) -> None:
    """A coroutine task made HIGH before its entry is due is queued again with that
    priority, on both runtimes, and starts before a HIGH task due at the same instant
    that was registered after the change (heap order).  The simulation had set the entry
    aside at once (its lane's waiting heap) and the task counted as not queued, so the
    change did not re-queue it: it started after, with its old priority (found by
    tests/test_sim_differential.py).  From LOW too: the entry's generation and priority
    differ there (from NORMAL both are 1)."""
    sim = Simulation(workers=1, start=T, max_coroutines=1)
    sim.schedule("early", OneTime(delay=60), action=no_op, duration=fixed(5), id="early",
                 priority=was)  # fmt: skip
    sim.run(T + 1)
    sim.modify("early", priority=Priority.HIGH)
    sim.schedule("late", OneTime(delay=59), action=no_op, duration=fixed(5), id="late",
                 priority=Priority.HIGH)  # fmt: skip
    sim.run(T + 100)
    assert starts(sim) == [("early", 60, 1), ("late", 65, 1)]

    clock, log = FakeClock(T), EventLog()
    with Scheduler(workers=1, clock=clock, listeners=[log], max_coroutines=1) as scheduler:
        scheduler.schedule("early", no_op, OneTime(delay=60), id="early", priority=was)
        clock.set(T + 1)
        scheduler.modify("early", priority=Priority.HIGH)
        scheduler.schedule("late", no_op, OneTime(delay=59), id="late", priority=Priority.HIGH)
        clock.set(T + 60)
        assert scheduler.wait_idle(10)
    assert [e.record.task_id for e in log.events if e.record is not None] == ["early", "late"]


@pytest.mark.parametrize("at", [5, 10])
def test_a_coroutine_entry_due_and_waiting_for_the_lane_keeps_its_place_at_a_new_priority(
    at: float,
) -> None:
    """Two coroutine tasks due at 5 wait for the lane's one slot: on threads both were
    handed to the event loop, which starts them in that order, and a priority given to
    the first while it waits (from the instant it fell due, ``at``) does not send it
    behind the second.  The simulation keeps that order too: only an entry set aside
    *before* it is due is queued again."""
    sim = Simulation(workers=1, start=T, max_coroutines=1)
    sim.schedule("hog", OneTime(delay=0), action=no_op, duration=fixed(50), id="hog")
    for name in ("first", "second"):
        sim.schedule(name, OneTime(delay=5), action=no_op, duration=fixed(5), id=name)
    sim.run(T + at)
    sim.modify("first", priority=Priority.LOW)
    sim.run(T + 100)
    assert starts(sim) == [("hog", 0, 1), ("first", 50, 1), ("second", 55, 1)]

    clock, log, let_go = FakeClock(T), EventLog(), threading.Event()

    async def hog() -> None:
        while not let_go.is_set():
            await asyncio.sleep(0.001)

    with Scheduler(workers=1, clock=clock, listeners=[log], max_coroutines=1) as scheduler:
        try:
            scheduler.schedule("hog", hog, OneTime(delay=0), id="hog")
            for name in ("first", "second"):
                scheduler.schedule(name, no_op, OneTime(delay=5), id=name)
            clock.set(T + at)
            wait_until(lambda: scheduler.metrics().coroutines == 3, timeout=10,
                       what="the hog running and two runs waiting for its slot")  # fmt: skip
            scheduler.modify("first", priority=Priority.LOW)
        finally:
            let_go.set()
        assert scheduler.wait_idle(10)
    begun = [e.task_id for e in log.events if e.status is TaskStatus.RUNNING]
    assert begun == ["hog", "first", "second"]
