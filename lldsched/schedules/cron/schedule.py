"""CronSchedule: real cron semantics, time zones and DST, fast, explained.

The public face of :mod:`lldsched.schedules.cron` (whose docstring says where
the grammar, the day rule, the zone and the search live).

**Instants.**  A fire is a wall-clock minute of the schedule's zone whose fields
match (at second 0, or at each second of a six-field expression's seconds
field).  ``next_after(ts)`` is the first fire *strictly after* ``ts`` (float
epoch seconds), or ``None`` when nothing fires within 100 years (the longest real
gaps are about 40 years, e.g. ``0 0 * 2 MON#5``); ``prev_before(ts)`` is the last
fire strictly before ``ts``.  Both answer in a bounded number of steps, never a
loop.

**DST** (Debian cron's rule, which cronsim follows; see ``docs/CRON.md``):

* a job whose minute and hour fields both do *not* start with ``*`` (``30 2 * * *``,
  ``0 9-17 * * *``, ``15 30 2 * * *``) keeps its wall-clock meaning: a time that
  falls in a spring-forward gap runs once, at the first minute that exists after
  the gap (at its own second, for six fields); a time that happens twice in a
  fall-back overlap runs once, at its first occurrence;
* every other job (``*/20 2 * * *``, ``0 * * * *``) steps through real instants: a
  wall time inside a gap does not exist, so nothing fires there, and an hourly job
  fires in both passes of a repeated hour;
* whatever the start, the answer is strictly after the instant asked about, also
  for an instant in the second pass of an overlap (cronsim may answer with the
  first pass there, before the instant; we do not).

**Speed.**  The text is parsed once and the result cached by (text, zone), the
schedule's identity (``==``, ``hash``): it is immutable, and every equal schedule
shares it, also past the cache's bound while a schedule holds it.  A search jumps
month -> day (a per-month table of matching days) -> hour -> minute (bisection over
sorted values), never walking minutes.  Each schedule also remembers the block of
fires (an hour, a day, or the rest of a month) that answered its last query, so the
next query inside that block is one bisection: well under a microsecond for
``* * * * *``.  On a miss it first tries the block the shared engine found last, for
any schedule of the same text and zone, so a fresh ``CronSchedule`` registers, and
many tasks that fire at once reschedule, without a search each.  Those memos are the
only mutable state; each is replaced by one atomic assignment, so sharing a schedule
between threads is safe (a race costs a recomputation, never a wrong answer).
"""

from __future__ import annotations

import math
import time
from bisect import bisect_right
from collections.abc import Iterator
from datetime import UTC, datetime, tzinfo
from functools import lru_cache
from typing import Self
from weakref import WeakValueDictionary
from zoneinfo import ZoneInfo

from lldsched import checks
from lldsched.clock import UTC_NAMES, utc_datetime
from lldsched.errors import ScheduleError, shown
from lldsched.model import ExecutionRecord
from lldsched.schedules.base import slots_from
from lldsched.schedules.cron.parse import CronFields, parse
from lldsched.schedules.cron.search import HORIZON_DAYS, NO_CURSOR, CronEngine, Cursor
from lldsched.schedules.cron.zone import local_days
from lldsched.schedules.objects import copied
from lldsched.schedules.subclasses import AnswersItsOwnWay

__all__ = ["HORIZON_DAYS", "MAX_PREVIEW", "CronSchedule", "from_text"]

MAX_PREVIEW = 10_000
"""The most fires :meth:`CronSchedule.preview` lists (it builds them all before it
returns: a count of 10**9 would hang and fill memory); :meth:`CronSchedule.fire_times`,
lazy, takes any count."""


_LIVE: WeakValueDictionary[tuple[str, str], CronEngine] = WeakValueDictionary()
"""Every engine a schedule still holds, by (text, zone): what the bounded cache below
dropped while a schedule kept it (a service with more than 1,024 texts) is found here,
so every equal schedule shares one engine, its day tables and its latest block."""


@lru_cache(maxsize=1024)
def _engine(expr: str, zone_key: str) -> CronEngine:
    """The engine of (text, zone), which every equal :class:`CronSchedule` shares: the
    one a live schedule holds if there is one (:data:`_LIVE`), else parsed now."""
    key = (expr, zone_key)
    engine = _LIVE.get(key)
    if engine is None:
        engine = _LIVE.setdefault(key, _parsed(expr, zone_key))
    return engine


def _parsed(expr: str, zone_key: str) -> CronEngine:
    """``expr`` parsed and read in ``zone_key``: a fresh engine (no memo, no table yet)."""
    zone = local_days(zone_key)
    engine = CronEngine(parse(expr), zone)
    if not engine.rule.fires_ever():
        dom, month, dow = engine.fields.text.split()[-3:]
        raise ScheduleError(
            f"cron expression {shown(expr)} never fires: no date is both day of month "
            f"{dom!r} and day of week {dow!r} (months {month!r}); a day "
            "field that starts with * makes cron require both"
        )
    return engine


def _zone_key(tz: object) -> str:
    if isinstance(tz, str):
        return tz
    if tz is UTC:
        return "UTC"
    if isinstance(tz, ZoneInfo):
        return tz.key
    raise ScheduleError(f"time zone must be an IANA name or a ZoneInfo, got {shown(tz)}")


class CronSchedule(AnswersItsOwnWay):
    """A cron expression read in a time zone: an immutable :class:`Schedule`.

    ``CronSchedule("0 3 * * 1-5", tz="Europe/Berlin")``.  Raises
    :class:`~lldsched.errors.ScheduleError` at construction for bad text or an
    unknown zone, naming the field and quoting the bad text.

    A schedule that names no zone (``tz=None``, the default) is read in UTC, and
    :attr:`names_zone` is False: a scheduler built with a default zone
    (``Scheduler(tz="Europe/Berlin")``) registers it in that zone instead
    (:meth:`in_zone`).
    """

    __slots__ = ("_cursor", "_engine", "expr", "names_zone", "tz")

    expr: str
    tz: str
    names_zone: bool

    def __init__(self, expr: str, tz: str | tzinfo | None = None) -> None:
        if not isinstance(expr, str):
            raise ScheduleError(f"cron expression must be a string, got {shown(expr)}")
        key = "UTC" if tz is None else _zone_key(tz)
        self._engine = _engine(expr, key)
        self._cursor: Cursor = NO_CURSOR
        self.expr = expr
        self.tz = key
        self.names_zone = tz is not None

    def __repr__(self) -> str:
        """The call that builds it again, zone flag included: ``tz=`` shown whenever the
        schedule names its zone, UTC too (``CronSchedule('0 3 * * *', tz='UTC')``), left
        out for one that names none (``CronSchedule('0 3 * * *')``, read in a runtime's
        default zone), as the other schedules leave a default out."""
        if not self.names_zone:
            return f"CronSchedule({self.expr!r})"
        return f"CronSchedule({self.expr!r}, tz={self.tz!r})"

    def __eq__(self, other: object) -> bool:
        """Equal when the text and the zone are: ``"0 0 * * *"`` and ``"0 0 * * 0-6"``
        fire at the same instants yet are two values, as each prints and is stored as
        written (docs/decisions/schedules.md, "A cron schedule is its text and zone").
        Equal schedules share one parsed engine (:func:`_engine`).

        :attr:`names_zone` is not compared: it says how a runtime reads the schedule
        as it is registered (a zoneless one in its default zone), and a registered
        schedule is read in its zone for good (restored as it is, under any default);
        a durable store gives it back naming its zone, and a service registering it
        again at its start must find it equal (docs/decisions/changing-a-task.md, "A default zone
        for cron that names none").

        Of one class only, as the frozen schedules (``FixedRate`` and the others) are: a
        subclass answers its own way, so it is not the plain schedule of its text (found
        equal, a ``replace_existing`` registration kept the plain one, and the
        subclass's ``next_run`` was never asked)."""
        return (
            type(other) is type(self)
            and isinstance(other, CronSchedule)  # (for mypy: the same type)
            and (self.expr, self.tz) == (other.expr, other.tz)
        )

    def __hash__(self) -> int:
        return hash((self.expr, self.tz))

    def in_zone(self, tz: str | tzinfo) -> Self:
        """The same expression read in ``tz`` (a schedule that names that zone).  A
        subclass's comes back of its class, with its own attributes (:func:`~lldsched.
        schedules.objects.copied`): what a scheduler with a default zone registers in place
        of one that names none (docs/EXTENDING.md, "A subclass of a built-in
        schedule")."""
        moved = copied(self)
        CronSchedule.__init__(moved, self.expr, tz=tz)
        return moved

    @property
    def tzinfo(self) -> tzinfo:
        """The zone the expression is read in."""
        return self._engine.zone.tzinfo

    @property
    def fields(self) -> CronFields:
        """The parsed expression: sorted values per field, the day rule, the DST kind."""
        return self._engine.fields

    # -- the Schedule protocol -------------------------------------------------

    def first_run(self, now: float) -> float | None:
        """The first fire strictly after the moment of registration."""
        return self.next_after(now)

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        """The first fire after the run's slot that is not before its finish: fires that
        passed while it overran are skipped, one exactly at the finish is due at once."""
        finished = record.finished
        if finished > record.slot:
            return self._first_from(finished)
        return self.next_after(record.slot)

    def next_run_and_skipped(
        self, record: ExecutionRecord, *, limit: int
    ) -> tuple[float | None, list[float] | tuple[()]]:
        """:meth:`next_run`, and the fires that passed while the run overran, from one
        search when it did not (see :func:`~lldsched.schedules.base.next_run_and_skipped`):
        the fire after the slot is the one due whenever it is not before the finish."""
        following = self.next_after(record.slot)  # slot_after(record.slot)
        if following is None or following >= record.finished:
            return following, ()
        due = self._first_from(record.finished)
        if due is None:
            return None, ()
        return due, slots_from(self, following, due, limit=limit)

    def _first_from(self, finished: float) -> float | None:
        """The first fire not before ``finished``, the due instant after a run that ended
        then (docs/decisions/schedules.md, "A slot that falls exactly at a run's finish has not been
        missed", the fixed rate's rule): a fire exactly at the finish is due at once.  It
        is :meth:`next_after` the float just below ``finished``, as no float lies between
        the two; ``next_after`` itself stays strictly after, the documented query."""
        return self.next_after(math.nextafter(finished, -math.inf))

    def slot_after(self, slot: float) -> float | None:
        """The fire after ``slot`` (what :func:`~lldsched.schedules.base.slot_after`
        derives from ``next_run``, without building a record)."""
        return self.next_after(slot)

    # -- queries -----------------------------------------------------------------

    def next_after(self, timestamp: float) -> float | None:
        """The first fire strictly after ``timestamp``, or ``None`` if none within 100 years."""
        if timestamp.__class__ is bool:  # an int to the comparisons below, not an instant
            checks.instant(timestamp, name="cron next_after()", error=ScheduleError, within=None)
        try:  # free until it raises: the hot path pays nothing for the message below
            low, high, base, offsets, resume = self._cursor
            if low <= timestamp < high:
                return base + offsets[bisect_right(offsets, timestamp - base)]
            engine = self._engine
            shared = engine.recent  # the block the latest search of this engine found
            if shared[0] <= timestamp < shared[1]:
                self._cursor = shared
                base, offsets = shared[2], shared[3]
                return base + offsets[bisect_right(offsets, timestamp - base)]
            fire, cursor = engine.next_fire(float(timestamp), resume if timestamp == high else None)
        except (ValueError, ArithmeticError) as exc:  # NaN; an int no float holds
            # Decimal("Infinity") compared with a float raises decimal.InvalidOperation
            checks.instant(timestamp, name="cron next_after()", error=ScheduleError, within=None)
            raise ScheduleError(f"cron next_after({shown(timestamp)}): {exc}") from None
        except TypeError:
            checks.instant(timestamp, name="cron next_after()", error=ScheduleError, within=None)
            raise  # a number, and still a TypeError: not the caller's mistake
        self._cursor = engine.recent = cursor
        return fire

    def prev_before(self, timestamp: float) -> float | None:
        """The last fire strictly before ``timestamp``, or ``None`` if none within 100 years."""
        checks.instant(timestamp, name="cron prev_before()", error=ScheduleError, within=None)
        try:
            return self._engine.prev_fire(float(timestamp))
        except (ValueError, OverflowError) as exc:  # NaN; an int no float holds
            raise ScheduleError(f"cron prev_before({shown(timestamp)}): {exc}") from None

    def fire_times(self, start: float, n: int) -> Iterator[float]:
        """The next ``n`` fires strictly after ``start`` (fewer if the schedule ends).
        ``start`` and ``n`` are checked at the call, not at the first fire drawn."""
        checks.instant(start, name="cron fire_times()", error=ScheduleError, within=None)
        try:  # what the search refuses (next_after's words), refused here, not when drawn
            nan = math.isnan(start)
        except OverflowError as exc:  # an int no float holds
            raise ScheduleError(f"cron fire_times({shown(start)}): {exc}") from None
        if nan:
            raise ScheduleError(f"cron fire_times({shown(start)}): the timestamp is NaN")
        checks.whole(n, name="fire_times() n", at_least=0, error=ScheduleError)
        return self._fire_times(start, n)

    def _fire_times(self, start: float, n: int) -> Iterator[float]:
        when = start
        for _ in range(n):
            fire = self.next_after(when)
            if fire is None:
                return
            yield fire
            when = fire

    def iter_after(self, start: float) -> Iterator[float]:
        """Every fire strictly after ``start``, in order, for as long as there is one."""
        when = self.next_after(start)
        while when is not None:
            yield when
            when = self.next_after(when)

    def preview(self, n: int = 5, start: float | datetime | None = None) -> list[datetime]:
        """The next ``n`` fires after ``start`` (default: now), as datetimes in the zone.

        ``start`` may be epoch seconds or a datetime; a naive datetime is read in the
        schedule's zone (its ``fold`` picks the pass of a repeated hour).  At most
        :data:`MAX_PREVIEW` fires: a larger ``n`` is a :class:`ScheduleError` naming it
        (:meth:`fire_times` draws any number lazily).
        """
        checks.whole(n, name="preview() n", at_least=0, at_most=MAX_PREVIEW, error=ScheduleError)
        if start is None:
            ts = time.time()
        elif isinstance(start, datetime):
            aware = start if start.tzinfo is not None else start.replace(tzinfo=self.tzinfo)
            ts = aware.timestamp()
        else:
            kind = "epoch seconds, a datetime or None"
            ts = float(checks.number(start, name="preview() start", kind=kind, error=ScheduleError))
        zone = self.tzinfo
        return [utc_datetime(t).astimezone(zone) for t in self.fire_times(ts, n)]

    def explain(self) -> str:
        """The expression in plain English, its zone after it, UTC too:
        ``"At 03:00, Monday through Friday (UTC)"`` (``Etc/UTC`` too), ``"At 01:30
        (Europe/Berlin)"``.  Its times are that zone's wall-clock times, and a text shown
        alone (a log line, a listing beside a column in UTC) read "At 03:00" as the
        reader's own time: the one rule of every place a cron schedule is described
        (docs/decisions/schedules.md, "A cron schedule's words name its zone")."""
        from lldsched.schedules.cron.explain import explain

        zone = str(self.tzinfo)
        return f"{explain(self._engine.fields)} ({'UTC' if zone in UTC_NAMES else zone})"


def from_text(text: str, *, tz: str | None, of: str) -> CronSchedule:
    """Cron text given where a schedule is taken, as the schedule it says: the one rule,
    for a task's schedule (``schedule``, ``scheduled``, ``reschedule``:
    :func:`~lldsched.core.schedulearg.schedule_of`, which passes the runtime's ``tz``) and
    for what a decorator wraps (``Jittered("0 3 * * *", 60, seed=1)``, ``Window``:
    ``tz`` None, a ``CronSchedule`` that names no zone, which the runtime registering
    the decorator reads in its own).  So the text means the same wherever it is
    written.  :class:`~lldsched.errors.ScheduleError` naming ``of`` (``"task 'x'"``,
    ``"Jittered"``) and the text when it is no cron expression."""
    try:
        return CronSchedule(text, tz=tz)
    except ScheduleError as exc:
        raise ScheduleError(f"{of}: {exc}") from None
