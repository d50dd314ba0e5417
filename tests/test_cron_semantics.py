"""When an expression fires (in UTC): the day rule, L / LW / nL / d#n, leap days, year
rollover, gaps of decades, the 100-year horizon, previous fires, and the English."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, date, datetime

import pytest

from lldsched import CronSchedule, ExecutionRecord, ScheduleError
from lldsched.clock import utc_datetime
from lldsched.schedules.cron.schedule import MAX_PREVIEW


def ts(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> float:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC).timestamp()


def fires(expr: str, start: float, n: int) -> list[str]:
    return [
        datetime.fromtimestamp(t, UTC).strftime("%a %Y-%m-%d %H:%M")
        for t in CronSchedule(expr).fire_times(start, n)
    ]


def days(expr: str, start: float, n: int) -> list[str]:
    return [
        datetime.fromtimestamp(t, UTC).strftime("%a %Y-%m-%d")
        for t in CronSchedule(expr).fire_times(start, n)
    ]


# -- strictly after, and after a run (the five foundation expressions are in
# tests/test_schedules_cron.py) ----------------------------------------------------


def test_the_next_fire_is_strictly_after_the_instant_asked_about() -> None:
    at = ts(2026, 11, 30, 9, 15)
    schedule = CronSchedule("*/15 * * * *")
    assert schedule.next_after(at) == at + 900
    assert schedule.next_after(at - 0.001) == at
    assert schedule.next_after(at + 0.5) == at + 900


def test_a_retry_record_reschedules_after_its_slot_when_it_finished_early() -> None:
    cron = CronSchedule("0 * * * *")
    slot = ts(2026, 11, 30, 9)
    record = ExecutionRecord("task-1", "t", 2, slot - 5, slot, 0, slot - 5, slot - 4, True)
    assert cron.next_run(record, slot - 4) == ts(2026, 11, 30, 10)


# -- minutes, hours, rollovers --------------------------------------------------------


def test_every_minute_fires_on_each_minute_boundary() -> None:
    assert fires("* * * * *", ts(2026, 12, 31, 23, 58, 30), 3) == [
        "Thu 2026-12-31 23:59", "Fri 2027-01-01 00:00", "Fri 2027-01-01 00:01",
    ]  # fmt: skip


def test_an_hour_range_with_a_step_fires_on_the_stepped_hours() -> None:
    assert fires("0 9-17/2 * * mon-fri", ts(2026, 12, 4, 16), 3) == [
        "Fri 2026-12-04 17:00", "Mon 2026-12-07 09:00", "Mon 2026-12-07 11:00",
    ]  # fmt: skip


def test_a_yearly_job_rolls_over_into_the_next_year() -> None:
    assert fires("@yearly", ts(2026, 1, 1), 2) == ["Fri 2027-01-01 00:00", "Sat 2028-01-01 00:00"]


def test_a_weekly_job_by_day_name() -> None:
    assert fires("5 4 * * sun", ts(2026, 11, 30), 2) == [
        "Sun 2026-12-06 04:05",
        "Sun 2026-12-13 04:05",
    ]


def test_sunday_as_seven_fires_on_sundays() -> None:
    assert days("0 0 * * 7", ts(2026, 11, 30), 2) == ["Sun 2026-12-06", "Sun 2026-12-13"]


def test_a_day_of_the_month_that_some_months_lack_skips_those_months() -> None:
    assert days("0 0 31 * *", ts(2026, 1, 31), 3) == [
        "Tue 2026-03-31",
        "Sun 2026-05-31",
        "Fri 2026-07-31",
    ]


# -- the day rule --------------------------------------------------------------------


def test_the_day_fields_are_anded_when_one_starts_with_a_star() -> None:
    # odd days of the month that are also Mondays
    assert days("0 0 */2 * 1", ts(2026, 11, 30), 3) == [
        "Mon 2026-12-07",
        "Mon 2026-12-21",
        "Mon 2027-01-11",
    ]


def test_the_day_fields_are_ored_when_neither_starts_with_a_star() -> None:
    # the 1st, the 15th, and every Monday
    assert days("0 0 1,15 * 1", ts(2026, 11, 30), 5) == [
        "Tue 2026-12-01", "Mon 2026-12-07", "Mon 2026-12-14", "Tue 2026-12-15", "Mon 2026-12-21",
    ]  # fmt: skip


def test_friday_or_the_thirteenth_is_an_or() -> None:
    assert days("0 0 13 * 5", ts(2026, 2, 10), 3) == [
        "Fri 2026-02-13",
        "Fri 2026-02-20",
        "Fri 2026-02-27",
    ]
    assert days("0 0 13 * 5", ts(2026, 3, 10), 2) == ["Fri 2026-03-13", "Fri 2026-03-20"]
    assert days("0 0 13 * 5", ts(2026, 4, 11), 2) == ["Mon 2026-04-13", "Fri 2026-04-17"]


def test_a_full_range_in_one_day_field_still_ors_so_every_day_fires() -> None:
    assert days("0 0 1-31 * 1", ts(2026, 11, 30), 2) == ["Tue 2026-12-01", "Wed 2026-12-02"]


def test_only_the_first_character_decides_so_a_star_later_in_a_list_still_ors() -> None:
    # cronie sets its "star" flag from the field's first character: '1,*' is an OR
    # whose day of month allows every day (croniter reads it as *, ANDed: Mondays only)
    assert days("0 0 1,* * mon", ts(2026, 11, 30), 3) == [
        "Tue 2026-12-01", "Wed 2026-12-02", "Thu 2026-12-03",
    ]  # fmt: skip
    assert days("0 0 * * mon,*", ts(2026, 11, 30), 2) == ["Tue 2026-12-01", "Wed 2026-12-02"]


def test_the_month_is_always_anded() -> None:
    # the 1st or a Monday, but only in February
    assert days("0 0 1 2 1", ts(2026, 1, 1), 3) == [
        "Sun 2026-02-01",
        "Mon 2026-02-02",
        "Mon 2026-02-09",
    ]
    assert days("0 0 1 2 1", ts(2026, 2, 22), 2) == ["Mon 2026-02-23", "Mon 2027-02-01"]


# -- L, LW, nL, d#n ------------------------------------------------------------------


def test_l_is_the_last_day_of_each_month_including_leap_february() -> None:
    assert days("0 0 L * *", ts(2028, 1, 15), 3) == [
        "Mon 2028-01-31",
        "Tue 2028-02-29",
        "Fri 2028-03-31",
    ]
    assert days("0 0 L 2 *", ts(2026, 3, 1), 3) == [
        "Sun 2027-02-28",
        "Tue 2028-02-29",
        "Wed 2029-02-28",
    ]


def test_lw_is_the_last_monday_to_friday_of_the_month() -> None:
    # May 2026 ends on a Sunday, Feb 2026 on a Saturday, Jul 2026 on a Friday
    assert days("0 0 LW * *", ts(2026, 5, 1), 1) == ["Fri 2026-05-29"]
    assert days("0 0 LW * *", ts(2026, 2, 1), 1) == ["Fri 2026-02-27"]
    assert days("0 0 LW * *", ts(2026, 7, 1), 1) == ["Fri 2026-07-31"]


def test_5l_is_the_last_friday_of_the_month() -> None:
    assert days("0 0 * * 5L", ts(2026, 1, 1), 3) == [
        "Fri 2026-01-30",
        "Fri 2026-02-27",
        "Fri 2026-03-27",
    ]


def test_5_hash_3_is_the_third_friday_of_the_month() -> None:
    assert days("0 0 * * 5#3", ts(2026, 1, 1), 3) == [
        "Fri 2026-01-16",
        "Fri 2026-02-20",
        "Fri 2026-03-20",
    ]


def test_a_fifth_weekday_fires_only_in_months_that_have_one() -> None:
    assert days("0 0 * * MON#5", ts(2026, 1, 1), 3) == [
        "Mon 2026-03-30",
        "Mon 2026-06-29",
        "Mon 2026-08-31",
    ]


def test_an_nth_weekday_ors_with_the_day_of_month_like_any_weekday() -> None:
    # the 13th, and the second Friday (croniter keeps 5#2 in force on the day-of-month
    # side too, so it fires on second Fridays only: not on Tue 13 January)
    assert days("0 0 13 * 5#2", ts(2026, 1, 1), 4) == [
        "Fri 2026-01-09", "Tue 2026-01-13", "Fri 2026-02-13", "Fri 2026-03-13",
    ]  # fmt: skip
    assert days("0 0 13 * 5L", ts(2026, 1, 1), 3) == [
        "Tue 2026-01-13", "Fri 2026-01-30", "Fri 2026-02-13",
    ]  # fmt: skip


def test_l_ors_with_a_weekday_when_neither_field_starts_with_a_star() -> None:
    assert days("0 0 L * 1", ts(2026, 1, 26), 3) == [
        "Sat 2026-01-31",
        "Mon 2026-02-02",
        "Mon 2026-02-09",
    ]


# -- leap days and long gaps ---------------------------------------------------------


def test_february_29_fires_every_four_years_and_skips_1900_like_centuries() -> None:
    assert days("0 0 29 2 *", ts(2024, 3, 1), 3) == [
        "Tue 2028-02-29",
        "Sun 2032-02-29",
        "Fri 2036-02-29",
    ]
    assert days("0 0 29 2 *", ts(2096, 3, 1), 1) == ["Fri 2104-02-29"]  # 2100 is not a leap year
    assert days("0 0 29 2 *", ts(1996, 3, 1), 1) == ["Tue 2000-02-29"]  # 2000 is


def test_the_fifth_monday_of_february_is_a_gap_of_forty_years_across_2100() -> None:
    assert days("0 0 * 2 MON#5", ts(2026, 1, 1), 3) == [
        "Mon 2044-02-29",
        "Mon 2072-02-29",
        "Mon 2112-02-29",
    ]


def test_leap_day_on_a_given_weekday_waits_decades() -> None:
    assert days("0 0 29 2 */7", ts(2021, 1, 1), 2) == ["Sun 2032-02-29", "Sun 2060-02-29"]


def test_nothing_within_a_hundred_years_is_none_never_a_loop() -> None:
    schedule = CronSchedule("0 0 * 2 MON#5")
    assert schedule.next_after(ts(9988, 3, 1)) is None  # datetime ends in 9999
    assert list(schedule.fire_times(ts(9988, 3, 1), 3)) == []


def test_a_forty_year_gap_is_searched_backwards_too() -> None:
    assert CronSchedule("0 0 * 2 MON#5").prev_before(ts(2112, 1, 1)) == ts(2072, 2, 29)


def test_instants_out_of_datetime_range_answer_none_or_raise_for_nan() -> None:
    schedule = CronSchedule("* * * * *")
    assert schedule.next_after(float("inf")) is None
    assert schedule.next_after(1e15) is None
    assert schedule.prev_before(float("-inf")) is None
    assert schedule.next_after(float("-inf")) is not None  # the first minute of year 1
    with pytest.raises(ScheduleError, match="NaN"):
        schedule.next_after(float("nan"))
    with pytest.raises(ScheduleError, match="NaN"):
        schedule.prev_before(float("nan"))


# -- previous fires and iteration --------------------------------------------------


def test_prev_before_is_strictly_before_and_mirrors_next_after() -> None:
    schedule = CronSchedule("0 9-17/2 * * mon-fri")
    at = ts(2026, 12, 7, 9)  # a Monday 09:00, itself a fire
    assert schedule.prev_before(at) == ts(2026, 12, 4, 17)
    assert schedule.prev_before(at + 1) == at
    assert schedule.next_after(schedule.prev_before(at) or 0.0) == at


def test_prev_before_crosses_years_and_leap_days() -> None:
    assert CronSchedule("0 0 29 2 *").prev_before(ts(2104, 1, 1)) == ts(2096, 2, 29)
    assert CronSchedule("@yearly").prev_before(ts(2027, 1, 1)) == ts(2026, 1, 1)


def test_prev_before_answers_none_when_nothing_fired_in_a_hundred_years() -> None:
    assert CronSchedule("0 0 * 2 MON#5").prev_before(ts(1, 6, 1)) is None


def test_fire_times_and_iter_after_agree() -> None:
    schedule = CronSchedule("*/7 3 * * *")
    start = ts(2026, 11, 30)
    many = list(schedule.fire_times(start, 20))
    iterator = schedule.iter_after(start)
    assert [next(iterator) for _ in range(20)] == many
    assert all(a < b for a, b in itertools.pairwise(many))


def test_queries_in_any_order_give_the_same_answers_as_a_fresh_schedule() -> None:
    shared = CronSchedule("*/15 9-10 * * 1-5")
    instants = [
        ts(2026, 12, d, h, m) for d in (7, 5, 4, 7) for h in (8, 9, 10) for m in (0, 14, 59)
    ]
    for at in instants:
        assert shared.next_after(at) == CronSchedule("*/15 9-10 * * 1-5").next_after(at)


def test_iteration_crosses_month_ends_and_weekends_like_single_queries() -> None:
    schedule = CronSchedule("30 2 * * 1-5")
    start = ts(2026, 1, 1)
    iterated = list(schedule.fire_times(start, 300))
    single = []
    at = start
    for _ in range(300):
        at = CronSchedule("30 2 * * 1-5").next_after(at) or 0.0
        single.append(at)
    assert iterated == single


# -- explain and preview --------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "sentence"),
    [
        ("0 3 * * 1-5", "At 03:00, Monday through Friday"),
        ("*/15 * * * *", "Every 15 minutes"),
        ("* * * * *", "Every minute"),
        ("0 * * * *", "Every hour"),
        ("@hourly", "Every hour"),
        ("@daily", "At 00:00"),
        ("@weekly", "At 00:00, on Sunday"),
        ("@monthly", "At 00:00, on day 1 of the month"),
        ("@yearly", "At 00:00, on January 1"),
        ("30 2 * * *", "At 02:30"),
        ("5 4 * * sun", "At 04:05, on Sunday"),
        ("30 2 * * 0,6", "At 02:30, on Sunday and Saturday"),
        ("0 12 31 12 *", "At 12:00, on December 31"),
        ("0 0 29 2 *", "At 00:00, on February 29"),
        ("0 9-17 * * 1-5", "Every hour from 09:00 through 17:00, Monday through Friday"),
        ("0 9-17/2 * * mon-fri", "Every 2 hours from 09:00 through 17:00, Monday through Friday"),
        ("0 9,12,17 * * *", "At 09:00, 12:00 and 17:00"),
        ("0,30 * * * *", "At minutes 0 and 30 of every hour"),
        ("15 * * * *", "At minute 15 of every hour"),
        ("15 */2 * * *", "Every 2 hours at minute 15"),
        ("*/15 9-17 * * *", "Every 15 minutes from 09:00 through 17:59"),
        ("* 3 * * *", "Every minute from 03:00 through 03:59"),
        ("10-20 * * * *", "Every minute from minute 10 through 20"),
        ("0 0 13 * 5", "At 00:00, on day 13 of the month or on Friday"),
        ("0 0 */2 * 1", "At 00:00, on every 2nd day of the month if it is Monday"),
        ("0 0 L * *", "At 00:00, on the last day of the month"),
        ("0 0 LW * *", "At 00:00, on the last weekday of the month"),
        ("0 0 * * 5L", "At 00:00, on the last Friday of the month"),
        ("0 0 * * 5#3", "At 00:00, on the third Friday of the month"),
        ("0 0 1 */3 *", "At 00:00, on day 1 of the month, in January, April, July and October"),
        ("0 0 1 jun-aug *", "At 00:00, on day 1 of the month, in June through August"),
        ("0 0 1,15 * *", "At 00:00, on days 1 and 15 of the month"),
        ("0,30 9,12,15,18 * * *", "At minutes 0 and 30 of hours 9, 12, 15 and 18"),
        ("0-30 2 * * *", "Every minute from 02:00 through 02:30"),
        ("5/15 * * * *", "Every 15 minutes from minute 5 through 50"),
        ("0 0 * * */2", "At 00:00, on Sunday, Tuesday, Thursday and Saturday"),
        ("0 0 1-7 * 1", "At 00:00, on days 1 through 7 of the month or on Monday"),
        # a range among other days is said by its ends, Sunday as 0 or 7 alike
        ("0 0 * * 1,5-7", "At 00:00, on Monday and Friday through Sunday"),
        ("0 0 * * 0,3-6", "At 00:00, on Sunday and Wednesday through Saturday"),
        ("0 0 * * 1,6-7", "At 00:00, on Monday and Saturday through Sunday"),
        ("*/5 * L * *", "Every 5 minutes, on the last day of the month"),
        # a step that does not divide the hour (or the day) is not a period: */7 fires at
        # :56 and again at :00, four minutes later
        ("*/7 * * * *", "Every 7th minute of the hour"),
        ("*/25 * * * *", "Every 25th minute of the hour"),
        ("*/7 9-17 * * *", "Every 7th minute of the hour from 09:00 through 17:59"),
        ("0 */5 * * *", "Every 5th hour of the day"),
        ("15 */5 * * *", "Every 5th hour of the day at minute 15"),
        ("0 */6 * * *", "Every 6 hours"),
        # 0 and 7 are both Sunday, and a value written twice is said once
        ("0 0 * * 0,7", "At 00:00, on Sunday"),
        ("0 0 * * sun,0,7,mon", "At 00:00, on Sunday and Monday"),
        ("0 0 1 jan,1,mar *", "At 00:00, on day 1 of the month, in January and March"),
        # a step that reaches one value is that value: */31 fires on day 1 only
        ("0 0 */31 * *", "At 00:00, on day 1 of the month"),
        ("0 0 20-31/15 * *", "At 00:00, on day 20 of the month"),
        ("0 22-23/5 * * *", "At 22:00"),
        ("47-56/58 * * * *", "At minute 47 of every hour"),
        ("5/60 * * * * *", "At second 5 of every minute"),
        # ANDed day fields: a day is one weekday, so "or" among the weekdays it may be
        (
            "0 0 1 * */2",
            "At 00:00, on day 1 of the month if it is Sunday, Tuesday, Thursday or Saturday",
        ),
        ("0 0 */2 * 1,3", "At 00:00, on every 2nd day of the month if it is Monday or Wednesday"),
        (
            "0 0 */2 * mon-wed,fri",
            "At 00:00, on every 2nd day of the month if it is Monday through Wednesday or Friday",
        ),
        ("0 0 * * 1,3,5", "At 00:00, on Monday, Wednesday and Friday"),
        # two stretches, of the hour and of the day, parted by a comma
        (
            "5-55/10 9-17 * * *",
            "Every 10 minutes from minute 5 through 55, from 09:00 through 17:59",
        ),
        ("5-55/10 9,17 * * *", "Every 10 minutes from minute 5 through 55 of hours 9 and 17"),
    ],
)
def test_explain_says_the_expression_in_plain_english(expr: str, sentence: str) -> None:
    assert CronSchedule(expr).explain() == f"{sentence} (UTC)"  # its zone after it


@pytest.mark.parametrize(
    ("tz", "said"),
    [
        ("UTC", "At 01:30 (UTC)"),  # the default zone is named too: a text read alone
        ("Etc/UTC", "At 01:30 (UTC)"),
        ("Europe/Berlin", "At 01:30 (Europe/Berlin)"),  # 01:30 there, not in UTC
        ("Australia/Lord_Howe", "At 01:30 (Australia/Lord_Howe)"),
    ],
)
def test_explain_names_the_zone_its_times_are_in_utc_too(tz: str, said: str) -> None:
    assert CronSchedule("30 1 * * *", tz=tz).explain() == said


def test_preview_lists_the_next_fires_in_the_schedules_zone() -> None:
    schedule = CronSchedule("0 3 * * 1-5", tz="Europe/Berlin")
    preview = schedule.preview(3, ts(2026, 3, 27))
    assert [d.isoformat() for d in preview] == [
        "2026-03-27T03:00:00+01:00", "2026-03-30T03:00:00+02:00", "2026-03-31T03:00:00+02:00",
    ]  # fmt: skip
    assert all(d.tzinfo is schedule.tzinfo for d in preview)


def test_preview_reads_a_naive_start_in_the_schedules_zone() -> None:
    schedule = CronSchedule("0 3 * * *", tz="America/New_York")
    assert (
        schedule.preview(1, datetime(2026, 7, 1, 2, 59))[0].isoformat()
        == "2026-07-01T03:00:00-04:00"
    )


def test_preview_defaults_to_now() -> None:
    (first,) = CronSchedule("* * * * *").preview(1)
    assert 0 < first.timestamp() - datetime.now(UTC).timestamp() <= 60


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "Pacific/Kiritimati"])
@pytest.mark.parametrize("expr", ["0 3 * * 1-5", "* * * * *", "0 0 31 12 *"])
def test_iteration_at_the_end_of_the_calendar_stops_quietly(expr: str, zone: str) -> None:
    # fires are supported through local 9999-12-29, clear of datetime's last day
    fires = list(CronSchedule(expr, tz=zone).iter_after(ts(9999, 12, 20)))
    assert len(fires) < 20_000
    assert all(fire < ts(9999, 12, 30) for fire in fires)
    assert (fires != []) == (expr != "0 0 31 12 *")


@pytest.mark.parametrize("zone", ["UTC", "Pacific/Kiritimati", "Etc/GMT+12"])
@pytest.mark.parametrize("expr", ["0 0 * * *", "30 23 * * *", "*/30 * * * *"])
def test_both_directions_see_the_same_fires_at_the_ends_of_the_calendar(
    expr: str, zone: str
) -> None:
    # Fires are supported on local dates 0001-01-04 through 9999-12-29: next_after and
    # prev_before must agree on them, whichever way they are reached and from a cold
    # start (asked latest first, so no remembered block answers).
    schedule = CronSchedule(expr, tz=zone)
    last = list(schedule.iter_after(ts(9999, 12, 25)))
    backwards = list(_prev_fires(schedule, float("inf"), until=ts(9999, 12, 25)))
    assert backwards[::-1] == last
    assert utc_datetime(last[-1]).astimezone(schedule.tzinfo).date() == date(9999, 12, 29)
    for before, after in reversed(list(itertools.pairwise(last))):
        assert CronSchedule(expr, tz=zone).next_after(before) == after
        assert CronSchedule(expr, tz=zone).prev_before(after) == before

    first = list(schedule.fire_times(float("-inf"), len(last)))
    assert utc_datetime(first[0]).astimezone(schedule.tzinfo).date() == date(1, 1, 4)
    assert list(_prev_fires(schedule, first[-1] + 1, until=float("-inf")))[::-1] == first
    assert schedule.prev_before(first[0]) is None
    for before, after in itertools.pairwise(first):
        assert CronSchedule(expr, tz=zone).next_after(before) == after
        assert CronSchedule(expr, tz=zone).next_after(before - 1) == before


def _prev_fires(schedule: CronSchedule, start: float, *, until: float) -> Iterator[float]:
    """prev_before, repeated from ``start`` while the fires are after ``until``."""
    fire = schedule.prev_before(start)
    while fire is not None and fire > until:
        yield fire
        fire = schedule.prev_before(fire)


def test_preview_lists_at_most_max_preview_fires_and_fire_times_draws_any_number_lazily() -> None:
    every_second = CronSchedule("* * * * * *")
    assert len(every_second.preview(MAX_PREVIEW, 0.0)) == MAX_PREVIEW
    with pytest.raises(ScheduleError, match=f"preview\\(\\) n must be an int <= {MAX_PREVIEW}"):
        every_second.preview(MAX_PREVIEW + 1, 0.0)
    fires = every_second.fire_times(0.0, 10**18)  # lazy: only what is drawn is computed
    assert [next(fires) for _ in range(3)] == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("zone", ["Pacific/Kiritimati", "Asia/Tokyo"])
def test_an_instant_past_the_last_fire_whose_local_date_is_past_9999_is_no_error(
    zone: str,
) -> None:
    # From 9999-12-31 00:00 UTC on, east of UTC the local date is 10000-01-01, which
    # datetime cannot hold: such an instant is past every fire, and is answered so
    # without reading the zone (it raised "date value out of range" had the bound moved).
    schedule = CronSchedule("0 0 * * *", tz=zone)
    for at in (ts(9999, 12, 31), ts(9999, 12, 31, 12)):
        assert schedule.next_after(at) is None
        last = schedule.prev_before(at)
        assert last is not None
        assert utc_datetime(last).astimezone(schedule.tzinfo).date() == date(9999, 12, 29)


@pytest.mark.parametrize(
    ("expr", "at", "first"),
    [
        ("5-59 * * * *", ts(2026, 3, 10, 8, 59, 30), ts(2026, 3, 10, 9, 5)),  # past :59
        ("5-59 9-17 * * *", ts(2026, 3, 10, 3), ts(2026, 3, 10, 9, 5)),  # before 09:00
        ("30 * 9-10 * * *", ts(2026, 3, 10, 9, 59, 31), ts(2026, 3, 10, 10, 0, 30)),
    ],
)
def test_a_busy_expression_asked_between_its_hours_starts_the_next_at_its_first_minute(
    expr: str, at: float, first: float
) -> None:
    # Too many fires a day for a day table: one query searches hour by hour, and the
    # next hour's first fire is its first minute (and second), not the hour itself.
    assert CronSchedule(expr).next_after(at) == first
