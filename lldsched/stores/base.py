"""The TaskStore protocol: the Repository every status change is written through.

The core calls ``save`` at every transition, with the run's record when the
transition ends a run, while its runtime holds the scheduler's lock: a store
should be quick, and must not call back into the scheduler.  ``delete`` forgets
a task removed from the scheduler; ``load_all`` returns the latest snapshot of
every task it holds (recovery after a restart builds on it).

A store is optional.  With ``store=None`` nothing is written (the registry
already holds the state) and the hot path builds no snapshot at all.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from lldsched.model import ExecutionRecord, TaskSnapshot

__all__ = ["TaskStore"]


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
