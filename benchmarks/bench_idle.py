"""Idle CPU: a started scheduler with 1,000 tasks parked a day out should cost nothing.

Process CPU time (``time.process_time``, every thread of the process) and the
number of voluntary context switches (``getrusage``; a polling thread shows up
here first) are measured over :data:`WINDOW` seconds of wall time, twice: first
while the interpreter only sleeps (no scheduler exists yet), then while a started
scheduler (4 workers, default config) holds 1,000 ``FixedRate`` tasks whose first
run is a day away.  The headline is the difference.
"""

from __future__ import annotations

import resource
import time

from lldsched import FixedRate, Scheduler

WINDOW = 3.0
TASKS = 1_000
WORKERS = 4
SETTLE = 0.2  # let the threads park before the window opens

GOALS: dict[str, tuple[str, float]] = {
    # "indistinguishable": within 1 ms of CPU over 3 s (0.03 % of one core)
    "idle excess CPU (ms / 3 s)": ("<=", 1.0),
}


def _never_runs() -> None:
    raise AssertionError("a task parked a day out ran")


def _window() -> tuple[float, int]:
    """CPU milliseconds and voluntary context switches over WINDOW seconds of sleep."""
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    cpu0 = time.process_time()
    time.sleep(WINDOW)
    cpu1 = time.process_time()
    usage1 = resource.getrusage(resource.RUSAGE_SELF)
    return (cpu1 - cpu0) * 1e3, usage1.ru_nvcsw - usage0.ru_nvcsw


def main() -> dict[str, float]:
    base_cpu, base_switches = _window()
    scheduler = Scheduler(workers=WORKERS)
    for _ in range(TASKS):
        scheduler.schedule("parked", _never_runs, FixedRate(60, start_delay=86_400))
    with scheduler:
        time.sleep(SETTLE)
        idle_cpu, idle_switches = _window()
    results = {
        "idle CPU, sleep only (ms / 3 s)": base_cpu,
        "idle CPU, scheduler (ms / 3 s)": idle_cpu,
        "idle excess CPU (ms / 3 s)": idle_cpu - base_cpu,
    }
    print(f"idle: {TASKS:,} tasks parked a day out, {WORKERS} workers, {WINDOW:g} s of wall time")
    print(f"  interpreter that only sleeps   {base_cpu:7.3f} ms CPU  {base_switches:4d} switches")
    print(f"  started scheduler              {idle_cpu:7.3f} ms CPU  {idle_switches:4d} switches")
    print(f"  excess                         {idle_cpu - base_cpu:7.3f} ms CPU")
    return results


if __name__ == "__main__":
    main()
