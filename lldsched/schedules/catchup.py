"""CatchUp: a task's schedule for the few runs after a misfire decision.

When :mod:`lldsched.core.misfires` decides that a task runs several slots that
passed (``Misfire.RUN_ALL``), or resumes at a given slot after an attempt owed
from before the downtime, it puts a ``CatchUp`` in front of the task's own
schedule: ``next_run`` hands out those slots first, then the slot to resume at,
and then defers to the task's own schedule.  Catch-up runs are ordinary slots of
an ordinary schedule; once a ``CatchUp`` is :attr:`~CatchUp.spent`, the core
gives the task its own schedule back.  A run that outlasts what follows the plan's
slots (the own schedule's next slots, or the slot to resume at) skips the slots it
outlasted as the own schedule skips them, each recorded ``skipped`` as after any
overrun (:meth:`CatchUp.next_run_and_skipped`).

The core uses the same plan for two verbs (see
:class:`~lldsched.core.machine.SchedulerCore`): ``run_now`` puts the slot the task
was waiting for in front of its schedule (:func:`slot_first`), so an extra run
does not move the grid; ``reschedule`` of a task whose run or retry is still owed
follows that work with the new schedule's first run (``then=FIRST_RUN``).

When the wall clock is set back while a run of an elapsed-time schedule (a fixed
rate) is in flight, the plan also carries the jump (``shift``): the record of that run
is read with its slot moved with the clock, so the next slot is counted on the moved
grid, not an hour late (:func:`lldsched.core.recovery.after_clock_jump`).

A ``CatchUp`` belongs to one task (unlike the shareable schedules) and is never
stored: stores keep ``inner``, and of the plan the slot it hands out next
(:attr:`~CatchUp.waited`), whether that is the slot to resume at
(:attr:`~CatchUp.resuming`) and where the slots the plan decided to run end
(:attr:`~CatchUp.until`), which recovery and a process following a shared store put
back (:func:`lldsched.core.recovery.stored_plan`).
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Final, Literal

from lldsched.checks import FINEST
from lldsched.model import ExecutionRecord
from lldsched.schedules.base import (
    counts_on_grid,
    next_on_grid,
    next_run_and_skipped,
    slots_from,
)
from lldsched.schedules.decorators import ended_by

if TYPE_CHECKING:
    from lldsched.schedules.base import GridCount, Schedule

__all__ = [
    "FIRST_RUN",
    "SCHEDULE_DECIDES",
    "CatchUp",
    "Resume",
    "Then",
    "planned",
    "slot_first",
    "unwrap",
]


class _Decides(enum.Enum):
    SCHEDULE = "schedule"
    FIRST_RUN = "first run"


SCHEDULE_DECIDES: Final = _Decides.SCHEDULE
"""After the catch-up slots, the task's own schedule says what comes next."""

FIRST_RUN: Final = _Decides.FIRST_RUN
"""After the catch-up slots, the own schedule's *first* run, counted from the finish
of the run that used up the plan (a schedule that starts afresh)."""

SAME_INSTANT: Final = FINEST / 2
"""Slots of one grid closer than this are one slot: a period is at least
:data:`~lldsched.checks.FINEST`, so two slots of a grid never are, and a slot counted
twice (from two anchors, or by an older rule) is a float or two apart, under 0.25
microseconds until 2106."""

Resume = float | None | Literal[_Decides.SCHEDULE]
"""What follows the catch-up slots: a slot, ``None`` (the task ends), or its schedule."""

Then = Resume | Literal[_Decides.FIRST_RUN]
"""What a :class:`CatchUp` hands out after its slots: a :data:`Resume`, or
:data:`FIRST_RUN`."""


class CatchUp:
    """``slots`` first, then ``then``; the task's own ``inner`` schedule afterwards.

    ``shift``: seconds the next record's slot is moved by before anything reads it
    (once; the wall clock was set back while that run was in flight).

    ``resumes``: ``then`` (a slot) is the own schedule's slot to resume at, as a misfire
    decision counts it (:mod:`lldsched.core.misfires`): a run before it that outlasts it
    skips it, and the slots after it, as the own schedule skips its slots.  Without it
    ``then`` was decided to run (``run_now``'s put-off slot, :func:`slot_first`): it
    runs late.

    ``until``: the own schedule's first slot after ``slots`` when they are a misfire
    decision's runs handing the task back to its schedule (``then``
    :data:`SCHEDULE_DECIDES`): the slots before it were decided, the ones from it on
    were not (:attr:`until`)."""

    __slots__ = ("_resumes", "_slots", "_then", "_until", "inner", "shift", "spent")

    def __init__(
        self,
        inner: Schedule,
        slots: Iterable[float],
        then: Then,
        *,
        shift: float = 0.0,
        resumes: bool = False,
        until: float | None = None,
    ) -> None:
        self.inner = inner
        self._slots = deque(slots)
        self._then = then
        self._resumes = resumes
        self._until = until
        self.shift = shift
        self.spent = False  # True once the slots and ``then`` were handed out

    def first_run(self, now: float) -> float | None:
        return self.inner.first_run(now)

    def _moved(self, record: ExecutionRecord) -> ExecutionRecord:
        """``record`` with its slot moved by ``shift``, which is then used up."""
        shift = self.shift
        if not shift:
            return record
        self.shift = 0.0
        return record._replace(slot=record.slot + shift)

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        record = self._moved(record)
        if self.spent:  # handed out already: from now on the task's own schedule answers
            return self.inner.next_run(record, now)
        then = self._then
        if (self._slots or then is not SCHEDULE_DECIDES) and ended_by(self.inner, record):
            # The plan answers for this run, not the own schedule: a Window in it counts
            # the run all the same, and ends the task at its max_runs-th.
            self._slots.clear()
            self.spent = True
            return None
        if self._slots:
            return self._slots.popleft()
        self.spent = True
        if then is FIRST_RUN:
            return self.inner.first_run(record.finished)
        if isinstance(then, _Decides):  # SCHEDULE_DECIDES
            return self.inner.next_run(record, now)
        return then

    @property
    def waited(self) -> float | None:
        """The slot this plan hands out next, if it is one (None: the plan ends the task,
        or hands over to the schedule); what a store keeps of the plan
        (:attr:`TaskSnapshot.waited <lldsched.persistence.TaskSnapshot.waited>`)."""
        if self._slots:
            return self._slots[0]
        then = self._then
        if then is None or isinstance(then, _Decides) or self.spent:
            return None
        return then

    @property
    def resuming(self) -> bool:
        """True when :attr:`waited` is the own schedule's slot to resume at (``resumes``),
        not a slot decided to run; what a store keeps beside it
        (:attr:`TaskSnapshot.resumes <lldsched.persistence.TaskSnapshot.resumes>`), so a
        plan put back from the row skips it as this one does."""
        return self._resumes and not self._slots and self.waited is not None

    @property
    def deciding(self) -> bool:
        """True while the run due is one of a misfire decision's runs that hand the task
        back to its schedule, the last of them included (:attr:`until` is None then: no
        slot of them is left to keep with the row); what makes it owed work when the
        schedule changes (:func:`lldsched.core.definition._owed`)."""
        return self._until is not None and not self.spent

    @property
    def afresh(self) -> bool:
        """True while the plan ends with its own schedule's first run (``then``
        :data:`FIRST_RUN`: a new schedule waiting for the work owed before it)."""
        return self._then is FIRST_RUN and not self.spent

    @property
    def slots(self) -> tuple[float, ...]:
        """The slots this plan still hands out after the run due, oldest first."""
        return tuple(self._slots)

    @property
    def until(self) -> float | None:
        """Where the slots this plan decided to run end, while :attr:`waited` is one of
        them: the own schedule's first slot after them, the first one no misfire decision
        took (None otherwise); what a store keeps beside :attr:`waited`
        (:attr:`TaskSnapshot.until <lldsched.persistence.TaskSnapshot.until>`), so a plan
        put back from the row ends where this one does, and the slots passed since meet
        the misfire policy (:func:`lldsched.core.misfires.apply.decide_misfire`)."""
        return self._until if self._slots else None

    def next_run_and_skipped(
        self, record: ExecutionRecord, *, limit: int
    ) -> tuple[float | None, Sequence[float]]:
        """:meth:`next_run`, and the slots the run skipped.  A plan's slots are decided,
        and so is a first run or an end after them, or a slot decided to run (``run_now``'s
        put-off slot, run late if a run outlasts it): a run that hands out one of those
        skips nothing.  The run that hands the task back to its own schedule (``then``
        :data:`SCHEDULE_DECIDES`: the plan's last run), and any run after, is the own
        schedule's to answer, both questions, on the record moved by ``shift``
        (:meth:`moving`): the slots after the plan's last slot were never decided, so a
        fixed rate's run that outlasted its period skips them and they are recorded
        ``skipped``, as an ordinary overrun's are.  So does a run that outlasts the slot
        a misfire decision resumes at (``resumes``, :meth:`_resumed`): that slot and the
        ones after it up to the next due instant.  Answered from ``next_run`` alone, the
        slots the plan's last run outlasted had no record in one process (a store shared
        by processes, whose row keeps no plan, recorded them), and the slot to resume at
        ran late."""
        if self._slots:
            return self.next_run(record, record.finished), ()
        then = self._then
        if self.spent or then is SCHEDULE_DECIDES:
            self.spent = True
            return next_run_and_skipped(self.inner, self._moved(record), limit=limit)
        if self._resumes and isinstance(then, float | int) and record.finished >= then:
            return self._resumed(then, self._moved(record), limit)
        return self.next_run(record, record.finished), ()

    @property
    def next_on_grid(self) -> GridCount | None:
        """:meth:`next_run_and_skipped` counted on the task's grid, for a plan in front of
        a schedule that counts one (``inner`` has a ``next_on_grid``: a fixed rate, a
        ``Window`` around one); None otherwise, and the core asks
        :meth:`next_run_and_skipped`.  See :meth:`_next_on_grid`."""
        if not counts_on_grid(self.inner):
            return None
        return self._next_on_grid

    def _next_on_grid(
        self, record: ExecutionRecord, origin: float, limit: int
    ) -> tuple[float | None, Sequence[float], float]:
        """The answer of :attr:`next_on_grid`, with the task's grid ``origin``, and the
        origin counted on: where the own schedule answers (the plan's last run hands the
        task back to it), it answers on that grid (its ``next_on_grid``: :meth:`FixedRate.
        next_on_grid <lldsched.schedules.simple.FixedRate.next_on_grid>`), as after any
        run of its own.  Answered from the run's slot, the slot after a catch-up's last
        run was ``slot_at(slot, 1)``, a rounding off the grid, where a new grid started."""
        then = self._then
        if not self._slots:
            if self.spent or then is SCHEDULE_DECIDES:
                self.spent = True
                return next_on_grid(self.inner, self._moved(record), origin, limit=limit)
            if self._resumes and isinstance(then, float | int) and record.finished >= then:
                due, skipped = self._resumed(then, self._moved(record), limit, origin=origin)
                return due, skipped, origin
        due, skipped = self.next_run_and_skipped(record, limit=limit)
        return due, skipped, origin

    def _resumed(
        self, then: float, record: ExecutionRecord, limit: int, *, origin: float | None = None
    ) -> tuple[float | None, Sequence[float]]:
        """The answer for the run before the slot to resume at, ``then``, that did not end
        before it: where the own schedule, asked about that run, skips slots and goes on
        past ``then`` (a fixed rate's ``SKIP``, a cron schedule), its next due instant,
        with the slots from ``then`` on skipped (those before were decided); else
        ``then``, late (a fixed rate's ``CATCH_UP`` runs every slot; a fixed delay has
        no slots to skip)."""
        self.spent = True
        if origin is None:
            due, skips = next_run_and_skipped(self.inner, record, limit=0)
        else:  # a fixed rate's, on the task's grid (next_on_grid)
            due, skips, _ = next_on_grid(self.inner, record, origin, limit=0)
        if due is None or due <= then or not skips:
            return then, ()
        # The slots from ``then`` on (its grid: ``then`` may be off the run's, a put-off
        # extra run's slot), without one closer to ``due`` than half a microsecond: the
        # same slot, one float apart where ``then`` and the run's slot were counted on
        # one grid separately (recovery, or a stored plan an older rule made), runs at
        # ``due`` (docs/decisions/schedules.md, "One grid for a fixed rate's slots").
        skipped = slots_from(self.inner, then, due, limit=limit, origin=origin)
        if skipped and due - skipped[-1] < SAME_INSTANT:
            skipped.pop()
        return due, skipped

    def shifted(self, seconds: float) -> CatchUp:
        """The same plan with the slots still to come moved by ``seconds`` (the wall
        clock was set back)."""
        then = self._then + seconds if isinstance(self._then, float) else self._then
        slots = [slot + seconds for slot in self._slots]
        until = None if self._until is None else self._until + seconds
        return CatchUp(self.inner, slots, then, resumes=self._resumes, until=until)

    @classmethod
    def moving(cls, schedule: Schedule, seconds: float) -> CatchUp:
        """``schedule`` (a plan or not) for a task whose run is in flight while the
        wall clock was set back by ``-seconds``: the plan's slots to come move, and so
        does the slot of the in-flight run's record when the schedule reads it."""
        if isinstance(schedule, CatchUp):
            if schedule.spent:
                plan = CatchUp(schedule.inner, [], SCHEDULE_DECIDES)
            else:
                plan = schedule.shifted(seconds)
            plan.shift = schedule.shift + seconds
            return plan
        return cls(schedule, [], SCHEDULE_DECIDES, shift=seconds)

    def __repr__(self) -> str:
        then = (
            "its schedule"
            if self._then is SCHEDULE_DECIDES
            else "its first run"
            if self._then is FIRST_RUN
            else repr(self._then)
        )
        moved = f", a record moved by {self.shift:+g} s" if self.shift else ""
        return f"CatchUp({self.inner!r}, {len(self._slots)} slots left, then {then}{moved})"


def slot_first(schedule: Schedule, slot: float) -> CatchUp:
    """``schedule`` with ``slot`` handed out before anything it would answer (a plan
    ``schedule`` already is keeps its slots, after ``slot``)."""
    if isinstance(schedule, CatchUp):
        if schedule.spent:
            return CatchUp(schedule.inner, [], slot)
        slots = [slot, *schedule._slots]
        then, resumes, until = schedule._then, schedule._resumes, schedule._until
        return CatchUp(schedule.inner, slots, then, resumes=resumes, until=until)
    return CatchUp(schedule, [], slot)


def planned(schedule: Schedule) -> bool:
    """True when ``schedule`` is a plan not used up: the run due is one the plan decided
    (a catch-up slot, an extra run), with its own slot, not one the task's own schedule
    counted (``resume`` re-anchors a fixed-rate grid only at the latter)."""
    return isinstance(schedule, CatchUp) and not schedule.spent


def unwrap(schedule: Schedule) -> Schedule:
    """The task's own schedule behind a :class:`CatchUp` (any other schedule as is)."""
    return schedule.inner if isinstance(schedule, CatchUp) else schedule
