"""Other schedulers' text given as a cron expression, recognised to say what to write.

A service moved to lldsched brings its schedules as text, and two kinds of it are
not cron: a systemd timer's ``OnCalendar=`` calendar event (``Mon..Fri *-*-*
09:00:00``, ``weekly``) and the way Celery shows a ``crontab`` (its ``repr``, and
django-celery-beat's admin: ``0 4 * * * (m/h/dM/MY/d) UTC``).  Read as cron fields
they would fail with a field count or, for Celery's, as a crontab line with a command;
:func:`foreign_text` names what the text is instead and what cron text to write.
There is no calendar-event parser here (docs/decisions/migrating.md, "Celery beat and
systemd timers"): the shorthands get their cron text, the rest the table in
docs/MIGRATING.md.  Called by :func:`lldsched.schedules.cron.parse.parse` only.
"""

from __future__ import annotations

import re

from lldsched.errors import ScheduleError, doc_url, shown

__all__ = ["foreign_text"]

_SYSTEMD = doc_url("docs/MIGRATING.md#from-systemd-timers")
_CELERY = doc_url("docs/MIGRATING.md#from-celery-beat")

# systemd.time(7), "CALENDAR EVENTS": each shorthand's normalized form and its cron text.
_SHORTHANDS = {
    "minutely": ("*-*-* *:*:00", "* * * * *"),
    "hourly": ("*-*-* *:00:00", "0 * * * *"),
    "daily": ("*-*-* 00:00:00", "0 0 * * *"),
    "weekly": ("Mon *-*-* 00:00:00", "0 0 * * mon"),
    "monthly": ("*-*-01 00:00:00", "0 0 1 * *"),
    "yearly": ("*-01-01 00:00:00", "0 0 1 1 *"),
    "annually": ("*-01-01 00:00:00", "0 0 1 1 *"),
    "quarterly": ("*-01,04,07,10-01 00:00:00", "0 0 1 1,4,7,10 *"),
    "semiannually": ("*-01,07-01 00:00:00", "0 0 1 1,7 *"),
    "semi-annually": ("*-01,07-01 00:00:00", "0 0 1 1,7 *"),
}
# A calendar event's date (``*-*-*``, ``2026-01-05``, ``*-*~01``: two dashes, or a dash
# and the last-day ``~``, after a ``*`` or a year) or time (``09:00``).
_DATE_OR_TIME = re.compile(r".*:.*|(?:\*|[0-9]{4})[0-9*,./]*-[0-9*,./]+[-~][0-9*,./~]+")
_ZONE = re.compile(r"UTC|[A-Za-z_]+(?:/[A-Za-z0-9_+-]+)+")
_CELERY_MARK = "(m/h/dM/MY/d)"


def foreign_text(expr: str, fields: list[str]) -> ScheduleError | None:
    """The error for ``expr`` (split into ``fields``) when it is a systemd calendar
    event or Celery's display of a crontab, else None."""
    if any(field.startswith(_CELERY_MARK) for field in fields):
        return _celery(expr, fields)
    if len(fields) == 1 and fields[0].lower() in _SHORTHANDS:
        normal, cron = _SHORTHANDS[fields[0].lower()]
        sunday = " (cron's @weekly is Sunday's)" if fields[0].lower() == "weekly" else ""
        return ScheduleError(
            f"cron expression {shown(expr)} is systemd's OnCalendar= shorthand for "
            f"{normal!r}; in cron it is {cron!r}{sunday} ({_SYSTEMD})"
        )
    # A calendar event is at most four words (weekday, date, time, zone), and they
    # come first: five or six words are cron fields, each with its own message (a
    # systemd range, ``Mon..Fri``, too: parse.py, ``_value``), and a crontab line's
    # command after them may hold a ':' ("--at 10:00").
    if len(fields) in (5, 6) or not any(
        ".." in field or _DATE_OR_TIME.fullmatch(field) for field in fields[:3]
    ):
        return None
    zone = fields[-1] if len(fields) > 1 and _ZONE.fullmatch(fields[-1]) else None
    in_zone = f", and its zone, {zone!r}, is tz={zone!r}" if zone else ""
    return ScheduleError(
        f"cron expression {shown(expr)} is a systemd OnCalendar= calendar event, not a "
        "cron expression: write its cron text (minute hour day-of-month month "
        "day-of-week: 'Mon..Fri *-*-* 09:00' is '0 9 * * mon-fri'; a weekday and a date "
        f"given together must both match in systemd, either one in cron){in_zone} "
        f"({_SYSTEMD})"
    )


def _celery(expr: str, fields: list[str]) -> ScheduleError:
    """Celery's ``<crontab: m h dM MY d (m/h/dM/MY/d)>``, or django-celery-beat's with
    its zone after the mark: the five fields are cron's, in cron's order."""
    mark = next(i for i, field in enumerate(fields) if field.startswith(_CELERY_MARK))
    five = [field.removeprefix("<crontab:") for field in fields[:mark] if field != "<crontab:"]
    after = [field.rstrip(">") for field in fields[mark + 1 :] if field.rstrip(">")]
    zone = f", and the zone after it is tz={after[0]!r}" if len(after) == 1 else ""
    both = (
        "; Celery runs on a day that matches both day fields, cron on either one when neither is *"
        if len(five) == 5 and five[2] != "*" and five[4] != "*"
        else ""
    )
    return ScheduleError(
        f"cron expression {shown(expr)} is Celery's display of a crontab: the fields "
        f"before {_CELERY_MARK!r} are cron's, in cron's order, {' '.join(five)!r}{zone}"
        f"{both} ({_CELERY})"
    )
