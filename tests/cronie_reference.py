"""cronie, read from its source, as a slow reference for tests/test_cron_cronie.py.

Two parts, each a transcription of cronie's C (the repository cronie-crond/cronie at
5f9f16b, after 1.7.2), sharing nothing with lldsched but the standard library:

* :func:`parse` is ``load_entry``/``get_list``/``get_range``/``get_number`` of
  ``src/entry.c`` for the five time fields of a line: bit sets per field, the
  ``*_STAR`` flags (set when a field's *first character* is ``*``), the ``@``
  nicknames (lower case only) and Sunday as both 0 and 7.  It answers cronie's
  error (``"bad minute"`` ... ``"bad day-of-week"``, ``"bad time specifier"``) for a
  line cronie refuses.
* :func:`daemon_runs` is the main loop of ``src/cron.c`` (``set_time``,
  ``find_jobs`` and the four kinds of wake-up) run with ``TZ`` set to the zone and
  no ``CRON_TZ``: minute by real minute it keeps ``clockTime`` (UTC plus
  ``GMToff``, which cronie re-reads only when ``tm_isdst`` flips), ``virtualTime``
  and ``timeRunning``, and records the real minute at which each run is queued.
  The ten-second sleeps between catch-up runs are not modelled: the runs of one
  wake-up are all at its minute, each counted.  :func:`cron_tz_runs` is the same
  loop for a crontab with ``CRON_TZ`` on a daemon in UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import NamedTuple
from zoneinfo import ZoneInfo

__all__ = ["PREAMBLE", "CronieEntry", "cron_tz_runs", "daemon_runs", "parse", "utc"]

# (low, high, names, error) per field, as load_entry passes them to get_list.
_MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_DOW_NAMES = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_FIELDS = (
    (0, 59, None, "bad minute"),
    (0, 23, None, "bad hour"),
    (1, 31, None, "bad day-of-month"),
    (1, 12, _MONTH_NAMES, "bad month"),
    (0, 7, _DOW_NAMES, "bad day-of-week"),
)
_SEPARATORS = " \t\n,"
PREAMBLE = 360  # minutes the daemon runs before the start: past any overlap's start


class CronieEntry(NamedTuple):
    """The bits and flags of one entry (``struct _entry`` of src/structs.h)."""

    minute: frozenset[int]
    hour: frozenset[int]
    dom: frozenset[int]
    month: frozenset[int]
    dow: frozenset[int]  # 0-7, Sunday as both 0 and 7 when either is set
    min_star: bool
    hr_star: bool
    dom_star: bool
    dow_star: bool

    @property
    def wild(self) -> bool:
        """A "wildcard" job of find_jobs (MIN_STAR or HR_STAR), run in real minutes
        across a clock change; the others are fixed-time jobs."""
        return self.min_star or self.hr_star

    def matches(self, wall: datetime) -> bool:
        """find_jobs' test of one wall-clock minute (its "bizarre" day rule)."""
        dow = (wall.weekday() + 1) % 7
        if self.dom_star or self.dow_star:
            day = dow in self.dow and wall.day in self.dom
        else:
            day = dow in self.dow or wall.day in self.dom
        return (
            wall.minute in self.minute
            and wall.hour in self.hour
            and wall.month in self.month
            and day
        )


class _Bad(Exception):
    pass


def _number(text: str, pos: int, low: int, names: tuple[str, ...] | None) -> tuple[int, int]:
    """get_number: every alphanumeric character, then strtol or a name (strcasecmp)."""
    end = pos
    while end < len(text) and text[end].isascii() and text[end].isalnum():
        end += 1
    word = text[pos:end]
    if not word:
        raise _Bad
    if word.isdigit():
        return int(word), end
    if names is not None:
        for i, name in enumerate(names):
            if name.lower() == word.lower():
                return i + low, end
    raise _Bad


def _range(text: str, pos: int, index: int, bits: set[int]) -> tuple[str, int]:
    """get_range (the state machine), ``~`` left out: the separator it stopped at."""
    low, high, names, _ = _FIELDS[index]
    step = 1
    if pos >= len(text):
        raise _Bad
    if text[pos] == "*":
        first, last = low, high
        pos += 1
    else:
        first, pos = _number(text, pos, low, names)
        last = first
        if pos < len(text) and text[pos] == "-":
            last, pos = _number(text, pos + 1, low, names)
            if pos < len(text) and text[pos] != "/" and first > last and last == 0:
                last = 7  # R_RANGE_NUM2: a range ending at 0 past its start ends at 7
        elif pos < len(text) and text[pos] == "/":
            raise _Bad  # R_NUM1 takes no step: n/s is refused
    if pos < len(text) and text[pos] == "/":
        step, pos = _number(text, pos + 1, 0, None)
        if step == 0:
            raise _Bad
    if pos >= len(text) or text[pos] not in _SEPARATORS:
        raise _Bad
    for value in range(first, last + 1, step):
        if not low <= value <= high:  # set_element
            raise _Bad
        bits.add(value)
    return text[pos], pos + 1


def _list(text: str, index: int) -> frozenset[int]:
    bits: set[int] = set()
    pos = 0
    text += " "  # the blank that ends the field in the line
    while True:
        separator, pos = _range(text, pos, index, bits)
        if separator != ",":
            if pos != len(text):
                raise _Bad
            return frozenset(bits)


_NICKNAMES: dict[str, tuple[str, ...]] = {
    "yearly": ("0", "0", "1", "1", "*"),
    "annually": ("0", "0", "1", "1", "*"),
    "monthly": ("0", "0", "1", "*", "*"),
    "weekly": ("0", "0", "*", "*", "0"),
    "daily": ("0", "0", "*", "*", "*"),
    "midnight": ("0", "0", "*", "*", "*"),
    "hourly": ("0", "*", "*", "*", "*"),
}
# The flags load_entry sets for each nickname (it sets them by hand, not from text):
# @yearly and @monthly DOW_STAR, @weekly DOM_STAR, @hourly HR_STAR, @daily none.
_NICKNAME_FLAGS: dict[str, tuple[bool, ...]] = {
    "yearly": (False, False, False, True),
    "annually": (False, False, False, True),
    "monthly": (False, False, False, True),
    "weekly": (False, False, True, False),
    "daily": (False, False, False, False),
    "midnight": (False, False, False, False),
    "hourly": (False, True, False, False),
}


def parse(line: str) -> CronieEntry | str:
    """The entry cronie reads from the time fields ``line`` (five fields parted by
    blanks, or an ``@`` nickname), or the error it logs ("bad minute", ...)."""
    if "~" in line:
        raise ValueError("the model leaves cronie's random ~ out")
    fields: tuple[str, ...]
    flags: tuple[bool, ...]
    if line.startswith("@"):
        name = line[1:].split()[0] if line[1:].split() else ""
        if name not in _NICKNAMES:  # strcmp: lower case only; @reboot is no time
            return "bad time specifier"
        fields, flags = _NICKNAMES[name], _NICKNAME_FLAGS[name]
    else:
        fields = tuple(field for field in line.replace("\t", " ").split(" ") if field)
        if len(fields) != 5:
            raise ValueError(f"the model reads five fields, not {line!r}")
        flags = tuple(
            field.startswith("*") for field in (fields[0], fields[1], fields[2], fields[4])
        )
    sets = []
    for index, field in enumerate(fields):
        try:
            sets.append(_list(field, index))
        except _Bad:
            return _FIELDS[index][3]
    dow = sets[4]
    if 0 in dow or 7 in dow:  # "make sundays equivalent"
        dow = dow | {0, 7}
    return CronieEntry(sets[0], sets[1], sets[2], sets[3], dow, *flags)


def _offset(zone: ZoneInfo, ts: int) -> tuple[int, bool]:
    """(GMToff in seconds, tm_isdst) at the instant ``ts``."""
    local = datetime.fromtimestamp(ts, zone)
    offset, dst = local.utcoffset(), local.dst()
    assert offset is not None
    return int(offset.total_seconds()), bool(dst)


_EPOCH = datetime(1970, 1, 1)


def _wall(minutes: int) -> datetime:
    """gmtime of a virtual minute: local wall-clock minutes counted as if UTC."""
    return _EPOCH + timedelta(minutes=minutes)


def daemon_runs(entry: CronieEntry, zone_name: str, start: float, end: float) -> list[float]:
    """The real minutes (epoch seconds) in (start, end] at which cronie, started
    :data:`PREAMBLE` minutes before ``start`` with ``TZ=zone_name``, queues a run of
    ``entry``: one item per run, so a job that runs twice in one wake-up is listed
    twice.

    Minutes that no run can fall in (a minute, an hour or a day the fields exclude)
    are skipped in one step, up to the last minute before ``tm_isdst`` flips: there
    every wake-up is the common case, ``timeDiff == 1``, which runs what matches the
    minute.
    """
    zone = ZoneInfo(zone_name) if zone_name != "UTC" else None
    t = (int(start) // 60 - PREAMBLE) * 60
    gmtoff, isdst = _offset(zone, t) if zone else (0, False)
    virtual = running = (t + gmtoff) // 60
    runs: list[float] = []

    def find(vtime: int, wild: bool, fixed: bool) -> None:
        if entry.matches(_wall(vtime)) and (wild if entry.wild else fixed) and start < t <= end:
            runs.append(float(t))

    while t < end:
        if virtual == running:  # steady: skip what cannot run, if the offset holds
            skip = _skippable(entry, _wall(running + 1))
            if t + 60 <= start:  # before the start, runs are not recorded
                skip = max(skip, (int(start) - t) // 60 - 1)
            if skip > 0 and zone:
                skip = _before_a_flip(zone, t, skip, isdst)
            t += skip * 60
            virtual = running = running + skip
        t += 60
        if zone:  # set_time: GMToff is re-read only when tm_isdst flips
            now_offset, now_dst = _offset(zone, t)
            if now_dst != isdst:
                gmtoff, isdst = now_offset, now_dst
        clock = (t + gmtoff) // 60
        if clock == running:  # cron_sleep again: the minute has not changed
            continue
        running = clock
        diff = running - virtual
        if diff == 1:
            virtual = running
            find(virtual, True, True)
        elif diff > 180 or diff < -180:  # "large": a correction, run the new time
            virtual = running
            find(running, True, True)
        elif diff > 5:  # "medium": wildcard jobs now, fixed-time jobs for each minute missed
            find(running, True, False)
            while virtual < running:
                virtual += 1
                find(virtual, False, True)
        elif diff > 0:  # "small": every minute missed, both kinds
            while virtual < running:
                virtual += 1
                find(virtual, True, True)
        else:  # "negative": wildcard jobs only, virtual time waits
            find(running, True, False)
    return runs


def cron_tz_runs(entry: CronieEntry, zone_name: str, start: float, end: float) -> list[float]:
    """The real minutes in (start, end] at which cronie, its daemon in UTC, runs a job
    of a crontab that sets ``CRON_TZ=zone_name``: find_jobs reads such a job's wall
    clock with ``localtime`` at each real minute the daemon wakes for, so every job,
    fixed-time ones included, runs at each real minute whose wall time matches (a
    daemon in UTC never takes the catch-up paths, which skip CRON_TZ jobs).  crontab(5)
    says so: jobs are "missed or run twice during the DST change in the job timezone"."""
    zone = ZoneInfo(zone_name)
    runs = []
    t = (int(start) // 60 + 1) * 60
    while t <= end:
        if entry.matches(datetime.fromtimestamp(t, zone).replace(tzinfo=None)):
            runs.append(float(t))
        t += 60
    return runs


def _before_a_flip(zone: ZoneInfo, t: int, skip: int, isdst: bool) -> int:
    """The most minutes, up to ``skip``, that can be skipped from ``t`` with ``tm_isdst``
    still ``isdst`` at the minute after them (GMToff holds while tm_isdst does: the
    skipped wake-ups are all ``timeDiff == 1``).  No two flips are a day apart, and a
    skip is at most a day: the flag flips once at most, so the last minute before it
    is found by halving."""
    if _offset(zone, t + (skip + 1) * 60)[1] == isdst:
        return skip
    held, flipped = 0, skip  # tm_isdst is isdst after `held` minutes, not after `flipped`
    while flipped - held > 1:
        middle = (held + flipped) // 2
        if _offset(zone, t + (middle + 1) * 60)[1] == isdst:
            held = middle
        else:
            flipped = middle
    return held


def _skippable(entry: CronieEntry, wall: datetime) -> int:
    """How many wall minutes from ``wall`` on cannot match: to the next day when the
    day is excluded, to the next hour when the hour is, to the next minute of the
    minute field (or the next hour) when the minute is; else 0."""
    midnight = wall.replace(hour=0, minute=0)
    day = (wall.weekday() + 1) % 7
    if entry.dom_star or entry.dow_star:
        day_ok = day in entry.dow and wall.day in entry.dom
    else:
        day_ok = day in entry.dow or wall.day in entry.dom
    if wall.month not in entry.month or not day_ok:
        return int((midnight + timedelta(days=1) - wall).total_seconds()) // 60
    if wall.hour not in entry.hour:
        return 60 - wall.minute
    return min((m for m in entry.minute if m >= wall.minute), default=60) - wall.minute


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> float:
    """Epoch seconds of a UTC date-time (for the tests' constants)."""
    return datetime(year, month, day, hour, minute, tzinfo=UTC).timestamp()
