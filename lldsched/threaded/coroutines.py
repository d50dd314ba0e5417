"""CoroutineRunner: the scheduler's event loop, where the awaitables actions return are run.

An ``async def`` action (or any action that returns an awaitable) is called on a
worker thread like any other; what it returns, a coroutine, is not a result yet.
The worker hands it here and is free at once: the coroutine runs to completion
on one asyncio event loop owned by the scheduler, on its own thread
(``lldsched-loop``), started at the first hand-off and closed at shutdown.  Its
record is written when it completes.

**Capacity.**  Coroutine runs do not hold a worker thread while they await; they
have a limit of their own, ``limit`` runs in flight at once
(``Scheduler(max_coroutines=...)``, default 1000).  A worker that would exceed it
waits for a slot, so the backpressure reaches the timer through the bounded
hand-off queue, as for threads.

**Timeouts are enforced** here, unlike on threads: a coroutine still running at
its task's timeout is cancelled (``Task.cancel``), recorded ``timed_out`` with a
``TimeoutError`` text, and its task goes down the retry path.  **Cancelling or
pausing** a task cancels its running coroutine the same way; the attempt is
recorded failed (``CancelledError: task cancelled`` / ``task paused``).  A
coroutine that swallows the cancellation still ends as the cancellation says.
A coroutine that *blocks* the loop (``time.sleep`` instead of ``asyncio.sleep``)
blocks every coroutine run, and its timeout cannot fire until it yields.

**Shutdown** waits for the coroutines in flight up to the shutdown's timeout, then
cancels those left (recorded ``CancelledError: scheduler shut down``; they go
down the retry path, so a durable store keeps them due), stops the loop and
closes it.

**Threads and the lock.**  Everything here but the loop-only fields is guarded by
the scheduler's one lock (passed in): the worker hands off under it, the loop
thread takes it once per batch of starts and once per batch of finishes, and
``cancel`` is called under it.  User code (the coroutine) runs on the loop
thread without it.  The slot semaphore is taken by workers *without* the lock.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from lldsched.checks import whole
from lldsched.core.results import result_text
from lldsched.core.task import Run
from lldsched.errors import error_text

__all__ = ["CANCEL_GRACE", "CoroutineRunner", "Finish"]

log = logging.getLogger("lldsched")

Finish = Callable[[Run, float, float, "str | None", "str | None", bool], None]
"""``finish(run, started, finished, error, result, timed_out)``, called under the lock."""

CANCEL_GRACE = 1.0
"""Seconds shutdown gives cancelled coroutines to end, beyond its own timeout."""

_REASONS = {
    "cancelled": "CancelledError: task cancelled",
    "paused": "CancelledError: task paused",
    "shutdown": "CancelledError: scheduler shut down",
}


class _Flight:
    """One coroutine run: handed off, then started on the loop, then finished."""

    __slots__ = ("awaitable", "finished", "future", "reason", "run", "started", "timer")

    def __init__(self, run: Run, started: float, awaitable: Any) -> None:
        self.run = run
        self.started = started
        self.awaitable = awaitable
        self.future: asyncio.Future[Any] | None = None  # set on the loop thread
        self.timer: asyncio.TimerHandle | None = None  # the timeout, on the loop thread
        self.reason: str | None = None  # why it was cancelled: timeout, cancelled, paused...
        self.finished = 0.0


class CoroutineRunner:
    """An event loop on its own thread that runs handed-off awaitables to completion."""

    def __init__(
        self,
        *,
        lock: threading.Lock,
        finish: Finish,
        now: Callable[[], float],
        limit: int = 1000,
    ) -> None:
        whole(limit, name="max_coroutines", at_least=1)
        self.limit = limit
        self._lock = lock
        self._finish = finish
        self._now = now
        # Free coroutine slots.  Taken by workers without the lock (reserve), given
        # back by the loop thread after each run is recorded.
        self._slots = threading.Semaphore(limit)
        # Guarded by the scheduler's lock: the loop and its thread (created at the
        # first hand-off), flights waiting to start, flights by task id, and the
        # flags below.  _settled (on the same lock) is notified by the loop thread
        # when the last flight is recorded; shutdown() is its only waiter.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._waiting: list[_Flight] = []
        self._flights: dict[str, _Flight] = {}
        self._wakeup_sent = False
        self._closed = False
        self._settled = threading.Condition(lock)
        # The loop thread's own: flights done and not yet recorded.
        self._done: list[_Flight] = []
        self._flush_sent = False

    @property
    def in_flight(self) -> int:
        """Coroutine runs handed off and not yet recorded.  Caller holds the lock."""
        return len(self._flights)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- called by workers -----------------------------------------------------------

    def reserve(self) -> None:
        """Wait for a free coroutine slot (a worker, without the lock)."""
        self._slots.acquire()

    def submit(self, run: Run, started: float, awaitable: Any) -> bool:
        """Run ``awaitable`` on the loop, then record it (caller holds the lock and
        reserved a slot).  False, the slot given back, once the runner is closed."""
        if self._closed:
            self._slots.release()
            _close(awaitable)
            return False
        if self._loop is None:
            self._start_loop()
        assert self._loop is not None
        flight = _Flight(run, started, awaitable)
        self._flights[run.task.id] = flight
        self._waiting.append(flight)
        if not self._wakeup_sent:  # one wake-up per batch, not per hand-off
            self._wakeup_sent = True
            self._loop.call_soon_threadsafe(self._start_waiting)
        return True

    def cancel(self, task_id: str, reason: str) -> None:
        """Cancel the task's running coroutine, if it has one (caller holds the lock)."""
        flight = self._flights.get(task_id)
        if flight is None or flight.reason is not None:
            return
        flight.reason = reason
        context = flight.run.context
        if context is not None:
            context.cancel(reason)
        if flight.future is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(flight.future.cancel)
        # not started yet: _start_waiting sees the reason and never starts it

    # -- shutdown --------------------------------------------------------------------

    def shutdown(self, timeout: float | None) -> bool:
        """Wait up to ``timeout`` for the coroutines in flight, cancel those left (and
        give them up to :data:`CANCEL_GRACE` to end), stop and close the loop.  True
        when the loop thread stopped.  Caller must not hold the lock.  Idempotent.

        A flight that did not end even then (it swallows its cancellation, or blocks
        the loop) is recorded here, as cancelled: no run is left unrecorded.
        """
        deadline = None if timeout is None else time.monotonic() + timeout

        def remaining() -> float | None:
            return None if deadline is None else max(0.0, deadline - time.monotonic())

        with self._lock:
            self._closed = True
            loop, thread = self._loop, self._thread
            if loop is None or thread is None:
                return True
            if self._flights:
                self._settled.wait_for(lambda: not self._flights, remaining())
            if self._flights:
                for task_id in list(self._flights):
                    self.cancel(task_id, "shutdown")
                self._settled.wait_for(lambda: not self._flights, CANCEL_GRACE)
            for flight in list(self._flights.values()):  # still not over: record it now
                flight.finished = self._now()
                self._record(flight)
        if thread.is_alive():
            try:
                loop.call_soon_threadsafe(loop.stop)
            except RuntimeError:  # closed in the meantime: the thread is ending
                pass
            thread.join(CANCEL_GRACE)
        return not thread.is_alive()

    # -- the loop thread ---------------------------------------------------------------

    def _start_loop(self) -> None:
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=self._serve, args=(loop,), name="lldsched-loop")
        thread.daemon = True
        self._loop, self._thread = loop, thread
        thread.start()

    def _serve(self, loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            while True:
                try:
                    loop.run_forever()
                    break  # stopped by shutdown()
                except BaseException:  # a coroutine raised KeyboardInterrupt/SystemExit
                    log.exception("a coroutine action raised through the event loop")
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()

    def _start_waiting(self) -> None:
        loop = self._loop
        assert loop is not None
        with self._lock:
            waiting, self._waiting = self._waiting, []
            self._wakeup_sent = False
            for flight in waiting:
                if flight.reason is not None:  # cancelled or paused before it started
                    _close(flight.awaitable)
                    self._ended(flight)
                    continue
                try:  # no user code runs here: a task's first step is only scheduled
                    future = asyncio.ensure_future(flight.awaitable, loop=loop)
                except Exception as exc:  # e.g. a future of another loop
                    flight.reason = error_text(exc)
                    self._ended(flight)
                    continue
                flight.future = future
                future.add_done_callback(lambda _, flight=flight: self._ended(flight))
                timeout = flight.run.task.timeout
                if timeout is not None:
                    flight.timer = loop.call_later(timeout, self._time_out, flight)

    def _time_out(self, flight: _Flight) -> None:
        with self._lock:
            if flight.reason is not None:
                return
            flight.reason = "timeout"
        context = flight.run.context
        if context is not None:
            context.cancel("timeout")
        assert flight.future is not None
        flight.future.cancel()

    def _ended(self, flight: _Flight) -> None:
        """A flight is over: record it with the next batch."""
        flight.finished = self._now()
        if flight.timer is not None:
            flight.timer.cancel()
        self._done.append(flight)
        if not self._flush_sent:
            self._flush_sent = True
            assert self._loop is not None
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        done, self._done = self._done, []
        self._flush_sent = False
        with self._lock:
            for flight in done:
                if self._flights.get(flight.run.task.id) is flight:  # not recorded by shutdown
                    self._record(flight)

    def _record(self, flight: _Flight) -> None:
        """Write the flight's record and free its slot (caller holds the lock)."""
        error, result, timed_out = _outcome(flight)
        del self._flights[flight.run.task.id]
        try:
            self._finish(flight.run, flight.started, flight.finished, error, result, timed_out)
        except Exception:  # finish records user failures itself: this is our bug
            log.exception("could not settle the coroutine run %r", flight.run)
        self._slots.release()
        if not self._flights:
            self._settled.notify_all()


def _outcome(flight: _Flight) -> tuple[str | None, str | None, bool]:
    """(error text, result text, timed out) of a flight that is over."""
    reason = flight.reason
    if reason == "timeout":
        timeout = flight.run.task.timeout
        return f"TimeoutError: cancelled at its {timeout:g} s timeout", None, True
    future = flight.future
    if reason is not None and (future is None or not future.done() or future.cancelled()):
        return _REASONS.get(reason, reason), None, False
    assert future is not None
    if future.cancelled():  # the coroutine cancelled itself, or raised CancelledError
        return "CancelledError", None, False
    exc = future.exception()
    if exc is not None:
        return error_text(exc), None, False
    if reason is not None:  # cancelled, but the coroutine swallowed it and returned
        return _REASONS.get(reason, reason), None, False
    return None, result_text(future.result()), False


def _close(awaitable: object) -> None:
    """Close a coroutine that will never run (no "never awaited" warning)."""
    if inspect.iscoroutine(awaitable):
        awaitable.close()
