"""A run's transitions: the edges a run takes, from its due entry to what it leads to.

:class:`RunTransitions` is the part of :class:`~lldsched.core.machine.SchedulerCore`
that a runtime calls for every run: :meth:`~RunTransitions.begin` starts the attempt
a due entry stands for (or answers None for a tombstone, or a dependent held back),
:meth:`~RunTransitions.finish` records the attempt and moves its task on, and
:meth:`~RunTransitions._after` is the one home of what a finished run leads to
(reschedule, retry, give the slot up, succeed or fail; the lifecycle is in
:mod:`lldsched.core.machine`'s docstring and :mod:`lldsched.core.lifecycle`).  A run
of a task removed while it was in flight ends in :meth:`~RunTransitions._removed_run`.

This is the run path: :meth:`~RunTransitions.begin` and
:meth:`~RunTransitions.finish` build the ``Run`` and the record positionally and
inline the small helpers, the run path's speed trick (see ``finish``).  Several runs
of one task in flight are :mod:`lldsched.core.overlapping`'s, a dependent held back
:mod:`lldsched.core.waiting`'s, the slots a run skipped :mod:`lldsched.core.decided`'s,
the store write and the event :mod:`lldsched.core.publishing`'s.
"""

from __future__ import annotations

import logging

from lldsched.core.context import RunContext
from lldsched.core.names import (
    BUFFER_ONE,
    CANCELLED,
    FAILED,
    GIVEN_UP,
    MAX_SKIPPED,
    PAUSED,
    RETRYING,
    RUNNABLE,
    RUNNING,
    SCHEDULED,
    SHUTDOWN_CUT,
    SUCCEEDED,
    Skipped,
    runnable,
)
from lldsched.core.overlapping import buffered
from lldsched.core.parts import CoreParts
from lldsched.core.task import Entry, Flight, Run, RunStats, ScheduledTask
from lldsched.errors import ScheduleError, error_text
from lldsched.logs import JOBS, Repeats
from lldsched.model import ExecutionRecord, TaskEvent, TaskStatus
from lldsched.policies import RetryPolicy, checked_backoff, retry_draws
from lldsched.schedules.base import SteppedPast, next_run_and_skipped, say_stepped_past
from lldsched.schedules.catchup import CatchUp, slot_first

__all__ = ["RunTransitions", "cancelled_error", "rearmed", "timeout_error"]

log = logging.getLogger(JOBS)

_new_tuple = tuple.__new__  # a Run or record positionally: see finish


class RunTransitions(CoreParts):
    """The edges a run takes (begin, finish, what it leads to): mixed into the core."""

    # The WARNING of a schedule stepped past its answer, once a window per task of this
    # core (schedules/base.py, SteppedPast); made at the first.  No lock of its own:
    # the runtime serialises the core's calls.
    _stalled: Repeats | None = None

    def begin(self, entry: Entry, worker: int, *, token: int | None = None) -> Run | None:
        """Start the attempt ``entry`` stands for, or return None for a tombstone.

        ``token`` is the fencing token of the claim a shared store gave the run
        (docs/CLUSTER.md): its context and its record carry it."""
        task = self._queue.live(entry)
        if task is None:
            return None
        previous = task.status
        if previous not in RUNNABLE:
            # A live entry of a running task: a slot its overlap policy queued (_overlap).
            if previous is RUNNING:
                return self._alongside(task, entry, worker, token=token)
            return None
        # The readiness check before dispatch: a dependent whose upstreams have not all
        # succeeded since its previous slot is held back (BLOCKED, or FAILED).
        if (
            self._deps is not None
            and previous is SCHEDULED
            and task._options.depends_on
            and self._held(task, token)
        ):
            return None
        task.status = RUNNING
        attempt = task.attempt = task.attempt + 1
        due = entry[0]
        options = task._options
        context = None
        if options.pass_context:
            context = RunContext(task.id, task.name, attempt, due, worker, token)
        # Positional (the run path's speed trick: see finish); Run's fields in order are
        # task, attempt, due, slot, worker, context, action, options, name, token: the run
        # keeps the definition it began with (docs/decisions/changing-a-task.md, "Changing a task").
        run = task._run = _new_tuple(
            Run,
            (
                task, attempt, due, task._slot, worker, context, task.action, options,
                task.name, token,
            ),
        )  # fmt: skip
        if task._flight is not None:  # CANCEL_OTHER or ALLOW (a slot test: bench_sim)
            run, late = self._overlap(task, run)
            if self._store is not None or self.emit is not None:
                self._write_and_publish(task, previous)
            self._record_late(task, late)  # what it skipped, heard after it began
            return run
        if self._store is not None or self.emit is not None:
            self._write_and_publish(task, previous)
        return run

    def finish(
        self,
        run: Run,
        started: float,
        finished: float,
        error: str | None,
        result: str | None = None,
        timed_out: bool = False,
    ) -> ExecutionRecord:
        """Record the attempt and move its task on: reschedule, retry, give the slot up,
        succeed or fail; then record the slots the run skipped.  Returns the run's record.

        ``result`` is the action's return value as text (:mod:`lldsched.core.results`),
        given by name or, by the two hot callers (the simulation's event loop, a
        worker's completion: a call with keywords is not specialised by CPython 3.11),
        in its place.
        A run is timed out when it took longer than its task's timeout, or when the
        runtime says so (``timed_out``: it cancelled a coroutine at its timeout).
        """
        # Four steps, marked "-- ...": kept in one body, as the run path's speed trick
        # (below) asks; the move-on step as a method of its own cost 1.3 % instructions
        # a simulated run (43,368 -> 43,919, benchmarks/sim_instructions.py sim).
        # -- the run's record
        task, attempt, was_due, slot, worker, _, _, _, name, token = run  # each read once
        # The wall clock was set back while it ran: duration 0
        # (docs/decisions/persistence.md, "A run in flight across a wall-clock jump").
        if finished < started:
            started = finished
        timeout = task._options.timeout
        timed_out = timed_out or (timeout is not None and finished - started > timeout)
        if timed_out and error is None:
            error = timeout_error(finished - started, timeout)
        # The run path's speed trick, one group (each part alone buys under 10 %): the
        # record here and the Run in begin() are built positionally by tuple.__new__ (a
        # NamedTuple's own __new__ is a Python function, and keywords cost a dict), and
        # _stats() and _enqueue() are inlined below.  Together -12.2 % instructions a
        # simulated run (48,410 -> 42,497, benchmarks/sim_instructions.py on bench_sim's
        # workload; -14.9 % on the year of cron).  ExecutionRecord's fields in order:
        # task_id, name, attempt, due, slot, worker, started, finished, ok, error,
        # timed_out, misfire, result, token, node.
        record = _new_tuple(
            ExecutionRecord,
            (
                task.id, name, attempt, was_due, slot, worker, started, finished,
                error is None, error, timed_out, None, result if error is None else None, token,
                self.node,
            ),
        )  # fmt: skip
        # -- its counts, and what the run leads to
        flight = task._flight
        if flight is None:
            task._run = None
        else:  # runs may overlap: this one leaves the flight, cancelled or not
            record = self._leave(flight, run, record)
            error = record.error
        stats = task._stats
        if stats is None:  # _stats(), inlined (the run path's speed trick, above)
            stats = task._stats = self._new_stats()
        stats.run_count += 1
        if error is not None:
            stats.failure_count += 1
            stats.last_error = error
            if self._cut and self._cut.pop(id(run), None) is run and task._run is None:
                kept = self._kept_due(run, record, flight)  # a shutdown cut it: still due
                if kept is not None:
                    return kept
        elif stats.given_up:
            stats.given_up = 0  # a successful run ends a streak of given-up slots
        if flight is None:
            outcome, due, record, skipped = self._after(task, record, stats)
        elif task._run is not None:  # other runs of the task are still in flight
            return self._record_alongside(task, record, stats)
        else:
            outcome, due, record, skipped = self._after_flight(task, flight, record, stats)
        # _keep(), inlined: as a call, +2.5 % instructions a dispatched job (35,362 ->
        # 36,257, threaded_instructions.py dispatch) and +2.2 % a simulated run (43,573
        # -> 44,529, sim_instructions.py sim)
        stats.add(record)
        if self._on_record is not None:
            self._on_record(record)
        if error is None:  # the tally's (core/tally.py): one increment a successful run
            self._tally.ok += 1
        else:
            self._tally.add(record)
        # -- the task moves on: its status, slot and attempt, its entry or the dead letter
        previous = task.status
        if previous is RUNNING or (previous is PAUSED and due is None):
            task.status = outcome  # paused mid-run, a run that ends its task still ends it
        if previous is not CANCELLED:  # cancelled mid-run: the record is kept, nothing follows
            if outcome is SCHEDULED:  # a new slot, with a fresh attempt counter
                assert due is not None
                task._slot = due
                task.attempt = 0
            if task.status is PAUSED:  # paused mid-run: resume() queues it at ``due``
                task.next_run_at = due
            elif due is not None:
                task.next_run_at = due  # _enqueue(), inlined (the run path's speed trick)
                if flight is None or not flight.queued or flight.queued != task.generation:
                    self._queue.push(task, due)  # else its live entry stays (_after_flight)
            else:
                task.next_run_at = None
                if outcome is FAILED:
                    self._dead[task.id] = None
        elif not self.holds(task):  # removed mid-run: it is forgotten
            return self._removed_run(task, record)
        # -- published (store and listeners), then what follows.  A run that skipped
        # slots is written with their records, in one store write (decided.py); one that
        # skipped none makes the same one test as before it was.
        if skipped and previous is not CANCELLED:  # cancelled: nothing was skipped, all stopped
            self._skipped_by_run(
                task, record, skipped, previous=previous, due=due, at=finished, token=token
            )
        elif self._store is not None or self.emit is not None:
            self._write_and_publish(task, previous, record)
        if self._deps is not None:
            self._upstream_moved(task, record)
        retention = self._retention
        if retention.keep is not None:
            if task.status is SUCCEEDED or task.status is CANCELLED:
                retention.finished(task.id, record.finished)
            if len(retention.held_since) > retention.retire_above:  # else none can retire
                self._retire(record.finished)
        return record

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

    def _removed_run(self, task: ScheduledTask, record: ExecutionRecord) -> ExecutionRecord:
        """The run of a task removed while it was in flight has ended: its record is
        announced (a listener hears every run), and nothing else is touched: the store
        forgot the task, and the id, its dependents' waits and its retention may belong
        to a task registered since under the same id (docs/decisions/lifecycle.md, "A task removed
        mid-run")."""
        if self.emit is not None:
            self.emit(TaskEvent(task.id, task.name, CANCELLED, CANCELLED, self.clock.now(), record))
        return record

    def _after(
        self, task: ScheduledTask, record: ExecutionRecord, stats: RunStats
    ) -> tuple[TaskStatus, float | None, ExecutionRecord, Skipped]:
        """What a finished run leads to, whatever the task's status is now: the status
        it takes (SCHEDULED, RETRYING, SUCCEEDED or FAILED), when it is due next, the
        run's record (marked GIVEN_UP when the run gives its slot up) and the slots it
        skipped (recorded SKIPPED after it).

        The one home of the rule for a slot whose attempts ran out: a task whose
        schedule has a next slot gives this one up and goes on to the slot the
        schedule answers, as after a success (FAILED only after
        ``retry.fail_after_given_up`` slots in a row); a one-off task is FAILED.
        """
        original = record  # as the run left it
        ok = record.ok  # a NamedTuple field: read once (each read is a generic lookup on 3.11)
        if not ok:
            retry = task._options.retry
            try:
                if retry.allows_retry(record.attempt):
                    draws = retry_draws(self._seed, task.id, record.slot, record.attempt)
                    delay = retry.backoff(record.attempt, draws)
                    if type(retry) is not RetryPolicy:  # one's own: its answer checked
                        delay = checked_backoff(retry, record.attempt, delay)
                    return RETRYING, record.finished + delay, record, ()
            except Exception as exc:  # a policy of one's own that fails: as a schedule's
                return self._fails_loudly(task, original, exc, policy=retry)
            record = record._replace(misfire=GIVEN_UP)  # if the schedule has a next slot
        schedule = task._schedule
        due: float | None
        skipped: Skipped
        try:
            counted = getattr(schedule, "next_on_grid", None)  # a fixed rate's, wrapped or not
            if counted is not None:  # counted from its grid's origin, not the slot
                due, skipped, task._grid = counted(record, task._grid, MAX_SKIPPED)
            else:
                due, skipped = next_run_and_skipped(schedule, record, limit=MAX_SKIPPED)
        except SteppedPast as stepped:  # rare: a schedule of one's own answered its slot
            due, skipped = stepped.due, ()
            if self._stalled is None:  # made at the first: most cores never need it
                self._stalled = Repeats()
            say_stepped_past(stepped, self._stalled)
        except Exception as exc:  # a broken schedule is the library user's bug: fail loudly
            return self._fails_loudly(task, original, exc, schedule=schedule)
        if type(schedule) is CatchUp and schedule.spent:  # the catch-up is over
            task._schedule = schedule.inner
        if skipped and task._options.overlap is BUFFER_ONE:
            # BUFFER_ONE: the slots that came due while it ran are one run, for the
            # latest of them, due at once; the earlier ones are coalesced into it.
            assert due is not None
            try:  # its slot_after, asked on: a broken one fails the task as next_run's does
                due, skipped = buffered(
                    schedule, record.slot, skipped, before=due, origin=task._grid
                )
            except Exception as exc:
                return self._fails_loudly(task, original, exc, schedule=schedule)
        if ok:
            if due is None:
                return SUCCEEDED, None, record, ()
            return SCHEDULED, due, record, skipped
        if due is None:  # no next slot (a one-off task): the dead letter, as ever
            return FAILED, None, original, ()
        stats.given_up += 1
        retry = task._options.retry
        try:
            if retry.fails_after(stats.given_up):
                return FAILED, None, record, ()
        except Exception as exc:  # a policy of one's own that fails: as a schedule's
            return self._fails_loudly(task, original, exc, policy=retry)
        return SCHEDULED, due, record, skipped

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
            self._broke_dependents(task, run, stuck)

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
            self._broke_dependents(task, None, True)

    def _broke_dependents(self, task: ScheduledTask, run: Run | None, stuck: bool) -> None:
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


def rearmed(begun: float, timeout: float | None, now: float) -> float | None:
    """The deadline of a run in flight, begun at ``begun``, that its task's ``timeout``
    now holds it to (a modify or a replace changed it during the run): ``None`` for
    none (disarmed), ``now`` for one already past (its flag goes up at once), else
    ``begun + timeout``.  The one rule of a re-armed run, for the threaded runtime's
    thread runs and coroutine runs and the simulation's coroutine runs
    (docs/decisions/changing-a-task.md, "A run in flight is held to its task's timeout now")."""
    if timeout is None:
        return None
    deadline = begun + timeout
    return now if deadline <= now else deadline


def cancelled_error(budget: float) -> str:
    """The error text of a coroutine run cancelled at its deadline, ``budget`` seconds
    after its begin (the budget it was armed or re-armed with, not the task's timeout
    now): one wording for the threaded runtime's loop and the simulation's."""
    return f"TimeoutError: cancelled at its {budget:g} s timeout"


def timeout_error(duration: float, budget: float | None) -> str:
    """The error text of a run recorded ``timed_out`` that raised nothing of its own:
    the time it ran against ``budget``, or, a run that measured no more than its budget
    (its deadline stopped it: the deadline counts from the run's begin, its duration
    from the action's start, a little later), the budget its deadline was armed with.
    One wording for the core, which judges a run by its task's timeout at its finish,
    and for the threaded runtime, whose thread run's deadline may have raised its flag
    (``RunExecution._complete``).  ``budget`` None: a runtime said the run timed out and
    the task has no timeout (any more)."""
    if budget is None:
        return f"TimeoutError: ran {duration:.6g} s, over its budget"
    if duration > budget:
        return f"TimeoutError: ran {duration:.6g} s, over its {budget:g} s budget"
    return f"TimeoutError: stopped at its {budget:g} s timeout"
