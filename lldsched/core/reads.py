"""What the core's registry answers: a task by id, the dead letter, the records kept.

:class:`RegistryReads` is the part of :class:`~lldsched.core.machine.SchedulerCore`
that the runtimes' reads go through: a task by id (or the error that says it is
unknown, or retired: :mod:`lldsched.core.retention`), whether a task object is still
the one registered (:meth:`RegistryReads.holds`), the dead-lettered ids, the
records of retired tasks and their priorities and schedules
(:mod:`lldsched.core.departed`), every history as packed blocks
(:mod:`lldsched.core.packedstats`), the store's failed writes and what
:mod:`lldsched.core.metrics` reads (the records counted by outcome, the dead
letter's size, whether the store writes).  It changes nothing.  No thread, no lock:
the runtime serialises calls.
"""

from __future__ import annotations

from lldsched.core.packedstats import Rows, pack_all, packed_history
from lldsched.core.parts import CoreParts
from lldsched.core.retention import RetainFinished
from lldsched.core.store.writes import StoreWrites
from lldsched.core.task import ScheduledTask
from lldsched.model import ExecutionRecord, Outcome
from lldsched.schedules.base import Schedule

__all__ = ["RegistryReads"]


class RegistryReads(CoreParts):
    """Mixed into SchedulerCore (see the module docstring)."""

    def get(self, task_id: str) -> ScheduledTask:
        """The task registered under ``task_id``, or :class:`TaskNotFoundError`
        (:class:`~lldsched.errors.TaskRetiredError` for a task that finished and
        retired: see :mod:`lldsched.core.retention`)."""
        try:
            return self.tasks[task_id]
        except (KeyError, TypeError):
            raise self._retention.not_found(task_id) from None

    def holds(self, task: ScheduledTask) -> bool:
        """Whether ``task`` itself is still the one registered under its id: False once
        it retired or was removed, and once another task was registered under its id
        since.  The one test for "is this object still the live task", which a caller
        holding a task across a step that may drop it (a run's end, a registration
        that retires at once) makes."""
        return self.tasks.get(task.id) is task

    @property
    def retain_finished(self) -> RetainFinished:
        """How long finished tasks stay registered (:mod:`lldsched.core.retention`)."""
        return self._retention.keep

    def retired_records(self) -> list[ExecutionRecord]:
        """The records of retired tasks still held, in the order the tasks retired
        (the most recent ones, as many as ``history_limit``)."""
        return list(self._retention.log)

    def priorities(self) -> dict[str, int]:
        """Task id to :class:`~lldsched.model.Priority` value of every task that has
        records here: the registered ones, and the retired ones whose records
        :meth:`retired_records` holds (NORMAL unless :mod:`~lldsched.core.departed`
        kept another)."""
        return self.departed.priorities_of(
            self.tasks.values(), (record.task_id for record in self._retention.log)
        )

    def schedules(self) -> dict[str, Schedule]:
        """Task id to schedule of the registered tasks, and of the retired ones that had
        slots (:mod:`~lldsched.core.departed`): what the overrun count reads."""
        return self.departed.schedules_of(self.tasks.values())

    def packed_records(self) -> list[Rows]:
        """Every task's ``history`` (in registration order), then :meth:`retired_records`,
        as packed blocks (:mod:`lldsched.core.packedstats`): what a view reads without
        a record object for the part already packed."""
        rows = [
            row
            for task in self.tasks.values()
            if task._stats is not None
            for row in packed_history(task._stats)
        ]
        rows += (Rows(block, 0) for block in pack_all(list(self._retention.log)))
        return rows

    @property
    def store_writes(self) -> StoreWrites | None:
        """The calls the store failed, and whether it was found closed (the runtimes log
        a shared store's failures through it: ``core/store/writes.py``); None without a
        store."""
        return self._writes

    def dead_letter(self) -> list[str]:
        """Ids of FAILED tasks, in the order they failed."""
        return list(self._dead)

    def downstream(self, task_id: str) -> list[str]:
        """The ids of the registered tasks that depend on ``task_id``, directly or through
        others (:meth:`Dependencies.downstream
        <lldsched.core.dependencies.Dependencies.downstream>`): the rows a ``cancel`` of
        it may fail, which a shared store's verb holds with its own (docs/CLUSTER.md)."""
        deps = self._deps
        return [] if deps is None else deps.downstream(task_id)

    def dead_letter_size(self) -> int:
        """How many tasks are FAILED (:meth:`dead_letter`'s length, without the list)."""
        return len(self._dead)

    def outcomes(self) -> dict[Outcome, int]:
        """The records made since this core was built, counted by outcome
        (:mod:`lldsched.core.tally`)."""
        return self._tally.counts()

    @property
    def store_ok(self) -> bool:
        """False while the store fails or once it was found closed (True without one):
        :attr:`StoreWrites.ok <lldsched.core.store.writes.StoreWrites.ok>`."""
        return self._writes is None or self._writes.ok

    def orphans(self) -> list[str]:
        """Ids of the tasks the store restored that no registration has named since
        (``add`` with their id), in the order restored: after a redeploy has registered
        every job its code defines, the tasks that code no longer defines (and any
        added at run time, which no start registers).  They run as stored until removed."""
        tasks = self.tasks
        return [task_id for task_id in self._orphans if task_id in tasks]
