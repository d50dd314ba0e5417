"""Coroutine dispatch: 20,000 no-op ``async def`` tasks due at once, lldsched vs APScheduler 3.

Every task is registered before the clock starts (lldsched: ``schedule`` with a
``OneTime`` at a past instant; APScheduler: ``add_job`` with the ``date``
trigger), then the time is taken until the 20,000th coroutine has run.  Both
sides detect completion the same way: the coroutine bumps a shared
``itertools.count`` (atomic under the GIL) and the last one sets a
``threading.Event``.

* lldsched, default config (4 workers, ``max_coroutines=1000``, no store, no
  listener), timed from ``start()``: the timer hands the due entries straight to
  the scheduler's event loop, which calls the action (it creates the coroutine)
  and runs the coroutine as an asyncio task;
* APScheduler ``AsyncIOScheduler`` on an event loop running in its own thread, with
  its default ``AsyncIOExecutor`` and ``misfire_grace_time=None``.  As in
  ``bench_dispatch.py``, the headline uses the *equal work* variant: ``start(paused=True)``
  untimed (it moves the pending jobs into the job store, work lldsched did in
  ``schedule()``), then timed from ``resume()``;
* the floor: a bare asyncio event loop on its own thread that makes one ``asyncio.Task``
  per coroutine (no scheduler at all), timed from the hand-over to the last coroutine.
  A scheduler that gives every coroutine run a real task (so ``asyncio.timeout``,
  ``TaskGroup`` and ``current_task()`` work inside it) cannot beat this line.

Round-robin, median of :data:`RUNS` runs after one discarded warm-up round.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from lldsched import OneTime, Scheduler

N_TASKS = 20_000
WORKERS = 4
RUNS = 5
WARMUP_TASKS = 2_000
TIMEOUT = 120.0

GOALS: dict[str, tuple[str, float]] = {
    "coroutines / APS AsyncIO (x)": (">=", 5.0),
}


class _Done:
    """The shared completion detector: the n-th coroutine sets the event."""

    def __init__(self, n: int) -> None:
        self._count = itertools.count(1)
        self._n = n
        self.event = threading.Event()

    async def __call__(self) -> None:
        if next(self._count) == self._n:
            self.event.set()


def _coroutine_of(done: _Done) -> Callable[[], Any]:
    """A module-level-style ``async def`` (what users write), closing over ``done``."""

    async def no_op() -> None:
        await done()

    return no_op


def run_lldsched(n: int) -> tuple[float, float]:
    """Seconds from start() to the n-th coroutine, and to wait_idle()."""
    done = _Done(n)
    action = _coroutine_of(done)
    scheduler = Scheduler(workers=WORKERS)
    at = time.time() - 1.0
    for _ in range(n):
        scheduler.schedule("noop", action, OneTime(at=at))
    gc.collect()
    try:
        t0 = time.perf_counter()
        scheduler.start()
        if not done.event.wait(TIMEOUT):
            raise RuntimeError(f"lldsched ran fewer than {n} coroutines in {TIMEOUT} s")
        t1 = time.perf_counter()
        if not scheduler.wait_idle(TIMEOUT):
            raise RuntimeError("lldsched did not settle")
        t2 = time.perf_counter()
    finally:
        scheduler.shutdown(timeout=TIMEOUT)
    return t1 - t0, t2 - t0


def run_apscheduler(n: int) -> float:
    """Seconds from resume() (after a paused start) to the n-th coroutine."""
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    done = _Done(n)
    action = _coroutine_of(done)
    with _loop_thread("aps-loop") as loop:
        scheduler: Any = AsyncIOScheduler(
            event_loop=loop, job_defaults={"misfire_grace_time": None}, timezone="UTC"
        )
        at = datetime.now(UTC)
        for _ in range(n):
            scheduler.add_job(action, "date", run_date=at)
        gc.collect()

        def on_loop(fn: Callable[[], Any]) -> None:
            """Call ``fn`` on the scheduler's loop and wait for it."""
            future = asyncio.run_coroutine_threadsafe(_call(fn), loop)
            future.result(TIMEOUT)

        try:
            on_loop(lambda: scheduler.start(paused=True))  # moves the jobs into the job store
            t0 = time.perf_counter()
            loop.call_soon_threadsafe(scheduler.resume)
            if not done.event.wait(TIMEOUT):
                raise RuntimeError(f"APScheduler ran fewer than {n} coroutines in {TIMEOUT} s")
            return time.perf_counter() - t0
        finally:
            on_loop(lambda: scheduler.shutdown(wait=False))


async def _call(fn: Callable[[], Any]) -> None:
    fn()


@contextlib.contextmanager
def _loop_thread(name: str) -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop running on a thread of its own, stopped and closed on exit."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name=name, daemon=True)
    thread.start()
    try:
        yield loop
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(TIMEOUT)
        loop.close()


def run_bare_loop(n: int) -> float:
    """Seconds for a bare event loop to run ``n`` coroutines, one ``Task`` each (the floor)."""
    done = _Done(n)
    action = _coroutine_of(done)
    with _loop_thread("bare-loop") as loop:

        def start_all() -> None:
            for _ in range(n):
                asyncio.Task(action(), loop=loop)

        gc.collect()
        t0 = time.perf_counter()
        loop.call_soon_threadsafe(start_all)
        if not done.event.wait(TIMEOUT):
            raise RuntimeError(f"the bare loop ran fewer than {n} coroutines in {TIMEOUT} s")
        return time.perf_counter() - t0


def main() -> dict[str, float]:
    ours: list[float] = []
    ours_idle: list[float] = []
    theirs: list[float] = []
    floor: list[float] = []
    rounds: list[tuple[int, bool]] = [(WARMUP_TASKS, False)] + [(N_TASKS, True)] * RUNS
    for n, keep in rounds:
        first, settled = run_lldsched(n)
        aps = run_apscheduler(n)
        bare = run_bare_loop(n)
        if keep:
            ours.append(first)
            ours_idle.append(settled)
            theirs.append(aps)
            floor.append(bare)

    def rate(samples: list[float]) -> float:
        return N_TASKS / statistics.median(samples)

    def spread(samples: list[float]) -> str:
        rates = sorted(N_TASKS / x / 1000 for x in samples)
        return f"{rates[0]:.0f}..{rates[-1]:.0f}k"

    results = {
        "coroutines lldsched (jobs/s)": rate(ours),
        "coroutines APS AsyncIO (jobs/s)": rate(theirs),
        "coroutines / APS AsyncIO (x)": rate(ours) / rate(theirs),
        "coroutines bare asyncio loop (jobs/s)": rate(floor),
        "bare asyncio loop / APS AsyncIO (x)": rate(floor) / rate(theirs),
        "coroutines lldsched / bare asyncio loop (x)": rate(ours) / rate(floor),
    }
    print(
        f"coroutines: {N_TASKS:,} no-op async def tasks due at once, "
        f"{WORKERS} workers, median of {RUNS}"
    )
    rows = [
        ("lldsched default", ours, "from start() to the last coroutine"),
        ("  ... until wait_idle()", ours_idle, "records and state settled"),
        ("APScheduler 3 AsyncIO", theirs, "from resume(): equal work (headline)"),
        ("bare asyncio loop", floor, "one Task per coroutine, no scheduler (floor)"),
    ]
    for label, samples, note in rows:
        print(f"  {label:<26} {rate(samples):>10,.0f} jobs/s  ({spread(samples)})  {note}")
    print(f"  lldsched / APS AsyncIO   {results['coroutines / APS AsyncIO (x)']:5.1f}x")
    print(
        f"  bare loop / APS AsyncIO  {results['bare asyncio loop / APS AsyncIO (x)']:5.1f}x"
        "   (the most a scheduler that gives each run a Task can reach)"
    )
    return results


if __name__ == "__main__":
    main()
