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
(``_retime``, :mod:`lldsched.sim.cuts`), as the threaded event loop re-arms its
cancellation.  So is a *process-isolated* run's (``isolation="process"``), as its pool
kills its child at the deadline: cut at ``started + timeout`` on its worker, re-armed
from its start, ended by a pause, cancel or remove and by a shutdown out of time, as a
coroutine run is (``_isolated``, :mod:`lldsched.sim.starts`;
docs/decisions/threaded.md, "A process-isolated run is cut at its deadline, in the simulation too").
Virtual time is the only clock here; on threads those two cuts count real seconds
("A deadline that stops a run counts real seconds").

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
(docs/decisions/simulation.md, "A coroutine run takes the coroutine lane, not a virtual worker").
A plain function that returns an awaitable is called on a worker, which is free again
at once, as on threads, where the worker hands the awaitable to the event loop: its run
goes on on the coroutine lane (recorded on the worker that called it, as there), for
its modelled duration from the instant it gets a place there; while the lane is full it
waits, behind the others that wait, first come first served
(docs/decisions/simulation.md, "A plain function's awaitable frees its worker").

Deterministic: the same seed and scenario give identical records.  Listeners
are called in order, in virtual time, on the caller's thread.

This module owns :class:`Simulation`'s construction and the verbs that move virtual
time (``at``, ``run``, ``run_for``, ``step``) or end it (``shutdown``), and the records
kept.  Mixed into it (:mod:`lldsched.sim.parts` declares what they share): the verbs a
user calls, registering, control and reads (:mod:`lldsched.sim.verbs`); the event loop
(:mod:`lldsched.sim.eventloop`); what a run does as it starts (:mod:`lldsched.sim.starts`);
the cuts of coroutine and process-isolated runs in flight (:mod:`lldsched.sim.cuts`); the
listeners' hearing of events (:mod:`lldsched.sim.hearing`).  What a Ctrl-C tore is kept
by :mod:`lldsched.sim.interrupts`, a shared store's rules by
:mod:`lldsched.sim.sharedstore`.

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

from lldsched import checks
from lldsched.clock import to_timestamp, within_datetimes
from lldsched.coordination import is_shared
from lldsched.core.departed import Departed
from lldsched.core.duequeue import TaskQueue
from lldsched.core.ids import IdGenerator
from lldsched.core.machine import SchedulerCore
from lldsched.core.recordlog import RecordLog
from lldsched.core.recovery import recover
from lldsched.core.retention import DEFAULT_RETAIN_FINISHED, RetainFinished
from lldsched.core.store import use as storeuse
from lldsched.core.store.stalerows import say_left_stale
from lldsched.core.task import Entry, Run
from lldsched.deprecated import keyword_only_now
from lldsched.errors import ValidationError, shown
from lldsched.listeners import Listener, as_callback, listener_list
from lldsched.logs import instant_text
from lldsched.model import ExecutionRecord
from lldsched.persistence import TaskStore
from lldsched.sim.awaiting import PrivateLoop, say_calls_left
from lldsched.sim.clock import LAST_INSTANT, VirtualClock
from lldsched.sim.cuts import SimulationCuts
from lldsched.sim.eventloop import SimStep, SimulationEventLoop
from lldsched.sim.hearing import Hearing, SimulationHearing
from lldsched.sim.interrupts import SHUT_DOWN_INSIDE, Interrupts
from lldsched.sim.lanes import Handed, Waiting
from lldsched.sim.models import NO_RNG, TaskModels
from lldsched.sim.sharedstore import load_as_stored
from lldsched.sim.starts import SimulationStarts
from lldsched.sim.verbs import SimulationVerbs

__all__ = ["MAX_WORKERS", "SimStep", "Simulation"]

MAX_WORKERS = 100_000
"""The most virtual workers a simulation takes: each is a number in its free list from
the start (ten million took 420 MB), and a pool that large never keeps a run waiting."""

_INF = math.inf  # "no such event"


def _given(value: float | datetime, instant: float) -> str:
    """An instant a caller passed, as a refusal quotes it: as given, and in ISO 8601 UTC
    too when it was given as epoch seconds (``1767571200.0 (2026-01-05T00:00:00.000+00:00)``)."""
    return repr(value) if isinstance(value, datetime) else f"{value!r} ({instant_text(instant)})"


class Simulation(
    SimulationVerbs, SimulationEventLoop, SimulationStarts, SimulationCuts, SimulationHearing
):
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
        self._store = store  # checked again at each run (core/store/use.py)
        self._workers = workers  # read through the property: the pool is built once
        self._seed = seed  # read through the property: the generators are seeded once
        self._clock = VirtualClock(to_timestamp(start, name="start"))
        self._queue = TaskQueue()
        self._callbacks = [
            (listener, as_callback(listener)) for listener in listener_list(listeners)
        ]
        self._log = RecordLog()  # every record, as the core makes it, kept as columns
        self._hearing = Hearing()  # the events a listener's verb made wait (_emit)
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
            user=self,  # core/store/use.py: whose verbs these are
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
        still taken (docs/decisions/public-api.md, "One surface, two runtimes")."""
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
            raise ValidationError(f"an intervention must be callable, got {shown(fn)}")
        wrong = checks.call_error(fn)
        if wrong is not None:  # found now, not as a TypeError out of run() at its instant
            raise ValidationError(
                f"an intervention is called with no arguments, got {shown(fn)}: {wrong}"
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
        ``drain=False`` starts nothing more: the runs due stay as they are, and a
        *process-isolated* run in flight is killed at once, at the call's instant, as the
        threaded shutdown kills its child, recorded ``CancelledError: the scheduler shut
        down without draining (its worker process was killed)`` (outcome ``cancelled``,
        its task kept due, :func:`~lldsched.core.isolation.killed_by_shutdown`).

        Then the rows a store outage left stale are written once more, the last write,
        through the same :meth:`StoreWrites.rewrite_stale
        <lldsched.core.store.writes.StoreWrites.rewrite_stale>` as the threaded
        shutdown's; those the store still refuses are named in one warning
        (:func:`~lldsched.core.store.stalerows.say_left_stale`).  Without that, a one-off
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
        shutdown cancels it, and so is a process-isolated run a drain left in flight
        (``... (its worker process was killed)``), as the threaded drain out of time
        kills its child; a thread run still
        in flight is not cut (a thread cannot be), here as there: it finishes at its
        modelled end, virtual time moving on to it, and the result is False.  Returns
        True when every run ended within ``timeout`` (docs/decisions/simulation.md, "A simulation's
        shutdown timeout bounds its drain in simulated time") and no ``asyncio.to_thread``
        call of a coroutine run is left running: a call its run's timeout cut goes on on
        its thread, which nothing can stop; the calls not started are dropped, and those
        running are said in a WARNING on ``lldsched.scheduler`` and left to end on their
        own (not waited for: the shutdown takes no wall time; docs/decisions/simulation.md,
        "A simulation's shutdown says the asyncio.to_thread calls it leaves running").
        Idempotent and final: a later call writes the stale rows again (and finishes a drain a
        listener's Ctrl-C cut short, by the first call's instant, within its own
        ``timeout``).  Made inside :meth:`run` (``sim.at(t, sim.shutdown)``, a
        listener, an action), it ends that run there: the runs still in flight (an
        action's own, which made it) finish, and nothing more starts.  After it, the
        verbs a shut-down ``Scheduler``
        refuses raise :class:`~lldsched.errors.SchedulerStateError`
        (:data:`lldsched.runtime.REFUSED_AFTER_SHUTDOWN`: ``schedule``,
        ``reschedule``, ``run_now``, ``resume``, ``redrive``), and so do those that move
        virtual time (``run``, ``run_for``, ``step``, ``at``); ``pause``, ``cancel``,
        ``modify``, ``remove`` and the reads still work (docs/decisions/simulation.md, "The
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
        first = self._stopped_at is None  # (tested again below, where mypy narrows it)
        if self._stopped_at is None:  # the first call's drain holds for good
            self._stopped_at = self.now if drain else -_INF
            self._interventions.clear()
        deadline = LAST_INSTANT if seconds is None else min(self.now + seconds, LAST_INSTANT)
        try:
            if self._interrupts.torn_at is not None:  # nothing drains (Interrupts.mark_torn)
                return False
            if is_shared(self._store):  # it never ran (runs_unclaimed): nothing drains
                return True
            if first and not drain:  # its isolated runs killed at once, as on threads
                self._kill_isolated()
            self._advance(deadline, events=-1, due_by=self._stopped_at)
            late = self._out_of_time(deadline)
            self._advance(LAST_INSTANT, events=-1, due_by=-_INF)  # the thread runs finish
            if self._advancing:  # made inside run(): that loop ends here (_stop_heard)
                self._heard.append(SHUT_DOWN_INSIDE)
        finally:
            writes = self._core.store_writes
            if writes is not None and writes.outage is not None:
                say_left_stale(writes.store, writes.rewrite_stale())
            calls = self._awaiting.close()
            if calls:
                say_calls_left(calls)
        return not late and not calls

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

    def _retired(self, task_id: str) -> None:
        """The core retires ``task_id``: its models go with it (what the views read of it
        stays, in the core's ``departed``)."""
        self._models.pop(task_id, None)

    def __repr__(self) -> str:
        return (
            f"<Simulation at {self.now!r} workers={self.workers} busy={self.busy} "
            f"tasks={len(self._core.tasks)} records={len(self._log)}>"
        )
