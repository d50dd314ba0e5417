"""The timer: it waits exactly until the head is due, an earlier push wakes it, ties break by
priority then arrival, and every due task runs exactly once."""

from __future__ import annotations

import threading
from collections import Counter

from lldsched import (
    EventLog,
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    Priority,
    RunContext,
    Simulation,
    TaskStatus,
)
from tests.conftest import T0, SchedulerFactory, settle
from tests.waits import wait_until


class ParkingClock(FakeClock):
    """A fake clock (it moves only when told to: a parked timer wakes only when notified),
    telling the test each time the timer parks on its condition, and until when."""

    def __init__(self) -> None:
        super().__init__(T0)
        self.parked = threading.Event()
        self.deadlines: list[float | None] = []

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        self.deadlines.append(deadline)
        self.parked.set()
        super().wait(condition, deadline)


def test_an_earlier_insertion_wakes_a_timer_parked_twelve_hours_out(
    make_scheduler: SchedulerFactory, log: EventLog
) -> None:
    clock = ParkingClock()
    scheduler = make_scheduler(clock=clock, listeners=[log], start=False, max_wait=None)
    scheduler.schedule("nightly", lambda: None, OneTime(delay=12 * 3600))
    scheduler.start()
    assert clock.parked.wait(5)
    assert clock.deadlines == [T0 + 12 * 3600]
    # schedule() needs the lock the parked timer released inside Condition.wait, so the
    # timer is truly asleep when this push happens; the clock never moves, so only the
    # push can wake it (its own deadline never comes).
    scheduler.schedule("urgent", lambda: None, OneTime(delay=0))
    ran = log.wait_for(lambda e: e.name == "urgent" and e.record is not None, timeout=5)
    assert ran is not None and ran.record is not None
    assert (ran.record.due, ran.record.lateness) == (T0, 0.0)  # run at once, on time


def test_fifty_tasks_due_at_one_instant_on_four_workers_each_run_exactly_once(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    calls: Counter[int] = Counter()
    workers_seen: set[int] = set()
    lock = threading.Lock()
    release = threading.Barrier(4, timeout=5)

    def work(n: int, ctx: object) -> None:
        with lock:
            calls[n] += 1
            workers_seen.add(ctx.worker)  # type: ignore[attr-defined]
        if n < 4:
            release.wait()  # the first four meet: all four workers were busy at once

    scheduler = make_scheduler(workers=4, clock=clock, start=False)
    tasks = [
        scheduler.schedule(f"t{n}", work, OneTime(at=clock.now()), args=(n,)) for n in range(50)
    ]
    scheduler.start()
    settle(scheduler)
    assert calls == Counter(range(50))
    assert workers_seen == {0, 1, 2, 3}
    assert all(task.status is TaskStatus.SUCCEEDED and task.run_count == 1 for task in tasks)


def test_a_one_off_task_retires_with_nothing_live_left_in_the_heap(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("once", lambda: None, OneTime(delay=60))
    settle(scheduler)
    assert task.status is TaskStatus.SCHEDULED and scheduler.pending() == [task]
    clock.advance(60)
    settle(scheduler)
    assert task.status is TaskStatus.SUCCEEDED and task.next_run_at is None
    assert scheduler.pending() == [] and scheduler.queue_stats().live == 0
    assert [r.due for r in task.history] == [clock.now()]


def test_priority_breaks_a_tie_and_equal_priorities_keep_arrival_order(
    make_scheduler: SchedulerFactory, clock: FakeClock, log: EventLog
) -> None:
    scheduler = make_scheduler(workers=1, clock=clock, listeners=[log])
    due = clock.now() + 10
    for name, priority in [
        ("low", Priority.LOW), ("normal-1", Priority.NORMAL), ("high", Priority.HIGH),
        ("normal-2", Priority.NORMAL), ("normal-3", Priority.NORMAL),
    ]:  # fmt: skip
        scheduler.schedule(name, lambda: None, OneTime(at=due), priority=priority)
    clock.advance(10)
    settle(scheduler)
    assert [r.name for r in log.runs()] == ["high", "normal-1", "normal-2", "normal-3", "low"]


def test_an_idle_scheduler_without_a_bounded_wait_parks_its_timer_with_no_deadline(
    make_scheduler: SchedulerFactory,
) -> None:
    clock = ParkingClock()
    make_scheduler(clock=clock, max_wait=None)
    assert clock.parked.wait(5)
    assert clock.deadlines == [None]  # no poll interval: it sleeps until something is pushed


def test_an_idle_scheduler_parks_its_timer_for_at_most_the_bounded_wait(
    make_scheduler: SchedulerFactory,
) -> None:
    clock = ParkingClock()
    make_scheduler(clock=clock, max_wait=30)
    assert clock.parked.wait(5)
    assert clock.deadlines[0] == T0 + 30  # one look every 30 s


def test_the_scheduler_keeps_its_attributes_inline(make_scheduler: SchedulerFactory) -> None:
    # CPython 3.11 keeps up to 29 of an instance's attributes inline; a 30th moves them
    # all into a dict, and every self._x on the dispatch path gets slower (two more
    # attributes cost +2 % instructions a dispatched job: lldsched/threaded/parts.py).
    scheduler = make_scheduler(workers=2)
    settle(scheduler)
    assert len(vars(scheduler)) <= 29, sorted(vars(scheduler))


def test_the_core_keeps_its_attributes_inline(make_scheduler: SchedulerFactory) -> None:
    # The same line for the core both runtimes drive: a 30th attribute of SchedulerCore
    # (measured on 2026-12-06 at 29) cost +2.0 % instructions a dispatched job and +1.8 %
    # a simulated run (lldsched/core/parts.py), with a store and a listener as without.
    scheduler = make_scheduler(workers=2, store=InMemoryTaskStore(), listeners=[EventLog()])
    scheduler.schedule("tick", print, FixedRate(60))
    settle(scheduler)
    simulation = Simulation(workers=2, store=InMemoryTaskStore(), listeners=[EventLog()])
    simulation.schedule("tick", FixedRate(60), duration=1)
    simulation.run(until=600)
    for core in (scheduler._core, simulation._core):
        assert len(vars(core)) <= 29, sorted(vars(core))


def test_a_push_behind_a_paused_head_still_wakes_a_parked_timer_when_it_comes_first(
    make_scheduler: SchedulerFactory, log: EventLog
) -> None:
    # Pausing the head leaves its entry on top of the heap, a tombstone, and wakes no
    # one: the timer stays parked until the tombstone's instant.  A push is the new head
    # when it sorts before heap[0], tombstone or not, so an earlier task, due now (the
    # lane) or later (the heap), still wakes it at once: no miss until a later wake.
    clock = ParkingClock()
    scheduler = make_scheduler(clock=clock, listeners=[log], start=False, max_wait=None)
    nightly = scheduler.schedule("nightly", lambda: None, OneTime(delay=12 * 3600))
    scheduler.start()
    assert clock.parked.wait(5)
    clock.parked.clear()
    assert scheduler.pause(nightly.id)
    scheduler.schedule("hourly", lambda: None, OneTime(delay=3600))  # the heap
    assert clock.parked.wait(5)
    assert clock.deadlines == [T0 + 12 * 3600, T0 + 3600]  # woken, parked on the new head
    scheduler.schedule("urgent", lambda: None, OneTime(delay=0))  # the lane
    ran = log.wait_for(lambda e: e.name == "urgent" and e.record is not None, timeout=5)
    assert ran is not None and ran.record is not None and ran.record.lateness == 0.0


def test_the_timer_parks_until_the_first_timeout_of_the_runs_in_flight(
    make_scheduler: SchedulerFactory,
) -> None:
    # Two runs in flight, one allowed 10 s, one 5000 s, and a task due in an hour: the
    # timer sleeps until the first run's timeout, when it raises that run's flag, not
    # until the hour (or the other run's deadline).
    clock = ParkingClock()
    started = threading.Barrier(3, timeout=5)
    release = threading.Event()

    def hold(ctx: RunContext) -> None:  # a run with a context: its flag is the timer's
        started.wait()
        release.wait(10)

    scheduler = make_scheduler(workers=2, clock=clock, max_wait=None)
    try:
        scheduler.schedule("long", hold, OneTime(delay=0), timeout=5000)
        scheduler.schedule("short", hold, OneTime(delay=0), timeout=10)
        scheduler.schedule("hourly", lambda: None, OneTime(delay=3600))
        started.wait()  # both runs in flight, their deadlines armed
        clock.parked.clear()
        clock.advance(0)  # the timer looks again, and parks
        assert clock.parked.wait(5)
        assert clock.deadlines[-1] == T0 + 10
    finally:
        release.set()
    settle(scheduler)


def test_a_timer_with_no_room_to_hand_out_waits_for_a_worker_not_for_a_due_instant(
    make_scheduler: SchedulerFactory,
) -> None:
    # One worker busy and the hand-off queue full: the timer parks until a worker makes
    # room (it is notified then), with no deadline of its own; not until the instant it
    # last computed, which may have passed (it would wake, find no room, and spin).
    clock = ParkingClock()
    began = threading.Event()
    release = threading.Event()

    def hold() -> None:
        began.set()
        release.wait(10)

    scheduler = make_scheduler(workers=1, clock=clock, max_wait=None, handoff=1, start=False)
    scheduler.schedule("later", lambda: None, OneTime(delay=3600))
    scheduler.start()
    try:
        assert clock.parked.wait(5)
        assert clock.deadlines[-1] == T0 + 3600
        scheduler.schedule("hold", hold, OneTime(delay=0))
        assert began.wait(5)
        scheduler.schedule("waits", lambda: None, OneTime(delay=0))
        wait_until(lambda: scheduler.metrics().handoff == 1, timeout=5, what="a full hand-off")
        clock.parked.clear()
        clock.advance(0)  # the timer looks again: no room
        assert clock.parked.wait(5)
        assert clock.deadlines[-1] is None
    finally:
        release.set()
    settle(scheduler)
