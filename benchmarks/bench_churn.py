"""Churn: the worst single pause, resume and cancel at 1e5 (and 1e6) registered tasks.

A scheduler that is never started holds ``n`` fixed-rate tasks.  Then, timed one
call at a time:

* ``n + n // 5`` pause/resume pairs on tasks picked at random (each pause leaves a
  tombstone in the heap, each resume pushes a new entry), enough for the heap's
  tombstones to pass any compaction threshold at least once;
* cancels of 60 % of the tasks, picked at random.

Calls inside which the cyclic collector ran a full (generation-2) collection are
counted apart: at 1e6 tasks one costs about 0.1 s whatever the queue does.

Printed per size: mean, p99 and max of a pause, a resume and a cancel, in µs.  The
max is the figure a compaction done inside one call shows (issue #19: 3.3 s for a
pause/resume pair at 1e6 when the whole heap was rebuilt under the lock).

Usage: ``python benchmarks/bench_churn.py [--quick]`` (``--quick``: 1e5 only).
"""

from __future__ import annotations

import gc
import random
import statistics
import sys
import time
from collections.abc import Callable

from lldsched import FixedRate, Scheduler

SIZES = (100_000, 1_000_000)
QUICK_SIZES = (100_000,)

GOALS: dict[str, tuple[str, float]] = {
    "churn worst call at 1e5 (ms)": ("<", 20.0),
}


def f() -> None:
    pass


_full_collections = 0  # generation-2 collections so far (see _count_collections)


def _count_collections(phase: str, info: dict[str, int]) -> None:
    global _full_collections
    if phase == "stop" and info["generation"] == 2:
        _full_collections += 1


def _timed(
    call: Callable[[str], bool], task_id: str, into: list[float], collected: list[float]
) -> None:
    """Time one call; a call a full collection ran inside also goes to ``collected``."""
    before = _full_collections
    t0 = time.perf_counter()
    call(task_id)
    elapsed = time.perf_counter() - t0
    into.append(elapsed)
    if _full_collections != before:
        collected.append(elapsed)


def _summary(samples: list[float]) -> tuple[float, float, float]:
    """Mean, p99 and max, in µs."""
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.fmean(ordered) * 1e6, p99 * 1e6, ordered[-1] * 1e6


def churn(n: int, seed: int = 19) -> dict[str, tuple[float, float, float]]:
    rng = random.Random(seed)
    scheduler = Scheduler(workers=1)
    ids = [scheduler.schedule("tick", f, FixedRate(60)).id for _ in range(n)]
    pauses: list[float] = []
    resumes: list[float] = []
    cancels: list[float] = []
    collected: list[float] = []
    gc.callbacks.append(_count_collections)
    for _ in range(n + n // 5):
        task_id = ids[rng.randrange(n)]
        _timed(scheduler.pause, task_id, pauses, collected)
        _timed(scheduler.resume, task_id, resumes, collected)
    for task_id in rng.sample(ids, k=n * 3 // 5):
        _timed(scheduler.cancel, task_id, cancels, collected)
    gc.callbacks.remove(_count_collections)
    stats = scheduler.queue_stats()
    print(f"  n={n:,}: heap after churn {stats.entries:,} entries, {stats.tombstones:,} tombstones")
    if collected:
        print(
            f"  n={n:,}: {len(collected)} calls hosted a full GC collection, the longest "
            f"{max(collected) * 1e3:,.1f} ms (the collector's cost, not the queue's)"
        )
    scheduler.shutdown()
    return {"pause": _summary(pauses), "resume": _summary(resumes), "cancel": _summary(cancels)}


def main(argv: list[str] | None = None) -> dict[str, float]:
    args = sys.argv[1:] if argv is None else argv
    sizes = QUICK_SIZES if "--quick" in args else SIZES
    print("churn: one call at a time on a scheduler that is not started (µs)")
    print(f"  {'n':>10}  {'verb':<7}{'mean':>9}{'p99':>9}{'max':>12}")
    results: dict[str, float] = {}
    for n in sizes:
        figures = churn(n)
        for verb, (mean, p99, worst) in figures.items():
            print(f"  {n:>10,}  {verb:<7}{mean:>9.1f}{p99:>9.1f}{worst:>12,.0f}")
        exponent = len(str(n)) - 1
        results[f"churn worst call at 1e{exponent} (ms)"] = (
            max(worst for _, _, worst in figures.values()) / 1e3
        )
        results[f"churn mean pause at 1e{exponent} (µs)"] = figures["pause"][0]
        results[f"churn mean cancel at 1e{exponent} (µs)"] = figures["cancel"][0]
    return results


if __name__ == "__main__":
    print(main())
