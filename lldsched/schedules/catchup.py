"""CatchUp: a task's schedule for the few runs after a misfire decision.

When :mod:`lldsched.core.recovery` decides that a task runs several slots that
passed (``Misfire.RUN_ALL``), or resumes at a given slot after an attempt owed
from before the downtime, it puts a ``CatchUp`` in front of the task's own
schedule: ``next_run`` hands out those slots first, then the slot to resume at,
and then gives the task its own schedule back.  The state machine needs no
special case for catch-up runs: they are ordinary slots of an ordinary schedule.

A ``CatchUp`` belongs to one task (unlike the shareable schedules) and is never
stored: stores keep ``inner``.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

from lldsched.model import ExecutionRecord

if TYPE_CHECKING:
    from lldsched.core.task import ScheduledTask
    from lldsched.schedules.base import Schedule

__all__ = ["SCHEDULE_DECIDES", "CatchUp", "Resume", "unwrap"]


class _Decides(enum.Enum):
    SCHEDULE = "schedule"


SCHEDULE_DECIDES = _Decides.SCHEDULE
"""After the catch-up slots, the task's own schedule says what comes next."""

Resume = float | None | Literal[_Decides.SCHEDULE]
"""What follows the catch-up slots: a slot, ``None`` (the task ends), or its schedule."""


class CatchUp:
    """``slots`` first, then ``then``; the task's own ``inner`` schedule afterwards."""

    __slots__ = ("_slots", "_task", "_then", "inner")

    def __init__(
        self, task: ScheduledTask, inner: Schedule, slots: Iterable[float], then: Resume
    ) -> None:
        self.inner = inner
        self._task = task
        self._slots = deque(slots)
        self._then = then

    def first_run(self, now: float) -> float | None:
        return self.inner.first_run(now)

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        if self._slots:
            return self._slots.popleft()
        self._task.schedule = self.inner  # the catch-up is over
        if self._then is SCHEDULE_DECIDES:
            return self.inner.next_run(record, now)
        return self._then

    def shift(self, seconds: float) -> None:
        """Move the slots still to come by ``seconds`` (the wall clock was set back)."""
        self._slots = deque(slot + seconds for slot in self._slots)
        if isinstance(self._then, float):
            self._then += seconds

    def __repr__(self) -> str:
        then = "its schedule" if self._then is SCHEDULE_DECIDES else repr(self._then)
        return f"CatchUp({self.inner!r}, {len(self._slots)} slots left, then {then})"


def unwrap(schedule: Schedule) -> Schedule:
    """The task's own schedule behind a :class:`CatchUp` (any other schedule as is)."""
    return schedule.inner if isinstance(schedule, CatchUp) else schedule
