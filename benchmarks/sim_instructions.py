"""Machine instructions per simulated run, counted with callgrind (repeatable under load).

    python benchmarks/sim_instructions.py            # both workloads, about two minutes
    python benchmarks/sim_instructions.py sim        # bench_sim's workload only
    python benchmarks/sim_instructions.py sim100 simpy100  # bench_growth's k = 100 row
    python benchmarks/sim_instructions.py --one sim 2   # one measured process (what
                                                     # the driver runs under valgrind)

Wall-clock figures on a shared machine move with its load; instruction counts do
not.  Each workload is run in two fresh interpreters under ``valgrind
--tool=callgrind``, for a short and a longer stretch of simulated time, and the
difference in instructions is divided by the difference in runs: start-up, imports
and registration cancel out, what is left is the cost of one run in steady state.
The garbage collector is off and ``PYTHONHASHSEED=0`` in both.

* ``sim``: ``bench_sim.py``'s workload (ten tasks, four workers), built as
  ``bench_sim.run_lldsched`` builds it, for 1 and 3 simulated days;
* ``simfull``: ``sim``'s workload with an ``InMemoryTaskStore`` and one no-op listener,
  as ``bench_sim.run_lldsched(with_store_and_listener=True)`` builds it, for 1 and 3
  days; not run unless named;
* ``cron``: ``bench_sim.year_of_minutely_cron``'s task (one ``* * * * *`` cron, one
  worker, runs that take no time), for 5 and 15 days;
* ``simpy``: ``bench_sim.run_simpy``, the same workload as ``sim`` on SimPy (the peer
  the 3x goal is measured against), for 1 and 3 days; not run unless named;
* ``sim100`` and ``simpy100``: ``bench_growth``'s simulation row at k = 100 (the ten
  tasks ten times over, 40 workers: ``bench_growth.sim_workload`` and ``sim_workers``)
  on each side, for 0.1 and 0.3 days; not run unless named;
* ``simasync``: ``sim``'s workload with an ``async def`` action that returns at once
  (each run awaits it on the simulation's private loop), for 0.25 and 0.75 days; and
  ``simasync-in-loop``, the same driven from inside ``asyncio.run`` (the private loop
  then runs on the simulation's helper thread: ``lldsched/sim/awaiting.py``); not run
  unless named.

Only ``run_for`` is counted between the two stretches, plus a count of the runs
made that reads the record log's ``misfire`` column with ``bytearray.count`` (a
few instructions a record).  A run is a record whose outcome ran (records of
skipped slots are not runs).  The size is printed by the measured process and
checked here: two sizes that gave the same number of runs would say the size did
not take effect.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SIZES = {
    "sim": (1.0, 3.0),
    "simfull": (1.0, 3.0),
    "cron": (5.0, 15.0),
    "simpy": (1.0, 3.0),
    "sim100": (0.1, 0.3),
    "simpy100": (0.1, 0.3),
    "simasync": (0.25, 0.75),
    "simasync-in-loop": (0.25, 0.75),
}
DEFAULT = ("sim", "cron")


def measured(workload: str, days: float) -> int:
    """Run ``workload`` for ``days`` simulated days; the runs made."""
    import gc

    sys.path.insert(0, str(HERE))
    import bench_sim

    from lldsched import InMemoryTaskStore
    from lldsched.sim import Simulation, fixed

    gc.disable()
    tasks, workers = bench_sim.WORKLOAD, bench_sim.WORKERS
    if workload.endswith("100"):
        import bench_growth

        tasks, workers = bench_growth.sim_workload(100), bench_growth.sim_workers(100)
    if workload.startswith("simpy"):
        return bench_sim.run_simpy(workload=tasks, days=days, workers=workers).runs
    if workload.startswith("simasync"):
        return _async_runs(days, in_loop=workload.endswith("-in-loop"))
    if workload in ("sim", "sim100", "simfull"):
        full = workload == "simfull"
        sim = Simulation(
            workers=workers,
            start=bench_sim.START,
            store=InMemoryTaskStore() if full else None,
            listeners=[_listener] if full else [],
        )
        for name, schedule, duration in tasks:
            sim.schedule(name, schedule, duration=fixed(duration))
    else:
        sim = Simulation(workers=1, start=bench_sim.START)
        sim.schedule("minutely", bench_sim.MINUTELY)
    sim.run_for(days * 86400)
    return bench_sim.runs_of(sim)


def _listener(event: object) -> None:
    """The listener of ``simfull`` (``bench_sim``'s is a lambda that does nothing)."""


def _async_runs(days: float, *, in_loop: bool) -> int:
    """``sim``'s workload with a coroutine action, run for ``days``: the runs made.  With
    ``in_loop``, ``run_for`` is called from a coroutine inside ``asyncio.run``."""
    import asyncio

    import bench_sim

    from lldsched.sim import Simulation, fixed

    async def no_op() -> None:
        return None

    sim = Simulation(workers=bench_sim.WORKERS, start=bench_sim.START)
    for name, schedule, duration in bench_sim.WORKLOAD:
        sim.schedule(name, schedule, action=no_op, duration=fixed(duration))

    async def drive() -> None:
        sim.run_for(days * 86400)

    if in_loop:
        asyncio.run(drive())
    else:
        sim.run_for(days * 86400)
    return bench_sim.runs_of(sim)


def count(workload: str, days: float, *, script: str = __file__) -> tuple[int, int]:
    """(instructions, runs) of one measured process under callgrind: ``script --one
    workload days``, which prints the runs it made last."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                sys.executable,
                script,
                "--one",
                workload,
                str(days),
            ],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        runs = int(done.stdout.split()[-1])
        totals = [line for line in out.read_text().splitlines() if line.startswith("summary:")]
        return int(totals[0].split()[1]), runs


def main(argv: list[str]) -> None:
    if argv[:1] == ["--one"]:
        print(measured(argv[1], float(argv[2])))
        return
    for workload in argv or DEFAULT:
        short, long = SIZES[workload]
        low, runs_low = count(workload, short)
        high, runs_high = count(workload, long)
        if runs_high <= runs_low:
            raise SystemExit(f"{workload}: {runs_low} and {runs_high} runs: the size had no effect")
        per_run = (high - low) / (runs_high - runs_low)
        print(
            f"{workload}: {per_run:,.0f} instructions per run "
            f"({short:g} days: {runs_low:,} runs, {low:,}; "
            f"{long:g} days: {runs_high:,} runs, {high:,})"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
