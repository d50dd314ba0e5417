"""The timer's three decisions: wait on a Condition, a push that notifies, a re-test in
``while``.

Each is switched off by swapping one collaborator of the real
:class:`~lldsched.threaded.scheduler.Scheduler`:

* **poll** — the :class:`~lldsched.clock.Clock`: a :class:`PollingClock` whose ``wait``
  releases the lock, sleeps a fixed interval and ignores notifications (the clock is
  already a constructor argument: no seam needed);
* **silent push** — the queue: :class:`SilentPushQueue` is a
  :class:`~lldsched.core.duequeue.TaskQueue` given no condition to notify;
* **if, not while** — the queue: :class:`IfQueue` believes the timer's first test,
  so after a wait it hands out the head whatever the clock says.
"""

from __future__ import annotations

import random
import threading
import time
from typing import NamedTuple

from lldsched.clock import SystemClock
from lldsched.core.duequeue import TaskQueue
from lldsched.core.task import Entry
from lldsched.lab._support import (
    VARIANT_PATIENCE,
    ObservedClock,
    VariantError,
    done_or_stalled,
    lab_wait,
    lost,
    median,
    middle_half,
    patience_seconds,
    running,
    scheduler_variant,
    several,
    timer_parked,
    whole_count,
)
from lldsched.schedules.simple import OneTime
from lldsched.threaded.scheduler import Scheduler

__all__ = [
    "IfQueue",
    "IfScheduler",
    "Lateness",
    "PollResult",
    "PollingClock",
    "SilentPushQueue",
    "SilentPushScheduler",
    "WaitingClock",
    "measure_polling",
    "measure_timer",
    "run_due_now_behind_parked_timer",
    "run_early_on_spurious_wakeup",
]

TWELVE_HOURS = 12 * 3600.0

# -- Condition.wait(timeout) against a poll ---------------------------------------------


class WaitingClock(SystemClock):
    """The real :class:`SystemClock`, counting the timer's wake-ups (same behaviour)."""

    __slots__ = ("wakeups",)

    def __init__(self) -> None:
        self.wakeups = 0

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        super().wait(condition, deadline)
        self.wakeups += 1


class PollingClock(SystemClock):
    """A clock whose ``wait`` is a poll: release the lock, sleep ``interval`` seconds,
    take the lock back.  Deadlines and notifications are ignored."""

    __slots__ = ("interval", "wakeups")

    def __init__(self, interval: float) -> None:
        # A negative interval killed the timer thread (time.sleep refuses it there).
        self.interval = lab_wait("poll interval", interval, above=0)
        self.wakeups = 0

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        condition.release()
        try:
            time.sleep(self.interval)
        finally:
            condition.acquire()
        self.wakeups += 1


class PollResult(NamedTuple):
    """One timer strategy: idle wake-ups and the process's CPU per second, and how late a
    run starts: the median, and the middle half of the runs (first to third quartile).
    The wake-ups are a count, the same on a busy machine; the lateness is the thread's
    wake-up plus what the strategy adds, and on a busy machine the wake-up can outweigh
    a 1 ms poll's share (docs/decisions/teaching-kit.md, "The lab states only what holds under
    load")."""

    label: str
    wakeups_per_s: float
    cpu_ms_per_s: float
    lateness_ms: float
    lateness_low_ms: float
    lateness_high_ms: float


def measure_timer(
    label: str, clock: WaitingClock | PollingClock, *, idle: float, samples: int
) -> PollResult:
    """One strategy (the clock): wake-ups and CPU per idle second over ``idle`` seconds,
    and the median lateness of ``samples`` runs (see :func:`measure_polling`).  ``idle``
    finite, > 0 and at most 60 s, ``samples`` a whole number from 1 to 1,000: else
    ``ValueError`` naming it; a ``clock`` that counts no ``wakeups``: ``TypeError``."""
    idle = lab_wait("idle", idle, above=0)
    whole_count("samples", samples, at_most=1_000)  # each waits 20-120 ms
    if not isinstance(getattr(clock, "wakeups", None), int):
        raise TypeError(
            "clock must count the timer's wake-ups in .wakeups (a clock of your own: "
            f"subclass WaitingClock or PollingClock), got {clock!r}"
        )
    scheduler = Scheduler(workers=1, clock=clock)
    # Registered before start: the timer's first wait is the park (no wake-up to count).
    scheduler.schedule("parked a day out", lambda: None, OneTime(delay=86400))
    scheduler.start()
    try:
        before, cpu = clock.wakeups, time.process_time()
        threading.Event().wait(idle)  # the measurement window: the timer has nothing to do
        wakeups = (clock.wakeups - before) / idle
        cpu_ms = (time.process_time() - cpu) * 1000 / idle
        lateness: list[float] = []
        phase = random.Random(0)  # delays that fall anywhere between two polls
        for n in range(samples):
            ran = threading.Event()
            delay = 0.02 + 0.1 * phase.random()
            task = scheduler.schedule(f"sample {n}", ran.set, OneTime(delay=delay))
            ran.wait(5.0)
            scheduler.wait_idle()
            lateness.extend(1000 * (r.started - r.due) for r in scheduler.task(task.id).history)
    finally:
        scheduler.shutdown()
    return PollResult(label, wakeups, cpu_ms, median(lateness), *middle_half(lateness))


def measure_polling(
    intervals: tuple[float, ...] = (0.001, 0.01, 0.1), *, idle: float = 0.5, samples: int = 15
) -> list[PollResult]:
    """The real timer (``Condition.wait`` until the head is due) against a poll every
    ``interval`` seconds: wake-ups and CPU per idle second (a task parked a day out;
    the whole process's CPU, so the timer's share is what a poll adds to
    ``Condition.wait``'s), and the median lateness of tasks due in 20 to 120 ms
    (seeded delays, so a poll's phase does not line up with them).  Real time: the
    numbers vary.  ``idle`` and each interval finite, > 0 and at most 60 s (``ValueError``
    naming it otherwise)."""
    several("intervals", intervals)
    whole_count("samples", samples, at_most=1_000)  # each waits 20-120 ms
    lab_wait("idle", idle, above=0)
    for interval in intervals:
        lab_wait("poll interval", interval, above=0)
    results = [measure_timer("Condition.wait", WaitingClock(), idle=idle, samples=samples)]
    for interval in intervals:
        label = f"poll {interval * 1000:g} ms"
        results.append(measure_timer(label, PollingClock(interval), idle=idle, samples=samples))
    return results


# -- push notifies ----------------------------------------------------------------------


class SilentPushQueue(TaskQueue):
    """The real queue, given no condition: a new head does not wake the timer."""

    def __init__(self, wake: threading.Condition | None = None) -> None:
        super().__init__(None)


class SilentPushScheduler(Scheduler):
    """The real scheduler over a :class:`SilentPushQueue`."""

    queue_type = SilentPushQueue


class Lateness(NamedTuple):
    """Whether a run started within the patience given, and ``started - due`` once it did
    (fake-clock seconds: deterministic)."""

    ran_in_time: bool
    lateness: float


def _lateness(
    scheduler: Scheduler,
    task_id: str,
    ran: threading.Event,
    patience: float,
    clock: ObservedClock,
    *,
    then: float,
) -> Lateness:
    """How both timer experiments read their one run: give it ``patience`` real seconds
    (``ran`` is set by the action); if it has not run by then, move ``clock`` on by
    ``then`` seconds, when it must.  Its lateness is read from its only record.  A
    variant that never runs it, or runs it more than once: :class:`VariantError`."""
    name = scheduler.task(task_id).name
    in_time = ran.wait(patience)
    if not in_time:
        clock.advance(then)
        if not done_or_stalled(ran.is_set, clock, scheduler):
            raise lost(
                type(scheduler),
                f"the task {name!r} never ran, not even with the fake clock moved "
                f"{then:g} s on, past its due time",
                clock,
            )
    if not scheduler.wait_idle(VARIANT_PATIENCE):
        raise lost(type(scheduler), f"after {name!r} ran, it never became idle", clock)
    records = scheduler.task(task_id).history
    if len(records) != 1:
        raise VariantError(
            f"{type(scheduler).__name__}: the task {name!r} ran {len(records)} times; a "
            "one-off runs once"
        )
    (record,) = records
    return Lateness(in_time, record.started - record.due)


def run_due_now_behind_parked_timer(
    scheduler_type: type[Scheduler] = Scheduler, *, patience: float = 1.0
) -> Lateness:
    """Park the timer on a task 12 h away (fake clock), then schedule one due now.

    The real queue's push wakes the timer and the new task runs at once; a silent
    push leaves it waiting for the parked timer.  After ``patience`` seconds of real
    time the clock is moved on 12 h, and the task's lateness is read.  ``patience``:
    finite, > 0 and at most 60 s (``ValueError`` naming it otherwise).  ``scheduler_type``: a
    :class:`Scheduler` class, the real one or a variant (``TypeError`` naming it
    otherwise); a variant that loses the task: :class:`VariantError`.
    """
    scheduler_variant("scheduler_type", scheduler_type)
    patience = patience_seconds(patience)
    clock = ObservedClock(0)
    scheduler = scheduler_type(workers=1, clock=clock)
    scheduler.schedule("nightly", lambda: None, OneTime(delay=TWELVE_HOURS))
    with running(scheduler):
        timer_parked(clock, scheduler)
        ran = threading.Event()
        urgent = scheduler.schedule("due now", ran.set, OneTime(delay=0))
        return _lateness(scheduler, urgent.id, ran, patience, clock, then=TWELVE_HOURS)


# -- re-test in while ---------------------------------------------------------------------


class IfQueue(TaskQueue):
    """The timer's test as an ``if``: when a pop found nothing due, the timer waits, and the
    next pop takes the head as due without looking at the clock again."""

    def __init__(self, wake: threading.Condition | None = None) -> None:
        super().__init__(wake)
        self._waited = False  # the last pop found nothing due: the timer went to wait

    def pop_due(self, now: float, limit: int) -> list[Entry]:
        if self._waited:
            self._waited = False
            head = self.pop()  # "if not due: wait" -- and then run it, whatever woke us
            return [] if head is None else [head]
        due = super().pop_due(now, limit)
        self._waited = not due
        return due


class IfScheduler(Scheduler):
    """The real scheduler over an :class:`IfQueue`."""

    queue_type = IfQueue


def run_early_on_spurious_wakeup(
    scheduler_type: type[Scheduler] = Scheduler, *, patience: float = 1.0
) -> Lateness:
    """A task due in 60 s (fake clock); the timer parks; one spurious wake-up.

    The real timer re-tests and parks again: the task runs at 60 s, on time.  An ``if``
    runs it at once, 60 s early (lateness -60).  ``patience``: real seconds given to
    a run that should not happen, finite, > 0 and at most 60 s (``ValueError`` naming it
    otherwise).
    ``scheduler_type``: as :func:`run_due_now_behind_parked_timer` takes it.
    """
    scheduler_variant("scheduler_type", scheduler_type)
    patience = patience_seconds(patience)
    clock = ObservedClock(0)
    scheduler = scheduler_type(workers=1, clock=clock)
    ran = threading.Event()
    task = scheduler.schedule("due in 60 s", ran.set, OneTime(delay=60))
    with running(scheduler):
        timer_parked(clock, scheduler)
        clock.spurious_wakeup()
        return _lateness(scheduler, task.id, ran, patience, clock, then=60)
