"""CoroutineRunner: the scheduler's event loop, where coroutine actions run to completion.

An action that is an ``async def`` function, an object whose class's ``__call__`` is
one, or a ``functools.partial`` of either (:func:`~lldsched.core.isolation.is_loop_action`)
is a *loop task*: the timer hands its due entries here instead of to the worker pool,
and this runner's thread (``lldsched-<name>-loop``, one asyncio event loop, started at
the first coroutine run and closed at shutdown) begins the attempt, calls the
action (which creates the coroutine and runs none of its body) and runs the
coroutine as an asyncio task.  Any *other* action that returns an awaitable (a
plain function returning a coroutine) is called on a worker as usual; the worker
hands the awaitable here and moves on.  Either way the record is written when the
awaitable completes, and what it returns is awaited too while it is awaitable
(:func:`~lldsched.core.results.awaited`): no awaitable is ever recorded as a success
without being awaited.  A loop task's records carry ``worker == workers`` (the loop's lane,
one past the threads).  Each coroutine runs in an empty ``contextvars`` context of
its own: what one run sets, no other run sees.

**Capacity.**  Coroutine runs do not hold a worker thread; they have a limit of their
own: at most ``limit`` run at once (``Scheduler(max_coroutines=...)``, default 1000).
The others wait here in the order they were handed over, and a loop task's attempt
*begins* only when it gets a slot, so its lateness shows the wait, and cancel or pause
while it waits simply drops it (a tombstone; a worker's awaitable cut while it waits
leaves the line then and is recorded at once, never begun).  They begin and start
:data:`~lldsched.threaded.coroutines.loopthread.START_BATCH` at a time, each go behind the last
one's first steps (the collector's share: see there).  On a shared store the timer
claims a loop task's run only while a slot is :attr:`~CoroutineRunner.free` (neither
running a run nor promised to one waiting), and a slot that frees wakes it
(``on_free``): a run that could not start here stays in the store for an idle process
(docs/CLUSTER.md, "Claim").  An entry whose task was replaced meanwhile
(``replace_existing=True``) by a plain function or a process-isolated one is not begun
here: it goes to the workers, which begin it (and a worker hands the loop an entry whose
task became a loop task), so a run begins where the definition it begins with runs.

**Timeouts are enforced** here, unlike on threads: a coroutine still running at
its task's timeout is cancelled (``asyncio.Task.cancel``), recorded ``timed_out`` with a
``TimeoutError`` text, and its task goes down the retry path.  That deadline counts
real seconds on the loop's clock (``call_at``), not the scheduler's injected clock,
as a process-isolated run's kill does: a deadline that stops a run bounds what it
really spends, which a ``FakeClock`` does not measure and a wall clock's jump would
move; its record's instants are the scheduler's clock's (docs/decisions/threaded.md, "A
deadline that stops a run counts real seconds").  **Cancelling or
pausing** a task cancels its running coroutine the same way; the attempt is
recorded failed (``CancelledError: task cancelled`` / ``task paused``) and,
like any failure, retried (after ``resume``) while attempts remain.  A run the
scheduler cancelled ends as the cancellation says, even if the coroutine
swallowed it; one that returned or raised before the cancellation reached it (it
paused or cancelled its own task, then returned) is recorded as it ended, as a thread
run is.  A coroutine that *blocks* the loop (``time.sleep`` instead of
``asyncio.sleep``) blocks every coroutine run, and its timeout cannot fire until
it yields (the record still says ``timed_out``, as on a thread).

**The loop thread** (the loop started, what waits begun and started as slots free, each
run driven to its end, timed out, recorded in batches) is
:class:`~lldsched.threaded.coroutines.loopthread.LoopThread`'s, and **shutdown** (waiting for the
runs in flight, cancelling those left, the loop's ``asyncio.to_thread`` calls)
:class:`~lldsched.threaded.coroutines.shutdown.LoopShutdown`'s, both mixed into the runner:
this module is its construction and its hand-over.

**Threads and the lock.**  Everything here but the loop-only fields is guarded by
the scheduler's one lock (passed in): the timer and the workers hand over under
it, the loop thread takes it once per batch of starts and once per batch of
finishes, and ``cancel`` is called under it.  The action and the coroutine run
on the loop thread without it.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Container, Iterable
from typing import TYPE_CHECKING, Any

from lldsched.checks import whole
from lldsched.core.runs import rearmed
from lldsched.core.task import Entry, Run
from lldsched.errors import error_text
from lldsched.threaded.coroutines.flights import NEVER_BEGUN, Flight, close_unrun
from lldsched.threaded.coroutines.loopthread import Finish, LoopThread
from lldsched.threaded.coroutines.shutdown import CANCEL_GRACE, LoopShutdown
from lldsched.threaded.deadline import Flag

if TYPE_CHECKING:  # imported at the first coroutine run: see LoopThread._start_loop
    import asyncio
    from asyncio import Task

    from lldsched.loopcalls import LoopCalls

__all__ = ["CANCEL_GRACE", "CoroutineRunner"]

SHUT_DOWN_UNRUN = "SchedulerStateError: the scheduler shut down before the coroutine ran"
"""The error of a run whose action returned an awaitable once the runner was closed: a
shutdown's cut (the worker tells the core: :meth:`SchedulerCore.cut_by_shutdown
<lldsched.core.runs.RunTransitions.cut_by_shutdown>`), its task kept due."""


class CoroutineRunner(LoopThread, LoopShutdown):
    """An event loop on its own thread that runs coroutine actions to completion."""

    def __init__(
        self,
        *,
        lock: threading.Lock,
        begin: Callable[[Entry, int], Run | None],
        loop_ids: Container[str],
        to_workers: Callable[[list[Entry]], None],
        finish: Finish,
        settle: Callable[[int], None],
        said: Callable[[], None],
        lane: int,
        now: Callable[[], float],
        clock_raised: Callable[[Run, Exception], tuple[float, str]],
        begin_raised: Callable[[Entry, BaseException], None],
        put_back: Callable[[list[Entry]], None],
        cut: Callable[[Run], None],
        limit: int = 1000,
        name: str = "lldsched-loop",
    ) -> None:
        whole(limit, name="max_coroutines", at_least=1)
        self._name = name  # the loop thread's
        self.limit = limit
        self._lock = lock
        self._begin = begin  # begins a loop task's entry (None: a tombstone)
        # The ids of the loop tasks now (the scheduler's set, read under the lock), and
        # where an entry goes whose task a replace made a thread or process task while
        # it waited here: the workers, who begin it.
        self._loop_ids = loop_ids
        self._to_workers = to_workers
        self.lane = lane  # the worker number of a loop task's run: one past the threads
        self._finish = finish
        # Settles ``n`` entries or awaitables handed over: recorded, a tombstone, or
        # never begun (shutdown).  Called once per batch, not per run.
        self._settle = settle
        # Logs what the runs recorded under the lock queued to log (their failures),
        # called once the lock is let go.
        self._said = said
        self._now = now
        # A run's (start and finish, error) when ``now`` raised reading its time: the
        # scheduler's rule for a thread run's too (RunExecution._clock_failure).
        self._clock_raised = clock_raised
        # ``begin`` raised for an entry (rare): the scheduler unsticks its task, and the
        # entry is settled here as a tombstone is.
        self._begin_raised = begin_raised
        # Entries a shutdown dropped unbegun from the line: queued again as they were, in
        # the scheduler's heap (TaskQueue.put_back), what is left due all there.
        self._put_back = put_back
        # A run the shutdown cancelled, told to the core before its record
        # (SchedulerCore.cut_by_shutdown): its finish keeps its task due.
        self._cut = cut
        # Guarded by the scheduler's lock: the loop and its thread (created at the
        # first hand-over), what waits for a slot (loop tasks' entries and handed-off
        # flights, in arrival order), begun flights by task id, the active count and
        # the flags.  _settled (a deadline.Flag, not an Event: its guard is taken inside
        # this one) is set under the lock when the last flight is recorded; shutdown()
        # is its only waiter, and takes the lock back within its time
        # (lldsched.threaded.deadline).
        self._loop: asyncio.AbstractEventLoop | None = None
        # asyncio's Task, kept by _start_loop (which imports asyncio) with the loop, for
        # the loop thread's _start_waiting: no import statement on a run's path.
        self._task_class: type[Task[None]] | None = None
        self._thread: threading.Thread | None = None
        # The loop's default executor (asyncio.to_thread), made with the loop, and the
        # thread shutdown() waits for its calls on (None until then).
        self._executor: LoopCalls | None = None
        self._calls_joiner: threading.Thread | None = None
        # Guards _calls_joiner's making: two shutdowns' loop closers may ask at once (a
        # second shutdown() after the first's timeout), and the joiner is published only
        # once it is started (joining a thread not started yet raises).
        self._joining = threading.Lock()
        self._waiting: collections.deque[Entry | Flight] = collections.deque()
        # Begun flights by id(run): runs of one task may overlap (lldsched.policies.Overlap).
        self._flights: dict[int, Flight] = {}
        self._active = 0
        # Entries and awaitables handed over and not yet settled (waiting for a slot,
        # running, or recorded and not yet settled): what Scheduler.metrics() reports
        # as its coroutines, counted as _release() settles them.
        self.in_hand = 0
        self._wakeup_sent = False
        self._closed = False
        self._leftover_wait = CANCEL_GRACE  # set by shutdown() as it stops the loop
        # Whether a shutdown() handed the loop its stop: it is handed over once (a second
        # stop, from a later shutdown, ended end_left_tasks' run of the stopped loop).
        self._stop_sent = False
        self._settled = Flag()
        # The loop thread's own: flights over and not yet recorded.
        self._done: list[Flight] = []
        self._flush_sent = False
        self.on_free: Callable[[], None] | None = None
        """Called under the lock as coroutine places free (runs recorded, entries that
        waited settled as tombstones or passed to the workers; set before the first
        hand-over): a shared store's timer claims a loop task's run only while one is
        :attr:`free`."""

    @property
    def alive(self) -> bool:
        """True while the loop thread, or a call of the loop's executor, still runs."""
        return (self._thread is not None and self._thread.is_alive()) or self.calls_running

    @property
    def calls_running(self) -> bool:
        """True while shutdown() waits for an ``asyncio.to_thread`` call, or left one
        running at its timeout (read without the lock: a thread's liveness)."""
        joiner = self._calls_joiner
        return joiner is not None and joiner.is_alive()

    @property
    def free(self) -> int:
        """Coroutine slots neither running a run nor promised to one waiting for a slot
        (a worker's awaitable included), at most :attr:`limit` (caller holds the lock):
        what a loop task's run handed over now could start in."""
        return self.limit - self._active - len(self._waiting)

    def read_waiting(self, live: Callable[[Entry], object]) -> tuple[int, float | None]:
        """What ``metrics()`` reads of the loop tasks' entries waiting for a slot (caller
        holds the lock): how many ``live`` says are tombstones (cancelled, paused, removed
        or moved while they waited: no run waits, and the loop drops them when it gets to
        them), and the earliest due instant of the live ones (None: none waits), for
        ``lag``.  A worker's awaitable waiting here has begun its run on the worker: it
        counts as in hand, never late.  O(waiting), off the dispatch path."""
        tombstones = 0
        first: float | None = None
        for item in self._waiting:
            if isinstance(item, Flight):
                continue
            if live(item) is None:
                tombstones += 1
            elif first is None or item[0] < first:
                first = item[0]
        return tombstones, first

    def on_loop_thread(self) -> bool:
        """True when the caller runs on this runner's loop thread (a coroutine run, or
        something it called), or on a thread of the loop's ``asyncio.to_thread`` calls
        (which a coroutine run may await): a wait there for the loop's runs would wait
        for itself."""
        thread = self._thread
        if thread is None:
            return False
        executor = self._executor
        return thread is threading.current_thread() or (
            executor is not None and executor.runs_caller()
        )

    # -- handing over (caller holds the lock) -------------------------------------------

    def put(self, entries: Iterable[Entry]) -> None:
        """Due entries of loop tasks, from the timer: begun here when a slot is free."""
        if self._closed:
            self._settle(len(list(entries)))
            return
        waiting = self._waiting
        before = len(waiting)
        waiting.extend(entries)
        added = len(waiting) - before
        self.in_hand += added
        try:  # free until it raises (3.11)
            self._wake()
        except BaseException:  # (rare) the loop could not start: they are settled unbegun
            for _ in range(added):
                waiting.pop()
            self._release(added)
            raise  # the timer dies of it, and says so

    def submit(self, run: Run, started: float, awaitable: Any) -> str | None:
        """An awaitable a worker's action returned: run it, then record it.  None when
        taken; else (the awaitable closed) the error its run is recorded failed with: the
        runner is closed, or its loop could not start (its selector or its thread
        refused: taken back, nothing of it left here)."""
        if self._closed:
            close_unrun(awaitable)
            return SHUT_DOWN_UNRUN
        flight = Flight(run, started, awaitable)
        self._flights[id(run)] = flight
        self._waiting.append(flight)
        self.in_hand += 1
        try:  # free until it raises (3.11)
            self._wake()
        except Exception as exc:  # (rare) as put()'s, but a worker's: its run fails of it
            self._waiting.pop()
            del self._flights[id(run)]
            self.in_hand -= 1
            close_unrun(awaitable)
            return f"SchedulerStateError: the event loop could not start: {error_text(exc)}"
        return None

    def discard(self, task_ids: Container[str]) -> None:
        """Take out of the line, unbegun and settled, the loop tasks' entries of
        ``task_ids`` (caller holds the lock): a shared store's claims of theirs dropped
        before a slot freed for them (given back, or their leases lost:
        :meth:`Coordinator._drop_pending
        <lldsched.threaded.shared.Coordinator._drop_pending>`).  Left there, each was
        counted as a coroutine waiting here (``metrics().coroutines``, ``wait_idle()``, a
        drain) until a slot freed and its begin found no claim (and, while this process
        claimed loop tasks' runs with no slot free, the claim made again added one more
        entry at every renewal interval).  A worker's awaitable (a :class:`Flight`)
        stays.  O(waiting); rare, off the dispatch path."""
        waiting = self._waiting
        kept = [item for item in waiting if isinstance(item, Flight) or item[3] not in task_ids]
        gone = len(waiting) - len(kept)
        if gone:
            waiting.clear()
            waiting.extend(kept)
            self._release(gone)
            self._notify_if_settled()

    def cancel(self, task_id: str, reason: str) -> None:
        """Cancel the task's coroutine runs, if it has any (caller holds the lock)."""
        for flight in [f for f in self._flights.values() if f.run.task.id == task_id]:
            self._cancel_flight(flight, reason)

    def cancel_run(self, run: Run, reason: str) -> None:
        """Cancel ``run`` if it is a coroutine run in flight (caller holds the lock)."""
        flight = self._flights.get(id(run))
        if flight is not None and flight.run is run:
            self._cancel_flight(flight, reason)

    def _cancel_flight(self, flight: Flight, reason: str) -> None:
        if flight.reason is not None:
            return
        flight.reason = reason
        context = flight.run.context
        if context is not None:
            context.cancel(reason)
        if flight.future is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._cancel, flight)
        elif not flight.active and self._loop is not None:
            # A worker's awaitable waiting for a slot: it leaves the line now and ends
            # never begun at the verb's instant (it waited for a slot to be recorded: a
            # pause's record, and its retry, came whenever a run ended and freed one).
            try:
                self._loop.call_soon_threadsafe(self._never_begun, flight)
            except RuntimeError:  # the loop is closed: its shutdown recorded the flight
                return
            self._waiting.remove(flight)
        # no task yet: the first step of the task _start_waiting makes sees the reason

    def _never_begun(self, flight: Flight) -> None:
        """On the loop: ``flight``, cancelled while it waited for a slot (taken out of the
        line under the lock), is over, never begun, as :meth:`_drive` ends one cancelled
        before its first step."""
        close_unrun(flight.awaitable)
        flight.outcome = NEVER_BEGUN
        self._over(flight)

    def retime(self, run: Run) -> bool:
        """A modify or a replace changed the timeout of ``run``'s task (caller holds the
        lock): True if ``run`` is a coroutine run in flight here, whose cancellation the
        loop re-arms (:meth:`_rearm`); False for any other run."""
        flight = self._flights.get(id(run))
        if flight is None or flight.run is not run:
            return False
        if flight.reason is None and flight.future is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._rearm, flight)
        # (no task yet: _start_waiting arms it with the timeout in force then)
        return True

    def _rearm(self, flight: Flight) -> None:
        """On the loop: re-arm ``flight``'s cancellation from the instant its timer
        counts from (its start on the loop's clock) with its task's timeout now, by
        :func:`~lldsched.core.runs.rearmed` (None: disarmed; passed: it fires at once).
        One started without a timeout counts from its first re-arm, as a thread run
        does.  A flight over or cancelled meanwhile is left as it is."""
        future = flight.future
        if future is None or future.done() or flight.reason is not None:
            return
        loop = self._loop
        assert loop is not None
        now = loop.time()
        timer = flight.timer
        begun = getattr(flight, "begun", None)
        if begun is None:
            begun = now if timer is None else timer.when() - flight.budget
            flight.begun = begun
        if timer is not None:
            timer.cancel()
            flight.timer = None
        timeout = flight.run.task._options.timeout
        deadline = rearmed(begun, timeout=timeout, now=now)
        if deadline is not None:
            assert timeout is not None
            flight.budget = timeout
            flight.timer = loop.call_at(deadline, self._time_out, flight)

    def _wake(self) -> None:
        if self._loop is None:
            self._start_loop()
        if not self._wakeup_sent:  # one wake-up per batch, not per hand-over
            self._wakeup_sent = True
            assert self._loop is not None
            self._loop.call_soon_threadsafe(self._start_waiting)

    def _release(self, count: int) -> None:
        """``count`` entries or awaitables handed over are settled (caller holds the
        lock): no longer :attr:`in_hand`."""
        self.in_hand -= count
        self._settle(count)

    def _over_all(self) -> bool:
        return not self._flights and not self._waiting
