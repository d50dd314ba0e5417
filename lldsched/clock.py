"""Clocks: where the scheduler reads time and how its timer waits for it.

A :class:`Clock` does two things: ``now()`` (float seconds since the epoch, UTC)
and ``wait(condition, deadline)``, which blocks the timer thread on a
``threading.Condition`` it already holds until ``deadline`` or a notify.  Putting
the wait in the clock is what lets a :class:`FakeClock` drive a *running*
threaded scheduler: its timer waits with no timeout, and ``advance``/``set``
notify every condition that has waited on it, so a twelve-hour delay is tested in
milliseconds and nothing in a test ever sleeps.
"""

from __future__ import annotations

import threading
import time
import weakref
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

from lldsched import checks
from lldsched.errors import ValidationError, shown

__all__ = [
    "EARLIEST",
    "LATEST",
    "UTC_NAMES",
    "Clock",
    "FakeClock",
    "SystemClock",
    "beyond_datetimes",
    "checked_reading",
    "dated",
    "to_timestamp",
    "utc_datetime",
    "within_datetimes",
]


def to_timestamp(value: float | int | datetime, *, name: str = "time") -> float:
    """Epoch seconds from a number or an *aware* datetime (naive ones are ambiguous).

    A wall time its zone skips (02:30 in Berlin on the night the clocks go forward) is
    refused too: Python would read it with the offset before the gap, an instant whose
    wall time is another.  A repeated wall time (the night they go back) is the one
    its ``fold`` says: 0 the first, 1 the second.

    An instant is one a ``datetime`` can show (:data:`EARLIEST` to :data:`LATEST`: year 1
    to year 9999, UTC): a task due at ``1e300`` could not be explained, listed or drawn
    (``OneTime(at=1e300).explain()`` raised ``OverflowError``).  The last microsecond of
    year 9999 is refused too: its float rounds to the first instant of year 10000."""
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValidationError(
                f"{name} must be timezone-aware (e.g. tzinfo=timezone.utc), got {shown(value)}"
            )
        stamp = value.timestamp()
        try:
            wall = utc_datetime(stamp).astimezone(value.tzinfo).replace(tzinfo=None, fold=0)
        except (OverflowError, OSError, ValueError):  # the float rounded past year 9999
            wall = value.replace(tzinfo=None, fold=0)
        if wall != value.replace(tzinfo=None, fold=0):
            raise ValidationError(
                f"{name} {value.replace(tzinfo=None, fold=0)} does not exist in "
                f"{value.tzinfo} (its clocks skip it), got {shown(value)}"
            )
        return within_datetimes(stamp, name=name, given=value)
    stamp = float(checks.number(value, name=name, kind="epoch seconds or an aware datetime"))
    return within_datetimes(stamp, name=name, given=value)


EARLIEST = -62135596800.0
"""0001-01-01T00:00:00 UTC in epoch seconds: the first instant a ``datetime`` shows."""

LATEST = 253402300800.0
"""10000-01-01T00:00:00 UTC in epoch seconds: the first instant past a ``datetime``'s
range (every instant is before it)."""


def within_datetimes(
    stamp: float,
    *,
    name: str,
    given: object,
    words: str = "must be an instant from year 1 to year 9999",
) -> float:
    """``stamp`` if a ``datetime`` can show it (``EARLIEST <= stamp < LATEST``), else
    :class:`~lldsched.errors.ValidationError` quoting ``given``, the value the caller
    was passed (``words``: what the message says of it)."""
    if EARLIEST <= stamp < LATEST:
        return stamp
    raise ValidationError(
        f"{name} {words} (epoch seconds >= {EARLIEST:.0f} and < {LATEST:.0f}: the range "
        f"of a datetime), got {shown(given)}"
    )


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

UTC_NAMES = frozenset({"UTC", "Etc/UTC"})
"""The names of UTC, the default zone: text written in it names no zone (readable
times, the widgets, a cron expression's explanation); in any other zone it does."""


def utc_datetime(timestamp: float) -> datetime:
    """The aware UTC datetime of epoch seconds ``timestamp``, as
    ``datetime.fromtimestamp`` gives it with ``UTC`` (the same microsecond: both round
    half to even), except that it also takes an instant before 1970 or after 3000 on
    Windows, whose C library refuses those (``OSError``)."""
    return _EPOCH + timedelta(seconds=timestamp)


def beyond_datetimes(timestamp: float) -> str:
    """How a table or a panel shows an instant :func:`utc_datetime` cannot hold (a fixed
    rate's next slot past the end of year 9999, kept due there): ``after 9999``, or
    ``before 0001``."""
    return "after 9999" if timestamp > 0 else "before 0001"


def dated(moment: datetime, layout: str) -> str:
    """``moment.strftime(layout)`` with its year in four digits, as every instant printed
    for people reads: glibc's ``%Y`` writes year 1 as ``1`` (macOS's as ``0001``), and
    ``1-01-01 00:00`` read as no date."""
    return moment.strftime(layout.replace("%Y", f"{moment.year:04d}"))


@runtime_checkable
class Clock(Protocol):
    """The injected source of time."""

    def now(self) -> float:
        """Seconds since the epoch, UTC."""
        ...

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        """Block on ``condition`` (held by the caller) until ``deadline`` or a notify.

        May return early or spuriously: callers re-test their predicate in a loop.
        """
        ...


def checked_reading(clock: Clock) -> float:
    """``clock.now()``, read once where a scheduler is given a clock of one's own, if it
    is epoch seconds (an ``int`` or a ``float`` within ±:data:`~lldsched.checks.FARTHEST`);
    else :class:`ValidationError` naming the clock and its answer, before anything runs.

    A clock answering ``datetime.now(UTC)`` (the likeliest slip), a ``str`` or NaN was
    taken, and the first registration blamed the schedule (``FixedRate.first_run()
    takes epoch seconds (a float), got datetime.datetime(...)``), or the timer thread
    died of a ``TypeError`` at start.  Read once, not at every reading: the runtimes
    read the clock several times a run, and a clock that answers well at first and
    badly later still fails loudly where it is read (docs/decisions/extending.md, "A
    clock of one's own is read once as the scheduler takes it")."""
    reading = clock.now()
    try:
        return checks.instant(reading, name="now()")
    except ValidationError:
        hint = " (a datetime: answer its .timestamp())" if isinstance(reading, datetime) else ""
        raise ValidationError(
            f"clock {shown(clock)}: now() answered {shown(reading)}, not epoch seconds{hint}: "
            f"a Clock's now() answers seconds since the epoch, UTC, as time.time() does (an "
            f"int or a float within ±{checks.FARTHEST:g})"
        ) from None


class SystemClock:
    """Wall-clock time (``time.time``); the timer waits exactly the remaining delay."""

    __slots__ = ()

    # The builtins themselves, not methods around them: a builtin function is not a
    # descriptor, so ``clock.now()`` calls ``time.time()`` with no Python frame
    # between (the runtimes read the clock several times per run).
    now = staticmethod(time.time)
    """Seconds since the epoch, UTC (``time.time``)."""

    monotonic = staticmethod(time.monotonic)
    """Seconds on a clock no one can set: the scheduler notices wall-clock jumps by
    comparing the two."""

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        """Block on ``condition`` (held by the caller) until ``deadline`` or a notify."""
        if deadline is None:
            condition.wait()
            return
        remaining = deadline - self.now()  # a subclass's now() (skew injected) counts
        if remaining > 0:
            condition.wait(remaining)

    def __repr__(self) -> str:
        return "SystemClock()"


class FakeClock:
    """A clock that moves only when told to: ``advance(seconds)`` or ``set(t)``.

    Safe to use from several threads while a scheduler runs on it: a waiting timer
    is woken by every change of time.  Time never goes backwards.
    """

    def __init__(self, start: float | datetime = 0.0) -> None:
        # Guards _now and _waiters.  Never held while a waiter's condition is taken.
        self._lock = threading.Lock()
        self._now = to_timestamp(start, name="start")
        self._waiters: weakref.WeakSet[threading.Condition] = weakref.WeakSet()

    def now(self) -> float:
        """The instant the clock was set or advanced to, in seconds since the epoch."""
        return self._now

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        """Block on ``condition`` (held by the caller) until this clock reaches
        ``deadline`` (by :meth:`advance` or :meth:`set`) or a notify."""
        # The caller holds `condition`, so a concurrent advance() blocks on it in
        # _notify_all until this thread is parked in condition.wait(): no lost wake-up.
        with self._lock:
            self._waiters.add(condition)
            if deadline is not None and deadline <= self._now:
                return
        condition.wait()

    def advance(self, seconds: float | timedelta) -> float:
        """Move time forward by ``seconds`` (>= 0, or a timedelta) and wake waiting timers;
        returns now.

        A bad step raises :class:`~lldsched.errors.ValidationError` naming the clock's
        verb and the value (``"FakeClock.advance() takes finite seconds >= 0 (or a
        timedelta), got nan"``; a step past year 9999 names where the clock stands), and
        the clock does not move."""
        step = checks.seconds(
            seconds,
            name="FakeClock.advance()",
            at_least=0,
            expected="takes finite seconds >= 0 (or a timedelta)",
        )
        with self._lock:
            now = within_datetimes(
                self._now + float(step),
                name="FakeClock.advance()",
                given=seconds,
                words=f"would move the clock from {self._now!r} past year 9999",
            )
            self._now = now
        self._notify_all()
        return now

    def set(self, when: float | datetime) -> float:
        """Jump to ``when`` (not before now) and wake waiting timers; returns now."""
        target = to_timestamp(when, name="FakeClock.set() when")
        with self._lock:
            if target < self._now:
                raise ValidationError(
                    f"FakeClock.set() cannot go back from {self._now!r} to {shown(when)}"
                )
            self._now = target
        self._notify_all()
        return target

    def _notify_all(self) -> None:
        with self._lock:
            waiters = list(self._waiters)
        for condition in waiters:
            with condition:
                condition.notify_all()

    def __repr__(self) -> str:
        return f"FakeClock(now={self._now!r})"
