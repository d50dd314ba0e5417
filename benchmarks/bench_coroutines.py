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

The three run in :data:`ROUNDS` interleaved rounds after a warm-up round
(``paired_trials``: the order reversed every other round, the garbage collected
before each run); each ratio is taken round by round and reported as the median of
the rounds with their spread.
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

from host_load import Watch
from paired_trials import Lap, Spread, Stopwatch, interleaved, lap_ratios, ratios

from lldsched import OneTime, Scheduler

N_TASKS = 20_000
WORKERS = 4
ROUNDS = 6
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


def run_lldsched(n: int) -> tuple[Lap, float]:
    """From start() to the n-th coroutine (wall and CPU seconds), and wall seconds to
    wait_idle()."""
    done = _Done(n)
    action = _coroutine_of(done)
    scheduler = Scheduler(workers=WORKERS)
    at = time.time() - 1.0
    for _ in range(n):
        scheduler.schedule("noop", action, OneTime(at=at))
    gc.collect()
    try:
        watch = Stopwatch()
        scheduler.start()
        if not done.event.wait(TIMEOUT):
            raise RuntimeError(f"lldsched ran fewer than {n} coroutines in {TIMEOUT} s")
        first = watch.lap()
        if not scheduler.wait_idle(TIMEOUT):
            raise RuntimeError("lldsched did not settle")
        settled = watch.lap().wall
    finally:
        scheduler.shutdown(timeout=TIMEOUT)
    return first, settled


def run_apscheduler(n: int) -> Lap:
    """Wall and CPU seconds from resume() (after a paused start) to the n-th coroutine."""
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
            watch = Stopwatch()
            loop.call_soon_threadsafe(scheduler.resume)
            if not done.event.wait(TIMEOUT):
                raise RuntimeError(f"APScheduler ran fewer than {n} coroutines in {TIMEOUT} s")
            return watch.lap()
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


def run_bare_loop(n: int) -> Lap:
    """Wall and CPU seconds for a bare event loop to run ``n`` coroutines, one ``Task``
    each (the floor)."""
    done = _Done(n)
    action = _coroutine_of(done)
    with _loop_thread("bare-loop") as loop:

        def start_all() -> None:
            for _ in range(n):
                asyncio.Task(action(), loop=loop)

        gc.collect()
        watch = Stopwatch()
        loop.call_soon_threadsafe(start_all)
        if not done.event.wait(TIMEOUT):
            raise RuntimeError(f"the bare loop ran fewer than {n} coroutines in {TIMEOUT} s")
        return watch.lap()


def main() -> dict[str, float]:
    with Watch() as watch:
        samples = interleaved(
            {
                "lldsched": lambda: run_lldsched(N_TASKS),
                "aps": lambda: run_apscheduler(N_TASKS),
                "bare": lambda: run_bare_loop(N_TASKS),
            },
            rounds=ROUNDS,
            warmup={
                "lldsched": lambda: run_lldsched(WARMUP_TASKS),
                "aps": lambda: run_apscheduler(WARMUP_TASKS),
                "bare": lambda: run_bare_loop(WARMUP_TASKS),
            },
        )
    lldsched: list[tuple[Lap, float]] = samples["lldsched"]
    our_laps = [first for first, _ in lldsched]
    their_laps: list[Lap] = samples["aps"]
    floor_laps: list[Lap] = samples["bare"]
    ours = [lap.wall for lap in our_laps]
    ours_idle = [settled for _, settled in lldsched]
    theirs = [lap.wall for lap in their_laps]
    floor = [lap.wall for lap in floor_laps]
    # A ratio of rates is the other side's seconds over this side's, round by round.
    versus, versus_cpu = lap_ratios(their_laps, our_laps)
    floor_versus = Spread.of(ratios(theirs, floor))
    of_floor = Spread.of(ratios(floor, ours))

    def rate(seconds: list[float]) -> float:
        return N_TASKS / statistics.median(seconds)

    def spread(seconds: list[float]) -> str:
        rates = sorted(N_TASKS / x / 1000 for x in seconds)
        return f"{rates[0]:.0f}..{rates[-1]:.0f}k"

    results = {
        "coroutines lldsched (jobs/s)": rate(ours),
        "coroutines APS AsyncIO (jobs/s)": rate(theirs),
        **Spread.both("coroutines / APS AsyncIO (x)", versus, versus_cpu),
        "coroutines bare asyncio loop (jobs/s)": rate(floor),
        "bare asyncio loop / APS AsyncIO (x)": floor_versus.median,
        "coroutines lldsched / bare asyncio loop (x)": of_floor.median,
    }
    print(
        f"coroutines: {N_TASKS:,} no-op async def tasks due at once, {WORKERS} workers, "
        f"{ROUNDS} interleaved rounds after a warm-up (median rate, lowest..highest)"
    )
    rows = [
        ("lldsched default", ours, "from start() to the last coroutine"),
        ("  ... until wait_idle()", ours_idle, "records and state settled"),
        ("APScheduler 3 AsyncIO", theirs, "from resume(): equal work (headline)"),
        ("bare asyncio loop", floor, "one Task per coroutine, no scheduler (floor)"),
    ]
    for label, seconds, note in rows:
        print(f"  {label:<26} {rate(seconds):>10,.0f} jobs/s  ({spread(seconds)})  {note}")
    print("  per-round ratios, median (lowest..highest, middle half):")
    print(f"    lldsched / APS AsyncIO   {versus.text()}")
    print(f"    ... in CPU time          {versus_cpu.text()}")
    print(
        f"    bare loop / APS AsyncIO  {floor_versus.text()}"
        "   (the most a scheduler that gives each run a Task can reach)"
    )
    print(f"    lldsched / bare loop     {of_floor.text()}")
    print(f"  {watch.summary()}")
    return results


if __name__ == "__main__":
    main()
