"""The waits for quiet: ``wait_idle`` and ``wait_drained``, for tests and demos.

:meth:`IdleWaits.wait_idle` waits until nothing is due at the clock's now and nothing is
in flight, :meth:`IdleWaits.wait_drained` until no work is left at all; each then until
every event was delivered, and returns True only if it is quiet still.  A caller waits on
a lock of its own (:class:`~lldsched.threaded.deadline.Waiters`, the scheduler's
``_idle_waiters``), let go by :meth:`RunExecution._wake_idle
<lldsched.threaded.running.RunExecution._wake_idle>` when its answer can turn true, not on
a ``Condition`` of the scheduler's lock.  No lock of its own: what it reads, it reads
under the scheduler's.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

from lldsched.checks import wait_seconds
from lldsched.errors import SchedulerStateError
from lldsched.threaded.parts import FORKED, NEW, STOPPED, SchedulerParts
from lldsched.threaded.stopping import is_due

__all__ = ["IdleWaits"]


class IdleWaits(SchedulerParts):
    """Mixed into Scheduler: the waits for quiet (tests and demos)."""

    def wait_idle(self, timeout: float | timedelta = 5.0) -> bool:
        """Wait until nothing is due at the clock's now (on a shared store: no registered
        task due that no claim took yet), nothing is in flight, every run's
        settle was written to a shared store, and every event so far was delivered,
        and it is still so once they were: what a listener's verb made due meanwhile
        (``run_now``, ``resume``, a registration due at once) is waited for too.
        False if ``timeout`` seconds (or a ``timedelta``; 5 s by default) pass first,
        with runs still in flight or due: a test should assert what it returns.

        Made for tests and demos on a :class:`~lldsched.clock.FakeClock`:
        ``clock.advance(30); scheduler.wait_idle()`` (which runs what is due at the
        new now, all at that instant; :class:`lldsched.testing.Stepper` visits each
        due instant in turn).  After a shutdown it delivers what was published since
        (a run that outlived it, a ``pause``), as a second ``shutdown()`` does.  Called
        from one of the scheduler's own threads (an action, a listener, a coroutine run)
        it raises
        :class:`~lldsched.errors.SchedulerStateError`: it would wait for itself; so it
        does if the timer thread died (:attr:`running` is False), at once or as it dies:
        nothing due would ever run; and so it does before :meth:`start` when a run is
        due (it would not run before the timeout: a ``start()`` forgotten; it returned
        True, as if that run had been run).  With nothing due it returns True then.
        """
        return self._wait(timeout, drained=False)

    def wait_drained(self, timeout: float | timedelta = 5.0) -> bool:
        """Wait until no work is left at all: nothing queued (retries included), nothing
        in flight, every event delivered.  False if ``timeout`` seconds (5 s by default)
        pass first.

        On a shared store the store is the queue: no work left means no task this
        process knows of (its registry follows the store) is SCHEDULED or RETRYING with a
        due time, however far out, including one another process has claimed and not
        settled yet; and none of this process's runs in flight.

        With recurring tasks this only returns once they are cancelled or paused.
        Raises from the scheduler's own threads, once the timer thread died, and before
        :meth:`start` when work is queued, as :meth:`wait_idle` does.
        """
        return self._wait(timeout, drained=True)

    def _wait(self, timeout: float | timedelta, *, drained: bool) -> bool:
        """Quiet, then every event delivered, then quiet still: a listener that called a
        verb while its events were delivered (``run_now``, ``resume``, a registration
        due at once) has made work due, and that work is waited for too, in the same
        ``timeout``; so a True is true when it is returned (``lldsched.testing`` builds
        on it).  The last test includes the delivery: that work may have run and ended
        between the delivery and it, and its events are then still on their way."""
        verb = "wait_drained()" if drained else "wait_idle()"
        wait = wait_seconds(timeout, name=f"{verb} timeout")
        if self._own_thread():  # its own run (or delivery) is never over while it waits
            raise SchedulerStateError(
                f"{verb} was called from one of this scheduler's own threads "
                f"({threading.current_thread().name}: an action, a listener, a coroutine "
                "run or its asyncio.to_thread call), so it would wait for itself until its "
                "timeout.  Call it from the thread that drives the scheduler (a test, a "
                "demo, a script)"
            )
        deadline = time.monotonic() + wait
        while True:
            if not self._quiet(verb, drained, deadline):
                return False
            if self._coordinator is not None:
                self._coordinator.flush(lock=self._lock)  # every settle written, not only decided
            if not self._dispatcher.flush(max(0.0, deadline - time.monotonic())):
                return False
            with self._lock:  # a run may have begun and ended since: its event too
                if self._is_idle(drained) and self._dispatcher.delivered:
                    return True

    def _quiet(self, verb: str, drained: bool, deadline: float) -> bool:
        """Wait until :meth:`_is_idle`; False once ``deadline`` (monotonic) passed first.

        On a lock of its own (:class:`~lldsched.threaded.deadline.Waiters`), let go by
        :meth:`_wake_idle`: not ``Condition.wait`` on the scheduler's lock, whose
        re-acquisition a Ctrl-C cut, and the ``with`` block then let go of the lock the
        timer or a worker held."""
        waiter = None
        while True:
            with self._lock:
                if waiter is not None:  # its time ran out: not to be let go now
                    self._idle_waiters.discard(waiter)
                if self._state is NEW and not self._is_idle(drained):
                    raise SchedulerStateError(
                        f"{verb} on a scheduler that was not started: what is due "
                        "would not run before its timeout.  Call start() first"
                    )
                self._refuse_if_dead(verb)  # before and after each wait
                if self._is_idle(drained):
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                waiter = self._idle_waiters.waiter()
            waiter.acquire(timeout=remaining)  # let go by _wake_idle, or the time ran out

    def _is_idle(self, drained: bool) -> bool:
        if self._in_flight:
            return False
        state = self._state
        if state is STOPPED or state is FORKED:
            return True  # nothing will ever run (after a shutdown; a forked child's copy)
        shared = self._coordinator is not None  # the store is the queue, the heap holds hints
        if drained:  # no work left: on a shared store, no registered task with a due time
            return not self._due_in_registry(until=None) if shared else len(self._queue) == 0
        now = self._clock.now()
        due = self._queue.next_due()
        if due is not None and due <= now:
            return False
        # shared: a task due that no claim took yet (claims come in batches of the room free)
        return not (shared and self._due_in_registry(until=now))

    def _due_in_registry(self, *, until: float | None) -> bool:
        """Shared mode: whether a runnable task of the registry is due at or before
        ``until`` (``None``: due at all, however far out); a task another process has
        claimed keeps its due time until that process settles it, so it counts too.
        A scan of every task: for the waits of tests and demos only (caller holds the
        lock)."""
        return any(is_due(task, until) for task in self._core.tasks.values())
