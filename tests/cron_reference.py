"""A slow, obviously-correct cron reference for the cron tests, and a random expression maker.

The reference walks every UTC minute and reads the wall clock with ``zoneinfo``; it
shares nothing with the engine's search (month tables, cursors, DST day plans)
except the parsed field values.  The DST rule it encodes is the one documented in
``lldsched.schedules.cron``:

* a wall-clock job (minute and hour fields do not start with ``*``) fires at the
  first pass of a matching wall time, and once at the first instant after a gap
  that swallowed a matching wall time;
* every other job fires at every real instant whose wall time matches.

It only suits zones whose offsets are whole minutes (all modern ones).
"""

from __future__ import annotations

import calendar
import random
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from lldsched import CronSchedule
from lldsched.schedules.cron.parse import CronFields, parse

__all__ = [
    "day_matches",
    "offset_changes",
    "random_expression",
    "random_six_field_expression",
    "reference_fires",
    "wall_matches",
]


def day_matches(f: CronFields, year: int, month: int, day: int) -> bool:
    """The month and real cron's day rule, straight from the definitions."""
    if month not in f.months:
        return False
    length = calendar.monthrange(year, month)[1]
    weekday = (calendar.weekday(year, month, day) + 1) % 7  # Sunday 0
    last_weekday = length
    while calendar.weekday(year, month, last_weekday) >= 5:  # Saturday, Sunday
        last_weekday -= 1
    dom = (
        day in f.days or (f.last_day and day == length) or (f.last_weekday and day == last_weekday)
    )
    dow = (
        weekday in f.weekdays
        or (weekday in f.last_of and day + 7 > length)
        or (weekday, (day + 6) // 7) in f.nth
    )
    return (dom and dow) if f.days_and else (dom or dow)


def wall_matches(f: CronFields, wall: datetime) -> bool:
    """Does the wall-clock time ``wall`` (naive) match every field?"""
    return (
        wall.minute in f.minutes
        and wall.hour in f.hours
        and day_matches(f, wall.year, wall.month, wall.day)
    )


def reference_fires(expr: str, tz: str, start: float, end: float) -> list[float]:
    """Every fire in (start, end], by walking UTC minutes.

    A six-field expression fires at each of its seconds of every minute the five
    fields fire in (a wall time a gap moved keeps its second)."""
    f = parse(expr)
    if f.has_seconds:
        five = " ".join(expr.split()[1:])
        minutes = reference_fires(five, tz, start - 60, end)
        every = sorted({m + s for m in minutes for s in f.seconds})
        return [t for t in every if start < t <= end]
    zone = UTC if tz == "UTC" else ZoneInfo(tz)
    fires = []
    minute = (int(start) // 60 + 1) * 60
    previous = datetime.fromtimestamp(minute - 60, zone).replace(tzinfo=None)
    while minute <= end:
        local = datetime.fromtimestamp(minute, zone)
        wall = local.replace(tzinfo=None)
        if minute > start:
            if f.wall_clock:
                fires_here = wall_matches(f, wall) and local.fold == 0
                skipped = previous + timedelta(minutes=1)
                while not fires_here and skipped < wall:  # a gap swallowed these
                    fires_here = wall_matches(f, skipped)
                    skipped += timedelta(minutes=1)
            else:
                fires_here = wall_matches(f, wall)
            if fires_here:
                fires.append(float(minute))
        previous = wall
        minute += 60
    return fires


def offset_changes(
    name: str, first: int = 1995, last: int = 2035, to: timedelta = timedelta(hours=1)
) -> list[float]:
    """The offset changes of a zone from the year ``first`` to ``last``, found day by
    day, each at the first multiple of ``to`` (from that day's midnight UTC) past it."""
    if name == "UTC":
        return []
    tz = ZoneInfo(name)
    changes = []
    day = datetime(first, 1, 1, tzinfo=UTC)
    previous = day.astimezone(tz).utcoffset()
    while day.year < last:
        day += timedelta(days=1)
        offset = day.astimezone(tz).utcoffset()
        if offset != previous:
            when = day - timedelta(days=1)
            while when.astimezone(tz).utcoffset() == previous:
                when += to
            changes.append(when.timestamp())
            previous = offset
    return changes


_MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
_DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
_BLANKS = (" ",) * 8 + ("  ", "\t")  # fields are separated by any run of blanks


def _spell(rng: random.Random, value: int, names: list[str] | None, first: int) -> str:
    roll = rng.random()
    if names and roll < 0.3 and 0 <= value - first < len(names):
        name = names[value - first]
        return rng.choice([name, name.lower(), name.title()])
    if roll > 0.93:  # leading zeros: cronie's strtol, cronsim's int() and we read 07 as 7
        return f"0{value}" if roll < 0.98 else f"00{value}"
    return str(value)


def _step(rng: random.Random, high: int) -> int:
    """Mostly 1 to the field's top; sometimes more, which leaves only the start
    (cronie warns and accepts, cronsim and we accept)."""
    return rng.randint(1, high) if rng.random() < 0.9 else rng.randint(high + 1, 99)


def _item(rng: random.Random, index: int) -> str:
    low, high = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7), (0, 59))[index]
    names, first = (None, 0)
    if index == 3:
        names, first = _MONTHS, 1
    elif index == 4:
        names, first = _DAYS, 0
    roll = rng.random()
    if index == 2 and roll < 0.06:
        return rng.choice(["L", "LW", "l", "lw"])
    if index == 4 and roll < 0.06:
        return f"{rng.randint(0, 7)}{rng.choice('Ll')}"
    if index == 4 and roll < 0.12:  # d#n, d from 0 to 7 (7#2: second Sunday)
        return f"{_spell(rng, rng.randint(0, 7), names, first)}#{rng.randint(1, 5)}"
    roll = rng.random()
    if roll < 0.35:
        return _spell(rng, rng.randint(low, high), names, first)
    if roll < 0.55:
        a = rng.randint(low, high)
        b = rng.randint(a, high)
        return f"{_spell(rng, a, names, first)}-{_spell(rng, b, names, first)}"
    if roll < 0.7:
        return f"*/{_step(rng, high)}"
    if roll < 0.8:  # a-b/s, a fifth of them a-a/s (one value: cronsim 2.9, cronie and we)
        a = rng.randint(low, high)
        b = a if rng.random() < 0.2 else rng.randint(a, high)
        return f"{_spell(rng, a, names, first)}-{_spell(rng, b, names, first)}/{_step(rng, high)}"
    if roll < 0.9:
        return f"{_spell(rng, rng.randint(low, high), names, first)}/{_step(rng, high)}"
    return "*"


def random_expression(rng: random.Random, *, early_hours: bool = False) -> str:
    """A random valid five-field expression in the spellings cronsim shares with us.

    ``early_hours`` keeps most hour fields within 0-3, where DST changes happen.
    """
    stars = (0.3, 0.4, 0.6, 0.7, 0.6)
    while True:
        fields = []
        for index in range(5):
            if rng.random() < stars[index]:
                fields.append("*")
            elif index == 1 and early_hours and rng.random() < 0.7:
                fields.append(",".join(str(rng.randint(0, 3)) for _ in range(rng.randint(1, 2))))
            else:
                count = 1 if rng.random() < 0.7 else rng.randint(2, 3)
                fields.append(",".join(_item(rng, index) for _ in range(count)))
        expr = "".join(f"{field}{rng.choice(_BLANKS)}" for field in fields[:-1]) + fields[-1]
        try:
            CronSchedule(expr)
        except ValueError:  # e.g. day 31 of February only, with the day fields ANDed
            continue
        return expr


def random_six_field_expression(rng: random.Random, *, early_hours: bool = False) -> str:
    """A random valid six-field expression: a seconds field, then five fields."""
    if rng.random() < 0.3:
        second = "*"
    else:
        count = 1 if rng.random() < 0.7 else rng.randint(2, 3)
        second = ",".join(_item(rng, 5) for _ in range(count))
    return f"{second} {random_expression(rng, early_hours=early_hours)}"
