"""Shutdown: ``shutdown()`` and ``aclose()``, the drain, the joins.

Shutdown stops timing first (the timer is woken and joined, so nothing new is
submitted), then drains (every run due at or before the shutdown instant, in heap
order, bounded by the timeout) or drops what is due, joins the workers, closes the
worker processes and the event loop, writes the rows a store outage left stale, then
delivers the events left.  It is idempotent, and final.  On a shared store the leases
of the runs it waits for are renewed meanwhile
(:func:`~lldsched.threaded.shared.leases.leases_kept`): the timer that renews them is stopped.
Mixed in: its last writes, and the store let go (:mod:`~lldsched.threaded.lastwrites`),
and what it says it left (:mod:`~lldsched.threaded.shutdownwarnings`).  The waits for
quiet (``wait_idle``, ``wait_drained``) live in :mod:`lldsched.threaded.idlewaits`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from datetime import timedelta
from typing import TYPE_CHECKING

from lldsched.checks import shutdown_timeout
from lldsched.core.names import RUNNABLE
from lldsched.core.task import Entry, Run, ScheduledTask
from lldsched.deprecated import keyword_only_now
from lldsched.errors import SchedulerStateError, doc_url
from lldsched.logs import SCHEDULER
from lldsched.threaded import naming
from lldsched.threaded.coroutines.shutdown import grace_for
from lldsched.threaded.deadline import ASK_EVERY, Deadline
from lldsched.threaded.lastwrites import LastWrites, unfinished
from lldsched.threaded.parts import DEAD, FORKED, RUNNING, STOPPED
from lldsched.threaded.processes.pool import killed_by_shutdown
from lldsched.threaded.shared.leases import leases_kept
from lldsched.threaded.shutdownwarnings import ShutdownWarnings

if TYPE_CHECKING:  # imported by aclose(), whose caller's loop has imported it already
    import asyncio

__all__ = ["Stopping", "is_due"]

log = logging.getLogger(SCHEDULER)


class Stopping(LastWrites, ShutdownWarnings):
    """Mixed into Scheduler: shutdown and the drain."""

    @keyword_only_now(kept=0, moved=("drain", "timeout"))
    def shutdown(self, *, drain: bool = True, timeout: float | timedelta | None = 5.0) -> bool:
        """Stop timing, then drain (or with ``drain=False`` drop) the work that is due;
        a thread's run in flight always finishes.  Idempotent and final.

        ``drain=True`` runs every run due at or before the instant of this call, in
        heap order (due, priority, arrival), the ones already handed to the workers
        and the ones still in the heap alike; runs that fall due later (a retry's
        backoff, the next slot) are not run.  ``timeout`` bounds the whole shutdown,
        and its last ``CANCEL_GRACE`` (1 s; half the timeout, if less) is for the ends
        of the runs in flight: a drain starts nothing after that instant, and cuts there
        what can be cut (below).  What is not run stays SCHEDULED (or RETRYING) with its
        due time, for a durable store to recover.  Coroutines still running then are
        cancelled (see :mod:`lldsched.threaded.coroutines.runner`).  Worker processes
        (``isolation="process"``) are closed: a drain waits for their runs like any
        other; without a drain at once, or at that instant, a run still in its child is
        killed and recorded cancelled (``CancelledError: the scheduler shut down without
        draining (its worker process 4242 was killed)``, or for a drain out of time
        ``CancelledError: the scheduler shut down, its drain out of time after 4 s ...``,
        ``timeout`` less that grace) before this returns, its task due at its slot with
        its attempt unspent (a coroutine cancelled too:
        docs/decisions/logging.md, "A run a shutdown cut does not spend its attempt").
        One a worker had begun but no child had taken yet is not started: its task stays
        due with its attempt unspent, as a run not begun does.  Each is queued, listed by
        :meth:`pending` afterwards.  An idle worker process that does not exit when told
        (a thread its job left) is killed at the timeout, or 5 s after it was told with
        no timeout.

        Returns True when every thread stopped within ``timeout`` seconds (or a
        ``timedelta``; ``None``: no bound; a listener
        still inside a call counts); else False, and a warning on the ``lldsched``
        logger names the runs still going and counts the runs due by this call that
        were not started (a drain out of time, or ``drain=False``), and apart those it
        cut mid-run, which stay as said above.  A drain out of time that cut every run it
        did not wait for (coroutines cancelled, worker processes killed) returns True,
        and counts in a warning all the same the runs due by this call it did not start
        (and those it cut).  Calling it again waits again
        (up to its own ``timeout``) for a run still in flight; the end of a ``with`` or
        ``async with`` block after a call that returned does not (:meth:`_block_stops`:
        that call's ``timeout`` was the bound).  A call made while another
        is still shutting down waits for that one first (within its own ``timeout``), so it never
        cuts the other's drain short; from an action, a listener or a coroutine (which
        the other may be waiting for) it returns False at once instead.  A drain called
        from an action on a scheduler with one worker hands nothing more out (that
        worker is the caller's, busy until this returns): it waits for the runs in
        flight elsewhere and returns False, what waits for a worker left due.

        It returns within ``timeout`` (plus :data:`~lldsched.threaded.deadline.LOCK_GRACE`,
        once, for a lock found held past it or a step ending at it) even when another
        thread holds the scheduler's lock for longer, a store call that hangs (the core
        writes its store under the lock): each step takes the lock within the time left
        (:mod:`lldsched.threaded.deadline`), and one that cannot is left undone and said
        in the warning; the steps that call the store under the lock themselves (giving
        back the claims dropped, recording the coroutines cancelled, writing the settles
        held back) run on a thread of their own, waited for within the time left.
        Coroutines still running are cancelled ``CANCEL_GRACE`` (1 s) before the
        timeout runs out (half the timeout, if less), so their cancellation is handled
        within it.  If even the first
        cannot, nothing is stopped: the scheduler runs on, and a later ``shutdown()``
        does it all.

        From a coroutine, ``await scheduler.aclose()`` waits for the same shutdown without
        blocking the event loop.  From one of this scheduler's own coroutine runs it
        raises :class:`~lldsched.errors.SchedulerStateError` before changing anything
        (it would wait for itself with its loop blocked); a thread run may call it.

        An injected clock that raises as this reads "the instant of this call" does not
        stop it: the drain goes by the timer's last reading, and the clock's error is
        logged (:meth:`_instant`).  The rows a store outage left stale are written once
        more, its last write; those the store still refuses are named in a warning
        (:meth:`_write_stale`).

        In a child forked from the process that made the scheduler it stops nothing and
        returns True: the threads, the worker processes and the store are the parent's
        (every other verb there raises; :mod:`lldsched.threaded.forked`).
        """
        timeout = shutdown_timeout(drain, timeout)
        self._refuse_on_loop("shutdown()")
        if self._state is FORKED:  # a forked child's copy: nothing here is its own to stop
            return True
        deadline = Deadline(timeout)
        found = None  # the state this call found, once it took the lock
        read: tuple[float, Exception | None] = (0.0, None)  # a first call's _instant()
        try:
            with deadline.holding(self._lock) as hold:  # no Ctrl-C inside (Hold)
                if hold.held:
                    found = self._state
                    self._state = STOPPED
                    if found is not STOPPED:  # read as timing stops (_instant)
                        read = self._instant()
                        naming.let_go(self)  # another may start under its name (naming.py)
                    self._wake.notify_all()
            if found is None:  # held past the whole timeout: nothing stopped, nothing changed
                self._warn_not_stopped(timeout)
                return False
            if found is STOPPED:  # a second call waits again for what the first left running
                stopped = self._shutdown_again(deadline)
            else:
                started = found is RUNNING or found is DEAD
                stopped = self._shutdown(
                    drain=drain, timeout=timeout, deadline=deadline, started=started, read=read
                )
            if not self._own_thread():  # its caller has the outcome (_block_stops)
                self._stop_returned = True
            return stopped
        finally:
            if found is not None and found is not STOPPED:  # the first call, however it ends
                try:
                    if self._writes_left():  # a second shutdown() makes them, or the exit
                        unfinished(self)
                    else:
                        self._let_store_go()
                finally:
                    # An attribute first: a signal can land at the start of a call
                    # (set()'s, leaving the flag unset), not before a store.
                    self._first_over = True
                    self._shut_down.set()  # wakes a second call waiting on another thread

    def _block_stops(self) -> bool:
        """Whether leaving a ``with`` or ``async with`` block shuts the scheduler down
        (``__exit__``, ``__aexit__``): not once a ``shutdown()`` or ``aclose()`` that
        stopped it returned to a caller outside its own threads.  That call's
        ``timeout`` was the bound the caller chose (a service's, to fit its grace before
        SIGKILL), and its outcome is said: True, every thread stopped; False, a warning
        named what is still going.  Another one at the block's end added its own 5 s
        wait (seen: ``shutdown(timeout=2)`` returned False, and the process exited 7 s
        after).  One made from an action or a listener (its own run still going, so
        unsaid), cut short by a signal, or that found the lock held past its timeout and
        stopped nothing is no such outcome: the block's end shuts down as it always
        does (docs/decisions/threaded.md, "The end of a `with` block adds no wait to a
        shutdown that returned")."""
        return not self._stop_returned

    def _shutdown_again(self, deadline: Deadline) -> bool:
        """A shutdown() after the first: wait for the first to end, then for what it left
        running; the last writes made and the store let go too, should a signal have cut
        the first short before them (:meth:`_last_writes`)."""
        if not self._first_over and not self._first_ended(deadline):
            return False
        with self._leases_kept(deadline):
            self._join(deadline)
        flushing = self._writes_left() and self._last_writes(deadline)
        self._let_store_go()
        return not self._threads_alive() and not flushing

    def _first_ended(self, deadline: Deadline) -> bool:
        """Wait, within ``deadline``, for the first shutdown() still going to end: False if
        it did not, or if the caller is one of this scheduler's own threads (which the
        first may be waiting for).  Woken by the first's ``_shut_down.set()``, and
        re-reading ``_first_over`` every :data:`ASK_EVERY` all the same: a signal that
        lands at the start of that ``set()`` (a Ctrl-C on the main thread, the first's)
        leaves the flag unset, the attribute stored, and this call, on another thread,
        waited its whole timeout (for ever with ``timeout=None``) for a first that had
        ended."""
        if self._own_thread():
            return False
        while not self._first_over:
            left = deadline.remaining()
            if left == 0.0:
                return False
            self._shut_down.wait(ASK_EVERY if left is None else min(left, ASK_EVERY))
        return True

    def _shutdown(
        self,
        *,
        drain: bool,
        timeout: float | None,
        deadline: Deadline,
        started: bool,
        read: tuple[float, Exception | None],
    ) -> bool:
        """The first shutdown() past taking the lock: stop, drain or drop, join (``read``:
        the instant to drain up to, and the clock's error, from :meth:`_instant`)."""
        instant, clock_error = read
        if clock_error is not None:
            self._say_clock_raised(clock_error, instant)
        if self._timer is not None and self._timer is not threading.current_thread():
            self._timer.join(deadline.remaining())
        # The timer is stopped: the leases of the runs waited for are renewed meanwhile.
        with self._leases_kept(deadline):
            grace = grace_for(timeout)
            kill_at = deadline.before(grace)  # a drain's end: runs cut then
            # What a killed run's record says: no drain, or its drain out of time.
            why = killed_by_shutdown(
                drain=drain, drained=None if timeout is None else timeout - grace
            )
            finished = drain and started and self._drain(instant, deadline, kill_at, why)
            if not finished:  # drop=False, or out of time: what waits for the loop is dropped
                with deadline.holding(self._lock) as hold:
                    if hold.held:  # (queued again as they were: what is left due is in the heap)
                        self._coroutines.drop_waiting()
                self._processes.kill_all(why)
            # What the workers had not taken is dropped (no drain) and settled, in the
            # acquisition that closes the pool.
            self._pool.shutdown(
                drain=finished, timeout=deadline.remaining(), on_drop=self._settle_dropped
            )
            coordinator = self._coordinator
            if coordinator is not None:  # claims dropped unrun: free them now (a store call)

                def release() -> None:
                    with deadline.holding(self._lock) as hold:
                        if hold.held:
                            coordinator.release_pending()

                deadline.run(release, name=f"{self._thread_prefix}release")
            self._processes.close(deadline.remaining())
            self._close_loop(deadline)
        flushing = self._last_writes(deadline)
        self._dispatcher.close(deadline.remaining())
        if not self._threads_alive() and not flushing:
            if drain and started and not finished:  # out of time, its cuts made: True
                self._warn_unstarted(
                    deadline, instant, "shutdown(timeout=%s) ran out of time draining:", timeout
                )
            return True
        if not self._pool.is_worker(threading.current_thread()):  # else: its own run goes on
            self._warn_still_running(
                timeout, deadline, flushing=flushing, due_by=None if finished else instant
            )
        elif drain and not finished:  # from an action: what the drain left is said all the same
            self._warn_unstarted(
                deadline,
                instant,
                "shutdown(drain=True) called from an action (thread %s) returned with",
                threading.current_thread().name,
            )
        return False

    @keyword_only_now(kept=0, moved=("drain", "timeout"))
    async def aclose(self, *, drain: bool = True, timeout: float | timedelta | None = 5.0) -> bool:
        """:meth:`shutdown` for a coroutine (a lifespan handler, a SIGTERM handler's task):
        the same stop, drain and result, waited for on a thread of its own
        (``lldsched-<name>-shutdown``) while the caller's event loop goes on serving.
        ``async with Scheduler(...) as scheduler:`` calls it on leaving the block.

        Not the loop's default executor: an application may have bounded or filled it.
        If the awaiting coroutine is cancelled, the shutdown still goes on to its end.
        Raises :class:`~lldsched.errors.SchedulerStateError` from one of this
        scheduler's own coroutine runs, as :meth:`shutdown` does (docs/ASYNCIO.md).
        """
        shutdown_timeout(drain, timeout)  # a mistake raised here, before a thread is started
        self._refuse_on_loop("aclose()")
        import asyncio  # not with lldsched (docs/PERFORMANCE.md, "Start-up")

        loop = asyncio.get_running_loop()
        done: asyncio.Future[bool] = loop.create_future()

        def stop() -> None:
            try:
                outcome: bool | BaseException = self.shutdown(drain=drain, timeout=timeout)
            except BaseException as exc:  # raised in the awaiting coroutine
                outcome = exc
            with contextlib.suppress(RuntimeError):  # the caller's loop closed meanwhile
                loop.call_soon_threadsafe(_resolve, done, outcome)

        stopper = threading.Thread(target=stop, name=f"{self._thread_prefix}shutdown", daemon=True)
        stopper.start()
        try:
            return await done
        finally:
            # Resolved: handing the outcome over was the thread's last step, so it is
            # ending now, and no thread of the scheduler outlives the await.  (Cancelled:
            # the shutdown goes on; the loop is not held for it.)
            if done.done() and not done.cancelled():
                stopper.join()

    def _instant(self) -> tuple[float, Exception | None]:
        """The instant a shutdown drains up to: the clock's now, read in the hold of the
        lock that stops timing (caller holds it).  So the timer, which reads the clock
        under the lock too, hands out nothing due after it, and a run that falls due once
        the call stopped timing is not drained.  (Read once the lock was let go, it was as
        late as the calling thread was slow to get there: a clock advanced after the timer
        had ended was drained up to; a CI run under load.)  If the injected clock raises
        instead (rare), the timer's last reading (nothing counts as due by it if the timer
        never woke), with the error, which the caller logs once the lock is let go
        (:meth:`_say_clock_raised`): the shutdown goes on to its end (docs/decisions/persistence.md,
        "A clock whose `now()` raises")."""
        try:
            return self._clock.now(), None
        except Exception as error:
            woke = self._last_look.woke
            return (float("-inf") if woke is None else woke), error

    def _say_clock_raised(self, error: Exception, instant: float) -> None:
        """Log, with its traceback, the error the clock raised as :meth:`_instant` read it
        (``instant``: the timer's last reading it drains up to instead)."""
        log.error(
            "the scheduler's clock raised as shutdown() read the instant to drain up "
            "to; it drains what was due by the timer's last reading (%r) and stops all "
            "the same",
            None if instant == float("-inf") else instant,
            exc_info=error,
        )

    def _refuse_on_loop(self, verb: str) -> None:
        """Raise if the caller is one of this scheduler's coroutine runs: a shutdown there
        would wait, with the loop blocked, for the runs of that very loop (itself
        included), and then for the loop thread to end, which is the caller's own.  So
        from one of the loop's ``asyncio.to_thread`` threads: it would wait for the run
        awaiting it until its timeout, cancel it, and then wait for its own thread."""
        if self._coroutines.on_loop_thread():
            raise SchedulerStateError(
                f"{verb} was called from a coroutine run on this scheduler's own event loop "
                "or an asyncio.to_thread call of one "
                f"(thread {threading.current_thread().name}): it would wait for that loop's "
                "runs, itself (or the run awaiting it) included.  Start the shutdown on a "
                "thread and return: threading.Thread(target=scheduler.shutdown).start() "
                f"({doc_url('docs/ASYNCIO.md')})"
            )

    def _own_thread(self) -> bool:
        """True on a thread of this scheduler's that a shutdown may wait for: a worker
        (an action), the listeners' thread (a listener) or the event loop (a coroutine,
        or its ``asyncio.to_thread`` call)."""
        thread = threading.current_thread()
        return (
            self._pool.is_worker(thread)
            or thread is self._dispatcher.thread
            or self._coroutines.on_loop_thread()
        )

    def _settle_dropped(self, dropped: list[Entry]) -> None:
        """The pool dropped ``dropped`` unrun at shutdown (caller holds the lock): queued
        again as they were, so what is left due is all in the heap, as the simulation's
        is (``pending()``, ``queue_stats()``, ``metrics()``)."""
        self._queue.put_back(dropped)
        self._settle(len(dropped))

    def _unstarted(self, due_by: float) -> tuple[int, int]:
        """How many registered tasks, not running, are due by ``due_by`` (caller holds
        the lock), in two counts: the runs a shutdown did not start, and those it started
        and cut (:meth:`_cut_by_shutdown`: due again at their slot, each said by its
        run's own line, "stopped: CancelledError: scheduler shut down")."""
        cut = self._cut_ids
        left = [
            t.id in cut for t in self._core.tasks.values() if not t.running and is_due(t, due_by)
        ]
        return len(left) - sum(left), sum(left)

    def _cut_by_shutdown(self, run: Run) -> None:
        """The shutdown cut ``run`` (a coroutine cancelled, a worker process killed, an
        awaitable the closed loop refused): the core keeps its task due
        (:meth:`SchedulerCore.cut_by_shutdown
        <lldsched.core.runs.RunTransitions.cut_by_shutdown>`), and the task is noted, so
        that the shutdown's warning counts it as cut, not among the runs due by it that it
        did not start (:meth:`_unstarted`; caller holds the lock)."""
        self._cut_ids = self._cut_ids | {run.task.id}
        self._core.cut_by_shutdown(run)

    def _drain(self, instant: float, deadline: Deadline, kill_at: Deadline, why: str) -> bool:
        """Hand the workers every entry due at or before ``instant``, as room frees, and
        wait for the runs in flight (which may queue more such entries: a CATCH_UP
        slot), until ``kill_at``: False if that came first (a drain out of time).  The
        timer is stopped: this runs on the thread that called shutdown().  It waits on
        an event each settled run sets (:meth:`_settle`), not on ``_wake``, so that a
        lock held past the deadline (a store that hangs) cannot keep it waiting
        (:meth:`Hold.wait <lldsched.threaded.deadline.Hold.wait>`).

        ``kill_at`` is :func:`~lldsched.threaded.coroutines.shutdown.grace_for` before the
        deadline: that grace is for the ends of the runs in flight, and nothing starts in
        it.  There what can be cut is cut, so that its end is recorded before shutdown()
        returns: the process-isolated runs still in their children are killed (their
        records saying ``why``: :func:`~lldsched.threaded.processes.pool.killed_by_shutdown`), the
        coroutine runs in flight cancelled (:meth:`CoroutineRunner.cut_all
        <lldsched.threaded.coroutines.shutdown.LoopShutdown.cut_all>`); the thread runs in
        flight are waited for until the deadline, by the join.  What is left due, what
        waits for a worker included (:meth:`WorkerPool.drop
        <lldsched.threaded.pool.WorkerPool.drop>`, in this hold of the lock, so that no worker
        freed meanwhile starts it), goes back into the heap.  Before, the
        drain handed out runs, and waited for the coroutines, until the deadline: those
        were cancelled with no time left to end, and shutdown() returned False or True by
        a race with the threads' ends; a loop task's entry handed out after the cut was
        settled unbegun and left out of the heap."""
        queue, pool, lock = self._queue, self._pool, self._lock
        own = 1 if pool.is_worker(threading.current_thread()) else 0  # shutdown() from a run
        # From the only worker, nothing runs what is handed to the workers before this
        # returns: nothing more is handed out, and what waits for a worker already is
        # not waited for (it stays due, as a drain out of time leaves it).
        stranded = own == pool.workers
        shared = self._coordinator is not None  # other processes run what is due; heap: hints
        with deadline.holding(lock) as hold:
            if not hold.held:
                return False
            settled = self._drain_settled  # _settle sets it while _draining
            self._draining = True
            try:
                while True:
                    room = 0 if shared or stranded else pool.room
                    batch = queue.pop_due(instant, room) if room else []
                    if batch:
                        self._in_flight += len(batch)
                        self._hand_out(batch)
                        continue
                    due = None if shared else queue.next_due()
                    if (due is None or due > instant) and self._in_flight <= own:
                        return True
                    if stranded and self._in_flight - pool.waiting <= own:
                        return False  # what is left waits for this very thread
                    if kill_at.remaining() == 0.0:  # out of time: nothing starts, the rest is cut
                        pool.drop(on_drop=self._settle_dropped)
                        self._processes.kill_all(why)
                        self._coroutines.cut_all()
                        return False
                    settled.clear()
                    # Not held while it waits: an interrupt there (Ctrl-C on the main thread)
                    # leaves with the lock let go (hold.held False), and the cleanup below
                    # must not touch what the lock guards.
                    if not hold.wait(settled, until=kill_at):  # a settled run, or kill_at
                        return False  # _draining stays True: settles set an event nobody awaits
            finally:
                if hold.held:
                    self._draining = False

    def _join(self, deadline: Deadline) -> None:
        if self._timer is not None and self._timer is not threading.current_thread():
            self._timer.join(deadline.remaining())
        self._pool.shutdown(timeout=deadline.remaining())
        self._processes.close(deadline.remaining())
        self._close_loop(deadline)
        self._dispatcher.close(deadline.remaining())

    def _close_loop(self, deadline: Deadline) -> None:
        """Shut the coroutine runner down within ``deadline``, on a thread of its own: it
        records the coroutines it cancels, so it writes the store under the lock."""
        remaining = deadline.remaining()
        deadline.run(
            lambda: self._coroutines.shutdown(remaining), name=f"{self._thread_prefix}loop-closer"
        )

    def _leases_kept(
        self, deadline: Deadline | None = None
    ) -> contextlib.AbstractContextManager[None]:
        """:func:`~lldsched.threaded.shared.leases.leases_kept` on this scheduler's lock and
        clock, its thread named as this scheduler's others are, joined within
        ``deadline`` (``None``: when it ends)."""
        return leases_kept(
            self._coordinator,
            self._lock,
            self._clock.now,
            name=f"{self._thread_prefix}lease-keeper",
            deadline=deadline,
        )

    def _threads_alive(self) -> bool:
        timer_alive = self._timer is not None and self._timer.is_alive()
        return (
            timer_alive
            or self._pool.alive > 0
            or self._coroutines.alive
            or self._processes.alive > 0
            or self._dispatcher.busy
        )


def is_due(task: ScheduledTask, until: float | None) -> bool:
    """``task`` is runnable (SCHEDULED or RETRYING) and due at or before ``until``
    (``None``: due at all, however far out)."""
    due = task.next_run_at
    return task.status in RUNNABLE and due is not None and (until is None or due <= until)


def _resolve(done: asyncio.Future[bool], outcome: bool | BaseException) -> None:
    """On the awaiting loop: give :meth:`Stopping.aclose` what the shutdown returned or
    raised (unless the awaiting coroutine was cancelled meanwhile)."""
    if done.done():
        return
    if isinstance(outcome, BaseException):
        done.set_exception(outcome)
    else:
        done.set_result(outcome)
