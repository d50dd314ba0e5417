"""Listeners off the lock: events are delivered on the dispatcher's own thread.

Switched off by swapping the real :class:`~lldsched.threaded.scheduler.Scheduler`'s
event dispatcher (its ``dispatcher_type`` seam) for an :class:`InlineDispatcher`,
which calls every listener inside ``publish``: the core publishes under the
scheduler's one lock, so a slow listener holds the timer, every worker and every
caller of the scheduler's API for as long as it runs.  A listener that calls the API
itself waits for the lock its own thread holds: ``pause``, ``schedule`` and the other
verbs hang for good, ``shutdown(timeout=...)`` gives up at its timeout having stopped
nothing.  No event is ever published while the listeners hear another, so this
dispatcher needs none of the queue that keeps a ``Simulation``'s listeners hearing a
task's transitions in their order (docs/decisions/listeners.md, "A listener's verb is heard
after the event it was called on").
"""

from __future__ import annotations

import threading
import time
from typing import NamedTuple

from lldsched.lab._support import (
    VARIANT_PATIENCE,
    Gate,
    ObservedClock,
    VariantError,
    done_or_stalled,
    lab_wait,
    lost,
    median,
    patience_seconds,
    running,
    scheduler_variant,
    several,
    whole_count,
)
from lldsched.listeners import notify
from lldsched.model import TaskEvent, TaskStatus
from lldsched.schedules.simple import OneTime
from lldsched.threaded.dispatcher import EventDispatcher
from lldsched.threaded.scheduler import Scheduler

__all__ = [
    "InlineDispatcher",
    "InlineListenerScheduler",
    "LatencyPoint",
    "measure_listener_latency",
    "runs_while_a_listener_blocks",
]


class InlineDispatcher(EventDispatcher):
    """Calls each listener in ``publish``, on the publishing thread (under the lock).
    A listener that raises on every event is logged as the real dispatcher logs it (its
    ``Repeats``: a traceback once a minute, DEBUG lines between), not once an event;
    the scheduler's lock, held by every publisher, guards it."""

    def publish(self, event: TaskEvent) -> None:
        notify(self._listeners, event, repeats=self._repeats)

    def flush(self, timeout: float | None = None) -> bool:
        return True  # nothing is ever queued


class InlineListenerScheduler(Scheduler):
    """The real scheduler, its listeners called under its lock."""

    dispatcher_type = InlineDispatcher


def runs_while_a_listener_blocks(
    scheduler_type: type[Scheduler] = Scheduler, *, patience: float = 1.0
) -> bool:
    """A listener blocks (at a gate) on the event of task A starting; task B is due at the
    same instant (fake clock, two workers).  True if B runs while the listener is
    blocked, within ``patience`` real seconds (finite, > 0 and at most 60 s: ``ValueError``
    naming it otherwise).  ``scheduler_type``: a :class:`Scheduler` class (``TypeError`` naming it
    otherwise); a variant whose listener never hears A start, or that loses a task:
    :class:`~lldsched.lab.VariantError` (no answer at all, rather than a wrong one)."""
    scheduler_variant("scheduler_type", scheduler_type)
    patience = patience_seconds(patience)
    clock = ObservedClock(0)
    gate = Gate()

    def listener(event: TaskEvent) -> None:
        if event.name == "A" and event.status is TaskStatus.RUNNING:
            gate.hold()

    scheduler = scheduler_type(workers=2, clock=clock)
    ran = threading.Event()
    scheduler.schedule("A", lambda: None, OneTime(delay=10))
    scheduler.add_listener(listener)
    with running(scheduler):
        clock.advance(9)
        scheduler.wait_idle()
        scheduler.schedule("B", ran.set, OneTime(delay=1))  # before A starts: no lock held
        clock.advance(1)
        settled = _settling(scheduler)
        if (
            not done_or_stalled(lambda: gate.entered.is_set() or settled.is_set(), clock, scheduler)
            or not gate.entered.is_set()
        ):
            if ran.is_set():  # B ran, A did not start or was not heard: the dispatcher
                raise VariantError(
                    f"{scheduler_type.__name__}: the listener never heard A start: its "
                    "dispatcher did not deliver the event (not even once the scheduler "
                    "was idle, every event delivered by its dispatcher's flush), so "
                    "nothing was blocked"
                )
            raise lost(scheduler_type, "A and B, both due, never ran", clock)
        ran_meanwhile = ran.wait(patience)
        gate.open()
        if not done_or_stalled(ran.is_set, clock, scheduler) or not scheduler.wait_idle(
            VARIANT_PATIENCE
        ):
            raise lost(scheduler_type, "B, due, never ran", clock)
    return ran_meanwhile


def _settling(scheduler: Scheduler) -> threading.Event:
    """An event set once ``scheduler`` is idle (``wait_idle``: what is due ran, and its
    dispatcher's ``flush`` says every event was delivered), waited for on a thread of its
    own: a listener that has not heard an event by then never will, and the experiment
    need not wait out its patience to say so.  While the listener blocks, the scheduler
    is not idle (the real dispatcher is busy, the inline one holds the lock): the thread
    waits until the experiment opens the gate."""
    settled = threading.Event()

    def settle() -> None:
        try:
            if scheduler.wait_idle(VARIANT_PATIENCE):
                settled.set()
        except Exception:  # the timer died, a variant raised: the experiment reads that itself
            pass

    threading.Thread(target=settle, name="lab-settling", daemon=True).start()
    return settled


class LatencyPoint(NamedTuple):
    """Median and worst lateness (ms) of a burst of runs, a listener taking ``delay_ms``:
    of each way's quietest burst (see :func:`measure_listener_latency`)."""

    delay_ms: float
    off_lock_ms: float
    under_lock_ms: float
    off_lock_worst_ms: float
    under_lock_worst_ms: float


LEAD = 0.05
"""Seconds from a burst's building to the instant its runs are due: after its
registration and start, even on a busy machine (40 builds at a load average of 11 on
two cores: 0.6 ms at the median, 13.5 ms the longest).  A start that ran past it only
adds lateness, which the quietest burst of each way reads past (:func:`_quietest`)."""


def _burst_lateness(
    scheduler_type: type[Scheduler], delay: float, *, tasks: int
) -> tuple[float, float]:
    scheduler = scheduler_type(workers=4)
    due = time.time() + LEAD
    ids = [scheduler.schedule(f"run-{n}", lambda: None, OneTime(due)).id for n in range(tasks)]
    pause = threading.Event()

    def slow_listener(event: TaskEvent) -> None:
        pause.wait(delay)  # the listener's work: a write, a network call

    scheduler.add_listener(slow_listener)
    scheduler.start()
    try:
        scheduler.wait_drained(30.0)
        lateness = [1000 * (r.started - r.due) for i in ids for r in scheduler.task(i).history]
    finally:
        scheduler.shutdown()
    return median(lateness), max(lateness)


def _quietest(
    scheduler_type: type[Scheduler], delay: float, *, tasks: int, repeats: int
) -> tuple[float, float]:
    """The burst of ``repeats`` with the smallest median: load on the machine only ever
    adds lateness, so the quietest burst is the closest to what the design costs (as
    ``timeit`` reads its fastest repeat)."""
    return min(_burst_lateness(scheduler_type, delay, tasks=tasks) for _ in range(repeats))


def measure_listener_latency(
    delays: tuple[float, ...] = (0.0, 0.001, 0.002, 0.005),
    *,
    tasks: int = 20,
    repeats: int = 3,
) -> list[LatencyPoint]:
    """``tasks`` runs due together on 4 workers with one listener that takes ``delay``
    seconds per event: how late they start, listeners off the lock (the real
    dispatcher) and under it; of ``repeats`` bursts each way, the quietest.  Real time:
    the numbers vary, but with one burst a busy machine once made the runs off the lock
    later at the median (22.8 ms) than those under it (19.2 ms); with the quietest of
    three, the order held in every run (docs/decisions/teaching-kit.md, "The lab states only what
    holds under load").  Each delay finite, >= 0 and at most 60 s (``ValueError`` naming it
    otherwise)."""
    several("delays", delays)
    whole_count("tasks", tasks, at_most=1_000)  # each event waits its delay
    whole_count("repeats", repeats, at_most=100)
    delays = tuple(lab_wait("listener delay", delay, at_least=0) for delay in delays)
    points = []
    for delay in delays:
        off, off_worst = _quietest(Scheduler, delay, tasks=tasks, repeats=repeats)
        under, under_worst = _quietest(InlineListenerScheduler, delay, tasks=tasks, repeats=repeats)
        points.append(LatencyPoint(delay * 1000, off, under, off_worst, under_worst))
    return points
