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

A ``CatchUp`` belongs to one task (unlike the shareable schedules) and is never
stored: stores keep ``inner``.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final, Literal

from lldsched.model import ExecutionRecord

if TYPE_CHECKING:
    from lldsched.schedules.base import Schedule

__all__ = [
    "FIRST_RUN",
    "SCHEDULE_DECIDES",
    "CatchUp",
    "Resume",
    "Then",
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
    """``slots`` first, then ``then``; the task's own ``inner`` schedule afterwards."""

    __slots__ = ("_slots", "_then", "inner", "spent")

    def __init__(self, inner: Schedule, slots: Iterable[float], then: Then) -> None:
        self.inner = inner
        self._slots = deque(slots)
        self._then = then
        self.spent = False  # True once the slots and ``then`` were handed out

    def first_run(self, now: float) -> float | None:
        return self.inner.first_run(now)

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
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
    ) -> tuple[float | None, tuple[()]]:
        """:meth:`next_run`; a plan's slots are decided, so a run skips none of them
        (nor of the own schedule, on the run that spends the plan)."""
        return self.next_run(record, record.finished), ()

    def shifted(self, seconds: float) -> CatchUp:
        """The same plan with the slots still to come moved by ``seconds`` (the wall
        clock was set back)."""
        then = self._then + seconds if isinstance(self._then, float) else self._then
        return CatchUp(self.inner, [slot + seconds for slot in self._slots], then)

    def __repr__(self) -> str:
        then = (
            "its schedule"
            if self._then is SCHEDULE_DECIDES
            else "its first run"
            if self._then is FIRST_RUN
            else repr(self._then)
        )
        return f"CatchUp({self.inner!r}, {len(self._slots)} slots left, then {then})"


def slot_first(schedule: Schedule, slot: float) -> CatchUp:
    """``schedule`` with ``slot`` handed out before anything it would answer (a plan
    ``schedule`` already is keeps its slots, after ``slot``)."""
    if isinstance(schedule, CatchUp):
        if schedule.spent:
            return CatchUp(schedule.inner, [], slot)
        return CatchUp(schedule.inner, [slot, *schedule._slots], schedule._then)
    return CatchUp(schedule, [], slot)


def unwrap(schedule: Schedule) -> Schedule:
    """The task's own schedule behind a :class:`CatchUp` (any other schedule as is)."""
    return schedule.inner if isinstance(schedule, CatchUp) else schedule
