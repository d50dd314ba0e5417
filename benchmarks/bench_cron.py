"""Cron engine speed against cronsim and croniter, in the same run.

    python benchmarks/bench_cron.py                 # the issue's numbers (about a minute)
    python benchmarks/bench_cron.py --quick         # a smoke run (a few seconds)
    python benchmarks/bench_cron.py --tz Europe/Berlin

The mix: ``* * * * *``, ``*/15 * * * *``, ``0 3 * * 1-5``, ``30 2 * * *``,
``0 0 1 1 *``, ``0 0 29 2 *``, ``5 4 * * sun``, ``0 0 13 * 5``,
``0 9-17/2 * * mon-fri``.

* warm: successive fires of one expression (20,000 each), the way the scheduler
  and the simulation use it: ours chains ``next_after`` on one schedule, cronsim
  and croniter advance one iterator.  Yearly expressions would run past the year
  9999 that datetime ends in, so every library restarts from 2025 when a run
  reaches 9000.
* cold: build, then one fire, each time.  Ours is measured twice: as used (the
  parse is cached by text, as an immutable object may be) and uncached (the
  parse cache cleared before every build).
* six fields (a seconds field first): ``* * * * * *``, ``*/15 * * * * *``,
  ``30 */5 * * * *``, ``0 30 2 * * *``, ``15 0 3 * * 1-5``, ``*/10 0 9-17 * * mon-fri``,
  warm and cold against cronsim only (croniter puts its seconds field last).
* the raw cost of one ``next_after`` on ``* * * * *``: the simulation needs about a
  microsecond per fire to replay a year of a minutely cron in under two seconds.

Each figure is the best of ``--repeat`` runs.  "Overall" is the geometric mean of
the per-expression speed-ups; the total-time ratio (time for the whole mix with
the same number of fires each) is printed too.  The goals: at least 10x cronsim
warm and 5x cronsim cold, overall; and 10x cronsim warm for the six-field mix.
``main()`` returns every figure as a dict for ``benchmarks/run_all.py``.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

from croniter import croniter
from cronsim import CronSim

from lldsched import CronSchedule
from lldsched.schedules.cron import schedule as cron_module

GOALS: dict[str, tuple[str, float]] = {
    "warm vs cronsim (x)": (">=", 10.0),
    "cold vs cronsim (x)": (">=", 5.0),
    "warm six fields vs cronsim (x)": (">=", 10.0),
}

MIX = (
    "* * * * *",
    "*/15 * * * *",
    "0 3 * * 1-5",
    "30 2 * * *",
    "0 0 1 1 *",
    "0 0 29 2 *",
    "5 4 * * sun",
    "0 0 13 * 5",
    "0 9-17/2 * * mon-fri",
)
MIX_SIX = (
    "* * * * * *",
    "*/15 * * * * *",
    "30 */5 * * * *",
    "0 30 2 * * *",
    "15 0 3 * * 1-5",
    "*/10 0 9-17 * * mon-fri",
)
START = datetime(2025, 1, 1, tzinfo=UTC).timestamp()
LAP_END = datetime(9000, 1, 1, tzinfo=UTC).timestamp()
LIBRARIES = ("lldsched", "cronsim", "croniter")


def _best(repeat: int, run: Callable[[], float]) -> float:
    return min(run() for _ in range(repeat))


# -- warm: successive fires ---------------------------------------------------------


def _warm_ours(expr: str, tz: str, fires: int) -> float:
    done, elapsed = 0, 0.0
    while done < fires:
        schedule = CronSchedule(expr, tz=tz)
        next_after = schedule.next_after
        t: float | None = START
        began = time.perf_counter()
        while done < fires and t is not None and t < LAP_END:
            t = next_after(t)
            done += 1
        elapsed += time.perf_counter() - began
    return elapsed


def _warm_cronsim(expr: str, zone: tzinfo, fires: int) -> float:
    done, elapsed = 0, 0.0
    while done < fires:
        iterator = CronSim(expr, datetime.fromtimestamp(START, zone))
        began = time.perf_counter()
        while done < fires:
            done += 1
            if next(iterator).year >= 9000:
                break
        elapsed += time.perf_counter() - began
    return elapsed


def _warm_croniter(expr: str, zone: tzinfo, fires: int) -> float:
    done, elapsed = 0, 0.0
    while done < fires:
        iterator = croniter(expr, datetime.fromtimestamp(START, zone))
        get_next = iterator.get_next
        began = time.perf_counter()
        while done < fires:
            done += 1
            if get_next(float) >= LAP_END:
                break
        elapsed += time.perf_counter() - began
    return elapsed


# -- cold: build, then one fire -----------------------------------------------------


def _cold_ours(expr: str, tz: str, n: int, *, cached: bool) -> float:
    clear = cron_module._engine.cache_clear
    CronSchedule(expr, tz=tz)  # a cached run measures the cache hit
    began = time.perf_counter()
    for _ in range(n):
        if not cached:
            clear()
        CronSchedule(expr, tz=tz).next_after(START)
    return time.perf_counter() - began


def _cold_cronsim(expr: str, zone: tzinfo, n: int) -> float:
    start = datetime.fromtimestamp(START, zone)
    began = time.perf_counter()
    for _ in range(n):
        next(CronSim(expr, start))
    return time.perf_counter() - began


def _cold_croniter(expr: str, zone: tzinfo, n: int) -> float:
    start = datetime.fromtimestamp(START, zone)
    began = time.perf_counter()
    for _ in range(n):
        croniter(expr, start).get_next(float)
    return time.perf_counter() - began


# -- checks and the raw cost ------------------------------------------------------------


def _agree(expr: str, tz: str, zone: tzinfo, n: int = 50) -> None:
    """The three libraries list the same fires: the race is between equals (a
    six-field expression against cronsim only)."""
    ours = list(CronSchedule(expr, tz=tz).fire_times(START, n))
    iterator = CronSim(expr, datetime.fromtimestamp(START, zone))
    theirs = [next(iterator).timestamp() for _ in ours]
    if len(expr.split()) == 6:
        if ours != theirs:
            raise AssertionError(f"{expr!r}: lldsched and cronsim disagree; compare first")
        return
    other = croniter(expr, datetime.fromtimestamp(START, zone))
    others = [other.get_next(float) for _ in ours]
    if not ours == theirs == others:
        raise AssertionError(f"{expr!r}: the libraries disagree; compare before timing")


def _raw_next_after(repeat: int, n: int = 200_000) -> dict[str, float]:
    schedule = CronSchedule("* * * * *")

    def sequential() -> float:
        next_after = schedule.next_after
        t: float | None = START
        began = time.perf_counter()
        for _ in range(n):
            t = next_after(t)  # type: ignore[arg-type]
        return time.perf_counter() - began

    rng = random.Random(1)
    instants = [rng.uniform(START, START + 365 * 86400) for _ in range(n // 10)]

    def scattered() -> float:
        next_after = CronSchedule("* * * * *").next_after
        began = time.perf_counter()
        for t in instants:
            next_after(t)
        return time.perf_counter() - began

    per_fire = _best(repeat, sequential) / n
    return {
        "sequential_us": per_fire * 1e6,
        "scattered_us": _best(repeat, scattered) / len(instants) * 1e6,
        "minutely_year_s": per_fire * 525_600,
    }


def _measure(
    expr: str, tz: str, zone: tzinfo, fires: int, n: int, r: int
) -> tuple[dict[str, float], dict[str, float]]:
    warm = {
        "lldsched": fires / _best(r, lambda: _warm_ours(expr, tz, fires)),
        "cronsim": fires / _best(r, lambda: _warm_cronsim(expr, zone, fires)),
        "croniter": fires / _best(r, lambda: _warm_croniter(expr, zone, fires)),
    }
    cold = {
        "lldsched": n / _best(r, lambda: _cold_ours(expr, tz, n, cached=True)),
        "lldsched_uncached": n / _best(r, lambda: _cold_ours(expr, tz, n, cached=False)),
        "cronsim": n / _best(r, lambda: _cold_cronsim(expr, zone, n)),
        "croniter": n / _best(r, lambda: _cold_croniter(expr, zone, n)),
    }
    return warm, cold


def _measure_six(
    expr: str, tz: str, zone: tzinfo, fires: int, n: int, r: int
) -> tuple[dict[str, float], dict[str, float]]:
    warm = {
        "lldsched": fires / _best(r, lambda: _warm_ours(expr, tz, fires)),
        "cronsim": fires / _best(r, lambda: _warm_cronsim(expr, zone, fires)),
    }
    cold = {
        "lldsched": n / _best(r, lambda: _cold_ours(expr, tz, n, cached=True)),
        "cronsim": n / _best(r, lambda: _cold_cronsim(expr, zone, n)),
    }
    return warm, cold


def _geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main(argv: Sequence[str] = ()) -> dict[str, float]:
    """Run the benchmark, print a report, and return its headline figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fires", type=int, default=20_000, help="warm fires per expression")
    parser.add_argument("--cold", type=int, default=2_000, help="cold builds per expression")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    parser.add_argument("--tz", default="UTC", help="zone the expressions are read in")
    parser.add_argument("--quick", action="store_true", help="small counts: a smoke run")
    args = parser.parse_args(list(argv))
    if args.quick:
        args.fires, args.cold, args.repeat = 2_000, 200, 1
    tz: str = args.tz
    zone: tzinfo = UTC if tz == "UTC" else ZoneInfo(tz)
    warm: dict[str, dict[str, float]] = {}
    cold: dict[str, dict[str, float]] = {}
    for expr in MIX:
        _agree(expr, tz, zone)
        warm[expr], cold[expr] = _measure(expr, tz, zone, args.fires, args.cold, args.repeat)
    warm_six: dict[str, dict[str, float]] = {}
    cold_six: dict[str, dict[str, float]] = {}
    for expr in MIX_SIX:
        _agree(expr, tz, zone)
        warm_six[expr], cold_six[expr] = _measure_six(
            expr, tz, zone, args.fires, args.cold, args.repeat
        )
    raw = _raw_next_after(args.repeat)
    overall = {
        "warm_six_fields_vs_cronsim": _geomean(
            [w["lldsched"] / w["cronsim"] for w in warm_six.values()]
        ),
        "cold_six_fields_vs_cronsim": _geomean(
            [c["lldsched"] / c["cronsim"] for c in cold_six.values()]
        ),
        "warm_vs_cronsim": _geomean([w["lldsched"] / w["cronsim"] for w in warm.values()]),
        "warm_vs_croniter": _geomean([w["lldsched"] / w["croniter"] for w in warm.values()]),
        "warm_total_time_vs_cronsim": sum(1 / w["cronsim"] for w in warm.values())
        / sum(1 / w["lldsched"] for w in warm.values()),
        "cold_vs_cronsim": _geomean([c["lldsched"] / c["cronsim"] for c in cold.values()]),
        "cold_uncached_vs_cronsim": _geomean(
            [c["lldsched_uncached"] / c["cronsim"] for c in cold.values()]
        ),
        "cold_vs_croniter": _geomean([c["lldsched"] / c["croniter"] for c in cold.values()]),
    }
    result = {
        "tz": tz,
        "warm": warm,
        "cold": cold,
        "warm_six": warm_six,
        "cold_six": cold_six,
        "next_after": raw,
        "overall": overall,
    }
    _report(result, args)
    return _headlines(overall, raw)


def _headlines(overall: dict[str, float], raw: dict[str, float]) -> dict[str, float]:
    """The figures ``run_all.py`` tabulates, labelled with their units (the per-expression
    rates stay in the printed report)."""
    return {
        "warm vs cronsim (x)": overall["warm_vs_cronsim"],
        "warm vs croniter (x)": overall["warm_vs_croniter"],
        "warm total time for the mix vs cronsim (x)": overall["warm_total_time_vs_cronsim"],
        "cold vs cronsim (x)": overall["cold_vs_cronsim"],
        "cold uncached vs cronsim (x)": overall["cold_uncached_vs_cronsim"],
        "cold vs croniter (x)": overall["cold_vs_croniter"],
        "warm six fields vs cronsim (x)": overall["warm_six_fields_vs_cronsim"],
        "cold six fields vs cronsim (x)": overall["cold_six_fields_vs_cronsim"],
        "next_after in sequence (us)": raw["sequential_us"],
        "next_after from scattered instants (us)": raw["scattered_us"],
        "a year of a minutely cron (s)": raw["minutely_year_s"],
    }


def _report(result: dict[str, Any], args: argparse.Namespace) -> None:
    print(f"cron engine, zone {result['tz']}; best of {args.repeat}; rates in fires per second")
    print(f"\nwarm: {args.fires:,} successive fires per expression")
    print(f"{'expression':22} {'lldsched':>11} {'cronsim':>10} {'croniter':>10} {'x cronsim':>10}")
    for expr, w in result["warm"].items():
        ratio = w["lldsched"] / w["cronsim"]
        print(
            f"{expr:22} {w['lldsched']:11,.0f} {w['cronsim']:10,.0f} {w['croniter']:10,.0f}"
            f" {ratio:9.1f}x"
        )
    print(f"\ncold: build, then one fire ({args.cold:,} times per expression)")
    print(
        f"{'expression':22} {'lldsched':>11} {'uncached':>10} {'cronsim':>10} {'croniter':>10}"
        f" {'x cronsim':>10} {'uncached':>9}"
    )
    for expr, c in result["cold"].items():
        print(
            f"{expr:22} {c['lldsched']:11,.0f} {c['lldsched_uncached']:10,.0f}"
            f" {c['cronsim']:10,.0f} {c['croniter']:10,.0f}"
            f" {c['lldsched'] / c['cronsim']:9.1f}x"
            f" {c['lldsched_uncached'] / c['cronsim']:8.1f}x"
        )
    print("\nsix fields (seconds first), against cronsim: warm and cold fires per second")
    print(
        f"{'expression':26} {'warm ours':>11} {'cronsim':>10} {'x cronsim':>10}"
        f" {'cold ours':>11} {'cronsim':>10} {'x cronsim':>10}"
    )
    for expr, w in result["warm_six"].items():
        c = result["cold_six"][expr]
        print(
            f"{expr:26} {w['lldsched']:11,.0f} {w['cronsim']:10,.0f}"
            f" {w['lldsched'] / w['cronsim']:9.1f}x {c['lldsched']:11,.0f}"
            f" {c['cronsim']:10,.0f} {c['lldsched'] / c['cronsim']:9.1f}x"
        )
    o, raw = result["overall"], result["next_after"]
    print("\noverall (geometric mean of the per-expression speed-ups)")
    print(
        f"  warm: {o['warm_vs_cronsim']:.1f}x cronsim (goal 10x), {o['warm_vs_croniter']:.1f}x"
        f" croniter; total time for the mix: {o['warm_total_time_vs_cronsim']:.1f}x cronsim"
    )
    print(
        f"  cold: {o['cold_vs_cronsim']:.1f}x cronsim (goal 5x; parse cached by text),"
        f" {o['cold_uncached_vs_cronsim']:.1f}x uncached, {o['cold_vs_croniter']:.1f}x croniter"
    )
    print(
        f"  six fields: warm {o['warm_six_fields_vs_cronsim']:.1f}x cronsim (goal 10x),"
        f" cold {o['cold_six_fields_vs_cronsim']:.1f}x cronsim"
    )
    print(
        f"\nnext_after on '* * * * *': {raw['sequential_us']:.2f} us per fire in sequence"
        f" (a year of a minutely cron: {raw['minutely_year_s']:.2f} s),"
        f" {raw['scattered_us']:.2f} us from scattered instants"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
