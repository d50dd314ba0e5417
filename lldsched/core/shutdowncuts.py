"""A run a shutdown stopped: cut in flight, or begun and never started.

:class:`ShutdownCuts` is the part of :class:`~lldsched.core.machine.SchedulerCore` that
keeps such a run's task due instead of spending its attempt: the runtime marks a run its
shutdown cut (:meth:`~ShutdownCuts.cut_by_shutdown`), whose finish then keeps the task
due (:meth:`~ShutdownCuts._kept_due`), and puts back a run it began and could not start
(:meth:`~ShutdownCuts.unstarted`); both leave the task due again as a restart leaves a
run with no record (:meth:`~ShutdownCuts._due_again`), on both runtimes.  A run's
ordinary transitions are :mod:`lldsched.core.runs`'.
"""

from __future__ import annotations

from lldsched.core.names import RUNNING, SHUTDOWN_CUT, runnable
from lldsched.core.parts import CoreParts
from lldsched.core.task import Flight, Run
from lldsched.model import ExecutionRecord
from lldsched.schedules.catchup import slot_first

__all__ = ["ShutdownCuts"]


class ShutdownCuts(CoreParts):
    """A run a shutdown stopped, its task kept due: mixed into the core."""

    def cut_by_shutdown(self, run: Run) -> None:
        """The runtime's shutdown cut ``run`` (a coroutine cancelled, a process-isolated
        run's worker killed: ``drain=False``, or a drain out of time; a plain function's
        awaitable the closed loop refused, or the simulation cut): its :meth:`finish`,
        with the error that says so, keeps its task due (:meth:`_kept_due`) instead of
        spending the attempt.  Called before that finish; nothing else changes here.

        The one rule of a run a shutdown cut, for both runtimes (docs/decisions/logging.md, "A
        run a shutdown cut does not spend its attempt"): a deploy's SIGTERM is not the
        task's failure, and a thread run cut by the process's end is run again at the
        restart with its attempt unchanged (:mod:`lldsched.core.recovery`)."""
        self._cut[id(run)] = run

    def _kept_due(
        self, run: Run, record: ExecutionRecord, flight: Flight | None
    ) -> ExecutionRecord | None:
        """The finish of ``run``, which a shutdown cut (:meth:`cut_by_shutdown`; its
        counts taken, its task's ``_run`` let go: no other run of it is in flight, so
        the task is the run's alone to move on): the record is kept, marked CANCELLED
        (``ok`` False, its error the shutdown's, never timed out), so the history shows
        the cut and the summaries count it cancelled, not failed; the task waits for the
        same attempt of the same slot (SCHEDULED, or RETRYING with its earlier attempts
        behind it), due when the run was, as :meth:`unstarted` leaves one a shutdown
        stopped before it started: a durable store runs it after the restart, as after
        a process's exit (at least once).  No retry, given-up slot or dead letter
        follows, and its dependents are told nothing (it has not ended); queued, written
        through the store and announced (:meth:`_due_again`).

        On a shared store (the run on a claim, its token in the record) the write is
        the run's settle, fenced by the token as any run's is: the row due again at its
        slot, the lease dropped, so another process runs it now; a lease lost before it
        writes nothing (the holder's decision stands), as for any settle.

        The last run out of an overlapping task's ``flight`` (``Overlap.CANCEL_OTHER`` or
        ``ALLOW``) keeps its slot too: the slot queued behind it waits behind it
        (:func:`~lldsched.schedules.catchup.slot_first`), as behind a failed last run's
        retries (:meth:`~lldsched.core.overlapping.OverlappingRuns._after_flight`), its
        entry dead.  One a newer slot cancelled (``OverlapCancelled``) is not kept: that
        slot superseded it.

        None, changing nothing, where a verb settled the task since the run began
        (cancelled, paused, removed), or for a run a newer slot cancelled: the caller
        records it as any run that ended so."""
        task = run.task
        if task.status is not RUNNING or record.misfire is not None or not self.holds(task):
            return None
        if flight is not None:  # the last run out: the pending slot waits behind this one
            pending, flight.pending, flight.queued = flight.pending, None, 0
            if pending is not None:
                task._schedule = slot_first(task._schedule, pending)
        record = record._replace(timed_out=False, misfire=SHUTDOWN_CUT)
        self._keep(task, record)
        self._due_again(run, record)
        return record

    def unstarted(self, run: Run) -> bool:
        """The runtime began ``run`` and then could not start it because the scheduler
        shut down (a process-isolated run whose worker process never took it): its task
        waits for that attempt again, as a restart puts a run with no record back
        (SCHEDULED, or RETRYING with its earlier attempts behind it), due when it was due,
        the attempt unspent and nothing recorded.  So a run shutdown stopped before it
        started ends as one shutdown dropped before it began (docs/decisions/threaded.md, "A run
        shutdown stopped before it started"): queued, written through the store and
        announced (:meth:`_due_again`).

        False, changing nothing, where a verb settled the task since the run began
        (cancelled, paused, removed), where runs of the task overlap, or where a shared
        store's claim holds the run (only the run's record settles a claim, fenced by
        its token): the caller records the run as it ended, a cut
        (:meth:`cut_by_shutdown`) that keeps its task due where it can."""
        task = run.task
        if (
            task._run is not run
            or task.status is not RUNNING
            or task._flight is not None
            or run.token is not None
            or not self.holds(task)
        ):
            return False
        task._run = None
        self._due_again(run, None)
        return True

    def _due_again(self, run: Run, record: ExecutionRecord | None) -> None:
        """``run``, which a shutdown stopped (cut, with its ``record``; or before it
        started, with none), leaves its task due again as a restart leaves a run with no
        record: the same attempt of the same slot (SCHEDULED, or RETRYING with its
        earlier attempts behind it), due when the run was.  The one place of that rule,
        for :meth:`_kept_due` and :meth:`unstarted`, on both runtimes.

        Queued at that instant, as every task left due after a shutdown is (the
        threaded shutdown puts back what it dropped: ``TaskQueue.put_back``), so that
        ``pending()``, ``queue_stats()`` and ``metrics()`` list it with the tasks never
        started; nothing pops it any more (the timer is stopped, the simulation starts
        nothing more, and the threaded drain hands out nothing once it has cut:
        ``Stopping._drain``), and a durable store runs it after the restart.  Written
        through the store and announced (RUNNING -> SCHEDULED or RETRYING, with the
        record)."""
        task = run.task
        attempt = task.attempt = run.attempt - 1
        task._slot = run.slot
        task.status = runnable(attempt)
        due = task.next_run_at = run.due
        self._queue.push(task, due)
        if self._store is not None or self.emit is not None:
            self._write_and_publish(task, RUNNING, record)
