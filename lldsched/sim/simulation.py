"""Simulation: a discrete-event runtime that replays days of schedules in seconds.

Virtual time jumps from event to event.  There are three kinds of event, and at
one instant they happen in this order:

1. a run **finishes** (its worker frees up, the core records it and moves its
   task on: reschedule, retry, succeed or fail);
2. an **intervention** registered with :meth:`Simulation.at` runs (pause,
   resume, cancel, schedule, anything);
3. a due entry **starts** on a free worker, lowest worker index first, or, a
   coroutine task's, on the coroutine lane (below).

Every transition goes through the same :class:`~lldsched.core.machine.SchedulerCore`
as the threaded :class:`~lldsched.threaded.scheduler.Scheduler`, with the same
:class:`~lldsched.core.duequeue.TaskQueue` of due entries: retry, reschedule,
overrun, pause and dead-letter logic exist once.  What the simulation adds is
where durations and failures come from (models drawn from a seeded generator
per task; see :mod:`lldsched.sim.models`), the virtual workers, and the coroutine lane.

**Lateness.**  A run that falls due while every worker is busy waits; it starts
when a worker frees up, and ``started - due`` is its lateness.

**The hand-off queue is not modelled.**  A worker that frees up takes the best
entry due at that instant in heap order (due, priority, arrival).  The threaded
runtime fixes an entry's place when its timer moves it into the bounded hand-off
queue, so the two differ only under contention, for an entry pushed with a due
time already in the past (a CATCH_UP slot, a resumed task, the run BUFFER_ONE
queues for a slot that came due while its predecessor ran) while other entries
wait in the hand-off queue: here it takes its heap place, there it queues
behind them.  Modelling that queue would tie results to a tuning knob
(``handoff=``) and to thread timing; the ideal dispatcher is the one worth
reasoning about.

**Timeouts** are detected as in the threaded runtime: a run longer than its
timeout keeps its worker for its whole duration and is recorded ``timed_out``
at its finish.  A *coroutine* action is different there, and here too: its run
is cut at its timeout (the worker frees at ``started + timeout``), and a modify or a
replace that changes its task's timeout during the run re-arms that cut from its start
(``_retime``), as the threaded event loop re-arms its cancellation.  So is a
*process-isolated* run's (``isolation="process"``), as its pool kills its child at
the deadline: cut at ``started + timeout`` on its worker, re-armed from its start,
ended by a pause, cancel or remove and by a shutdown out of time, as a coroutine run
is (``_isolated``; docs/DECISIONS.md, "A process-isolated run is cut at its
deadline, in the simulation too").  Virtual time is the only clock here; on threads
those two cuts count real seconds ("A deadline that stops a run counts real seconds").

**Coroutine actions** (``async def``, or a function that returns an awaitable)
run at their simulated instant like any action: the coroutine is run to
completion on a private event loop (:mod:`lldsched.sim.awaiting`: on the caller's
thread, or on a thread of the simulation's own when the caller's thread runs an
event loop, a notebook's or ``asyncio.run``'s) and its wall time does not count.  That
loop's clock skips the waits only a timer can end, so a coroutine's ``asyncio.sleep``
and its timeout take no real time (:mod:`lldsched.sim.looptime`).
A record keeps what an action returned, as text.  A pause, cancel or remove of its
task cuts a coroutine run in flight, as on threads: it ends at the verb's instant,
failed (``CancelledError: task paused``, or ``cancelled``).

**The coroutine lane.**  As on threads, an ``async def`` task's run takes no virtual
worker: it starts while fewer than ``max_coroutines`` coroutine runs are in flight,
whatever the workers do, and is recorded on worker ``workers`` (the threaded event
loop's lane number).  Once such a task is registered, the loop sets aside a due head
that would hold back the other lane (:mod:`lldsched.sim.lanes`: it keeps its place, so
a worker takes the entry it took before) and starts the earliest head that can start,
the workers' first at one instant, as the threaded timer hands them theirs first
(docs/DECISIONS.md, "A coroutine run takes the coroutine lane, not a virtual worker").
A plain function that returns an awaitable is called on a worker, which is free again
at once, as on threads, where the worker hands the awaitable to the event loop: its run
goes on on the coroutine lane (recorded on the worker that called it, as there), for
its modelled duration from the instant it gets a place there; while the lane is full it
waits, behind the others that wait, first come first served
(docs/DECISIONS.md, "A plain function's awaitable frees its worker").

Deterministic: the same seed and scenario give identical records.  Listeners
are called in order, in virtual time, on the caller's thread.

The verbs a user calls (registering, control, reads) are
:class:`~lldsched.sim.verbs.SimulationVerbs`', mixed in; this module owns virtual time
and the event loop.

**A store that holds tasks** is recovered at construction, at ``start``, by the
same :func:`lldsched.core.recovery.recover` as the threaded runtime: misfire
decisions included.  A shared store's rows are registered as they are, as a process
of the cluster registers them, and nothing is written there
(:func:`~lldsched.sim.sharedstore.load_as_stored`).
Models are not stored: restored tasks take no time and
never fail unless :meth:`Simulation.model` says otherwise.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import deque
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta, tzinfo
from types import TracebackType
from typing import Any, NamedTuple

from lldsched import checks
from lldsched.clock import to_timestamp, within_datetimes
from lldsched.core import storeuse
from lldsched.core.departed import Departed
from lldsched.core.duequeue import TaskQueue
from lldsched.core.ids import IdGenerator
from lldsched.core.isolation import is_loop_action, killed_at_deadline, worker_killed
from lldsched.core.machine import SchedulerCore
from lldsched.core.recordlog import RecordLog
from lldsched.core.recovery import recover
from lldsched.core.results import must_await, result_text
from lldsched.core.retention import DEFAULT_RETAIN_FINISHED, RetainFinished
from lldsched.core.runs import cancelled_error, rearmed
from lldsched.core.storewrites import say_left_stale
from lldsched.core.task import Entry, Run, ScheduledTask
from lldsched.deprecated import keyword_only_now
from lldsched.errors import ValidationError, error_text
from lldsched.listeners import (
    Listener,
    Registered,
    as_callback,
    listener_list,
    notify,
    still_registered,
)
from lldsched.logs import Repeats, instant_text
from lldsched.model import ExecutionRecord, TaskEvent
from lldsched.persistence import TaskStore, is_shared
from lldsched.sim.awaiting import PrivateLoop
from lldsched.sim.clock import LAST_INSTANT, VirtualClock
from lldsched.sim.interrupts import SHUT_DOWN_INSIDE, Interrupts
from lldsched.sim.lanes import Handed, Waiting
from lldsched.sim.models import (
    NO_RNG,
    TaskModels,
    drawn_duration,
    failure_of,
    simulated_failure,
)
from lldsched.sim.sharedstore import load_as_stored, runs_unclaimed
from lldsched.sim.verbs import SimulationVerbs

__all__ = ["MAX_WORKERS", "SimStep", "Simulation"]

MAX_WORKERS = 100_000
"""The most virtual workers a simulation takes: each is a number in its free list from
the start (ten million took 420 MB), and a pool that large never keeps a run waiting."""

_INF = math.inf  # "no such event"
_HELD = "blocked"  # what _start returns for an entry the core held BLOCKED (a SimStep kind)
_HANDED = "handed"  # _next_start picked the first awaitable waiting in _handed
SHUT_DOWN = "CancelledError: scheduler shut down"  # a coroutine run a shutdown's timeout cut


def _rearmed_end(
    origin: float,
    duration: float,
    error: str | None,
    result: str | None,
    timeout: float | None,
    now: float,
    *,
    killed: bool = False,
) -> tuple[float, str | None, str | None, bool]:
    """A coroutine run (or, ``killed``, a process-isolated one) whose duration counts
    from ``origin`` and is ``duration`` uncut, re-armed at ``now`` against ``timeout``:
    (how long it lasts, its error, its result, whether it timed out), cut at
    :func:`~lldsched.core.runs.rearmed`'s deadline, in the words the threaded runtime's
    cut uses (a coroutine cancelled, a worker process killed)."""
    deadline = rearmed(origin, timeout, now)
    if deadline is None or origin + duration <= deadline:
        return duration, error, result, False
    assert timeout is not None  # a deadline is armed only with a timeout
    length = deadline - origin
    if killed:
        return length, killed_at_deadline(length, timeout, None), result, True
    return length, cancelled_error(timeout), result, True


class _Hearing:
    """How :meth:`Simulation._emit` delivers events: ``waiting``, the events published
    while the listeners hear another (a listener's verb made them), heard once it is
    heard by every listener, in the order published; ``delivering``, True while
    :meth:`~Simulation._emit` calls the listeners; ``repeats``, what tells a listener's
    repeated failure (once a minute of real time, not once a simulated event:
    lldsched/logs.py)."""

    __slots__ = ("delivering", "repeats", "waiting")

    def __init__(self) -> None:
        # each with the listeners registered as it was published (listeners.Registered)
        self.waiting: deque[tuple[TaskEvent, Registered]] = deque()
        self.delivering = False
        self.repeats = Repeats()


class SimStep(NamedTuple):
    """What one :meth:`Simulation.step` did: ``kind`` is "finish", "intervention", "start"
    or "blocked" (a dependent came due and the core held it BLOCKED: no run started, no
    worker was taken; it is queued again when its upstreams succeed)."""

    at: float
    kind: str
    task_id: str | None
    record: ExecutionRecord | None = None


def _given(value: float | datetime, instant: float) -> str:
    """An instant a caller passed, as a refusal quotes it: as given, and in ISO 8601 UTC
    too when it was given as epoch seconds (``1767571200.0 (2026-01-05T00:00:00.000+00:00)``)."""
    return repr(value) if isinstance(value, datetime) else f"{value!r} ({instant_text(instant)})"


class Simulation(SimulationVerbs):
    """Virtual-time runtime with ``workers`` virtual workers over the core state machine
    (1 to :data:`MAX_WORKERS`).

    ``start`` is the first instant (epoch seconds or an aware datetime; default 0.0,
    the epoch); ``seed`` seeds every task's duration and failure draws and the retry
    jitter (same seed, same records).  ``store``, ``listeners`` and ``ids`` are
    injected as on ``Scheduler``: a ``store`` that holds tasks has them restored here,
    misfire decisions included, at ``start`` (a shared store's as stored, nothing
    decided or written there); listeners are called in order, in
    virtual time, on the caller's thread.  ``history_limit`` bounds each task's
    in-memory history (default 100; ``None``: unbounded); ``tz`` is the zone of cron
    schedules that name none (cron text included; default UTC).
    ``retain_finished`` says how long finished (succeeded or cancelled) tasks stay
    registered, as on ``Scheduler``: a count of the most recent (default 10,000), a
    ``timedelta`` of simulated time after each finished, or ``None`` for ever (see
    :mod:`lldsched.core.retention`); :meth:`records` keeps every record regardless.
    ``purge_retired=True`` deletes a task from the ``store`` as it retires, as on
    ``Scheduler``.  ``max_coroutines`` bounds the coroutine runs in flight at once, as on
    ``Scheduler`` (default 1000): they take no virtual worker (the module docstring's
    "The coroutine lane").
    """

    @keyword_only_now(kept=1, moved=("start", "seed", "store", "listeners"))
    def __init__(
        self,
        workers: int = 4,
        *,
        start: float | datetime = 0.0,
        seed: int = 0,
        store: TaskStore | None = None,
        listeners: Iterable[Listener] = (),
        ids: IdGenerator | None = None,
        history_limit: int | None = 100,
        tz: str | tzinfo = "UTC",
        retain_finished: RetainFinished = DEFAULT_RETAIN_FINISHED,
        purge_retired: bool = False,
        max_coroutines: int = 1000,
    ) -> None:
        checks.whole(workers, name="workers", at_least=1, at_most=MAX_WORKERS)
        checks.whole(max_coroutines, name="max_coroutines", at_least=1)
        checks.whole(seed, name="seed")
        if store is not None:  # a store a running scheduler holds: refused, nothing built
            storeuse.check(store, self)
        self._store = store  # checked again at each run (core/storeuse.py)
        self._workers = workers  # read through the property: the pool is built once
        self._seed = seed  # read through the property: the generators are seeded once
        self._clock = VirtualClock(to_timestamp(start, name="start"))
        self._queue = TaskQueue()
        self._callbacks = [
            (listener, as_callback(listener)) for listener in listener_list(listeners)
        ]
        self._log = RecordLog()  # every record, as the core makes it, kept as columns
        self._hearing = _Hearing()  # the events a listener's verb made wait (_emit)
        self._core = SchedulerCore(
            clock=self._clock,
            queue=self._queue,
            ids=ids,
            store=store,
            emit=self._emit if self._callbacks else None,
            seed=seed,
            history_limit=history_limit,
            tz=tz,
            on_record=self._log.append,
            retain_finished=retain_finished,
            purge_retired=purge_retired,
            on_retire=self._retired,
            user=self,  # core/storeuse.py: whose verbs these are
            on_cancel=self._cut,
            on_retime=self._retime,
            # records() keeps every record, of tasks retired or removed too: so does what
            # the views read of them (their priority and schedule), for every such task.
            departed=Departed(bound=None),
        )
        self._models: dict[str, TaskModels] = {}
        self._free = list(range(workers))  # a heap: the lowest free worker starts next
        # The coroutine lane, beside the workers: its runs in flight, and its limit.
        self._max_coroutines = max_coroutines
        self._coroutines = 0
        # True once a coroutine task is registered (or a plain function handed over an
        # awaitable): the loop then picks each start by lane (_next_start), setting aside
        # a head whose lane is full, and a finish may free a place on the lane.
        self._loop_tasks = False
        self._waiting = Waiting(self._queue)
        # True once a process-isolated task is registered (or restored): from then on a
        # start asks whether its run is one (_isolated), a field read the others skip
        # (+0.9 % instructions a simulated run asked of every run: 45,672 -> 46,075,
        # benchmarks/sim_instructions.py sim).
        self._isolation = False
        # Awaitables plain functions returned, waiting for a place on the full coroutine
        # lane, in the order handed over (their workers free already).
        self._handed: deque[Handed] = deque()
        # Where the start _next_start picked waits (None: the queue's head, or _handed's
        # first), and its lane: a worker, the coroutine lane, or _HANDED (a handed-over
        # awaitable's place on the coroutine lane).
        self._picked: tuple[list[Entry] | None, bool | str] = (None, False)
        # (finished, sequence, worker, run, started, error, result, timed_out) in flight
        self._finishes: list[tuple[float, int, int, Run, float, str | None, str | None, bool]] = []
        self._awaiting = PrivateLoop()  # runs coroutine actions (its loops made at need)
        # Coroutine and process-isolated runs that may be in flight, by id (those that
        # finished are dropped when it is read, or when it outgrows the runs in flight):
        # a pause, cancel or remove cuts them (_stop_awaited), as the threaded runtime
        # cancels or kills them.
        self._awaited: dict[int, Run] = {}
        # Of those whose awaitable ran to its end, and the process-isolated ones: (the
        # instant its duration counts from, that duration, its error, its result), uncut
        # by its timeout, for a modify or a replace that changes the timeout during the
        # run to re-arm it (_retime).
        self._uncut: dict[int, tuple[float, float, str | None, str | None]] = {}
        self._interventions: list[tuple[float, int, Callable[[], object]]] = []
        self._sequence = itertools.count()
        self._advancing = False  # inside _advance: a listener's Ctrl-C waits for its event
        # Those Ctrl-Cs (a listener's, or a store's save's), heard in the event under way
        # and not raised yet: _advance raises the first once that event is whole (_emit).
        self._heard: list[BaseException] = []
        self._in_verb = False  # inside a verb: a listener's or store's Ctrl-C waits (_whole)
        # One attribute for what Interrupts.mark_torn reads and writes: a 30th of the instance's own
        # took CPython 3.11 past its shared-keys limit, and every attribute read of the
        # loop slowed (+0.9 % instructions a simulated run).
        self._interrupts = Interrupts()
        # The first shutdown()'s bound: what is due by it starts in its drain (its instant,
        # or -inf without a drain).  None: not shut down (the verbs' check, verbs.py).
        self._stopped_at: float | None = None
        if store is not None:
            if is_shared(store):  # its rows as they are: it writes nothing there
                load_as_stored(self._core, store)
            else:
                recover(self._core, store)
            for task_id, task in self._core.tasks.items():  # one retired at once needs none
                self._models[task_id] = TaskModels(0.0, 0.0, NO_RNG)
                self._note_lane(task)

    # -- time --------------------------------------------------------------------------

    @property
    def now(self) -> float:
        """The simulated instant, in seconds since the epoch."""
        return self._clock.now()

    @property
    def workers(self) -> int:
        """How many virtual workers run at once (fixed at construction)."""
        return self._workers

    @property
    def seed(self) -> int:
        """The seed of every task's duration and failure draws and of the retry jitter
        (fixed at construction: the same seed gives the same records)."""
        return self._seed

    @property
    def busy(self) -> int:
        """How many workers are running something now."""
        return self.workers - len(self._free)

    @property
    def running(self) -> bool:
        """True until :meth:`shutdown`, False from it on: what ``metrics().state`` says
        (``"running"``, then ``"stopped"``), as ``Scheduler.running`` does.  A simulation
        needs no ``start()`` (it is running as it is built) and its clock is its timer,
        which never dies; True does not mean virtual time is moving (only :meth:`run`,
        :meth:`run_for` and :meth:`step` move it), but that they, and every verb, are
        still taken (docs/DECISIONS.md, "One surface, two runtimes")."""
        return self._stopped_at is None

    def at(self, when: float | datetime, fn: Callable[[], object]) -> None:
        """Call ``fn()`` at the simulated instant ``when`` (not in the past).  Raises
        :class:`~lldsched.errors.ValidationError` for an instant in the past or not one,
        and for an ``fn`` that cannot be called with no arguments; what ``fn`` raises at
        its instant comes out of :meth:`run` (or :meth:`step`).
        :class:`~lldsched.errors.SchedulerStateError` after :meth:`shutdown`."""
        self._check_running("register an intervention at", when)
        instant = to_timestamp(when, name="intervention time")
        if instant < self.now:
            raise ValidationError(
                f"intervention at {_given(when, instant)} is in the past (the simulation is "
                f"at {instant_text(self.now)})"
            )
        if not callable(fn):
            raise ValidationError(f"an intervention must be callable, got {fn!r}")
        wrong = checks.call_error(fn)
        if wrong is not None:  # found now, not as a TypeError out of run() at its instant
            raise ValidationError(
                f"an intervention is called with no arguments, got {fn!r}: {wrong}"
            )
        heapq.heappush(self._interventions, (instant, next(self._sequence), fn))

    def run(self, until: float | datetime) -> Simulation:
        """Process every event due at or before ``until``, then stand at ``until``.

        A :meth:`shutdown` made during it (by an intervention, a listener or an action)
        ends it there: it returns at the instant the shutdown left the simulation, and
        nothing more starts.

        Raises :class:`~lldsched.errors.ValidationError` for an ``until`` before now or
        no instant; :class:`~lldsched.errors.SchedulerStateError` after :meth:`shutdown`;
        and lets out, each event whole, what an intervention, a model, an action's
        ``KeyboardInterrupt`` or ``SystemExit`` or a listener's raises (a listener's, or
        a store's save's, once the event it came in is whole, before the next).  A
        Ctrl-C that lands anywhere else (between two steps of the loop, inside the
        core's transition, in the middle of a verb) is let out too, and the simulation
        moves no further: this,
        :meth:`run_for` and :meth:`step` raise
        :class:`~lldsched.errors.SchedulerStateError` from then on
        (:meth:`Interrupts.mark_torn <lldsched.sim.interrupts.Interrupts.mark_torn>`)."""
        self._check_running("run until", until)
        end = to_timestamp(until, name="until")
        if end < self.now:
            raise ValidationError(
                f"until={_given(until, end)} is before now ({instant_text(self.now)}): a "
                "simulation runs forward only"
            )
        self._advance(end, events=-1)
        if self._stopped_at is None:  # (a shutdown made during it left it where it ended)
            self._clock.advance_to(end)
        return self

    def run_for(self, duration: float | timedelta) -> Simulation:
        """Run for ``duration`` seconds (or a timedelta) of simulated time: :meth:`run`
        up to now plus ``duration``, raising what it raises.  Raises
        :class:`~lldsched.errors.ValidationError` for a negative ``duration``, or one
        that runs past year 9999.  :class:`~lldsched.errors.SchedulerStateError` after
        :meth:`shutdown`."""
        self._check_running("run for", duration)
        span = checks.seconds(duration, name="run_for()", at_least=0, expected="takes seconds >= 0")
        words = "would run past year 9999"
        return self.run(
            within_datetimes(self.now + span, name="run_for()", given=duration, words=words)
        )

    def step(self) -> SimStep | None:
        """Process the next event, whenever it is; None when nothing is left to happen
        within year 9999, the span of a ``datetime``: a slot, a retry or a run's
        modelled finish past it is never reached (its task stays due, or its run in
        flight), as on threads, and the clock stays at the last event.  Raises what
        :meth:`run` lets out (after :meth:`shutdown`, a
        :class:`~lldsched.errors.SchedulerStateError`)."""
        self._check_running("step")
        return self._advance(LAST_INSTANT, events=1)

    def shutdown(self, *, drain: bool = True, timeout: float | timedelta | None = 5.0) -> bool:
        """End the simulation as ``Scheduler.shutdown()`` ends a scheduler, in virtual
        time: every run in flight finishes (virtual time moves on to its finish, and its
        record and store writes are made), and with ``drain=True`` every run due at or
        before the simulated instant of this call that waits for a worker starts and
        finishes too; nothing due later starts (a retry's backoff, the next slot: those
        tasks stay SCHEDULED or RETRYING with their due time, for a store to recover),
        and the interventions registered with :meth:`at` not called yet are dropped.
        ``drain=False`` starts nothing more: the runs due stay as they are.

        Then the rows a store outage left stale are written once more, the last write,
        through the same :meth:`StoreWrites.rewrite_stale
        <lldsched.core.storewrites.StoreWrites.rewrite_stale>` as the threaded
        shutdown's; those the store still refuses are named in one warning
        (:func:`~lldsched.core.storewrites.say_left_stale`).  Without that, a one-off
        whose finish met a failing store stayed ``running`` in it, and the next start
        ran it again.  Last, the private event loops of coroutine actions are closed,
        and the thread one of them runs on when the simulation is driven from a running
        event loop ends (:mod:`lldsched.sim.awaiting`).

        ``timeout`` bounds the drain in *simulated* seconds from the call, as the
        scheduler's bounds it in wall seconds (None: no bound but the end of year 9999,
        which virtual time never passes, as :meth:`step` says; default 5.0, as there):
        what has not started by then (at or before the call's instant plus ``timeout``)
        does not start and stays due; a coroutine run still in flight then (on the
        coroutine lane, or a plain function's awaitable waiting for a place there) is
        cancelled then, recorded ``CancelledError: scheduler shut down`` (outcome
        ``cancelled``) and its task kept due at its slot, its attempt unspent (no
        retry, given-up slot or dead letter: :meth:`SchedulerCore.cut_by_shutdown
        <lldsched.core.runs.RunTransitions.cut_by_shutdown>`), as the threaded
        shutdown cancels it, and so is a
        process-isolated run (``... (its worker process was killed)``), as the threaded
        shutdown kills its child; a thread run still
        in flight is not cut (a thread cannot be), here as there: it finishes at its
        modelled end, virtual time moving on to it, and the result is False.  Returns
        True when every run ended within ``timeout`` (docs/DECISIONS.md, "A simulation's
        shutdown timeout bounds its drain in simulated time").  Idempotent and
        final: a later call writes the stale rows again (and finishes a drain a
        listener's Ctrl-C cut short, by the first call's instant, within its own
        ``timeout``).  Made inside :meth:`run` (``sim.at(t, sim.shutdown)``, a
        listener, an action), it ends that run there: the runs still in flight (an
        action's own, which made it) finish, and nothing more starts.  After it, the
        verbs a shut-down ``Scheduler``
        refuses raise :class:`~lldsched.errors.SchedulerStateError`
        (:data:`lldsched.runtime.REFUSED_AFTER_SHUTDOWN`: ``schedule``,
        ``reschedule``, ``run_now``, ``resume``, ``redrive``), and so do those that move
        virtual time (``run``, ``run_for``, ``step``, ``at``); ``pause``, ``cancel``,
        ``modify``, ``remove`` and the reads still work (docs/DECISIONS.md, "The
        simulation's shutdown").  Raises :class:`~lldsched.errors.ValidationError` for
        a ``drain`` not True or False or a bad ``timeout``, and a
        :class:`~lldsched.errors.StoreError` while a running scheduler holds the store
        (nothing is changed then).  On a shared store, where it never runs
        (:func:`~lldsched.sim.sharedstore.runs_unclaimed`), it drains nothing and returns
        True.  After a Ctrl-C that left it half updated
        (:meth:`Interrupts.mark_torn <lldsched.sim.interrupts.Interrupts.mark_torn>`) it
        drains nothing and returns False, the rest as always.
        ``with Simulation(...) as sim:`` calls it on leaving the block; from a
        coroutine, ``await sim.aclose()`` (and ``async with``) is the same end.
        """
        seconds = checks.shutdown_timeout(drain, timeout)
        if self._store is not None:  # its drain and rewrite write: as at each run
            storeuse.check(self._store, self, doing="shutdown()")
        if self._stopped_at is None:  # the first call's drain holds for good
            self._stopped_at = self.now if drain else -_INF
            self._interventions.clear()
        deadline = LAST_INSTANT if seconds is None else min(self.now + seconds, LAST_INSTANT)
        try:
            if self._interrupts.torn_at is not None:  # nothing drains (Interrupts.mark_torn)
                return False
            if is_shared(self._store):  # it never ran (runs_unclaimed): nothing drains
                return True
            self._advance(deadline, events=-1, due_by=self._stopped_at)
            late = self._out_of_time(deadline)
            self._advance(LAST_INSTANT, events=-1, due_by=-_INF)  # the thread runs finish
            if self._advancing:  # made inside run(): that loop ends here (_stop_heard)
                self._heard.append(SHUT_DOWN_INSIDE)
        finally:
            writes = self._core.store_writes
            if writes is not None and writes.outage is not None:
                say_left_stale(writes.store, writes.rewrite_stale())
            self._awaiting.close()
        return not late

    def __enter__(self) -> Simulation:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.shutdown()

    async def __aenter__(self) -> Simulation:
        """``async with Simulation(...) as sim:``, written as for a ``Scheduler``: the
        simulation itself, running from construction (there is nothing to start)."""
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Leaving ``async with``: :meth:`aclose`, as on a ``Scheduler``."""
        await self.aclose()

    async def aclose(self, *, drain: bool = True, timeout: float | timedelta | None = 5.0) -> bool:
        """:meth:`shutdown` for a coroutine, as ``Scheduler.aclose()`` is: the same
        arguments, meaning, result and errors, so code written against either runtime
        ends it the same way.  ``async with Simulation(...) as sim:`` calls it on leaving
        the block.

        Immediate: a scheduler's ``aclose()`` waits on a thread of its own so the
        caller's event loop goes on serving during the drain; a simulation's shutdown
        takes no wall time to wait for (virtual time jumps to each finish), so this runs
        :meth:`shutdown` at once on the caller's thread (a coroutine action its drain runs
        is run on the simulation's own loop thread, as in any coroutine, and that thread
        has ended when this returns: :mod:`lldsched.sim.awaiting`).  ``drain``
        means what it means there, in virtual time: the runs in flight finish either way,
        and ``drain=True`` also runs those due by the simulated instant of this call;
        ``timeout`` bounds that drain in simulated seconds, as :meth:`shutdown` says.
        Returns what it returns.  Idempotent and final, as
        :meth:`shutdown` (a second ``aclose()`` or ``shutdown()`` is harmless); after it
        the same verbs raise :class:`~lldsched.errors.SchedulerStateError`.  Raises
        :class:`~lldsched.errors.ValidationError` for a bad ``drain`` or ``timeout``,
        when awaited, before anything changes.
        """
        return self.shutdown(drain=drain, timeout=timeout)

    def records(self) -> list[ExecutionRecord]:
        """Every record, in the order the core made them: finished attempts, and the
        slots decided without a run (``record.outcome.ran`` is False: misfire
        decisions at recovery, slots a run skipped, each after its run).

        The simulation keeps them as columns (:class:`~lldsched.core.recordlog.RecordLog`,
        47 bytes of columns a record); this builds the ``ExecutionRecord`` values now."""
        return self._log.records()

    def record_log(self) -> RecordLog:
        """The records as the simulation keeps them: a columnar
        :class:`~lldsched.core.recordlog.RecordLog` (read it, never append to it), which
        :func:`lldsched.views.frames.to_frame` turns into a frame without a record object."""
        return self._log

    # -- the event loop ----------------------------------------------------------------

    def _advance(self, end: float, *, events: int, due_by: float = LAST_INSTANT) -> SimStep | None:
        """Process events in order (see the module docstring) until the next one is
        after ``end`` or ``events`` have been processed (``-1``: no limit); returns the
        last event processed, or None if there was none.  An entry due after ``due_by``
        does not start (a shutdown's drain: :meth:`shutdown`).

        The one event loop of the simulation: ``step``, ``run`` and ``run_for`` all come
        here.  Its body reads the queues through local names and keeps the step it
        describes in three locals, so a day of events costs no per-event objects.
        """
        if self._interrupts.torn_at is not None:  # (one test a call, none an event)
            self._interrupts.refuse_torn()
        if self._store is not None:  # its runs write: refused while a scheduler runs on it
            storeuse.check(self._store, self)
            if is_shared(self._store):
                raise runs_unclaimed(self._store)
        clock = self._clock
        advance_to = clock.advance_to
        now = clock.now()
        peek = self._queue.peek
        take = self._queue.take
        finishes = self._finishes
        interventions = self._interventions
        free = self._free
        lane = self._workers  # a coroutine run's worker: the coroutine lane
        finish_run = self._core.finish
        heappop, heappush = heapq.heappop, heapq.heappush
        kind: str | None = None  # the last event processed, described
        task_id: str | None = None  # of a start or an intervention; a record names its own
        record: ExecutionRecord | None = None
        heard = self._heard  # a Ctrl-C heard in an event: the loop stops once it is whole
        writes = self._core.store_writes  # a store's Ctrl-C in a save is heard there too
        outer, self._advancing = self._advancing, True  # see _emit
        if writes is not None:
            collecting, writes.collecting = writes.collecting, heard
        try:
            # `while True`, not `while events`: CPython 3.11 specialises a function's bytecode
            # once it warms up, counted at calls and at unconditional backward jumps only, so a
            # `while cond` loop that is the whole of one long call never warms up and runs
            # unspecialised for good: -9.1 % instructions a simulated run (callgrind,
            # benchmarks/sim_instructions.py, bench_sim's workload: 46,769 -> 42,497).
            while True:
                if not events or heard:
                    break
                events -= 1
                finish = finishes[0][0] if finishes else _INF
                intervention = interventions[0][0] if interventions else _INF
                lanes = self._loop_tasks
                if lanes:  # two lanes: the next start is picked by lane
                    start, head = self._next_start(now, due_by)
                else:
                    start = _INF
                    head = peek() if free else None  # the next start needs a free worker
                    if head is not None:
                        due = head[0]
                        start = due if due > now else now
                        if due > due_by:  # a shutdown's drain: none due later starts (heap order)
                            start = _INF
                if finish <= intervention and finish <= start:
                    if finish > end:
                        break
                    advance_to(finish)
                    now = finish
                    _, _, worker, run, started, error, result, timed_out = heappop(finishes)
                    record = finish_run(run, started, finish, error, result, timed_out)
                    if lanes and worker >= lane:  # (lanes never goes back to False)
                        if worker == lane:  # a place on the coroutine lane is free
                            self._coroutines -= 1
                        # (worker > lane: an awaitable cut while it waited held nothing)
                    else:
                        heappush(free, worker)
                    kind = "finish"  # the record names the task (below)
                elif intervention <= start:
                    if intervention > end:
                        break
                    advance_to(intervention)
                    now = intervention
                    kind, task_id, record = "intervention", None, None
                    intervene = heappop(interventions)[2]
                    try:
                        intervene()
                    except BaseException as exc:  # its own: the loop's event is whole
                        self._interrupts.whole = exc
                        raise
                else:
                    if start > end:
                        break
                    advance_to(start)
                    now = start
                    assert head is not None  # start < _INF
                    if lanes:
                        begun = self._start_picked(head, start)
                    else:
                        take(head)  # the head peeked at above
                        begun = self._start(head, start, heappop(free))  # the lowest free
                    task_id = head[3]
                    if begun is None:
                        kind, record = "start", None
                    elif isinstance(begun, str):  # _HELD: the core held it BLOCKED
                        kind, record = begun, None
                    else:  # a run that takes no time finishes at once
                        kind, record = "finish", begun
        except BaseException as exc:
            if exc is not self._interrupts.whole:  # landed mid-step (a real Ctrl-C): torn
                self._interrupts.mark_torn(exc, self.now)
            self._interrupts.whole = None
            raise
        finally:
            self._advancing = outer  # (a listener may call run() inside a run())
            if writes is not None:
                writes.collecting = collecting
        if heard:  # heard in the last event, now whole: raised by this call, the first
            self._stop_heard()
        if kind is None:
            return None
        return SimStep(now, kind, task_id if record is None else record.task_id, record)

    def _stop_heard(self) -> None:
        """What :meth:`_advance` heard in its last event stopped it: the first Ctrl-C (a
        listener's, or a store save's) is raised; a :meth:`shutdown` made inside the loop
        ends it there, and the runs still in flight then finish, nothing more starting (an
        action's own run, which made the shutdown, was not in flight yet for its drain)."""
        heard = self._heard
        raised = [caught for caught in heard if caught is not SHUT_DOWN_INSIDE]
        shut_down = len(raised) != len(heard)
        heard.clear()
        if shut_down and not raised:
            self._advance(LAST_INSTANT, events=-1, due_by=-_INF)
        if raised:
            raise raised[0]

    def _next_start(self, now: float, due_by: float) -> tuple[float, Entry | None]:
        """The next start once coroutine tasks are registered: its instant and its entry,
        ``(_INF, None)`` when none can start; :meth:`_start_picked` starts it.

        The queue's head is set aside (:mod:`lldsched.sim.lanes`) while it is a
        coroutine's entry, or a thread task's with no worker free, so that no entry holds
        back the other lane's; what stays at the head is one a free worker can start.  Of
        the lanes' heads that can start, the earliest starts; at one instant a worker's
        first, as the threaded timer hands the workers their entries before it hands the
        event loop its own (``TimerThread._hand_out``); on one lane, heap order."""
        queue, waiting = self._queue, self._waiting
        workers_free = bool(self._free)
        head = queue.peek()
        while head is not None:
            on_loop = self._on_loop(head)
            if workers_free and not on_loop:
                break
            queue.take(head)
            waiting.set_aside(head, on_loop)
            head = queue.peek()
        # The workers' next start: the first entry in heap order, the queue's or set aside.
        thread, waited = head, None
        if workers_free:
            first = waiting.head(waiting.threads)
            if first is not None and (thread is None or first < thread):
                thread, waited = first, waiting.threads
        start = _INF  # (a shutdown's drain: none due after due_by starts)
        if thread is not None and thread[0] <= due_by:
            start = max(thread[0], now)
        # The coroutine lane's next start, first only if earlier (at one instant, workers'):
        # a coroutine entry, or the first awaitable a plain function handed over, which
        # waits behind an entry due at or before it was handed over and pushed before it
        # (on threads the timer gave that one to the event loop first; one pushed later,
        # due already, a finish's CATCH_UP slot or retry, reaches the loop after it) and
        # starts in a drain too (begun).
        if self._coroutines < self._max_coroutines:
            first = waiting.head(waiting.coroutines)
            if first is not None and first[0] > due_by:  # a shutdown's drain
                first = None
            handed = self._handed
            if handed and (first is None or handed[0][0] < first[0] or first[2] > handed[0][6]):
                if now < start:
                    self._picked = (None, _HANDED)
                    handed_at, run = handed[0][0], handed[0][1]
                    return now, (handed_at, int(run.task.priority), 0, run.task.id)
            elif first is not None and max(first[0], now) < start:
                self._picked = (waiting.coroutines, True)
                return max(first[0], now), first
        self._picked = (waited, False)
        return start, thread

    def _start_picked(self, entry: Entry, now: float) -> ExecutionRecord | str | None:
        """Start ``entry``, which :meth:`_next_start` just picked, on its lane: taken from
        the queue's head or its lane's waiting heap; what :meth:`_start` returns."""
        waited, on_loop = self._picked
        if on_loop is _HANDED:
            self._hand_on(now)
            return None
        if waited is None:
            self._queue.take(entry)
        else:
            heapq.heappop(waited)
        if not on_loop:
            return self._start(entry, now, heapq.heappop(self._free))  # the lowest free
        self._coroutines += 1
        return self._start(entry, now, self._workers)  # the coroutine lane's number

    def _on_loop(self, entry: Entry) -> bool:
        """True when live ``entry``'s task runs on the coroutine lane (an ``async def``
        action run on a thread: :func:`~lldsched.core.isolation.is_loop_action`, the
        threaded runtime's rule)."""
        task = self._queue.tasks[entry[3]]
        return is_loop_action(task.action, task._options.isolation)

    def _note_lane(self, task: ScheduledTask) -> None:
        """``task`` was registered: from a coroutine task on, the loop picks starts by
        lane; from a process-isolated one on, a start asks whether its run is one."""
        isolation = task._options.isolation
        if not self._loop_tasks and is_loop_action(task.action, isolation):
            self._loop_tasks = True
        if isolation != "thread":
            self._isolation = True

    def _start(self, entry: Any, now: float, worker: int) -> ExecutionRecord | str | None:
        """Start live ``entry`` on ``worker``, taken for it (a free worker, or a place on
        the coroutine lane, numbered ``workers``): None, or its record if it takes no time
        (it finishes at once).  A dependent the core holds back (BLOCKED) starts nothing,
        gives ``worker`` back and draws nothing from its models: :data:`_HELD`."""
        run = self._core.begin(entry, worker)
        if run is None:  # BLOCKED: the core queues it again when its upstreams succeed
            self._release(worker)
            return _HELD
        task = run.task
        models = self._models[entry[3]]
        try:  # zero-cost on 3.11 when nothing raises
            duration = models.duration
            if callable(duration):
                drawn = duration(models.rng, run.attempt)
                try:  # numpy's int64 and the error naming model and task: only on failure
                    duration = checks.seconds(drawn, name="duration", at_least=0)
                except ValidationError:
                    duration = drawn_duration(drawn, model=duration, task=task.name)
            error = None
            fails = models.fails
            if fails:
                if callable(fails):
                    answer = fails(models.rng, run.attempt)
                    if answer is not None and answer is not False:
                        error = failure_of(answer, attempt=run.attempt, model=fails, task=task.name)
                elif models.rng.random() < fails:
                    error = simulated_failure(run.attempt)
        except BaseException as exc:  # a model that raises is the caller's bug
            self._abandon(run, worker, now, exc)
            self._interrupts.whole = exc
            raise
        result, timed_out = None, False
        if task.action is not None:
            try:
                exception, value = run.invoke()
                if exception is None and value is not None and must_await(value):
                    awaited = self._awaiting.run(value, task.timeout)  # to completion
            except BaseException as exc:  # KeyboardInterrupt, SystemExit: as a model's
                self._abandon(run, worker, now, exc)
                self._interrupts.whole = exc
                raise
            if exception is not None:
                error = error_text(exception)
            elif value is not None and must_await(value) and run[7].isolation != "thread":
                raised, result, timed_out = awaited  # as its child awaits it, on its worker
                error = raised or error
            elif value is not None and must_await(value):  # a coroutine, awaited above
                raised, result, timed_out = awaited
                error = raised or error
                timeout = task.timeout
                # Kept for a re-arm (_retime) when a cut may hide it; else its finish says it
                # (none once cut on its loop's clock: it ended there).
                if timeout is not None and not timed_out:
                    self._uncut[id(run)] = (now, duration, error, result)
                elif self._uncut:
                    self._uncut.pop(id(run), None)  # (a finished run's, under its id)
                if timeout is not None and (timed_out or duration > timeout):
                    duration, timed_out = timeout, True  # cut at its timeout, as on threads
                    error = cancelled_error(timeout)
                if len(self._awaited) > 2 * len(self._finishes) + 16:
                    self._prune_awaited()
                self._awaited[id(run)] = run
                if worker != self._workers:  # a plain function's: its worker is free now
                    # It queues for a place on the lane, behind the awaitables handed over
                    # before it and the coroutine entries due by now (_next_start takes it
                    # there, at this instant if a place is free), as on threads.
                    self._loop_tasks = True  # its finish frees a place on the lane
                    self._release(worker)
                    mark = self._queue.mark()
                    self._handed.append((now, run, duration, error, result, timed_out, mark))
                    return None
            elif value is not None:
                result = result_text(value)
        if self._isolation and run[7].isolation != "thread":  # run[7]: its options
            duration, error, result, timed_out = self._isolated(
                run, now, duration, error, result, timed_out
            )
        if duration == 0:  # finishes before anything else can happen at this instant
            record = self._core.finish(run, now, now, error, result, timed_out)
            self._release(worker)
            return record
        heapq.heappush(
            self._finishes,
            (now + duration, next(self._sequence), worker, run, now, error, result, timed_out),
        )
        return None

    def _isolated(
        self,
        run: Run,
        now: float,
        duration: float,
        error: str | None,
        result: str | None,
        timed_out: bool,
    ) -> tuple[float, str | None, str | None, bool]:
        """A process-isolated run starting at ``now``, ``duration`` long uncut, as its
        worker process is killed on threads: (how long it lasts, its error, its result,
        whether it timed out), cut at its timeout (its worker frees at ``started +
        timeout``, its error :func:`~lldsched.core.isolation.killed_at_deadline`'s).  It
        is kept for :meth:`_retime`, which re-arms it from its start (its uncut duration
        kept with or without a timeout, as the pool counts a deadline given later from
        the child's start too), and for :meth:`_stop_lane`, which ends it at a pause,
        cancel or remove or at a shutdown out of time, as a coroutine run is.
        ``timed_out``: an awaitable the action returned was cut on its loop's clock at
        the timeout (it ended there)."""
        timeout = run.task._options.timeout
        if len(self._awaited) > 2 * len(self._finishes) + 16:
            self._prune_awaited()
        self._awaited[id(run)] = run
        if timed_out:  # cut on its loop's clock at its timeout: it ended there, never re-armed
            assert timeout is not None  # (the cut is the timeout's)
            return timeout, killed_at_deadline(timeout, timeout, None), result, True
        self._uncut[id(run)] = (now, duration, error, result)
        return _rearmed_end(now, duration, error, result, timeout, now, killed=True)

    def _abandon(self, run: Run, worker: int, now: float, exc: BaseException) -> None:
        """``exc`` stops the attempt ``run`` on ``worker`` at ``now`` and is raised to
        the caller of run() (a model's error, or an action's KeyboardInterrupt or
        SystemExit, which may be the user's Ctrl-C): the attempt ends failed with it, so
        the task is not left RUNNING on a worker that never frees, and a later run()
        goes on consistently."""
        self._core.finish(run, started=now, finished=now, error=error_text(exc))
        self._release(worker)

    def _release(self, worker: int) -> None:
        """A run on ``worker`` ended: the worker is free again, or, for the coroutine
        lane's number, a place on that lane is."""
        if worker == self._workers:
            self._coroutines -= 1
        else:
            heapq.heappush(self._free, worker)

    def _hand_on(self, now: float) -> None:
        """The first awaitable a plain function handed over that waits for a place on
        the coroutine lane takes one at ``now`` (:meth:`_next_start` picked it)."""
        started, run, duration, error, result, timed_out, _ = self._handed.popleft()
        self._coroutines += 1
        self._awaited[id(run)] = run  # (a prune while it waited dropped it)
        uncut = self._uncut.get(id(run))
        if uncut is not None:  # its duration counts from its place on the lane
            self._uncut[id(run)] = (now, *uncut[1:])
        heapq.heappush(
            self._finishes,
            (now + duration, next(self._sequence), self._workers, run, started, error, result,
             timed_out),
        )  # fmt: skip

    def _retired(self, task_id: str) -> None:
        """The core retires ``task_id``: its models go with it (what the views read of it
        stays, in the core's ``departed``)."""
        self._models.pop(task_id, None)

    def _cut(self, run: Run) -> None:
        """Overlap.CANCEL_OTHER cancelled ``run``: it ends now, as a run that checks its
        flag (or a coroutine, cancelled for real) would; the core records why."""
        finishes = self._finishes
        for index, item in enumerate(finishes):
            if item[3] is run:
                finishes[index] = (self.now, *item[1:])
                heapq.heapify(finishes)
                return
        if self._handed:  # an awaitable waiting for a place on the lane
            self._cut_handed(lambda waiting: waiting is run, None)

    def _cut_handed(self, cut: Callable[[Run], bool], error: str | None) -> None:
        """The awaitables waiting for a place on the coroutine lane whose runs ``cut``
        picks end now (with ``error``, else the error they had), holding no place: their
        finish, at this instant, is an event (worker ``workers + 1``, which frees
        nothing), as on threads a cancelled one is recorded once the loop drops it."""
        now = self.now
        kept: deque[Handed] = deque()
        for item in self._handed:
            handed_at, run, _, had, result, timed_out, _ = item
            if not cut(run):
                kept.append(item)
                continue
            ending = had if error is None else error
            heapq.heappush(
                self._finishes,
                (now, next(self._sequence), self._workers + 1, run, handed_at, ending,
                 None if error is not None else result, False if error is not None else timed_out),
            )  # fmt: skip
        self._handed = kept

    def _prune_awaited(self) -> dict[int, Run]:
        """The coroutine runs in flight (:attr:`_awaited` without those finished), kept."""
        awaited = self._awaited
        self._awaited = live = {
            id(item[3]): item[3] for item in self._finishes if awaited.get(id(item[3])) is item[3]
        }
        uncut = self._uncut
        if uncut:
            self._uncut = {key: uncut[key] for key in live.keys() & uncut.keys()}
            for item in self._handed:  # waiting for a place on the lane: in flight too
                key = id(item[1])
                if key in uncut:
                    self._uncut[key] = uncut[key]
        return live

    def _retime(self, run: Run) -> None:
        """The core's ``on_retime``: a modify or a replace changed the timeout of
        ``run``'s task during the run.  A coroutine run is cut at its timeout here, as on
        threads: its finish is re-armed from the instant its duration counts from by
        :func:`~lldsched.core.runs.rearmed` (a timeout raised or dropped gives it back
        the duration its model drew, one lowered cuts it, at once if already past; one
        begun without a timeout counts from this first re-arm, as on threads).  A thread
        run is judged at its finish by the timeout in force then, as before."""
        key = id(run)
        kept = self._uncut.get(key)
        timeout = run.task._options.timeout
        for index, handed in enumerate(self._handed):  # no place on the lane yet
            if handed[1] is run:
                if kept is None:  # begun without a timeout: as it waits, uncut
                    if handed[5]:  # cut in wall time: it ended there
                        return
                    kept = self._uncut[key] = (handed[0], *handed[2:5])
                origin, duration, error, result = kept  # (its place, once it has one)
                self._handed[index] = (
                    handed[0],
                    run,
                    *_rearmed_end(origin, duration, error, result, timeout, origin),
                    handed[6],
                )
                return
        if self._awaited.get(key) is not run:  # a thread run: judged at its finish
            return
        finishes = self._finishes
        for index, item in enumerate(finishes):
            if item[3] is run:
                if kept is None:  # begun without a timeout: uncut, and its finish says it
                    if item[7]:  # cut in wall time: it ended there
                        return
                    # Counted from this first re-arm, as the threaded runtime counts a run
                    # begun without a timeout (it kept no begin instant).
                    now = self.now
                    kept = self._uncut[key] = (now, item[0] - now, item[5], item[6])
                origin, duration, error, result = kept
                length, error, result, timed_out = _rearmed_end(
                    origin, duration, error, result, timeout, self.now,
                    killed=run[7].isolation != "thread",
                )  # fmt: skip
                finishes[index] = (
                    origin + length,
                    item[1],
                    item[2],
                    run,
                    item[4],
                    error,
                    result,
                    timed_out,
                )
                heapq.heapify(finishes)
                return

    def _stop_awaited(self, task_id: str, why: str) -> None:
        """A pause, cancel or remove of ``task_id`` took: its coroutine runs in flight end
        now, failed with ``CancelledError: task <why>`` (a paused task retries the
        attempt after resume), as the threaded runtime cancels them (its
        ``_stop_running``), and so do its process-isolated runs (``... (its worker process
        was killed)``, as the pool kills their children); a thread's run is cooperative
        and goes on, here as there."""
        self._stop_lane(lambda run: run.task.id == task_id, f"CancelledError: task {why}")

    def _stop_lane(self, cut: Callable[[Run], bool], error: str) -> None:
        """The coroutine runs in flight that ``cut`` picks (and the awaitables waiting for
        a place on the lane) end now, failed with ``error``."""
        if self._handed:  # waiting for a place on the lane: ended now, never begun there
            self._cut_handed(cut, error)
        if not self._awaited:
            return
        awaited = self._prune_awaited()
        finishes = self._finishes
        now = self.now
        ended = False
        killed = f"{error} {worker_killed(None)}"  # a process-isolated run's
        for index, item in enumerate(finishes):
            run = item[3]
            if id(run) in awaited and cut(run):
                ending = error if run[7].isolation == "thread" else killed
                finishes[index] = (now, item[1], item[2], run, item[4], ending, None, False)
                ended = True
        if ended:
            heapq.heapify(finishes)

    def _out_of_time(self, deadline: float) -> bool:
        """A shutdown's ``deadline`` is reached with runs still in flight, at
        ``_advance``'s rest: the coroutine runs (on the lane, or waiting for a place there)
        end at it, recorded ``CancelledError: scheduler shut down``, their tasks kept
        due (:meth:`SchedulerCore.cut_by_shutdown
        <lldsched.core.runs.RunTransitions.cut_by_shutdown>`), as the threaded
        shutdown cancels them, and so do the process-isolated runs (their children
        killed there); True when a thread run goes on past it (it cannot be cut, there
        as here)."""
        if not self._finishes and not self._handed:
            return False
        self._clock.advance_to(deadline)
        cut_by_shutdown = self._core.cut_by_shutdown

        def cut(run: Run) -> bool:
            """Each run cut here: its finish keeps its task due (core/runs.py)."""
            cut_by_shutdown(run)
            return True

        self._stop_lane(cut, SHUT_DOWN)
        return any(item[0] > deadline for item in self._finishes)

    def _emit(self, event: TaskEvent) -> None:
        """The core's ``emit``: the listeners are called now, in virtual time.

        A listener's ``KeyboardInterrupt`` or ``SystemExit`` (a Ctrl-C: :func:`notify`
        lets it through here) raised while :meth:`_advance` processes an event would
        leave that event half done if raised there (a run begun and never to finish, a
        worker never freed): it is kept, the listeners after it hear the event all the
        same, and :meth:`_advance` raises it as soon as that event is whole, before the
        next (a store's save that raises one meanwhile is kept alike:
        ``StoreWrites.collecting``).  A verb made outside the loop raises it once the
        verb is whole (:meth:`_whole`).

        An event published while the listeners hear another (a listener's ``pause``, a
        run its ``shutdown`` finished) waits until every listener heard the one under
        way: called at once, the listeners after that one heard its consequence before
        it (``running -> paused``, then ``scheduled -> running``), unlike the
        threaded runtime's, which queues every event.  An event a listener's Ctrl-C
        left undelivered (raised at once, outside a verb and the loop) is heard before
        the next one published.

        Each event is heard by the listeners registered when it was published and still
        registered when its delivery begins, as on the threaded runtime: one a listener
        added hears neither the event under way nor those waiting (``_callbacks`` is
        replaced at each change, never changed in place, so an event keeps its list)."""
        hearing = self._hearing
        waiting = hearing.waiting
        waiting.append((event, self._callbacks))
        if hearing.delivering:  # a listener's verb: heard after the event under way
            return
        hearing.delivering = True
        try:
            while waiting:
                event, listeners = waiting.popleft()
                if listeners is not self._callbacks:  # changed since it was published
                    listeners = still_registered(listeners, self._callbacks)
                notify(
                    listeners,
                    event,
                    repeats=hearing.repeats,
                    kept=self._heard if self._advancing or self._in_verb else None,
                )
        finally:
            hearing.delivering = False

    def __repr__(self) -> str:
        return (
            f"<Simulation at {self.now!r} workers={self.workers} busy={self.busy} "
            f"tasks={len(self._core.tasks)} records={len(self._log)}>"
        )
