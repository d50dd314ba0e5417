"""Time zones and DST: wall-clock jobs keep their meaning, others step through real
instants, and every answer is strictly after the instant asked about.

The 2026 changes used here:

* America/New_York: spring forward Sun 8 March 02:00 EST -> 03:00 EDT (07:00 UTC);
  fall back Sun 1 November 02:00 EDT -> 01:00 EST (06:00 UTC): 01:00-01:59 twice.
* Europe/Berlin: spring forward Sun 29 March 02:00 CET -> 03:00 CEST (01:00 UTC);
  fall back Sun 25 October 03:00 CEST -> 02:00 CET (01:00 UTC): 02:00-02:59 twice.
* Australia/Lord_Howe shifts by 30 minutes: Sun 5 April 02:00 -> 01:30 (+11 -> +10:30),
  Sun 4 October 02:00 -> 02:30 (+10:30 -> +11).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

from lldsched import CronSchedule
from lldsched.schedules.cron.parse import parse
from lldsched.schedules.cron.search import CronEngine
from lldsched.schedules.cron.zone import LocalDay, LocalDays
from tests.cron_reference import reference_fires

NY, BERLIN, LORD_HOWE = "America/New_York", "Europe/Berlin", "Australia/Lord_Howe"


def at(
    zone: str, year: int, month: int, day: int, hour: int = 0, minute: int = 0, *, fold: int = 0
) -> float:
    """The instant a wall-clock reading in ``zone`` stands for (PEP 495 ``fold``)."""
    return datetime(year, month, day, hour, minute, tzinfo=ZoneInfo(zone), fold=fold).timestamp()


def fires(expr: str, zone: str, start: float, n: int) -> list[str]:
    """Fire times as local wall time with offset: '2026-03-08 03:00-04:00'."""
    tz = ZoneInfo(zone)
    return [
        datetime.fromtimestamp(t, tz).isoformat(" ", "minutes")
        for t in CronSchedule(expr, tz=zone).fire_times(start, n)
    ]


# -- a fixed time in the spring-forward gap runs once, right after the gap ---------------


def test_new_york_0230_runs_at_0300_on_the_day_0230_does_not_exist() -> None:
    assert fires("30 2 * * *", NY, at(NY, 2026, 3, 7, 12), 3) == [
        "2026-03-08 03:00-04:00", "2026-03-09 02:30-04:00", "2026-03-10 02:30-04:00",
    ]  # fmt: skip


def test_berlin_0230_runs_at_0300_on_the_day_0230_does_not_exist() -> None:
    assert fires("30 2 * * *", BERLIN, at(BERLIN, 2026, 3, 28, 12), 2) == [
        "2026-03-29 03:00+02:00", "2026-03-30 02:30+02:00",
    ]  # fmt: skip


def test_several_fixed_times_in_the_gap_still_run_only_once() -> None:
    assert fires("0,20,40 2 * * *", NY, at(NY, 2026, 3, 8, 0), 2) == [
        "2026-03-08 03:00-04:00", "2026-03-09 02:00-04:00",
    ]  # fmt: skip


def test_a_fixed_time_after_the_gap_is_not_merged_with_the_gap_run() -> None:
    assert fires("30 2,3 * * *", NY, at(NY, 2026, 3, 8, 0), 3) == [
        "2026-03-08 03:00-04:00", "2026-03-08 03:30-04:00", "2026-03-09 02:30-04:00",
    ]  # fmt: skip


def test_a_fixed_time_away_from_the_changes_is_untouched() -> None:
    assert fires("30 1 * * *", BERLIN, at(BERLIN, 2026, 3, 28, 12), 2) == [
        "2026-03-29 01:30+01:00", "2026-03-30 01:30+02:00",
    ]  # fmt: skip
    assert fires("30 1 * * *", NY, at(NY, 2026, 3, 7, 12), 2) == [
        "2026-03-08 01:30-05:00", "2026-03-09 01:30-04:00",
    ]  # fmt: skip


# -- a fixed time in the fall-back overlap runs once, at its first occurrence ------------


def test_new_york_0130_runs_once_in_the_repeated_hour_at_the_first_pass() -> None:
    assert fires("30 1 * * *", NY, at(NY, 2026, 10, 31, 12), 3) == [
        "2026-11-01 01:30-04:00", "2026-11-02 01:30-05:00", "2026-11-03 01:30-05:00",
    ]  # fmt: skip


def test_berlin_0230_runs_once_in_the_repeated_hour_at_the_first_pass() -> None:
    assert fires("30 2 * * *", BERLIN, at(BERLIN, 2026, 10, 24, 12), 2) == [
        "2026-10-25 02:30+02:00", "2026-10-26 02:30+01:00",
    ]  # fmt: skip


# -- other jobs step through real instants -------------------------------------------


def test_every_20_minutes_in_hour_2_skips_the_day_hour_2_does_not_exist() -> None:
    assert fires("*/20 2 * * *", NY, at(NY, 2026, 3, 7, 12), 4) == [
        "2026-03-09 02:00-04:00", "2026-03-09 02:20-04:00", "2026-03-09 02:40-04:00",
        "2026-03-10 02:00-04:00",
    ]  # fmt: skip
    assert fires("*/20 2 * * *", BERLIN, at(BERLIN, 2026, 3, 28, 12), 1) == [
        "2026-03-30 02:00+02:00"
    ]


def test_every_20_minutes_in_a_repeated_hour_fires_in_both_passes() -> None:
    assert fires("*/20 2 * * *", BERLIN, at(BERLIN, 2026, 10, 25, 0), 7) == [
        "2026-10-25 02:00+02:00", "2026-10-25 02:20+02:00", "2026-10-25 02:40+02:00",
        "2026-10-25 02:00+01:00", "2026-10-25 02:20+01:00", "2026-10-25 02:40+01:00",
        "2026-10-26 02:00+01:00",
    ]  # fmt: skip
    assert fires("*/20 1 * * *", NY, at(NY, 2026, 11, 1, 0), 7) == [
        "2026-11-01 01:00-04:00", "2026-11-01 01:20-04:00", "2026-11-01 01:40-04:00",
        "2026-11-01 01:00-05:00", "2026-11-01 01:20-05:00", "2026-11-01 01:40-05:00",
        "2026-11-02 01:00-05:00",
    ]  # fmt: skip


def test_an_hourly_job_fires_in_both_passes_of_the_repeated_hour() -> None:
    assert fires("0 * * * *", NY, at(NY, 2026, 11, 1, 0, 30), 4) == [
        "2026-11-01 01:00-04:00", "2026-11-01 01:00-05:00", "2026-11-01 02:00-05:00",
        "2026-11-01 03:00-05:00",
    ]  # fmt: skip
    assert fires("0 * * * *", BERLIN, at(BERLIN, 2026, 10, 25, 1, 30), 3) == [
        "2026-10-25 02:00+02:00", "2026-10-25 02:00+01:00", "2026-10-25 03:00+01:00",
    ]  # fmt: skip


def test_an_hourly_job_skips_the_hour_that_does_not_exist() -> None:
    assert fires("0 * * * *", NY, at(NY, 2026, 3, 8, 0, 30), 3) == [
        "2026-03-08 01:00-05:00", "2026-03-08 03:00-04:00", "2026-03-08 04:00-04:00",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("zone", "day", "count"),
    [(NY, (2026, 3, 8), 23), (NY, (2026, 11, 1), 25), (BERLIN, (2026, 3, 29), 23),
     (BERLIN, (2026, 10, 25), 25), (NY, (2026, 6, 1), 24)],
)  # fmt: skip
def test_an_hourly_job_fires_once_per_real_hour_of_the_day(
    zone: str, day: tuple[int, int, int], count: int
) -> None:
    schedule = CronSchedule("0 * * * *", tz=zone)
    start = at(zone, *day) - 1  # midnight exists on these days
    end = at(zone, day[0], day[1], day[2] + 1) - 1
    assert len([t for t in schedule.fire_times(start, 30) if t <= end]) == count


# -- strictly after, also from inside a gap or the second pass of an overlap -------------


def test_a_start_written_inside_the_gap_is_read_with_its_fold_and_answered_after_it() -> None:
    # 02:30 on 8 March does not exist in New York: fold=0 reads it with the old offset
    # (07:30 UTC, after the gap), fold=1 with the new one (06:30 UTC, before it).
    after_gap = at(NY, 2026, 3, 8, 2, 30, fold=0)
    before_gap = at(NY, 2026, 3, 8, 2, 30, fold=1)
    assert (after_gap, before_gap) == (at(NY, 2026, 3, 8, 3, 30), at(NY, 2026, 3, 8, 1, 30))
    assert fires("30 2 * * *", NY, after_gap, 1) == ["2026-03-09 02:30-04:00"]
    assert fires("30 2 * * *", NY, before_gap, 1) == ["2026-03-08 03:00-04:00"]
    assert fires("*/20 2 * * *", NY, before_gap, 1) == ["2026-03-09 02:00-04:00"]
    assert fires("0 * * * *", NY, before_gap, 1) == ["2026-03-08 03:00-04:00"]


def test_a_start_at_the_gap_run_itself_moves_on_to_the_next_day() -> None:
    gap_run = at(NY, 2026, 3, 8, 3, 0)
    assert fires("30 2 * * *", NY, gap_run, 1) == ["2026-03-09 02:30-04:00"]
    assert fires("30 2 * * *", NY, gap_run - 0.5, 1) == ["2026-03-08 03:00-04:00"]


def test_a_start_in_the_second_pass_does_not_go_back_to_the_first_pass() -> None:
    second_pass = at(NY, 2026, 11, 1, 1, 45, fold=1)  # 06:45 UTC, after 01:50 EDT (05:50 UTC)
    assert fires("50 1 * * *", NY, second_pass, 1) == ["2026-11-02 01:50-05:00"]
    assert fires("30 1 * * *", NY, second_pass, 1) == ["2026-11-02 01:30-05:00"]
    assert fires("*/20 1 * * *", NY, second_pass, 1) == ["2026-11-02 01:00-05:00"]
    assert fires("0 * * * *", NY, second_pass, 1) == ["2026-11-01 02:00-05:00"]
    berlin_second = at(BERLIN, 2026, 10, 25, 2, 45, fold=1)
    assert fires("50 2 * * *", BERLIN, berlin_second, 1) == ["2026-10-26 02:50+01:00"]
    assert fires("*/20 2 * * *", BERLIN, berlin_second, 1) == ["2026-10-26 02:00+01:00"]


def test_a_start_in_the_first_pass_still_sees_the_rest_of_both_passes() -> None:
    first_pass = at(NY, 2026, 11, 1, 1, 45, fold=0)
    assert fires("50 1 * * *", NY, first_pass, 1) == ["2026-11-01 01:50-04:00"]
    assert fires("*/20 1 * * *", NY, first_pass, 2) == [
        "2026-11-01 01:00-05:00", "2026-11-01 01:20-05:00",
    ]  # fmt: skip


def test_prev_before_follows_the_same_rules_backwards() -> None:
    schedule = CronSchedule("30 2 * * *", tz=NY)
    assert schedule.prev_before(at(NY, 2026, 3, 9, 0)) == at(NY, 2026, 3, 8, 3, 0)
    hourly = CronSchedule("0 * * * *", tz=NY)
    assert hourly.prev_before(at(NY, 2026, 11, 1, 1, 30, fold=1)) == at(NY, 2026, 11, 1, 1, fold=1)
    assert hourly.prev_before(at(NY, 2026, 11, 1, 1, fold=1)) == at(NY, 2026, 11, 1, 1, fold=0)


# -- a 30-minute shift ---------------------------------------------------------------


def test_lord_howe_half_hour_gap_moves_a_fixed_time_to_0230() -> None:
    assert fires("15 2 * * *", LORD_HOWE, at(LORD_HOWE, 2026, 10, 3, 12), 2) == [
        "2026-10-04 02:30+11:00", "2026-10-05 02:15+11:00",
    ]  # fmt: skip


def test_lord_howe_half_hour_overlap_repeats_quarter_hours_but_not_fixed_times() -> None:
    assert fires("*/15 * * * *", LORD_HOWE, at(LORD_HOWE, 2026, 4, 5, 1, 10), 6) == [
        "2026-04-05 01:15+11:00", "2026-04-05 01:30+11:00", "2026-04-05 01:45+11:00",
        "2026-04-05 01:30+10:30", "2026-04-05 01:45+10:30", "2026-04-05 02:00+10:30",
    ]  # fmt: skip
    assert fires("45 1 * * *", LORD_HOWE, at(LORD_HOWE, 2026, 4, 5, 0), 2) == [
        "2026-04-05 01:45+11:00", "2026-04-06 01:45+10:30",
    ]  # fmt: skip


def test_lord_howe_change_days_keep_every_minute_away_from_the_change() -> None:
    # only 02:00-02:29 is missing on 4 October, and 01:30-01:59 repeats on 5 April:
    # every other hour keeps all its minutes (cronsim 2.8 answers 11:30 for the first
    # and 03:32 for the third: it treats the half-hour change as a whole hour)
    assert fires("* 11 * * *", LORD_HOWE, at(LORD_HOWE, 2026, 10, 4, 0, 25), 2) == [
        "2026-10-04 11:00+11:00", "2026-10-04 11:01+11:00",
    ]  # fmt: skip
    assert fires("*/27 16 * * *", LORD_HOWE, at(LORD_HOWE, 2026, 4, 5, 3), 3) == [
        "2026-04-05 16:00+10:30", "2026-04-05 16:27+10:30", "2026-04-05 16:54+10:30",
    ]  # fmt: skip
    assert fires("32 * * * *", LORD_HOWE, at(LORD_HOWE, 2026, 10, 4, 0), 3) == [
        "2026-10-04 00:32+10:30", "2026-10-04 01:32+10:30", "2026-10-04 02:32+11:00",
    ]  # fmt: skip


# -- a whole skipped date: Pacific/Apia, 2011 ------------------------------------------
# Samoa crossed the date line: Thu 29 December 2011 23:59:59 -10:00 was followed by
# Sat 31 December 00:00 +14:00, so Friday 30 December has no wall time at all.

APIA = "Pacific/Apia"


def test_a_fixed_time_on_the_skipped_date_runs_once_when_the_clock_resumes() -> None:
    # the gap rule, whatever the gap's length: the 30th's 02:30 runs at the first
    # minute after the gap, and the 31st's own 02:30 still runs (cronsim agrees;
    # cronie skips the 30th's run: see docs/CRON.md)
    assert fires("30 2 * * *", APIA, at(APIA, 2011, 12, 29, 12), 3) == [
        "2011-12-31 00:00+14:00", "2011-12-31 02:30+14:00", "2012-01-01 02:30+14:00",
    ]  # fmt: skip
    assert fires("0 0 * * *", APIA, at(APIA, 2011, 12, 29, 12), 2) == [
        "2011-12-31 00:00+14:00", "2012-01-01 00:00+14:00",
    ]  # fmt: skip


def test_a_job_on_every_hour_does_not_fire_in_the_gap() -> None:
    assert fires("0 * * * *", APIA, at(APIA, 2011, 12, 29, 22), 3) == [
        "2011-12-29 23:00-10:00", "2011-12-31 00:00+14:00", "2011-12-31 01:00+14:00",
    ]  # fmt: skip


def test_a_fixed_time_on_the_skipped_weekday_runs_on_the_next_day_that_exists() -> None:
    # Friday 30 December's 09:00 is in the gap, so the Friday job runs on Saturday at
    # 00:00, as cronsim's does, and then on the next Friday
    friday = CronSchedule("0 9 * * fri", tz=APIA)
    assert fires("0 9 * * fri", APIA, at(APIA, 2011, 12, 29, 12), 2) == [
        "2011-12-31 00:00+14:00", "2012-01-06 09:00+14:00",
    ]  # fmt: skip
    assert friday.prev_before(at(APIA, 2012, 1, 6)) == at(APIA, 2011, 12, 31)
    # a job that is not wall-clock has no run to move: nothing between the 23rd and 6th
    assert fires("*/30 9 * * fri", APIA, at(APIA, 2011, 12, 23, 12), 1) == [
        "2012-01-06 09:00+14:00"
    ]


# -- against the minute-walking reference around every change --------------------------

CHANGES = [
    (NY, datetime(2026, 3, 8, 7, tzinfo=UTC)),
    (NY, datetime(2026, 11, 1, 6, tzinfo=UTC)),
    (BERLIN, datetime(2026, 3, 29, 1, tzinfo=UTC)),
    (BERLIN, datetime(2026, 10, 25, 1, tzinfo=UTC)),
    (LORD_HOWE, datetime(2026, 4, 4, 15, tzinfo=UTC)),
    (LORD_HOWE, datetime(2026, 10, 3, 15, 30, tzinfo=UTC)),
    # Santiago changes at midnight: Sun 5 April 00:00 -03 -> Sat 23:00 -04, so 5 April
    # starts just after the change; Sun 6 September 00:00 -04 -> 01:00 -03, so 5
    # September ends at it (a day whose change is at its first or last instant)
    ("America/Santiago", datetime(2026, 4, 5, 3, tzinfo=UTC)),
    ("America/Santiago", datetime(2026, 9, 6, 4, tzinfo=UTC)),
    # Nuuk (-3, then -2) changed with the EU, at 01:00 UTC: at 22:00 and 23:00 local, the
    # day before the date the change falls on in UTC
    ("America/Nuuk", datetime(2020, 3, 29, 1, tzinfo=UTC)),
    ("America/Nuuk", datetime(2020, 10, 25, 1, tzinfo=UTC)),
]
EXPRESSIONS = [
    "30 2 * * *", "30 1 * * *", "*/20 2 * * *", "0 * * * *", "*/15 * * * *",
    "0,30 1-3 * * *", "15 2 * * *", "45 1 * * *", "* 2 * * *", "0 0 * * *", "59 1 * * *",
]  # fmt: skip


@pytest.mark.parametrize(("zone", "change"), CHANGES)
@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_every_fire_around_a_change_matches_the_minute_walking_reference(
    expr: str, zone: str, change: datetime
) -> None:
    start, end = change.timestamp() - 26 * 3600, change.timestamp() + 26 * 3600
    schedule = CronSchedule(expr, tz=zone)
    expected = reference_fires(expr, zone, start, end)
    got = [t for t in schedule.fire_times(start, len(expected) + 1) if t <= end]
    assert got == expected
    # every start between two fires leads to the later one, from any instant
    for t in range(int(start), int(end), 1201):
        later = [f for f in expected if f > t]
        if later:
            assert CronSchedule(expr, tz=zone).next_after(t) == later[0]
        earlier = [f for f in expected if f < t]
        if earlier:
            assert CronSchedule(expr, tz=zone).prev_before(t) == earlier[-1]


@pytest.mark.parametrize(
    ("expr", "start"),
    [
        ("51/16 * * * */7", datetime(1997, 10, 25, 18, 28, 25, tzinfo=UTC)),
        ("* 23/15,23,4 * * SUN-2", datetime(1988, 10, 29, 7, 28, 33, tzinfo=UTC)),
        ("52-54,58 * * * */5", datetime(2009, 11, 1, 0, 55, 59, tzinfo=UTC)),
    ],
)
def test_st_johns_changes_at_0001_match_the_reference_where_cronsim_never_answers(
    expr: str, start: datetime
) -> None:
    """St. John's changed its clocks at 00:01 until 2011, so a fall-back moves the wall
    clock from Sunday 00:01 back into Saturday.  cronsim 2.9 never returns from these
    starts (tools/cron_vs_peers.py --peer cronsim); every fire of the next two days here
    is the minute-walking reference's."""
    zone = "America/St_Johns"
    begin = start.timestamp()
    expected = reference_fires(expr, zone, begin, begin + 2 * 86400)
    schedule = CronSchedule(expr, tz=zone)
    assert expected and list(schedule.fire_times(begin, len(expected))) == expected


def test_a_zone_s_changes_before_1970_are_kept_as_after_it() -> None:
    # New York sprang forward on Sun 27 April 1969 (02:00 EST -> 03:00 EDT) and fell back
    # on Sun 26 October 1969 (02:00 EDT -> 01:00 EST): the offsets of instants before
    # the epoch are read without fromtimestamp, which Windows refuses for them
    spring = CronSchedule("30 2 * * *", tz=NY)
    assert list(spring.fire_times(at(NY, 1969, 4, 25, 12), 3)) == [
        at(NY, 1969, 4, 26, 2, 30), at(NY, 1969, 4, 27, 3), at(NY, 1969, 4, 28, 2, 30),
    ]  # fmt: skip
    assert at(NY, 1969, 4, 26, 2, 30) == datetime(1969, 4, 26, 7, 30, tzinfo=UTC).timestamp()
    assert at(NY, 1969, 4, 28, 2, 30) == datetime(1969, 4, 28, 6, 30, tzinfo=UTC).timestamp()
    fall = CronSchedule("30 1 * * *", tz=NY)
    assert list(fall.fire_times(at(NY, 1969, 10, 25, 12), 2)) == [
        at(NY, 1969, 10, 26, 1, 30), at(NY, 1969, 10, 27, 1, 30),
    ]  # fmt: skip
    assert fall.prev_before(at(NY, 1969, 10, 27)) == at(NY, 1969, 10, 26, 1, 30)


def test_a_month_of_fires_whose_last_date_is_a_change_day_takes_the_change() -> None:
    # Iterating, the fires of a month after the first are worked out in one block when
    # its offset holds; here its dates (6 and 8 March) are probed every three days from
    # the 5th, and the 8th's 02:00 change falls after the last probe: two days after the
    # last date are probed too, so 03:30 on the 8th is EDT, not an hour late
    assert fires("30 3 1,6,8 3 *", NY, at(NY, 2026, 2, 28), 4) == [
        "2026-03-01 03:30-05:00", "2026-03-06 03:30-05:00", "2026-03-08 03:30-04:00",
        "2027-03-01 03:30-05:00",
    ]  # fmt: skip


def each_wall_second_read(engine: CronEngine, day: LocalDay) -> tuple[float, ...]:
    """A change day's fires by :meth:`CronEngine.transition_fires`' rule, every wall time
    of the fields read with both offsets, one by one."""
    assert day.shift is not None
    before, after, shift = day.before, day.after, day.shift
    after_gap = -(-(shift + after) // 60) * 60 - after
    fires: set[int] = set()
    for h in engine.fields.hours:
        for offset in engine.minute_secs:
            wall = day.wall + h * 3600 + int(offset)
            first, second = wall - before, wall - after
            real_first, real_second = first < shift, second >= shift
            if engine.fields.wall_clock:
                fires.add(
                    first if real_first else second if real_second else after_gap + int(offset) % 60
                )
            else:
                fires.update(([first] if real_first else []) + ([second] if real_second else []))
    return tuple(float(t) for t in sorted(fires))


@pytest.mark.parametrize(
    "zone", [NY, BERLIN, LORD_HOWE, "Pacific/Apia", "Antarctica/Troll", "Asia/Tehran"]
)
@pytest.mark.parametrize(
    "expr", ["* * * * * *", "*/7 1-4 * * * *", "15 30 2 * * *", "* 1,2 * * *", "0 0 * * *"]
)
def test_a_change_days_fires_taken_an_hour_at_a_time_are_each_seconds_read(
    zone: str, expr: str
) -> None:
    """A change day's hours clear of the change take their fires in one step
    (:meth:`CronEngine.transition_fires`): the same as every wall second read with both
    offsets, on every change day of 2011 (Apia skipped a whole day that December, Troll
    changes by two hours, Lord Howe by 30 minutes)."""
    days = LocalDays(zone)
    engine = CronEngine(parse(expr), days)
    changes = [
        (ordinal, day)
        for ordinal in range(date(2011, 1, 1).toordinal(), date(2012, 1, 1).toordinal())
        if (day := days.day(ordinal)).shift is not None
    ]
    assert len(changes) >= 2
    for ordinal, day in changes:
        assert engine.transition_fires(ordinal, day) == each_wall_second_read(engine, day)
