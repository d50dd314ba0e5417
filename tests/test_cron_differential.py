"""The engine against cronsim on thousands of random expressions: zero disagreements.

Random valid expressions (numbers, ranges, steps, lists, names in any case, 0/7 for
Sunday, ``L``, ``LW``, ``nL``, ``d#n``) and random start instants, half of them within
a day and a half of a DST change (a fifth within an hour of it), in UTC,
Europe/Berlin and America/New_York.  The seed is fixed, so a failure reproduces.
Each start is followed for three fires.

Two documented differences are stated as rules and checked, not skipped:

* Strictly after, in the second pass of a fall-back overlap: cronsim drops the
  ``fold`` of a start given to a wall-clock job (fixed minute and hour) and may
  answer with the *first* pass of a wall time the start has already passed, an
  instant before the start.  We answer strictly after the start: the first fire
  after the overlap, which is what cronsim answers from the overlap's last second.
* Gaps of more than 50 years: cronsim gives up after 50 years; we search 100.

The generator does not write ``a-a/s``: cronsim reads it as ``a/s`` (``a``-MAX every
``s``), cronie and we as the single value ``a`` (see test_cron_parse).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

from cronsim import CronSim

from lldsched import CronSchedule
from tests.cron_reference import random_expression

SEED = 20261130
EXPRESSIONS = 4000
STEPS = 3
ZONES = ("UTC", "Europe/Berlin", "America/New_York")
EPOCH_1995 = datetime(1995, 1, 1, tzinfo=UTC).timestamp()
EPOCH_2035 = datetime(2035, 1, 1, tzinfo=UTC).timestamp()
FIFTY_YEARS = 50 * 365.25 * 86400


def zone_of(name: str) -> tzinfo:
    return UTC if name == "UTC" else ZoneInfo(name)


def offset_changes(name: str) -> list[float]:
    """The DST changes of a zone between 1995 and 2035, found day by day."""
    if name == "UTC":
        return []
    tz = ZoneInfo(name)
    changes = []
    day = datetime(1995, 1, 1, tzinfo=UTC)
    previous = day.astimezone(tz).utcoffset()
    while day.year < 2035:
        day += timedelta(days=1)
        offset = day.astimezone(tz).utcoffset()
        if offset != previous:
            hour = day - timedelta(days=1)
            while hour.astimezone(tz).utcoffset() == previous:
                hour += timedelta(hours=1)
            changes.append(hour.timestamp())
            previous = offset
    return changes


def cronsim_next(expr: str, tz: tzinfo, after: float) -> float | None:
    try:
        return next(CronSim(expr, datetime.fromtimestamp(after, tz))).timestamp()
    except StopIteration:  # nothing within 50 years
        return None


def overlap_last_second(tz: tzinfo, start: float) -> float:
    """The last second of the fall-back overlap whose second pass holds ``start``."""
    assert datetime.fromtimestamp(start, tz).fold == 1
    end = int(start)
    while datetime.fromtimestamp(end + 1, tz).fold == 1:
        end += 1
    return float(end)


def test_the_engine_agrees_with_cronsim_on_thousands_of_random_expressions() -> None:
    rng = random.Random(SEED)
    changes = {name: offset_changes(name) for name in ZONES}
    disagreements: list[str] = []
    second_pass_rule = compared = 0
    for number in range(EXPRESSIONS):
        expr = random_expression(rng, early_hours=number % 2 == 1)
        for name in ZONES:
            tz = zone_of(name)
            schedule = CronSchedule(expr, tz=name)
            roll = rng.random()
            if changes[name] and roll < 0.2:  # in or next to a gap or an overlap
                start = rng.choice(changes[name]) + rng.uniform(-3600, 3600)
            elif changes[name] and roll < 0.5:
                start = rng.choice(changes[name]) + rng.uniform(-36 * 3600, 36 * 3600)
            else:
                start = rng.uniform(EPOCH_1995, EPOCH_2035)
            for _ in range(STEPS):
                ours = schedule.next_after(start)
                theirs = cronsim_next(expr, tz, start)
                compared += 1
                if theirs is not None and theirs <= start:
                    # cronsim went back to the first pass of the overlap: the rule we follow
                    second_pass_rule += 1
                    theirs = cronsim_next(expr, tz, overlap_last_second(tz, start))
                if theirs is None:  # cronsim gives up after 50 years without a fire
                    if ours is not None and ours - start <= FIFTY_YEARS - 86400:
                        disagreements.append(f"{expr!r} {name} after {start}: {ours} vs none")
                    break
                if ours != theirs:
                    disagreements.append(f"{expr!r} {name} after {start}: {ours} vs {theirs}")
                    break
                start = ours
    assert disagreements == []
    assert compared > 20_000
    assert second_pass_rule > 0  # the overlap rule was exercised, not just stated


def test_the_second_pass_rule_on_its_own() -> None:
    ny = ZoneInfo("America/New_York")
    start = datetime(2026, 11, 1, 1, 45, fold=1, tzinfo=ny).timestamp()  # 01:45 EST
    cronsim_answer = next(CronSim("50 1 * * *", datetime.fromtimestamp(start, ny)))
    assert cronsim_answer.isoformat() == "2026-11-01T01:50:00-04:00"  # before the start
    assert cronsim_answer.timestamp() < start
    ours = CronSchedule("50 1 * * *", tz="America/New_York").next_after(start)
    assert ours == datetime(2026, 11, 2, 1, 50, tzinfo=ny).timestamp()


def test_previous_fires_agree_with_cronsim_in_reverse() -> None:
    rng = random.Random(SEED + 1)
    disagreements = []
    for _ in range(600):
        expr = random_expression(rng)
        start = rng.uniform(EPOCH_1995, EPOCH_2035)
        ours = CronSchedule(expr).prev_before(start)
        try:
            reverse = CronSim(expr, datetime.fromtimestamp(start, UTC), reverse=True)
            theirs: float | None = next(reverse).timestamp()
        except StopIteration:
            theirs = None
        if theirs is None:
            if ours is not None and start - ours <= FIFTY_YEARS - 86400:
                disagreements.append(f"{expr!r} before {start}: {ours} vs none")
        elif ours != theirs:
            disagreements.append(f"{expr!r} before {start}: {ours} vs {theirs}")
    assert disagreements == []
