"""Runs: what the workers and the event loop do with a due entry, under the one lock
where they touch the core.

A worker (:class:`~lldsched.threaded.pool.WorkerPool`) takes an entry from the
hand-off queue and asks :meth:`~RunExecution._prepare` to begin it (a stale entry is
dropped there, by generation, and settled); it runs the action *without* the lock
(:meth:`~RunExecution._execute`), then :meth:`~RunExecution._complete` records the
outcome in the core.  An action that returns an awaitable is handed to the event
loop (:class:`~lldsched.threaded.coroutines.CoroutineRunner`), which reports back
through :meth:`~RunExecution._finish_coroutine`; a task registered with
``isolation="process"`` runs in a child (:class:`~lldsched.threaded.processes.ProcessPool`)
while its worker waits.  Every entry the timer popped is settled exactly once
(:meth:`~RunExecution._settle`): that count is what ``wait_idle()`` and the drain
wait on.  A failed attempt's log line is :mod:`~lldsched.threaded.failurelog`'s (mixed
in: :class:`~lldsched.threaded.failurelog.FailureLog`).

An action that raises a ``BaseException`` that is not an ``Exception`` (``SystemExit``
from ``sys.exit()``, a ``KeyboardInterrupt`` raised by hand) is a failed run like any
other: the worker thread goes on, as the event loop does for a coroutine.
"""

from __future__ import annotations

import logging

from lldsched.core.names import CANCELLED, PAUSED
from lldsched.core.results import must_await, result_text
from lldsched.core.runs import timeout_error
from lldsched.core.task import Entry, Run, ScheduledTask
from lldsched.errors import NEVER_STARTED_OVERLAP, SchedulerStateError, error_text
from lldsched.logs import JOBS
from lldsched.model import ExecutionRecord
from lldsched.threaded.coroutines.flights import LEASE_GONE
from lldsched.threaded.coroutines.runner import SHUT_DOWN_UNRUN
from lldsched.threaded.failurelog import FailureLog, failure_line
from lldsched.threaded.parts import Begun, Explained, Outcome
from lldsched.threaded.processes.pool import DRAIN_OUT_OF_TIME, KILLED
from lldsched.threaded.processes.runs import NOT_SENT

__all__ = ["RunExecution", "stopped_since_begun"]

log = logging.getLogger(JOBS)

UNSTARTED = object()
"""An outcome's awaitable for a process-isolated run a shutdown stopped before a child
took it (:meth:`~lldsched.threaded.processes.ProcessPool.run` answered None): it is put
back as unbegun (:meth:`SchedulerCore.unstarted
<lldsched.core.runs.RunTransitions.unstarted>`), not recorded.  In the awaitable's place
so that the run path tests nothing more: a thread run's outcome has None there."""

CUT = object()
"""An outcome's awaitable for a process-isolated run whose worker process a shutdown
killed (``drain=False``, or a drain out of time): recorded as it ended, its task kept
due (:meth:`SchedulerCore.cut_by_shutdown
<lldsched.core.runs.RunTransitions.cut_by_shutdown>`).  In the awaitable's place, as
:data:`UNSTARTED` is."""

_KILLED_BY_SHUTDOWN = (f"CancelledError: {KILLED} ", f"CancelledError: {DRAIN_OUT_OF_TIME}")
"""How the error of a run whose worker process a shutdown killed begins
(:meth:`~lldsched.threaded.processes.ProcessPool.kill_all`: without a drain, or a drain
out of time, :func:`~lldsched.threaded.processes.pool.killed_by_shutdown`)."""


class RunExecution(FailureLog):
    """Mixed into Scheduler: beginning, running and completing attempts."""

    def _prepare(self, entry: Entry, worker: int) -> Begun | None:
        """The pool's ``prepare``, under the lock: begin the attempt ``entry`` stands for,
        read the instant it starts (its record's ``started``, the job's second item) and
        arm its timeout from that same reading; None for a tombstone,
        settled here, or for an entry whose task a replace made a loop task (``async
        def``) since the timer handed it out: handed to the loop, which begins it."""
        loop_ids = self._loop_ids
        if loop_ids and entry[3] in loop_ids:
            self._coroutines.put((entry,))
            return None
        try:  # free until it raises (3.11)
            run = self._begin(entry, worker)
        except BaseException as exc:  # (rare) a bug, or the clock an event reads: settled
            self._step_raised(entry[3], None, exc, due=entry[0])
            self._settle(1)
            return None
        if run is None:  # a tombstone: cancelled or paused after the timer popped it
            self._settle(1)
            return None
        try:  # the run's start, read once: its record's and its deadline's
            begun = self._clock.now()
        except Exception as exc:  # (rare) the clock raised: failed unrun, settled
            outcome = self._clock_raised(run, exc)
            self._complete((run, outcome[0]), outcome)
            return None
        context = run.context
        if context is not None:
            timeout = run.options.timeout
            if timeout is not None:
                self._arm_deadline(begun + timeout, context)
        return run, begun

    def _execute(self, job: Begun) -> Outcome:
        """The pool's ``execute``, without the lock: call the action (or have a child
        process run it) and time it, from the instant :meth:`_prepare` read as it began
        the run (the one its deadline counts from: a worker slow to get to the action
        under load counts the delay in the run's duration, never in its lateness); an
        awaitable it returns is passed on, not awaited."""
        run, started = job
        if run.options.isolation != "thread":  # the definition the run began with
            return self._execute_in_process(run)
        now = self._clock.now
        try:  # free until it catches (3.11): the body is the run path as it was
            try:
                raised, value = run.invoke()
            except BaseException as exc:  # SystemExit, KeyboardInterrupt: a failed run too
                return started, now(), error_text(exc), None, None, False, exc
            if value is None:  # the common case: no result text to build
                if raised is None:
                    return started, now(), None, None, None, False, None
                return started, now(), error_text(raised), None, None, False, raised
            if must_await(value):  # a coroutine: the event loop runs it, this worker moves on
                return started, started, None, None, value, False, None
            return started, now(), None, result_text(value), None, False, None
        except Exception as exc:  # (rare) the clock's now() raised: failed, not stuck RUNNING
            return self._clock_raised(run, exc)

    def _clock_raised(self, run: Run, exc: Exception) -> Outcome:
        """The outcome of a run whose time the injected clock's ``now()`` raised instead of
        reading (rare): failed with the clock's error, so it is recorded, logged with the
        clock's traceback and settled like any failed run, not left RUNNING with its
        worker dead.  What the action did, if it ran, is not recorded: its end has no
        time to carry it.  (``error_text`` and ``result_text`` never raise: only the
        clock can.)  Its time and error are :meth:`_clock_failure`'s."""
        at, error = self._clock_failure(run, exc)
        return at, at, error, None, None, False, exc

    def _clock_failure(self, run: Run, exc: Exception) -> tuple[float, str]:
        """The one rule of a run whose time the clock raised instead of reading, a thread
        run's (:meth:`_clock_raised`) and a coroutine run's (the runner's
        ``clock_raised``): (its start and finish, the error it is recorded failed with).
        The instant is the timer's last reading (the run's due instant before the
        first)."""
        woke = self._last_look.woke
        at = woke if woke is not None else run.due
        return at, f"{error_text(exc)} (raised by the scheduler's clock, reading this run's time)"

    def _execute_in_process(self, run: Run) -> Outcome:
        """Run a process-isolated attempt: this worker waits for its child (killed at
        the timeout: the worker is free as soon as the kill is reaped)."""
        task = run.task
        options = run.options  # the definition the run began with, as invoke() calls
        action = run.action
        assert action is not None  # registration resolved the import path
        path = f"{action.__module__}:{action.__qualname__}"  # checked at registration

        def stopped() -> str | None:
            """The error of this run if it was stopped since it began, read under the
            lock: a cancel or a pause, its lease gone, or a newer run
            ``Overlap.CANCEL_OTHER`` began (each found no child of it to kill); None if it
            was not, and it is sent."""
            with self._lock:
                why = stopped_since_begun(task)
                if why is None and self._lease_gone(run) is not None:  # as _stop_lost says it
                    return f"CancelledError: {LEASE_GONE} {NOT_SENT}"
                if why is None:  # a newer run's flag: the core words "before it started"
                    if _overlapped(run) is not None:
                        return NEVER_STARTED_OVERLAP
                    if task._options.timeout != options.timeout:  # a retime found no child
                        self._processes.retime(task.id, task._options.timeout)
                    return None
            return f"CancelledError: task {why} {NOT_SENT}"  # as _stop_running says it

        try:
            ended = self._processes.run(
                task.id,
                path,
                options.args,
                options.kwargs,
                timeout=options.timeout,
                stopped=stopped,
            )
        except Exception as exc:  # no process (the system refused one, or not POSIX)
            now = self._clock.now()
            return now, now, error_text(exc), None, None, False, None
        if ended is None:  # a shutdown closed the pool before a child took it: never sent
            now = self._clock.now()
            unsent = f"CancelledError: the scheduler shut down {NOT_SENT}"  # if not put back
            return now, now, unsent, None, UNSTARTED, False, None
        started, finished, error, result, timed_out, told = ended
        if error is not None and error.startswith(_KILLED_BY_SHUTDOWN):
            return started, finished, error, result, CUT, timed_out, told
        return started, finished, error, result, None, timed_out, told

    def _to_workers(self, entries: list[Entry]) -> None:
        """Entries the loop was handed whose tasks a replace made thread or process tasks
        while they waited there (caller holds the lock): the workers begin them.  Once
        the pool is shut down they are settled unbegun, their tasks left due, as the
        entries shutdown drops are."""
        try:
            self._pool.put(entries)
        except SchedulerStateError:
            self._settle(len(entries))

    def _complete(self, job: Begun, outcome: Outcome) -> None:
        """The pool's ``complete``, under the lock: record the outcome in the core (an
        awaitable's once the event loop has run it), then settle the entry."""
        run = job[0]
        started, finished, error, result, awaitable, timed_out, explained = outcome
        context = run.context
        if context is not None:
            self._disarm_deadline(context)  # the run is over: its deadline is void
            if context.reason == "timeout" and not timed_out:  # its deadline raised its flag
                # Timed out whatever duration it measured: its start and its deadline are
                # one reading (_prepare), but a clock set back since, or a re-arm's
                # deadline recomputed from it, may make it measure less.  Its text
                # says the time it ran against the budget that judges it: the task's
                # timeout now, if the run went past it (as the core judges any run),
                # else the one its deadline was armed with (a modify since may have
                # dropped or raised the task's), at its begin or at its last re-arm.
                timed_out = True
                if error is None:
                    budget = run.task._options.timeout
                    duration = finished - started
                    if budget is None or duration <= budget:
                        rearmed = context._rearmed()
                        budget = run.options.timeout if rearmed is None else rearmed.budget
                    error = timeout_error(duration, budget=budget)
        if awaitable is not None:
            if awaitable is CUT:  # a shutdown killed its worker process: its task stays due
                self._cut_by_shutdown(run)
            elif awaitable is UNSTARTED:  # (rare) shutdown stopped it before a child took it
                if self._core.unstarted(run):  # its task waits for it, as if never begun
                    self._settle(1)
                    return
                # Recorded as it ended: a cut (its task kept due) where its record must be
                # written, a claim's settle or the last run out of a flight; failed where a
                # verb settled its task meanwhile, or another run of it is in flight.
                self._cut_by_shutdown(run)
            else:
                refused = self._coroutines.submit(run, started, awaitable)
                if refused is None:
                    why = stopped_since_begun(run.task) or _overlapped(run)
                    if why is None and self._coordinator is not None:  # no lease unshared
                        why = self._lease_gone(run)
                    if why is not None:  # the verb, the newer run or the renewal found none
                        self._coroutines.cancel_run(run, why)
                    return  # recorded by _finish_coroutine when it completes
                finished = self._clock.now()
                error = refused  # shut down, or its loop could not start: never ran
                if refused is SHUT_DOWN_UNRUN:  # a shutdown cut it: its task stays due
                    self._cut_by_shutdown(run)
        try:  # free until it raises (3.11)
            record = self._record(run, started, finished, error, result, timed_out)
        except BaseException as exc:  # (rare) a bug, or what the core asked: settled
            self._step_raised(run.task.id, run, exc)
            self._settle(1)
            return
        if not record.ok:
            self._log_then_settle(run, record, explained)
            return
        self._settle(1)

    def _step_raised(
        self, task_id: str, run: Run | None, exc: BaseException, *, due: float | None = None
    ) -> None:
        """A run's begin (``run`` None: the entry of ``task_id`` due at ``due``) or its
        record raised ``exc`` (caller holds the lock; rare): the core fails the task it
        left stuck (:meth:`SchedulerCore.broke <lldsched.core.runs.RunTransitions.broke>`);
        on a shared store the same, written fenced by the claim's token and its lease
        let go (:meth:`Coordinator.broke <lldsched.threaded.shared.Coordinator.broke>`).
        The caller settles the entry, so that ``wait_idle()``, a drain and the claims
        that wait for an idle worker count it done (its task not left RUNNING, nor the
        count of runs in flight one too high)."""
        coordinator = self._coordinator
        if coordinator is None:
            self._core.broke(task_id, run, exc, due=due)
        else:  # the core decides alike; its failure written fenced by the claim's token
            coordinator.broke(task_id, run, exc, due=due)

    def _loop_begin_raised(self, entry: Entry, exc: BaseException) -> None:
        """The event loop's begin of ``entry`` raised ``exc`` (caller holds the lock;
        rare): as :meth:`_step_raised`; the loop settles the entry as a tombstone."""
        self._step_raised(entry[3], None, exc, due=entry[0])

    def _record(
        self,
        run: Run,
        started: float,
        finished: float,
        error: str | None,
        result: str | None,
        timed_out: bool,
    ) -> ExecutionRecord:
        """``run``'s record, made by the core (caller holds the lock): the end of a
        worker's run and of a coroutine's.  Its finish, read off the clock on the worker
        or the loop, is first moved as a wall-clock jump says (:meth:`_jumped_since`),
        and the timer is woken where a shared store's feed may hold a wait the run
        decided."""
        lag = self._last_look.jumped_lag(finished)
        if lag is not None:  # it read the wall clock across a jump
            finished = self._jumped_since(finished, lag)
        record = self._core.finish(run, started, finished, error, result, timed_out)
        if self._coordinator is not None and self._coordinator.done(run):
            self._wake.notify()  # the feed may hold a wait this run decided: read it now
        return record

    def _lease_gone(self, run: Run) -> str | None:
        """``"lease"`` when ``run``, begun on a shared store's claim, holds its lease no
        more (a renewal found it gone; one only counted lost is sent, its flag up), else
        None (caller holds the lock).  Asked, as :func:`stopped_since_begun` is, of a run
        on its way to the loop or to a child when the renewal came: :meth:`_stop_lost`
        found nothing to stop."""
        coordinator = self._coordinator
        return "lease" if coordinator is not None and coordinator.gone(run) else None

    def _jumped_since(self, finished: float, lag: float) -> float:
        """The finish to record for a run that read ``finished`` ``lag`` seconds (less a
        monotonic reading) off the clock's relation at the timer's last look (caller
        holds the lock; rare): a jump no look saw yet is handled first (a finish read
        after a backward one would otherwise count from the moved clock, and be moved
        back once more by the next look); a finish still read ahead of the clock after
        that was read before a backward jump a look saw while the run was in flight,
        and is moved by it, so nothing counts from the clock before the jump (a fixed
        delay would run late by it, a fixed rate skip the slots it moved back)."""
        last_look = self._last_look
        try:
            now = self._clock.now()
        except Exception:  # (rare) the timer's next look reads it again, or dies of it
            log.exception("the scheduler's clock raised; the run is recorded at %r", finished)
            return finished
        self._look_at_clock(now)
        if lag > last_look.ahead_above:
            return finished + last_look.set_back_by
        return finished

    def _log_then_settle(self, run: Run, record: ExecutionRecord, explained: Explained) -> None:
        """A worker's run failed: log its line with the lock let go (the pool allows it;
        rare), then settle it, so that ``wait_idle()`` returns with the line written.
        Settled even if a logging handler raises (the pool logs that)."""
        self._failures.append(failure_line(run, record, explained, scheduler=self.name))
        self._lock.release()
        try:
            self._say_failures()
        finally:
            self._lock.acquire()
            self._settle(1)

    def _finish_coroutine(
        self,
        run: Run,
        started: float,
        finished: float,
        error: str | None,
        result: str | None,
        timed_out: bool,
        raised: BaseException | None,
    ) -> bool:
        """A coroutine run is over: record it (the loop thread calls this under the
        lock, and settles its batch of runs after).  True when it failed: its line is
        queued, and the loop thread calls :meth:`_say_failures` once it let the lock go,
        before it settles the batch.  ``raised`` is what the coroutine raised, if it
        did."""
        try:  # free until it raises (3.11)
            record = self._record(run, started, finished, error, result, timed_out)
        except BaseException as exc:  # (rare) as a worker's (_complete): the loop settles it
            self._step_raised(run.task.id, run, exc)
            return False
        if record.ok:
            return False
        self._failures.append(failure_line(run, record, raised, scheduler=self.name))
        return True

    def _cancel_overlapped(self, run: Run) -> None:
        """Overlap.CANCEL_OTHER cancelled ``run`` (the core raised its flag, under the
        lock): a coroutine run is cancelled and a process-isolated one's child killed,
        as cancel() does (the newer run has no child yet: it takes one after its begin,
        outside the lock); a thread's run is cooperative.  An older run whose worker
        holds no child yet is found by no kill: its worker reads the flag once it holds
        one, and never sends it (``stopped`` in :meth:`_execute_in_process`)."""
        self._coroutines.cancel_run(run, "overlap")
        self._processes.kill(run.task.id, "overlap")

    def _settle(self, count: int) -> None:
        """``count`` entries popped by the timer are done (run, or dropped)."""
        self._in_flight -= count
        self._notify_idle()
        if self._draining:
            self._drain_settled.set()  # shutdown's drain waits for runs to settle

    def _notify_idle(self) -> None:
        """Wake wait_idle() / wait_drained() callers if nothing is in flight.

        Called wherever their answer can turn true: a run settled, a task cancelled,
        paused or removed, and a task's due time moved (``reschedule``, ``schedule(...,
        replace_existing=True)``: what was due may be due no more).  The other verbs
        (``modify``, ``run_now``, ``resume``, ``redrive``) only ever add work, so they
        leave a waiter waiting; the timer also wakes one when only tombstones were due."""
        if self._idle_waiters and self._in_flight == 0:
            self._wake_idle()

    def _wake_idle(self) -> None:
        """Let every wait_idle() / wait_drained() caller test again (caller holds the
        lock; :meth:`_quiet <lldsched.threaded.idlewaits.IdleWaits._quiet>`)."""
        self._idle_waiters.wake()


def stopped_since_begun(task: ScheduledTask) -> str | None:
    """``"cancelled"`` or ``"paused"`` when ``task``'s runs in flight were stopped since
    they began, else None (caller holds the scheduler's lock).

    A cancel or pause stops the runs the runtime can reach (:meth:`ControlVerbs._halt
    <lldsched.threaded.control.ControlVerbs._halt>`: a coroutine on the loop, a child
    process); a run on its way to one of them when the verb came (a worker's action
    that returned an awaitable, an isolated run before its child held it) was not
    there yet, and asks this once it is.  A task paused and resumed meanwhile runs on,
    as if the pause had come before its run began."""
    status = task.status
    if status is CANCELLED or status is PAUSED:
        return status.value
    return None


def _overlapped(run: Run) -> str | None:
    """``"overlap"`` when a newer run of its task cancelled ``run`` (``Overlap.CANCEL_OTHER``
    raised its flag: core/overlapping.py), else None.  Asked, as
    :func:`stopped_since_begun` is, of an awaitable a worker's action returned: the
    newer run found no coroutine of it on the loop to cancel."""
    context = run.context
    return "overlap" if context is not None and context.reason == "overlap" else None
