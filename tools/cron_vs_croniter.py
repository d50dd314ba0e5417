"""Compare the cron engine with croniter on random expressions; count and sort the disagreements.

    python tools/cron_vs_croniter.py                   # 12,000 expressions, about 3 minutes
    python tools/cron_vs_croniter.py --expressions 500 # a quick look

Not a test: croniter is in the ``bench`` extra only.  It reads expressions the way
docs/CRON.md ("Where we differ from croniter and cronie") says: croniter with
``implement_cron_bug=True`` (real cron's day rule) and, for six fields,
``second_at_beginning=True``.  The expressions are the differential test's
generators (``tests/cron_reference.py``: five fields, and six a third of the time),
plus now and then a macro or a sparse leap-day one; each is read in one of
UTC, Europe/Berlin, America/New_York, Australia/Lord_Howe and Pacific/Apia, and
followed from two random starts between 1971 and 2099 (in a zone with offset changes,
60 % of them within 36 hours of one), five fires forwards and five backwards.

Each disagreement is put in the first of these that fits (docs/CRON.md's items):
``a-a`` (a one-value range, with or without a step), ``n/s in the day of week``,
``d#n/nL`` (the day of week holds ``#`` or ``L``),
``* in a list`` (a day field has a ``*`` after its first character), ``offset
change`` (a differing fire within 36 hours of one), ``other``.  A five-field one is
then checked against the minute-walking reference when the fires in question lie
within 40 days (walking more is slow): the line ``ours wrong`` must stay at 0.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from croniter import croniter
from croniter.croniter import CroniterError

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lldsched import CronSchedule
from tests.cron_reference import (
    offset_changes,
    random_expression,
    random_six_field_expression,
    reference_fires,
)

ZONES = ("UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Apia")
EXTRAS = ("@daily", "@hourly", "@weekly", "@monthly", "@yearly", "0 0 29 2 *", "0 12 29 2 1")
LOW = datetime(1971, 1, 1, tzinfo=UTC).timestamp()
HIGH = datetime(2099, 1, 1, tzinfo=UTC).timestamp()
FIRES = 5
NEAR = 36 * 3600
WALK_LIMIT = 40 * 86400


def croniter_fires(expr: str, tz: ZoneInfo | None, start: float, reverse: bool) -> list[float]:
    six = len(expr.split()) == 6
    it = croniter(
        expr,
        datetime.fromtimestamp(start, tz or UTC),
        implement_cron_bug=True,
        second_at_beginning=six,
    )
    step = it.get_prev if reverse else it.get_next
    return [step(float) for _ in range(FIRES)]


def our_fires(schedule: CronSchedule, start: float, reverse: bool) -> list[float | None]:
    fires: list[float | None] = []
    t: float | None = start
    for _ in range(FIRES):
        t = None if t is None else (schedule.prev_before(t) if reverse else schedule.next_after(t))
        fires.append(t)
    return fires


NAMES = {
    name: str(number)
    for names in (
        ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"),
        ("", "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"),
    )
    for number, name in enumerate(names)
    if name
}


def _one_value_range(item: str) -> bool:
    first, dash, last = item.partition("/")[0].partition("-")
    first, last = (NAMES.get(x.upper(), x).lstrip("0") for x in (first, last))
    return bool(dash) and first == last


def category(expr: str, near_change: bool) -> str:
    fields = expr.split() if not expr.startswith("@") else []
    items = [item for field in fields for item in field.split(",")]
    dow = fields[-1].split(",") if fields else []
    if any(_one_value_range(item) for item in items):
        return "a-a"
    if any("/" in item and item[0] != "*" and "-" not in item for item in dow):
        return "n/s in the day of week"
    if fields and ("#" in fields[-1] or "L" in fields[-1].upper()):
        return "d#n/nL"
    if fields and any("*" in f[1:] for f in (fields[-3], fields[-1])):
        return "* in a list"
    return "offset change" if near_change else "other"


def ours_right(
    expr: str, zone: str, start: float, ours: list[float | None], theirs: list[float], reverse: bool
) -> bool | None:
    """Our fires up to the first difference, against the reference; None when too far to walk."""
    if len(expr.split()) == 6 or expr.startswith("@"):
        return None
    index = next(i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b)
    candidates = [t for t in (ours[index], theirs[index]) if t is not None]
    if reverse:
        low = min(candidates)
        if start - low > WALK_LIMIT:
            return None
        walked = [t for t in reference_fires(expr, zone, low - 1, start) if t < start][::-1]
    else:
        high = max(candidates)
        if high - start > WALK_LIMIT:
            return None
        walked = reference_fires(expr, zone, start, high)
    return walked[: index + 1] == ours[: index + 1]


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--expressions", type=int, default=12_000)
    parser.add_argument("--seed", type=int, default=20261204)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    changes = {name: offset_changes(name, 1971, 2099, timedelta(minutes=15)) for name in ZONES}
    counts: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    wrong: list[str] = []
    others: list[str] = []
    for number in range(args.expressions):
        roll = rng.random()
        if roll < 0.02:
            expr = rng.choice(EXTRAS)
        elif roll < 0.35:
            expr = random_six_field_expression(rng, early_hours=number % 2 == 1)
        else:
            expr = random_expression(rng, early_hours=number % 2 == 1)
        zone = rng.choice(ZONES)
        tz = None if zone == "UTC" else ZoneInfo(zone)
        counts["expressions"] += 1
        try:
            croniter(expr, datetime.fromtimestamp(LOW, UTC), implement_cron_bug=True)
            croniter_fires(expr, tz, LOW + 86400, reverse=False)
        except (CroniterError, ValueError, KeyError, IndexError):
            counts["croniter cannot read"] += 1
            continue
        schedule = CronSchedule(expr, tz=zone)
        for _ in range(2):
            if changes[zone] and rng.random() < 0.6:
                start = rng.choice(changes[zone]) + rng.uniform(-NEAR, NEAR)
            else:
                start = rng.uniform(LOW, HIGH)
            for reverse in (False, True):
                counts["comparisons"] += 1
                ours = our_fires(schedule, start, reverse)
                try:
                    theirs = croniter_fires(expr, tz, start, reverse)
                except (CroniterError, ValueError, KeyError, IndexError):
                    counts["croniter failed mid-way"] += 1
                    continue
                if ours == theirs:
                    continue
                counts["disagreements"] += 1
                near = any(
                    abs(t - c) <= NEAR
                    for t in (*ours, *theirs)
                    if t is not None
                    for c in changes[zone]
                )
                kind = category(expr, near)
                kinds[kind] += 1
                if kind == "other" and len(others) < 10:
                    others.append(f"{expr!r} {zone} {'before' if reverse else 'after'} {start}")
                verdict = ours_right(expr, zone, start, ours, theirs, reverse)
                if verdict is None:
                    counts["not walked (six fields, a macro, or over 40 days)"] += 1
                elif verdict:
                    counts["ours matches the reference"] += 1
                else:
                    counts["ours wrong"] += 1
                    wrong.append(f"{expr!r} {zone} {'before' if reverse else 'after'} {start}")
    for key, value in counts.items():
        print(f"{key:52} {value:>8,}")
    for key, value in kinds.most_common():
        print(f"  {key:50} {value:>8,}")
    for line in wrong[:20]:
        print("ours wrong:", line)
    for line in others:
        print("other:", line)
    return {**counts, **{f"kind {k}": float(v) for k, v in kinds.items()}}


if __name__ == "__main__":
    main()
