"""lldsched's cron against cronie, read from its source (tests/cronie_reference.py).

The reference parses the five fields as cronie's ``src/entry.c`` does and runs
cronie's daemon loop (``src/cron.c``) minute by real minute with ``TZ`` set to the
schedule's zone.  Hypothesis writes expressions in cronie's grammar (numbers with
leading zeros, ranges, ``*/s``, ``a-b/s``, steps past the field's top, names in any
case, 0 and 7 for Sunday, lists, the nicknames) and, for the grammar test, texts
cronie or we refuse (reversed ranges, values out of range, ``n/s``, ``L``, ``#``,
words, empty items).  Then:

* **Grammar.** Where both accept, the values, the day rule and the wall-clock flag
  agree; where only one accepts, the text is of a kind docs/CRON.md names ("Where we
  differ from croniter and cronie"); where both refuse, our message names the field
  cronie's does.
* **Fire times.** From random starts in UTC, Europe/London, America/New_York,
  Australia/Lord_Howe (30-minute DST), Pacific/Apia and Asia/Kolkata, 1990 to 2035,
  a third of them within 36 hours of an offset change where the zone has one and a
  sixth or more at a month's or a year's end or a 29 February, the real minutes at
  which cronie runs the job equal our fires, up to our third fire (or a year).  Two
  departures are stated as rules and checked, not skipped: cronie runs a fixed-time
  job once for each of its wall minutes a spring-forward gap swallowed, where we fire
  once; and Apia's skipped 30 December 2011, which cronie does not see (its offset
  changed, its DST flag did not), is left to its own test.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lldsched import CronSchedule, ScheduleError
from lldsched.schedules.cron.parse import FIELD_NAMES, CronFields, parse
from tests import cronie_reference as cronie
from tests.cron_reference import offset_changes

ZONES = (
    "UTC",
    "Europe/London",
    "America/New_York",
    "Australia/Lord_Howe",
    "Pacific/Apia",
    "Asia/Kolkata",
)
FIRST, LAST = 1990, 2035
EPOCH_FIRST = datetime(FIRST, 1, 1, tzinfo=UTC).timestamp()
EPOCH_LAST = datetime(LAST, 1, 1, tzinfo=UTC).timestamp()
YEAR = 366 * 86400
FIRES = 3
# Apia's 30 December 2011: Thursday 23:59:59 -10:00 was followed by Saturday 00:00
# +14:00, both daylight time.  cronie re-reads its UTC offset only when tm_isdst
# flips, so a daemon running across it kept -10:00 until DST ended on 1 April 2012.
APIA_SKIP = cronie.utc(2011, 12, 30, 10)
APIA_STALE_END = cronie.utc(2012, 3, 31, 14)  # 04:00 +14:00 on 1 April: tm_isdst flips
SETTINGS = settings(
    max_examples=1500,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
_CHANGES = {zone: offset_changes(zone, FIRST, LAST) for zone in ZONES}

# -- expressions in cronie's grammar -----------------------------------------------------

_LOW = (0, 0, 1, 1, 0)
_HIGH = (59, 23, 31, 12, 7)
_NAMES: tuple[tuple[str, ...] | None, ...] = (
    None,
    None,
    None,
    ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"),
    ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"),
)
_NICKNAMES = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
# Values that make month ends, leap days and DST hours likely.
_FAVOURED = ((0, 30, 59), (0, 1, 2, 3, 23), (1, 28, 29, 30, 31), (1, 2, 12), (0, 5, 6, 7))


def _spell(rng: random.Random, index: int, value: int) -> str:
    names = _NAMES[index]
    first = _LOW[index]
    roll = rng.random()
    if names and roll < 0.3 and value - first < len(names):
        name = names[value - first]
        return rng.choice([name, name.lower(), name.title()])
    if roll > 0.93:  # leading zeros: cronie's strtol reads 07 as 7
        return f"0{value}"
    return str(value)


def _value(rng: random.Random, index: int) -> int:
    if rng.random() < 0.4:
        return rng.choice(_FAVOURED[index])
    return rng.randint(_LOW[index], _HIGH[index])


def _item(rng: random.Random, index: int) -> str:
    low, high = _LOW[index], _HIGH[index]
    step = rng.randint(1, high) if rng.random() < 0.9 else rng.randint(high + 1, 99)
    roll = rng.random()
    if roll < 0.4:
        return _spell(rng, index, _value(rng, index))
    a = _value(rng, index)
    b = rng.randint(a, high)
    if roll < 0.6:
        return f"{_spell(rng, index, a)}-{_spell(rng, index, b)}"
    if roll < 0.75:
        return f"*/{step}"
    if roll < 0.9:
        b = a if rng.random() < 0.2 else b
        return f"{_spell(rng, index, a)}-{_spell(rng, index, b)}/{step}"
    return "*" if low == 0 or rng.random() < 0.5 else f"{low}-{high}"


def cronie_expression(rng: random.Random) -> str:
    """A random expression that cronie reads (and so do we, unless it is one whose
    day fields, ANDed, name a day no chosen month has)."""
    if rng.random() < 0.04:
        return rng.choice(_NICKNAMES)
    stars = (0.3, 0.4, 0.6, 0.7, 0.6)
    fields = []
    for index in range(5):
        if rng.random() < stars[index]:
            fields.append("*")
        else:
            count = 1 if rng.random() < 0.7 else rng.randint(2, 3)
            fields.append(",".join(_item(rng, index) for _ in range(count)))
    blanks = (" ", " ", "  ", "\t")
    return "".join(f"{field}{rng.choice(blanks)}" for field in fields[:-1]) + fields[-1]


_WRONG = (
    *("", "*5", "1-", "-1", "1--2", "*/0", "1/2", "5/", "L", "LW", "5L", "5#3", "1,", ",1"),
    *("?", "x", "MONDAY", "jan/2", "*/jan", "99", "60", "24", "32", "13", "8", "0"),
    *("5-0", "5-1", "50-70/30", "0-99/100", "sat-sun", "dec-jan", "5-0/2", "1.5", "+1"),
)


def any_text(rng: random.Random) -> str:
    """A cronie expression with, often, one field made doubtful."""
    text = cronie_expression(rng)
    if text.startswith("@"):
        return rng.choice((text, text.upper(), text.title(), "@reboot", "@weekday"))
    fields = text.split()
    for _ in range(rng.choice((0, 1, 1, 2))):
        index = rng.randrange(5)
        fields[index] = rng.choice(_WRONG) or fields[index]
        if rng.random() < 0.3:
            fields[index] = f"{fields[index]},{_item(rng, index)}"
    return " ".join(fields)


# -- the grammar ---------------------------------------------------------------------------

_CRONIE_FIELD = {
    "bad minute": "minute",
    "bad hour": "hour",
    "bad day-of-month": "day of month",
    "bad month": "month",
    "bad day-of-week": "day of week",
}


def _ours(text: str) -> CronFields | str:
    try:
        return parse(text)
    except ScheduleError as error:
        return str(error)


def _refusal_is_documented(text: str, message: str) -> bool:
    """cronie reads it, we refuse it: one of the refusals docs/CRON.md lists."""
    ends_at_zero = any(
        "-" in item and item.split("/")[0].split("-")[-1].strip("0") == ""
        for item in text.replace(",", " ").split()
    )
    return (
        "reversed range" in message  # cronie: no value, or a-7 when it ends at 0
        or ("0 is out of range" in message and ends_at_zero)  # cronie since 2025: a-7
        or "never occurs in" in message  # cronie reads it and never runs it
        or ("is out of range" in message and "/" in text)  # cronie: a step past the end
    )


def _extension_is_documented(text: str) -> bool:
    """We read it, cronie refuses it: an extension docs/CRON.md lists."""
    fields = text.split()
    if text.startswith("@"):
        return text.lower() != text  # nicknames in any case
    dom, dow = fields[2].upper(), fields[4].upper()
    n_s = any(
        "/" in item and item.split("/")[0] not in ("*",) and "-" not in item.split("/")[0]
        for field in fields
        for item in field.split(",")
    )
    return n_s or "L" in dom or "L" in dow or "#" in dow


@SETTINGS
@given(st.randoms(use_true_random=False))
@example(random.Random(0))
def test_grammar_agrees_with_cronie(rng: random.Random) -> None:
    text = any_text(rng)
    theirs, ours = cronie.parse(text), _ours(text)
    if isinstance(theirs, str) and isinstance(ours, str):
        if not text.startswith("@"):  # both refuse: cronie refuses the field we name too
            named = [i for i in range(5) if ours.startswith(f"cron {FIELD_NAMES[i]} field:")]
            assert named, (text, ours)
            alone = ["0", "0", "1", "1", "0"]
            alone[named[0]] = text.split()[named[0]]
            assert isinstance(cronie.parse(" ".join(alone)), str) or _refusal_is_documented(
                text, ours
            ), (text, theirs, ours)
        return
    if isinstance(ours, str):
        assert _refusal_is_documented(text, ours), (text, ours)
        return
    if isinstance(theirs, str):
        assert _extension_is_documented(text), (text, theirs)
        return
    assert not isinstance(ours, str)
    assert set(ours.minutes) == theirs.minute, text
    assert set(ours.hours) == theirs.hour, text
    assert set(ours.days) == theirs.dom, text
    assert set(ours.months) == theirs.month, text
    assert set(ours.weekdays) == theirs.dow - {7}, text
    # The day rule, day by day (@daily: cronie ORs, we AND, both fields full).
    star = theirs.dom_star or theirs.dow_star
    for day in range(1, 32):
        for weekday in range(7):  # cronie's 7 is set whenever its 0 is
            dom, dow = day in ours.days, weekday in ours.weekdays
            mine = (dom and dow) if ours.days_and else (dom or dow)
            dom, dow = day in theirs.dom, weekday in theirs.dow
            assert mine == ((dom and dow) if star else (dom or dow)), (text, day, weekday)
    assert ours.wall_clock == (not theirs.wild), text


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ("61 * * * *", "minute", "61"),
        ("0 24 * * *", "hour", "24"),
        ("0 0 32 * *", "day of month", "32"),
        ("0 0 0 * *", "day of month", "0"),
        ("0 0 1 13 *", "month", "13"),
        ("0 0 * * 8", "day of week", "8"),
        ("0 0 * jam *", "month", "'jam'"),
        ("0 0 * * monday", "day of week", "'monday'"),
        ("*/0 * * * *", "minute", "'*/0'"),
        ("0 */x * * *", "hour", "'*/x'"),
        ("5-1 * * * *", "minute", "'5-1'"),
        ("1,,2 * * * *", "minute", "'1,,2'"),
        ("0 0 * * 5-0", "day of week", "'5-0'"),
        ("0 0 1-2-3 * *", "day of month", "'2-3'"),
    ],
)
def test_a_bad_field_is_named_with_its_value(text: str, field: str, value: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        CronSchedule(text)
    message = str(caught.value)
    assert message.startswith(f"cron {field} field:")
    assert value in message
    assert text in message


# -- fire times ------------------------------------------------------------------------------


def _start(rng: random.Random, zone: str) -> float:
    """Uniform in 1990-2035; a third near an offset change, a sixth at a local month's
    end (often December's, or a 28 or 29 February)."""
    roll = rng.random()
    changes = _CHANGES[zone]
    if roll < 0.33 and changes:
        return rng.choice(changes) + rng.uniform(-36, 36) * 3600
    if roll < 0.5:
        year = rng.randint(FIRST, LAST - 1)
        month = rng.choice((12, 12, 2, 2, rng.randint(1, 12)))
        first_next = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=ZoneInfo(zone))
        day = rng.choice((0, 1)) if month == 2 else 0
        return (first_next - timedelta(days=day)).timestamp() + rng.uniform(-6, 2) * 3600
    return rng.uniform(EPOCH_FIRST, EPOCH_LAST)


def _window(schedule: CronSchedule, start: float) -> float:
    """Up to our third fire after ``start``, or a year."""
    fires = list(schedule.fire_times(start, FIRES))
    return fires[-1] if len(fires) == FIRES else start + YEAR


def _apia_stale(zone: str, start: float, end: float) -> bool:
    """Does (start, end] meet the months cronie reads Apia's clock a day behind?"""
    before = start - cronie.PREAMBLE * 60  # the daemon's start
    return zone == "Pacific/Apia" and before < APIA_STALE_END and end >= APIA_SKIP


def compare(text: str, zone: str, start: float) -> tuple[list[float], list[float]]:
    """Our fires and cronie's runs over the same window after ``start``."""
    schedule = CronSchedule(text, tz=zone)
    end = _window(schedule, start)
    ours = [t for t in schedule.fire_times(start, FIRES) if t <= end]
    entry = cronie.parse(text)
    assert not isinstance(entry, str), (text, entry)
    return ours, cronie.daemon_runs(entry, zone, start, end)


def _repeats_are_gap_catch_ups(text: str, zone: str, runs: list[float]) -> bool:
    """cronie's extra runs of one minute: a fixed-time job caught up after a gap."""
    entry = cronie.parse(text)
    assert not isinstance(entry, str)
    repeated = [t for t, n in Counter(runs).items() if n > 1]
    tz = ZoneInfo(zone)
    forward = all(
        (datetime.fromtimestamp(t - 60, tz).utcoffset() or timedelta())
        < (datetime.fromtimestamp(t, tz).utcoffset() or timedelta())
        for t in repeated
    )
    return not repeated or (not entry.wild and forward)


@SETTINGS
@given(st.randoms(use_true_random=False), st.sampled_from(ZONES))
def test_fire_times_agree_with_cronie(rng: random.Random, zone: str) -> None:
    text = cronie_expression(rng)
    try:
        CronSchedule(text)
    except ScheduleError:
        return  # day fields ANDed on a day no chosen month has: the grammar test's
    start = _start(rng, zone)
    ours, runs = compare(text, zone, start)
    if _apia_stale(zone, start, max([start, *ours, *runs])):
        return  # test_apia_skipped_day_is_a_clock_cronie_did_not_see
    assert ours == sorted(set(runs)), (text, zone, start)
    assert _repeats_are_gap_catch_ups(text, zone, runs), (text, zone, start)


def _local(ts: float, zone: str) -> str:
    return datetime.fromtimestamp(ts, ZoneInfo(zone)).strftime("%a %d %H:%M %Z")


def test_a_gap_swallowing_several_times_runs_cronie_a_job_once_each() -> None:
    """cronie's catch-up after a spring-forward gap queues a fixed-time job for each
    of its wall minutes the gap swallowed, running the queue between them; we fire
    once (a schedule is a set of instants).  docs/CRON.md, "Where we differ"."""
    zone = "America/New_York"
    start = cronie.utc(2026, 3, 8, 5)  # 00:00 EST on 8 March, the day clocks go forward
    end = cronie.utc(2026, 3, 9, 4)  # 23:00 EDT
    for text, times in (("0,20,40 2 * * *", 3), ("0 2,3 * * *", 2)):
        entry = cronie.parse(text)
        assert not isinstance(entry, str)
        runs = cronie.daemon_runs(entry, zone, start, end)
        assert [_local(t, zone) for t in runs] == ["Sun 08 03:00 EDT"] * times
        ours = list(CronSchedule(text, tz=zone).fire_times(start, 2))
        assert [_local(t, zone) for t in ours] == ["Sun 08 03:00 EDT", "Mon 09 02:00 EDT"]


def test_apia_skipped_day_is_a_clock_cronie_did_not_see() -> None:
    """Apia went from Thursday 29 December 2011 -10:00 to Saturday 31 December +14:00,
    in daylight time on both sides.  cronie's ``set_time`` re-reads the UTC offset
    only when ``tm_isdst`` flips, so a daemon running across the change kept
    Thursday's clock, a day behind, until DST ended on 1 April 2012: its Friday
    09:00 runs were at 09:00 on Saturdays.  We follow the zone: Friday the 30th's
    run moves to the first minute after the gap, and then Fridays are Fridays.
    docs/CRON.md, "Time zones and DST"."""
    zone = "Pacific/Apia"
    start = cronie.utc(2011, 12, 29, 12)  # 02:00 -10:00 on Thursday 29 December
    end = cronie.utc(2012, 1, 14, 0)  # 14:00 +14:00 on Saturday 14 January
    schedule = CronSchedule("0 9 * * fri", tz=zone)
    ours = [t for t in schedule.fire_times(start, 10) if t <= end]
    entry = cronie.parse("0 9 * * fri")
    assert not isinstance(entry, str)
    runs = cronie.daemon_runs(entry, zone, start, end)
    assert [_local(t, zone) for t in ours] == [
        "Sat 31 00:00 +14",
        "Fri 06 09:00 +14",
        "Fri 13 09:00 +14",
    ]
    assert [_local(t, zone) for t in runs] == [
        "Sat 31 09:00 +14",
        "Sat 07 09:00 +14",
        "Sat 14 09:00 +14",
    ]
    # A daemon started after the change reads the offset afresh and agrees with us.
    later = cronie.utc(2012, 1, 1, 12)
    assert cronie.daemon_runs(entry, zone, later, end) == [t for t in ours if t > later]


def test_a_cron_tz_job_is_missed_or_run_twice_by_cronie_and_not_by_us() -> None:
    """A crontab's ``CRON_TZ`` is read by cronie at each real minute of its daemon's
    clock: on a machine in UTC a fixed-time job of a DST zone does not run when its
    time falls in a gap, and runs twice when it falls in an overlap.  Ours keeps the
    rule of the daemon's own zone, the rule cronie applies when the machine itself is
    in that zone.  docs/CRON.md, "Moving a crontab"."""
    zone = "America/New_York"
    spring, fall = cronie.utc(2026, 3, 7, 17), cronie.utc(2026, 10, 31, 16)  # 12:00 local
    for text, start, theirs, ours in (
        ("30 2 * * *", spring, ["Mon 09 02:30 EDT"], ["Sun 08 03:00 EDT", "Mon 09 02:30 EDT"]),
        (
            "30 1 * * *",
            fall,
            ["Sun 01 01:30 EDT", "Sun 01 01:30 EST", "Mon 02 01:30 EST"],
            ["Sun 01 01:30 EDT", "Mon 02 01:30 EST"],
        ),
    ):
        entry = cronie.parse(text)
        assert not isinstance(entry, str)
        end = start + 2 * 86400
        runs = cronie.cron_tz_runs(entry, zone, start, end)
        assert [_local(t, zone) for t in runs] == theirs
        mine = [t for t in CronSchedule(text, tz=zone).fire_times(start, 3) if t <= end]
        assert [_local(t, zone) for t in mine] == ours
        # With the machine itself in the zone, cronie and we agree.
        assert cronie.daemon_runs(entry, zone, start, end) == mine
