"""PrivateLoop: how the simulation runs a coroutine action at its simulated instant.

A simulated run calls its real action (for its side effects) when it starts.  An
``async def`` action returns a coroutine, which is not a result yet: it is run to
completion here, on a private event loop owned by the simulation (created at the
first coroutine, closed with the simulation), before the run goes on.  Its wall
time does not count: the run takes its *simulated* duration, as any action.  Nor does
it wait on real time for nothing: both loops are instances of
:class:`~lldsched.sim.looptime.SkippingLoop`, whose clock skips a wait only a timer can
end (an ``asyncio.sleep``, a timeout), so a coroutine that sleeps an hour runs at once;
a wait on real work (a thread of ``asyncio.to_thread``, a socket) is waited for.

**Where that loop runs.**  On the caller's thread, when no event loop runs there (a
script, a test): ``loop.run_until_complete``, nothing else.  A thread that already
runs an event loop (a Jupyter or IPython kernel's cell, ``await sim.aclose()``, an
async web app replaying a simulation, a coroutine action that drives its simulation
again) cannot run a second one on top of it: asyncio refuses with "Cannot run the
event loop while another loop is running".  There the coroutine is handed
(``asyncio.run_coroutine_threadsafe``) to a second private loop on a thread the
simulation owns (:class:`LoopThread`: daemon, named ``lldsched-sim-loop-<n>``, started
at the first such coroutine), and the caller's thread blocks until it completes, as
it would have blocked in ``run_until_complete``: the caller's own loop does not turn
meanwhile (a coroutine action must not wait for something on that loop).  Both
paths make the future and read its end the same way (:func:`_failed` reads it), so
results, errors, timeouts and ``contextvars`` are the same on both: the coroutine
runs in a copy of the caller's context either way (a variable the caller set is
seen, one the coroutine sets is not seen by the caller or by the next run).
:meth:`PrivateLoop.close` (the simulation's ``shutdown``) stops that thread and closes
both loops, each once the tasks a coroutine action left on it are cancelled and have
ended (:func:`~lldsched.core.results.end_left_tasks`, :data:`LEFT_TASKS_WAIT`); one made
again later (a second shutdown's drain) is made as the first was; a simulation dropped
without a shutdown has them closed as it is collected, and the thread, a daemon, never
keeps the process alive (docs/decisions/simulation.md, "A coroutine action runs whatever loop the
caller's thread runs").

As in the threaded runtime, a coroutine's timeout is enforced: one still running
after its task's timeout on its loop's clock (real seconds it waited on real work, plus
those the clock skipped) is cancelled and its run is recorded ``timed_out``; and a
simulated duration over the timeout is cut at the timeout (see
:meth:`lldsched.sim.simulation.Simulation.schedule`).
"""

from __future__ import annotations

import itertools
import logging
import threading
import weakref
from typing import TYPE_CHECKING, Any

from lldsched.core.results import awaited, end_left_tasks, result_text
from lldsched.core.runs import cancelled_error
from lldsched.errors import CANCELLED_INSIDE, error_text
from lldsched.logs import SCHEDULER, counted

if TYPE_CHECKING:
    import asyncio

    from lldsched.loopcalls import LoopCalls
    from lldsched.sim.looptime import SkippingLoop

__all__ = ["Awaited", "LoopThread", "PrivateLoop"]

Awaited = tuple["str | None", "str | None", bool]
"""What awaiting produced: error text, result text, timed out."""

LEFT_TASKS_WAIT = 1.0
"""Seconds, on the loop's clock, a closing loop gives the tasks a coroutine action left
on it to end once cancelled (:func:`~lldsched.core.results.end_left_tasks`): the
threaded runtime's ``CANCEL_GRACE``.  Only a task deaf to its cancellation takes it,
and it takes real time only while such a task waits on real work (the clock skips the
rest: :mod:`~lldsched.sim.looptime`)."""

_NUMBERS = itertools.count(1)  # the helper threads' names: lldsched-sim-loop-<n>

NESTED = (
    "RuntimeError: a coroutine action run on the simulation's helper thread cannot "
    "drive that simulation again (its loop is the one running there)"
)
"""The error of a coroutine action reached by driving a simulation from a coroutine
action that itself runs on that simulation's :class:`LoopThread`: waiting there for
that thread's loop would wait for itself."""


class _Cut(Exception):
    """Raised by :func:`_bounded` when the run was still going at its timeout."""


def _failed(exc: BaseException, timeout: float | None) -> Awaited:
    """What awaiting a run produced, when it raised ``exc`` (an ``Exception`` or
    asyncio's ``CancelledError``): both paths' one reading."""
    if isinstance(exc, _Cut):
        assert timeout is not None  # cut only at a timeout
        return cancelled_error(timeout), None, True
    if not isinstance(exc, Exception):  # CancelledError, not the cut's: its own
        return CANCELLED_INSIDE, None, False
    return error_text(exc), None, False


async def _bounded(future: Any, timeout: float | None) -> object:
    """What ``future`` (a run's task) gives, or :class:`_Cut` at ``timeout`` (on the
    loop's clock), once it is cancelled and has ended, or has had
    :data:`LEFT_TASKS_WAIT` to: a coroutine deaf to its cancellation is left on the loop
    (the shutdown cancels it again), and the simulation goes on.  ``asyncio.wait_for``,
    used before, waits for the cancelled task to end, so such a coroutine held
    ``run_for`` for ever (the threaded runtime goes on without it: it records it when
    it ends, or at its shutdown).  Whatever it ends with after its cut (an error on its
    way out, a value) is read here, not recorded: the run was cut at its timeout."""
    if timeout is None:
        return await future  # cancelling this cancels the run too
    import asyncio  # imported already: its caller made the loop

    try:
        done, _ = await asyncio.wait((future,), timeout=timeout)
    except BaseException:  # cancelled itself (a Ctrl-C on the caller's thread): so is the run
        future.cancel()
        raise
    if done:
        return future.result()
    future.cancel()
    await asyncio.wait((future,), timeout=LEFT_TASKS_WAIT)
    if future.done() and not future.cancelled():
        future.exception()  # read, so that asyncio does not log it as never retrieved
    raise _Cut


async def _complete(awaitable: Any, timeout: float | None) -> Awaited:
    """What :meth:`PrivateLoop.run` does on the caller's thread, as a coroutine for the
    :class:`LoopThread`'s loop (which makes the future on its own thread)."""
    import asyncio  # imported already: its caller made the loop

    loop: Any = asyncio.get_running_loop()  # the LoopThread's SkippingLoop
    loop.skips = True  # while this run is awaited: not between runs
    try:
        value = await _bounded(asyncio.ensure_future(awaited(awaitable)), timeout)
    except (Exception, asyncio.CancelledError) as exc:
        return _failed(exc, timeout)
    finally:
        loop.skips = False
    return None, result_text(value), False


def _unwind(asyncio: Any, loop: asyncio.AbstractEventLoop, future: Any) -> None:
    """A ``KeyboardInterrupt`` or ``SystemExit`` came out of ``loop`` (the coroutine's, or
    a Ctrl-C that landed while the loop waited): what is left on it is cancelled and run
    to its end now, as ``asyncio.run`` does at its end, not resumed by the next coroutine
    run on this loop (the interrupted one went on there, after its attempt was recorded
    failed) nor left pending to be collected ("Task was destroyed but it is pending!").
    A task that ended with the interrupt has it read, so none is logged as never
    retrieved: those left on the loop, and ``future`` (the awaited one, None: never
    made), which is done already when its own coroutine raised it.  Left unread, its
    log at collection formatted a traceback from inside whatever the collection
    interrupted (CPython 3.11.7 then failed an ``ast.parse`` under way with "AST
    constructor recursion depth mismatch").  A second Ctrl-C while that runs is raised
    as it is."""
    tasks = asyncio.all_tasks(loop)
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
    for task in (*tasks, future) if future is not None else tasks:
        if task.done() and not task.cancelled():
            task.exception()


class LoopThread:
    """A private event loop running on a daemon thread of its own until :meth:`close`.

    Holds no reference to the simulation (its thread would keep it alive): the
    :class:`PrivateLoop` that made it closes it, at shutdown or when collected."""

    def __init__(self) -> None:
        from lldsched.sim.looptime import SkippingLoop

        self.loop = SkippingLoop(skips=False)  # it skips while a run is awaited (_complete)
        self.thread = threading.Thread(
            target=self._serve, name=f"lldsched-sim-loop-{next(_NUMBERS)}", daemon=True
        )
        self._closing = False
        self.thread.start()

    def _serve(self) -> None:
        try:
            self.loop.run_forever()
            self.loop.skips = True
            end_left_tasks(self.loop, LEFT_TASKS_WAIT)
        finally:
            self.loop.close()

    def close(self) -> None:
        """Stop the loop, close it on its thread and wait for that thread to end (not
        when called on it: it ends as this call returns).  Idempotent."""
        if not self._closing:
            self._closing = True
            self.loop.call_soon_threadsafe(self.loop.stop)
        if threading.current_thread() is not self.thread:
            self.thread.join()


class PrivateLoop:
    """An event loop, created at first use, that runs one awaitable at a time: on the
    caller's thread, or on a :class:`LoopThread` when an event loop runs there."""

    def __init__(self) -> None:
        self._loop: SkippingLoop | None = None
        self._calls_closed: list[LoopCalls] = []  # the executors of loops closed, calls going
        self._thread: LoopThread | None = None

    def run(self, awaitable: Any, timeout: float | None) -> Awaited:
        """Run ``awaitable`` to completion (cancelled after ``timeout`` seconds of its loop's
        clock)."""
        # Imported at the first coroutine a simulation awaits, not with lldsched.sim (as
        # the threaded runtime's CoroutineRunner._start_loop does: docs/PERFORMANCE.md, "Start-up").
        import asyncio

        if asyncio._get_running_loop() is not None:  # a loop runs on this thread
            return self._on_thread(asyncio, awaitable, timeout)
        loop = self._loop
        if loop is None:
            from lldsched.sim.looptime import SkippingLoop

            loop = self._loop = SkippingLoop()
            weakref.finalize(self, loop.close)
        # The future made here, before the loop runs (not by a coroutine on it, as
        # _complete does): the run takes one turn of the loop, not three (bench).
        future = None
        try:
            future = asyncio.ensure_future(awaited(awaitable), loop=loop)
            value = loop.run_until_complete(_bounded(future, timeout))
        except (Exception, asyncio.CancelledError) as exc:
            return _failed(exc, timeout)
        except BaseException:  # a Ctrl-C (or exit) out of the loop: nothing left on it
            _unwind(asyncio, loop, future)
            raise
        return None, result_text(value), False

    def _on_thread(self, asyncio: Any, awaitable: Any, timeout: float | None) -> Awaited:
        """Run ``awaitable`` on the :class:`LoopThread` (made now if there is none),
        blocking this thread until it completes."""
        helper = self._thread
        if helper is None:
            helper = self._thread = LoopThread()
            weakref.finalize(self, helper.close)
        if threading.current_thread() is helper.thread:  # its loop is the one running
            close = getattr(awaitable, "close", None)
            if close is not None:  # never awaited: closed now, not warned of when collected
                close()
            return NESTED, None, False
        future = asyncio.run_coroutine_threadsafe(_complete(awaitable, timeout), helper.loop)
        try:
            result: Awaited = future.result()
        except BaseException:  # a Ctrl-C while it runs there: it is cancelled there too
            future.cancel()
            raise
        return result

    def close(self) -> int:
        """Close both loops (the helper's thread ended first), each unless it is running
        now (a coroutine action that called the simulation's ``shutdown()``: that loop
        is closed by a later shutdown, or when the simulation is collected).  A later
        coroutine makes them again.  Returns how many ``asyncio.to_thread`` calls of the
        loops closed (by this call or an earlier one) are still running on their
        threads, the calls not started dropped (:meth:`LoopCalls.left_going
        <lldsched.loopcalls.LoopCalls.left_going>`): a call a run's timeout cut goes on,
        and a thread cannot be stopped."""
        helper = self._thread
        if helper is not None and threading.current_thread() is not helper.thread:
            self._thread = None
            helper.close()
            self._keep_calls(helper.loop)
        loop = self._loop
        if loop is not None and not loop.is_running():
            self._loop = None
            try:
                end_left_tasks(loop, LEFT_TASKS_WAIT)
            finally:
                loop.close()
                self._keep_calls(loop)
        going = [(calls, calls.left_going()) for calls in self._calls_closed]
        self._calls_closed = [calls for calls, left in going if left]
        return sum(left for _, left in going)

    def _keep_calls(self, loop: SkippingLoop) -> None:
        """Keep the executor of ``loop``, closed, if it made one: its calls still running
        are counted at every :meth:`close`, until none is."""
        if loop.calls is not None:
            self._calls_closed.append(loop.calls)


def say_calls_left(calls: int) -> None:
    """Say, at WARNING on ``lldsched.scheduler``, that a simulation's shutdown left
    ``calls`` ``asyncio.to_thread`` calls of coroutine runs running (:meth:`PrivateLoop.
    close`), in the words the threaded shutdown's warning uses for its own: before, it
    returned True without a word while they ran on."""
    logging.getLogger(SCHEDULER).warning(
        "Simulation.shutdown() returned with %s of coroutine runs still going (a call "
        "its run's timeout cut goes on); a thread cannot be stopped: each ends on its own, "
        "unless the process ends first",
        counted(calls, "asyncio.to_thread call"),
    )
