"""The persistence seam: the TaskStore protocol every status change is written through,
and what it is given: a task's definition (:class:`Task`) and its state (:class:`TaskSnapshot`).

The core calls ``save`` at every transition, with the run's record when the
transition ends a run, while its runtime holds the scheduler's lock: a store
should be quick, and must not call back into the scheduler.  ``delete`` forgets
a task removed from the scheduler; ``load_all`` returns the latest snapshot of
every task it holds (recovery after a restart builds on it).

A store is optional.  With ``store=None`` nothing is written (the registry
already holds the state) and the hot path builds no snapshot at all.

A runtime opened on a store that already holds tasks restores them (see
:mod:`lldsched.core.recovery`).  A store that also gives back the records it kept
and the dead-letter order (:class:`HistoryStore`) has those restored too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol, runtime_checkable

from lldsched.model import ExecutionRecord, Priority, TaskStatus
from lldsched.policies import MisfirePolicy, Overlap, RetryPolicy
from lldsched.schedules.base import Schedule

__all__ = ["HistoryStore", "Task", "TaskSnapshot", "TaskStore"]


class Task(NamedTuple):
    """The definition of a task (the *Command*): what runs, when, and how it fails.

    Immutable: the queue, the pool and the stores move it around without knowing
    what it does.  Its live state is in :class:`~lldsched.core.task.ScheduledTask`.
    """

    id: str
    name: str
    action: Callable[..., Any] | None
    schedule: Schedule
    priority: Priority
    retry: RetryPolicy
    timeout: float | None
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] | None = None
    misfire: MisfirePolicy | None = None  # None: the default policy
    overlap: Overlap | None = None  # None: runs never overlap (the schedule's own rule)
    max_instances: int | None = None  # with Overlap.ALLOW only


class TaskSnapshot(NamedTuple):
    """What a :class:`~lldsched.persistence.TaskStore` is given at every transition.

    ``running`` is True while an attempt is in flight (also for a task paused
    mid-run): recovery runs that attempt again (at-least-once).
    """

    task: Task
    status: TaskStatus
    next_run_at: float | None
    attempt: int
    run_count: int
    failure_count: int
    last_error: str | None
    running: bool = False


@runtime_checkable
class TaskStore(Protocol):
    """Where task state is persisted."""

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        """Persist the task's state now; ``record`` is the run this transition ends."""
        ...

    def delete(self, task_id: str) -> None:
        """Forget ``task_id`` and its records."""
        ...

    def load_all(self) -> list[TaskSnapshot]:
        """The latest snapshot of every stored task, in the order they were first saved."""
        ...


@runtime_checkable
class HistoryStore(TaskStore, Protocol):
    """A TaskStore that also returns what recovery needs beyond the latest snapshots."""

    def records(self, task_id: str | None = None) -> list[ExecutionRecord]:
        """The records kept for ``task_id`` (for every task when None), oldest first."""
        ...

    def dead_letter(self) -> list[str]:
        """Ids of FAILED tasks, in the order they failed."""
        ...
