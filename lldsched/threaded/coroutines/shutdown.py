"""Shutting the scheduler's event loop down: the coroutine runs in flight, then the loop.

:class:`LoopShutdown` is the part of :class:`~lldsched.threaded.coroutines.CoroutineRunner`
that ends it; a mixin, so the runner's hand-over (:mod:`~lldsched.threaded.coroutines.runner`),
its loop thread (:mod:`~lldsched.threaded.coroutines.loopthread`) and its end (here) read as three
modules of one class, which declares below the members of the runner it uses.

Shutdown waits for the coroutines in flight until :data:`CANCEL_GRACE` before the
shutdown's timeout runs out (half the timeout, if that is less), cancels those left
and gives them the rest of it to end (recorded
``CancelledError: scheduler shut down``, outcome ``cancelled``; they do not spend
their attempt: the core keeps each task due at its slot, so a durable store runs it
after the restart: :meth:`SchedulerCore.cut_by_shutdown
<lldsched.core.runs.RunTransitions.cut_by_shutdown>`), drops the loop tasks that never
began (they stay SCHEDULED), stops the loop and closes it.  Between the two, the tasks
still on the loop (what a run started and left: a background ``create_task``) are
cancelled and given half the grace (half the time left, if less) to end
(:func:`~lldsched.core.results.end_left_tasks`, called by the runner's loop thread).
A coroutine that swallows its cancellation and is still running then is recorded
cancelled by shutdown and left behind on the closed loop (asyncio logs "Task was
destroyed but it is pending!" when it is collected; its close is not reported as a
second failure). Then shutdown waits, within the same timeout, for the
``asyncio.to_thread`` calls (``run_in_executor(None, ...)``) still running on the loop's
default executor, which the runner owns (threads ``lldsched-<name>-loop-to-thread_N``):
a cancelled coroutine does not stop the thread it awaited, and nothing can. Calls not
started are dropped; one still running when the timeout runs out is left to end on its
own (shutdown returns False, as for any thread it leaves running). ``timeout=None``
waits for them, as ``asyncio.run`` does.

The runner's fields are guarded by the scheduler's one lock, as the runner says;
shutdown takes it within its time (:class:`~lldsched.threaded.deadline.Deadline`).
"""

from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from lldsched.core.task import Entry
from lldsched.threaded.coroutines.flights import Flight
from lldsched.threaded.deadline import LOCK_GRACE, Deadline, Flag, Hold

if TYPE_CHECKING:
    import asyncio

    from lldsched.loopcalls import LoopCalls

__all__ = ["CANCEL_GRACE", "LoopShutdown", "grace_for"]

CANCEL_GRACE = 1.0
"""Seconds shutdown gives cancelled coroutines to end, within its own timeout: they are
cancelled that long before it runs out (half the timeout, if that is less).  Killed
process-isolated runs get the same (:func:`grace_for`)."""


def grace_for(timeout: float | None) -> float:
    """How long before a shutdown's ``timeout`` runs out what it stops is stopped, so
    that its end is recorded within it: :data:`CANCEL_GRACE`, or half the timeout if
    that is less.  A coroutine is cancelled then, a process-isolated run killed
    (:meth:`Stopping._drain <lldsched.threaded.stopping.Stopping._drain>`)."""
    return CANCEL_GRACE if timeout is None else min(CANCEL_GRACE, timeout / 2)


class LoopShutdown:
    """Shutdown and the drop of what never began: mixed into the coroutine runner."""

    # The runner's members this part uses (CoroutineRunner.__init__ sets them).
    _name: str
    _lock: threading.Lock  # the scheduler's one lock: guards the runner's hand-over state
    _loop: asyncio.AbstractEventLoop | None
    _thread: threading.Thread | None
    _executor: LoopCalls | None
    _calls_joiner: threading.Thread | None
    _joining: threading.Lock  # guards _calls_joiner's making (see the runner's __init__)
    _waiting: collections.deque[Entry | Flight]
    _flights: dict[int, Flight]
    _closed: bool
    _settled: Flag
    _now: Callable[[], float]
    _said: Callable[[], None]
    _put_back: Callable[[list[Entry]], None]  # entries dropped unbegun: queued again
    _leftover_wait: float  # seconds the stopped loop gives the tasks left on it to end
    _stop_sent: bool  # a shutdown handed the loop its stop (see shutdown())

    if TYPE_CHECKING:

        def _cancel_flight(self, flight: Flight, reason: str) -> None: ...

        def _clock_failed(self, flight: Flight, exc: Exception) -> None: ...

        def _record(self, flight: Flight) -> bool: ...

        def _release(self, count: int) -> None: ...

        def _over_all(self) -> bool: ...

        def _notify_if_settled(self) -> None: ...

    def shutdown(self, timeout: float | None) -> bool:
        """Wait for the coroutines in flight until :data:`CANCEL_GRACE` before ``timeout``
        runs out (half of it, if that is less), cancel those left and give them the rest
        to end, stop and close the loop: it returns within ``timeout`` (``None``: the
        coroutines are waited for, and a cancelled one gets :data:`CANCEL_GRACE`).  True
        when the loop thread stopped.  Caller must not hold the lock.  Idempotent.

        A flight that did not end even then (it swallows its cancellation, or blocks
        the loop) is recorded here, as cancelled: no run is left unrecorded.  The lock
        is taken within those times too (:class:`~lldsched.threaded.deadline.Deadline`):
        if another thread holds it past them (a store call that hangs), what is left is
        left as it is, and False returned.
        """
        grace = grace_for(timeout)
        deadline = Deadline(timeout)
        cancel_at = Deadline(None if timeout is None else timeout - grace)
        with deadline.holding(self._lock) as hold:
            if not hold.held:
                return False
            self._closed = True
            loop, thread = self._loop, self._thread
            if loop is None or thread is None:
                return True
            if not self._wait_settled(hold, cancel_at):
                return False
            self.cut_all()
            if self._flights and not self._wait_settled(
                hold, deadline if timeout is not None else Deadline(grace)
            ):
                return False
            unrecorded = list(self._flights.values())
            for flight in unrecorded:  # still not over: record it now
                try:
                    flight.finished = self._now()
                except Exception as exc:  # (rare) the clock raised: recorded all the same
                    self._clock_failed(flight, exc)
                self._record(flight)
            if unrecorded:
                self._release(len(unrecorded))
                self._notify_if_settled()
            self._waiting.clear()
            # The loop is stopped once.  A later call (after this one ran out of time)
            # only waits: its stop reached the loop after the first had ended
            # run_forever, while end_left_tasks ran it again, and ended that run before
            # the left tasks' ends ("Event loop stopped before Future completed", which
            # killed the loop thread before it closed the async generators).
            first_stop, self._stop_sent = not self._stop_sent, True
        self._said()  # the failures recorded here, logged without the lock
        if thread.is_alive():
            left = deadline.remaining()  # a loop not blocked stops in a moment: LOCK_GRACE
            if first_stop:
                # Half what the join below waits for: set before the stop is handed
                # over, which the loop thread reads it after.
                self._leftover_wait = (grace if left is None else min(grace, left)) / 2
                with contextlib.suppress(RuntimeError):  # closed meanwhile: thread ending
                    loop.call_soon_threadsafe(loop.stop)
            thread.join(grace if left is None else max(left, LOCK_GRACE))
        return self._join_calls(deadline) and not thread.is_alive()

    def _join_calls(self, deadline: Deadline) -> bool:
        """Wait until ``deadline`` (``None``: for as long as they run) for the calls
        still running on the loop's executor, once their coroutines are over: True when
        none is left.  The calls not started yet are dropped first.  Idempotent."""
        executor = self._executor
        if executor is None:
            return True
        with self._joining:
            joiner = self._calls_joiner
            if joiner is None:
                executor.shutdown(wait=False, cancel_futures=True)
                joiner = threading.Thread(
                    target=executor.shutdown, name=f"{self._name}-executor-join", daemon=True
                )
                joiner.start()
                self._calls_joiner = joiner
        left = deadline.remaining()
        joiner.join(None if left is None else max(left, LOCK_GRACE))
        return not joiner.is_alive()

    def _wait_settled(self, hold: Hold, deadline: Deadline) -> bool:
        """Wait until no flight is in flight or waiting, or ``deadline`` passes (caller
        holds the lock, in ``hold``).  True when the caller holds the lock again; False
        when it ran out before the lock could be taken back (the caller does not hold
        it)."""
        while not self._over_all() and deadline.remaining() != 0.0:
            self._settled.clear()
            if not hold.wait(self._settled, until=deadline, by=deadline):
                return False
        return True

    def cut_all(self) -> None:
        """Begin no more runs, drop what waits for a slot (:meth:`drop_waiting`) and
        cancel the runs in flight, as cut by the shutdown (caller holds the lock): at
        the shutdown's grace before its timeout, here or in a drain out of time
        (:meth:`Stopping._drain <lldsched.threaded.stopping.Stopping._drain>`), so that
        their cancellation is handled, and recorded, within the timeout.  Entries
        handed over after it are settled unbegun (:meth:`CoroutineRunner.put
        <lldsched.threaded.coroutines.CoroutineRunner.put>`).  Idempotent."""
        self._closed = True
        self.drop_waiting()
        for flight in list(self._flights.values()):
            self._cancel_flight(flight, "shutdown")

    def drop_waiting(self) -> None:
        """Forget the loop tasks' entries that wait for a slot: they were never begun,
        so their tasks stay SCHEDULED with their due times, and the scheduler's queue
        holds them again (``put_back``: ``TaskQueue.put_back``) (caller holds the lock;
        shutdown without a drain)."""
        unbegun = [item for item in self._waiting if not isinstance(item, Flight)]
        if unbegun:
            self._waiting = collections.deque(
                item for item in self._waiting if isinstance(item, Flight)
            )
            self._release(len(unbegun))
            self._put_back(unbegun)
            if self._over_all():
                self._settled.set()
