"""Dispatch throughput: 20,000 no-op tasks due at once, 4 workers, lldsched vs APScheduler 3.

Every task is registered before the clock starts (lldsched: ``schedule`` with a
``OneTime`` at a past instant; APScheduler: ``add_job`` with the ``date`` trigger),
then the time is taken until the 20,000th action has run.  Both sides detect
completion the same way: the action bumps a shared ``itertools.count`` (atomic
under the GIL) and the last one sets a ``threading.Event``.

Configurations, run round-robin so machine noise spreads evenly, median of
:data:`RUNS` runs after one discarded warm-up round:

* lldsched, default config (no store, no listener), timed from ``start()``;
* lldsched with ``store=InMemoryTaskStore()`` and one no-op listener (backlog sized
  so no event is dropped), timed from ``start()``;
* APScheduler ``BackgroundScheduler`` with ``ThreadPoolExecutor(4)`` and
  ``misfire_grace_time=None``, timed two ways.  APScheduler defers the job-store
  insertion of jobs added before ``start()`` to ``start()`` itself, work lldsched
  already did in ``schedule()``.  The headline ratios therefore use the *equal
  work* variant (``start(paused=True)`` untimed, then timed from ``resume()``);
  the variant timed from ``start()``, which charges APScheduler that insertion,
  is reported beside it.
"""

from __future__ import annotations

import gc
import itertools
import statistics
import threading
import time
from datetime import UTC, datetime
from typing import Any

from lldsched import InMemoryTaskStore, OneTime, Scheduler, TaskEvent

N_TASKS = 20_000
WORKERS = 4
RUNS = 5
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


def run_lldsched(n: int, *, with_store: bool) -> tuple[float, float, int]:
    """Seconds from start() to the n-th action, to wait_idle(), and events dropped."""
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
        t0 = time.perf_counter()
        scheduler.start()
        if not done.event.wait(TIMEOUT):
            raise RuntimeError(f"lldsched ran fewer than {n} tasks in {TIMEOUT} s")
        t1 = time.perf_counter()
        if not scheduler.wait_idle(TIMEOUT):
            raise RuntimeError("lldsched did not settle")
        t2 = time.perf_counter()
    finally:
        scheduler.shutdown(timeout=TIMEOUT)
    return t1 - t0, t2 - t0, scheduler.dropped_events


def run_apscheduler(n: int, *, from_resume: bool) -> float:
    """Seconds to the n-th action: from resume() after a paused start, or from start()."""
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
        if from_resume:
            scheduler.start(paused=True)  # moves the pending jobs into the job store
            t0 = time.perf_counter()
            scheduler.resume()
        else:
            t0 = time.perf_counter()
            scheduler.start()
        if not done.event.wait(TIMEOUT):
            raise RuntimeError(f"APScheduler ran fewer than {n} jobs in {TIMEOUT} s")
        elapsed = time.perf_counter() - t0
    finally:
        scheduler.shutdown(wait=True)
    return elapsed


def main() -> dict[str, float]:
    default: list[float] = []
    default_idle: list[float] = []
    store: list[float] = []
    store_idle: list[float] = []
    aps_resume: list[float] = []
    aps_start: list[float] = []
    dropped = 0
    rounds: list[tuple[int, bool]] = [(WARMUP_TASKS, False)] + [(N_TASKS, True)] * RUNS
    for n, keep in rounds:
        first, settled, _ = run_lldsched(n, with_store=False)
        s_first, s_settled, s_dropped = run_lldsched(n, with_store=True)
        r = run_apscheduler(n, from_resume=True)
        s = run_apscheduler(n, from_resume=False)
        if keep:
            default.append(first)
            default_idle.append(settled)
            store.append(s_first)
            store_idle.append(s_settled)
            aps_resume.append(r)
            aps_start.append(s)
            dropped += s_dropped

    def rate(samples: list[float]) -> float:
        return N_TASKS / statistics.median(samples)

    def spread(samples: list[float]) -> str:
        rates = sorted(N_TASKS / x / 1000 for x in samples)
        return f"{rates[0]:.0f}..{rates[-1]:.0f}k"

    results = {
        "dispatch default (jobs/s)": rate(default),
        "dispatch store+listener (jobs/s)": rate(store),
        "dispatch APScheduler (jobs/s)": rate(aps_resume),
        "dispatch default / APS (x)": rate(default) / rate(aps_resume),
        "dispatch store+listener / APS (x)": rate(store) / rate(aps_resume),
        "dispatch APScheduler from start() (jobs/s)": rate(aps_start),
        "dispatch default / APS from start() (x)": rate(default) / rate(aps_start),
    }
    rows: list[tuple[str, list[float], str]] = [
        ("lldsched default", default, "from start() to the last action"),
        ("  ... until wait_idle()", default_idle, "records and state settled"),
        ("lldsched store+listener", store, "from start() to the last action"),
        ("  ... until wait_idle()", store_idle, "every event delivered too"),
        ("APScheduler 3", aps_resume, "from resume(): equal work (headline)"),
        ("APScheduler 3", aps_start, "from start(): + job-store insertion"),
    ]
    print(f"dispatch: {N_TASKS:,} no-op tasks due at once, {WORKERS} workers, median of {RUNS}")
    for label, samples, note in rows:
        print(f"  {label:<26} {rate(samples):>10,.0f} jobs/s  ({spread(samples)})  {note}")
    print(f"  events dropped by the listener backlog: {dropped}")
    print(
        f"  default / APS          {results['dispatch default / APS (x)']:5.1f}x   "
        f"(from start(): {results['dispatch default / APS from start() (x)']:.1f}x)"
    )
    print(f"  store+listener / APS   {results['dispatch store+listener / APS (x)']:5.1f}x")
    return results


if __name__ == "__main__":
    main()
