"""The timer lets the scheduler's lock go at every other wake at least, even when each
wake's instant to wait for has passed by the time it comes to its wait
(docs/decisions/threaded.md, "The timer lets the lock go at every other wake at least";
``lldsched/threaded/timer.py``, "The lock").

Its wait is the one place where the timer lets the lock go, and a clock's wait for an
instant already passed returns at once.  Valid input made every wake's instant pass
while the wake worked: a shared store's ``poll=0.001`` with a feed read on a 2 ms round
trip (a server on another host), a ``max_wait`` of a microsecond.  The timer then went
round for good with the lock held: no ``pause()`` from another thread returned, and
``shutdown(timeout=10)`` gave up.  Here the clock is moved on instead of waited for (a
read that drags, a store call that uses up its round trip of the clock's time): the
instant has passed at every wake whatever the machine's speed, and a verb must get in
all the same.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lldsched import FixedRate, Scheduler, SystemClock
from tests.lockwaits import HANG_GUARD, returns
from tests.store_doubles import HookedStore, StoreCall


def noop() -> None:
    pass


class DraggingClock(SystemClock):
    """The system's time plus ``ahead`` seconds; while ``drag`` is set, each read by the
    timer's thread first moves it on by ``drag`` (the wake worked that long), counted in
    ``dragged`` (``drags``: set at the tenth).  No monotonic clock: the moves are no
    jump."""

    monotonic = None  # type: ignore[assignment]

    def __init__(self) -> None:
        self.ahead = 0.0
        self.drag = 0.0
        self.dragged = 0
        self.drags = threading.Event()

    def now(self) -> float:
        if self.drag and threading.current_thread().name.endswith("-timer"):
            self.ahead += self.drag
            self.dragged += 1
            if self.dragged >= 10:
                self.drags.set()
        return time.time() + self.ahead


class DistantStore(HookedStore):
    """A shared SQLite store whose change feed answers after a round trip of ``trip``
    seconds of ``clock``'s time (moved on, not waited for), while ``distant`` is set."""

    def __init__(self, path: Path, clock: DraggingClock, *, poll: float, trip: float) -> None:
        super().__init__(path, poll=poll)
        self.clock = clock
        self.trip = trip
        self.distant = False
        self.reads = 0
        self.far = threading.Event()  # set at the second read on the round trip

    def before(self, call: StoreCall) -> None:
        if self.distant and call == "changed" and not self.by_the_test():
            self.clock.ahead += self.trip
            self.reads += 1
            if self.reads >= 2:
                self.far.set()


@pytest.fixture
def dragging() -> Iterator[tuple[Scheduler, DraggingClock]]:
    """A running scheduler whose ``max_wait`` (a microsecond) passes at every wake."""
    clock = DraggingClock()
    scheduler = Scheduler(clock=clock, max_wait=1e-6)
    scheduler.schedule("hourly", noop, FixedRate(3600, start_delay=3600), id="hourly")
    scheduler.start()
    clock.drag = 1.0  # a second of the clock's time each read: a wake outlasts max_wait
    try:
        assert clock.drags.wait(HANG_GUARD), "the timer did not read the clock"
        yield scheduler, clock
    finally:
        clock.drag = 0.0
        scheduler.shutdown()


def test_a_verb_gets_the_lock_while_every_wakes_max_wait_has_passed(
    dragging: tuple[Scheduler, DraggingClock],
) -> None:
    scheduler, clock = dragging
    assert returns(lambda: scheduler.pause("hourly"))
    assert scheduler.task("hourly").status.value == "paused"
    assert returns(lambda: scheduler.resume("hourly"))
    dragged = clock.dragged
    clock.drags.clear()
    clock.dragged = 0
    assert clock.drags.wait(HANG_GUARD)  # the timer goes on waking, every instant passed
    assert dragged and clock.drag


def test_a_verb_gets_the_lock_while_every_wakes_poll_passes_in_its_feed_read(
    tmp_path: Path,
) -> None:
    """``poll=0.001`` and a feed read on a 2 ms round trip: each wake's bound (``poll``
    from its start) has passed when the read returns."""
    clock = DraggingClock()
    store = DistantStore(tmp_path / "tasks.db", clock, poll=0.001, trip=0.002)
    scheduler = Scheduler(store=store, clock=clock)
    scheduler.schedule("hourly", noop, FixedRate(3600, start_delay=3600), id="hourly")
    with store:
        scheduler.start()
        store.distant = True
        try:
            assert store.far.wait(HANG_GUARD), "the timer read no feed"
            assert returns(lambda: scheduler.pause("hourly"))
            assert returns(lambda: scheduler.task("hourly"))
            assert store.distant  # within the round trips, not after
        finally:
            store.distant = False
            scheduler.shutdown()
