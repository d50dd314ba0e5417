"""A run's transitions: the edges a run takes, from its due entry to what it leads to.

:class:`RunTransitions` is the part of :class:`~lldsched.core.machine.SchedulerCore`
that a runtime calls for every run: :meth:`~RunTransitions.begin` starts the attempt
a due entry stands for (or answers None for a tombstone, or a dependent held back),
:meth:`~RunTransitions.finish` records the attempt and moves its task on, and
:meth:`~RunTransitions._after` is the one home of what a finished run leads to
(reschedule, retry, give the slot up, succeed or fail; every edge of the lifecycle is
:data:`~lldsched.core.lifecycle.TRANSITIONS`).  A run
of a task removed while it was in flight ends in :meth:`~RunTransitions._removed_run`.

This is the run path, written plainly but for two speed tricks, each measured to buy
more than the 10 % of a headline figure a trick must, each with its gain named where it
is: the ``Run`` and the record built by ``tuple.__new__`` (:meth:`~RunTransitions.begin`,
``_record_of``), and ``_stats``, ``_keep`` and ``_enqueue`` inlined in
:meth:`~RunTransitions.finish`; the third, the snapshot and event built the same way,
is :mod:`lldsched.core.publishing`'s (docs/decisions/lifecycle.md, "The run path: three
speed tricks, the others gone").  Several runs
of one task in flight are :mod:`lldsched.core.overlapping`'s, a dependent held back
:mod:`lldsched.core.waiting`'s, the slots a run skipped :mod:`lldsched.core.decided`'s,
the store write and the event :mod:`lldsched.core.publishing`'s.  A run a shutdown cut,
or stopped before it started, keeps its task due (:mod:`lldsched.core.shutdowncuts`), and
what fails a task loudly, a step that raised or a schedule or retry policy of one's own
that did, is :mod:`lldsched.core.broken`'s: the bases of :class:`RunTransitions`, so the
core's one class of a run's edges has them all.
"""

from __future__ import annotations

from lldsched.core.broken import BrokenRuns
from lldsched.core.context import RunContext
from lldsched.core.names import (
    BUFFER_ONE,
    CANCELLED,
    FAILED,
    GIVEN_UP,
    MAX_SKIPPED,
    OVERLAP_CANCELLED,
    PAUSED,
    RETRYING,
    RUNNABLE,
    RUNNING,
    SCHEDULED,
    SUCCEEDED,
    Skipped,
)
from lldsched.core.overlapping import buffered
from lldsched.core.shutdowncuts import ShutdownCuts
from lldsched.core.task import Entry, Flight, Run, RunStats, ScheduledTask
from lldsched.logs import Repeats
from lldsched.model import ExecutionRecord, TaskEvent, TaskStatus
from lldsched.policies import RetryPolicy, checked_backoff, checked_verdict, retry_draws
from lldsched.schedules.base import SteppedPast, next_run_and_skipped, say_stepped_past
from lldsched.schedules.catchup import CatchUp, unwrap

__all__ = ["RunTransitions", "cancelled_error", "rearmed", "timeout_error"]

_new_tuple = tuple.__new__  # a Run or record positionally: see _record_of


class RunTransitions(ShutdownCuts, BrokenRuns):
    """The edges a run takes (begin, finish, what it leads to; a run a shutdown stopped and
    a step that broke, from its bases): mixed into the core."""

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
        # Positional, by tuple.__new__ (the run path's one speed trick, with the record's
        # in _record_of, where the gain is named); Run's fields in order are task,
        # attempt, due, slot, worker, context, action, options, name, token: the run
        # keeps the definition it began with (docs/decisions/changing-a-task.md,
        # "Changing a task").
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

        ``result`` is the action's return value as text (:mod:`lldsched.core.results`).
        A run is timed out when it took longer than its task's timeout, or when the
        runtime says so (``timed_out``: it cancelled a coroutine at its timeout).
        """
        task = run.task
        record = self._record_of(run, started, finished, error, result, timed_out)
        flight = task._flight
        if flight is None:
            task._run = None
        else:  # runs may overlap: this one leaves the flight, cancelled or not
            record = self._leave(flight, run, record)
        error = record.error
        # _stats(), _keep() and _enqueue() (in _move_on) are inlined on the run path:
        # as calls, +10.1 % instructions a dispatched job (42,233 -> 46,515,
        # benchmarks/threaded_instructions.py dispatch) and +9.0 % a simulated run
        # (49,001 -> 53,414, benchmarks/sim_instructions.py sim), measured 2026-12-07.
        stats = task._stats
        if stats is None:  # _stats(), inlined
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
        stats.add(record)  # _keep(), inlined
        if self._on_record is not None:
            self._on_record(record)
        if error is None:  # the tally's (core/tally.py): one increment a successful run
            self._tally.ok += 1
        else:
            self._tally.add(record)
        previous = task.status
        if previous is not CANCELLED:
            self._move_on(task, outcome, due, flight)
        elif not self.holds(task):  # removed mid-run: it is forgotten
            return self._removed_run(task, record)
        else:  # cancelled mid-run: the record is kept, nothing follows; the plan in
            task._schedule = unwrap(task._schedule)  # front, which judged it, goes
        # Published (store and listeners).  A run that skipped slots is written with
        # their records, in one store write (decided.py).
        if skipped and previous is not CANCELLED:  # cancelled: nothing was skipped, all stopped
            self._skipped_by_run(
                task, record, skipped, previous=previous, due=due, at=finished, token=run.token
            )
        elif self._store is not None or self.emit is not None:
            self._write_and_publish(task, previous, record)
        if self._deps is not None:
            self._upstream_moved(task, record)
        self._retire_after_run(task, finished)
        return record

    def _record_of(
        self,
        run: Run,
        started: float,
        finished: float,
        error: str | None,
        result: str | None,
        timed_out: bool,
    ) -> ExecutionRecord:
        """The record of ``run``, which :meth:`finish` was told of: timed out by its
        task's timeout too, and of no duration when the wall clock was set back while it
        ran (docs/decisions/persistence.md, "A run in flight across a wall-clock jump")."""
        task, attempt, was_due, slot, worker, _, _, _, name, token = run
        if finished < started:
            started = finished
        timeout = task._options.timeout
        timed_out = timed_out or (timeout is not None and finished - started > timeout)
        if timed_out and error is None:
            error = timeout_error(finished - started, budget=timeout)
        # The run path's speed trick: this record and the Run in begin() are built
        # positionally by tuple.__new__ (a NamedTuple's own __new__ is a Python
        # function, and keywords cost a dict).  Built by their classes with keywords,
        # +27 % instructions a simulated run (53,414 -> 67,991,
        # benchmarks/sim_instructions.py sim, 2026-12-07).  ExecutionRecord's fields in
        # order: task_id, name, attempt, due, slot, worker, started, finished, ok, error,
        # timed_out, misfire, result, token, node.
        return _new_tuple(
            ExecutionRecord,
            (
                task.id, name, attempt, was_due, slot, worker, started, finished,
                error is None, error, timed_out, None, result if error is None else None, token,
                self.node,
            ),
        )  # fmt: skip

    def _move_on(
        self,
        task: ScheduledTask,
        outcome: TaskStatus,
        due: float | None,
        flight: Flight | None,
    ) -> None:
        """Move ``task``, whose run just ended (its task not cancelled meanwhile), to
        what :meth:`_after` decided: its status, slot and attempt, and its entry at
        ``due`` or the dead letter.  A task paused mid-run stays paused (``resume()``
        queues it at ``due``), unless the run ended it."""
        if task.status is RUNNING or (task.status is PAUSED and due is None):
            task.status = outcome
        if outcome is SCHEDULED:  # a new slot, with a fresh attempt counter
            assert due is not None
            task._slot = due
            task.attempt = 0
        if task.status is PAUSED:
            task.next_run_at = due
        elif due is not None:
            task.next_run_at = due  # _enqueue(), inlined (see finish)
            if flight is None or not flight.queued or flight.queued != task.generation:
                self._queue.push(task, due)  # else its live entry stays (_after_flight)
        else:
            task.next_run_at = None
            if outcome is FAILED:
                self._dead[task.id] = None

    def _retire_after_run(self, task: ScheduledTask, at: float) -> None:
        """A run ended at ``at``: its task, if that ended it, is held for the retention
        from then, and the tasks whose retention ran out retire."""
        retention = self._retention
        if retention.keep is None:
            return
        if task.status is SUCCEEDED or task.status is CANCELLED:
            retention.finished(task.id, at)
        if len(retention.held_since) > retention.retire_above:  # else none can retire
            self._retire(at)

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
        ``retry.fail_after_given_up`` slots in a row); a one-off task is FAILED.  A
        successful run of a task cancelled or removed while it ran is not shown to the
        schedule (a Window would count it): CANCELLED, nothing follows.

        A run ``Overlap.CANCEL_OTHER`` cut (``misfire`` :data:`OVERLAP_CANCELLED`, the
        last run out of its flight with no slot queued behind it: :meth:`_after_flight`)
        is a cancellation, neither a failure nor a success: never retried, no slot given
        up, and its task goes on as after a success; its schedule is shown its record as
        it was recorded (not ``ok``), so a ``Window`` counts it toward nothing
        (docs/decisions/overlap.md, "A run CANCEL_OTHER cut is no success").
        """
        original = record  # as the run left it
        ok = record.ok  # a NamedTuple field: read once (each read is a generic lookup on 3.11)
        if not ok and record.misfire is not OVERLAP_CANCELLED:  # a cut: never retried
            retry = task._options.retry
            try:
                allowed = retry.allows_retry(record.attempt)
                if type(retry) is not RetryPolicy:  # one's own: its answer checked
                    allowed = checked_verdict(retry, "allows_retry", record.attempt, allowed)
                if allowed:
                    draws = retry_draws(self._seed, task.id, record.slot, record.attempt)
                    delay = retry.backoff(record.attempt, draws)
                    if type(retry) is not RetryPolicy:  # one's own: its answer checked
                        delay = checked_backoff(retry, record.attempt, delay)
                    return RETRYING, record.finished + delay, record, ()
            except Exception as exc:  # a policy of one's own that fails: as a schedule's
                return self._fails_loudly(task, original, exc, policy=retry)
            record = record._replace(misfire=GIVEN_UP)  # if the schedule has a next slot
        elif task.status is CANCELLED:  # a success (or a cut) of a task cancelled mid-run
            # Cancelled or removed while it ran: nothing follows a successful run, so its
            # schedule is not asked, and a Window counts it toward nothing (it counted
            # under an id a task registered since may hold: docs/decisions/lifecycle.md,
            # "A run that ends after its task was cancelled counts toward nothing").
            return CANCELLED, None, record, ()
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
        if ok or record.misfire is OVERLAP_CANCELLED:  # a cut goes on as a success does
            if due is None:
                return SUCCEEDED, None, record, ()
            return SCHEDULED, due, record, skipped
        if due is None:  # no next slot (a one-off task): the dead letter, as ever
            return FAILED, None, original, ()
        stats.given_up += 1
        retry = task._options.retry
        try:
            fails = retry.fails_after(stats.given_up)
            if type(retry) is not RetryPolicy:  # one's own: its answer checked
                fails = checked_verdict(retry, "fails_after", stats.given_up, fails)
            if fails:
                return FAILED, None, record, ()
        except Exception as exc:  # a policy of one's own that fails: as a schedule's
            return self._fails_loudly(task, original, exc, policy=retry)
        return SCHEDULED, due, record, skipped


def rearmed(begun: float, *, timeout: float | None, now: float) -> float | None:
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


def timeout_error(duration: float, *, budget: float | None) -> str:
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
