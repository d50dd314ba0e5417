"""``python -m lldsched cron EXPR [--tz ZONE] [-n N] [--start WHEN]``: explain and preview.

Prints what the expression means in plain English and its next ``N`` fire times in
the schedule's zone (with UTC alongside), so a user can check an expression before
trusting a job to it::

    $ python -m lldsched cron "0 3 * * 1-5" --tz Europe/Berlin -n 2 --start 2026-03-27
    0 3 * * 1-5  (Europe/Berlin)
    At 03:00, Monday through Friday
    next 2 fire times after 2026-03-27 00:00 CET:
      Fri 2026-03-27 03:00 CET   = 2026-03-27 02:00 UTC
      Mon 2026-03-30 03:00 CEST  = 2026-03-30 01:00 UTC

Six fields (a seconds field first) are accepted; their fire times show seconds. A fire
at a wall time the fields do not name (a time a spring-forward gap skipped, run at the
first minute after it) or in the second pass of a fall-back overlap says so at the end
of its line.
A bad expression, zone or start (one no ``datetime`` can hold in UTC or in the zone
too: ``--start 0001-01-01 --tz Asia/Tokyo`` is in year 0 in UTC) prints the error on
stderr and exits with 2.
``--crontab FILE`` reads a whole crontab instead, each job line reported as this
command reports an expression: :mod:`lldsched.cli.crontab`.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo

from lldsched.cli import BAD_ARGUMENTS, say, to_stderr
from lldsched.clock import dated
from lldsched.errors import ScheduleError
from lldsched.schedules.cron import CronSchedule
from lldsched.schedules.cron.days import DayRule
from lldsched.schedules.cron.explain import explain
from lldsched.schedules.cron.schedule import MAX_PREVIEW

__all__ = ["MAX_FIRES", "check_count", "cron_report", "run_cron", "start_in"]

MAX_FIRES = MAX_PREVIEW  # what preview() lists at most
"""The most fire times ``-n`` lists (``-n 99999999999`` built a list for minutes)."""

_FORMAT = "%a %Y-%m-%d %H:%M %Z"
_FORMAT_SECONDS = "%a %Y-%m-%d %H:%M:%S %Z"


def cron_report(expr: str, *, tz: str = "UTC", n: int = 5, start: str | None = None) -> list[str]:
    """The lines ``run_cron`` prints; :class:`ScheduleError` for bad input."""
    check_count(n)
    schedule = CronSchedule(expr, tz=tz)
    begin = start_in(start, schedule.tzinfo, tz)
    fires = schedule.preview(n, begin)
    seconds = schedule.fields.has_seconds
    local, utc, after = (
        (_FORMAT_SECONDS, "%Y-%m-%d %H:%M:%S UTC", "%Y-%m-%d %H:%M:%S %Z")
        if seconds
        else (_FORMAT, "%Y-%m-%d %H:%M UTC", "%Y-%m-%d %H:%M %Z")
    )
    width = max((len(dated(f, local)) for f in fires), default=0)
    lines = [
        f"{' '.join(expr.split())}  ({schedule.tz})",  # tabs and edge blanks as one space
        explain(schedule.fields),  # the zone is on the line above
        f"next {'fire time' if n == 1 else f'{n} fire times'} after {dated(begin, after)}:",
    ]
    lines += [
        f"  {dated(f, local):<{width}}  = {dated(f.astimezone(UTC), utc)}{_dst_note(schedule, f)}"
        for f in fires
    ]
    if len(fires) < n:
        lines.append(
            f"  (only {len(fires)}: nothing more fires within 100 years or after 9999-12-29)"
        )
    return lines


def check_count(n: int) -> None:
    """:class:`ScheduleError` unless ``-n`` is 1 to :data:`MAX_FIRES`."""
    if n < 1:
        raise ScheduleError(f"-n must be at least 1, got {n}")
    if n > MAX_FIRES:  # the fires are listed before the first is printed
        raise ScheduleError(f"-n must be at most {MAX_FIRES:,}, got {n:,}")


def start_in(start: str | None, zone: tzinfo, tz: str) -> datetime:
    """``--start`` (now when None) as an instant in ``zone`` (named ``tz``); a naive
    one is read in the zone.  :class:`ScheduleError` quoting a bad one."""
    if start is None:
        return datetime.now(UTC).astimezone(zone)
    try:
        parsed = datetime.fromisoformat(start)
    except ValueError:
        raise ScheduleError(
            f"--start {start!r} is not an ISO date-time such as 2026-03-27T09:00"
        ) from None
    aware = parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=zone)
    try:
        # Through UTC: astimezone to the zone it already has would keep a wall time in
        # a spring-forward gap (02:30 CET, which never happens) instead of the instant.
        return aware.astimezone(UTC).astimezone(zone)
    except OverflowError:  # 0001-01-01 in Tokyo is a year-0 instant in UTC
        raise ScheduleError(
            f"--start {start!r} is out of range: its instant must fall in the years "
            f"1 to 9999 both in UTC and in {tz}"
        ) from None


def _dst_note(schedule: CronSchedule, when: datetime) -> str:
    """Why a fire is at a wall time its fields do not name, or at one shown before:
    a wall-clock job's time that a spring-forward gap skipped runs at the first minute
    after it (03:00 for ``30 2 * * *``; on the next date for a gap over midnight, as
    Apia's skipped 30 December 2011), and any other job fires in both passes of a
    fall-back overlap (01:00 EDT, then 01:00 EST); docs/CRON.md, "Time zones and DST"."""
    fields = schedule.fields
    if when.fold:
        return "  (again: the clock went back)"
    if when.minute not in fields.minutes or when.hour not in fields.hours:
        return "  (for a time the clock skipped: it went forward)"
    date = when.toordinal()  # a gap over midnight: Apia's Friday 00:00 ran on Saturday
    if DayRule(fields).next_date(date, date) is None:
        return "  (for a time the clock skipped: it went forward)"
    return ""


def run_cron(expr: str, *, tz: str = "UTC", n: int = 5, start: str | None = None) -> int:
    """Print the report; on bad input print the error to stderr and return 2."""
    try:
        lines = cron_report(expr, tz=tz, n=n, start=start)
    except ScheduleError as exc:
        return to_stderr(f"error: {exc}", BAD_ARGUMENTS)
    for line in lines:
        say(line)
    return 0


if __name__ == "__main__":  # python -m lldsched.cli.cron
    from lldsched.cli import not_an_entry_point

    not_an_entry_point("cron")
