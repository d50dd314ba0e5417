"""Local days of a time zone, as UTC instants: where each day starts, and its DST shift.

Cron reads the wall clock; the scheduler keeps time in UTC epoch seconds.  This
module is the bridge.  For a local date it answers with a :class:`LocalDay`: the
wall-clock seconds of its midnight (counted as if the wall clock were UTC), the
UTC offset in force when the day starts and when it ends, and, when those differ,
the UTC instant of the change.  A day without a change maps wall time to UTC by
one subtraction; a day with a change is left to the caller's DST policy
(:mod:`lldsched.schedules.cron`).

Time zones come from :mod:`zoneinfo` (``tzdata`` supplies the database where the
system has none, as on Windows and some containers).  zoneinfo does not list its
transitions, so they are found by probing: a local day is plain when the offset is
the same one day before and two days after it, and a change is pinned to the
second by bisection.  That needs offset changes to be more than three days apart;
in tzdata since 1900 the closest pair is four days apart (Africa/Freetown, 1939),
and modern ones are weeks apart.  Answers are cached per zone in a bounded dict
(no lock: a race computes the same value twice, and either write is correct).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, tzinfo
from functools import lru_cache
from typing import NamedTuple
from zoneinfo import TZPATH, ZoneInfo, ZoneInfoNotFoundError, available_timezones

from lldsched.errors import ScheduleError, shown

__all__ = ["EPOCH_ORDINAL", "LocalDay", "LocalDays", "local_days", "zone_info"]

EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CACHE_LIMIT = 4096  # local days remembered per zone


class LocalDay(NamedTuple):
    """One local date.  ``shift`` is ``None`` when the offset holds all day."""

    wall: int  # wall-clock seconds of the day's 00:00, counted as if the wall clock were UTC
    before: int  # UTC offset (seconds) when the day starts
    after: int  # UTC offset (seconds) when it ends
    shift: int | None  # the UTC instant the offset changes from ``before`` to ``after``


class LocalDays:
    """The days of one zone (UTC itself is the trivial case: every day is plain)."""

    __slots__ = ("_days", "is_utc", "key", "tzinfo")

    def __init__(self, key: str) -> None:
        self.key = key
        self.is_utc = key == "UTC"
        self.tzinfo: tzinfo = UTC if self.is_utc else ZoneInfo(key)
        self._days: dict[int, LocalDay] = {}

    def ordinal(self, ts: float) -> int:
        """The local date (proleptic ordinal) of the instant ``ts``."""
        return EPOCH_ORDINAL + int((ts + self.offset_at(ts)) // 86400)

    def offset_at(self, ts: float) -> int:
        """The UTC offset, in seconds, in force at the instant ``ts``."""
        if self.is_utc:
            return 0
        if ts >= 0:
            local = datetime.fromtimestamp(ts, self.tzinfo)
        else:  # Windows' fromtimestamp rejects instants before 1970
            local = (_EPOCH + timedelta(seconds=ts)).astimezone(self.tzinfo)
        offset = local.utcoffset()
        return 0 if offset is None else int(offset.total_seconds())

    def day(self, ordinal: int) -> LocalDay:
        """The start, offsets and DST shift of the local date ``ordinal``."""
        found = self._days.get(ordinal)
        if found is None:
            found = self._day(ordinal)
            if len(self._days) >= _CACHE_LIMIT:
                self._days.clear()
            self._days[ordinal] = found
        return found

    def _day(self, ordinal: int) -> LocalDay:
        wall = (ordinal - EPOCH_ORDINAL) * 86400
        if self.is_utc:
            return LocalDay(wall, 0, 0, None)
        # Every instant of the local day lies within a day of its wall clock reading.
        low, high = wall - 86400, wall + 2 * 86400
        before, after = self.offset_at(low), self.offset_at(high)
        if before == after:
            return LocalDay(wall, before, after, None)
        shift = self._pin(low, high, before)
        if shift <= wall - max(before, after):  # the whole day is after the change
            return LocalDay(wall, after, after, None)
        if shift >= wall + 86400 - min(before, after):  # the whole day is before it
            return LocalDay(wall, before, before, None)
        return LocalDay(wall, before, after, shift)

    def constant_offset(self, first: int, last: int) -> int | None:
        """The one offset of the local dates ``first`` to ``last``, or ``None`` if it changes.

        Probes the wall clock from a day before ``first`` to two days after ``last``
        every three days: no change can hide between two probes.
        """
        if self.is_utc:
            return 0
        utcoffset = self.tzinfo.utcoffset
        offsets = {utcoffset(datetime.fromordinal(o)) for o in range(first - 1, last + 3, 3)}
        offsets.add(utcoffset(datetime.fromordinal(last + 2)))
        if len(offsets) != 1:
            return None
        offset = offsets.pop()
        return 0 if offset is None else int(offset.total_seconds())

    def _pin(self, low: int, high: int, offset: int) -> int:
        """The first instant in (low, high] whose offset is not ``offset`` (bisection)."""
        while high - low > 1:
            middle = (low + high) // 2
            if self.offset_at(middle) == offset:
                low = middle
            else:
                high = middle
        return high


@lru_cache(maxsize=64)
def local_days(key: str) -> LocalDays:
    """The shared :class:`LocalDays` of zone ``key``; :class:`ScheduleError` if unknown."""
    try:
        return LocalDays(key)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise _unknown(key) from exc


def zone_info(name: str) -> ZoneInfo:
    """The zone the IANA ``name`` names; :class:`ScheduleError` (a ValidationError)
    quoting it if there is none.

    The one place a name becomes a zone for the views as for cron: ``ZoneInfo`` raises a
    ``KeyError`` for an unknown name, a ``ValueError`` for a malformed one, a
    ``TypeError`` for a non-string, and an ``OSError`` for a folder of the database
    (``"Europe"``: ``IsADirectoryError`` on POSIX, ``PermissionError`` on Windows)."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError, OSError) as exc:
        raise _unknown(name) from exc


def _unknown(key: object) -> ScheduleError:
    """The error for a name that is no zone, or for any name where there is no database:
    a slim container image has no ``/usr/share/zoneinfo``, and an install without the
    ``tzdata`` dependency (``pip install --no-deps``, a vendored copy) then knows no zone
    at all.  Looked up on this error path only (``available_timezones`` walks the
    database)."""
    zones = available_timezones()
    if not zones:
        return ScheduleError(
            f"unknown time zone {shown(key)}: this Python has no time zone database (no zone files "
            f"in zoneinfo.TZPATH {list(TZPATH)}, and no tzdata package): install one, "
            "pip install tzdata (a dependency of lldsched this install lacks) or the "
            "system's (apt-get install tzdata, apk add tzdata)"
        )
    if isinstance(key, str):  # 'utc', 'europe/berlin', 'UTC ': the zone's name, mistyped
        wanted = key.strip().casefold()
        meant = sorted(zone for zone in zones if zone.casefold() == wanted)
        if meant:
            return ScheduleError(
                f"unknown time zone {shown(key)}: did you mean {meant[0]!r}? (an IANA name is "
                "written exactly, its case and no blank at either end)"
            )
    return ScheduleError(
        f"unknown time zone {shown(key)}: use an IANA name such as 'Europe/Berlin'"
    )
