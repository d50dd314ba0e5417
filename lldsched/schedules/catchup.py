"""CatchUp: a task's schedule for the few runs after a misfire decision.

When :mod:`lldsched.core.recovery` decides that a task runs several slots that
passed (``Misfire.RUN_ALL``), or resumes at a given slot after an attempt owed
from before the downtime, it puts a ``CatchUp`` in front of the task's own
schedule: ``next_run`` hands out those slots first, then the slot to resume at,
and then defers to the task's own schedule.  Catch-up runs are ordinary slots of
an ordinary schedule; once a ``CatchUp`` is :attr:`~CatchUp.spent`, the core
gives the task its own schedule back.

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
stored: stores keep ``inner``.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Final, Literal

from lldsched.model import ExecutionRecord
from lldsched.schedules.base import next_run_and_skipped

if TYPE_CHECKING:
    from lldsched.schedules.base import Schedule

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

Resume = float | None | Literal[_Decides.SCHEDULE]
"""What follows the catch-up slots: a slot, ``None`` (the task ends), or its schedule."""

Then = Resume | Literal[_Decides.FIRST_RUN]
"""What a :class:`CatchUp` hands out after its slots: a :data:`Resume`, or
:data:`FIRST_RUN`."""


class CatchUp:
    """``slots`` first, then ``then``; the task's own ``inner`` schedule afterwards.

    ``shift``: seconds the next record's slot is moved by before anything reads it
    (once; the wall clock was set back while that run was in flight)."""

    __slots__ = ("_slots", "_then", "inner", "shift", "spent")

    def __init__(
        self, inner: Schedule, slots: Iterable[float], then: Then, *, shift: float = 0.0
    ) -> None:
        self.inner = inner
        self._slots = deque(slots)
        self._then = then
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
        if self._slots:
            return self._slots.popleft()
        if self.spent:  # handed out already: from now on the task's own schedule answers
            return self.inner.next_run(record, now)
        self.spent = True
        then = self._then
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

    def next_run_and_skipped(
        self, record: ExecutionRecord, *, limit: int
    ) -> tuple[float | None, Sequence[float]]:
        """:meth:`next_run`, and the slots the run skipped.  A plan's slots are decided,
        and so is what follows them when it is a slot (run late if a run outlasts it, as
        a ``run_now``'s put-off slot is), the first run, or the end: a run that hands
        out one of those skips nothing.  The run that hands the task back to its own
        schedule (``then`` :data:`SCHEDULE_DECIDES`, the plan's last run), and any run
        after, is the own schedule's to answer, both questions, on the record moved by
        ``shift`` (:meth:`moving`): the slots after the plan's last slot were never
        decided, so a fixed rate's run that outlasted its period skips them and records
        them ``skipped``, as an ordinary overrun does.  Answered from ``next_run`` alone,
        the slots that run outlasted had no record in one process (a store shared by
        processes, whose row keeps no plan, recorded them)."""
        if not self._slots and (self.spent or self._then is SCHEDULE_DECIDES):
            self.spent = True
            return next_run_and_skipped(self.inner, self._moved(record), limit=limit)
        return self.next_run(record, record.finished), ()

    def shifted(self, seconds: float) -> CatchUp:
        """The same plan with the slots still to come moved by ``seconds`` (the wall
        clock was set back)."""
        then = self._then + seconds if isinstance(self._then, float) else self._then
        return CatchUp(self.inner, [slot + seconds for slot in self._slots], then)

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
        return CatchUp(schedule.inner, [slot, *schedule._slots], schedule._then)
    return CatchUp(schedule, [], slot)


def planned(schedule: Schedule) -> bool:
    """True when ``schedule`` is a plan not used up: the run due is one the plan decided
    (a catch-up slot, an extra run), with its own slot, not one the task's own schedule
    counted (``resume`` re-anchors a fixed-rate grid only at the latter)."""
    return isinstance(schedule, CatchUp) and not schedule.spent


def unwrap(schedule: Schedule) -> Schedule:
    """The task's own schedule behind a :class:`CatchUp` (any other schedule as is)."""
    return schedule.inner if isinstance(schedule, CatchUp) else schedule
