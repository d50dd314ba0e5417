"""Frames and plots: ``to_frame`` on a million records, ``gantt`` on 100,000 runs.

* ``to_frame``: a million synthetic records (ten tasks on four workers, every
  seventh attempt failed, every eleventh timed out, with error text) turned into
  the typed frame; best of :data:`REPEATS`.  Building the records is not timed.
* ``gantt``: the first 100,000 runs of the built-in scenario
  (``python -m lldsched simulate``) over 61 simulated days on four workers, drawn
  by worker; timed to the finished ``Figure`` and again including rendering it to
  a 1100 x 340 PNG on the Agg canvas; best of :data:`REPEATS`.

* ``utilisation_plot``: a year of the built-in scenario on four workers (730,000
  records) at ``freq="1min"``, rendered to PNG (:func:`utilisation_year`): process CPU
  seconds, best of :data:`REPEATS`, and the peak of the memory ``tracemalloc`` traced
  while drawing it once (numpy's and Python's allocations; not Agg's own buffers).

* every view of a busy service's records, at :data:`SIZES` (10,000, 100,000 and
  1,000,000 records): :func:`service`'s 720 tasks (the built-in scenario's ten, 72
  times, on 288 workers) run until they hold ``n`` records, a million in about a week
  (:func:`views`).  Each view's process CPU time, best of :data:`REPEATS` (CPU time: on
  a shared two-core machine the wall clock of one call swung 3-6x with the load),
  and the peak of the memory ``tracemalloc`` traced during one more call, as a
  multiple of the frame's own (its columns' buffers: 116 MB at a million records);
  the records and the frame are built untimed.  docs/PERFORMANCE.md, "Views at a
  million records", has the table before and after they were made column-wise.

Run: ``.venv/bin/python benchmarks/bench_views.py`` (``--quick``: sizes up to 100,000).
"""

from __future__ import annotations

import argparse
import io
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence

from lldsched import CronSchedule, ExecutionRecord, FixedRate, Priority, RetryPolicy
from lldsched.sim import Simulation
from lldsched.sim.models import fixed, lognormal, uniform
from lldsched.sim.scenario import SCENARIO_START, build_scenario
from lldsched.views.frames import mean_busy, schedules_of, task_summary, to_frame, utilisation
from lldsched.views.plots import (
    gantt,
    lateness_distribution,
    lateness_over_time,
    utilisation_plot,
)
from lldsched.views.report import format_summary, summarize
from lldsched.views.tables import readable

RECORDS = 1_000_000
RUNS = 100_000
REPEATS = 3
START = 1_767_571_200.0  # 2026-01-05 00:00 UTC

SIZES = (10_000, 100_000, 1_000_000)
COPIES = 72  # of the scenario's ten tasks: 720 tasks, about a million records a week

GOALS: dict[str, tuple[str, float]] = {
    "to_frame, 1M records (s)": ("<", 3.0),
    "gantt, 100k runs, rendered (s)": ("<", 5.0),
    # At the largest size measured: a million records, 100,000 with --quick.
    "task_summary with schedules, largest size (CPU s)": ("<", 2.0),
    "readable in Europe/Berlin, largest size (CPU s)": ("<", 2.0),
}


def synthetic_records(count: int) -> list[ExecutionRecord]:
    records = []
    for i in range(count):
        due = START + i * 0.5
        failed = i % 7 == 0
        records.append(
            ExecutionRecord(
                f"task-{i % 10}", f"name-{i % 10}", 2 if i % 13 == 0 else 1, due, due, i % 4,
                due + 0.1, due + 2.3, not failed, "RuntimeError: boom" if failed else None,
                i % 11 == 0,
            )
        )  # fmt: skip
    return records


def best(measure: Callable[[], object], clock: Callable[[], float] = time.perf_counter) -> float:
    times = []
    for _ in range(REPEATS):
        began = clock()
        measure()
        times.append(clock() - began)
    return min(times)


def utilisation_year() -> tuple[float, float]:
    """A teacher's replay of a year: :func:`utilisation_plot` of the built-in scenario
    (four workers, 365 simulated days) at ``freq="1min"``, rendered to PNG.  Process CPU
    seconds, best of :data:`REPEATS`, and the peak megabytes ``tracemalloc`` traced
    while drawing it once.  The simulation and the frame are not timed."""
    sim = build_scenario(workers=4)
    sim.run_for(365 * 86400)
    frame = to_frame(sim)

    def draw() -> None:
        utilisation_plot(frame, 4, "1min").savefig(io.BytesIO(), format="png", dpi=100)

    seconds = best(draw, time.process_time)
    tracemalloc.start()
    try:
        draw()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return seconds, peak / 1e6


def service(copies: int = COPIES) -> Simulation:
    """The built-in scenario's ten tasks (``lldsched/sim/scenario.py``: hourly reports,
    a compaction that overruns, a flaky import with retries, a heartbeat, a nightly
    backup with a timeout), ``copies`` times, on four workers a copy."""
    sim = Simulation(workers=4 * copies, start=SCENARIO_START, seed=0)
    for c in range(copies):
        for region in ("emea", "amer", "apac", "latam", "anz", "india"):
            sim.schedule(
                f"report-{region}-{c}", CronSchedule("0 * * * *"), duration=uniform(60, 600)
            )
        sim.schedule(f"compaction-{c}", FixedRate(300), duration=lognormal(median=240, sigma=0.4))
        sim.schedule(
            f"import-{c}", FixedRate(900, start_delay=120), duration=uniform(20, 90), fails=0.25,
            retry=RetryPolicy(max_attempts=4, initial_backoff=30),
        )  # fmt: skip
        sim.schedule(f"heartbeat-{c}", FixedRate(60), duration=fixed(1), priority=Priority.HIGH)
        sim.schedule(
            f"nightly-backup-{c}", CronSchedule("0 2 * * *"), duration=uniform(1800, 3600),
            timeout=3300, retry=RetryPolicy.never(),
        )  # fmt: skip
    return sim


def traced_peak(measure: Callable[[], object]) -> float:
    """The bytes ``tracemalloc`` traced at the peak of one call of ``measure``."""
    tracemalloc.start()
    try:
        measure()
        return float(tracemalloc.get_traced_memory()[1])
    finally:
        tracemalloc.stop()


def views(n: int) -> dict[str, tuple[float, float]]:
    """CPU seconds of each view of :func:`service`'s first ``n`` records (a few hundred
    more: it runs ten simulated minutes at a time), best of :data:`REPEATS`, and the
    peak traced during one more call as a multiple of the frame's columns' buffers."""
    sim = service()
    while len(sim.record_log()) < n:
        sim.run_for(600)
    frame, schedules, records = to_frame(sim), schedules_of(sim), sim.records()
    rows = summarize(records, schedules)
    workers = 4 * COPIES

    def drawn(figure: object) -> None:
        figure.savefig(io.BytesIO(), format="png", dpi=100)  # type: ignore[attr-defined]

    measures: dict[str, Callable[[], object]] = {
        "to_frame(sim)": lambda: to_frame(sim),
        "task_summary(frame, schedules)": lambda: task_summary(frame, schedules),
        "task_summary(frame)": lambda: task_summary(frame),
        "readable(frame)": lambda: readable(frame),
        'readable(frame, tz="Europe/Berlin")': lambda: readable(frame, tz="Europe/Berlin"),
        "utilisation(frame, 288)": lambda: utilisation(frame, workers),
        "mean_busy(frame, 288)": lambda: mean_busy(frame, workers),
        "sim.records()": sim.records,
        "summarize(records, schedules)": lambda: summarize(records, schedules),
        "format_summary(rows)": lambda: format_summary(rows),
        "gantt(frame), rendered": lambda: drawn(gantt(frame)),
        "lateness_over_time(frame), rendered": lambda: drawn(lateness_over_time(frame)),
        "lateness_distribution(frame), rendered": lambda: drawn(lateness_distribution(frame)),
        "utilisation_plot(frame, 288), rendered": lambda: drawn(utilisation_plot(frame, workers)),
    }
    size = float(frame.memory_usage(deep=False).sum())
    return {
        name: (best(measure, time.process_time), traced_peak(measure) / size)
        for name, measure in measures.items()
    }


def main(argv: Sequence[str] = ()) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="view sizes up to 100,000")
    args = parser.parse_args(list(argv))  # not sys.argv: run_all calls main() in its child
    sizes = [n for n in SIZES if n <= 100_000] if args.quick else list(SIZES)

    records = synthetic_records(RECORDS)
    frame_seconds = best(lambda: to_frame(records))
    records.clear()

    sim = build_scenario(workers=4)
    sim.run_for(61 * 86400)
    runs = to_frame(sim).iloc[:RUNS]
    assert len(runs) == RUNS, len(runs)
    figure_seconds = best(lambda: gantt(runs))
    rendered_seconds = best(lambda: gantt(runs).savefig(io.BytesIO(), format="png", dpi=100))

    print(f"to_frame: {RECORDS:,} records in {frame_seconds:.2f} s")
    print(f"gantt: {RUNS:,} runs, figure in {figure_seconds:.2f} s, "
          f"rendered to PNG in {rendered_seconds:.2f} s")  # fmt: skip
    year_seconds, year_peak = utilisation_year()
    print(f"utilisation_plot: a year at freq='1min', rendered in {year_seconds:.2f} CPU s, "
          f"{year_peak:.0f} MB traced at the peak")  # fmt: skip
    results = {
        "to_frame, 1M records (s)": frame_seconds,
        "gantt, 100k runs, figure (s)": figure_seconds,
        "gantt, 100k runs, rendered (s)": rendered_seconds,
        "utilisation_plot, a year of minutes, rendered (CPU s)": year_seconds,
        "utilisation_plot, a year of minutes, traced peak (MB)": year_peak,
    }
    measured = {n: views(n) for n in sizes}
    print(f"views of a {COPIES * 10}-task service, CPU seconds (best of {REPEATS}) and the")
    print("traced peak of one call as a multiple of the frame's columns' buffers:")
    print(f"  {'view':<40}" + "".join(f"{n:>12,}{'':>8}" for n in sizes))
    for name in measured[sizes[0]]:
        print(
            f"  {name:<40}"
            + "".join(f"{measured[n][name][0]:>12.3f}{measured[n][name][1]:>7.2f}x" for n in sizes)
        )
    largest = {name: cpu for name, (cpu, _) in measured[sizes[-1]].items()}
    results["task_summary with schedules, largest size (CPU s)"] = largest[
        "task_summary(frame, schedules)"
    ]
    results["readable in Europe/Berlin, largest size (CPU s)"] = largest[
        'readable(frame, tz="Europe/Berlin")'
    ]
    results["summarize, largest size (CPU s)"] = largest["summarize(records, schedules)"]
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
