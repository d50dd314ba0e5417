"""Registration: a fresh ``CronSchedule`` per task against a fresh ``FixedRate`` per task.

Each task is registered as a user would write it, ``scheduler.schedule("tick", f,
CronSchedule("*/5 * * * *"))``, a new schedule object per task with the same text,
on a scheduler that is never started; the peer is ``FixedRate(60)`` the same way.
Equal expressions share their parse, day tables and most recent block of fires
(issue #19), so the goal is a cron registration within 1.5x of a fixed-rate one.

Printed: µs per task for each variant (best of :data:`RUNS` loops, each on its own
scheduler) and the ratio.  ``--quick`` registers 10,000 tasks instead of 100,000.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable

from lldsched import CronSchedule, FixedRate, Scheduler
from lldsched.schedules.base import Schedule

N_TASKS = 100_000
QUICK_TASKS = 10_000
RUNS = 3
EXPRESSIONS = ("*/5 * * * *", "0 3 * * 1-5")

GOALS: dict[str, tuple[str, float]] = {
    f"cron {expr!r} vs fixed rate (x)": ("<=", 1.5) for expr in EXPRESSIONS
}


def f() -> None:
    pass


def _fresh_cron(expr: str) -> Callable[[], Schedule]:
    return lambda: CronSchedule(expr)


def _per_task(make: Callable[[], Schedule], n: int) -> float:
    """Best µs per registration over RUNS fresh schedulers."""
    best = float("inf")
    for _ in range(RUNS):
        scheduler = Scheduler(workers=1)
        gc.collect()
        t0 = time.perf_counter()
        for _ in range(n):
            scheduler.schedule("tick", f, make())
        best = min(best, (time.perf_counter() - t0) / n)
        scheduler.shutdown()
    return best * 1e6


def main(argv: list[str] | None = None) -> dict[str, float]:
    args = sys.argv[1:] if argv is None else argv
    n = QUICK_TASKS if "--quick" in args else N_TASKS
    fixed = _per_task(lambda: FixedRate(60), n)
    print(f"registration, {n:,} tasks, a fresh schedule each (µs per task)")
    print(f"  {'FixedRate(60)':<28}{fixed:>8.2f}")
    results = {"fixed rate (µs/task)": fixed}
    for expr in EXPRESSIONS:
        cron = _per_task(_fresh_cron(expr), n)
        print(f"  {f'CronSchedule({expr!r})':<28}{cron:>8.2f}   {cron / fixed:.2f}x")
        results[f"cron {expr!r} (µs/task)"] = cron
        results[f"cron {expr!r} vs fixed rate (x)"] = cron / fixed
    return results


if __name__ == "__main__":
    print(main())
