"""Run every ``benchmarks/bench_*.py`` and print one summary table: goal, measured, pass.

The convention a benchmark module follows (``bench_<topic>.py`` in this folder):

* ``main() -> dict[str, float]`` runs the benchmark, prints a readable block and
  returns its headline figures, keyed by a label that carries the unit, e.g.
  ``"latency p99 (ms)"``.  Ratios against a peer are measured in the same run;
* optionally ``GOALS: dict[str, tuple[str, float]]`` maps some of those labels to
  ``(op, target)`` with ``op`` one of ``">=" ">" "<=" "<"``; figures without a goal
  are shown for information;
* importing the module does nothing; ``python benchmarks/bench_<topic>.py`` runs it;
* optionally ``main(argv)`` takes a list of arguments: with ``--quick`` it runs its
  smaller everyday size set (``bench_growth`` stops at 1e5 tasks, for one).

Each module runs in a fresh interpreter (this script, re-invoked with ``--one``),
so one benchmark's memory, threads and GC state never leak into the next, and a
crash in one does not stop the others.  Its block streams to the terminal as it
runs, followed by how much CPU *other* processes used meanwhile (from
``/proc/stat``): on a 2-core machine a test run in another terminal is enough to
skew latency and throughput figures, and this says so.  The kernel's own threads
are shown apart and not counted as other processes: most of their time is I/O
the benchmark itself caused (the store benchmark's SQLite writes).

Usage: ``python benchmarks/run_all.py [NAME ...] [--quick] [--strict] [--markdown]``

* ``NAME``: run only modules whose name contains it (``dispatch``, ``scale``);
* ``--quick``: pass ``--quick`` to every module whose ``main`` takes arguments;
* ``--strict``: exit 1 when a goal is missed (by default only a crash does);
* ``--markdown``: also print the summary as a Markdown table.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import math
import operator
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve().parent
PER_BENCHMARK_TIMEOUT = 600.0

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
}


class Row(NamedTuple):
    benchmark: str
    headline: str
    goal: str
    measured: str
    verdict: str  # "PASS", "FAIL", "" (no goal) or "ERROR"


def discover(names: list[str]) -> list[Path]:
    paths = sorted(HERE.glob("bench_*.py"))
    if names:
        paths = [p for p in paths if any(name in p.stem for name in names)]
    return paths


def run_one(path: Path, out: Path, *, quick: bool) -> None:
    """Child mode: import ``path``, call its main() (with ``["--quick"]`` when ``quick``
    and main takes arguments), write results and goals as JSON."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    takes_argv = bool(inspect.signature(module.main).parameters)
    returned = module.main(["--quick"]) if quick and takes_argv else module.main()
    if not isinstance(returned, dict):
        raise TypeError(f"{path.name}: main() must return dict[str, float], got {returned!r}")
    results: dict[str, float] = {}
    dropped: list[str] = []
    _flatten("", returned, results, dropped)
    notes = []
    if dropped or len(results) != len(returned):
        notes.append(
            f"main() should return dict[str, float]: nested figures one level deep were "
            f"kept as 'outer.inner', {len(dropped)} others dropped ({', '.join(dropped[:2])}, ...)"
        )
    goals = getattr(module, "GOALS", {})
    out.write_text(json.dumps({"results": results, "goals": goals, "notes": notes}))


def _flatten(
    prefix: str, value: object, into: dict[str, float], dropped: list[str], depth: int = 0
) -> None:
    """Numbers keep their key, a nested dict's become ``outer.inner``; the rest is dropped
    (deeper levels are per-case detail, not headlines)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and depth <= 2:
        into[prefix] = float(value)
    elif isinstance(value, dict) and depth < 2:
        for key, item in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), item, into, dropped, depth + 1)
    else:
        dropped.append(prefix)


def _busy_seconds() -> float | None:
    """CPU seconds every process on the machine has used since boot (Linux), or None."""
    try:
        with open("/proc/stat") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


_PF_KTHREAD = 0x00200000  # the kernel-thread bit of a /proc/<pid>/stat flags field


def _kernel_thread_seconds() -> float:
    """CPU seconds the kernel's own threads have used (Linux; 0.0 where /proc is missing).

    Kernel threads do work on behalf of whoever asked: the block-I/O workers, for
    one, flush the SQLite files the store benchmark writes.  They live as long as
    the machine, so a difference of two readings is what they did in between.
    """
    total = 0
    try:
        pids = [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rpartition(")")[2].split()
        except OSError:  # it exited meanwhile
            continue
        # After the command: state, ppid, ... flags is the 9th field of the line
        # (index 6 here), utime and stime the 14th and 15th (indexes 11 and 12).
        if int(fields[6]) & _PF_KTHREAD:
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _children_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def machine() -> str:
    model = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (
        f"{os.cpu_count()} cores, {model}, Python {platform.python_version()} "
        f"({platform.system()} {platform.release()}), load average {load}"
    )


def fmt(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        return str(value)
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def rows_for(name: str, payload: dict[str, Any]) -> list[Row]:
    results: dict[str, float] = payload["results"]
    goals: dict[str, list[Any]] = payload["goals"]
    rows = []
    for headline, value in results.items():
        goal = goals.get(headline)
        if goal is None:
            rows.append(Row(name, headline, "", fmt(value), ""))
            continue
        op, target = str(goal[0]), float(goal[1])
        passed = _OPS[op](value, target)
        rows.append(
            Row(name, headline, f"{op} {target:g}", fmt(value), "PASS" if passed else "FAIL")
        )
    for headline, goal in goals.items():
        if headline not in results:
            rows.append(Row(name, headline, f"{goal[0]} {goal[1]:g}", "missing", "FAIL"))
    return rows


def table(rows: list[Row]) -> str:
    header = Row("benchmark", "headline", "goal", "measured", "pass")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(row: Row) -> str:
        cells = [
            cell.rjust(w) if i == 3 else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


def markdown(rows: list[Row]) -> str:
    lines = [
        "| benchmark | headline | goal | measured | pass |",
        "| --- | --- | --- | ---: | --- |",
    ]
    lines += [
        f"| {r.benchmark} | {r.headline} | {r.goal or '-'} | {r.measured} | {r.verdict or '-'} |"
        for r in rows
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "names", nargs="*", help="run only benchmarks whose name contains one of these"
    )
    parser.add_argument(
        "--quick", action="store_true", help="smaller sizes, where a benchmark has them"
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a goal is missed")
    parser.add_argument("--markdown", action="store_true", help="also print a Markdown summary")
    parser.add_argument("--one", nargs=2, metavar=("PATH", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        run_one(Path(args.one[0]), Path(args.one[1]), quick=args.quick)
        return 0

    paths = discover(args.names)
    if not paths:
        print("no benchmark matched", file=sys.stderr)
        return 2
    print(f"machine: {machine()}\n", flush=True)
    rows: list[Row] = []
    notes: list[str] = []
    crashed = False
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lldsched-bench-") as tmp:
        for path in paths:
            name = path.stem.removeprefix("bench_")
            out = Path(tmp) / f"{path.stem}.json"
            t0 = time.perf_counter()
            busy0, ours0, kernel0 = _busy_seconds(), _children_seconds(), _kernel_thread_seconds()
            try:
                proc = subprocess.run(
                    [
                        sys.executable,
                        str(Path(__file__).resolve()),
                        "--one",
                        str(path),
                        str(out),
                        *(["--quick"] if args.quick else []),
                    ],
                    timeout=PER_BENCHMARK_TIMEOUT,
                    check=False,
                )
                ok = proc.returncode == 0 and out.exists()
                why = f"exit status {proc.returncode}"
            except subprocess.TimeoutExpired:
                ok, why = False, f"timed out after {PER_BENCHMARK_TIMEOUT:g} s"
            wall = time.perf_counter() - t0
            busy1, ours1, kernel1 = _busy_seconds(), _children_seconds(), _kernel_thread_seconds()
            note = ""
            if busy0 is not None and busy1 is not None and wall > 0:
                kernel = (kernel1 - kernel0) / wall
                foreign = max(0.0, (busy1 - busy0) - (ours1 - ours0) - (kernel1 - kernel0)) / wall
                note = f", other processes used {foreign:.0%} of a core"
                if kernel >= 0.02:
                    note += f" (kernel threads {kernel:.0%}: I/O and housekeeping, not counted)"
                if foreign > 0.10:
                    note += ": NOT A QUIET MACHINE, figures may be skewed"
            print(f"  [{path.name}: {wall:.1f} s{note}]\n", flush=True)
            if ok:
                payload = json.loads(out.read_text())
                rows += rows_for(name, payload)
                notes += [f"{name}: {note}" for note in payload.get("notes", [])]
            else:
                crashed = True
                rows.append(Row(name, "(benchmark crashed)", "", why, "ERROR"))
    print(f"summary ({time.perf_counter() - started:.0f} s in all)")
    print(table(rows))
    for note in notes:
        print(f"note: {note}")
    if args.markdown:
        print()
        print(markdown(rows))
    missed = any(r.verdict == "FAIL" for r in rows)
    return 1 if crashed or (args.strict and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
