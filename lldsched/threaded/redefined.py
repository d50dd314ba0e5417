"""The line a registration logs when it replaces a stored definition with another.

A registration with ``replace_existing=True`` that gives a task held in a store a
definition other than the one the store had writes it, and every process on a shared
store follows it: in a rolling deploy, a process of the older release that starts (a
worker respawned) turns the schedule back for all of them.  So the process that writes
the new definition says so, once, on ``lldsched.store`` (:data:`~lldsched.logs.STORE`):

- WARNING when the *when* changed (the schedule) on a shared store: which runs happen,
  in every process, changes; the line names the old and the new schedule's text;
- INFO when the schedule changed on a store of one process (a new release's start, the
  one process that reads it: an event, not a hazard), and when only something else
  changed (name, action, priority, options): the line names the fields and the
  schedule that stayed.

Nothing for a definition equal to the stored one (the same jobs registered at every
start), nor for a scheduler with no store: nothing is stored for another process, or a
restart, to find changed.  The processes that follow the change log nothing: the line is
the writer's (docs/decisions/changing-a-task.md, "A replaced definition is said").
"""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

from lldsched.core.task import ScheduledTask, TaskOptions
from lldsched.logs import STORE
from lldsched.model import Priority
from lldsched.schedules.base import Schedule
from lldsched.schedules.catchup import unwrap
from lldsched.schedules.decorators import describe

__all__ = ["Stored", "say_replaced"]

_log = logging.getLogger(STORE)


class Stored(NamedTuple):
    """A registered task's definition as it was before a registration replaced it."""

    name: str
    action: Any
    priority: Priority
    options: TaskOptions
    schedule: Schedule

    @classmethod
    def of(cls, task: ScheduledTask) -> Stored:
        return cls(task.name, task.action, task.priority, task._options, unwrap(task._schedule))


def _changed(before: Stored, task: ScheduledTask) -> list[str]:
    """The names of what the registration changed, beside the schedule."""
    changed = [
        field
        for field, old, new in (
            ("name", before.name, task.name),
            ("action", before.action, task.action),
            ("priority", before.priority, task.priority),
        )
        if old != new
    ]
    options = task._options
    changed.extend(
        field
        for field, old, new in zip(TaskOptions._fields, before.options, options, strict=True)
        if old != new
    )
    return changed


def say_replaced(before: Stored, task: ScheduledTask, *, shared: bool) -> None:
    """Log the replacement of ``before`` by ``task``'s definition, if anything changed;
    ``shared``: the store is shared by several processes (the module docstring)."""
    schedule = unwrap(task._schedule)
    changed = _changed(before, task)
    if before.schedule != schedule:
        also = f"; also changed: {', '.join(changed)}" if changed else ""
        if shared:
            _log.warning(
                "task %r (id %r): a registration replaced its stored schedule %s with "
                "%s%s; every process on this store follows it",
                task.name,
                task.id,
                describe(before.schedule),
                describe(schedule),
                also,
            )
        else:
            _log.info(
                "task %r (id %r): a registration replaced its stored schedule %s with %s%s",
                task.name,
                task.id,
                describe(before.schedule),
                describe(schedule),
                also,
            )
    elif changed:
        _log.info(
            "task %r (id %r): a registration replaced its stored definition (changed: %s); "
            "its schedule %s is unchanged",
            task.name,
            task.id,
            ", ".join(changed),
            describe(schedule),
        )
