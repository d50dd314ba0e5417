"""The lab's alternatives are no straw men: each variant that is meant to be correct runs
the same workload to the same records, in the same order, as the real scheduler, and
differs only where its decision shows (lldsched.lab).  The broken variants differ only on
the input that breaks them: without a tie, entries without the sequence field order runs
as the real ones do."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any, cast

import pytest

from lldsched.clock import FakeClock
from lldsched.core.duequeue import TaskQueue
from lldsched.core.task import ScheduledTask
from lldsched.lab._support import ObservedClock
from lldsched.lab.dispatch import InlineListenerScheduler
from lldsched.lab.entries import IdTieScheduler, RemovingScheduler, StandIn, TaskTieScheduler
from lldsched.lab.handoff import UNBOUNDED
from lldsched.lab.shutdown import (
    CountingPool,
    ExecutorTimerFirstScheduler,
    NotifyOnePool,
    TimerFirstScheduler,
)
from lldsched.lab.timer import PollingClock
from lldsched.lab.wheel import TimingWheel
from lldsched.model import Priority, TaskEvent
from lldsched.schedules.simple import FixedRate, OneTime
from lldsched.threaded.scheduler import Scheduler

Run = tuple[str, float, float, str]
Event = tuple[str, str]


class _NotifyOneScheduler(Scheduler):
    pool_type = NotifyOnePool


class _CountingScheduler(Scheduler):
    pool_type = CountingPool


def _workload(
    make: Callable[[FakeClock], Scheduler],
    *,
    seed: int,
    ties: bool = True,
    clock: FakeClock | None = None,
) -> tuple[list[Run], list[Event]]:
    """Forty tasks of mixed priorities (one-offs, fixed-rate ones), some cancelled, paused,
    resumed, rescheduled and run at once, on a fake clock moved in 5 s steps; every run
    recorded (name, due, started, outcome), every event in delivery order.  ``ties``:
    due instants shared by several tasks of mixed priorities (else every task has its
    own instants, all NORMAL)."""
    clock = FakeClock(0) if clock is None else clock
    scheduler = make(clock)
    events: list[Event] = []
    # Guards events: the dispatcher's thread (or the publishing one) appends.
    lock = threading.Lock()

    def listen(event: TaskEvent) -> None:
        with lock:
            events.append((event.name, event.status.name))

    scheduler.add_listener(listen)
    rng = random.Random(seed)
    ids = []
    for n in range(40):
        if n % 5 == 0:
            when: Any = (
                FixedRate(rng.choice([7.0, 15.0]))
                if ties
                else FixedRate(7 + n / 100, start_delay=0.1 + n / 1000)
            )
        else:
            when = OneTime(delay=rng.choice([5, 10, 10, 20, 35]) if ties else 0.5 + n)
        priority = rng.choice(list(Priority)) if ties else Priority.NORMAL
        ids.append(scheduler.schedule(f"t{n}", lambda: None, when, priority=priority).id)
    for task_id in rng.sample(ids, 6):
        scheduler.cancel(task_id)
    paused = [i for i in rng.sample(ids, 6) if scheduler.pause(i)]
    scheduler.start()
    try:
        for step in range(12):
            clock.advance(5)
            assert scheduler.wait_idle()
            if step < len(paused):  # one a step: a resumed task is due at once
                scheduler.resume(paused[step])
            if step == 8:
                waiting = [t.id for t in scheduler.pending()]
                scheduler.reschedule(waiting[-1], OneTime(delay=3))
            if step == 9:
                scheduler.run_now(scheduler.pending()[0].id)
        assert scheduler.wait_idle()
        records = [(r.name, r.due, r.started, r.outcome.name) for r in scheduler.records()]
    finally:
        scheduler.shutdown()
    return sorted(records, key=lambda run: (run[2], run[1])), events


@pytest.mark.parametrize(
    "make",
    [
        lambda clock: RemovingScheduler(workers=1, clock=clock),
        lambda clock: InlineListenerScheduler(workers=1, clock=clock),
        lambda clock: Scheduler(workers=1, clock=clock, handoff=UNBOUNDED),
        lambda clock: _NotifyOneScheduler(workers=1, clock=clock),
        lambda clock: _CountingScheduler(workers=1, clock=clock),
        lambda clock: TimerFirstScheduler(workers=1, clock=clock),
        lambda clock: ExecutorTimerFirstScheduler(workers=1, clock=clock),
    ],
    ids=[
        "removal",
        "listeners-under-lock",
        "unbounded-handoff",
        "notify-one",
        "counting-pool",
        "timer-first",
        "executor-like-pool",
    ],
)
@pytest.mark.parametrize("seed", [1, 2])
def test_a_correct_variant_runs_a_workload_as_the_real_scheduler_does(
    make: Callable[[FakeClock], Scheduler], seed: int
) -> None:
    real_runs, real_events = _workload(lambda clock: Scheduler(workers=1, clock=clock), seed=seed)
    runs, events = _workload(make, seed=seed)
    assert len(real_runs) > 40  # the workload ran: one-offs and fixed-rate repeats
    assert runs == real_runs
    assert events == real_events


@pytest.mark.parametrize(
    "variant", [Scheduler, RemovingScheduler, InlineListenerScheduler, TimerFirstScheduler]
)
def test_the_timer_never_waits_for_an_instant_already_passed(variant: type[Scheduler]) -> None:
    """What the lab's ObservedClock takes for a lost task (lldsched.lab.VariantError):
    the timer hands out what is due before it waits, so a wait's deadline is ahead."""
    clock = ObservedClock(0)
    _workload(lambda clock: variant(workers=1, clock=clock), seed=1, clock=clock)
    assert clock.waits >= 12  # at least one a step of the clock: the timer did wait
    assert clock.stalled is None


@pytest.mark.parametrize("variant", [TaskTieScheduler, IdTieScheduler])
def test_without_a_tie_entries_without_the_sequence_field_run_as_the_real_ones(
    variant: type[Scheduler],
) -> None:
    """The variant fails on a tie, and only there: it is the sequence field switched off,
    not a broken queue."""
    real = _workload(lambda clock: Scheduler(workers=1, clock=clock), seed=3, ties=False)
    assert _workload(lambda clock: variant(workers=1, clock=clock), seed=3, ties=False) == real


@pytest.mark.parametrize("seed", range(4))
def test_the_wheel_pops_what_the_heap_pops_in_the_same_order_when_ticks_differ(
    seed: int,
) -> None:
    """One due instant per tick (so the wheel's order within a tick cannot show), some
    cancelled, popped at tick boundaries: the wheel and the real heap hand out the same
    entries, in the same order, at every step (the comparison times two correct queues).
    The wheel rounded a due instant down to its tick, and handed it out up to a tick
    before it was due."""
    rng = random.Random(seed)
    ticks = rng.sample(range(1, 40_000), 2_000)  # quarter-second ticks: exact in binary
    dues = [(tick + rng.choice([0.25, 0.5, 1.0])) * 0.25 for tick in ticks]
    popped: dict[str, list[list[str]]] = {}
    for name, queue in [("heap", TaskQueue()), ("wheel", TimingWheel(resolution=0.25))]:
        tasks = [StandIn(f"t{n}") for n in range(len(dues))]
        q = cast(Any, queue)
        q.attach({task.id: cast(ScheduledTask, task) for task in tasks})
        for task, due in zip(tasks, dues, strict=True):
            q.push(cast(ScheduledTask, task), due)
        for task in random.Random(seed + 100).sample(tasks, 200):
            q.discard(cast(ScheduledTask, task))
        steps, steps_rng, tick = [], random.Random(seed + 200), 0
        while tick <= 40_002:
            tick += steps_rng.randint(1, 40)
            steps.append([entry[3] for entry in q.pop_due(tick * 0.25, 50)])
        popped[name] = steps
    assert popped["wheel"] == popped["heap"]
    assert sum(len(step) for step in popped["heap"]) == 1_800


@pytest.mark.parametrize("clock", [None, PollingClock(0.01)], ids=["Condition.wait", "poll"])
def test_a_polling_timer_runs_what_the_real_one_runs_in_the_same_order(
    clock: PollingClock | None,
) -> None:
    """Real time, but no timing asserted: tasks due at three instants, mixed priorities,
    one worker.  A poll starts them later, never in another order."""
    scheduler = Scheduler(workers=1) if clock is None else Scheduler(workers=1, clock=clock)
    order: list[str] = []
    # Guards order: the worker appends, the test reads after wait_drained.
    lock = threading.Lock()

    def record(name: str) -> None:
        with lock:
            order.append(name)

    due = time.time() + 0.2  # after registration and start, even on a busy machine
    for n, (offset, priority) in enumerate(
        [(0.04, Priority.LOW), (0.0, Priority.NORMAL), (0.04, Priority.HIGH), (0.0, Priority.HIGH),
         (0.02, Priority.NORMAL), (0.0, Priority.LOW), (0.02, Priority.NORMAL)]
    ):  # fmt: skip
        name = f"t{n}"
        scheduler.schedule(name, record, OneTime(due + offset), priority=priority, args=(name,))
    with scheduler:
        assert scheduler.wait_drained(30.0)
    assert order == ["t3", "t1", "t5", "t4", "t6", "t2", "t0"]
