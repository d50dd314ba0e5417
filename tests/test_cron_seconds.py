"""Six-field cron: a seconds field first (cronsim's convention), parsed, searched,
explained and checked, with the DST rules of five fields unchanged.

The differential test against cronsim covers six fields too
(``tests/test_cron_differential.py``); this file holds the worked examples.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from lldsched import CronSchedule, ScheduleError
from lldsched.cli import main
from lldsched.cli.cron import cron_report
from lldsched.schedules.cron import schedule as cron_module
from lldsched.schedules.cron.parse import parse
from lldsched.sim import Simulation
from tests.cron_reference import reference_fires

NY, BERLIN = "America/New_York", "Europe/Berlin"
T = datetime(2026, 6, 1, 9, 0, tzinfo=UTC).timestamp()  # a Monday, 09:00:00 UTC


def at(zone: str, year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> float:
    return datetime(year, month, day, hour, minute, tzinfo=ZoneInfo(zone)).timestamp()


def local(expr: str, zone: str, start: float, n: int) -> list[str]:
    schedule = CronSchedule(expr, tz=zone)
    tz = ZoneInfo(zone)
    return [
        datetime.fromtimestamp(t, tz).strftime("%d %H:%M:%S%z")
        for t in schedule.fire_times(start, n)
    ]


# -- the grammar ---------------------------------------------------------------------


def test_a_sixth_field_in_front_is_the_seconds() -> None:
    f = parse("*/15 30 9 * * *")
    assert f.seconds == (0, 15, 30, 45)
    assert (f.minutes, f.hours) == ((30,), (9,))
    assert f.has_seconds
    assert f.text == "*/15 30 9 * * *"


def test_a_five_field_expression_fires_at_second_zero() -> None:
    f = parse("30 9 * * *")
    assert f.seconds == (0,)
    assert not f.has_seconds


def test_the_seconds_field_takes_every_form_the_minute_field_takes() -> None:
    assert parse("5-10 * * * * *").seconds == (5, 6, 7, 8, 9, 10)
    assert parse("50/3 * * * * *").seconds == (50, 53, 56, 59)
    assert parse("0,30 * * * * *").seconds == (0, 30)
    assert parse("10-40/15 * * * * *").seconds == (10, 25, 40)
    assert parse("* * * * * *").seconds == tuple(range(60))


def test_the_day_rule_and_the_dst_kind_read_the_five_fields_after_the_seconds() -> None:
    assert parse("* 30 2 * * *").wall_clock  # a star in the seconds field does not count
    assert not parse("0 */20 2 * * *").wall_clock
    assert not parse("0 0 * * * *").wall_clock
    assert parse("0 0 0 */2 * 1").days_and
    assert not parse("0 0 0 13 * 5").days_and


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("60 * * * * *", "cron second field: 60 is out of range 0-59"),
        ("*/0 * * * * *", "cron second field: step must be a number >= 1 in '*/0'"),
        ("30-10 * * * * *", "cron second field: reversed range '30-10'"),
        ("1,,2 * * * * *", "cron second field: empty list item in '1,,2'"),
        ("jan * * * * *", "cron second field: 'jan' is not a number"),
        ("L * * * * *", "cron second field: 'L' is not a number"),
        ("0 60 * * * *", "cron minute field: 60 is out of range 0-59"),
        ("0 * * * * 8", "cron day of week field: 8 is out of range 0-7"),
        ("0 0 0 30 2 *", "cron day of month field: '30' never occurs in Feb"),
        ("0 0 0 */16 1 0L", "no date is both day of month '*/16' and day of week '0L'"),
        ("* * * * * * *", "has 7 fields; expected 5"),
        ("* * * * * * *", "6 with a second first"),
    ],
)
def test_a_bad_six_field_expression_is_rejected_naming_the_field(expr: str, message: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        CronSchedule(expr)
    assert message in str(caught.value)
    assert repr(expr) in str(caught.value)


def test_equal_six_field_text_and_zone_share_one_parse_and_compare_equal() -> None:
    first = CronSchedule("*/15 * * * * *", tz=BERLIN)
    second = CronSchedule("*/15 * * * * *", BERLIN)
    assert first == second and hash(first) == hash(second)
    assert first._engine is second._engine  # the (text, zone) cache serves six fields too
    assert first != CronSchedule("*/15 * * * *", tz=BERLIN)
    assert repr(first) == "CronSchedule('*/15 * * * * *', tz='Europe/Berlin')"
    assert cron_module._engine.cache_info().hits > 0


# -- when it fires ----------------------------------------------------------------------


def test_every_fifteen_seconds_fires_four_times_a_minute_across_boundaries() -> None:
    start = datetime(2026, 12, 31, 23, 59, 20, tzinfo=UTC).timestamp()
    fires = list(CronSchedule("*/15 * * * * *").fire_times(start, 5))
    assert [datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S") for t in fires] == [
        "2026-12-31 23:59:30",
        "2026-12-31 23:59:45",
        "2027-01-01 00:00:00",
        "2027-01-01 00:00:15",
        "2027-01-01 00:00:30",
    ]


def test_the_next_fire_is_strictly_after_the_instant_even_between_seconds() -> None:
    schedule = CronSchedule("30 * * * * *")
    assert schedule.next_after(T + 30) == T + 90
    assert schedule.next_after(T + 29.5) == T + 30
    assert schedule.prev_before(T + 30) == T - 30
    assert schedule.prev_before(T + 30.5) == T + 30


def test_every_second_iterates_a_whole_day_hour_by_hour_without_a_day_table() -> None:
    schedule = CronSchedule("* * * * * *")
    fires = list(schedule.fire_times(T - 0.5, 86_401))
    assert fires == [T + i for i in range(86_401)]
    assert schedule._engine.day_secs is None and not schedule._engine.full_day


@pytest.mark.parametrize(
    "five", ["30 2 * * *", "*/20 2 * * *", "0 * * * *", "0,30 1-3 * * *", "5 4 * * sun"]
)
@pytest.mark.parametrize("zone", ["UTC", NY, BERLIN])
def test_a_zero_seconds_field_fires_exactly_when_the_five_fields_do(five: str, zone: str) -> None:
    start = at(zone, 2026, 3, 1) if zone != "UTC" else T
    six, plain = CronSchedule(f"0 {five}", tz=zone), CronSchedule(five, tz=zone)
    assert list(six.fire_times(start, 400)) == list(plain.fire_times(start, 400))
    fall = at(zone, 2026, 10, 20) if zone != "UTC" else T
    assert list(six.fire_times(fall, 400)) == list(plain.fire_times(fall, 400))


def test_a_wall_clock_time_in_a_spring_forward_gap_runs_after_it_keeping_its_second() -> None:
    # New York, 8 March 2026: 02:00 EST -> 03:00 EDT; 02:30:15 does not exist
    assert local("15 30 2 * * *", NY, at(NY, 2026, 3, 7, 12), 3) == [
        "08 03:00:15-0400",
        "09 02:30:15-0400",
        "10 02:30:15-0400",
    ]


def test_a_wall_clock_minute_in_a_gap_runs_each_of_its_seconds_once_after_it() -> None:
    assert local("*/20 30 2 * * *", NY, at(NY, 2026, 3, 8, 1), 4) == [
        "08 03:00:00-0400",
        "08 03:00:20-0400",
        "08 03:00:40-0400",
        "09 02:30:00-0400",
    ]


def test_a_wall_clock_time_in_a_fall_back_overlap_runs_once_at_the_first_pass() -> None:
    # New York, 1 November 2026: 01:00-01:59 happens twice
    assert local("10 30 1 * * *", NY, at(NY, 2026, 10, 31, 12), 2) == [
        "01 01:30:10-0400",
        "02 01:30:10-0500",
    ]


def test_a_job_with_a_starred_hour_steps_through_real_instants_in_both_changes() -> None:
    spring = local("30 0 * * * *", NY, at(NY, 2026, 3, 8, 1, 30), 2)
    assert spring == ["08 03:00:30-0400", "08 04:00:30-0400"]  # 02:00:30 does not exist
    fall = local("30 0 * * * *", NY, at(NY, 2026, 11, 1, 0, 30), 3)
    assert fall == ["01 01:00:30-0400", "01 01:00:30-0500", "01 02:00:30-0500"]


@pytest.mark.parametrize(
    "expr", ["15 30 2 * * *", "*/20 * 2 * * *", "0,30 0 * * * *", "45 59 1 * * *", "5 45 1 * * *"]
)
@pytest.mark.parametrize(
    ("zone", "change"),
    [
        (NY, datetime(2026, 3, 8, 7, tzinfo=UTC)),
        (NY, datetime(2026, 11, 1, 6, tzinfo=UTC)),
        (BERLIN, datetime(2026, 3, 29, 1, tzinfo=UTC)),
        (BERLIN, datetime(2026, 10, 25, 1, tzinfo=UTC)),
    ],
)
def test_every_fire_around_a_change_matches_the_reference(
    expr: str, zone: str, change: datetime
) -> None:
    start, end = change.timestamp() - 26 * 3600, change.timestamp() + 26 * 3600
    expected = reference_fires(expr, zone, start, end)
    got = [t for t in CronSchedule(expr, tz=zone).fire_times(start, len(expected) + 1) if t <= end]
    assert got == expected
    for t in range(int(start), int(end), 1777):
        later = [f for f in expected if f > t]
        if later:
            assert CronSchedule(expr, tz=zone).next_after(t) == later[0]
        earlier = [f for f in expected if f < t]
        if earlier:
            assert CronSchedule(expr, tz=zone).prev_before(t) == earlier[-1]


def test_the_simulation_runs_a_six_field_schedule_every_fifteen_seconds() -> None:
    sim = Simulation(workers=1, start=T)
    sim.schedule("tick", CronSchedule("*/15 * * * * *"), duration=1)
    sim.run_for(61)  # the run due at 60 s takes a second
    assert [r.due - T for r in sim.records()] == [15.0, 30.0, 45.0, 60.0]


# -- in words -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "sentence"),
    [
        ("30 * * * * *", "At second 30 of every minute"),
        ("0,30 * * * * *", "At seconds 0 and 30 of every minute"),
        ("*/15 * * * * *", "Every 15 seconds"),
        ("*/45 * * * * *", "Every 45th second of the minute"),  # :00 and :45, not a period
        ("* * * * * *", "Every second"),
        ("5/10 * * * * *", "Every 10 seconds from second 5 through 55"),
        ("0 */5 * * * *", "Every 5 minutes"),
        ("0 0 3 * * 1-5", "At 03:00, Monday through Friday"),
        ("30 0 9 * * 1-5", "At 09:00:30, Monday through Friday"),
        ("0,30 30 2 * * *", "At 02:30:00 and 02:30:30"),
        ("*/10 0 9 * * *", "Every 10 seconds, at 09:00"),
        ("30 */5 * * * *", "At second 30, every 5 minutes"),
        ("15 * * * * mon", "At second 15 of every minute, on Monday"),
    ],
)
def test_explain_says_the_seconds_too(expr: str, sentence: str) -> None:
    assert CronSchedule(expr).explain() == f"{sentence} (UTC)"


def test_the_cron_command_shows_seconds_for_six_fields() -> None:
    lines = cron_report("*/20 59 1 * * *", tz=NY, n=4, start="2026-03-08")
    assert lines == [
        "*/20 59 1 * * *  (America/New_York)",
        "Every 20 seconds, at 01:59",
        "next 4 fire times after 2026-03-08 00:00:00 EST:",
        "  Sun 2026-03-08 01:59:00 EST  = 2026-03-08 06:59:00 UTC",
        "  Sun 2026-03-08 01:59:20 EST  = 2026-03-08 06:59:20 UTC",
        "  Sun 2026-03-08 01:59:40 EST  = 2026-03-08 06:59:40 UTC",
        "  Mon 2026-03-09 01:59:00 EDT  = 2026-03-09 05:59:00 UTC",
    ]


def test_the_cron_command_rejects_a_bad_seconds_field_naming_it() -> None:
    with pytest.raises(ScheduleError, match="cron second field: 61 is out of range 0-59"):
        cron_report("61 * * * * *")


def test_the_cron_command_line_accepts_six_fields(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["cron", "*/15 * * * * *", "-n", "2", "--start", "2026-06-01T09:00:05"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert out.splitlines()[1:] == [
        "Every 15 seconds",
        "next 2 fire times after 2026-06-01 09:00:05 UTC:",
        "  Mon 2026-06-01 09:00:15 UTC  = 2026-06-01 09:00:15 UTC",
        "  Mon 2026-06-01 09:00:30 UTC  = 2026-06-01 09:00:30 UTC",
    ]
