"""The coroutine runner's loop thread: what waits started as slots free, each run driven
to its end and recorded.

:class:`LoopThread` is the part of :class:`~lldsched.threaded.coroutines.CoroutineRunner`
that runs on its thread (``lldsched-<name>-loop``); a mixin, so the runner's hand-over
(:mod:`~lldsched.threaded.coroutines.runner`, called under the lock by the timer, the workers
and the verbs), its loop thread (here) and its end (:mod:`~lldsched.threaded.coroutines.shutdown`)
read as three modules of one class, which declares below the members of the runner it
uses.

The loop is made at the first hand-over (:meth:`~LoopThread._start_loop`, which imports
asyncio then, not with lldsched).  On it, what waits for a slot is begun and started
:data:`START_BATCH` at a time (:meth:`~LoopThread._start_waiting`, the slots taken under
the lock by :meth:`~LoopThread._take_slots`); each run is one asyncio task that awaits
it (:meth:`~LoopThread._drive`), cancelled at its timeout (:meth:`~LoopThread._time_out`)
or by a verb; the runs over are recorded in batches, one hold of the lock a batch, their
failures' lines logged once it is let go (:meth:`~LoopThread._flush`).

The runner's fields are guarded by the scheduler's one lock, as the runner says; the
loop-only fields (``_done``, ``_flush_sent``) are the loop thread's own.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable, Container
from contextvars import Context
from types import CoroutineType
from typing import TYPE_CHECKING

from lldsched.core.results import awaited, end_left_tasks, must_await, result_text
from lldsched.core.task import Entry, Run
from lldsched.errors import CANCELLED_INSIDE, error_text
from lldsched.logs import WORKERS
from lldsched.threaded.coroutines.flights import (
    NEVER_BEGUN,
    RETURNED_NONE,
    Flight,
    cancelled_outcome,
    close_unrun,
    ended_first,
    failure_text,
)
from lldsched.threaded.deadline import Flag

if TYPE_CHECKING:  # imported at the first coroutine run: see LoopThread._start_loop
    import asyncio
    from asyncio import Task

    from lldsched.loopcalls import LoopCalls

__all__ = ["START_BATCH", "Finish", "LoopThread"]

Finish = Callable[
    [Run, float, float, "str | None", "str | None", bool, "BaseException | None"], bool
]
"""``finish(run, started, finished, error, result, timed_out, raised)``, called under the
lock: records the run (the runner settles it, with ``settle``); True when it queued a
line to log (a failure), which ``said`` logs once the lock is let go, before the settle.
``raised`` is the exception the coroutine (or the action that made it) raised, for the
line's traceback."""

log = logging.getLogger(WORKERS)

START_BATCH = 32
"""The most runs the loop begins and starts in one go: more that wait, with free slots,
start in the next go, queued behind this one's first steps (and so behind the record of
the runs those steps finish).  Each run in flight holds about a dozen objects the cyclic
collector tracks (its ``Run`` and :class:`Flight`, the coroutine, its driver, the asyncio
task, its step's handle and context); begun 1,000 at a time (``max_coroutines``'
default), runs that end at once filled the young generation about 11 times a go and
pushed the runs in flight on to full collections of the whole heap.  In goes of 32, what
one go allocates is freed before the next fills the generation: 20,000 no-op coroutines
due at once cost 75,831 -> 66,963 instructions a run (-11.7 %; 128 a go: 73,337;
16: 67,480), ``benchmarks/threaded_instructions.py coroutines``."""


class LoopThread:
    """The loop thread's side of the coroutine runner: mixed into it."""

    # The runner's members this part uses (CoroutineRunner.__init__ sets them and says
    # what each is).
    _name: str
    limit: int
    lane: int
    _lock: threading.Lock  # the scheduler's one lock: guards the runner's hand-over state
    _begin: Callable[[Entry, int], Run | None]
    _loop_ids: Container[str]
    _to_workers: Callable[[list[Entry]], None]
    _finish: Finish
    _said: Callable[[], None]
    _now: Callable[[], float]
    _clock_raised: Callable[[Run, Exception], tuple[float, str]]
    _begin_raised: Callable[[Entry, BaseException], None]
    _cut: Callable[[Run], None]
    _loop: asyncio.AbstractEventLoop | None
    _task_class: type[Task[None]] | None
    _thread: threading.Thread | None
    _executor: LoopCalls | None
    _waiting: collections.deque[Entry | Flight]
    _flights: dict[int, Flight]
    _active: int
    in_hand: int
    _wakeup_sent: bool
    _leftover_wait: float
    _settled: Flag
    _done: list[Flight]  # the loop thread's own
    _flush_sent: bool  # the loop thread's own
    on_free: Callable[[], None] | None

    if TYPE_CHECKING:

        def _release(self, count: int) -> None: ...

        def _over_all(self) -> bool: ...

    def _start_loop(self) -> None:
        # asyncio (and concurrent.futures, which it and LoopCalls import) is imported
        # here, at the first coroutine run, not with lldsched: its share was 61 M of the
        # 404 M instructions `import lldsched` cost over a bare interpreter, and a
        # scheduler of thread tasks, the simulation and the CLI never need it
        # (docs/PERFORMANCE.md, "Start-up"; tests/test_startup.py).  The loop thread's
        # other uses of it come after this.
        import asyncio

        from lldsched.loopcalls import LoopCalls

        loop = asyncio.new_event_loop()
        # Its own default executor, so that shutdown can wait for its calls within its
        # timeout (3.11's loop.shutdown_default_executor() takes no timeout, and joins
        # its thread unbounded even when cancelled) and name their threads.
        # Its threads are not joined at exit (lldsched/loopcalls.py).
        executor = LoopCalls(thread_name_prefix=f"{self._name}-to-thread")
        loop.set_default_executor(executor)
        thread = threading.Thread(target=self._serve, args=(loop,), name=self._name)
        thread.daemon = True
        try:
            thread.start()
        except BaseException:  # its thread refused: no _serve will close it
            # Was kept open, unserved: its selector and self-pipe leaked until the
            # collector found it ("unclosed event loop", a ResourceWarning raised in
            # whatever ran then).  Kept by nothing, as when the selector is refused.
            loop.close()
            raise
        self._executor = executor
        self._loop, self._thread, self._task_class = loop, thread, asyncio.Task

    def _serve(self, loop: asyncio.AbstractEventLoop) -> None:
        import asyncio  # imported by _start_loop, which started this thread

        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()  # until shutdown() stops it
            end_left_tasks(loop, self._leftover_wait)  # a run's background tasks
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()

    def _start_waiting(self) -> None:
        """Begin and start what waits, as far as the free slots go: the slots taken
        under the lock (:meth:`_take_slots`), then each flight started without it."""
        loop, task_class = self._loop, self._task_class
        assert loop is not None and task_class is not None
        starting = self._take_slots()
        drive, now = self._drive, self._now
        # In asyncio's debug mode (PYTHONASYNCIODEBUG, python -X dev) its slow-step
        # warnings name the task: the run's, not "Task-7" driving CoroutineRunner._drive.
        debug = loop.get_debug()
        for flight in starting:
            if flight.awaitable is None:  # call the loop task's action: it makes the coroutine
                try:
                    flight.started = now()
                except Exception as exc:  # (rare) the clock raised: failed unrun, settled
                    self._clock_failed(flight, exc)
                    self._ended(flight)
                    continue
                raised: BaseException | None
                try:
                    raised, value = flight.run.invoke()
                except BaseException as exc:  # KeyboardInterrupt: recorded, the loop lives on
                    raised, value = exc, None
                if raised is not None:
                    flight.outcome, flight.raised = (error_text(raised), None), raised
                    self._over(flight)
                    continue
                if type(value) is not CoroutineType and not must_await(value):
                    # it returned a plain value after all
                    flight.outcome = (None, result_text(value))
                    self._over(flight)
                    continue
                flight.awaitable = value
            # A context of its own, empty: this batch may run in a finished run's context
            # (its _flush scheduled this start), which a task would otherwise copy.  One
            # cancelled or paused before it starts is never begun: _drive's first step
            # says so (the verb that came before the task was made queued no cancel).
            if debug:
                name = f"lldsched run of {flight.run.task.id} {flight.run.name!r}"
                flight.future = task_class(drive(flight), loop=loop, name=name, context=Context())
            else:
                flight.future = task_class(drive(flight), loop=loop, context=Context())
            # In force now (read without the lock): a modify or a replace since its begin
            # holds it to the task's timeout, and one after this re-arms it (retime).
            timeout = flight.run.task._options.timeout
            if timeout is not None:
                flight.budget = timeout
                flight.timer = loop.call_later(timeout, self._time_out, flight)

    def _take_slots(self) -> list[Flight]:
        """Under the lock: what waits, in order, as far as the free slots and
        :data:`START_BATCH` go, each now active; a loop task's entry begins its attempt
        here (an entry cancelled or paused while it waited is a tombstone, settled)."""
        starting: list[Flight] = []
        with self._lock:
            self._wakeup_sent = False
            waiting, flights, begin, lane = self._waiting, self._flights, self._begin, self.lane
            loop_ids = self._loop_ids
            tombstones = 0
            workers: list[Entry] = []
            room = min(self.limit - self._active, START_BATCH)
            while waiting and len(starting) < room:
                item = waiting.popleft()
                if isinstance(item, Flight):
                    flight = item
                elif item[3] not in loop_ids:  # replaced while it waited: not a loop task now
                    workers.append(item)
                    continue
                else:  # a loop task's entry: its attempt begins now
                    try:  # free until it raises (3.11)
                        run = begin(item, lane)
                    except BaseException as exc:  # (rare) a bug: settled as a tombstone
                        self._begin_raised(item, exc)
                        run = None
                    if run is None:  # cancelled or paused while it waited for a slot
                        tombstones += 1
                        continue
                    flight = flights[id(run)] = Flight(run, 0.0, None)
                flight.active = True
                starting.append(flight)
            self._active += len(starting)
            if workers:  # still in flight, no longer here: the workers settle them
                self.in_hand -= len(workers)
                self._to_workers(workers)
            if tombstones:
                self._release(tombstones)
            if tombstones or workers:
                self._notify_if_settled()
                self._freed()
            if waiting and self._active < self.limit:  # more can start: in the next go
                self._wakeup_sent = True
                assert self._loop is not None
                self._loop.call_soon(self._start_waiting)
        return starting

    async def _drive(self, flight: Flight) -> None:
        """Await the flight and keep what it produced.  One task per flight, and no
        done-callback, which would cost the loop one more handle per run: on the loop
        alone, 20,000 no-op coroutines ran at 40-50k against 31k a second with one
        (docs/DECISIONS.md).

        The one home of the rule that the body of a coroutine never begins after the
        verb that stopped it returned: a flight cancelled or paused before this first
        step (before :meth:`_start_waiting` made its task, or after: the verb then
        queued its cancellation behind this step) is closed here, never begun."""
        if flight.reason is not None:  # cancelled before its body began: never begun
            close_unrun(flight.awaitable)
            flight.outcome = NEVER_BEGUN
            self._over(flight)
            return
        try:
            value = await awaited(flight.awaitable)  # a thread's future wrapped
        except BaseException as exc:  # user failures become data, KeyboardInterrupt too
            import asyncio  # imported by _start_loop (a look-up, on this path only)

            if isinstance(exc, asyncio.CancelledError):  # the scheduler's (_record reads
                flight.outcome = (CANCELLED_INSIDE, None)  # its reason), or its own
                self._over(flight)
                return
            if isinstance(exc, GeneratorExit) and id(flight.run) not in self._flights:
                # Closed by the collector after shutdown closed the loop with this run
                # still pending (it swallowed its cancellation): shutdown recorded it,
                # and the loop is gone: nothing to log, nowhere to report to.
                return
            flight.outcome = (failure_text(exc, self._name), None)  # logged when recorded
            flight.raised = exc
        else:
            flight.outcome = RETURNED_NONE if value is None else (None, result_text(value))
        self._over(flight)

    def _cancel(self, flight: Flight) -> None:
        """On the loop, after the flight's first step: cancel its task, unless it is done
        already (it returned, or raised, before the cancellation reached it)."""
        if flight.future is not None and not flight.future.done():
            flight.future.cancel()

    def _time_out(self, flight: Flight) -> None:
        with self._lock:
            if flight.reason is not None:
                return
            if flight.run.task._options.timeout != flight.budget:
                return  # a modify changed it: its re-arm (_rearm) is queued behind this
            flight.reason = "timeout"
        context = flight.run.context
        if context is not None:
            context.cancel("timeout")
        self._cancel(flight)

    def _over(self, flight: Flight) -> None:
        """A flight is over: record it with the next batch."""
        try:
            flight.finished = self._now()
        except Exception as exc:  # (rare) the clock raised: failed, not left in flight
            self._clock_failed(flight, exc)
        self._ended(flight)

    def _clock_failed(self, flight: Flight, exc: Exception) -> None:
        """The clock raised reading the flight's time: it fails with the clock's error at
        the instant the scheduler gives (its ``clock_raised``), as a thread run does;
        what the coroutine did, if it ran, is not recorded.  A run the scheduler
        cancelled keeps what it ended with, and so ends as the cancellation says
        (:func:`cancelled_outcome`; shutdown's record of one deaf to it too), at that
        instant."""
        at, error = self._clock_raised(flight.run, exc)
        flight.started = flight.finished = at
        if flight.reason is None:
            flight.outcome, flight.raised = (error, None), exc

    def _ended(self, flight: Flight) -> None:
        """A flight whose finish is set is over: its timeout disarmed, recorded with the
        next batch."""
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
        flights = self._flights
        lock = self._lock
        lock.acquire()
        try:
            recorded = failed = 0
            for flight in done:
                if id(flight.run) in flights:  # not recorded by shutdown
                    failed += self._record(flight)
                    recorded += 1
            if failed:  # their lines are logged without the lock, before the settle:
                lock.release()  # wait_idle() returns with them written
                try:
                    self._said()
                finally:
                    lock.acquire()
                    self._settle_batch(recorded)  # even if a logging handler raised
            elif recorded:
                self._settle_batch(recorded)
            if recorded:
                self._freed()
            if self._waiting and self._active < self.limit and not self._wakeup_sent:
                self._wakeup_sent = True  # slots freed: start what waits
                assert self._loop is not None
                self._loop.call_soon(self._start_waiting)
        finally:
            lock.release()

    def _settle_batch(self, count: int) -> None:
        """``count`` flights were recorded (caller holds the lock)."""
        self._release(count)
        self._notify_if_settled()

    def _record(self, flight: Flight) -> bool:
        """Write the flight's record and free its slot (caller holds the lock, then
        settles it and calls :meth:`_notify_if_settled`); True when a line waits to be
        logged (``said``)."""
        if flight.reason is None or ended_first(flight):
            (error, result), timed_out = flight.outcome, False
        else:
            error, result, timed_out = cancelled_outcome(flight)
            if flight.reason == "shutdown":  # its finish keeps its task due (core/runs.py)
                self._cut(flight.run)
        run = flight.run
        del self._flights[id(run)]
        if flight.active:
            self._active -= 1
        try:
            return self._finish(
                run, flight.started, flight.finished, error, result, timed_out, flight.raised
            )
        except Exception:  # finish records user failures itself: this is our bug
            log.exception("could not settle the coroutine run %r", run)
            return False

    def _freed(self) -> None:
        """Coroutine places freed (caller holds the lock): tell :attr:`on_free`, if set."""
        on_free = self.on_free
        if on_free is not None:
            on_free()

    def _notify_if_settled(self) -> None:
        """Wake shutdown() if nothing is in flight or waiting (caller holds the lock)."""
        if self._over_all():
            self._settled.set()
