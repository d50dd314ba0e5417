"""An awaitable cut while it waits for a coroutine slot ends never begun, and is closed.

A thread task's action that returns a coroutine is called on a worker, which hands the
coroutine to the event loop; with every coroutine slot taken (``max_coroutines=1``,
held by a long run) it waits there.  ``Overlap.CANCEL_OTHER`` then cuts it at the next
slot: it leaves the line at once, its record says the slot came due *before it
started* (not *while it ran*: its body never began), and the coroutine is closed, so
that Python never warns it was "never awaited".
"""

from __future__ import annotations

import asyncio
import gc
import threading
import warnings
from collections.abc import Coroutine
from typing import Any

from lldsched import FakeClock, FixedRate, OneTime, Outcome, Overlap, Scheduler
from tests.waits import wait_until

released = threading.Event()


async def held() -> None:
    """Holds the one coroutine slot until :data:`released` (up to 20 s)."""
    await asyncio.to_thread(released.wait, 20)


async def quick() -> None:
    """Returns at once."""


def handed() -> Coroutine[Any, Any, None]:
    """A thread task's action that returns a coroutine: the worker hands it to the loop."""
    return quick()


def test_an_awaitable_cut_by_a_newer_run_while_it_waits_for_a_slot_never_began() -> None:
    released.clear()
    clock = FakeClock(1_000.0)
    scheduler = Scheduler(workers=1, clock=clock, max_coroutines=1, history_limit=None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            scheduler.schedule("long", held, OneTime(1_000.0), id="long")
            scheduler.schedule(
                "job", handed, FixedRate(10, start_delay=1), id="job",
                overlap=Overlap.CANCEL_OTHER,
            )  # fmt: skip
            scheduler.start()
            wait_until(lambda: scheduler.task("long").running, timeout=10, what="the long run")
            clock.advance(1)  # the job's first slot: its coroutine waits behind "long"
            wait_until(
                lambda: scheduler.metrics(timeout=10).coroutines == 2,
                timeout=10,
                what="the awaitable in the line",
            )
            clock.advance(10)  # the next slot cuts it, still waiting
            wait_until(
                lambda: len(scheduler.task("job").history) == 1, timeout=10, what="its record"
            )
            (cut,) = scheduler.task("job").history
            assert cut.slot == 1_001.0 and cut.outcome is Outcome.CANCELLED
            assert cut.error is not None and cut.error.endswith("came due before it started")
            released.set()
            wait_until(
                lambda: scheduler.task("job").run_count == 2, timeout=10, what="the next run"
            )
            assert scheduler.task("job").history[-1].ok
        finally:
            released.set()
            scheduler.shutdown()
        gc.collect()  # a coroutine never awaited nor closed warns when it is collected
    assert [w for w in caught if "never awaited" in str(w.message)] == []


async def held_to_its_end() -> None:
    """Holds its slot until :data:`released` (up to 20 s), then ends well."""
    await asyncio.to_thread(released.wait, 20)


def test_a_shutdown_without_drain_lets_a_coroutine_in_flight_end_before_its_grace() -> None:
    """``shutdown(drain=False)`` drops what waits, and gives a coroutine in flight until
    the last ``CANCEL_GRACE`` of its timeout to end: one that ends before is recorded
    ok, not cut.  The event loop's line is empty then, its run still in flight: the
    runner waits for both to be over, not either."""
    released.clear()
    clock = FakeClock(1_000.0)
    scheduler = Scheduler(workers=1, clock=clock, history_limit=None)
    scheduler.schedule("long", held_to_its_end, OneTime(1_000.0), id="long")
    scheduler.start()
    wait_until(lambda: scheduler.task("long").running, timeout=10, what="the run")
    runner = scheduler._coroutines
    closer = threading.Thread(target=lambda: scheduler.shutdown(drain=False, timeout=60))
    closer.start()
    try:
        wait_until(lambda: runner._closed, timeout=10, what="the loop's shutdown")
        with runner._lock:  # the shutdown let it go: it waits for the run, not cut it
            pass
    finally:
        released.set()
        closer.join(30)
    assert not closer.is_alive()
    (record,) = scheduler.task("long").history
    assert record.ok and record.error is None
