"""The TaskStore protocol: the Repository every status change is written through.

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

from typing import Protocol, runtime_checkable

from lldsched.model import ExecutionRecord, TaskSnapshot

__all__ = ["HistoryStore", "TaskStore"]


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
