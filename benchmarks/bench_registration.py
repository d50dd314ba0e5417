"""Registration: a fresh ``CronSchedule`` per task against a fresh ``FixedRate`` per task.

Each task is registered as a user would write it, ``scheduler.schedule("tick", f,
CronSchedule("*/5 * * * *"))``, a new schedule object per task with the same text,
on a scheduler that is never started; the peer is ``FixedRate(60)`` the same way.
Equal expressions share their parse, day tables and most recent block of fires
(issue #19), so the goal is a cron registration within 1.5x of a fixed-rate one.

Printed: µs per task for each variant, each loop on its own scheduler, in
:data:`ROUNDS` interleaved rounds after a warm-up round (``paired_trials``: the order
reversed every other round, the garbage collected before each loop); the ratio is
taken round by round and reported as the median with its spread.  ``--quick``
registers 10,000 tasks instead of 100,000.
"""

from __future__ import annotations

import functools
import gc
import statistics
import sys
from collections.abc import Callable

from host_load import Watch
from paired_trials import Lap, Spread, Stopwatch, interleaved, lap_ratios

from lldsched import CronSchedule, FixedRate, Scheduler
from lldsched.schedules.base import Schedule

N_TASKS = 100_000
QUICK_TASKS = 10_000
WARMUP_TASKS = 10_000
ROUNDS = 3
EXPRESSIONS = ("*/5 * * * *", "0 3 * * 1-5")

GOALS: dict[str, tuple[str, float]] = {
    f"cron {expr!r} vs fixed rate (x)": ("<=", 1.5) for expr in EXPRESSIONS
}


def f() -> None:
    pass


def _fresh_cron(expr: str) -> Callable[[], Schedule]:
    return lambda: CronSchedule(expr)


def _per_task(make: Callable[[], Schedule], n: int) -> Lap:
    """µs per registration of ``n`` tasks on a fresh scheduler, wall and CPU."""
    scheduler = Scheduler(workers=1)
    gc.collect()
    watch = Stopwatch()
    for _ in range(n):
        scheduler.schedule("tick", f, make())
    lap = watch.lap()
    scheduler.shutdown()
    return Lap(wall=lap.wall / n * 1e6, cpu=lap.cpu / n * 1e6)


def main(argv: list[str] | None = None) -> dict[str, float]:
    args = sys.argv[1:] if argv is None else argv
    n = QUICK_TASKS if "--quick" in args else N_TASKS
    makers: dict[str, Callable[[], Schedule]] = {"FixedRate(60)": lambda: FixedRate(60)}
    makers |= {f"CronSchedule({expr!r})": _fresh_cron(expr) for expr in EXPRESSIONS}
    with Watch() as watch:
        samples = interleaved(
            {label: functools.partial(_per_task, make, n) for label, make in makers.items()},
            rounds=ROUNDS,
            warmup={
                label: functools.partial(_per_task, make, WARMUP_TASKS)
                for label, make in makers.items()
            },
        )
    fixed_laps: list[Lap] = samples["FixedRate(60)"]
    fixed = [lap.wall for lap in fixed_laps]
    print(
        f"registration, {n:,} tasks, a fresh schedule each: µs per task, median of "
        f"{ROUNDS} interleaved rounds after a warm-up; ratio to FixedRate round by round"
    )
    print(f"  {'FixedRate(60)':<28}{statistics.median(fixed):>8.2f}")
    results = {"fixed rate (µs/task)": statistics.median(fixed)}
    for expr in EXPRESSIONS:
        cron_laps: list[Lap] = samples[f"CronSchedule({expr!r})"]
        cron = [lap.wall for lap in cron_laps]
        versus, versus_cpu = lap_ratios(cron_laps, fixed_laps)
        print(f"  {f'CronSchedule({expr!r})':<28}{statistics.median(cron):>8.2f}   {versus.text()}")
        print(f"  {'... in CPU time':<36}{versus_cpu.text()}")
        results[f"cron {expr!r} (µs/task)"] = statistics.median(cron)
        results |= Spread.both(f"cron {expr!r} vs fixed rate (x)", versus, versus_cpu)
    print(f"  {watch.summary()}")
    return results


if __name__ == "__main__":
    print(main())
