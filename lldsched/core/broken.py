"""A task failed loudly: a run whose step the runtime could not carry through, or whose
task's own code the core asked about raised.

:class:`BrokenRuns` is the part of :class:`~lldsched.core.machine.SchedulerCore` that
fails it: a runtime's :meth:`~lldsched.core.runs.RunTransitions.begin` or
:meth:`~lldsched.core.runs.RunTransitions.finish` that raised (:meth:`~BrokenRuns.broke`,
its dependents told as the run's end would tell them, on a shared store once the claim's
write is made: :meth:`~BrokenRuns.claim_written`), and a schedule's ``next_run`` or a retry
policy of one's own that raised while a run's end was decided
(:meth:`~BrokenRuns._fails_loudly`).  FAILED, the dead letter, logged at ERROR with the
traceback: ``redrive()`` runs it again.  A run's ordinary transitions are
:mod:`lldsched.core.runs`'.
"""

from __future__ import annotations

import logging

from lldsched.core.names import FAILED, RUNNABLE, RUNNING, Skipped
from lldsched.core.parts import CoreParts
from lldsched.core.task import Run, ScheduledTask
from lldsched.errors import ScheduleError, error_text
from lldsched.logs import JOBS
from lldsched.model import ExecutionRecord, TaskStatus

__all__ = ["BrokenRuns"]

log = logging.getLogger(JOBS)


class BrokenRuns(CoreParts):
    """A task failed loudly where a run's step or the task's own code raised: mixed into
    the core."""

    def broke(
        self,
        task_id: str,
        run: Run | None,
        exc: BaseException,
        *,
        due: float | None = None,
        token: int | None = None,
    ) -> None:
        """The runtime's :meth:`begin` (``run`` None, of the entry due at ``due``) or
        :meth:`finish` of ``run`` raised ``exc`` instead of returning: a bug of the
        scheduler's, or of something it asked without a guard (an injected clock read for
        an event's instant, a ``MemoryError``).  Its task is failed loudly, as
        :meth:`_fails_loudly` fails one whose schedule raised (FAILED, the dead letter:
        ``redrive()`` runs it again), where that step left it stuck: RUNNING with no run
        in flight (or only the one ``begin`` made and never handed back), or runnable with
        its popped entry gone, so that it would never run again.  A task the step had
        already moved on (a finish that raised after it was rescheduled) is left as it
        is, and so is a task whose runs overlap (``Overlap.ALLOW``, ``CANCEL_OTHER``).
        Logged once, at ERROR, with the traceback; never raises (the runtime settles the
        entry after).  Its dependents are told as the run's end would tell them
        (:meth:`_broke_dependents`): a task failed here fails its BLOCKED dependents, as
        a dead letter does.

        On a shared store the same is decided (``token``: the fencing token of the
        claim the step ran on), and the failure of a stuck task is not written here but
        held for that claim (:meth:`claim_held`, as a slot the readiness check held), for
        the runtime to write fenced by the token, the lease dropped in the same
        transaction: the row is written only while this process holds the slot, and the
        other processes hear it from the change feed (docs/decisions/logging.md, "A run whose
        begin or record raises is settled").  Its dependents are told once that write is
        made (:meth:`claim_written`), not here: a lease lost before it means another
        process holds the slot and runs it, and the upstream is not dead."""
        task = self.tasks.get(task_id)
        stuck = False
        if task is not None and task._flight is None:
            if run is None:  # begin: the run it made, if it made one, was never handed back
                made = task._run
                if made is not None and made.due == due and made.attempt == task.attempt:
                    task._run = None
                status = task.status
                stuck = task._run is None and (
                    status is RUNNING or (status in RUNNABLE and not task._queued)
                )
            else:
                if task._run is run:
                    task._run = None
                stuck = task._run is None and task.status is RUNNING
        step = "beginning" if run is None else "recording"
        then = "the task fails (redrive() runs it again)" if stuck else "the task is left as it is"
        log.error(
            "task %s: the scheduler raised %s a run; %s",
            task_id,
            step,
            then,
            exc_info=exc,
            extra={"task_id": task_id},
        )
        if stuck:
            assert task is not None
            previous = task.status
            task.status = FAILED
            task.next_run_at = None
            self._queue.discard(task)
            self._dead[task.id] = None
            self._stats(task).last_error = f"SchedulerError: raised {step} a run: {error_text(exc)}"
            try:  # what raised may be this very write's (the event's clock reading)
                if token is not None:  # the claim's to write, fenced (see above)
                    self._claims_held[token] = []
                    self._publish(task, previous, None)
                elif self._store is not None or self.emit is not None:
                    self._write_and_publish(task, previous)
            except Exception:
                log.exception("task %s: its failure could not be written or published", task_id)
        held = stuck and token is not None  # told once the claim's write is made
        if task is not None and self._deps is not None and not held:
            self._broke_dependents(task, run, stuck=stuck)

    def claim_written(self, task_id: str) -> None:
        """The row a shared store's claim held (:meth:`claim_held
        <lldsched.core.waiting.DependencyWaits.claim_held>`) is written, fenced by the
        claim's token (or, the store failing, left to be written again: still this
        process's decision): a task that row leaves FAILED, by :meth:`broke` or by a
        readiness check that found an upstream dead, is a dead upstream now, and its
        BLOCKED dependents are told, as :meth:`_broke_dependents` tells them (never
        raises).  The one rule for both: not called where the lease was lost before that
        write, since the slot is then another process's, which runs or decides it, and
        its end decides for the dependents (docs/decisions/logging.md, "A run whose begin or
        record raises is settled")."""
        task = self.tasks.get(task_id)
        if task is not None and self._deps is not None and task.status is FAILED:
            self._broke_dependents(task, None, stuck=True)

    def _broke_dependents(self, task: ScheduledTask, run: Run | None, *, stuck: bool) -> None:
        """What :meth:`broke` tells ``task``'s dependents, as the run's end would have
        (the one rule, :meth:`_upstream_moved
        <lldsched.core.waiting.DependencyWaits._upstream_moved>` and its
        :meth:`~lldsched.core.waiting.DependencyWaits._strand`): a task it failed is a
        dead upstream (its BLOCKED dependents fail, ``UpstreamFailed``); one a raising
        ``finish`` of ``run`` had moved on is told of that run's record (a success
        releases them, a dead letter fails them), which the step may have raised before
        telling.  Told twice changes nothing: a dependent
        released or failed is not BLOCKED any more.  Never raises."""
        try:
            if stuck:  # a dead upstream, as _upstream_moved's FAILED is
                self._strand(task)
            elif run is not None and task._run is None:
                for record in reversed(task.history):
                    ran = (record.attempt, record.due, record.worker)
                    if ran == (run.attempt, run.due, run.worker):
                        self._upstream_moved(task, record)
                        break
        except Exception:
            log.exception("task %s: its dependents could not be told of its end", task.id)

    def _fails_loudly(
        self,
        task: ScheduledTask,
        record: ExecutionRecord,
        exc: Exception,
        *,
        schedule: object = None,
        policy: object = None,
    ) -> tuple[TaskStatus, float | None, ExecutionRecord, Skipped]:
        """What a run leads to when the user's code the core asked about it raised (or
        answered what it cannot use): its ``schedule``'s ``next_run``, or a retry
        ``policy`` of one's own.  Such a bug fails the task loudly (FAILED, the dead
        letter: logged at ERROR with the traceback, its ``last_error`` saying so) rather
        than leave it RUNNING for ever or stop the runtime; ``record`` is the run's, as
        it ended."""
        if policy is None:
            who, error = f"{schedule!r}.next_run", error_text(exc)
            if not isinstance(exc, ScheduleError):  # the library's own says so already
                error = f"ScheduleError: {error}"
        else:
            who = f"the retry policy {policy!r}"
            error = f"ValidationError: {who} raised {error_text(exc)}"
        log.exception(
            "task %s %r: %s raised; the task fails",
            task.id,
            task.name,
            who,
            extra={"task_id": task.id, "task_name": task.name},
        )
        self._stats(task).last_error = error
        return FAILED, None, record, ()
