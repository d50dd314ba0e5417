"""Bounded hand-off: the queue between the timer and the workers holds a few entries,
not every entry that is due.

Switched off through the real :class:`~lldsched.threaded.scheduler.Scheduler`'s own
``handoff=`` argument (no seam needed): with a bound larger than any burst, the timer
moves every due entry out of the heap at once.  Two things follow under a burst:
memory outside the heap grows with the burst, and a HIGH-priority task that falls
due after it queues behind everything already handed off, because once an entry left
the heap its place is fixed.
"""

from __future__ import annotations

import sys
import threading
from typing import NamedTuple

from lldsched.lab._support import Gate, ObservedClock, whole_count
from lldsched.model import Priority
from lldsched.schedules.simple import OneTime
from lldsched.threaded.scheduler import Scheduler

__all__ = ["UNBOUNDED", "HandoffOutcome", "run_a_burst"]

UNBOUNDED = sys.maxsize
"""A hand-off bound no burst reaches: in effect, no bound."""


class HandoffOutcome(NamedTuple):
    """Under a burst: entries out of the heap (in the hand-off queue or running), and how
    many runs went before a HIGH task that fell due after the burst."""

    handoff: int | None
    handed_off: int
    runs_before_high: int


def run_a_burst(
    handoff: int | None = None, *, burst: int = 2_000, workers: int = 1
) -> HandoffOutcome:
    """``burst`` NORMAL tasks due at once (fake clock), the workers held at a gate until
    the timer has handed off all it will; then a HIGH task due now.  Deterministic up
    to one entry (a worker may take one while the timer hands off)."""
    whole_count("burst", burst)
    clock = ObservedClock(0)
    scheduler = Scheduler(workers=workers, clock=clock, handoff=handoff)
    gate = Gate()
    order: list[str] = []
    # Guards order: the workers append to it as they run, the caller reads it at the end.
    lock = threading.Lock()

    def run(name: str) -> None:
        gate.hold()
        with lock:
            order.append(name)

    for n in range(burst):
        scheduler.schedule(f"burst-{n}", run, OneTime(delay=0), args=(f"burst-{n}",))
    scheduler.start()
    try:
        gate.entered.wait(5.0)
        clock.parked()  # the timer has handed off what fits and waits
        in_heap = scheduler.queue_stats().live
        handed_off = burst - in_heap  # queued for a worker, or running (held at the gate)
        scheduler.schedule("HIGH", run, OneTime(delay=0), priority=Priority.HIGH, args=("HIGH",))
        gate.open()
        scheduler.wait_drained(30.0)
    finally:
        scheduler.shutdown()
    return HandoffOutcome(handoff, handed_off, order.index("HIGH"))
