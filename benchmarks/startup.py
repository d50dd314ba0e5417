"""What starting lldsched costs a fresh interpreter: wall-clock over many runs, and
machine instructions counted with callgrind (repeatable under load).

    python benchmarks/startup.py                 # every scenario, both measures
    python benchmarks/startup.py import cron     # some of them
    python benchmarks/startup.py --runs 60       # more wall-clock runs (default 30)
    python benchmarks/startup.py --no-callgrind  # wall-clock only (seconds, not minutes)
    python benchmarks/startup.py --modules       # which stdlib packages each one loads

Each scenario is a fresh interpreter (the one running this script), as a CLI call, a
serverless cold start or a test suite's subprocess is:

* ``floor``: ``python -c pass``, the interpreter and ``site`` alone;
* ``import``: ``import lldsched``;
* ``scheduler``: ``import lldsched``, a ``Scheduler`` made, one thread task
  registered, started and shut down;
* ``help``: ``python -m lldsched --help``;
* ``cron``: ``python -m lldsched cron "*/15 9-17 * * 1-5" --tz Europe/Berlin``
  (a fixed ``--start``: one explanation and five fire times);
* ``sim``: ``import lldsched.sim``.

Wall-clock: the scenarios are run in turn, ``--runs`` times each, and the median and
the fastest are printed (the machine's other load moves the median; the fastest is
the better estimate of the cost).  Instructions: one run of each under ``valgrind
--tool=callgrind`` with ``PYTHONHASHSEED=0``; every thread is counted.  Run from
the repository's root with ``PYTHONPATH=$PWD``.

The bytecode caches are used, as an installed package's are: ``PYTHONDONTWRITEBYTECODE``
is dropped from the children's environment and their caches go to a folder of this
run's (``PYTHONPYCACHEPREFIX``), written by a first run of each scenario that is not
measured.  Without them every module is compiled from source at each start, which
costs about three times the whole import (1,163 M instructions for ``import
lldsched``, not 0.3 G) and says nothing about lldsched's own start-up.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCHEDULER = """
import lldsched
scheduler = lldsched.Scheduler(workers=2)
scheduler.schedule("tick", print, lldsched.FixedRate(60))
scheduler.start()
scheduler.shutdown(timeout=10)
"""
CRON = ["cron", "*/15 9-17 * * 1-5", "--tz", "Europe/Berlin", "--start", "2026-03-27"]
SCENARIOS: dict[str, list[str]] = {
    "floor": ["-c", "pass"],
    "import": ["-c", "import lldsched"],
    "scheduler": ["-c", SCHEDULER],
    "help": ["-m", "lldsched", "--help"],
    "cron": ["-m", "lldsched", *CRON],
    "sim": ["-c", "import lldsched.sim"],
}
LISTED = """
import sys, runpy
sys.argv = {argv!r}
try:
    {body}
except SystemExit:
    pass
print(" ".join(sorted({{n.partition(".")[0] for n in sys.modules}} & sys.stdlib_module_names)))
"""


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _run(args: list[str]) -> None:
    subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL, env=ENV)


def wall(names: list[str], runs: int) -> dict[str, list[float]]:
    """Seconds of each of ``runs`` fresh interpreters per scenario, taken in turn."""
    times: dict[str, list[float]] = {name: [] for name in names}
    for name in names:  # a first run writes the bytecode caches
        _run(SCENARIOS[name])
    for _ in range(runs):
        for name in names:
            began = time.perf_counter()
            _run(SCENARIOS[name])
            times[name].append(time.perf_counter() - began)
    return times


def instructions(name: str) -> int:
    """Instructions of one run of scenario ``name`` under callgrind, every thread."""
    _run(SCENARIOS[name])
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                sys.executable,
                *SCENARIOS[name],
            ],
            capture_output=True,
            env={**ENV, "PYTHONHASHSEED": "0"},
            check=True,
        )
        totals = [line for line in out.read_text().splitlines() if line.startswith("summary:")]
        return int(totals[0].split()[1])


def modules(name: str) -> str:
    """The standard library's top-level packages scenario ``name`` leaves loaded."""
    args = SCENARIOS[name]
    if args[0] == "-m":
        body = f"runpy.run_module({args[1]!r}, run_name='__main__', alter_sys=True)"
        argv = [args[1], *args[2:]]
    else:
        body = f"exec({args[1]!r})"
        argv = ["-c"]
    script = LISTED.format(argv=argv, body=body)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=ENV
    )
    return done.stdout.splitlines()[-1]


def main(argv: list[str]) -> None:
    runs = 30
    if "--runs" in argv:
        at = argv.index("--runs")
        runs = int(argv[at + 1])
        del argv[at : at + 2]
    counted = "--no-callgrind" not in argv
    listed = "--modules" in argv
    names = [a for a in argv if not a.startswith("--")] or list(SCENARIOS)
    with tempfile.TemporaryDirectory() as caches:
        ENV["PYTHONPYCACHEPREFIX"] = caches
        _measure(names, runs=runs, counted=counted, listed=listed)


def _measure(names: list[str], *, runs: int, counted: bool, listed: bool) -> None:
    if listed:
        for name in names:
            print(f"{name}: {modules(name)}")
        return
    times = wall(names, runs)
    for name in names:
        line = (
            f"{name:<10} median {statistics.median(times[name]) * 1e3:6.1f} ms, "
            f"fastest {min(times[name]) * 1e3:6.1f} ms ({runs} runs)"
        )
        if counted:
            line += f", {instructions(name) / 1e6:,.0f} M instructions"
        print(line, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
