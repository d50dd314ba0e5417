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
  smaller everyday size set (``bench_growth`` stops at 1e5 tasks, for one);
* a figure measured in interleaved rounds (``paired_trials.py``) comes with its
  lowest and highest round under the same label plus ``paired_trials.LOW`` and
  ``HIGH``: the table shows them in the figure's row, ``median (lowest..highest)``,
  and a goal's verdict, judged on the median, says whether every round agreed
  (``PASS (every round)``, ``FAIL (no round)``) or not (``... (within noise: ...)``).

Each module runs in a fresh interpreter (this script, re-invoked with ``--one``),
so one benchmark's memory, threads and GC state never leak into the next, and a
crash in one does not stop the others.  Its block streams to the terminal as it
runs, followed by how much CPU *other* processes used meanwhile
(``host_load.Watch``): on a 2-core machine a test run in another terminal is
enough to skew latency and throughput figures, and this says so.  The load
average is printed at the start and at the end.

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
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from host_load import Watch, children_seconds, load_text
from paired_trials import HIGH, LOW

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


def machine() -> str:
    model = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{os.cpu_count()} cores, {model}, Python {platform.python_version()} "
        f"({platform.system()} {platform.release()}), load average {load_text()}"
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
    """One row per headline.  A headline measured in rounds (``paired_trials``) comes with
    its lowest and highest round under the same label plus ``LOW`` / ``HIGH``: those are
    shown in its row, ``median (lowest..highest)``, not as rows of their own."""
    results: dict[str, float] = payload["results"]
    goals: dict[str, list[Any]] = payload["goals"]
    rows = []
    for headline, value in results.items():
        if (
            headline.endswith((LOW, HIGH))
            and headline.removesuffix(LOW).removesuffix(HIGH) in results
        ):
            continue
        low, high = results.get(headline + LOW), results.get(headline + HIGH)
        measured = (
            fmt(value) if low is None or high is None else f"{fmt(value)} ({fmt(low)}..{fmt(high)})"
        )
        goal = goals.get(headline)
        if goal is None:
            rows.append(Row(name, headline, "", measured, ""))
            continue
        op, target = str(goal[0]), float(goal[1])
        verdict = "PASS" if _OPS[op](value, target) else "FAIL"
        if low is not None and high is not None:
            verdict += _noise(_OPS[op](low, target), _OPS[op](high, target))
        rows.append(Row(name, headline, f"{op} {target:g}", measured, verdict))
    for headline, goal in goals.items():
        if headline not in results:
            rows.append(Row(name, headline, f"{goal[0]} {goal[1]:g}", "missing", "FAIL"))
    return rows


def _noise(low_meets: bool, high_meets: bool) -> str:
    """The qualifier of a verdict judged on a median: met in every round, in none, or in some."""
    if low_meets and high_meets:
        return " (every round)"
    if not low_meets and not high_meets:
        return " (no round)"
    return " (within noise: some rounds each way)"


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
            with Watch(own=children_seconds) as watch:
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
            print(
                f"  [{path.name}: {watch.wall:.1f} s, {watch.usage()}{watch.warning}]\n", flush=True
            )
            if ok:
                payload = json.loads(out.read_text())
                rows += rows_for(name, payload)
                notes += [f"{name}: {note}" for note in payload.get("notes", [])]
            else:
                crashed = True
                rows.append(Row(name, "(benchmark crashed)", "", why, "ERROR"))
    print(
        f"summary ({time.perf_counter() - started:.0f} s in all; "
        f"load average at the end {load_text()})"
    )
    print(table(rows))
    for note in notes:
        print(f"note: {note}")
    if args.markdown:
        print()
        print(markdown(rows))
    missed = any(r.verdict.startswith("FAIL") for r in rows)
    return 1 if crashed or (args.strict and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
