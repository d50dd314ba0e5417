"""The package's loggers, and the rule that keeps a line repeated for ever from flooding
the log (:class:`Repeats`).

**The loggers** are one per thing an operator tunes or routes on its own, all
children of ``lldsched`` (which has the ``NullHandler``: ``lldsched/__init__.py``), so
a configuration of ``lldsched`` still covers them all:

- ``lldsched.jobs`` (:data:`JOBS`): a task's failed attempt (WARNING for a retry,
  ERROR with the traceback when the slot is given up or the task dead-lettered, INFO
  for a run stopped on purpose), a schedule that raised;
- ``lldsched.store`` (:data:`STORE`): a store's outage (ERROR once, its recovery
  WARNING), a store closed first, restores, migrations, definitions it cannot load, a
  stored definition a registration replaced (:mod:`lldsched.threaded.redefined`);
- ``lldsched.cluster`` (:data:`CLUSTER`): what several processes sharing a store say
  (a lease taken over or lost, a change from another process that cannot be applied);
- ``lldsched.listeners`` (:data:`LISTENERS`): a listener that raised, a listener
  backlog that overflowed;
- ``lldsched.timer`` (:data:`TIMER`): a wall-clock jump, the timer thread's death;
- ``lldsched.workers`` (:data:`WORKERS`): the worker threads and processes (a run that
  could not be started or settled, a worker process that could not be replaced);
- ``lldsched.scheduler`` (:data:`SCHEDULER`): the scheduler's own life (a shutdown that
  ran out of time, a scheduler made before a fork that runs no hook).

Named by what they say, not by module (``__name__``): the module that says a store's
outage is ``core/store/outage.py``, a job's failure ``threaded/running.py``, and a
module moved in a release would break a user's configuration.

**Repeats**: a line that can come once a second for hours (a task failing every run,
a listener failing on every event) is written in full the first time in each
:data:`REPEAT_WINDOW` seconds for its key; the repeats in between go to DEBUG (no
traceback), and the next full line says how many there were (``repeated``).

**Tracebacks** (:func:`say_with_traceback`): every line lldsched writes with a
traceback (a job given up, a listener that raised, a store's outage, a worker process
that could not be started) prints it bounded by one rule,
:func:`~lldsched.errors.traceback_text`: each frame and message cut, the whole to its
last 20,000 characters; the exception itself stays on the record (``exc_info``) for an
error tracker.

**One line** (:class:`OneLine`, a filter on each of the loggers): a record's message and
its text fields are one line whatever a job, a user or a store put in them (a job's
multi-line error, a name an older release stored with a newline, a path, a scheduler's
name): each character :func:`~lldsched.printable.check_name` refuses in a name is
written as its escape (:func:`~lldsched.printable.one_line`), so a line shipped to a log
pipeline is one event, and no text in it can start another.  The traceback stays
multi-line, where handlers expect it (``exc_info``, ``exc_text``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Hashable, Iterator, Mapping
from typing import Protocol

from lldsched.clock import utc_datetime
from lldsched.errors import traceback_text
from lldsched.printable import one_line

__all__ = [
    "CLUSTER",
    "JOBS",
    "LISTENERS",
    "LOGGERS",
    "ONE_LINE",
    "REPEAT_WINDOW",
    "SCHEDULER",
    "STORE",
    "TIMER",
    "WORKERS",
    "OneLine",
    "Repeats",
    "counted",
    "instant_text",
    "instants_repr",
    "say_with_traceback",
]

JOBS = "lldsched.jobs"
STORE = "lldsched.store"
CLUSTER = "lldsched.cluster"
LISTENERS = "lldsched.listeners"
TIMER = "lldsched.timer"
WORKERS = "lldsched.workers"
SCHEDULER = "lldsched.scheduler"
LOGGERS = (JOBS, STORE, CLUSTER, LISTENERS, TIMER, WORKERS, SCHEDULER)
"""Every logger lldsched writes to (all under ``lldsched``); each has the :class:`OneLine`
filter."""

REPEAT_WINDOW = 60.0
"""Seconds in which a key's line is written in full once; its repeats go to DEBUG."""


def instant_text(when: float | None) -> str:
    """An instant (a due time, a slot) as every log line shows it: ISO 8601 in UTC, to
    the millisecond (a job's ``retry due at ...``, a run taken over's slot)."""
    if when is None:
        return "never"
    try:
        return utc_datetime(when).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):  # a test clock far from the epoch's range
        return f"{when!r} s"


class _Named(Protocol):
    """A named tuple, as :func:`instants_repr` reads it."""

    @property
    def _fields(self) -> tuple[str, ...]: ...

    def __iter__(self) -> Iterator[object]: ...


def instants_repr(value: _Named, *, instants: Collection[str]) -> str:
    """A named tuple's ``repr`` as a person reads it (a record, an event, a metrics
    snapshot printed in a notebook or a debugger): ``Name(field=value, ...)``, every
    field as the tuple's own ``repr`` gives it except those named in ``instants``
    (epoch seconds), written by :func:`instant_text` (ISO 8601 in UTC, to the
    millisecond) and left ``None`` when unset.  The fields themselves stay epoch
    seconds (docs/decisions/frames-and-plots.md, "A record prints its instants as a
    person reads them")."""
    shown = ", ".join(
        f"{name}={_field_text(field, instant=name in instants)}"
        for name, field in zip(value._fields, value, strict=True)
    )
    return f"{type(value).__name__}({shown})"


def _field_text(field: object, *, instant: bool) -> str:
    if instant and isinstance(field, (int, float)) and not isinstance(field, bool):
        return instant_text(field)
    return repr(field)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` of ``noun`` as a line says it: ``1 task``, ``2 tasks``, ``1,000 tasks``
    (``plural``: for a noun that is not made plural by an ``s``)."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


_KEYS_KEPT = 4096  # keys remembered before the quiet ones are forgotten


class Repeats:
    """Which repeat of a line to write in full: the first for a key in each ``window``
    seconds (read from ``clock``, unless :meth:`admit` is told the instant).

    :meth:`admit` answers ``None`` for a repeat inside the window (the caller logs it at
    DEBUG, or not at all), counted; otherwise the number of repeats not written in full
    since the key's last full line (0 the first time), and a new window starts.  Keys
    are forgotten once more than 4,096 are kept (those with no count pending first), so
    a scheduler with many tasks failing once each keeps its memory bounded."""

    __slots__ = ("_clock", "_seen", "lock", "window")

    def __init__(
        self, window: float = REPEAT_WINDOW, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.window = window
        self._clock = clock
        self._seen: dict[Hashable, list[float]] = {}  # key -> [window's start, repeats]
        # Guards _seen for callers on several threads: the threaded scheduler's workers
        # and event loop hold it while they write failed attempts' lines (so the lines
        # also keep the order they were recorded in).  Repeats takes it nowhere itself.
        self.lock = threading.Lock()

    def admit(self, key: Hashable, now: float | None = None) -> int | None:
        """None: a repeat of ``key`` inside its window (counted); else the repeats not
        written since its last full line (caller guards it with :attr:`lock` if shared)."""
        if now is None:
            now = self._clock()
        seen = self._seen.get(key)
        if seen is not None and 0 <= now - seen[0] < self.window:
            seen[1] += 1
            return None
        if seen is None:
            if len(self._seen) >= _KEYS_KEPT:
                self._forget(now)
            self._seen[key] = [now, 0]
            return 0
        repeated = int(seen[1])
        seen[0], seen[1] = now, 0
        return repeated

    def sibling(self) -> Repeats:
        """A new, empty :class:`Repeats` on this one's window and clock: for lines another
        thread says, so that neither takes the other's keys (or needs its lock)."""
        return Repeats(self.window, self._clock)

    def expired(self, key: Hashable, now: float | None = None) -> bool:
        """True if :meth:`admit` would write ``key``'s line in full now; counts nothing."""
        if now is None:
            now = self._clock()
        seen = self._seen.get(key)
        return seen is None or not 0 <= now - seen[0] < self.window

    def _forget(self, now: float) -> None:
        """Drop the keys whose window ended with nothing pending, or, if none did, all."""
        quiet = [
            key
            for key, (start, repeats) in self._seen.items()
            if not repeats and now - start >= self.window
        ]
        for key in quiet or list(self._seen):
            del self._seen[key]


def say_with_traceback(
    logger: logging.Logger,
    level: int,
    message: str,
    args: tuple[object, ...],
    why: BaseException | str,
    fields: Mapping[str, object] | None = None,
) -> None:
    """Log ``message % args`` at ``level`` with the traceback of ``why``: an exception, or
    the traceback text a worker process sent (caller holds no lock of the scheduler's:
    formatting a traceback reads its source lines from disk).

    The record's ``exc_text`` is set beforehand to :func:`~lldsched.errors.traceback_text`
    (bounded, its start cut, surrogates escaped), which every ``logging.Formatter``
    prints after the message instead of formatting ``exc_info`` itself: a 10 MB
    message, or a chain of a thousand exceptions, is not printed whole, and a strict
    UTF-8 file handler does not fail on a lone surrogate.  ``exc_info`` stays the
    exception, for an error tracker's logging integration (Sentry's reads it); a
    worker process's run has only the text.  The line names its caller's place."""
    if not logger.isEnabledFor(level):
        return
    if isinstance(why, str):
        exc_info, text = None, why
    else:
        exc_info, text = (type(why), why, why.__traceback__), traceback_text(why)
    path, line, function, _ = logger.findCaller(stacklevel=2)
    record = logger.makeRecord(
        logger.name, level, path, line, message, args, exc_info, function, extra=fields
    )
    record.exc_text = text.rstrip("\n")
    logger.handle(record)


_RECORDS_OWN = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}
"""A ``LogRecord``'s own attributes: the rest are the fields a call set (``extra=``)."""


class _Shown:
    """An argument of a line whose text would break it: printed (``%s``, ``%r``) through
    :func:`~lldsched.printable.one_line`."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __str__(self) -> str:
        return one_line(str(self.value))

    def __repr__(self) -> str:
        return one_line(repr(self.value))


def _shown(value: object) -> object:
    return value if isinstance(value, (int, float)) else _Shown(value)  # %d, %g keep theirs


def _breaks(text: str) -> bool:
    return not text.isprintable() and one_line(text) != text


class OneLine(logging.Filter):
    """Every record lldsched logs is one line, whatever text it was given (on each of
    :data:`LOGGERS`, added at import; docs/decisions/logging.md, "A line is one line").

    A message that would break its line (a job's error text holding a newline, a name an
    older release stored with an escape sequence, a path, a scheduler's or a store's
    ``repr``) is made again with its arguments printed through
    :func:`~lldsched.printable.one_line` (numbers left as they are, for ``%d``); the
    template and the arguments stay on the record (an error tracker groups by the
    template).  Each text field a call set (``extra=``: a failed attempt's ``error`` and
    ``task_name``, a listener's) is escaped alike; the objects a field holds (the run's
    record) are left as they are, and so is the traceback (``exc_info``, ``exc_text``):
    a handler prints it on lines of its own, after the message.  A record whose text
    holds nothing to escape (``str.isprintable``) is left untouched."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad template: logging's handler says so, as it would
            return True
        if _breaks(message):
            args = record.args
            if isinstance(args, tuple):
                record.args = tuple(_shown(arg) for arg in args)
            elif isinstance(args, Mapping):
                record.args = {key: _shown(value) for key, value in args.items()}
            message = record.getMessage()
            if _breaks(message):  # the template itself (made from a text it was given)
                record.msg, record.args = one_line(message), ()
        fields = record.__dict__
        broken = [
            name
            for name, value in fields.items()
            if isinstance(value, str) and name not in _RECORDS_OWN and _breaks(value)
        ]
        for name in broken:
            fields[name] = one_line(fields[name])
        return True


ONE_LINE = OneLine()
for _name in LOGGERS:
    logging.getLogger(_name).addFilter(ONE_LINE)
