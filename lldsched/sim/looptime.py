"""SkippingLoop: the event loop a simulation runs coroutine actions on, whose clock skips
the time it would sleep.

A discrete-event simulation does not wait on real time: a day replays in a fraction of
a second.  A coroutine action runs for real (for its side effects), and one that
awaits ``asyncio.sleep(5)`` (a production job's back-off, a stand-in for work) slept
five real seconds on a plain loop, and one past its task's ``timeout`` was cut only
after that many real seconds: ten minutes of a task with ``timeout=1`` whose coroutine
hung took a real second a retry.  The run's simulated duration is its duration model's
all the same, so that wait bought nothing.

This loop's clock (``loop.time()``, what ``asyncio.sleep``, ``call_later``,
``asyncio.wait_for`` and ``asyncio.timeout`` count on) is real monotonic time plus the
time skipped: when the loop would block with nothing to wait for but its next timer,
it moves its clock to that timer instead of sleeping (:class:`_SkippingSelector`).  It
still polls first, so a wake-up already sent is not skipped over.  It sleeps for real
when something outside the loop may end that wait: a file descriptor it watches (a
socket, a subprocess's pipe: anything but its own wake-up pipe) or a thread's future
whose result it has not had yet.  Such a future is one rule, in one place: a future of
this loop (:meth:`SkippingLoop.create_future`) that asyncio chains to a thread's
(``asyncio.futures._chain_future``, which adds its ``_call_check_cancel`` callback to
it) is counted until its result is on the loop.  Every way a thread's future reaches
the loop goes through that chain: ``asyncio.wrap_future`` called inside a coroutine
(docs/ASYNCIO.md's recipe for awaiting the application's loop), a call of
``run_in_executor`` (``asyncio.to_thread``, ``getaddrinfo``), and a
``concurrent.futures.Future`` a run returns (an executor's ``submit``,
``run_coroutine_threadsafe`` onto another loop), which
:func:`~lldsched.core.results.as_awaitable` wraps.  What another thread completes by
other means (a bare ``call_soon_threadsafe``, the exit of a subprocess started without
pipes, which a watcher thread reports) is not seen: a timer due before it fires at
once.

A plain ``SelectorEventLoop`` on every platform (Windows' default, the proactor, has
no selector to wrap: there a coroutine action cannot start a subprocess).  Imported at
the first coroutine a simulation awaits, with asyncio (docs/PERFORMANCE.md,
"Start-up").  docs/decisions/simulation.md, "A simulation's coroutine sleeps no real time".
"""

from __future__ import annotations

import asyncio
import selectors
import time
from collections.abc import Callable
from concurrent.futures import Executor
from contextvars import Context
from typing import TYPE_CHECKING, Any, TypeVar, TypeVarTuple, cast

if TYPE_CHECKING:
    from lldsched.loopcalls import LoopCalls

__all__ = ["SkippingLoop"]

_T = TypeVar("_T")
_Ts = TypeVarTuple("_Ts")


class _SkippingSelector(selectors.BaseSelector):
    """The real selector, except that a wait the loop need not sleep through is skipped:
    :attr:`skipped` grows by it and nothing is returned, as if it had timed out."""

    def __init__(self, skips: bool) -> None:
        self._real = selectors.DefaultSelector()
        self.skips = skips  # False: every wait is slept for real (see SkippingLoop.skips)
        self.skipped = 0.0  # seconds the loop's clock is ahead of the monotonic clock
        self.threads = 0  # thread futures whose result the loop has not yet had (_watch)

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._real.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.modify(fileobj, events, data)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        # One descriptor is the loop's own wake-up pipe: with it alone, nothing it
        # watches can end the wait but a timer (or a call_soon_threadsafe: polled).
        if (
            timeout is None
            or timeout <= 0
            or not self.skips
            or self.threads
            or len(self._real.get_map()) > 1
        ):
            return self._real.select(timeout)
        ready = self._real.select(0)
        if not ready:
            self.skipped += timeout
        return ready

    def close(self) -> None:
        self._real.close()

    def get_map(self) -> Any:
        return self._real.get_map()


class SkippingLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock skips the waits nothing outside it can end (see the
    module), while :attr:`skips` is True.

    A loop that turns only while a run is awaited (``run_until_complete`` on the
    caller's thread) always skips.  One that runs for ever on a thread of its own (the
    simulation's ``LoopThread``) skips only while it runs a run, or ends what is left on
    it: between runs, a task a coroutine action left there (a heartbeat that sleeps in
    a loop) would otherwise be driven round its sleeps as fast as the thread can go."""

    def __init__(self, *, skips: bool = True) -> None:
        self._skipping = _SkippingSelector(skips)
        self.calls: LoopCalls | None = None  # the default executor, once set (run_in_executor)
        super().__init__(self._skipping)

    @property
    def skips(self) -> bool:
        return self._skipping.skips

    @skips.setter
    def skips(self, value: bool) -> None:
        self._skipping.skips = value

    def time(self) -> float:
        return time.monotonic() + self._skipping.skipped

    def run_in_executor(
        self, executor: Executor | None, func: Callable[[*_Ts], _T], *args: *_Ts
    ) -> asyncio.Future[_T]:
        """asyncio's, on a default executor of daemon threads an exit does not wait for
        (:class:`~lldsched.loopcalls.LoopCalls`, made at the first call): a call cut at
        its run's timeout goes on on its thread, which held the exit after the
        simulation's shutdown (for ever, for a call that never returns) on asyncio's
        default executor."""
        if executor is None and self.calls is None:
            from lldsched.loopcalls import LoopCalls

            self.calls = LoopCalls(thread_name_prefix="lldsched-sim-loop-to-thread")
            self.set_default_executor(self.calls)
        return super().run_in_executor(executor, func, *args)

    def create_future(self) -> asyncio.Future[Any]:
        """A future of this loop that is counted while asyncio chains it to a thread's
        (:class:`_Future`)."""
        return _Future(loop=self)

    def _thread_started(self, future: asyncio.Future[Any]) -> None:
        """``future`` is chained to a thread's: counted until its result is on this loop
        (the callback runs there, after it, or at once once it is cancelled); meanwhile a
        wait is slept for real, as the thread's work takes real time."""
        self._skipping.threads += 1
        asyncio.Future.add_done_callback(future, self._thread_over)

    def _thread_over(self, future: asyncio.Future[Any]) -> None:
        self._skipping.threads -= 1


def _chain_callback() -> object:
    """The code of the callback ``asyncio.futures._chain_future`` adds to the future it
    chains a thread's to (``_call_check_cancel`` in CPython 3.11, 3.12 and 3.13), None if
    there is none: then no chained future is counted (tests/test_sim_loop_time.py fails)."""
    chain = getattr(asyncio.futures, "_chain_future", None)
    constants = getattr(getattr(chain, "__code__", None), "co_consts", ())
    for constant in constants:
        if getattr(constant, "co_name", None) == "_call_check_cancel":
            return constant
    return None


_CHAINED = _chain_callback()


class _Future(asyncio.Future[Any]):
    """A :class:`SkippingLoop`'s future: one that asyncio chains to a thread's (its
    ``_chain_future`` callback added) tells its loop, which counts it until it is done.

    ``asyncio.wrap_future`` asks nothing of the loop but ``create_future``, which every
    future is made with (``asyncio.sleep``'s too): the chain's callback is what tells a
    thread's wait from one a timer ends.  A Python subclass, so a task awaiting one of
    these calls this method rather than the C future's own (docs/decisions/simulation.md,
    "A thread's future a coroutine wraps is waited for", for the cost)."""

    def add_done_callback(
        self, fn: Callable[[_Future], object], /, *, context: Context | None = None
    ) -> None:
        super().add_done_callback(fn, context=context)
        if getattr(fn, "__code__", None) is _CHAINED:
            cast(SkippingLoop, self.get_loop())._thread_started(self)
