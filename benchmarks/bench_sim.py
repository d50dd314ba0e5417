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
slot, requests a worker, holds it for the duration, releases it, records the run
(task, slot, start, finish: a tuple in a list, what a SimPy user keeps to read the
outcome) and computes its next slot with the same rules (SKIP to the first slot
not before the finish; the delay from the finish; the first cron fire not before
the finish, found with the same :class:`~lldsched.CronSchedule` object, so both
sides do the same cron arithmetic).  The request and the hold are written inline in
the task's process (``yield from``), as SimPy is written; until December 2026 each run
was a process of its own (``yield env.process(work())``), which cost SimPy a process, its
start event and its end event per run.  lldsched also keeps statuses and a history
per task, which SimPy does not.

Figures: runs per second for each, the ratio, the same for lldsched with an
``InMemoryTaskStore`` and one listener, and a year of one minutely cron (525,600
runs) in seconds.  All four run in :data:`ROUNDS` interleaved rounds after a short
warm-up round (``paired_trials``: the order reversed every other round, the
garbage collected before each run); the ratios are taken round by round and
reported as the median with its spread; the year's seconds as their median and
spread.  Only the run itself is timed (``sim.run_for``, ``env.run``), in wall
time for the headlines and in CPU time as well (``paired_trials.Stopwatch``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Generator
from typing import Any, NamedTuple

from host_load import Watch
from paired_trials import Lap, Spread, Stopwatch, interleaved, ratios

from lldsched import CronSchedule, FixedDelay, FixedRate, InMemoryTaskStore, Schedule, TaskEvent
from lldsched.core.recordlog import MISFIRES
from lldsched.sim import Simulation, fixed

DAYS = 30
WORKERS = 4
ROUNDS = 5
WARMUP_DAYS = 2.0
YEAR_DAYS = 365.0
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


class Timed(NamedTuple):
    """One timed run: the runs it made (not skipped slots), wall and CPU seconds."""

    runs: int
    seconds: float
    cpu: float


def runs_of(sim: Simulation) -> int:
    """The runs a simulation made: its records whose outcome ran (skipped slots are
    recorded too, and are not runs), counted on the record log's misfire column."""
    misfires = sim.record_log().columns().numbers["misfire"]
    assert isinstance(misfires, bytearray)
    ran = [index for index, outcome in enumerate(MISFIRES) if outcome is None or outcome.ran]
    return sum(misfires.count(index) for index in ran)


def _timed(run: Callable[[], object]) -> Lap:
    watch = Stopwatch()
    run()
    return watch.lap()


def run_lldsched(
    with_store_and_listener: bool = False,
    *,
    workload: list[tuple[str, Schedule, float]] = WORKLOAD,
    days: float = DAYS,
    workers: int = WORKERS,
) -> Timed:
    """The workload on a :class:`Simulation` for ``days``; ``workload`` and ``workers`` as
    given (bench_growth runs the workload repeated k / 10 times).  Only ``sim.run_for`` is
    timed: not the registration, not the count of runs after."""
    listeners: list[Callable[[TaskEvent], None]] = []
    store = None
    if with_store_and_listener:
        store = InMemoryTaskStore()
        listeners.append(lambda event: None)
    sim = Simulation(workers=workers, start=START, store=store, listeners=listeners)
    for name, schedule, duration in workload:
        sim.schedule(name, schedule, duration=fixed(duration))
    lap = _timed(lambda: sim.run_for(days * 86400))
    return Timed(runs=runs_of(sim), seconds=lap.wall, cpu=lap.cpu)


def run_simpy(
    *,
    workload: list[tuple[str, Schedule, float]] = WORKLOAD,
    days: float = DAYS,
    workers: int = WORKERS,
) -> Timed:
    """The same model on SimPy; only ``env.run`` is timed: the processes are made before
    the clock starts, as lldsched's tasks are registered."""
    import simpy

    env = simpy.Environment(initial_time=START)
    pool = simpy.Resource(env, capacity=workers)
    log: list[tuple[str, float, float, float]] = []  # (task, slot, started, finished)

    def work(name: str, slot: float, duration: float) -> Generator[Any, Any, float]:
        with pool.request() as request:
            yield request
            started = env.now
            yield env.timeout(duration)
        log.append((name, slot, started, env.now))
        return float(env.now)

    def fixed_rate(name: str, period: float, duration: float) -> Generator[Any, Any, None]:
        slot = env.now
        while True:
            if slot > env.now:
                yield env.timeout(slot - env.now)
            finished = yield from work(name, slot, duration)
            following = slot + period
            if following < finished:  # SKIP: the first slot not before the finish
                following = slot + math.ceil((finished - slot) / period) * period
            slot = following

    def fixed_delay(name: str, delay: float, duration: float) -> Generator[Any, Any, None]:
        while True:
            finished = yield from work(name, env.now, duration)
            yield env.timeout(finished + delay - env.now)

    def cron(name: str, schedule: CronSchedule, duration: float) -> Generator[Any, Any, None]:
        due = schedule.next_after(env.now)
        while due is not None:
            yield env.timeout(due - env.now)
            finished = yield from work(name, due, duration)
            following = schedule.next_after(due)
            if following is not None and following < finished:
                # the first fire not before the finish (a fire at the finish is due)
                following = schedule.next_after(math.nextafter(finished, -math.inf))
            due = following

    for name, schedule, duration in workload:
        if isinstance(schedule, FixedRate):
            env.process(fixed_rate(name, schedule.period, duration))
        elif isinstance(schedule, FixedDelay):
            env.process(fixed_delay(name, schedule.delay, duration))
        else:
            assert isinstance(schedule, CronSchedule)
            env.process(cron(name, schedule, duration))
    lap = _timed(lambda: env.run(until=START + days * 86400))
    return Timed(runs=len(log), seconds=lap.wall, cpu=lap.cpu)


def year_of_minutely_cron(days: float = YEAR_DAYS) -> Timed:
    sim = Simulation(workers=1, start=START)
    sim.schedule("minutely", MINUTELY)
    lap = _timed(lambda: sim.run_for(days * 86400))
    return Timed(runs=runs_of(sim), seconds=lap.wall, cpu=lap.cpu)


def main() -> dict[str, float]:
    with Watch() as watch:
        samples = interleaved(
            {
                "ours": run_lldsched,
                "full": lambda: run_lldsched(with_store_and_listener=True),
                "simpy": run_simpy,
                "year": year_of_minutely_cron,
            },
            rounds=ROUNDS,
            warmup={
                "ours": lambda: run_lldsched(days=WARMUP_DAYS),
                "full": lambda: run_lldsched(with_store_and_listener=True, days=WARMUP_DAYS),
                "simpy": lambda: run_simpy(days=WARMUP_DAYS),
                "year": lambda: year_of_minutely_cron(days=WARMUP_DAYS),
            },
        )
    ours: list[Timed] = samples["ours"]
    full: list[Timed] = samples["full"]
    simpy: list[Timed] = samples["simpy"]
    year: list[Timed] = samples["year"]

    def rates(timed: list[Timed], cpu: bool = False) -> list[float]:
        return [t.runs / (t.cpu if cpu else t.seconds) for t in timed]

    versus = Spread.of(ratios(rates(ours), rates(simpy)))
    full_versus = Spread.of(ratios(rates(full), rates(simpy)))
    versus_cpu = Spread.of(ratios(rates(ours, cpu=True), rates(simpy, cpu=True)))
    year_seconds = Spread.of([t.seconds for t in year])
    year_cpu = Spread.of([t.cpu for t in year])
    print(
        f"workload: {len(WORKLOAD)} tasks, {WORKERS} workers, {DAYS} simulated days; "
        f"{ROUNDS} interleaved rounds after a warm-up (median, lowest..highest)"
    )
    for label, timed in (
        ("lldsched Simulation", ours),
        ("... with store and listener", full),
        ("SimPy (process per task)", simpy),
    ):
        rate = sorted(rates(timed))
        print(
            f"  {label:<29} {timed[0].runs:8d} runs  {statistics.median(rate):12,.0f} runs/s "
            f"({rate[0]:,.0f}..{rate[-1]:,.0f})"
        )
    print("  per-round ratios, median (lowest..highest, middle half):")
    print(f"    lldsched / SimPy                      {versus.text()}")
    print(f"    store and listener / SimPy            {full_versus.text()}")
    print(f"    lldsched / SimPy in CPU time          {versus_cpu.text()}")
    print(
        f"year of a minutely cron: {year[0].runs} runs in {year_seconds.text(' s')}; "
        f"CPU {year_cpu.text(' s')}"
    )
    print(f"  {watch.summary()}")
    return {
        "sim runs/s": statistics.median(rates(ours)),
        "SimPy runs/s": statistics.median(rates(simpy)),
        **Spread.both("sim runs/s vs SimPy (x)", versus, versus_cpu),
        "sim runs/s vs SimPy, store + listener (x)": full_versus.median,
        **Spread.both("year of a minutely cron (s)", year_seconds, year_cpu),
    }


if __name__ == "__main__":
    main()
