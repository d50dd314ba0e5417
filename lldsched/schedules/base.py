"""The Schedule protocol: a small immutable Strategy that says *when*.

A schedule answers two questions and keeps no state of its own, so one instance
can be shared by any number of tasks and by both runtimes:

* ``first_run(now)``: the first due instant for a task registered at ``now``;
* ``next_run(record, now)``: the next due instant after a *successful* run, or
  ``None`` to retire the task (it becomes SUCCEEDED).

Retries never consult the schedule: the core computes them from the task's
:class:`~lldsched.policies.RetryPolicy`.  "Now support cron" is one more class.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from lldsched.model import ExecutionRecord

__all__ = ["Schedule"]


@runtime_checkable
class Schedule(Protocol):
    """When a task runs (times are float epoch seconds, UTC)."""

    def first_run(self, now: float) -> float | None:
        """The first due instant for a task registered at ``now``."""
        ...

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        """The due instant after the successful run ``record``; ``None`` retires the task."""
        ...
