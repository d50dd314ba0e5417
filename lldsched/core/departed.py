"""What the views read of a task that left the registry while its records stay.

A report (:func:`lldsched.views.frames.to_frame`, ``task_summary``) reads a task's
priority (the ``priority`` column) and its schedule (the overrun count) from the task:
a record carries neither.  A task that leaves the registry leaves records behind: a
task retired (:mod:`lldsched.core.retention`) in both runtimes (the simulation's log
keeps every record, the threaded scheduler's retired tasks' one shared history the
most recent ``history_limit``), and a task removed in the simulation (its log keeps
the removed task's records; the threaded scheduler forgets them with the task).

:class:`Departed` keeps, of each such task, what the report would otherwise lose, by
one rule (:meth:`Departed.left`): its priority unless ``NORMAL`` (the default a record
without one reads) and its schedule unless it is a :class:`OneTime` (a one-off task
never overruns).  A NORMAL one-off task, the stream a service retires all day, leaves
no entry.  The core tells it of every task that retires
(:meth:`SchedulerCore._retire <lldsched.core.machine.SchedulerCore._retire>`, which
skips the call for a NORMAL one-off task while nothing is kept: the retirement path
is a dispatched job's); the simulation of every task it removes.

Bounded as the records it serves are: with ``bound`` *n* (the threaded scheduler's
``history_limit``, the reach of the retired tasks' history) it keeps the *n* tasks
that left last with a record (the records of at most *n* tasks are in that history,
and they are of the tasks with records that retired last); ``None`` (the
simulation, whose log keeps every record) keeps every one.  The oldest are forgotten
in batches, as retention does (:data:`~lldsched.core.retention.RETIRE_BATCH`).  No
thread, no lock: its runtime serialises calls.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from lldsched.core.retention import RETIRE_BATCH, oldest
from lldsched.core.task import ScheduledTask
from lldsched.model import Priority
from lldsched.schedules.base import Schedule
from lldsched.schedules.simple import OneTime

__all__ = ["Departed"]

_NORMAL = Priority.NORMAL
V = TypeVar("V")


class Departed:
    """The priority and schedule of the tasks that left, by id (see the module docstring)."""

    __slots__ = ("_above", "bound", "priorities", "schedules")

    def __init__(self, *, bound: int | None) -> None:
        self.bound = bound
        # More entries than this in either dict, and the oldest go (a batch at a time).
        self._above = None if bound is None else bound + bound // RETIRE_BATCH
        # Task id to Priority value, and to schedule, oldest departure first.
        self.priorities: dict[str, int] = {}
        self.schedules: dict[str, Schedule] = {}

    def left(self, task: ScheduledTask) -> None:
        """``task`` leaves the registry while its records stay: keep its priority unless
        NORMAL, its schedule unless one-off; and an entry an earlier task of its id left
        goes (what the id's records say is what its last task was).  Bounded, a task
        that made no record is passed over: it adds none to the history the bound
        serves, and an entry of its would push out one whose records are there."""
        if self.bound is not None and task._stats is None:
            return
        priorities, schedules = self.priorities, self.schedules
        if task.priority != _NORMAL:
            priorities.pop(task.id, None)  # to the end: the newest departure
            priorities[task.id] = int(task.priority)
            self._trim(priorities)
        elif priorities:
            priorities.pop(task.id, None)
        schedule = task.schedule
        if type(schedule) is not OneTime:
            schedules.pop(task.id, None)
            schedules[task.id] = schedule
            self._trim(schedules)
        elif schedules:
            schedules.pop(task.id, None)

    def _trim(self, kept: dict[str, V]) -> None:
        above = self._above
        if above is not None and len(kept) > above:
            assert self.bound is not None
            oldest(kept, len(kept) - self.bound)

    def priorities_of(
        self, tasks: Iterable[ScheduledTask], recorded: Iterable[str]
    ) -> dict[str, int]:
        """Task id to priority value: NORMAL for each id in ``recorded`` (the ids the
        records name), then what the tasks that left kept, then the registered ``tasks``."""
        known = dict.fromkeys(recorded, int(_NORMAL))
        known.update(self.priorities)
        known.update((task.id, int(task.priority)) for task in tasks)
        return known

    def schedules_of(self, tasks: Iterable[ScheduledTask]) -> dict[str, Schedule]:
        """Task id to schedule: of the tasks that left with one kept, then of ``tasks``."""
        return {**self.schedules, **{task.id: task.schedule for task in tasks}}
