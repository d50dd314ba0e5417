"""Publishing a transition: the snapshot a store is given, the write, the event.

:class:`Publishing` is the part of :class:`~lldsched.core.machine.SchedulerCore`
that tells the world what a transition did: it builds a task's
:class:`~lldsched.persistence.TaskSnapshot` (:meth:`~Publishing.snapshot`), writes it
through the store (one write, or one write with several records: ``save_all``) and
publishes the :class:`~lldsched.model.TaskEvent` to ``emit``.  A store write that
fails after the fact leaves the registry authoritative
(:mod:`lldsched.core.store.writes`).  With neither a store nor ``emit`` the callers
skip it, and no snapshot and no event object is built.

:meth:`~Publishing._write_and_publish` is on the run path
(:meth:`~lldsched.core.runs.RunTransitions.begin` and
:meth:`~lldsched.core.runs.RunTransitions.finish` call it; a run that skipped slots
takes :meth:`~Publishing._write_all_and_publish` instead): the snapshot and the event
are built positionally, the run path's speed trick (see ``finish``).
"""

from __future__ import annotations

from lldsched.core.names import BLOCKED, runnable
from lldsched.core.parts import CoreParts
from lldsched.core.store.interrupts import interrupts_deferred
from lldsched.core.store.writes import store_failed, store_written
from lldsched.core.task import Run, ScheduledTask
from lldsched.model import ExecutionRecord, TaskEvent, TaskStatus
from lldsched.persistence import TaskSnapshot
from lldsched.schedules.base import counts_on_grid
from lldsched.schedules.catchup import CatchUp
from lldsched.storecalls import save_all

__all__ = ["Publishing", "verb_written"]

_new_tuple = tuple.__new__  # a snapshot or event positionally: see _snapshot


class Publishing(CoreParts):
    """The store writes and events of the core's transitions: mixed into the core."""

    def snapshot(self, task: ScheduledTask) -> TaskSnapshot:
        """What a store is given for ``task`` as it is now."""
        return self._snapshot(task)

    def _current(self, task_id: str) -> TaskSnapshot | None:
        """The snapshot of task ``task_id`` as it is now; None if it is not registered."""
        task = self.tasks.get(task_id)
        return None if task is None else self._snapshot(task)

    def _snapshot(self, task: ScheduledTask) -> TaskSnapshot:
        """The task's snapshot for the store.

        The store and listener share of the run path's speed trick (see
        ``SchedulerCore.finish``): the
        snapshot here and the event in :meth:`_write_and_publish` are built by tuple.__new__,
        and the run statistics are read once, not through three properties.  Two
        transitions a run; tuple.__new__ against the classes called with keywords:
        -15.7 % instructions a dispatched one-off job with a store and a listener
        (128,601 -> 108,371, ``benchmarks/threaded_instructions.py store-listener``,
        2026-12-07), the headline figure "dispatch store+listener / APS".
        TaskSnapshot's fields in order: task, status, next_run_at, attempt,
        run_count, failure_count, last_error, running, waited (a plan's next slot),
        slot (the slot of a plan's run a resume made due later: :func:`_put_off`),
        resumes (waited is the slot to resume at: ``CatchUp.resuming``), until (where
        the slots the plan decided to run end: ``CatchUp.until``) and grid (the grid
        origin ``ScheduledTask._grid``, for a task whose schedule counts its slots on it:
        :func:`~lldsched.schedules.base.counts_on_grid`, a fixed rate, wrapped in a
        ``Window`` or a plan or not), blocked_due and blocked_slot (the slot a BLOCKED task
        was found blocked at, kept while a reschedule moved its next slot:
        :meth:`~lldsched.core.waiting.DependencyWaits._wait_moved`; one identity test for
        any other task); one identity test for a task without a plan, which has none of
        the plan's."""
        stats = task._stats
        if stats is None:  # no run finished yet
            run_count, failures, last_error = 0, 0, None
        else:
            run_count, failures, last_error = (
                stats.run_count, stats.failure_count, stats.last_error
            )  # fmt: skip
        schedule = task._schedule
        grid = task._grid if counts_on_grid(schedule) else None
        blocked_due = blocked_slot = None
        if task.status is BLOCKED and self._deps is not None:
            moved = self._deps.blocked_slot.get(task.id)
            if moved is not None:
                blocked_due, blocked_slot = moved
        if schedule.__class__ is not CatchUp:
            return _new_tuple(TaskSnapshot, (
                task._defined(), task.status, task.next_run_at, task.attempt,
                run_count, failures, last_error, task._run is not None, None, None, False,
                None, grid, blocked_due, blocked_slot,
            ))  # fmt: skip
        return _new_tuple(TaskSnapshot, (
            task._defined(), task.status, task.next_run_at, task.attempt,
            run_count, failures, last_error, task._run is not None,
            schedule.waited, _put_off(task), schedule.resuming, schedule.until, grid,
            blocked_due, blocked_slot,
        ))  # fmt: skip

    def _save(self, task: ScheduledTask, *, as_claimed: Run | None = None) -> None:
        """Write ``task``'s row through the store, with no event: a change that is no
        transition (:meth:`~lldsched.core.restoration.Restoration.replan`, a slot
        dropped behind runs in flight: :meth:`~lldsched.core.overlapping.OverlappingRuns.
        drop_pending`), or one whose event is published apart.  With ``as_claimed`` (a
        run of ``task`` in flight on a shared store's claim), its state as that claim
        left the row: runnable at the run's due instant, with the attempts before it
        (a run resumed while it goes on: :meth:`~lldsched.core.control.StatusVerbs.
        resume`)."""
        if self._store is None:
            return
        snapshot = self._as_owed(task)
        if as_claimed is not None:
            before = as_claimed.attempt - 1
            snapshot = snapshot._replace(
                status=runnable(before), next_run_at=as_claimed.due, attempt=before
            )
        try:
            self._store.save(snapshot)
        except BaseException as exc:  # as in _write_and_publish: the registry is the truth
            store_failed(self._writes, exc, "save", task.id, snapshot)
        else:
            store_written(self._writes, "save", task.id)

    def _as_owed(self, task: ScheduledTask) -> TaskSnapshot:
        """``task``'s snapshot for a write that is no transition of its own (:meth:`_save`,
        a definition's ``_commit``): saying ``running`` while it still owes the attempt a
        restart found in flight (:meth:`owes`); else as it is, the mark ended."""
        snapshot = self._snapshot(task)
        if self._owed and task.id in self._owed:
            if self.owes(task):
                return snapshot._replace(running=True)
            del self._owed[task.id]
        return snapshot

    def _owed_no_more(self, task: ScheduledTask) -> None:
        """``task`` was decided anew (paused; rescheduled, or given a new schedule): the
        attempt a restart found in flight is owed no more, even where the task is due at
        that instant still, at the same run count (a pause and a resume at it, a new
        first run at it).  Its rows say so from now on, and ``start()`` decides its slot
        as one of the downtime, as a restart from those rows does (docs/decisions/persistence.md,
        "A verb that decides the task anew ends an owed attempt")."""
        if self._owed:
            self._owed.pop(task.id, None)

    def owes(self, task: ScheduledTask) -> bool:
        """True while ``task`` still owes the attempt a restart found in flight
        (:meth:`~lldsched.core.restoration.Restoration.owe`): SCHEDULED, due at it, no
        run of it finished since.  A retry's attempt is owed by its status instead."""
        owed = self._owed.get(task.id) if self._owed else None
        if owed is None:
            return False
        due, runs = owed
        status, at = task.status, task.next_run_at
        return status is TaskStatus.SCHEDULED and at == due and task.run_count == runs

    def _write_all_and_publish(
        self, task: ScheduledTask, previous: TaskStatus, records: list[ExecutionRecord]
    ) -> None:
        """Write the transition with every one of ``records`` in one store write (all or
        none where the store can: :func:`~lldsched.storecalls.save_all`), then publish
        one event a record, the first from ``previous``."""
        if self._store is not None:
            snapshot = self._snapshot(task)
            writes = self._writes
            if writes is not None and writes.outage is not None:
                writes.save(task.id, snapshot, records)  # after the records held, in order
            else:
                try:
                    save_all(self._store, snapshot, records)
                except BaseException as exc:  # the registry stays authoritative
                    fenced = records[0].token is not None  # a run's settle: its lease's row
                    store_failed(
                        writes, exc, "save", task.id, snapshot, fenced=fenced, records=records
                    )
        if self.emit is not None:
            now = self.clock.now()
            for record in records:
                self.emit(TaskEvent(task.id, task.name, previous, task.status, now, record))
                previous = task.status

    def _write_and_publish(
        self, task: ScheduledTask, previous: TaskStatus, record: ExecutionRecord | None = None
    ) -> None:
        """Write the transition through the store and publish it."""
        if self._store is not None:
            snapshot = self._snapshot(task)
            writes = self._writes  # one attribute test a write while none failed
            if writes is not None and writes.outage is not None:  # after the records held
                writes.save(task.id, snapshot, () if record is None else (record,))
            else:
                try:
                    self._store.save(snapshot, record)
                except BaseException as exc:  # the registry stays authoritative
                    fenced = record is not None and record.token is not None  # a run's settle
                    carried = () if record is None else (record,)
                    store_failed(
                        writes, exc, "save", task.id, snapshot, fenced=fenced, records=carried
                    )
        if self.emit is not None:
            self.emit(
                _new_tuple(  # the speed trick (see _snapshot); fields task_id, name,
                    TaskEvent,  # previous, status, at, record
                    (task.id, task.name, previous, task.status, self.clock.now(), record),
                )
            )

    def _publish(
        self, task: ScheduledTask, previous: TaskStatus, record: ExecutionRecord | None
    ) -> None:
        """Publish the transition without writing it: another write carries it (a slot a
        claim began and the readiness check held: :meth:`~lldsched.core.waiting.
        DependencyWaits._write_wait`).  The event :meth:`_write_and_publish` inlines."""
        if self.emit is not None:
            now = self.clock.now()
            self.emit(TaskEvent(task.id, task.name, previous, task.status, now, record))


def verb_written(
    core: CoreParts,
    task: ScheduledTask,
    previous: TaskStatus,
    record: ExecutionRecord | None = None,
) -> None:
    """A verb's transition (pause, resume, redrive, run now) written and published by
    ``core``: a ``KeyboardInterrupt`` or ``SystemExit`` its store raises in the write is
    raised once the event is published
    (:func:`~lldsched.core.store.interrupts.interrupts_deferred`), on both runtimes;
    raised at once, the verb was made and the listeners never heard it
    (docs/decisions/simulation.md, "A Ctrl-C in a simulation's verb").  A function, not a method of
    the core: as one more name in its classes' dictionaries it cost the simulation's loop
    45,863-45,870 instructions a run, this 45,788, 45,821 before it
    (``benchmarks/sim_instructions.py sim``)."""
    with interrupts_deferred(core._writes):
        core._write_and_publish(task, previous, record)


def _put_off(task: ScheduledTask) -> float | None:
    """The slot of the run due at ``task.next_run_at`` when it is not that instant (a
    plan's run that ``resume()`` made due after its slot passed: it keeps the slot,
    ``core/control.py``); None otherwise, a retry included (its attempts keep their slot,
    which the records say).  :attr:`TaskSnapshot.slot
    <lldsched.persistence.TaskSnapshot.slot>`: a store keeps it for whichever process
    runs that run."""
    due = task.next_run_at
    slot = task._slot
    if due is None or task.attempt or slot == due:
        return None
    return slot
