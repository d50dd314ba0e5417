"""Growth: how registration and pause/resume/cancel churn cost as the task count grows.

For each size ``n`` (1e3, 1e4, 1e5 and 1e6; ``--quick`` stops at 1e5), on a scheduler
that is never started:

* registration: ``n`` tasks registered as a user writes them,
  ``scheduler.schedule("tick", f, FixedRate(60))``, in µs per task, against the
  floor, a bare ``heapq.heappush`` of ``n`` tuples of the same shape;
* churn, one call timed at a time: ``n + n // 5`` pause/resume pairs on tasks picked
  at random (each pause leaves a tombstone, each resume pushes a new entry: enough
  for the heap's tombstones to pass the compaction threshold at least once), then
  cancels of 60 % of the tasks.  Mean, p99 and max per verb, in µs.

The max is what a compaction done inside one call shows (issue #19: a whole-heap
rebuild inside one ``pause()`` took 3.3 s at 1e6).  A call inside which the cyclic
collector ran (any generation) is reported apart: at 1e6 registered tasks even a
young-generation collection took 45-72 ms of CPU here, whatever the queue does (the
collector's share is item 4 of issue #19), so the goal is on the worst call without
one, and on the CPU time the call's thread used (the machine may be shared: a call
can wait for a core far longer than it works).

This is the skeleton of issue #19's growth benchmark; dispatch, wake latency, the
simulation and ``to_frame`` are still measured by their own modules.

Usage: ``python benchmarks/bench_growth.py [--quick]``.
"""

from __future__ import annotations

import gc
import heapq
import random
import statistics
import sys
import time
from collections.abc import Callable

from lldsched import FixedRate, Scheduler

SIZES = (1_000, 10_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000, 10_000, 100_000)
VERBS = ("pause", "resume", "cancel")

GOALS: dict[str, tuple[str, float]] = {
    "churn worst call CPU without a GC at 1e5 (ms)": ("<", 20.0),
}


def f() -> None:
    pass


_collections = 0  # cyclic-collector runs so far, any generation (see _count_collections)


def _count_collections(phase: str, info: dict[str, int]) -> None:
    global _collections
    if phase == "stop":
        _collections += 1


class Samples:
    """The duration of each call of one verb, and of those a collection ran in.

    Each call also records the CPU time its thread used: on a shared machine a call
    can wait for a core far longer than it works, and the goal is on the work.
    """

    def __init__(self) -> None:
        self.all: list[float] = []
        self.collected: list[float] = []
        self.worst_cpu = 0.0  # the most CPU a call used, calls with a collection excluded

    def time(self, call: Callable[[str], bool], task_id: str) -> None:
        before = _collections
        c0 = time.thread_time()
        t0 = time.perf_counter()
        call(task_id)
        elapsed = time.perf_counter() - t0
        cpu = time.thread_time() - c0
        if _collections == before:
            self.all.append(elapsed)
            self.worst_cpu = max(self.worst_cpu, cpu)
        else:
            self.collected.append(elapsed)

    def summary(self) -> tuple[float, float, float]:
        """Mean, p99 and max in µs, over every call (collections included)."""
        ordered = sorted(self.all + self.collected)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        return statistics.fmean(ordered) * 1e6, p99 * 1e6, ordered[-1] * 1e6


def registration(n: int) -> tuple[float, float, Scheduler]:
    """µs per task for lldsched and for the floor; the scheduler, for the churn."""
    heap: list[tuple[float, int, int, str]] = []
    gc.collect()
    t0 = time.perf_counter()
    for i in range(n):
        heapq.heappush(heap, (60.0 + i, 1, i, "tick"))
    floor = (time.perf_counter() - t0) / n * 1e6
    del heap
    scheduler = Scheduler(workers=1)
    gc.collect()
    t0 = time.perf_counter()
    for _ in range(n):
        scheduler.schedule("tick", f, FixedRate(60))
    return (time.perf_counter() - t0) / n * 1e6, floor, scheduler


def churn(scheduler: Scheduler, seed: int = 19) -> dict[str, Samples]:
    rng = random.Random(seed)
    ids = [task.id for task in scheduler.tasks()]
    n = len(ids)
    samples = {verb: Samples() for verb in VERBS}
    gc.callbacks.append(_count_collections)
    try:
        for _ in range(n + n // 5):
            task_id = ids[rng.randrange(n)]
            samples["pause"].time(scheduler.pause, task_id)
            samples["resume"].time(scheduler.resume, task_id)
        for task_id in rng.sample(ids, k=n * 3 // 5):
            samples["cancel"].time(scheduler.cancel, task_id)
    finally:
        gc.callbacks.remove(_count_collections)
    return samples


def main(argv: list[str] | None = None) -> dict[str, float]:
    args = sys.argv[1:] if argv is None else argv
    sizes = QUICK_SIZES if "--quick" in args else SIZES
    print("growth: a scheduler that is not started; registration µs/task, churn µs/call")
    print(
        f"  {'n':>9}  {'register':>8} {'floor':>6} {'ratio':>6}   "
        + "   ".join(f"{verb + ' mean/p99/max':>26}" for verb in VERBS)
        + "   calls with a GC (longest ms)"
    )
    results: dict[str, float] = {}
    for n in sizes:
        per_task, floor, scheduler = registration(n)
        samples = churn(scheduler)
        stats = scheduler.queue_stats()
        scheduler.shutdown()
        summaries = {verb: samples[verb].summary() for verb in VERBS}
        collected = [t for s in samples.values() for t in s.collected]
        worst_cpu = max(s.worst_cpu for s in samples.values())
        cells = "   ".join(
            f"{mean:>8.1f} /{p99:>7.1f} /{worst:>8,.0f}" for mean, p99, worst in summaries.values()
        )
        longest = f"{max(collected) * 1e3:,.1f}" if collected else "-"
        print(
            f"  {n:>9,}  {per_task:>8.2f} {floor:>6.2f} {per_task / floor:>5.1f}x   {cells}"
            f"   {len(collected)} ({longest})"
        )
        print(
            f"  {'':>9}  heap after churn: {stats.entries:,} entries, {stats.tombstones:,} "
            f"dead; worst call's CPU time without a GC {worst_cpu * 1e3:.1f} ms"
        )
        size = f"1e{len(str(n)) - 1}"
        results[f"register at {size} (µs/task)"] = per_task
        results[f"register at {size} vs heapq floor (x)"] = per_task / floor
        for verb, (mean, _, worst) in summaries.items():
            results[f"{verb} mean at {size} (µs)"] = mean
            results[f"{verb} max at {size} (ms)"] = worst / 1e3
        results[f"churn worst call CPU without a GC at {size} (ms)"] = worst_cpu * 1e3
    return results


if __name__ == "__main__":
    print(main())
