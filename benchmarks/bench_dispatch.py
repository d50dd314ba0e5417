"""Dispatch throughput: 20,000 no-op tasks due at once, 4 workers, lldsched vs APScheduler 3.

Every task is registered before the clock starts (lldsched: ``schedule`` with a
``OneTime`` at a past instant; APScheduler: ``add_job`` with the ``date`` trigger),
then the time is taken until the 20,000th action has run.  Both sides detect
completion the same way: the action bumps a shared ``itertools.count`` (atomic
under the GIL) and the last one sets a ``threading.Event``.

Configurations, run in :data:`ROUNDS` interleaved rounds after a warm-up round
(``paired_trials``: the order reversed every other round, the garbage collected
before each run); each ratio is taken round by round and reported as the median of
the rounds with their spread:

* lldsched, default config (no store, no listener), timed from ``start()``;
* lldsched with ``store=InMemoryTaskStore()`` and one no-op listener (backlog sized
  so no event is dropped), timed from ``start()``;
* APScheduler ``BackgroundScheduler`` with ``ThreadPoolExecutor(4)`` and
  ``misfire_grace_time=None``.  APScheduler defers the job-store insertion of jobs
  added before ``start()`` to ``start()`` itself, work lldsched already did in
  ``schedule()``.  One run is timed in two phases: ``start(paused=True)`` (the
  insertion) and ``resume()`` to the last action.  The headline ratios use the
  second alone (*equal work*); the sum, what a run timed from ``start()``
  measures, which charges APScheduler that insertion, is reported beside it.
"""

from __future__ import annotations

import gc
import itertools
import statistics
import threading
import time
from datetime import UTC, datetime
from typing import Any, NamedTuple

from host_load import Watch
from paired_trials import Lap, Spread, Stopwatch, interleaved, lap_ratios, ratios

from lldsched import InMemoryTaskStore, OneTime, Scheduler, TaskEvent

N_TASKS = 20_000
WORKERS = 4
ROUNDS = 7
WARMUP_TASKS = 2_000
TIMEOUT = 120.0

GOALS: dict[str, tuple[str, float]] = {
    "dispatch default / APS (x)": (">=", 8.0),
    "dispatch store+listener / APS (x)": (">=", 3.0),
}


class _Done:
    """The shared completion detector: the n-th call sets the event."""

    def __init__(self, n: int) -> None:
        self._count = itertools.count(1)
        self._n = n
        self.event = threading.Event()

    def __call__(self) -> None:
        if next(self._count) == self._n:
            self.event.set()


def _no_op_listener(event: TaskEvent) -> None:
    pass


def run_lldsched(n: int, *, with_store: bool) -> tuple[Lap, float, int]:
    """From start() to the n-th action (wall and CPU seconds), wall seconds to
    wait_idle(), and events dropped."""
    done = _Done(n)
    if with_store:
        scheduler = Scheduler(
            workers=WORKERS,
            store=InMemoryTaskStore(),
            listeners=[_no_op_listener],
            listener_backlog=4 * n,  # 3 events per task: none dropped
        )
    else:
        scheduler = Scheduler(workers=WORKERS)
    at = time.time() - 1.0
    for _ in range(n):
        scheduler.schedule("noop", done, OneTime(at=at))
    gc.collect()
    try:
        watch = Stopwatch()
        scheduler.start()
        if not done.event.wait(TIMEOUT):
            raise RuntimeError(f"lldsched ran fewer than {n} tasks in {TIMEOUT} s")
        first = watch.lap()
        if not scheduler.wait_idle(TIMEOUT):
            raise RuntimeError("lldsched did not settle")
        settled = watch.lap().wall
    finally:
        scheduler.shutdown(timeout=TIMEOUT)
    return first, settled, scheduler.dropped_events


class ApsTimes(NamedTuple):
    """Wall seconds APScheduler spent in ``start(paused=True)`` (moving the pending jobs
    into its job store), and wall and CPU seconds from ``resume()`` to the n-th action."""

    start: float
    run: Lap


def run_apscheduler(n: int) -> ApsTimes:
    """Times one APScheduler run in its two phases (see :class:`ApsTimes`).

    ``start(paused=True)`` followed by ``resume()`` is ``start()`` cut in two: the
    insertion lldsched did in ``schedule()``, then the run.  The headline times only
    the run (equal work); the sum is what a run timed from ``start()`` measures.
    """
    from apscheduler.executors.pool import ThreadPoolExecutor
    from apscheduler.schedulers.background import BackgroundScheduler

    done = _Done(n)
    scheduler: Any = BackgroundScheduler(
        executors={"default": ThreadPoolExecutor(WORKERS)},
        job_defaults={"misfire_grace_time": None},
        timezone="UTC",
    )
    at = datetime.now(UTC)
    for _ in range(n):
        scheduler.add_job(done, "date", run_date=at)
    gc.collect()
    try:
        t0 = time.perf_counter()
        scheduler.start(paused=True)  # moves the pending jobs into the job store
        started = time.perf_counter() - t0
        watch = Stopwatch()
        scheduler.resume()
        if not done.event.wait(TIMEOUT):
            raise RuntimeError(f"APScheduler ran fewer than {n} jobs in {TIMEOUT} s")
        run = watch.lap()
    finally:
        scheduler.shutdown(wait=True)
    return ApsTimes(start=started, run=run)


def main() -> dict[str, float]:
    with Watch() as watch:
        samples = interleaved(
            {
                "default": lambda: run_lldsched(N_TASKS, with_store=False),
                "store": lambda: run_lldsched(N_TASKS, with_store=True),
                "aps": lambda: run_apscheduler(N_TASKS),
            },
            rounds=ROUNDS,
            warmup={
                "default": lambda: run_lldsched(WARMUP_TASKS, with_store=False),
                "store": lambda: run_lldsched(WARMUP_TASKS, with_store=True),
                "aps": lambda: run_apscheduler(WARMUP_TASKS),
            },
        )
    ours: list[tuple[Lap, float, int]] = samples["default"]
    with_store: list[tuple[Lap, float, int]] = samples["store"]
    aps: list[ApsTimes] = samples["aps"]
    default = [first.wall for first, _, _ in ours]
    default_idle = [settled for _, settled, _ in ours]
    store = [first.wall for first, _, _ in with_store]
    store_idle = [settled for _, settled, _ in with_store]
    dropped = sum(d for _, _, d in with_store)
    aps_run = [t.run.wall for t in aps]
    aps_start = [t.start + t.run.wall for t in aps]
    # A ratio of rates is the peer's seconds over ours, round by round.
    versus, versus_cpu = lap_ratios([t.run for t in aps], [first for first, _, _ in ours])
    store_versus, store_cpu = lap_ratios(
        [t.run for t in aps], [first for first, _, _ in with_store]
    )
    versus_start = Spread.of(ratios(aps_start, default))

    def rate(seconds: list[float]) -> float:
        return N_TASKS / statistics.median(seconds)

    def spread(seconds: list[float]) -> str:
        rates = sorted(N_TASKS / x / 1000 for x in seconds)
        return f"{rates[0]:.0f}..{rates[-1]:.0f}k"

    results = {
        "dispatch default (jobs/s)": rate(default),
        "dispatch store+listener (jobs/s)": rate(store),
        "dispatch APScheduler (jobs/s)": rate(aps_run),
        **Spread.both("dispatch default / APS (x)", versus, versus_cpu),
        **Spread.both("dispatch store+listener / APS (x)", store_versus, store_cpu),
        "dispatch APScheduler from start() (jobs/s)": rate(aps_start),
        "dispatch default / APS from start() (x)": versus_start.median,
    }
    rows: list[tuple[str, list[float], str]] = [
        ("lldsched default", default, "from start() to the last action"),
        ("  ... until wait_idle()", default_idle, "records and state settled"),
        ("lldsched store+listener", store, "from start() to the last action"),
        ("  ... until wait_idle()", store_idle, "every event delivered too"),
        ("APScheduler 3", aps_run, "from resume(): equal work (headline)"),
        ("APScheduler 3", aps_start, "start(paused=True) + resume(): + job-store insertion"),
    ]
    print(
        f"dispatch: {N_TASKS:,} no-op tasks due at once, {WORKERS} workers, "
        f"{ROUNDS} interleaved rounds after a warm-up (median rate, lowest..highest)"
    )
    for label, seconds, note in rows:
        print(f"  {label:<26} {rate(seconds):>10,.0f} jobs/s  ({spread(seconds)})  {note}")
    print(f"  events dropped by the listener backlog: {dropped}")
    print("  per-round ratios, median (lowest..highest, middle half):")
    print(f"    default / APS               {versus.text()}")
    print(f"    ... in CPU time             {versus_cpu.text()}")
    print(f"    store+listener / APS        {store_versus.text()}")
    print(f"    ... in CPU time             {store_cpu.text()}")
    print(f"    default / APS from start()  {versus_start.text()}")
    print(f"  {watch.summary()}")
    return results


if __name__ == "__main__":
    main()
