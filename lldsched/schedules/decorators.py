"""Schedule decorators: :class:`Jittered` and :class:`Window`, the Decorator pattern
over the schedule Strategy.

Each wraps any :class:`~lldsched.schedules.base.Schedule` (another decorator
included), or cron text as a task takes it, and is a schedule itself, so they compose:
``Window(Jittered("0 * * * *", 300, seed=7), max_runs=24)``.  Both
are validated at construction (a :class:`~lldsched.errors.ScheduleError` quoting
the bad value), compare by value, are stored by a durable store as JSON
(:mod:`lldsched.stores.schedulecodec`), answer what recovery asks of a schedule by
delegating to the schedule they wrap, and describe themselves with ``explain()``.

**Jittered** delays each slot of the wrapped schedule by up to ``max_delay``
seconds, so fifty hourly tasks do not all start at :00.  The delay is a pure
function of ``(seed, slot)``: both runtimes, and a scheduler restarted from a
store, agree on every instant.  It is never negative (a run never starts before
its slot), and the wrapped schedule always computes the next slot from the
*undelayed* one, so jitter never drifts a fixed-rate grid.

The runtimes keep only the delayed instant, so the undelayed slot is read back
from it: the delay is drawn at knots ``2 * max_delay`` apart (a hash of the seed
and the knot's index, uniform in ``[0, max_delay)``) and interpolated linearly
between them.  Its slope is at most 1/2, so ``slot + delay(slot)`` is strictly
increasing: every instant has exactly one undelayed slot, found by solving a line
(:meth:`Jittered.undelayed`), read back to 10 microseconds so that float
rounding cannot add up along a grid (:meth:`Jittered.slot_of`); around a fixed rate,
whose grid the core counts from an origin, the read-back is taken for the grid's
nearest slot, so a period that is no whole number of 10 µs does not lose its remainder
a run either (:attr:`Jittered.next_on_grid`), nor a slot of those recovery and
``BUFFER_ONE`` list (:attr:`Jittered.slot_at`, :attr:`Jittered.on_grid`).  A slot on a
knot (a round time such as :00 when ``2 * max_delay`` divides the hour) gets a
uniformly drawn delay; between knots the delay is a blend of two draws.

**Window** lets the wrapped schedule run only between ``start`` and ``end``
(inclusive) and at most ``max_runs`` times: a task registered before ``start``
behaves as if registered then (a fixed rate, a delay or a one-off's ``delay`` counts
from ``start`` itself; a cron or another calendar schedule is asked from just before
it, so that a fire at ``start`` runs); a slot after ``end`` retires the task
(SUCCEEDED), and so does its ``max_runs``-th successful run (a slot given up, its
attempts spent, is not one; a run a plan handed out, a ``run_now``'s extra run or a
catch-up slot, is, through :func:`ended_by`).  A schedule sees only the record of the
run that just ended, so the window counts successful runs per task id; a durable store that
rebuilds a task hands the count back (:func:`restore_runs`, from the task's stored
counters), so it survives a restart; on a shared store, so does a process that follows
a run settled in another (the core's ``adopt``), so the processes count together.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from functools import lru_cache
from typing import ClassVar, Self

from lldsched import checks
from lldsched.checks import whole
from lldsched.clock import to_timestamp
from lldsched.errors import ScheduleError, ValidationError, shown
from lldsched.model import ExecutionRecord
from lldsched.schedules.base import (
    SEARCH_LIMIT,
    GridCount,
    Schedule,
    checked_answer,
    counts_on_grid,
    first_slot_after,
    measures_elapsed_time,
    next_on_grid,
    slot_after,
)
from lldsched.schedules.cron.schedule import from_text
from lldsched.schedules.objects import copied, has_schedule_methods, seconds_hint, wrapped_schedule
from lldsched.schedules.simple import FrozenValue, instant_text
from lldsched.schedules.subclasses import AnswersItsOwnWay

__all__ = ["Jittered", "Window", "describe", "ended_by", "forget_runs", "restore_runs"]

SLOT_DIGITS = 5
"""Decimals (10 microseconds) a slot is read back to from a delayed instant."""


@lru_cache(maxsize=4096)
def _unit(seed: int, knot: int) -> float:
    """A number in [0, 1) drawn from ``(seed, knot)`` by a hash: the same in every process.
    Cached: one ``next_run`` looks at the same few knots several times."""
    digest = hashlib.blake2b(f"{seed}:{knot}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def describe(schedule: Schedule) -> str:
    """``schedule.explain()`` when it has one, else its repr."""
    explain = getattr(schedule, "explain", None)
    return str(explain()) if callable(explain) else repr(schedule)


def _inner(schedule: object, owner: str) -> Schedule:
    """What ``owner`` wraps: cron text as a task's schedule is read (:func:`~lldsched.
    schedules.cron.schedule.from_text`, naming no zone: the runtime that registers the
    decorator reads it in its ``tz``), or an object with ``first_run`` and ``next_run``."""
    if isinstance(schedule, str):
        return from_text(schedule, tz=None, of=owner)
    if not has_schedule_methods(schedule):
        raise ScheduleError(
            f"{owner} wraps a schedule (an object with first_run() and next_run()) or "
            f"cron text, got {shown(schedule)}{seconds_hint(schedule)}"
        )
    return schedule


def _instant(value: float | datetime | None, name: str) -> float | None:
    if value is None:
        return None
    try:
        return to_timestamp(value, name=name)
    except ValidationError as exc:
        raise ScheduleError(str(exc)) from None


def _grid_of(schedule: Schedule) -> Callable[[float, int], float | None] | None:
    """``schedule``'s grid (its ``slot_at``) when it counts on a grid origin the core
    keeps (:func:`~lldsched.schedules.base.counts_on_grid`: a fixed rate, a ``Window``
    around one), else None: what a :class:`Jittered` around it counts on, found once.

    None too when a :class:`Jittered` is inside it (a jitter of a jitter, a ``Window``
    between them): its slots are read back to 10 µs (:meth:`Jittered.slot_of`), and read
    back a second time the grid's slots land up to 20 µs from where :meth:`Jittered.
    next_run` lands, so the runs would not be the ones its preview lists; such a
    schedule is asked its ``next_run``, as before a ``Jittered`` had a grid."""
    inner: object = schedule
    for _ in range(8):  # down the wrappers' ``schedule`` (a bounded walk)
        if isinstance(inner, Jittered):
            return None
        inner = getattr(inner, "schedule", None)
    grid: Callable[[float, int], float | None] | None = getattr(schedule, "slot_at", None)
    return grid if counts_on_grid(schedule) else None


class Jittered(FrozenValue, AnswersItsOwnWay):
    """``schedule``'s slots, each started up to ``max_delay`` seconds (or a ``timedelta``)
    late; the delay of a slot is a pure function of ``(seed, slot)`` (see the module
    docstring).  ``schedule`` may be cron text, read as a task's is (a ``CronSchedule``
    naming no zone: a runtime reads it in its ``tz``)."""

    __slots__ = ("_grid", "_knot", "max_delay", "schedule", "seed")
    _fields: ClassVar[tuple[str, ...]] = ("schedule", "max_delay", "seed")
    schedule: Schedule
    max_delay: float
    seed: int
    _knot: float
    _grid: Callable[[float, int], float | None] | None

    def __init__(
        self, schedule: Schedule | str, max_delay: float | timedelta, *, seed: int
    ) -> None:
        inner = _inner(schedule, "Jittered")
        delay = checks.step(max_delay, name="Jittered max_delay", error=ScheduleError)
        whole(seed, name="Jittered seed", error=ScheduleError)  # 640 digits at most: its
        # text is hashed at every slot (_unit), and raised ValueError past 4,300
        object.__setattr__(self, "schedule", inner)
        object.__setattr__(self, "max_delay", delay)
        object.__setattr__(self, "seed", seed)
        object.__setattr__(self, "_knot", 2.0 * delay)  # knots this far apart: slope <= 1/2
        object.__setattr__(self, "_grid", _grid_of(inner))

    # -- the delay and its inverse --------------------------------------------------------

    def _drawn(self, knot: int) -> float:
        """The delay at knot ``knot``: uniform in [0, max_delay)."""
        return self.max_delay * _unit(self.seed, knot)

    def delay(self, slot: float) -> float:
        """Seconds the run of ``slot`` starts late: in ``[0, max_delay)``."""
        position = slot / self._knot
        knot = math.floor(position)
        low, high = self._drawn(knot), self._drawn(knot + 1)
        return low + (high - low) * (position - knot)

    def delayed(self, slot: float) -> float:
        """The instant the run of ``slot`` is due."""
        return slot + self.delay(slot)

    def undelayed(self, instant: float) -> float:
        """The slot whose delayed instant is ``instant`` (the inverse of :meth:`delayed`):
        on each segment between knots that may hold it, solve the line, keep the
        answer inside the segment, and take the one that lands closest.  Exact to
        a float or two (about 1e-7 s today): see :meth:`slot_of`."""
        width = self._knot
        best, missed = instant, math.inf
        for knot in range(
            math.floor((instant - self.max_delay) / width), math.floor(instant / width) + 1
        ):
            low, high = self._drawn(knot), self._drawn(knot + 1)
            slope = (high - low) / width
            solved = (instant - low + slope * knot * width) / (1.0 + slope)
            slot = min(max(solved, knot * width), (knot + 1) * width)
            error = abs(self.delayed(slot) - instant)
            if error < missed:
                best, missed = slot, error
        return best

    def slot_of(self, instant: float) -> float:
        """The undelayed slot of a delayed ``instant``, to :data:`SLOT_DIGITS` decimals.

        ``slot + delay(slot)`` is rounded to a float, and near half the floats'
        spacing apart two slots can round to one instant, so no inverse is exact
        for every float.  A float or two of error per run would add up along a
        grid; rounded to 10 microseconds it does not: the grid's next slot reads
        back as the same decimal every time.
        """
        return round(self.undelayed(instant), SLOT_DIGITS)

    # -- the Schedule protocol --------------------------------------------------------------

    def first_run(self, now: float) -> float | None:
        """The wrapped schedule's first slot, delayed."""
        slot = self.schedule.first_run(now)
        if slot is None:
            return None
        if slot.__class__ is not float:  # an int, or no instant: named, not added to
            slot = checked_answer(self.schedule, slot, query=f"first_run({now!r})")
        return self.delayed(slot)

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        """The wrapped schedule's next slot after the run's undelayed slot, delayed."""
        slot = self.slot_of(record.slot)
        due = slot if record.due == record.slot else record.due
        following = self.schedule.next_run(record._replace(slot=slot, due=due), now)
        if following is None:
            return None
        if following.__class__ is not float:  # an int, or no instant: named, not added to
            following = checked_answer(self.schedule, following, query=f"next_run({now!r})")
        return self.delayed(following)

    @property
    def next_on_grid(self) -> GridCount | None:
        """The wrapped schedule's ``next_on_grid`` (a fixed rate's), on the undelayed
        slots, delayed (:meth:`_next_on_grid`); None when it counts on no grid origin (or
        has no ``slot_at``)."""
        return None if self._grid is None else self._next_on_grid

    def _next_on_grid(
        self, record: ExecutionRecord, origin: float, limit: int
    ) -> tuple[float | None, Sequence[float], float]:
        """:attr:`next_on_grid`'s answer.  The task's origin stays a delayed instant (the
        core sets it from a due instant: the first, a resume's), its grid the undelayed
        ``slot_of(origin) + k * period``: the run's slot, read back, is taken for the
        grid's nearest slot when it is within the read-back's resolution of it
        (:meth:`_on_grid`), else a new grid starts there, as before.  Read back to 10 µs
        alone, each run rounded its slot to that, and a period that is no whole number of
        10 µs drifted by the remainder a run (docs/decisions/schedules.md, "A fixed rate's grid
        origin passes through a Window")."""
        anchor = self.slot_of(origin)
        found = self._on_grid(record.slot, anchor)
        if found is None:  # off the grid: a new one starts at the slot read back
            slot = anchor = self.slot_of(record.slot)
            origin = record.slot
        else:
            slot = found[0]
        due = slot if record.due == record.slot else record.due
        following, skipped, counted_from = next_on_grid(
            self.schedule, record._replace(slot=slot, due=due), anchor, limit=limit
        )
        if counted_from != anchor:  # the wrapped schedule started a grid at the slot
            origin = record.slot
        if following is None:
            return None, (), origin
        return self.delayed(following), [self.delayed(at) for at in skipped], origin

    def _on_grid(self, instant: float, anchor: float) -> tuple[float, int] | None:
        """The slot of the wrapped schedule's grid ``slot_at(anchor, k)`` whose delayed
        instant is ``instant``, the very float the grid makes, and its ``k``; None when it
        has no grid, or the slot read back from ``instant`` is farther from the nearest
        one than the read-back's resolution (half of :data:`SLOT_DIGITS`' unit, and less
        than a quarter of the grid's step)."""
        grid = self._grid
        if grid is None or (first := grid(anchor, 1)) is None:
            return None
        step = first - anchor
        slot = self.undelayed(instant)
        k = round((slot - anchor) / step)
        if k < 0:
            return None
        nearest = anchor if k == 0 else grid(anchor, k)
        if nearest is None or abs(nearest - slot) > min(0.5 * 10.0**-SLOT_DIGITS, step / 4):
            return None
        return nearest, k

    @property
    def slot_at(self) -> Callable[[float, int], float | None] | None:
        """The wrapped schedule's grid on the undelayed slots, delayed: the ``k``-th slot
        after the slot ``anchor`` (a delayed instant) is ``delayed(slot_at(slot_of(anchor),
        k))``, the very float :attr:`next_on_grid` answers from the origin ``anchor``;
        None when it counts on no grid origin.  So recovery and BUFFER_ONE list a
        jittered fixed rate's slots on its grid (:func:`~lldsched.schedules.base.
        slots_on`), as a run's next slot is counted, not stepped one read-back at a time
        (docs/decisions/schedules.md, "Jittered: recovery and BUFFER_ONE count on the grid")."""
        return None if self._grid is None else self._slot_at

    def _slot_at(self, anchor: float, k: int) -> float | None:
        grid = self._grid
        slot = None if grid is None else grid(self.slot_of(anchor), k)
        return None if slot is None else self.delayed(slot)

    @property
    def on_grid(self) -> Callable[[float, float], tuple[float, int]] | None:
        """Where a slot stands on the grid from the task's origin (both delayed instants;
        :func:`~lldsched.schedules.base.on_grid`): ``(origin, k)`` when the slot read back
        is the grid's ``k``-th (:meth:`_on_grid`), else ``(slot, 0)``, a grid starting at
        the slot, as :attr:`next_on_grid` tells them apart; None when it counts on no grid
        origin."""
        return None if self._grid is None else self._located

    def _located(self, slot: float, origin: float) -> tuple[float, int]:
        checks.instant(slot, name="on_grid() slot", of=self, error=ScheduleError)
        checks.instant(origin, name="on_grid() origin", of=self, error=ScheduleError)
        found = self._on_grid(slot, self.slot_of(origin))
        return (slot, 0) if found is None else (origin, found[1])

    # -- what recovery asks -------------------------------------------------------------------

    def slot_after(self, slot: float) -> float | None:
        """The wrapped schedule's slot after ``slot``'s undelayed slot, delayed."""
        checks.instant(slot, name="slot_after()", of=self, error=ScheduleError)
        following = slot_after(self.schedule, self.slot_of(slot))
        return None if following is None else self.delayed(following)

    def first_slot_after(self, slot: float, now: float) -> float | None:
        """The first delayed slot after ``now``."""
        checks.instant(slot, name="first_slot_after() slot", of=self, error=ScheduleError)
        checks.instant(now, name="first_slot_after() now", of=self, error=ScheduleError)
        # slot + delay(slot) increases with slot: the first delayed slot after now is
        # the delayed first slot after now's undelayed instant.
        following = first_slot_after(
            self.schedule, self.slot_of(slot), self.undelayed(now), limit=SEARCH_LIMIT
        )
        return None if following is None else self.delayed(following)

    @property
    def measures_elapsed_time(self) -> bool:
        """As the wrapped schedule."""
        return measures_elapsed_time(self.schedule)

    def with_schedule(self, schedule: Schedule) -> Self:
        """The same jitter around ``schedule``: ``max_delay`` and ``seed`` as they are,
        of this class, a subclass with its own attributes (:func:`~lldsched.schedules.
        objects.copied`).  What a scheduler whose ``tz=`` is not UTC registers around the
        cron it reads in that zone (a decorator's rebuild, docs/EXTENDING.md)."""
        twin = copied(self)
        Jittered.__init__(twin, schedule, self.max_delay, seed=self.seed)
        return twin

    # -- words ----------------------------------------------------------------------------------

    def explain(self) -> str:
        """``"Every 60 s, started up to 5 s late (jitter, seed 7)"``."""
        late = f"started up to {self.max_delay:g} s late (jitter, seed {self.seed})"
        return f"{describe(self.schedule)}, {late}"

    def __repr__(self) -> str:
        return f"Jittered({self.schedule!r}, max_delay={self.max_delay!r}, seed={self.seed!r})"


class Window(FrozenValue, AnswersItsOwnWay):
    """``schedule``, run only from ``start`` to ``end`` (inclusive; epoch seconds or
    aware datetimes) and at most ``max_runs`` times; then the task retires as
    SUCCEEDED.  At least one of the three must be given.  ``schedule`` may be cron
    text, read as :class:`Jittered` reads it."""

    __slots__ = ("_lock", "_runs", "end", "max_runs", "schedule", "start")
    _fields: ClassVar[tuple[str, ...]] = ("schedule", "start", "end", "max_runs")
    schedule: Schedule
    start: float | None
    end: float | None
    max_runs: int | None
    _runs: dict[str, int]
    _lock: threading.Lock

    def __init__(
        self,
        schedule: Schedule | str,
        *,
        start: float | datetime | None = None,
        end: float | datetime | None = None,
        max_runs: int | None = None,
    ) -> None:
        inner = _inner(schedule, "Window")
        if start is None and end is None and max_runs is None:
            raise ScheduleError(
                f"Window({shown(schedule)}) needs at least one of start=, end= or max_runs="
            )
        begin = _instant(start, "Window start")
        finish = _instant(end, "Window end")
        if begin is not None and finish is not None and begin > finish:
            raise ScheduleError(f"Window start {start!r} is after its end {end!r}")
        if max_runs is not None:
            whole(max_runs, name="Window max_runs", at_least=1, error=ScheduleError)
        object.__setattr__(self, "schedule", inner)
        object.__setattr__(self, "start", begin)
        object.__setattr__(self, "end", finish)
        object.__setattr__(self, "max_runs", max_runs)
        object.__setattr__(self, "_runs", {})  # task id -> successful runs counted so far
        # Guards _runs.  Taken by next_run only, never while calling out; a runtime
        # may call next_run for several tasks (one per worker) at once.
        object.__setattr__(self, "_lock", threading.Lock())

    def _within(self, instant: float | None) -> float | None:
        if instant is None or (self.end is not None and instant > self.end):
            return None
        return instant

    # -- the Schedule protocol --------------------------------------------------------------

    def first_run(self, now: float) -> float | None:
        """The wrapped schedule's first due instant within the window (``None``: none)."""
        checks.instant(now, name="first_run()", of=self, error=ScheduleError)
        start = self.start
        if start is None or now >= start:
            return self._within(self.schedule.first_run(now))
        # As if registered then: a schedule counting elapsed seconds at start itself (its
        # start_delay from start, to the bit; asked a ulp before, every slot of its grid
        # was that ulp early), a calendar one just before, so that a fire at start runs.
        since = start if measures_elapsed_time(self.schedule) else math.nextafter(start, -math.inf)
        first = self.schedule.first_run(since)
        return self._within(None if first is None else max(first, start))

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        """The wrapped schedule's due instant after ``record``, within the window."""
        if self._ended_by(record):
            return None
        return self._within(self.schedule.next_run(record, now))

    def _ended_by(self, record: ExecutionRecord) -> bool:
        """Count ``record``'s run; True when it was the ``max_runs``-th.  A slot given up
        (its attempts ran out, the task goes on) is asked here too: only a successful run
        counts, as the stores' restored count (runs minus failures).  A run that never
        happened (no task id: what recovery asks a subclass's ``next_run`` about,
        :func:`~lldsched.schedules.base.slot_after`) is not one."""
        if self.max_runs is None or not record.ok or not record.task_id:
            return False
        runs: dict[str, int] = self._runs
        with self._lock:
            done = runs.get(record.task_id, 0) + 1
            if done >= self.max_runs:
                runs.pop(record.task_id, None)
                return True
            runs[record.task_id] = done
        return False

    def _restore(self, task_id: str, runs: int) -> None:
        with self._lock:
            if runs > 0:
                self._runs[task_id] = runs
            else:
                self._runs.pop(task_id, None)

    def runs_counted(self, task_id: str) -> int:
        """Successful runs of ``task_id`` this window has counted (0 once it retired)."""
        with self._lock:
            count: int = self._runs.get(task_id, 0)
        return count

    # -- what recovery asks -------------------------------------------------------------------

    def slot_after(self, slot: float) -> float | None:
        """The wrapped schedule's slot after ``slot``, within the window."""
        return self._within(slot_after(self.schedule, slot))

    @property
    def slot_at(self) -> Callable[[float, int], float | None] | None:
        """The wrapped schedule's grid (a fixed rate's ``slot_at``), cut at ``end``; None
        when it has none: a window lists the slots its schedule's ``next_run`` jumps to
        (:func:`~lldsched.schedules.base.slots_on`)."""
        grid = getattr(self.schedule, "slot_at", None)
        if grid is None:
            return None
        return lambda anchor, k: self._within(grid(anchor, k))

    @property
    def on_grid(self) -> Callable[[float, float], tuple[float, int]] | None:
        """The wrapped schedule's ``on_grid`` (where a slot stands on the grid from the
        task's origin: :func:`~lldsched.schedules.base.on_grid`); None when it keeps no
        grid origin.  The window's slots are its schedule's, cut at ``end``."""
        locate: Callable[[float, float], tuple[float, int]] | None
        locate = getattr(self.schedule, "on_grid", None)
        return locate

    @property
    def next_on_grid(self) -> GridCount | None:
        """The wrapped schedule's ``next_on_grid`` (the next slot counted on the task's
        grid from its origin: a fixed rate's), cut by the window as :meth:`next_run`
        cuts; None when its schedule counts none, and the core asks ``next_run`` then.
        So a fixed rate keeps its grid's origin through a window, and a store keeps it
        in the row (docs/decisions/schedules.md, "A fixed rate's grid origin passes through a
        Window")."""
        counted: GridCount | None = getattr(self.schedule, "next_on_grid", None)
        if counted is None:
            return None

        def next_on_grid(
            record: ExecutionRecord, origin: float, limit: int
        ) -> tuple[float | None, Sequence[float], float]:
            if self._ended_by(record):
                return None, (), origin
            due, skipped, origin = counted(record, origin, limit)
            if self._within(due) is None:
                return None, (), origin
            return due, skipped, origin

        return next_on_grid

    def first_slot_after(self, slot: float, now: float) -> float | None:
        """The wrapped schedule's first slot after ``now``, within the window."""
        return self._within(first_slot_after(self.schedule, slot, now, limit=SEARCH_LIMIT))

    @property
    def measures_elapsed_time(self) -> bool:
        """The wrapped schedule's answer (True for a rate or a delay)."""
        return measures_elapsed_time(self.schedule)

    def with_schedule(self, schedule: Schedule) -> Self:
        """The same window around ``schedule``: ``start``, ``end`` and ``max_runs`` as
        they are, of this class, a subclass with its own attributes (:func:`~lldsched.
        schedules.objects.copied`), its runs counted afresh.  What a scheduler whose
        ``tz=`` is not UTC registers around the cron it reads in that zone (a
        decorator's rebuild, docs/EXTENDING.md)."""
        twin = copied(self)
        Window.__init__(twin, schedule, start=self.start, end=self.end, max_runs=self.max_runs)
        return twin

    # -- words ----------------------------------------------------------------------------------

    def explain(self) -> str:
        """``"Every 60 s, from 2026-06-01 09:00 UTC, until 2026-06-01 17:00 UTC, at most
        3 runs"``."""
        parts = [describe(self.schedule)]
        if self.start is not None:
            parts.append(f"from {instant_text(self.start)}")
        if self.end is not None:
            parts.append(f"until {instant_text(self.end)}")
        if self.max_runs is not None:
            parts.append("once at most" if self.max_runs == 1 else f"at most {self.max_runs} runs")
        return ", ".join(parts)

    def __repr__(self) -> str:
        given: list[str] = [repr(self.schedule)]
        given += [
            f"{name}={value!r}"
            for name, value in (
                ("start", self.start),
                ("end", self.end),
                ("max_runs", self.max_runs),
            )
            if value is not None
        ]
        return f"Window({', '.join(given)})"


def ended_by(schedule: Schedule, record: ExecutionRecord) -> bool:
    """Count ``record``'s run in each :class:`Window` in ``schedule`` (through any
    decorators, as :func:`restore_runs` finds them) for a run its schedule was not asked
    about: one a plan in front of it handed out (a ``run_now``'s extra run, a misfire's
    catch-up slot; :mod:`lldsched.schedules.catchup`).  True when it was a window's
    ``max_runs``-th: the task ends there, as the window itself would have said, so
    every successful run counts, as the count a store restores after a restart does."""
    ended = False
    for window in _windows(schedule):
        ended = window._ended_by(record) or ended
    return ended


def restore_runs(schedule: Schedule, task_id: str, runs: int) -> None:
    """Tell each :class:`Window` in ``schedule`` (through any decorators, one's own
    included: a decorator keeps what it wraps in ``.schedule``) that task ``task_id``
    has had ``runs`` successful runs: what a store rebuilding the task from its counters
    calls, so ``max_runs`` holds across a restart."""
    for window in _windows(schedule):
        window._restore(task_id, runs)


def forget_runs(schedule: Schedule, task_id: str) -> None:
    """Tell each :class:`Window` in ``schedule`` that task ``task_id`` left the registry
    (retired or removed): its count goes, and a task registered again under that id is
    a new one, counted from none.  Before, a window serving several tasks (defined once)
    kept the count of every task that left before its ``max_runs``-th run (cancelled,
    removed, given up) for good, and a task registered again under the id of one
    removed inherited its runs."""
    for window in _windows(schedule):
        window._restore(task_id, 0)


def _windows(schedule: Schedule) -> Iterator[Window]:
    """Each :class:`Window` in ``schedule``, through any decorators (one's own included:
    a decorator keeps what it wraps in ``.schedule``), outermost first."""
    found: Schedule | None = schedule
    for _ in range(100):  # decorators nest a few deep; a cycle of them must not hang
        if isinstance(found, Window):
            yield found
        found = wrapped_schedule(found)
        if found is None:
            return
