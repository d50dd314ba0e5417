"""The status verbs: pause, resume, cancel, redrive and remove.

:class:`StatusVerbs` is the part of :class:`~lldsched.core.machine.SchedulerCore`
that moves a task between statuses at an operator's word (the edges
``-> PAUSED``, ``PAUSED ->``, ``-> CANCELLED``, ``FAILED -> SCHEDULED``, and
forgetting a task); what a *run* leads to is ``finish``'s, in
:mod:`~lldsched.core.runs`, and what a task runs and when is
:mod:`~lldsched.core.definition`'s.  Each verb refuses a closed store before it
changes anything (:func:`~lldsched.core.store.writes.check_store`) and writes the
transition through the store and to the listeners
(:func:`~lldsched.core.publishing.verb_written`; cancel and remove, through
``_cancel``, by ``_write_and_publish``).  No thread, no lock: the runtime serialises
calls.
"""

from __future__ import annotations

from lldsched.core.dependencies import Upstream
from lldsched.core.names import (
    BLOCKED,
    CANCELLED,
    FAILED,
    PAUSED,
    RUNNABLE,
    RUNNING,
    SCHEDULED,
    runnable,
)
from lldsched.core.parts import CoreParts
from lldsched.core.publishing import verb_written
from lldsched.core.store.interrupts import interrupts_deferred
from lldsched.core.store.writes import check_store, store_failed, store_written
from lldsched.core.task import ScheduledTask
from lldsched.errors import SchedulerStateError
from lldsched.model import ExecutionRecord, TaskStatus
from lldsched.printable import name_after
from lldsched.schedules.catchup import planned, unwrap
from lldsched.schedules.decorators import forget_runs

__all__ = ["StatusVerbs"]


class StatusVerbs(CoreParts):
    """Pause, resume, cancel, redrive and remove: mixed into the core."""

    def pause(self, task_id: str) -> bool:
        """Hold a live task where it is; True if it was paused by this call.

        Raises :class:`~lldsched.errors.TaskNotFoundError` for an id not registered
        (:meth:`get`), and what :func:`check_store` raises for a closed store
        (:class:`~lldsched.errors.StoreClosedError`) or one another running scheduler
        holds (:class:`~lldsched.errors.StoreError`), before anything changes."""
        task = self.get(task_id)
        check_store(self._writes, "pause", task_id)
        held = self._hold(task)
        if held is None:
            return False
        previous, waited = held
        verb_written(self, task, previous, waited)
        return True

    def _hold(self, task: ScheduledTask) -> tuple[TaskStatus, ExecutionRecord | None] | None:
        """The pause rule, short of its write: ``task`` PAUSED, its entry dropped, a
        dependency wait ended.  Returns the status it had and the record of the wait it
        ended (None: it waited for nothing), or None if it cannot be paused (finished,
        or paused already).  :meth:`pause` writes and publishes it;
        ``add(..., paused=True)`` holds a new task with it before its first write."""
        previous = task.status
        if previous in RUNNABLE or (previous is RUNNING and task._flight is not None):
            self._queue.discard(task)  # an overlapping task's pending slot too
        elif previous is not RUNNING and previous is not BLOCKED:
            return None
        task.status = PAUSED
        self._owed_no_more(task)  # a pause decides the task anew: resume() runs a fresh slot
        return previous, (self._end_wait(task, None) if previous is BLOCKED else None)

    def resume(self, task_id: str) -> bool:
        """Return a PAUSED task to where it was; a slot it slept through runs at once,
        once, whatever its overrun and misfire policies, and a fixed-rate grid re-anchors
        there.  Raises as :meth:`pause` does."""
        task = self.get(task_id)
        check_store(self._writes, "resume", task_id)
        if task.status is not PAUSED:
            return False
        run = task._run
        if run is not None:  # paused and resumed while its run was still going
            task.status = RUNNING
            flight = task._flight
            if flight is not None and flight.pending is not None:  # its pending slot again
                self._enqueue(task, max(flight.pending, self.clock.now()))
            writes = self._writes
            if writes is not None and writes.shared:
                # A RUNNING save by the lease's holder writes nothing (the lease says so):
                # the row would stay PAUSED, read so by every other process, kept by the
                # run's settle as a pause made during it, and for good if this process
                # dies before that settle.  Written as the run's claim left it instead:
                # runnable at the run's slot, its lease holding it (docs/CLUSTER.md).
                with interrupts_deferred(writes):  # published, then a store's Ctrl-C
                    self._save(task, as_claimed=run)
                    self._publish(task, PAUSED, None)
                return True
        else:
            assert task.next_run_at is not None
            due = max(task.next_run_at, self.clock.now())
            task.status = runnable(task.attempt)  # where it was: a pending retry, or a slot
            if task.status is SCHEDULED and not planned(task._schedule):
                task._slot = task._grid = due  # a fixed-rate grid re-anchors at the resumed run
            # A plan's run (a catch-up slot, an extra run) keeps its slot: it was decided,
            # and the plan's other slots, and the grid after them, do not move.
            self._enqueue(task, due)
        verb_written(self, task, PAUSED)
        return True

    def cancel(self, task_id: str) -> bool:
        """Stop every future run; a run in flight finishes (its flag is raised).  Raises
        as :meth:`pause` does."""
        task = self.get(task_id)
        check_store(self._writes, "cancel", task_id)
        with interrupts_deferred(self._writes):  # its dependents failed, then a Ctrl-C
            if not self._cancel(task):
                return False
            if task._run is None:  # else when its run ends
                self._finished(task, self.clock.now())
        return True

    def _cancel(self, task: ScheduledTask) -> bool:
        """What cancel and remove share: its entry dropped, its runs in flight flagged,
        a plan in front of its schedule dropped (a misfire's catch-up, a run_now's put-off
        slot: none of it will run, and its final row kept the plan's ``waited`` and
        ``until`` for good; with a run in flight, as that run ends: the plan still decides
        the run's outcome, a slot given up or a failure, as for a task not cancelled),
        CANCELLED written and published, its BLOCKED dependents failed; False for a task
        already SUCCEEDED, FAILED or CANCELLED."""
        previous = task.status
        if previous.is_terminal:
            return False
        self._queue.discard(task)  # also an entry already popped for a worker
        for run in task.runs:  # every run in flight (several under an overlap policy)
            if run.context is not None:
                run.context.cancel("cancelled")
        task.status = CANCELLED
        waited = self._end_wait(task, None) if previous is BLOCKED else None
        task.next_run_at = None
        if task._run is None:  # else the run's end drops it, once it judged the run (runs.py)
            task._schedule = unwrap(task._schedule)
        self._write_and_publish(task, previous, waited)
        if self._deps is not None:
            self._strand(task)
        return True

    def redrive(self, task_id: str) -> bool:
        """Put a FAILED (dead-lettered) task back, due now, with a fresh attempt counter;
        a plan left in front of its schedule (a catch-up, a rescheduled first run) is
        dropped: its own schedule follows the redriven run."""
        task = self.get(task_id)
        check_store(self._writes, "redrive", task_id)
        if task.status is not FAILED:
            return False
        del self._dead[task_id]
        now = self.clock.now()
        task.status = SCHEDULED
        task._schedule = unwrap(task._schedule)
        task.attempt = 0
        if task._stats is not None:
            task._stats.given_up = 0  # a person looked: a fresh streak as well
        task._slot = now
        self._enqueue(task, now)
        if self._deps is not None:
            self._deps.revived(task_id)  # its next death fails dependents anew
        verb_written(self, task, FAILED)
        return True

    def dead_upstream(self, task_id: str) -> Upstream | None:
        """The upstream that ``task_id``'s next slot waits for and that will not succeed
        on its own (FAILED or CANCELLED, registered or retired), if any: redriven now, the
        task fails again at once, as it would at its next slot
        (docs/decisions/dependencies.md, "A dead upstream fails its dependents").  What
        ``python -m lldsched tasks redrive`` asks before it redrives, on a scheduler it
        just built on the store."""
        task = self.get(task_id)
        return None if self._deps is None else self._deps.dead(task)

    def remove(self, task_id: str) -> ScheduledTask:
        """Cancel the task if it is live, then forget it here and in the store.

        :class:`SchedulerStateError` naming them if other tasks depend on it: remove
        those first (or register them again without it); nothing changes then."""
        task = self.get(task_id)
        check_store(self._writes, "remove", task_id)
        if self._deps is not None:
            dependents = self._deps.dependents(task_id)
            if dependents:
                names = ", ".join(f"{d.id}{name_after(d.id, d.name)}" for d in dependents)
                verb = "depends" if len(dependents) == 1 else "depend"
                raise SchedulerStateError(
                    f"cannot remove {task_id!r}{name_after(task_id, task.name)}: "
                    f"{names} {verb} on it; "
                    "remove them first, or register them again without it"
                )
        with interrupts_deferred(self._writes):  # forgotten whole, then a Ctrl-C
            self._cancel(task)  # not cancel(): a task removed does not retire
            if self._deps is not None:
                # After the cancel: its record of a BLOCKED wait reads when the wait began
                # and the slot found blocked, which unlink forgets; and it notes the task
                # dead (shared), which removed forgets.
                self._deps.unlink(task_id)
                self._deps.removed(task_id)
            del self.tasks[task_id]
            self._dead.pop(task_id, None)
            if self._orphans or self._restored_names:  # a task a store restored
                self._unrestored(task)
            self._retention.forget(task_id)
            forget_runs(task.schedule, task_id)  # a Window's count of it, behind a plan too
            if self._store is not None:
                try:
                    self._store.delete(task_id)
                except BaseException as exc:  # the registry stays authoritative (store/writes.py)
                    store_failed(self._writes, exc, "delete", task_id, removed=task.definition)
                else:
                    store_written(self._writes, "delete", task_id)
        return task
