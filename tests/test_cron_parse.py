"""The cron grammar: every accepted form parses to the right values, every rejected one
fails at construction with a message that names the field and quotes the bad text."""

from __future__ import annotations

import gc
import re
from datetime import UTC
from zoneinfo import ZoneInfo

import pytest

from lldsched import CronSchedule, ScheduleError, ValidationError
from lldsched.schedules.cron import schedule as cron_schedule
from lldsched.schedules.cron.parse import CronFields, parse

ALL_MINUTES = tuple(range(60))
ALL_HOURS = tuple(range(24))
ALL_DAYS = tuple(range(1, 32))
ALL_MONTHS = tuple(range(1, 13))
ALL_WEEKDAYS = tuple(range(7))


def field(expr: str, index: int) -> tuple[int, ...]:
    f = parse(expr)
    return (f.minutes, f.hours, f.days, f.months, f.weekdays)[index]


# -- accepted forms -------------------------------------------------------------


def test_a_star_allows_every_value_of_each_field() -> None:
    f = parse("* * * * *")
    assert (f.minutes, f.hours, f.days, f.months, f.weekdays) == (
        ALL_MINUTES, ALL_HOURS, ALL_DAYS, ALL_MONTHS, ALL_WEEKDAYS,
    )  # fmt: skip


def test_a_number_is_one_value() -> None:
    assert field("7 * * * *", 0) == (7,)


def test_numbers_with_leading_zeros_are_accepted() -> None:
    assert field("05 09 * * *", 0) == (5,)
    assert field("05 09 * * *", 1) == (9,)


def test_a_range_includes_both_ends() -> None:
    assert field("* 9-17 * * *", 1) == tuple(range(9, 18))


def test_a_range_from_a_value_to_itself_is_one_value() -> None:
    assert field("5-5 * * * *", 0) == (5,)


def test_a_star_with_a_step_counts_from_the_lowest_value() -> None:
    assert field("*/15 * * * *", 0) == (0, 15, 30, 45)
    assert field("* * */10 * *", 2) == (1, 11, 21, 31)


def test_a_range_with_a_step() -> None:
    assert field("* 9-17/2 * * *", 1) == (9, 11, 13, 15, 17)


def test_a_number_with_a_step_runs_to_the_field_maximum() -> None:
    assert field("50/3 * * * *", 0) == (50, 53, 56, 59)


def test_a_single_value_range_with_a_step_is_that_value() -> None:
    assert field("8-8/5 * * * *", 0) == (8,)  # cronie, cronsim 2.9; cronsim < 2.9 reads 8/5


def test_a_step_larger_than_the_range_keeps_the_first_value() -> None:
    assert field("*/100 * * * *", 0) == (0,)


def test_a_comma_list_unites_its_items() -> None:
    assert field("0,15-17,*/20 * * * *", 0) == (0, 15, 16, 17, 20, 40)


def test_month_names_in_any_case_also_in_ranges_and_steps() -> None:
    assert field("0 0 1 jan,Mar,DEC *", 3) == (1, 3, 12)
    assert field("0 0 1 jun-AUG *", 3) == (6, 7, 8)
    assert field("0 0 1 feb/4 *", 3) == (2, 6, 10)


def test_day_names_in_any_case_also_in_ranges() -> None:
    assert field("0 0 * * mon-fri", 4) == (1, 2, 3, 4, 5)
    assert field("0 0 * * Sun,sat", 4) == (0, 6)


def test_zero_and_seven_are_both_sunday() -> None:
    assert field("0 0 * * 0", 4) == (0,)
    assert field("0 0 * * 7", 4) == (0,)
    assert field("0 0 * * 5-7", 4) == (0, 5, 6)


def test_a_day_of_week_step_runs_to_seven_so_one_slash_two_includes_sunday() -> None:
    assert field("0 0 * * 1/2", 4) == (0, 1, 3, 5)  # 1, 3, 5, 7 as in cronsim
    assert field("0 0 * * */2", 4) == (0, 2, 4, 6)


def test_l_in_the_day_of_month_is_the_last_day() -> None:
    f = parse("0 0 L * *")
    assert f.last_day and not f.last_weekday and f.days == ()


def test_lw_in_the_day_of_month_is_the_last_weekday() -> None:
    f = parse("0 0 lw * *")
    assert f.last_weekday and not f.last_day


def test_n_l_in_the_day_of_week_is_the_last_such_weekday_of_the_month() -> None:
    assert parse("0 0 * * 5L").last_of == (5,)
    assert parse("0 0 * * 7l").last_of == (0,)


def test_d_hash_n_in_the_day_of_week_is_the_nth_such_weekday() -> None:
    assert parse("0 0 * * 5#3").nth == ((5, 3),)
    assert parse("0 0 * * MON#5,fri#1").nth == ((1, 5), (5, 1))


def test_specials_mix_with_plain_values_in_a_list() -> None:
    f = parse("0 0 1,L * 1,5L,2#2")
    assert (f.days, f.last_day, f.weekdays, f.last_of, f.nth) == ((1,), True, (1,), (5,), ((2, 2),))


@pytest.mark.parametrize(
    ("macro", "fields"),
    [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
        ("@DAILY", "0 0 * * *"),
        ("@Hourly", "0 * * * *"),
    ],
)
def test_macros_in_any_case_stand_for_their_five_fields(macro: str, fields: str) -> None:
    assert parse(macro)[1:] == parse(fields)[1:]
    assert parse(macro).text == fields


def test_extra_whitespace_between_fields_is_ignored() -> None:
    assert parse("  0\t3  * *   1-5 ").text == "0 3 * * 1-5"


def test_a_non_breaking_space_pasted_from_a_web_page_separates_fields_as_docs_cron_says() -> None:
    """docs/CRON.md: any whitespace separates fields, a non-breaking space included."""
    assert parse("0\xa03 * *\u20031-5").text == "0 3 * * 1-5"


@pytest.mark.parametrize(
    "expr", ["*/15 * * * *", "0 9-17 * * 1-5", "0 0 1 * *", "30 2 * * 0,6", "0 12 31 12 *"]
)
def test_the_foundation_expressions_still_parse(expr: str) -> None:
    assert CronSchedule(expr).expr == expr


def test_the_day_rule_is_and_when_either_day_field_starts_with_a_star() -> None:
    assert parse("0 0 */2 * 1").days_and
    assert parse("0 0 1 * */2").days_and
    assert parse("0 0 * * 1").days_and
    assert not parse("0 0 1,15 * 1").days_and
    assert not parse("0 0 1-31 * 1").days_and


def test_a_job_is_wall_clock_when_neither_minute_nor_hour_starts_with_a_star() -> None:
    assert parse("30 2 * * *").wall_clock
    assert parse("0,30 1-3 * * *").wall_clock
    assert not parse("*/20 2 * * *").wall_clock
    assert not parse("0 * * * *").wall_clock
    assert not parse("@hourly").wall_clock
    assert parse("@daily").wall_clock


def test_a_day_that_only_some_chosen_months_have_is_accepted() -> None:
    assert parse("0 0 29 2 *").days == (29,)
    assert parse("0 0 31 1,4 *").days == (31,)
    assert parse("0 0 30 2 mon").days == (30,)  # OR: Mondays in February still fire


MONTH_LENGTHS = {1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31, 11: 30,
                 12: 31}  # fmt: skip


@pytest.mark.parametrize(("month", "length"), MONTH_LENGTHS.items())
def test_a_month_alone_accepts_its_last_day_and_refuses_the_day_after(
    month: int, length: int
) -> None:
    assert parse(f"0 0 {length} {month} *").days == (length,)
    if length < 31:
        with pytest.raises(ScheduleError, match=f"never occurs in .* \\(at most {length} days\\)"):
            parse(f"0 0 {length + 1} {month} *")


# -- rejected forms -------------------------------------------------------------


REJECTED = [
    ("* * * *", "has 4 fields; expected 5"),
    ("* * * * * * *", "has 7 fields; expected 5"),
    ("", "is empty; expected 5"),
    ("61 * * * *", "minute field: 61 is out of range 0-59"),
    ("* 24 * * *", "hour field: 24 is out of range 0-23"),
    ("* * 0 * *", "day of month field: 0 is out of range 1-31"),
    ("* * 32 * *", "day of month field: 32 is out of range 1-31"),
    ("* * * 13 *", "month field: 13 is out of range 1-12"),
    ("* * * 0 *", "month field: 0 is out of range 1-12"),
    ("* * * * 8", "day of week field: 8 is out of range 0-7"),
    ("*/0 * * * *", "minute field: step must be a number >= 1 in '*/0'"),
    ("1-5/0 * * * *", "minute field: step must be a number >= 1 in '1-5/0'"),
    ("*/ * * * *", "minute field: step must be a number >= 1 in '*/'"),
    ("*/x * * * *", "minute field: step must be a number >= 1 in '*/x'"),
    ("5-1 * * * *", "minute field: reversed range '5-1'"),
    ("* * * dec-jan *", "month field: reversed range 'dec-jan'"),
    ("* * * * fri-mon", "day of week field: reversed range 'fri-mon': a range does not wrap"),
    # APScheduler's day_of_week="sat-sun" (Monday is 0 there): Sunday closes a range as 7
    ("* * * * sat-sun", "range 'sat-sun': a range that ends on Sunday ends at 7, write 'sat-7'"),
    ("* * * * 5-0", "reversed range '5-0': a range that ends on Sunday ends at 7, write '5-7'"),
    ("* * * * mon,fri-SUN/2", "range 'fri-SUN/2': a range that ends on Sunday ends at 7, "),
    ("1,,2 * * * *", "minute field: empty list item in '1,,2'"),
    (",1 * * * *", "minute field: empty list item in ',1'"),
    ("* * * * 1,", "day of week field: empty list item in '1,'"),
    ("* * * * monday", "day of week field: 'monday': use a three-letter day name"),
    ("* * * * MON-FRIDAY", "day of week field: 'FRIDAY': use a three-letter day name"),
    ("* * * january *", "month field: 'january' is not a number 1-12 or a month name"),
    ("* * * * tues", "day of week field: 'tues' is not a number 0-7 or a day name"),
    ("jan * * * *", "minute field: 'jan' is not a number"),
    ("* * mon * *", "day of month field: 'mon' is not a number"),
    ("-5 * * * *", "minute field: a value is missing in '-5'"),
    ("5- * * * *", "minute field: a value is missing in '5-'"),
    ("* * * * 1-", "day of week field: a value is missing in '1-'"),
    ("1-2-3 * * * *", "minute field: '2-3' is not a number"),
    ("+5 * * * *", "minute field: '+5' is not a number"),
    ("? * * * *", "minute field: '?' is not a number"),
    ("* * ? * *", "day of month field: '?' is not a number"),
    ("* * 15W * *", "day of month field: '15W' is not a number"),
    ("* * 15W * *", "(Quartz's nearest weekday nW is not supported; LW, the last weekday"),
    ("* * ? * *", "'?' is not a number (Quartz's 'no specific value': write *)"),
    ("* * L/2 * *", "day of month field: 'L/2': L and LW take no step"),
    ("* * lw/3 * *", "day of month field: 'lw/3': L and LW take no step"),
    ("* * 5L * *", "day of month field: '5L' is not a number"),
    ("* * * * L", "day of week field: 'L': write nL for the last weekday n"),
    ("* * * * FRIL", "day of week field: 'FRIL': write nL"),
    ("* * * * 1-5L", "day of week field: '1-5L': write nL"),
    ("* * * * 8L", "day of week field: 8 is out of range 0-7"),
    ("* * * * 5#0", "day of week field: '5#0': write d#n with n from 1 to 5"),
    ("* * * * 5#6", "day of week field: '5#6': write d#n with n from 1 to 5"),
    ("* * * * 5#", "day of week field: '5#': write d#n"),
    ("* * * * #2", "day of week field: a value is missing in '#2'"),
    ("* * * * L#2", "day of week field: 'L#2': write nL for the last weekday n"),
    # Quartz writes ? in one day field; the hint applies in each field it may reach
    ("0 0 12 * * ?", "day of week field: '?' is not a number (Quartz's 'no specific value'"),
    ("* * * ? *", "month field: '?' is not a number (Quartz's 'no specific value'"),
    ("* * 1#2 * *", "day of month field: '1#2' is not a number"),
    ("٣ * * * *", "minute field: '٣' is not a number"),
    ("0 0 30 2 *", "day of month field: '30' never occurs in Feb (at most 29 days)"),
    ("0 0 31 4,6,9,11 *", "day of month field: '31' never occurs in Apr, Jun, Sep, Nov"),
    ("0 0 30,31 feb */2", "day of month field: '30,31' never occurs in Feb"),
    ("0 0 */16 1 0L", "never fires: no date is both day of month '*/16' and day of week '0L'"),
    ("0 0 */20 * 0#2", "never fires: no date is both day of month '*/20' and day of week '0#2'"),
    ("@reboot", "@reboot is not supported"),
    ("@REBOOT", "@reboot is not supported"),
    ("@fortnightly", "unknown macro '@fortnightly'; use one of @yearly"),
]


@pytest.mark.parametrize(("expr", "message"), REJECTED)
def test_malformed_expressions_are_rejected_at_construction_naming_field_and_text(
    expr: str, message: str
) -> None:
    with pytest.raises(ScheduleError) as caught:
        CronSchedule(expr)
    assert message in str(caught.value)


ALONE = "reads it as no day at all in 1.6.0 to 1.7.2 and as Sunday-ended only since 2025"


@pytest.mark.parametrize(
    ("expr", "item", "fix", "since"),
    [
        ("0 9 * * 5-0", "5-0", "5-7", ALONE),
        ("0 9 * * FRI-SUN", "FRI-SUN", "FRI-7", ALONE),
        ("0 9 * * 1,5-0/2", "5-0/2", "5-7/2", "and reads it as no day at all since"),
    ],
)
def test_a_day_of_week_range_ending_on_sunday_as_0_is_refused_saying_why_and_what_to_write(
    expr: str, item: str, fix: str, since: str
) -> None:
    """cronie reads ``5-0`` three ways by release (src/entry.c, ``get_range``): refused
    up to 1.5.7 (``num1 > num2``); from 1.6.0 (fc8b0e5, its state machine) to 1.7.2 it
    sets no day at all, silently, so ``0 9 * * 5-0`` never fires; Friday to Sunday only
    since d037042 and e6c2853 (2025), which read ``a-0`` as ``a-7`` in every field and not
    with a step (``5-0/2`` is no day again).  ``5-7`` is Friday to Sunday in all of them,
    cronsim and croniter: refused, saying so (docs/CRON.md, "A range that ends on
    Sunday")."""
    with pytest.raises(ScheduleError) as caught:
        CronSchedule(expr)
    assert str(caught.value) == (
        f"cron day of week field: reversed range {item!r}: a range that ends on Sunday "
        f"ends at 7, write {fix!r} (cronie refused {item!r} before 1.6.0, {since}; "
        f"{fix!r} is read alike by every cron) (expression {expr!r})"
    )
    fixed = parse(expr.replace(item, fix))
    assert 5 in fixed.weekdays and 0 in fixed.weekdays and 4 not in fixed.weekdays


def test_a_range_ending_at_0_in_another_field_is_reversed_with_no_sunday_hint() -> None:
    """cronie's 2025 reading (``a-0`` as ``a-7``) is field-blind: ``5-0 * * * *`` runs at
    minutes 5, 6 and 7 there, and croniter wraps it round the hour: refused, naming the
    wrapped reading's list, not a Sunday."""
    with pytest.raises(ScheduleError) as caught:
        CronSchedule("5-0 * * * *")
    assert str(caught.value) == (
        "cron minute field: reversed range '5-0': a range does not wrap past the field's "
        "end; for the values Celery's crontab and croniter read, write '5-59,0' "
        "(expression '5-0 * * * *')"
    )


@pytest.mark.parametrize(
    ("expr", "item", "fix"),
    [
        ("30 22-2 * * *", "22-2", "22-23,0-2"),  # Celery: crontab(minute=30, hour="22-2")
        ("0 9 * * fri-mon", "fri-mon", "fri-sat,sun-mon"),
        ("0 9 * * FRI-MON", "FRI-MON", "FRI-SAT,SUN-MON"),
        ("0 9 * * sat-mon", "sat-mon", "sat,sun-mon"),
        ("0 9 * * 5-1", "5-1", "5-6,0-1"),
        ("0 0 1 nov-feb *", "nov-feb", "nov-dec,jan-feb"),
        ("0 0 25-5 * *", "25-5", "25-31,1-5"),
        ("0 23-0 * * *", "23-0", "23,0"),
        ("50-10/5 * * * *", "50-10/5", "50,55,0,5,10"),
        ("0 22-4/3 * * *", "22-4/3", "22,1,4"),
    ],
)
def test_a_range_that_wraps_past_the_fields_end_is_refused_naming_the_list_to_write(
    expr: str, item: str, fix: str
) -> None:
    """Celery's ``crontab`` (``crontab_parser._expand_range``) and croniter read
    ``22-2`` as 22, 23, 0, 1, 2; cron refuses it.  Before, the message said "reversed
    range '22-2'" alone; now it names the list that has the wrapped values, which
    fires where Celery's reading did."""
    with pytest.raises(ScheduleError) as caught:
        CronSchedule(expr)
    assert str(caught.value) == (
        f"cron {_field_of(expr, item)} field: reversed range {item!r}: a range does not "
        f"wrap past the field's end; for the values Celery's crontab and croniter read, "
        f"write {fix!r} (expression {expr!r})"
    )
    wrapped, listed = _celery_reading(item), parse(expr.replace(item, fix))
    index = expr.split().index(item)
    assert wrapped == set(
        (listed.minutes, listed.hours, listed.days, listed.months, listed.weekdays)[index]
    )


def _field_of(expr: str, item: str) -> str:
    return ("minute", "hour", "day of month", "month", "day of week")[expr.split().index(item)]


def _celery_reading(item: str) -> set[int]:
    """``item`` as Celery 5.5's ``crontab_parser`` reads it: a range whose end is below
    its start runs to the field's last value and on from its first, then every
    ``step``-th of that list (the values measured with Celery 5.5.3)."""
    return {
        "22-2": {22, 23, 0, 1, 2},
        "fri-mon": {5, 6, 0, 1},
        "FRI-MON": {5, 6, 0, 1},
        "sat-mon": {6, 0, 1},
        "5-1": {5, 6, 0, 1},
        "nov-feb": {11, 12, 1, 2},
        "25-5": {*range(25, 32), *range(1, 6)},
        "23-0": {23, 0},
        "50-10/5": {50, 55, 0, 5, 10},
        "22-4/3": {22, 1, 4},
    }[item]


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("0 9 * * monday", "'monday': use a three-letter day name, 'mon' (SUN-SAT), or 0-7"),
        ("0 9 * * Sunday", "'Sunday': use a three-letter day name, 'Sun' (SUN-SAT), or 0-7"),
        ("0 0 1 january *", "'january' is not a number 1-12 or a month name: use 'jan'"),
    ],
)
def test_a_full_day_or_month_name_names_its_three_letters(expr: str, message: str) -> None:
    """Celery's ``crontab(day_of_week="monday")`` and systemd's ``Monday`` take whole
    names; cron takes three letters.  Before, the message named the rule alone."""
    with pytest.raises(ScheduleError) as caught:
        CronSchedule(expr)
    assert message in str(caught.value)
    fixed = expr.replace("monday", "mon").replace("Sunday", "Sun").replace("january", "jan")
    CronSchedule(fixed)


@pytest.mark.parametrize(("expr", "_message"), REJECTED)
def test_every_rejection_message_quotes_the_whole_expression(expr: str, _message: str) -> None:
    with pytest.raises(ScheduleError, match=re.escape(repr(expr))):
        CronSchedule(expr)


def test_the_nearest_weekday_hint_is_given_only_for_a_day_of_month_ending_in_w() -> None:
    for expr in ("5W * * * *", "* * mon * *", "* 3W * * *"):
        with pytest.raises(ScheduleError) as caught:
            parse(expr)
        assert "is not a number (expression" in str(caught.value)
        assert "nearest weekday" not in str(caught.value)


def test_a_schedule_error_is_a_validation_error_and_a_value_error() -> None:
    with pytest.raises(ValidationError):
        CronSchedule("61 * * * *")
    with pytest.raises(ValueError):
        CronSchedule("61 * * * *")


def test_an_expression_that_is_not_a_string_is_rejected() -> None:
    with pytest.raises(ScheduleError, match="must be a string, got 5"):
        CronSchedule(5)  # type: ignore[arg-type]


def test_an_unknown_time_zone_is_rejected_at_construction() -> None:
    with pytest.raises(ScheduleError, match="unknown time zone 'Mars/Olympus_Mons'"):
        CronSchedule("* * * * *", tz="Mars/Olympus_Mons")


def test_a_time_zone_that_is_not_a_name_or_zoneinfo_is_rejected() -> None:
    with pytest.raises(ScheduleError, match="IANA name or a ZoneInfo"):
        CronSchedule("* * * * *", tz=3)  # type: ignore[arg-type]


# -- the object: immutable, cached, comparable ------------------------------------


def test_equal_text_and_zone_make_equal_schedules_with_equal_hashes() -> None:
    assert CronSchedule("0 3 * * 1-5") == CronSchedule("0 3 * * 1-5", tz="UTC")
    assert hash(CronSchedule("0 3 * * 1-5")) == hash(CronSchedule("0 3 * * 1-5"))
    assert CronSchedule("0 3 * * 1-5") != CronSchedule("0 3 * * 1-5", tz="Europe/Berlin")
    assert CronSchedule("0 3 * * 1-5") != "0 3 * * 1-5"


def test_the_repr_shows_the_zone_only_when_the_schedule_names_one() -> None:
    assert repr(CronSchedule("*/15 * * * *")) == "CronSchedule('*/15 * * * *')"
    assert repr(CronSchedule("*/15 * * * *", tz="UTC")) == "CronSchedule('*/15 * * * *', tz='UTC')"
    assert (
        repr(CronSchedule("0 3 * * 1-5", tz="Europe/Berlin"))
        == "CronSchedule('0 3 * * 1-5', tz='Europe/Berlin')"
    )


@pytest.mark.parametrize(
    "schedule",
    [
        CronSchedule("0 3 * * 1-5"),
        CronSchedule("0 3 * * 1-5", tz="UTC"),
        CronSchedule("0 3 * * 1-5", tz=UTC),
        CronSchedule("0 3 * * 1-5", tz="Europe/Berlin"),
    ],
    ids=["zoneless", "utc-named", "utc-object", "berlin"],
)
def test_the_repr_builds_the_same_schedule_again(schedule: CronSchedule) -> None:
    """An explicit UTC used to print as the zoneless form, which reads back as a schedule
    a runtime's default zone would re-zone (``names_zone`` False)."""
    again = eval(repr(schedule), {"CronSchedule": CronSchedule})
    assert again == schedule
    assert (again.names_zone, again.tz) == (schedule.names_zone, schedule.tz)


def test_a_zoneinfo_or_utc_object_is_accepted_as_the_zone() -> None:
    assert CronSchedule("0 3 * * *", tz=ZoneInfo("Europe/Berlin")).tz == "Europe/Berlin"
    assert CronSchedule("0 3 * * *", tz=UTC).tz == "UTC"


def test_the_parse_is_shared_by_schedules_with_the_same_text_and_zone() -> None:
    one, two = CronSchedule("0 3 * * 1-5"), CronSchedule("0 3 * * 1-5")
    assert one.fields is two.fields
    assert isinstance(one.fields, CronFields)


def test_texts_that_fire_alike_are_two_values_each_printed_as_written() -> None:
    """docs/decisions/schedules.md, "A cron schedule is its text and zone"."""
    daily, every_weekday = CronSchedule("0 0 * * *"), CronSchedule("0 0 * * 0-6")
    either_day = CronSchedule("0 0 1-31 * 1")  # two restricted day fields: cron's OR
    start = 1_767_225_600.0  # 2026-01-01 00:00 UTC
    fires = list(daily.fire_times(start, 40))
    assert fires == list(every_weekday.fire_times(start, 40))
    assert fires == list(either_day.fire_times(start, 40))
    assert daily != every_weekday and daily != either_day and every_weekday != either_day
    assert len({daily, every_weekday, either_day}) == 3
    assert repr(every_weekday) == "CronSchedule('0 0 * * 0-6')"
    assert daily._engine is not every_weekday._engine  # the parse follows equality
    assert daily == CronSchedule("0 0 * * *") and daily._engine is CronSchedule("0 0 * * *")._engine


def test_equal_schedules_share_one_engine_after_the_bounded_cache_dropped_it() -> None:
    """Before, a text pushed out of the cache (1,024 texts) by others was parsed again
    for the next equal schedule, which held an engine (and day tables) of its own."""
    first = CronSchedule("7 4 * * 2", tz="Europe/Berlin")
    first.next_after(1_767_225_600.0)  # its day tables and block: filled
    limit = cron_schedule._engine.cache_parameters()["maxsize"]
    others = [CronSchedule(f"{i % 60} {i // 60} * * 3") for i in range(limit)]
    assert cron_schedule._engine.cache_info().currsize == limit  # "7 4 * * 2" dropped
    second = CronSchedule("7 4 * * 2", tz="Europe/Berlin")
    assert second == first and second._engine is first._engine
    assert second.fields is first.fields
    del first, second, others
    cron_schedule._engine.cache_clear()
    gc.collect()
    assert ("7 4 * * 2", "Europe/Berlin") not in cron_schedule._LIVE  # none holds it: gone


def test_a_schedule_has_no_public_attribute_to_change() -> None:
    schedule = CronSchedule("0 3 * * 1-5")
    with pytest.raises(AttributeError):
        schedule.color = "red"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "expr",
    ["CRON_TZ=Europe/Berlin 0 3 * * *", "TZ=Europe/Berlin 0 3 * * *", "CRON_TZ=UTC */5 * * * *"],
)
def test_a_crontab_zone_variable_in_front_is_refused_naming_the_tz_argument(expr: str) -> None:
    """cronie's ``CRON_TZ=...`` line, pasted in front of the fields, was read as a seconds
    field: "cron second field: step must be a number >= 1 in 'CRON_TZ=Europe/Berlin'"."""
    variable = expr.split()[0]
    zone = variable.partition("=")[2]
    with pytest.raises(ScheduleError) as caught:
        CronSchedule(expr)
    message = str(caught.value)
    assert message.startswith(f"cron expression {expr!r}: {variable!r} is a crontab variable")
    assert f"tz={zone!r}" in message and "second field" not in message
