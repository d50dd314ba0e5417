"""ScheduledTask: the live state of one registered task.

A :class:`~lldsched.model.Task` says what runs and when; a ``ScheduledTask`` says
where that task is now: its status, its next due instant, its attempt counter,
its generation (which tombstones stale heap entries) and its recent history.

Only the core state machine mutates it, always under its runtime's lock; any
thread may read it.  Each attribute read is atomic, and ``history`` returns a
copy, but two reads are not a consistent pair: take ``Scheduler.task(id)`` again
for a fresh look.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from lldsched.model import ExecutionRecord, Priority, Task, TaskStatus

if TYPE_CHECKING:
    from collections.abc import Callable

    from lldsched.core import Run
    from lldsched.retry import RetryPolicy
    from lldsched.schedules.base import Schedule

__all__ = ["Entry", "ScheduledTask"]

Entry = tuple[float, int, int, int, "ScheduledTask"]
"""A heap entry ``(due, priority, sequence, generation, task)``.

Tuples compare in C and the unique ``sequence`` settles every tie before the
task would be compared; ``generation`` must match the task's for the entry to
be live (cancel, pause and every re-queue bump it)."""


class ScheduledTask:
    """One task and where it is in its lifecycle (see :class:`TaskStatus`)."""

    __slots__ = (
        "_history",
        "_pass_context",
        "_queued",
        "_resume_to",
        "_run",
        "_slot",
        "attempt",
        "failure_count",
        "generation",
        "last_error",
        "next_run_at",
        "run_count",
        "status",
        "task",
    )

    def __init__(self, task: Task, pass_context: bool) -> None:
        self.task = task
        self.status = TaskStatus.SCHEDULED
        self.next_run_at: float | None = None
        self.attempt = 0  # attempts made for the current slot; a reschedule resets it
        self.generation = 0
        self.run_count = 0
        self.failure_count = 0
        self.last_error: str | None = None
        self._slot = 0.0  # the schedule slot the pending attempts belong to
        self._resume_to = TaskStatus.SCHEDULED  # where resume() returns a PAUSED task
        self._run: Run | None = None  # the attempt in flight, if any
        self._queued = False  # a live entry sits in the runtime's heap
        self._history: deque[ExecutionRecord] | None = None  # created at the first run
        self._pass_context = pass_context

    @property
    def id(self) -> str:
        return self.task.id

    @property
    def name(self) -> str:
        return self.task.name

    @property
    def priority(self) -> Priority:
        return self.task.priority

    @property
    def schedule(self) -> Schedule:
        return self.task.schedule

    @property
    def retry(self) -> RetryPolicy:
        return self.task.retry

    @property
    def timeout(self) -> float | None:
        return self.task.timeout

    @property
    def action(self) -> Callable[..., Any] | None:
        return self.task.action

    @property
    def running(self) -> bool:
        """True while an attempt is in flight (also for a task paused or cancelled mid-run)."""
        return self._run is not None

    @property
    def history(self) -> tuple[ExecutionRecord, ...]:
        """The most recent runs, oldest first (bounded by the scheduler's history limit)."""
        history = self._history
        return tuple(history) if history is not None else ()

    def __repr__(self) -> str:
        return (
            f"<ScheduledTask {self.task.id} {self.task.name!r} {self.status.value} "
            f"next_run_at={self.next_run_at!r} attempt={self.attempt}>"
        )
