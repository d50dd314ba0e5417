"""Other schedulers' text given as cron: a systemd ``OnCalendar=`` calendar event and
Celery's display of a crontab are named as such, with the cron text to write
(lldsched/schedules/cron/foreign.py; docs/MIGRATING.md, "From Celery beat" and "From
systemd timers").  The shorthands' normal forms are systemd.time(7)'s (systemd 252)."""

from __future__ import annotations

import pytest

from lldsched import CronSchedule, ScheduleError

SYSTEMD = "docs/MIGRATING.md#from-systemd-timers"
CELERY = "docs/MIGRATING.md#from-celery-beat"


def _refusal(text: str) -> str:
    with pytest.raises(ScheduleError) as caught:
        CronSchedule(text)
    return str(caught.value)


@pytest.mark.parametrize(
    ("shorthand", "normal", "cron"),
    [
        ("minutely", "*-*-* *:*:00", "* * * * *"),
        ("hourly", "*-*-* *:00:00", "0 * * * *"),
        ("daily", "*-*-* 00:00:00", "0 0 * * *"),
        ("monthly", "*-*-01 00:00:00", "0 0 1 * *"),
        ("yearly", "*-01-01 00:00:00", "0 0 1 1 *"),
        ("annually", "*-01-01 00:00:00", "0 0 1 1 *"),
        ("quarterly", "*-01,04,07,10-01 00:00:00", "0 0 1 1,4,7,10 *"),
        ("semiannually", "*-01,07-01 00:00:00", "0 0 1 1,7 *"),
        ("Daily", "*-*-* 00:00:00", "0 0 * * *"),
    ],
)
def test_a_systemd_shorthand_is_named_with_its_cron_text(
    shorthand: str, normal: str, cron: str
) -> None:
    """Before: ``cron expression 'daily' has 1 fields; expected 5 ... or an @ macro
    such as @daily``."""
    assert _refusal(shorthand) == (
        f"cron expression {shorthand!r} is systemd's OnCalendar= shorthand for {normal!r}; "
        f"in cron it is {cron!r} (https://github.com/lldsched/lldsched/blob/main/{SYSTEMD})"
    )
    CronSchedule(cron)  # what the message says to write is cron text


def test_systemds_weekly_is_monday_and_the_message_says_crons_weekly_is_not() -> None:
    """systemd's ``weekly`` is ``Mon *-*-* 00:00:00``; cron's ``@weekly``, which the
    field-count message suggested by its example, is Sunday's."""
    message = _refusal("weekly")
    assert "in cron it is '0 0 * * mon' (cron's @weekly is Sunday's)" in message
    assert CronSchedule("0 0 * * mon").explain() == "At 00:00, on Monday (UTC)"
    assert CronSchedule("@weekly").explain() == "At 00:00, on Sunday (UTC)"


@pytest.mark.parametrize(
    "event",
    [
        "Mon..Fri *-*-* 09:00:00",
        "*-*-01 00:00",
        "Mon..Fri 09:00",
        "*:0/15",
        "Sat *-1..7 15:00",
        "Mon..Fri",
        "*-*~01 23:00",
        "2026-03-30 10:00:00",
    ],
)
def test_a_calendar_event_is_named_with_what_to_write_and_where(event: str) -> None:
    """Before: ``has 3 fields; expected 5 ...`` (or 1, 2): the text's kind unnamed."""
    message = _refusal(event)
    assert message.startswith(
        f"cron expression {event!r} is a systemd OnCalendar= calendar event, not a cron "
        "expression: write its cron text"
    )
    assert "a weekday and a date given together must both match in systemd" in message
    assert message.endswith(f"{SYSTEMD})")
    assert "tz=" not in message


@pytest.mark.parametrize("zone", ["Europe/Berlin", "UTC", "America/Argentina/Buenos_Aires"])
def test_a_calendar_events_zone_is_named_as_tz(zone: str) -> None:
    message = _refusal(f"Mon *-*-* 09:00 {zone}")
    assert f", and its zone, {zone!r}, is tz={zone!r} (" in message


@pytest.mark.parametrize(
    ("text", "field", "fix"),
    [
        ("0 9 * * Mon..Fri", "day of week", "Mon-Fri"),
        ("0 8..17/2 * * *", "hour", "8-17"),
        ("0 0 1..7 * *", "day of month", "1-7"),
    ],
)
def test_a_systemd_range_in_a_cron_field_names_the_cron_range(
    text: str, field: str, fix: str
) -> None:
    """Before: ``'Mon..Fri' is not a number 0-7 or a day name (SUN-SAT)``."""
    item = fix.replace("-", "..")
    assert _refusal(text) == (
        f"cron {field} field: {item!r}: cron writes a range with '-', {fix!r} (expression {text!r})"
    )
    CronSchedule(text.replace(item, fix))


@pytest.mark.parametrize(
    "line",
    ["0 3 * * * /usr/bin/report --at 10:00", "0 3 * * * root /usr/bin/report --at 10:00"],
)
def test_a_crontab_line_whose_command_holds_a_time_is_still_a_crontab_line(line: str) -> None:
    message = _refusal(line)
    assert "is a whole crontab line: the schedule is '0 3 * * *'" in message
    assert "systemd" not in message


@pytest.mark.parametrize(
    ("shown", "fields", "after"),
    [
        ("0 4 * * * (m/h/dM/MY/d)", "0 4 * * *", ""),  # Celery's repr, its <> cut
        ("<crontab: 0 4 * * * (m/h/dM/MY/d)>", "0 4 * * *", ""),  # the whole repr
        ("0 4 * * * (m/h/dM/MY/d) UTC", "0 4 * * *", ", and the zone after it is tz='UTC'"),
        (
            "*/15 9-17 * * mon-fri (m/h/dM/MY/d) Europe/Berlin",  # django-celery-beat's
            "*/15 9-17 * * mon-fri",
            ", and the zone after it is tz='Europe/Berlin'",
        ),
    ],
)
def test_celerys_display_of_a_crontab_is_named_with_its_five_fields(
    shown: str, fields: str, after: str
) -> None:
    """Before: ``0 4 * * * (m/h/dM/MY/d)`` was "a whole crontab line" whose command is
    ``(m/h/dM/MY/d)``; with the zone, the same."""
    assert _refusal(shown) == (
        f"cron expression {shown!r} is Celery's display of a crontab: the fields before "
        f"'(m/h/dM/MY/d)' are cron's, in cron's order, {fields!r}{after} "
        f"(https://github.com/lldsched/lldsched/blob/main/{CELERY})"
    )
    CronSchedule(fields)


def test_celerys_display_with_both_day_fields_says_celery_wants_both() -> None:
    """Celery's crontab runs on a day in ``day_of_month`` *and* ``day_of_week``
    (celery/schedules.py, ``crontab``'s docstring); cron on either when both are
    restricted: ``0 7 1-7 * 1`` is every Monday and the 1st to 7th in cron."""
    message = _refusal("<crontab: 0 7 1-7 * 1 (m/h/dM/MY/d)>")
    assert "in cron's order, '0 7 1-7 * 1'; Celery runs on a day that matches both" in message
    assert "matches both day fields, cron on either one when neither is *" in message
    assert CronSchedule("0 7 1-7 * 1").explain() == (
        "At 07:00, on days 1 through 7 of the month or on Monday (UTC)"
    )
    assert (
        CronSchedule("0 7 * * 1#1").explain() == "At 07:00, on the first Monday of the month (UTC)"
    )
