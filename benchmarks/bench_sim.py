"""Simulation: task-runs per second through the full state machine, lldsched vs SimPy.

The workload (issue 4): ten tasks on four workers for 30 simulated days

* fixed rate 60 s (20 s runs), 300 s (400 s runs: overruns), 900 s (100 s),
  3600 s (4,000 s runs: overruns), all SKIP;
* fixed delay 60 s (10 s runs) and 900 s (30 s runs);
* four every-minute crons (5 s runs, and one of 90 s: overruns).

lldsched runs it on :class:`~lldsched.sim.Simulation`: every run goes through the
core state machine (begin, record, reschedule), the shared heap with its
tombstones, and the schedule objects.  SimPy runs the same model the way SimPy is
written: a process per task and a ``Resource(4)``; each process waits for its
slot, requests a worker, holds it for the duration, releases it, and computes its
next slot with the same rules (SKIP to the first slot not before the finish; the
delay from the finish; the same :class:`~lldsched.CronSchedule` object for the
cron fires, so both sides do the same cron arithmetic).  SimPy keeps no records,
no statuses and no history; lldsched does.

Figures: runs per second of wall time for each (best of :data:`REPEATS`), the
ratio, the same for lldsched with an ``InMemoryTaskStore`` and one listener, and a
year of one minutely cron (525,600 runs) in seconds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Generator
from typing import Any

from lldsched import CronSchedule, FixedDelay, FixedRate, InMemoryTaskStore, Schedule, TaskEvent
from lldsched.sim import Simulation, fixed

DAYS = 30
WORKERS = 4
REPEATS = 3
START = 1_767_571_200.0  # 2026-01-05 00:00 UTC, a Monday

GOALS: dict[str, tuple[str, float]] = {
    "sim runs/s vs SimPy (x)": (">=", 3.0),
    "year of a minutely cron (s)": ("<", 2.0),
}

MINUTELY = CronSchedule("* * * * *")
WORKLOAD: list[tuple[str, Schedule, float]] = [
    ("rate-60", FixedRate(60), 20.0),
    ("rate-300", FixedRate(300), 400.0),
    ("rate-900", FixedRate(900), 100.0),
    ("rate-3600", FixedRate(3600), 4000.0),
    ("delay-60", FixedDelay(60), 10.0),
    ("delay-900", FixedDelay(900), 30.0),
    ("cron-a", MINUTELY, 5.0),
    ("cron-b", MINUTELY, 5.0),
    ("cron-c", MINUTELY, 5.0),
    ("cron-d", MINUTELY, 90.0),
]


def run_lldsched(
    with_store_and_listener: bool = False,
    *,
    workload: list[tuple[str, Schedule, float]] = WORKLOAD,
    days: float = DAYS,
    workers: int = WORKERS,
    timer: Callable[[], float] = time.perf_counter,
) -> tuple[int, float]:
    """Runs made and seconds ``sim.run_for`` took (by ``timer``: bench_growth counts CPU
    time); ``workload``, ``days`` and ``workers`` as given (bench_growth runs the workload
    repeated k / 10 times).  Registration and reading the records back are not timed."""
    listeners: list[Callable[[TaskEvent], None]] = []
    store = None
    if with_store_and_listener:
        store = InMemoryTaskStore()
        listeners.append(lambda event: None)
    sim = Simulation(workers=workers, start=START, store=store, listeners=listeners)
    for name, schedule, duration in workload:
        sim.schedule(name, schedule, duration=fixed(duration))
    began = timer()
    sim.run_for(days * 86400)
    elapsed = timer() - began
    return sum(record.outcome.ran for record in sim.records()), elapsed  # runs, not skips


def run_simpy(
    *,
    workload: list[tuple[str, Schedule, float]] = WORKLOAD,
    days: float = DAYS,
    workers: int = WORKERS,
    timer: Callable[[], float] = time.perf_counter,
) -> tuple[int, float]:
    """Runs made and seconds ``env.run`` took (by ``timer``) on the same model on SimPy:
    the processes are made before the clock starts, as lldsched's tasks are registered."""
    import simpy

    env = simpy.Environment(initial_time=START)
    pool = simpy.Resource(env, capacity=workers)
    runs = [0]

    def work(duration: float) -> Generator[Any, Any, float]:
        with pool.request() as request:
            yield request
            yield env.timeout(duration)
        runs[0] += 1
        return float(env.now)

    def fixed_rate(period: float, duration: float) -> Generator[Any, Any, None]:
        slot = env.now
        while True:
            if slot > env.now:
                yield env.timeout(slot - env.now)
            finished = yield env.process(work(duration))
            following = slot + period
            if following < finished:  # SKIP: the first slot not before the finish
                following = slot + math.ceil((finished - slot) / period) * period
            slot = following

    def fixed_delay(delay: float, duration: float) -> Generator[Any, Any, None]:
        while True:
            finished = yield env.process(work(duration))
            yield env.timeout(finished + delay - env.now)

    def cron(schedule: CronSchedule, duration: float) -> Generator[Any, Any, None]:
        due = schedule.next_after(env.now)
        while due is not None:
            yield env.timeout(due - env.now)
            finished = yield env.process(work(duration))
            due = schedule.next_after(finished)

    for _, schedule, duration in workload:
        if isinstance(schedule, FixedRate):
            env.process(fixed_rate(schedule.period, duration))
        elif isinstance(schedule, FixedDelay):
            env.process(fixed_delay(schedule.delay, duration))
        else:
            assert isinstance(schedule, CronSchedule)
            env.process(cron(schedule, duration))
    began = timer()
    env.run(until=START + days * 86400)
    return runs[0], timer() - began


def best_rate(measure: Callable[[], tuple[int, float]]) -> tuple[int, float]:
    results = [measure() for _ in range(REPEATS)]
    runs = results[0][0]
    return runs, max(count / seconds for count, seconds in results)


def year_of_minutely_cron() -> tuple[int, float]:
    sim = Simulation(workers=1, start=START)
    sim.schedule("minutely", MINUTELY)
    began = time.perf_counter()
    sim.run_for(365 * 86400)
    elapsed = time.perf_counter() - began
    return sum(record.outcome.ran for record in sim.records()), elapsed


def main() -> dict[str, float]:
    ours_runs, ours = best_rate(run_lldsched)
    full_runs, full = best_rate(lambda: run_lldsched(with_store_and_listener=True))
    simpy_runs, simpy_rate = best_rate(run_simpy)
    year_runs, year_seconds = min(
        (year_of_minutely_cron() for _ in range(REPEATS)), key=lambda result: result[1]
    )
    print(f"workload: {len(WORKLOAD)} tasks, {WORKERS} workers, {DAYS} simulated days")
    print(f"  lldsched Simulation           {ours_runs:8d} runs  {ours:12,.0f} runs/s")
    print(f"  ... with store and listener   {full_runs:8d} runs  {full:12,.0f} runs/s")
    print(f"  SimPy (process per task)      {simpy_runs:8d} runs  {simpy_rate:12,.0f} runs/s")
    print(f"  ratio: {ours / simpy_rate:.1f}x (store and listener: {full / simpy_rate:.1f}x)")
    print(f"year of a minutely cron: {year_runs} runs in {year_seconds:.2f} s")
    return {
        "sim runs/s": ours,
        "SimPy runs/s": simpy_rate,
        "sim runs/s vs SimPy (x)": ours / simpy_rate,
        "sim runs/s vs SimPy, store + listener (x)": full / simpy_rate,
        "year of a minutely cron (s)": year_seconds,
    }


if __name__ == "__main__":
    main()
