"""CronSchedule: five-field cron expressions (minute hour day-of-month month day-of-week).

This is the foundation's engine, in UTC: ``*``, numbers, ``a-b`` ranges,
``*/s`` and ``a-b/s`` steps, and comma lists.  Real cron's day rule applies: when
either day field starts with ``*`` the two day fields are ANDed, otherwise a day
matching either one is enough (Vixie cron, cronie and cronsim agree).  0 and 7
are both Sunday in the day-of-week field.

The expression is parsed once into sorted tuples of allowed values; the object is
immutable and shareable.  ``next_after`` jumps field by field (month, day, hour,
minute) instead of walking minute by minute.

The interface (``CronSchedule(expr, tz=...)``, ``next_after``, ``fire_times``,
``first_run``/``next_run``) is the stable part; the full engine (names, ``@``
macros, ``L``/``W``/``#``, time zones and DST) replaces the insides.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from lldsched.errors import ScheduleError
from lldsched.model import ExecutionRecord

__all__ = ["CronSchedule"]

# (name, lowest, highest) for each of the five fields, in order.
_FIELDS = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 7),
)
_HORIZON_YEARS = 100  # search this far before answering "never again"


def _parse_number(field: str, text: str, low: int, high: int) -> int:
    if not text.isdigit():
        raise ScheduleError(f"cron {field} field: {text!r} is not a number")
    value = int(text)
    if not low <= value <= high:
        raise ScheduleError(f"cron {field} field: {value} is out of range {low}-{high}")
    return value


def _parse_field(index: int, text: str) -> tuple[int, ...]:
    field, low, high = _FIELDS[index]
    values: set[int] = set()
    for item in text.split(","):
        if not item:
            raise ScheduleError(f"cron {field} field: empty list item in {text!r}")
        base, slash, step_text = item.partition("/")
        step = 1
        if slash:
            if not step_text.isdigit() or int(step_text) == 0:
                raise ScheduleError(f"cron {field} field: step must be a number >= 1 in {item!r}")
            step = int(step_text)
        if base == "*":
            start, stop = low, high
        elif "-" in base:
            first, _, last = base.partition("-")
            start = _parse_number(field, first, low, high)
            stop = _parse_number(field, last, low, high)
            if start > stop:
                raise ScheduleError(f"cron {field} field: reversed range {base!r}")
        else:
            start = _parse_number(field, base, low, high)
            stop = high if slash else start
        values.update(range(start, stop + 1, step))
    if index == 4 and 7 in values:  # 7 is Sunday too
        values.discard(7)
        values.add(0)
    return tuple(sorted(values))


class CronSchedule:
    """A cron expression evaluated in UTC.  Raises :class:`ScheduleError` on bad text."""

    __slots__ = ("_days_and", "_dom", "_dow", "_hours", "_minutes", "_months", "expr", "tz")

    def __init__(self, expr: str, tz: str = "UTC") -> None:
        if not isinstance(expr, str):
            raise ScheduleError(f"cron expression must be a string, got {expr!r}")
        if tz != "UTC":
            raise ScheduleError(f"time zone {tz!r}: this cron engine evaluates UTC only")
        fields = expr.split()
        if len(fields) != 5:
            raise ScheduleError(
                f"cron expression {expr!r} has {len(fields)} fields; expected 5 "
                "(minute hour day-of-month month day-of-week)"
            )
        parsed = [_parse_field(i, text) for i, text in enumerate(fields)]
        self.expr = expr
        self.tz = tz
        self._minutes, self._hours, self._dom, self._months, self._dow = parsed
        self._days_and = fields[2].startswith("*") or fields[4].startswith("*")

    def __repr__(self) -> str:
        return f"CronSchedule({self.expr!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CronSchedule) and (self.expr, self.tz) == (other.expr, other.tz)

    def __hash__(self) -> int:
        return hash((self.expr, self.tz))

    # -- the Schedule protocol -------------------------------------------------

    def first_run(self, now: float) -> float | None:
        """The first fire strictly after the moment of registration."""
        return self.next_after(now)

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        """The first fire after the run finished: fires missed by an overrun are skipped."""
        return self.next_after(max(record.finished, record.slot))

    # -- queries -----------------------------------------------------------------

    def next_after(self, timestamp: float) -> float | None:
        """The first fire strictly after ``timestamp``, or ``None`` if none within 100 years."""
        start = datetime.fromtimestamp(timestamp, UTC).replace(second=0, microsecond=0)
        when = start + timedelta(minutes=1)
        limit = when.year + _HORIZON_YEARS
        while when.year <= limit:
            if when.month not in self._months:
                when = self._next_month(when)
                continue
            if not self._day_matches(when):
                when = (when + timedelta(days=1)).replace(hour=0, minute=0)
                continue
            if when.hour not in self._hours:
                later = [h for h in self._hours if h > when.hour]
                if later:
                    when = when.replace(hour=later[0], minute=0)
                else:
                    when = (when + timedelta(days=1)).replace(hour=0, minute=0)
                continue
            later_minutes = [m for m in self._minutes if m >= when.minute]
            if later_minutes:
                return when.replace(minute=later_minutes[0]).timestamp()
            when = when.replace(minute=0) + timedelta(hours=1)
        return None

    def fire_times(self, start: float, n: int) -> Iterator[float]:
        """The next ``n`` fires strictly after ``start``."""
        when = start
        for _ in range(n):
            following = self.next_after(when)
            if following is None:
                return
            yield following
            when = following

    def _next_month(self, when: datetime) -> datetime:
        later = [m for m in self._months if m > when.month]
        if later:
            return when.replace(month=later[0], day=1, hour=0, minute=0)
        return when.replace(year=when.year + 1, month=self._months[0], day=1, hour=0, minute=0)

    def _day_matches(self, when: datetime) -> bool:
        dom_ok = when.day in self._dom
        dow_ok = (when.weekday() + 1) % 7 in self._dow
        return (dom_ok and dow_ok) if self._days_and else (dom_ok or dow_ok)
