"""The default executor of the scheduler's event loop, and of a simulation's: the threads
of the ``asyncio.to_thread`` calls of coroutine runs (``run_in_executor(None, ...)``),
which an exit does not wait for.

A program that ends without ``shutdown()`` does not wait for the scheduler: its threads
are daemon threads, and a run in flight is cut short (docs/OPERATIONS.md, "Running it
in a service").  A coroutine run's ``asyncio.to_thread`` call was the exception: a
:class:`~concurrent.futures.ThreadPoolExecutor` notes each of its threads for an exit
hook of :mod:`concurrent.futures` (``threading._register_atexit``) that joins them,
daemon or not, so such a program waited for the call to return, for ever if it never
did (measured: an exit held 20 s by a call sleeping 20 s).

:class:`LoopCalls` is that executor without the note: its threads are made on the
loop's thread, a daemon thread, so they are daemon threads too, and nothing joins them
at exit.  ``shutdown()`` still waits for them within its timeout
(:mod:`lldsched.threaded.coroutines.runner`); only an exit without one no longer does.  A
simulation's loop may run on the caller's thread (the main thread, not a daemon): a
thread the pool needs is then started from a daemon thread of a moment's life, so it is
a daemon too (:class:`~lldsched.sim.looptime.SkippingLoop`; before, a call its run's
timeout had cut went on after ``Simulation.shutdown()`` and held the exit).  The
loop refuses a default executor that is not a ``ThreadPoolExecutor``, hence a
subclass; the note it drops is ``concurrent.futures.thread._threads_queues``, the same
name in Python 3.11, 3.12 and 3.13 (checked; a test ends a program in such a call), and
in 3.14's source, as are ``_adjust_thread_count`` and ``_threads`` (read, not run:
docs/decisions/platforms.md, "Forward compatibility").
"""

from __future__ import annotations

import concurrent.futures.thread
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

__all__ = ["LoopCalls"]


class LoopCalls(ThreadPoolExecutor):
    """A thread pool whose threads are daemon threads an exit does not wait for (see the
    module docstring); given its calls on an event loop's thread."""

    def __init__(self, *, thread_name_prefix: str) -> None:
        # Marks this pool's threads, each as it starts, before its first call (the pool's
        # set of threads gets a thread only once it started: a call may run before).
        self._mine = threading.local()
        self._prefix = thread_name_prefix
        # Guards _going: the loop's thread adds a call, the pool's thread that ends it
        # (or the one that cancels it) takes it out, and a shutdown counts them.
        self._going_lock = threading.Lock()
        self._going: set[Future[Any]] = set()  # the calls submitted and not done
        super().__init__(thread_name_prefix=thread_name_prefix, initializer=self._mark)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        """The base class's, the call counted until it is done (:meth:`left_going`)."""
        future = super().submit(fn, *args, **kwargs)
        with self._going_lock:
            self._going.add(future)
        future.add_done_callback(self._gone)  # at once if it is done already
        return future

    def _gone(self, future: Future[Any]) -> None:
        with self._going_lock:
            self._going.discard(future)

    def left_going(self) -> int:
        """Shut the pool down without waiting, the calls not started dropped, as the
        threaded runtime's shutdown drops them; the number still running, each left to
        end on its own (a thread cannot be stopped): what a simulation's shutdown says
        (:meth:`lldsched.sim.awaiting.PrivateLoop.close`).  Idempotent: asked again,
        the calls still running then."""
        self.shutdown(wait=False, cancel_futures=True)
        with self._going_lock:
            return len(self._going)

    def _mark(self) -> None:
        self._mine.marked = True

    def _adjust_thread_count(self) -> None:
        """Start a thread if one is needed (the base class; from a daemon thread, so
        that it is a daemon: the module docstring), then take every thread of this pool
        out of the ones ``concurrent.futures`` joins at exit.  Called by ``submit`` under
        ``concurrent.futures``' own lock, which guards that mapping (the starter runs
        while its caller holds it, and waits)."""
        if threading.current_thread().daemon:
            super()._adjust_thread_count()
        else:  # the thread it starts would not be a daemon: started from one that is
            starter = threading.Thread(
                target=super()._adjust_thread_count, name=f"{self._prefix}-starter", daemon=True
            )
            starter.start()
            starter.join()
        joined_at_exit: Any = getattr(concurrent.futures.thread, "_threads_queues", {})
        for thread in self._threads:
            joined_at_exit.pop(thread, None)

    def runs_caller(self) -> bool:
        """True when the caller is one of this pool's threads (a coroutine run's
        ``asyncio.to_thread`` call, or something it called)."""
        return getattr(self._mine, "marked", False)
