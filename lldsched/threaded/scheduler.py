"""Scheduler: the threaded runtime around the core state machine.

Several kinds of thread share one lock:

* the **timer** (:mod:`~lldsched.threaded.timer`) waits on a ``Condition`` exactly
  until the head of the heap is due, pops every due entry that fits in the hand-off
  queue, and submits them to the pool.  Nothing polls;
* the **workers** (:class:`~lldsched.threaded.pool.WorkerPool`) take entries from the
  bounded hand-off queue, ask the core to begin them (stale entries are dropped
  there, by generation), run the action *without* the lock, and report back
  (:mod:`~lldsched.threaded.running`);
* the **event dispatcher** delivers events to listeners, off the hot path;
* the **event loop** (:class:`~lldsched.threaded.coroutines.CoroutineRunner`, started
  at the first coroutine run) runs the awaitables that ``async def`` actions
  return, with their timeouts enforced by cancellation;
* **worker processes** (:class:`~lldsched.threaded.processes.ProcessPool`, started at
  the first run of a task registered with ``isolation="process"``) run such tasks'
  actions: the worker thread that took the run waits for its child, so isolated runs
  count against the ``workers`` like any run, and a child is killed at its timeout.

The class is written in modules (:mod:`~lldsched.threaded.parts` declares what they
share): this one builds and starts the scheduler; registration
(:mod:`~lldsched.threaded.registering`), the timer, the runs, the control verbs
(:mod:`~lldsched.threaded.control`), the reads (:mod:`~lldsched.threaded.reads`),
shutdown (:mod:`~lldsched.threaded.stopping`) and the waits for quiet
(:mod:`~lldsched.threaded.idlewaits`) are mixed in.

**Recovery.**  A scheduler built on a store that already holds tasks restores
them in its constructor (:func:`lldsched.core.recovery.recover`): they are visible
and controllable before ``start()``, the misfire decisions are taken at the
clock's time of construction, and nothing runs before ``start()``.  On a shared
store (docs/CLUSTER.md) the store's rows are loaded as they are instead.
"""

from __future__ import annotations

import collections
import itertools
import threading
from collections.abc import Iterable
from datetime import timedelta, tzinfo
from types import TracebackType
from typing import Any, NoReturn

from lldsched.checks import instance_hint, step, whole_or_none
from lldsched.clock import Clock, SystemClock, checked_reading
from lldsched.coordination import CoordinatedStore, is_shared
from lldsched.core.duequeue import TaskQueue
from lldsched.core.ids import IdGenerator, sequential_ids
from lldsched.core.isolation import is_loop_action
from lldsched.core.machine import SchedulerCore
from lldsched.core.recovery import Found, at_start, recover
from lldsched.core.retention import DEFAULT_RETAIN_FINISHED, RetainFinished
from lldsched.core.store import use as storeuse
from lldsched.deprecated import keyword_only_now
from lldsched.errors import (
    SchedulerShutDownError,
    SchedulerStateError,
    ValidationError,
    doc_url,
    shown,
)
from lldsched.listeners import Listener, listener_list
from lldsched.logs import Repeats
from lldsched.persistence import TaskStore
from lldsched.threaded import naming
from lldsched.threaded.control import ControlVerbs
from lldsched.threaded.coroutines import CoroutineRunner
from lldsched.threaded.deadline import Flag, Waiters
from lldsched.threaded.dispatcher import EventDispatcher
from lldsched.threaded.forked import note
from lldsched.threaded.idlewaits import IdleWaits
from lldsched.threaded.jumps import LastLook
from lldsched.threaded.parts import NEW, RUNNING, STOPPED
from lldsched.threaded.pool import WorkerPool
from lldsched.threaded.processes import ProcessPool
from lldsched.threaded.reads import Reads
from lldsched.threaded.registering import Registering
from lldsched.threaded.running import RunExecution
from lldsched.threaded.shared import Coordinator
from lldsched.threaded.stopping import Stopping
from lldsched.threaded.timer import MAX_WAIT, TimerThread

__all__ = ["Scheduler"]

# Counts the schedulers built in this process: the default ``name`` that tells their
# threads apart (``next()`` on a count is atomic under the GIL).
_built = itertools.count(1)


class Scheduler(TimerThread, RunExecution, ControlVerbs, Reads, Stopping, IdleWaits, Registering):
    """An in-process task scheduler: a heap-and-Condition timer and a bounded worker pool.

    ``workers`` is the number of worker threads (default 4).  ``clock``, ``store``,
    ``listeners`` and ``ids`` are injected; ``handoff`` bounds
    the queue between the timer and the workers (default: 16 per worker);
    ``history_limit`` bounds each task's in-memory history (default 100 runs;
    ``None``: unbounded; a store and the listeners see every record);
    ``listener_backlog`` bounds the events waiting for the listeners (default 10,000;
    past it the oldest are dropped and counted in :attr:`dropped_events`);
    ``seed`` seeds retry jitter, with the task, the slot and the attempt
    (:func:`~lldsched.policies.retry_draws`; ``None``, the default: one drawn from the
    OS); ``max_wait`` bounds how long the timer sleeps
    before it looks at the clock again (seconds, at least a microsecond, default 60;
    ``None``: exactly until the next due instant), which is how it notices a
    wall-clock jump or a suspend;
    ``name`` tells this scheduler's threads from another's in a thread dump: they are
    named ``lldsched-<name>-timer``, ``-worker-0`` ... ``-worker-<workers - 1>``, ``-events``,
    ``-loop`` and ``-loop-to-thread_N``, ``-lease-watch``, ``-lease-keeper`` and ``-flush``
    (a shared store's), ``-shutdown`` (:meth:`aclose`'s), and a shutdown's
    ``-release``, ``-rewrite``, ``-loop-closer`` and ``-loop-executor-join``
    (docs/OPERATIONS.md, "Running it in a service"; default: a number counting the
    schedulers built without a name in this process,
    ``"1"``, ``"2"``, ...; it is :attr:`name`), and its log lines' ``scheduler`` field;
    two running schedulers of one process never share a name given (:meth:`start`
    refuses the second: :mod:`lldsched.threaded.naming`).
    ``max_coroutines`` bounds the coroutine runs in flight at once (see
    :mod:`lldsched.threaded.coroutines.runner`); ``tz`` is the zone of cron schedules that
    name none (cron text included; default UTC); ``retain_finished`` says how long
    finished (succeeded or cancelled) tasks stay registered: a count of the most
    recent (default 10,000), a ``timedelta`` after each finished, or ``None`` for
    ever (see :mod:`lldsched.core.retention`); ``purge_retired=True`` deletes a task
    from the ``store`` as it retires (its row and records, as :meth:`remove` does: a
    durable store then keeps no more finished tasks than the registry; default False,
    the store keeps every task it was given).  A ``store`` that holds tasks (a reopened
    :class:`~lldsched.stores.sqlite.SqliteTaskStore`) has them restored here.

    **Collaborator seams.**  The heap, the pool and the event dispatcher are built
    from the class attributes :attr:`queue_type`, :attr:`pool_type` and
    :attr:`dispatcher_type`, read once in the constructor (never on the hot
    path).  The design lab (:mod:`lldsched.lab`) swaps one of them in a subclass
    to switch a single decision off; production code has no reason to.
    """

    queue_type: type[TaskQueue] = TaskQueue
    """The heap of due entries, built as ``queue_type(wake)`` on the timer's condition,
    then given the clock (``set_clock``: its lane of entries due when queued)."""
    pool_type: type[WorkerPool[Any, Any, Any]] = WorkerPool
    """The worker pool (same keyword arguments as :class:`WorkerPool`)."""
    dispatcher_type: type[EventDispatcher] = EventDispatcher
    """The event dispatcher, built as ``dispatcher_type(listener_backlog, name=...)``
    (``name``: its thread's)."""

    # -- construction and start ----------------------------------------------

    @keyword_only_now(kept=1, moved=("clock", "store", "listeners"))
    def __init__(
        self,
        workers: int = 4,
        *,
        clock: Clock | None = None,
        store: TaskStore | None = None,
        listeners: Iterable[Listener] = (),
        ids: IdGenerator | None = None,
        handoff: int | None = None,
        history_limit: int | None = 100,
        listener_backlog: int = 10_000,
        seed: int | None = None,
        max_wait: float | timedelta | None = MAX_WAIT,
        max_coroutines: int = 1000,
        tz: str | tzinfo = "UTC",
        retain_finished: RetainFinished = DEFAULT_RETAIN_FINISHED,
        name: str | None = None,
        purge_retired: bool = False,
    ) -> None:
        counted = name is None  # a name counted is never refused (naming.py)
        if name is None:
            name = str(next(_built))
            while naming.taken(name):  # given by hand to a running scheduler
                name = str(next(_built))
        elif not isinstance(name, str) or not name or not name.isprintable():
            raise ValidationError(f"name must be a non-empty printable str, got {shown(name)}")
        whole_or_none(seed, name="seed")  # random.Random took any hashable: nan, "4", 2.5
        self.name = name
        """Names this scheduler's threads: ``lldsched-<name>-timer``, ... (see above)."""
        if counted:  # kept by naming.py, not here: a 30th attribute slows every self._x
            naming.counted(self)
        self._thread_prefix = f"lldsched-{name}-"  # the prefix of every thread's name
        if max_wait is not None:
            max_wait = float(step(max_wait, name="max_wait"))  # >= 1 µs: no busy timer
        self._max_wait = max_wait
        self._dispatcher = self.dispatcher_type(
            listener_backlog, name=f"{self._thread_prefix}events"
        )
        listeners = listener_list(listeners)
        for listener in listeners:
            self._dispatcher.add(listener)
        # A class has the methods too: clock=SystemClock was taken, and its timer died.
        if clock is not None and (not isinstance(clock, Clock) or isinstance(clock, type)):
            raise ValidationError(
                f"clock must be a Clock (now and wait methods), got {shown(clock)}"
                f"{instance_hint(clock)}"
            )
        if clock is not None:
            checked_reading(clock)  # a datetime's now(): said here, not by a schedule
        self._clock = clock if clock is not None else SystemClock()
        self._last_look = LastLook(getattr(self._clock, "monotonic", None))
        # The scheduler's one lock.  It guards the core state machine (registry,
        # statuses, dead letter), the heap, the deadline heap, the pool's hand-off
        # queue, the coroutine runner's hand-over state, _loop_ids, _in_flight,
        # _draining, _state and _idle_waiters.  Two conditions share it, waited on
        # by the scheduler's own threads only: _wake (the timer waits on it;
        # notified by a push that makes a new head, by a new earliest deadline, by a
        # worker that half-emptied the hand-off queue, by a clock change and by
        # shutdown) and the pool's (workers wait for items).  The caller's thread
        # never waits on a condition of it (a Ctrl-C there let go of the lock another
        # thread held): wait_idle() waits on a lock of its own, let go under it as
        # the last run in flight settles (_idle_waiters, idlewaits.IdleWaits._quiet);
        # shutdown waits on events set under it (its drain's, set by every
        # settled run; the runner's _settled, by its last coroutine), and takes it
        # with a timeout: a store call that hangs under it cannot hold shutdown
        # past its own (lldsched/threaded/deadline.py).  Lock order: this lock,
        # then the dispatcher's, the store's, the process pool's (kill() runs
        # under it), the lease watch's (a shared store's leases added, dropped and
        # renewed under it), an event's, an injected clock's (a FakeClock's, as the timer
        # parks), core/store/use.py's (start(), a verb's check of who holds the
        # store) or threaded/naming.py's (start(), shutdown()); none of them is held
        # while this one is taken.  Never held while an action, a coroutine, a
        # listener or the log line of a failed run runs (rarer lines are logged
        # under it: a clock jump, a schedule that raises, a store outage).  In a
        # child forked from this process it is replaced by a Refusal, which raises
        # at every acquisition (lldsched/threaded/forked.py): the child has none of
        # the threads.
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._queue = self.queue_type(self._wake)
        self._queue.set_clock(self._clock.now)  # a task due when queued skips the heap
        self._pool = self.pool_type(
            workers,
            prepare=self._prepare,
            execute=self._execute,
            complete=self._complete,
            lock=self._lock,
            capacity=handoff,
            on_room=self._wake.notify_all,
            name=f"{self._thread_prefix}worker",
        )
        self._loop_ids: set[str] = set()  # tasks whose action is an async def: the loop runs them
        if store is not None:  # a store a running scheduler holds: refused, nothing built
            storeuse.check(store, self)
        shared = _coordinated(store)
        if shared is not None and ids is None:  # default ids unique across processes
            ids = sequential_ids(prefix=f"task-{shared.node.rsplit(':', 1)[-1]}-")
        self._processes = ProcessPool(now=self._clock.now)  # no process until an isolated run
        self._core = SchedulerCore(
            clock=self._clock,
            queue=self._queue,
            ids=ids,
            store=store,
            emit=self._dispatcher.publish if listeners else None,
            seed=seed,
            history_limit=history_limit,
            tz=tz,
            retain_finished=retain_finished,
            purge_retired=purge_retired,
            on_retire=self._loop_ids.discard,
            on_cancel=self._cancel_overlapped,
            on_retime=self._retime,
            user=self,  # core/store/use.py: whose verbs these are
            packed_history=True,  # its histories are what it keeps of its runs
        )
        self._deadlines = []
        self._armed = {}
        self._deadline_sequence = itertools.count()
        self._in_flight = 0  # entries popped by the timer and not yet settled (_settle)
        self._draining = False  # shutdown(drain=True) is handing out the last due entries
        self._drain_settled = Flag()  # set by each settled run while draining
        self._idle_waiters = Waiters()  # wait_idle()'s waiters' own locks (idlewaits._quiet)
        self._failures = collections.deque()  # failed runs' log lines, logged without _lock
        self._saying = Repeats()  # its lock: the thread logging _failures (never inside _lock)
        self._state = NEW
        self._shut_down = Flag()  # set when the first shutdown() returns
        self._timer = None
        # The shared store's side, or None: claims, leases, the change feed (under _lock).
        self._coordinator = None
        self._begin = self._core.begin
        if shared is not None:
            self._coordinator = Coordinator(
                shared,
                self._core,
                drop_due=self._drop_due,
                wake=self._wake_from_store,
                followed=self._followed,
                stop=self._stop_lost,
                unclaimed=self._unclaimed,
                thread_prefix=self._thread_prefix,
            )
            self._begin = self._coordinator.begin  # with its claim's token
            self._pool.on_idle = self._room_freed  # claims wait for an idle worker
        self._coroutines = CoroutineRunner(
            lock=self._lock,
            begin=self._begin,
            loop_ids=self._loop_ids,
            to_workers=self._to_workers,
            finish=self._finish_coroutine,
            settle=self._settle,
            said=self._say_failures,
            lane=workers,  # a loop task's records: the lane one past the worker threads
            now=self._clock.now,
            clock_raised=self._clock_failure,
            begin_raised=self._loop_begin_raised,
            put_back=self._queue.put_back,
            cut=self._cut_by_shutdown,
            limit=max_coroutines,
            name=f"{self._thread_prefix}loop",
        )
        if shared is not None:  # loop tasks' claims wait for a free coroutine slot
            self._coroutines.on_free = self._room_freed
        # Slots passed at start() meet the misfire policy there (recovery.at_start), those
        # of the tasks recover decided here (a restart's owed attempt, a coalesced run)
        # decided again with them, from the state it found them in.  Emptied by start().
        self._found: dict[str, Found] = {}
        if store is not None:
            with self._lock:
                if self._coordinator is not None:
                    self._coordinator.load()
                else:  # may raise (a bad store): no thread started yet
                    recover(self._core, store, found=self._found)
                for task in self._core.tasks.values():
                    if is_loop_action(task.action, task._options.isolation):
                        self._loop_ids.add(task.id)
        note(self)  # refused in a child forked from this process (threaded/forked.py)

    def start(self) -> Scheduler:
        """Start the timer, the workers and the event dispatcher; returns self.

        The threads are started under the lock that marks the scheduler running (each
        waits for it before it does anything): a ``shutdown()`` from another thread
        finds it either not started or started whole, never running without its
        threads (which a pool closed before they started would have left waiting for
        ever).

        Raises :class:`~lldsched.errors.SchedulerStateError` on a scheduler already
        started (or whose timer thread died), its subclass
        :class:`~lldsched.errors.SchedulerShutDownError` on one shut down, and
        :class:`~lldsched.errors.StoreError` when another running scheduler holds its
        store object, and :class:`~lldsched.errors.SchedulerStateError` when a running
        scheduler of this process has the ``name=`` it was given
        (:mod:`lldsched.threaded.naming`)."""
        with self._lock:
            self._refuse_if_dead("start()")
            if self._state is not NEW:
                refused = SchedulerShutDownError if self._state is STOPPED else SchedulerStateError
                raise refused(f"start() on a scheduler that is already {self._state}")
            naming.take(self)  # one running scheduler per name given
            writes = self._core.store_writes
            if writes is not None:  # one running scheduler per store object (store/use.py)
                try:
                    storeuse.take(writes.store, self)
                except BaseException:
                    naming.let_go(self)
                    raise
            self._state = RUNNING
            now = self._clock.now()
            if self._coordinator is None:
                at_start(self._core, self._found, now)
            else:  # the claim decides (Coordinator._misfire) a slot due before now
                self._coordinator.started(now)
            self._found = {}
            self._first_look()  # jumps are measured from now on (timer.py)
            self._pool.start()
            self._dispatcher.start()  # its lock after this one: the documented order
            self._timer = threading.Thread(
                target=self._run_timer, name=f"{self._thread_prefix}timer", daemon=True
            )
            self._timer.start()
        return self

    def __enter__(self) -> Scheduler:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Leaving ``with``: :meth:`shutdown`, unless one already returned (its
        ``timeout`` was the bound: :meth:`_block_stops`)."""
        if self._block_stops():
            self.shutdown()

    async def __aenter__(self) -> Scheduler:
        """``async with Scheduler(...) as scheduler:`` starts it (start() does not block)."""
        return self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Leaving ``async with``: :meth:`aclose`, which waits for the shutdown without
        blocking the event loop; unless one already returned, as for ``with``."""
        if self._block_stops():
            await self.aclose()

    # -- properties ----------------------------------------------------------

    @property
    def running(self) -> bool:
        """True between start() and shutdown() while the timer thread lives.

        False again if the timer thread died (a clock or a shared store's claim raising
        in it, logged as "the timer thread died"): nothing is dispatched any more,
        ``metrics().state`` is ``"dead"``, and the verbs that need the timer
        (``wait_idle``, ``wait_drained``, ``run_now``, ``start``) raise
        :class:`~lldsched.errors.SchedulerStateError` saying so; the others keep the
        books (a durable store keeps them for the next process), and ``shutdown()``
        stops the rest."""
        return self._state is RUNNING

    @property
    def clock(self) -> Clock:
        """The clock it was given (``SystemClock()`` by default)."""
        return self._clock

    @property
    def workers(self) -> int:
        """How many worker threads run actions at once (fixed at construction)."""
        return self._pool.workers

    @property
    def now(self) -> float:
        """The scheduler clock's instant, in seconds since the epoch."""
        return self._clock.now()

    @property
    def tz(self) -> str:
        """The zone of cron schedules that name none (an IANA key)."""
        return self._core.tz

    @property
    def retain_finished(self) -> RetainFinished:
        """How long finished tasks stay registered (:mod:`lldsched.core.retention`)."""
        return self._core.retain_finished

    def __reduce__(self) -> NoReturn:
        """Refused: multiprocessing's spawn and forkserver start methods (the default on
        macOS, Windows and Python 3.14) pickle a Process's arguments, and a scheduler's
        threads, lock and tasks cannot follow it into another interpreter."""
        raise SchedulerStateError(
            f"{self!r} cannot be pickled to another process: a scheduler (its threads, its "
            "lock, its tasks) belongs to the process that made it. multiprocessing's spawn "
            "and forkserver start methods (the default on macOS, Windows and Python 3.14) "
            "pickle a Process's arguments; make the scheduler in the child (with a shared "
            f"store to share tasks: {doc_url('docs/CLUSTER.md')})"
        )

    def __repr__(self) -> str:
        return (
            f"<Scheduler {self.name!r} {self._state} workers={self._pool.workers} "
            f"tasks={len(self._core.tasks)} clock={self._clock!r}>"
        )


def _coordinated(store: TaskStore | None) -> CoordinatedStore | None:
    """``store`` if it coordinates several schedulers (opened shared), else None."""
    if store is None or not is_shared(store):
        return None
    if not isinstance(store, CoordinatedStore):
        raise ValidationError(
            f"{shown(store)} says shared=True but lacks the CoordinatedStore methods"
        )
    return store
