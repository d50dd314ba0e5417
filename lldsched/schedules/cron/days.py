"""Which dates a cron expression fires on: the month field and the day rule.

Dates are proleptic Gregorian ordinals (``date.toordinal()``: 0001-01-01 is 1), so
moving a day is ``+ 1`` and the weekday is ``ordinal % 7`` (Sunday 0, cron's
numbering).  Everything here is calendar arithmetic, independent of the time of
day and of time zones.

The matching days of a month depend only on the weekday of its first day and on
its length, so there are at most 7 x 4 = 28 distinct month tables per expression.
:class:`DayRule` builds each table the first time it is needed and keeps it:
finding the next matching date is one table look-up and a bisection per month,
never a walk over days.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from datetime import date

from lldsched.schedules.cron.parse import CronFields

__all__ = ["FIRST_ORDINAL", "LAST_ORDINAL", "DayRule"]

FIRST_ORDINAL = date(1, 1, 3).toordinal()  # a margin for zone offsets at the ends
LAST_ORDINAL = date(9999, 12, 29).toordinal()
_MAX_YEAR = 9999
_DAYS_IN_MONTH = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _days_in_month(year: int, month: int) -> int:
    if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
        return 29
    return _DAYS_IN_MONTH[month]


class DayRule:
    """The dates an expression fires on.  Immutable in meaning; tables fill lazily.

    The table cache is a plain dict written without a lock: two threads that miss
    at once compute the same tuple, and either assignment is correct.
    """

    __slots__ = ("_fields", "_months", "_tables")

    def __init__(self, fields: CronFields) -> None:
        self._fields = fields
        self._months = frozenset(fields.months)
        self._tables: dict[tuple[int, int], tuple[int, ...]] = {}

    def rest_of_month(self, ordinal: int) -> tuple[int, tuple[int, ...], int]:
        """For the month of ``ordinal``: its first ordinal, its matching days from
        ``ordinal``'s day on, and its last ordinal."""
        when = date.fromordinal(ordinal)
        first_of_month = ordinal - when.day + 1
        length = _days_in_month(when.year, when.month)
        if when.month not in self._months:
            return first_of_month, (), first_of_month + length - 1
        table = self._table(first_of_month % 7, length)
        return first_of_month, table[bisect_left(table, when.day) :], first_of_month + length - 1

    def fires_ever(self) -> bool:
        """True when some date matches: some allowed month, in some year, has a day that
        the day fields allow.  (Only ANDed day fields can exclude every date, e.g. a
        day of month that is never the last Sunday.)  Every month starts on every
        weekday over the Gregorian cycle, leap Februaries included, so trying each
        month length with each first weekday decides it; the tables are kept."""
        f = self._fields
        if not f.days_and or f.every_day_of_month or f.every_day_of_week:
            # An OR, or one field that allows every day: the weekdays named all occur
            # (a fifth one at least in a leap February), and the parser has already
            # rejected days of month that no allowed month has.
            return True
        for month in f.months:
            lengths = (28, 29) if month == 2 else (_DAYS_IN_MONTH[month],)
            for length in lengths:
                for first in range(7):
                    if self._table(first, length):
                        return True
        return False

    def _table(self, first: int, length: int) -> tuple[int, ...]:
        table = self._tables.get((first, length))
        if table is None:
            table = self._tables[first, length] = self._build(first, length)
        return table

    def _build(self, first: int, length: int) -> tuple[int, ...]:
        """Matching days of a month whose 1st has weekday ``first`` (Sunday 0)."""
        f = self._fields
        every = range(1, length + 1)
        if f.every_day_of_month and f.every_day_of_week:
            return tuple(every)
        if f.every_day_of_month:
            by_dom: set[int] | range = every
        else:
            by_dom = {d for d in f.days if d <= length}
            if f.last_day:
                by_dom.add(length)
            if f.last_weekday:  # the last Monday-Friday: step back over a weekend
                last = (first + length - 1) % 7
                by_dom.add(length - 2 if last == 0 else length - 1 if last == 6 else length)
        if f.every_day_of_week:
            by_dow: set[int] | range = every
        else:
            by_dow = set()
            for weekday in f.weekdays:
                by_dow.update(range(1 + (weekday - first) % 7, length + 1, 7))
            for weekday in f.last_of:
                start = 1 + (weekday - first) % 7
                by_dow.add(start + 7 * ((length - start) // 7))
            for weekday, nth in f.nth:
                day = 1 + (weekday - first) % 7 + 7 * (nth - 1)
                if day <= length:
                    by_dow.add(day)
        chosen = set(by_dom)
        if f.days_and:  # real cron's day rule: a field starting with * means AND
            chosen.intersection_update(by_dow)
        else:
            chosen.update(by_dow)
        return tuple(sorted(chosen))

    def next_date(self, ordinal: int, last: int) -> int | None:
        """The first matching date on or after ``ordinal`` and not after ``last``."""
        when = date.fromordinal(ordinal)
        year, month, day = when.year, when.month, when.day
        months = self._fields.months
        first_of_month = ordinal - day + 1
        if month not in self._months:
            year, month = _month_after(months, year, month)
            if year > _MAX_YEAR:
                return None
            day, first_of_month = 1, date(year, month, 1).toordinal()
        while True:
            if first_of_month > last:
                return None
            table = self._table(first_of_month % 7, _days_in_month(year, month))
            i = bisect_left(table, day)
            if i < len(table):
                found = first_of_month + table[i] - 1
                return found if found <= last else None
            year, month = _month_after(months, year, month)
            if year > _MAX_YEAR:
                return None
            day, first_of_month = 1, date(year, month, 1).toordinal()

    def prev_date(self, ordinal: int, first: int) -> int | None:
        """The last matching date on or before ``ordinal`` and not before ``first``."""
        when = date.fromordinal(ordinal)
        year, month, day = when.year, when.month, when.day
        months = self._fields.months
        if month not in self._months:
            year, month, day = *_month_before(months, year, month), 31
            if year < 1:
                return None
        while True:
            first_of_month = date(year, month, 1).toordinal()
            if first_of_month + 30 < first:
                return None
            table = self._table(first_of_month % 7, _days_in_month(year, month))
            i = bisect_right(table, day) - 1
            if i >= 0:
                found = first_of_month + table[i] - 1
                return found if found >= first else None
            year, month = _month_before(months, year, month)
            if year < 1:
                return None
            day = 31


def _month_after(months: tuple[int, ...], year: int, month: int) -> tuple[int, int]:
    """The first allowed (year, month) after ``year``-``month``."""
    j = bisect_right(months, month)
    return (year, months[j]) if j < len(months) else (year + 1, months[0])


def _month_before(months: tuple[int, ...], year: int, month: int) -> tuple[int, int]:
    """The last allowed (year, month) before ``year``-``month``."""
    j = bisect_left(months, month)
    return (year, months[j - 1]) if j else (year - 1, months[-1])
