"""The search: from a parsed expression and a zone to fire instants, by jumps.

:class:`CronEngine` holds everything derived once from (expression, zone): sorted
hour offsets, the offsets of the fires within an hour (minute and second together:
a five-field expression fires at second 0, so six fields need no search of their
own), a per-day table of fire offsets when a day has few fires, the
:class:`~.days.DayRule` and the zone's :class:`~.zone.LocalDays`.  It is shared by
every schedule with the same text and zone and is stateless apart from caches that
fill on demand (plain dicts written without a lock: a race computes the same value
twice, and either assignment is correct) and ``recent``, the block of fires its
latest search found, which every schedule sharing the engine tries before
searching (issue #19: a fresh schedule of a known text registers with one
bisection, not a search from a cold cursor).

``next_fire`` jumps date -> hour -> minute: the next matching date comes from the
month tables, the hour and the minute (with its second) from bisections over
sorted offsets.  It also returns a :data:`Cursor`, the block of fires around its
answer (the hour, the day, or, for sequential iteration over sparse days, the rest
of the month), so the caller can answer the following queries inside that block
with one bisection.

Days with a DST shift get an explicit, cached list of instants built under the
policy described in :mod:`lldsched.schedules.cron`.

Whole seconds: every fire is a whole second (zone offsets are whole seconds), so the
first fire after ``ts`` is the first after ``floor(ts)`` and the last before it the
last before ``ceil(ts)``, and the searches take those: ``ts - base`` (a day's or an
hour's start) is then exact.  For a fraction it was not where ``ts`` is far smaller
than ``base``, within days of 1970 (Berlin's 1970-01-01 starts at -3600): it rounded
``120 - 1e-14`` onto the fire at 120, which was then skipped (tools/fuzz/fuzz_cron.py
found it; docs/decisions/schedules.md, "A fire a hair before the query's instant").  A cursor
answers ``next_after`` with ``ts - base`` unrounded (the hot path pays nothing for
this rule), which is exact for every ``ts`` near a fire of the block once ``base`` is
farther from 0 than twice the block's span (Sterbenz: ``ts`` and ``base`` then within
a factor of two); so no cursor is given with a base nearer than :data:`_INEXACT_BASE`.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right

from lldsched.schedules.cron.days import FIRST_ORDINAL, LAST_ORDINAL, DayRule
from lldsched.schedules.cron.parse import CronFields
from lldsched.schedules.cron.zone import EPOCH_ORDINAL, LocalDay, LocalDays

__all__ = ["HORIZON_DAYS", "MAX_TS", "MIN_TS", "NO_CURSOR", "CronEngine", "Cursor"]

HORIZON_DAYS = 36525  # 100 years: search this far before answering "never again"
# Fires exist on the local dates FIRST_DATE (0001-01-04) through LAST_ORDINAL
# (9999-12-29), in both directions alike.  With UTC offsets under a day, every one of
# them lies strictly between MIN_TS and MAX_TS, and every instant between those two
# has a local date that datetime can hold: a query outside them is answered without
# reading the zone.
FIRST_DATE = FIRST_ORDINAL + 1
MIN_TS = float((FIRST_ORDINAL - EPOCH_ORDINAL) * 86400)  # 0001-01-03 00:00 UTC
MAX_TS = float((LAST_ORDINAL + 2 - EPOCH_ORDINAL) * 86400)  # 9999-12-31 00:00 UTC
_SMALL_DAY = 96  # at most this many fires a day: one table for the whole day
_SMALL_MONTH_DAY = 12  # at most this many: sequential iteration tabulates a month
_FULL_DAY = 1440  # at most this many (a five-field maximum): iteration tabulates a day;
# busier six-field days (up to 86,400 fires) iterate an hour at a time
_TRANSITION_CACHE_LIMIT = 256
_INEXACT_BASE = 4 * 86400.0  # > twice a block's span (a 25-hour day): "Whole seconds"

# (low, high, base, offsets, resume).  For low <= ts < high the next fire is
# base + the first offset above ts - base (high is the block's last fire, so there
# is one).  A query *at* high, the usual next step of an iteration, resumes the
# date search at the local date ``resume``.
Cursor = tuple[float, float, float, tuple[float, ...], int]
NO_CURSOR: Cursor = (math.inf, math.nan, 0.0, (), 0)  # matches no query


class CronEngine:
    """Fire instants of one expression in one zone (see the module docstring)."""

    __slots__ = (
        "__weakref__",  # schedule._LIVE: the engines live schedules hold
        "_full_day_secs",
        "_transitions",
        "day_secs",
        "fields",
        "full_day",
        "hour_secs",
        "hours",
        "minute_secs",
        "month_blocks",
        "recent",
        "rule",
        "zone",
    )

    def __init__(self, fields: CronFields, zone: LocalDays) -> None:
        self.fields = fields
        self.zone = zone
        self.rule = DayRule(fields)
        # Fires within an hour: minute and second together (second 0 for five fields).
        self.minute_secs = tuple([m * 60.0 + s for m in fields.minutes for s in fields.seconds])
        self.hour_secs = tuple([h * 3600.0 for h in fields.hours])
        self.hours = frozenset(fields.hours)
        per_day = len(self.minute_secs) * len(fields.hours)
        self.day_secs: tuple[float, ...] | None = None
        if per_day <= _SMALL_DAY:
            self.day_secs = tuple([h + m for h in self.hour_secs for m in self.minute_secs])
        self.month_blocks = per_day <= _SMALL_MONTH_DAY
        self.full_day = per_day <= _FULL_DAY
        self._transitions: dict[int, tuple[float, ...]] = {}
        self._full_day_secs: tuple[float, ...] | None = None
        # The block of fires the latest next_fire of any schedule sharing this engine
        # found (set by CronSchedule.next_after): a fresh schedule of the same text,
        # or tasks that all fire at once, answer from it with one bisection.  One
        # atomic assignment replaces it; a race costs a recomputation, never a wrong
        # answer (a block depends only on the engine).
        self.recent: Cursor = NO_CURSOR

    # -- forward -------------------------------------------------------------------

    def next_fire(self, ts: float, resume: int | None) -> tuple[float | None, Cursor]:
        """The first fire strictly after ``ts``, and the block it belongs to.

        ``resume`` is the local date to search from when ``ts`` is the last fire of
        the previous block (sequential iteration); ``None`` otherwise.  No block is
        given for a base within :data:`_INEXACT_BASE` of 1970 ("Whole seconds").
        """
        fire, cursor = self._next_fire(ts, resume)
        base = cursor[2]
        if -_INEXACT_BASE < base < _INEXACT_BASE and base:  # 0.0: the block's own instants
            return fire, NO_CURSOR
        return fire, cursor

    def _next_fire(self, ts: float, resume: int | None) -> tuple[float | None, Cursor]:
        if not MIN_TS <= ts < MAX_TS:
            if ts >= MAX_TS:
                return None, NO_CURSOR
            if math.isnan(ts):
                raise ValueError("the timestamp is NaN")
            ts = MIN_TS  # before every fire, as ts was
        ts //= 1  # fires are whole seconds: see "Whole seconds" in the module docstring
        zone = self.zone
        if resume is None:
            ordinal = EPOCH_ORDINAL + int(ts // 86400) if zone.is_utc else zone.ordinal(ts)
            ordinal = max(ordinal, FIRST_DATE)
        elif resume > LAST_ORDINAL:
            return None, NO_CURSOR
        else:
            ordinal = resume
        whole_month = resume is not None and self.month_blocks
        last = min(ordinal + HORIZON_DAYS, LAST_ORDINAL)
        rule = self.rule
        found = rule.next_date(ordinal, last)
        while found is not None:
            if whole_month:
                block, month_end = self._month_block(found)
                i = bisect_right(block, ts)
                if i < len(block):
                    return block[i], (ts, block[-1], 0.0, block, month_end + 1)
                found = rule.next_date(month_end + 1, last) if month_end < last else None
                continue
            fire, cursor = self._first_fire_on(found, ts, resume is not None)
            if fire is not None:
                return fire, cursor
            found = rule.next_date(found + 1, last) if found < last else None
        return None, NO_CURSOR

    def _first_fire_on(
        self, ordinal: int, ts: float, sequential: bool
    ) -> tuple[float | None, Cursor]:
        """The first fire on local date ``ordinal`` after ``ts``, and its block.

        The block is the day when the day table is small or the caller iterates
        (the full table of a busy expression is built once, on first iteration),
        else the hour.
        """
        if self.zone.is_utc:
            base = float((ordinal - EPOCH_ORDINAL) * 86400)
        else:
            day = self.zone.day(ordinal)
            if day.shift is not None:
                fires = self.transition_fires(ordinal, day)
                i = bisect_right(fires, ts)
                if i == len(fires):
                    return None, NO_CURSOR
                return fires[i], (ts, fires[-1], 0.0, fires, ordinal + 1)
            base = float(day.wall - day.before)
        offset = ts - base
        secs = self.day_secs
        if secs is None and sequential and self.full_day:
            secs = self._full_day()
        if secs is not None:
            i = bisect_right(secs, offset)
            if i == len(secs):
                return None, NO_CURSOR
            return base + secs[i], (ts, base + secs[-1], base, secs, ordinal + 1)
        minutes = self.minute_secs
        hour = offset // 3600 * 3600
        if hour // 3600 in self.hours:
            i = bisect_right(minutes, offset - hour)
            if i < len(minutes):
                start = base + hour
                last = start + minutes[-1]
                resume = ordinal + 1 if hour == self.hour_secs[-1] else ordinal
                return start + minutes[i], (start, last, start, minutes, resume)
        j = bisect_right(self.hour_secs, hour) if offset >= 0 else 0
        if j == len(self.hour_secs):
            return None, NO_CURSOR
        start = base + self.hour_secs[j]
        resume = ordinal + 1 if j == len(self.hour_secs) - 1 else ordinal
        return start + minutes[0], (ts, start + minutes[-1], start, minutes, resume)

    def _full_day(self) -> tuple[float, ...]:
        if self._full_day_secs is None:
            self._full_day_secs = tuple([h + m for h in self.hour_secs for m in self.minute_secs])
        return self._full_day_secs

    def _month_block(self, ordinal: int) -> tuple[tuple[float, ...], int]:
        """Every fire on matching dates from ``ordinal`` to its month's end, and that end."""
        first_of_month, days, month_end = self.rule.rest_of_month(ordinal)
        secs = self.day_secs
        assert secs is not None  # month blocks imply a small day table
        fires: list[float] = []
        if month_end > LAST_ORDINAL:  # the calendar's last days: datetime ends in 9999
            days = tuple(d for d in days if first_of_month + d - 1 <= LAST_ORDINAL)
            month_end = LAST_ORDINAL
        if not days:
            return (), month_end
        offset = self.zone.constant_offset(
            first_of_month + days[0] - 1, first_of_month + days[-1] - 1
        )
        for day_of_month in days:
            date = first_of_month + day_of_month - 1
            if offset is not None:
                base = float((date - EPOCH_ORDINAL) * 86400 - offset)
            else:
                day = self.zone.day(date)
                if day.shift is not None:
                    fires.extend(self.transition_fires(date, day))
                    continue
                base = float(day.wall - day.before)
            fires.extend([base + s for s in secs])
        return tuple(fires), month_end

    # -- backward ------------------------------------------------------------------

    def prev_fire(self, ts: float) -> float | None:
        """The last fire strictly before ``ts``, or ``None`` within 100 years."""
        if math.isnan(ts):
            raise ValueError("the timestamp is NaN")
        if ts <= MIN_TS:
            return None
        if ts >= MAX_TS:
            ts, ordinal = MAX_TS, LAST_ORDINAL  # after every fire, as ts was
        else:
            ts = -(-ts // 1)  # the whole second at or after ts: the same fires lie before it
            ordinal = min(self.zone.ordinal(ts), LAST_ORDINAL)
        first = max(ordinal - HORIZON_DAYS, FIRST_DATE)
        rule = self.rule
        found = rule.prev_date(ordinal, first)
        while found is not None:
            fire = self._last_fire_on(found, ts)
            if fire is not None:
                return fire
            found = rule.prev_date(found - 1, first) if found > first else None
        return None

    def _last_fire_on(self, ordinal: int, ts: float) -> float | None:
        day = self.zone.day(ordinal)
        if day.shift is not None:
            fires = self.transition_fires(ordinal, day)
            i = bisect_left(fires, ts)
            return fires[i - 1] if i else None
        base = float(day.wall - day.before)
        offset = ts - base
        minutes = self.minute_secs
        hour = min(offset // 3600, 24.0) * 3600
        if hour // 3600 in self.hours:
            i = bisect_left(minutes, offset - hour)
            if i:
                return base + hour + minutes[i - 1]
        j = bisect_left(self.hour_secs, hour) if offset >= 0 else 0
        if j == 0:
            return None
        return base + self.hour_secs[j - 1] + minutes[-1]

    # -- days with a DST shift -------------------------------------------------------

    def transition_fires(self, ordinal: int, day: LocalDay) -> tuple[float, ...]:
        """The fires of a local day with an offset change, under the DST policy.

        A wall time read with the offset before the change is real if it lands
        before the change; read with the offset after, if it lands at or after it.
        Both real: an overlap; neither: a gap.  A wall-clock job's time in a gap
        moves whole minutes forward until it exists, keeping its second (cronsim's
        rule for five fields, applied to six: ``15 30 2 * * *`` runs at 03:00:15).
        """
        found = self._transitions.get(ordinal)
        if found is not None:
            return found
        assert day.shift is not None
        before, after, shift = day.before, day.after, day.shift
        after_gap = -(-(shift + after) // 60) * 60 - after  # first whole minute after a gap
        wall_clock = self.fields.wall_clock
        # A wall time before both shift + before and shift + after is real once, read
        # with the offset before; one at or after both, once, read with the offset after.
        # A whole hour on either side takes its fires at once: only the hour or two the
        # change meets are read second by second.
        alone_before, alone_after = shift + min(before, after), shift + max(before, after)
        offsets = [int(offset) for offset in self.minute_secs]
        fires: set[int] = set()
        for h in self.fields.hours:
            hour = day.wall + h * 3600
            if hour + 3600 <= alone_before:
                fires.update([hour - before + offset for offset in offsets])
                continue
            if hour >= alone_after:
                fires.update([hour - after + offset for offset in offsets])
                continue
            for offset in offsets:
                wall = hour + offset
                first, second = wall - before, wall - after
                real_first, real_second = first < shift, second >= shift
                if wall_clock:  # once: the first occurrence, or just after the gap
                    moved = after_gap + offset % 60
                    fires.add(first if real_first else second if real_second else moved)
                else:  # every real instant that shows this wall time
                    if real_first:
                        fires.add(first)
                    if real_second:
                        fires.add(second)
        result = tuple(float(t) for t in sorted(fires))
        if len(self._transitions) >= _TRANSITION_CACHE_LIMIT:
            self._transitions.clear()
        self._transitions[ordinal] = result
        return result
