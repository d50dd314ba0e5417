"""The cron engine against croniter or cronsim on random expressions: the disagreements, sorted.

    python tools/cron_vs_peers.py                    # croniter, 12,000 expressions, ~3 minutes
    python tools/cron_vs_peers.py --expressions 500  # a quick look
    python tools/cron_vs_peers.py --peer cronsim     # cronsim in half-hour and odd zones

With ``--peer cronsim`` it runs the companion comparison of docs/CRON.md's "Where we
differ from cronsim", item 6: 10,000 five-field expressions, each in one of
Australia/Lord_Howe, Pacific/Apia, Asia/Kolkata, America/St_Johns and Europe/Dublin,
from two starts (as below), three fires forwards; disagreements are sorted into
``offset change`` and ``other`` and walked against the reference the same way.

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
import signal
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from croniter import croniter
from croniter.croniter import CroniterError
from cronsim import CronSim, CronSimError

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lldsched import CronSchedule
from tests.cron_reference import (
    offset_changes,
    random_expression,
    random_six_field_expression,
    reference_fires,
)

ZONES = ("UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Apia")
CRONSIM_ZONES = (
    "Australia/Lord_Howe",
    "Pacific/Apia",
    "Asia/Kolkata",
    "America/St_Johns",
    "Europe/Dublin",
)
EXTRAS = ("@daily", "@hourly", "@weekly", "@monthly", "@yearly", "0 0 29 2 *", "0 12 29 2 1")
LOW = datetime(1971, 1, 1, tzinfo=UTC).timestamp()
HIGH = datetime(2099, 1, 1, tzinfo=UTC).timestamp()
FIRES = 5  # croniter, each way
CRONSIM_FIRES = 3  # cronsim, forwards
HANG = 10  # seconds: a cronsim answer that takes longer is counted as hung
NEAR = 36 * 3600
WALK_LIMIT = 40 * 86400


def croniter_fires(
    expr: str, tz: ZoneInfo | None, start: float, reverse: bool, fires: int
) -> list[float | None]:
    six = len(expr.split()) == 6
    it = croniter(
        expr,
        datetime.fromtimestamp(start, tz or UTC),
        implement_cron_bug=True,
        second_at_beginning=six,
    )
    step = it.get_prev if reverse else it.get_next
    return [step(float) for _ in range(fires)]


class Hung(Exception):
    """cronsim took more than :data:`HANG` seconds over one answer."""


def _hung(signum: int, frame: object) -> None:
    raise Hung


def cronsim_fires(
    expr: str, tz: ZoneInfo | None, start: float, reverse: bool, fires: int
) -> list[float | None]:
    """cronsim's next fires; raises :class:`Hung` past :data:`HANG` seconds (POSIX:
    cronsim 2.9 loops forever on some expressions at St. John's 00:01 changes)."""
    it = CronSim(expr, datetime.fromtimestamp(start, tz or UTC), reverse=reverse)
    found: list[float | None] = []
    previous = signal.signal(signal.SIGALRM, _hung)
    signal.alarm(HANG)
    try:
        for _ in range(fires):
            try:
                found.append(next(it).timestamp())
            except StopIteration:  # nothing within 50 years
                found.append(None)
                break
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return found + [None] * (fires - len(found))


def our_fires(
    schedule: CronSchedule, start: float, reverse: bool, fires: int
) -> list[float | None]:
    found: list[float | None] = []
    t: float | None = start
    for _ in range(fires):
        t = None if t is None else (schedule.prev_before(t) if reverse else schedule.next_after(t))
        found.append(t)
    return found


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


def category(expr: str, near_change: bool, peer: str) -> str:
    if peer == "cronsim":
        return "offset change" if near_change else "other"
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
    expr: str,
    zone: str,
    start: float,
    ours: list[float | None],
    theirs: list[float | None],
    reverse: bool,
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
    parser.add_argument("--peer", choices=("croniter", "cronsim"), default="croniter")
    parser.add_argument("--expressions", type=int, help="default 12,000 (cronsim: 10,000)")
    parser.add_argument("--seed", type=int, default=20261204)
    args = parser.parse_args(argv)
    cronsim = args.peer == "cronsim"
    expressions = args.expressions or (10_000 if cronsim else 12_000)
    zones = CRONSIM_ZONES if cronsim else ZONES
    fires = CRONSIM_FIRES if cronsim else FIRES
    directions = (False,) if cronsim else (False, True)
    peer_fires = cronsim_fires if cronsim else croniter_fires
    rng = random.Random(args.seed)
    changes = {name: offset_changes(name, 1971, 2099, timedelta(minutes=15)) for name in zones}
    counts: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    wrong: list[str] = []
    others: list[str] = []
    hung: list[str] = []
    for number in range(expressions):
        roll = rng.random()
        if cronsim:
            expr = random_expression(rng, early_hours=number % 2 == 1)
        elif roll < 0.02:
            expr = rng.choice(EXTRAS)
        elif roll < 0.35:
            expr = random_six_field_expression(rng, early_hours=number % 2 == 1)
        else:
            expr = random_expression(rng, early_hours=number % 2 == 1)
        zone = rng.choice(zones)
        tz = None if zone == "UTC" else ZoneInfo(zone)
        counts["expressions"] += 1
        try:
            peer_fires(expr, tz, LOW + 86400, False, fires)
        except (CroniterError, CronSimError, ValueError, KeyError, IndexError):
            counts[f"{args.peer} cannot read"] += 1
            continue
        schedule = CronSchedule(expr, tz=zone)
        for _ in range(2):
            if changes[zone] and rng.random() < 0.6:
                start = rng.choice(changes[zone]) + rng.uniform(-NEAR, NEAR)
            else:
                start = rng.uniform(LOW, HIGH)
            for reverse in directions:
                counts["comparisons"] += 1
                ours = our_fires(schedule, start, reverse, fires)
                try:
                    theirs = peer_fires(expr, tz, start, reverse, fires)
                except Hung:
                    counts[f"{args.peer} hung (over {HANG} s)"] += 1
                    hung.append(f"{expr!r} {zone} after {start}")
                    continue
                except (CroniterError, CronSimError, ValueError, KeyError, IndexError):
                    counts[f"{args.peer} failed mid-way"] += 1
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
                kind = category(expr, near, args.peer)
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
    for line in hung:
        print("hung:", line)
    for line in others:
        print("other:", line)
    return {**counts, **{f"kind {k}": float(v) for k, v in kinds.items()}}


if __name__ == "__main__":
    main()
