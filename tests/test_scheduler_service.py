"""The threaded scheduler inside a long-running service: what a day of runs leaves in
memory, what an action's BaseException does to the workers, and what is logged."""

from __future__ import annotations

import gc
import threading

from lldsched import EventLog, FakeClock, FixedRate, OneTime, RetryPolicy, RunContext
from lldsched.threaded.timer import DEADLINE_SLACK
from tests.conftest import SchedulerFactory, settle


def live_contexts() -> int:
    gc.collect()
    return sum(isinstance(thing, RunContext) for thing in gc.get_objects())


def test_a_run_that_ends_before_its_timeout_leaves_no_context_behind(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    before = live_contexts()
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("minutely", lambda ctx: None, FixedRate(60), timeout=86400)
    runs = 3 * DEADLINE_SLACK
    for _ in range(runs):
        clock.advance(60)
        settle(scheduler)
    assert task.run_count == runs + 1  # the first run is due at once
    # Every run ended hours before its deadline: the deadline heap drops void entries
    # once they outnumber the armed ones (before: all 193 contexts stayed for a day).
    assert live_contexts() - before <= DEADLINE_SLACK + 1


def test_a_deadline_still_flags_its_run_after_the_heap_dropped_void_entries(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    long_started = threading.Event()
    reasons: list[str | None] = []

    def long(ctx: RunContext) -> None:
        long_started.set()
        ctx.wait(10)  # returns when the timer raises the flag at the deadline
        reasons.append(ctx.reason)

    log = EventLog()
    scheduler = make_scheduler(workers=2, clock=clock, listeners=[log])
    scheduler.schedule("long", long, OneTime(delay=0), timeout=30, retry=RetryPolicy.never())
    assert long_started.wait(5)
    quick = 2 * DEADLINE_SLACK + 3  # enough void entries to rebuild the heap
    for n in range(quick):
        scheduler.schedule(f"quick{n}", lambda ctx: None, OneTime(delay=0), timeout=30)
    assert log.wait_for(lambda e: len(log.runs()) == quick)
    clock.advance(30)
    settle(scheduler)
    assert reasons == ["timeout"]
