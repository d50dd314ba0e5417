"""Scheduler: the threaded runtime around the core state machine.

Three kinds of thread share one lock:

* the **timer** waits on a ``Condition`` exactly until the head of the heap is
  due (``Clock.wait``), pops every due entry that fits in the hand-off queue,
  and submits them to the pool.  Nothing polls: a push that makes a new head
  notifies the condition, so a task due sooner than the one the timer is parked
  on re-arms it at once;
* the **workers** (:class:`~lldsched.threaded.pool.WorkerPool`) take entries from the
  bounded hand-off queue, ask the core to begin them (stale entries are dropped
  there, by generation), run the action *without* the lock, and report back;
* the **event dispatcher** delivers events to listeners, off the hot path;
* the **event loop** (:class:`~lldsched.threaded.coroutines.CoroutineRunner`, started
  at the first coroutine run) runs the awaitables that ``async def`` actions
  return, with their timeouts enforced by cancellation;
* **worker processes** (:class:`~lldsched.threaded.processes.ProcessPool`, started at
  the first run of a task registered with ``isolation="process"``) run such tasks'
  actions: the worker thread that took the run waits for its child, so isolated runs
  count against the ``workers`` like any run, and a child is killed at its timeout.

Shutdown stops timing first (the timer is woken and joined, so nothing new is
submitted), then drains (every run due at or before the shutdown instant, in heap
order, bounded by the timeout) or drops what is due, joins the workers, closes the
event loop, then delivers the events left.  It is idempotent, and final.

**Recovery.**  A scheduler built on a store that already holds tasks restores
them in its constructor (:func:`lldsched.core.recovery.recover`): they are visible
and controllable before ``start()``, the misfire decisions are taken at the
clock's time of construction, and nothing runs before ``start()``.

**Wall-clock jumps.**  Due instants are wall-clock instants, and the timer
waits on a monotonic timeout.  When the clock has a ``monotonic()`` (the
:class:`~lldsched.clock.SystemClock` does; a ``FakeClock`` *is* time and has
none), the timer compares the two each time it wakes; a gap of more than 1 s
(plus 0.1% of the time waited, for NTP slewing) is a jump, and
:func:`lldsched.core.recovery.after_clock_jump` re-evaluates the heap: forward, the
misfire policy applies as after downtime; backward, elapsed-time schedules move
back with the clock.  A jump is noticed when the timer next wakes: when the head
of the heap falls due by the monotonic clock, and at the latest ``max_wait``
seconds (default 60) after it went to sleep.  That bound is what notices a
suspend: ``Condition.wait`` counts monotonic time, which stops while the machine
sleeps, so an unbounded wait for a task due in an hour would end an hour *after*
resume.  One wake a minute costs nothing measurable (``benchmarks/bench_idle.py``);
``max_wait=None`` waits exactly until the head is due.

**A shared store** (``SqliteTaskStore(path, shared=True)``, docs/CLUSTER.md): the
timer claims what runs from the store instead of popping the heap (the heap
stays, as the hint of when to wake), renews its leases as one more deadline,
and applies other processes' changes at every wake, at least every ``poll``
seconds (:class:`~lldsched.threaded.shared.Coordinator`).  The store's rows are
loaded as they are at construction, instead of recovery.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import operator
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import tzinfo
from types import TracebackType
from typing import Any

from lldsched.checks import seconds
from lldsched.clock import Clock, SystemClock
from lldsched.core.context import RunContext
from lldsched.core.duequeue import QueueStats, TaskQueue
from lldsched.core.ids import IdGenerator, sequential_ids
from lldsched.core.machine import SchedulerCore
from lldsched.core.recovery import after_clock_jump, recover
from lldsched.core.registration import UNCHANGED, F, Unchanged, registering, require_action
from lldsched.core.results import must_await, result_text
from lldsched.core.retention import DEFAULT_RETAIN_FINISHED, RetainFinished
from lldsched.core.task import Entry, Run, ScheduledTask
from lldsched.errors import SchedulerStateError, ValidationError, error_text
from lldsched.listeners import Listener
from lldsched.model import ExecutionRecord, Priority, TaskStatus
from lldsched.persistence import CoordinatedStore, TaskStore
from lldsched.policies import MisfirePolicy, Overlap, RetryPolicy
from lldsched.schedules.base import Schedule
from lldsched.threaded.coroutines import CoroutineRunner, is_loop_action
from lldsched.threaded.dispatcher import EventDispatcher
from lldsched.threaded.pool import WorkerPool
from lldsched.threaded.processes import ProcessPool
from lldsched.threaded.shared import Coordinator

__all__ = ["Scheduler"]

log = logging.getLogger("lldsched")

_NEW, _RUNNING, _STOPPED = "new", "running", "stopped"

JUMP_TOLERANCE = 1.0
"""Seconds of disagreement between wall and monotonic time taken for a clock jump,
plus :data:`JUMP_DRIFT` of the time waited."""
JUMP_DRIFT = 0.001

_finished = operator.attrgetter("finished")  # the order of Scheduler.records()

MAX_WAIT = 60.0
"""The longest the timer sleeps before it looks at the clock again, by default (seconds)."""

_Outcome = tuple[float, float, "str | None", "BaseException | None", "str | None", object, bool]
"""What running an attempt produced: started, finished, error text, escaped exception,
result text, an awaitable still to run (None for a run that is over), and whether
the run was stopped at its timeout (a child process killed)."""


class Scheduler:
    """An in-process task scheduler: a heap-and-Condition timer and a bounded worker pool.

    ``clock``, ``store``, ``listeners`` and ``ids`` are injected; ``handoff`` bounds
    the queue between the timer and the workers (default: 16 per worker);
    ``history_limit`` bounds each task's in-memory history (default 100 runs;
    ``None``: unbounded; a store and the listeners see every record);
    ``seed`` seeds retry jitter; ``max_wait`` bounds how long the timer sleeps
    before it looks at the clock again (seconds, default 60; ``None``: exactly until
    the next due instant), which is how it notices a wall-clock jump or a suspend;
    ``max_coroutines`` bounds the coroutine runs in flight at once (see
    :mod:`lldsched.threaded.coroutines`); ``tz`` is the zone of cron schedules that
    name none (cron text included; default UTC); ``retain_finished`` says how long
    finished (succeeded or cancelled) tasks stay registered: a count of the most
    recent (default 10,000), a ``timedelta`` after each finished, or ``None`` for
    ever (see :mod:`lldsched.core.retention`).  A ``store`` that holds tasks (a reopened
    :class:`~lldsched.stores.sqlite.SqliteTaskStore`) has them restored here.

    **Collaborator seams.**  The heap, the pool and the event dispatcher are built
    from the class attributes :attr:`queue_type`, :attr:`pool_type` and
    :attr:`dispatcher_type`, read once in the constructor (never on the hot
    path).  The design lab (:mod:`lldsched.lab`) swaps one of them in a subclass
    to switch a single decision off; production code has no reason to.
    """

    queue_type: type[TaskQueue] = TaskQueue
    """The heap of due entries, built as ``queue_type(wake)`` on the timer's condition."""
    pool_type: type[WorkerPool[Any, Any, Any]] = WorkerPool
    """The worker pool (same keyword arguments as :class:`WorkerPool`)."""
    dispatcher_type: type[EventDispatcher] = EventDispatcher
    """The event dispatcher, built as ``dispatcher_type(listener_backlog)``."""

    def __init__(
        self,
        workers: int = 4,
        clock: Clock | None = None,
        store: TaskStore | None = None,
        listeners: Iterable[Listener] = (),
        *,
        ids: IdGenerator | None = None,
        handoff: int | None = None,
        history_limit: int | None = 100,
        listener_backlog: int = 10_000,
        seed: int | None = None,
        max_wait: float | None = MAX_WAIT,
        max_coroutines: int = 1000,
        tz: str | tzinfo = "UTC",
        retain_finished: RetainFinished = DEFAULT_RETAIN_FINISHED,
    ) -> None:
        if max_wait is not None:
            max_wait = float(seconds(max_wait, name="max_wait", above=0))
        self._max_wait = max_wait
        self._dispatcher = self.dispatcher_type(listener_backlog)
        listeners = list(listeners)
        for listener in listeners:
            self._dispatcher.add(listener)
        self._clock: Clock = clock if clock is not None else SystemClock()
        # The scheduler's one lock.  It guards the core state machine (registry,
        # statuses, dead letter), the heap, the deadline heap, the pool's hand-off
        # queue, the coroutine runner's hand-over state, _loop_ids, _in_flight,
        # _draining, _state and _idle_waiters.  Four conditions share it: _wake
        # (the timer waits on it, and shutdown's drain; notified by a push that
        # makes a new head, by a new earliest deadline, by a worker that
        # half-emptied the hand-off queue, by a clock change, by shutdown, and
        # while draining by every settled run), the pool's (workers wait for
        # items), _idle (wait_idle() waits for the last run in flight to settle)
        # and the runner's _settled (its shutdown waits for the last coroutine).
        # Lock order: this lock, then the dispatcher's or the store's.  Never held
        # while an action, a coroutine or a listener runs.
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._queue = self.queue_type(self._wake)
        self._pool: WorkerPool[Entry, Run, _Outcome] = self.pool_type(
            workers,
            prepare=self._prepare,
            execute=self._execute,
            complete=self._complete,
            lock=self._lock,
            capacity=handoff,
            on_room=self._wake.notify_all,
        )
        self._idle = threading.Condition(self._lock)
        self._coroutines = CoroutineRunner(
            lock=self._lock,
            begin=self._begin_on_loop,
            finish=self._finish_coroutine,
            drop=self._settle,
            now=self._clock.now,
            limit=max_coroutines,
        )
        self._loop_ids: set[str] = set()  # tasks whose action is an async def: the loop runs them
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
            rng=random.Random(seed),
            history_limit=history_limit,
            tz=tz,
            retain_finished=retain_finished,
            on_retire=self._loop_ids.discard,
            on_cancel=self._cancel_overlapped,
        )
        self._deadlines: list[tuple[float, int, RunContext]] = []
        self._deadline_sequence = itertools.count()
        self._in_flight = 0  # entries popped by the timer and not yet settled by a worker
        self._draining = False  # shutdown(drain=True) is handing out the last due entries
        self._idle_waiters = 0
        self._state = _NEW
        self._timer: threading.Thread | None = None
        # The shared store's side, or None: claims, leases, the change feed (under _lock).
        self._coordinator: Coordinator | None = None
        if shared is not None:
            self._coordinator = Coordinator(
                shared, self._core, drop_due=self._drop_due, wake=self._wake_from_store
            )
            with self._lock:
                self._coordinator.load()
                for task in self._core.tasks.values():
                    if is_loop_action(task.action):
                        self._loop_ids.add(task.id)
        elif store is not None:
            with self._lock:
                recover(self._core, store)  # may raise (a bad store): no thread started yet
                for task in self._core.tasks.values():
                    if is_loop_action(task.action):
                        self._loop_ids.add(task.id)
        if listeners:  # deliver from now on: registrations before start() are events too
            self._dispatcher.start()

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> Scheduler:
        """Start the timer, the workers and the event dispatcher; returns self."""
        with self._lock:
            if self._state is not _NEW:
                raise SchedulerStateError(f"start() on a scheduler that is already {self._state}")
            self._state = _RUNNING
        self._pool.start()
        self._dispatcher.start()
        self._timer = threading.Thread(target=self._run_timer, name="lldsched-timer", daemon=True)
        self._timer.start()
        return self

    def shutdown(self, drain: bool = True, timeout: float | None = 5.0) -> bool:
        """Stop timing, then drain (or with ``drain=False`` drop) the work that is due;
        runs in flight always finish.  Idempotent and final.

        ``drain=True`` runs every run due at or before the instant of this call, in
        heap order (due, priority, arrival), the ones already handed to the workers
        and the ones still in the heap alike; runs that fall due later (a retry's
        backoff, the next slot) are not run.  ``timeout`` bounds the whole shutdown:
        what has not started when it runs out is not run.  What is not run stays
        SCHEDULED (or RETRYING) with its due time, for a durable store to recover.
        Coroutines still running when ``timeout`` runs out are cancelled (see
        :mod:`lldsched.threaded.coroutines`).  Worker processes (``isolation="process"``)
        are closed: a drain waits for their runs like any other; without a drain, or
        once ``timeout`` runs out, a run still in its child is killed and recorded
        failed (``CancelledError: the scheduler shut down without draining``).

        Returns True when every thread stopped within ``timeout`` seconds; calling it
        again waits again (up to its own ``timeout``) for a run still in flight.
        """
        deadline = None if timeout is None else time.monotonic() + timeout

        def remaining() -> float | None:
            return None if deadline is None else max(0.0, deadline - time.monotonic())

        with self._lock:
            already = self._state is _STOPPED
            started = self._state is _RUNNING
            self._state = _STOPPED
            self._wake.notify_all()
        if already:  # a second call waits again for what the first left running
            self._join(remaining)
            return not self._threads_alive()
        instant = self._clock.now()
        if self._timer is not None and self._timer is not threading.current_thread():
            self._timer.join(remaining())
        finished = drain and started and self._drain(instant, remaining)
        if not finished:  # drop=False, or out of time: what waits for the loop is dropped too
            with self._lock:
                self._coroutines.drop_waiting()
            self._processes.kill_all("the scheduler shut down without draining")
        dropped = self._pool.shutdown(drain=finished, timeout=remaining())
        if dropped:
            with self._lock:
                self._settle(len(dropped))
        if self._coordinator is not None:
            with self._lock:
                self._coordinator.release_pending()  # claims dropped unrun: free them now
        self._processes.close(remaining())
        self._coroutines.shutdown(remaining())
        self._dispatcher.close(remaining())
        return not self._threads_alive()

    def _drain(self, instant: float, remaining: Callable[[], float | None]) -> bool:
        """Hand the workers every entry due at or before ``instant``, as room frees, and
        wait for the runs in flight (which may queue more such entries: a CATCH_UP
        slot).  False if the time ran out first.  The timer is stopped: this runs on
        the thread that called shutdown()."""
        queue, pool = self._queue, self._pool
        own = 1 if pool.is_worker(threading.current_thread()) else 0  # shutdown() from a run
        shared = self._coordinator is not None  # other processes run what is due; heap: hints
        with self._lock:
            self._draining = True  # _settle wakes this loop
            try:
                while True:
                    room = 0 if shared else pool.room
                    batch = queue.pop_due(instant, room) if room else []
                    if batch:
                        self._in_flight += len(batch)
                        self._hand_out(batch)
                        continue
                    due = None if shared else queue.next_due()
                    if (due is None or due > instant) and self._in_flight <= own:
                        return True
                    wait = remaining()
                    if wait == 0.0:
                        return False
                    self._wake.wait(wait)  # notified by room, a push, or a settled run
            finally:
                self._draining = False

    def __enter__(self) -> Scheduler:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.shutdown()

    @property
    def running(self) -> bool:
        """True between start() and shutdown()."""
        return self._state is _RUNNING

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def workers(self) -> int:
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

    # -- registration and control ----------------------------------------------------

    def schedule(
        self,
        name: str,
        action: Callable[..., Any] | str,
        schedule: Schedule | str,
        *,
        id: str | None = None,
        replace_existing: bool = False,
        priority: Priority | int = Priority.NORMAL,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        args: tuple[Any, ...] | list[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        misfire: MisfirePolicy | None = None,
        isolation: str = "thread",
        depends_on: Sequence[str] = (),
        overlap: Overlap | None = None,
        max_instances: int | None = None,
    ) -> ScheduledTask:
        """Register ``action`` to run on ``schedule``; returns its live :class:`ScheduledTask`.

        ``schedule`` is a :class:`~lldsched.schedules.base.Schedule` or the text of a
        cron expression (``"0 3 * * 1-5"``, read in the scheduler's ``tz``).
        ``action(*args, **kwargs)`` is called on a worker; if it declares a parameter
        named ``ctx`` it also gets a :class:`~lldsched.core.context.RunContext`.  An
        ``async def`` action (or one that returns an awaitable) is awaited on the
        scheduler's event loop, and its record written when it completes.  ``retry``
        defaults to ``RetryPolicy()`` (3 attempts).  ``timeout`` is detected, not
        enforced, on a thread (see :mod:`lldsched.core.context`); a coroutine is
        cancelled at its timeout.  ``misfire`` says what happens to slots
        that pass while the scheduler is down (default ``MisfirePolicy()``: run once,
        60 s of grace; see :mod:`lldsched.policies`).  Every argument is validated
        here; with a durable store that includes the action's import path and JSON
        arguments.

        ``isolation="process"`` runs each attempt in a worker process (see
        :mod:`lldsched.threaded.processes`): ``action`` is then an import path,
        ``"package.module:function"``, with ``args`` and ``kwargs`` that JSON keeps
        unchanged, and the ``timeout`` is *enforced*: the child is killed at the
        deadline, the run recorded timed out, and the worker freed at once.  Default
        ``"thread"``.

        ``id`` is a caller-chosen task id (default ``task-1``, ``task-2``, ...).
        Registering an id that exists raises :class:`~lldsched.errors.ValidationError`
        naming it, unless ``replace_existing=True``: the task keeps its id, history
        and status and takes this definition (an unchanged schedule keeps its due
        time), so a service that registers its jobs at every start on a durable
        store gets the same tasks back, not copies.
        """
        require_action(name, action)
        on_loop = isolation == "thread" and is_loop_action(action)
        with self._lock:
            if self._state is _STOPPED:
                raise SchedulerStateError(f"cannot schedule {name!r}: the scheduler is shut down")
            self._follow_others()  # shared: replace what another process registered
            for retry_once in (True, False):
                try:
                    task = self._core.add(
                        name,
                        action,
                        schedule,
                        task_id=id,
                        replace_existing=replace_existing,
                        priority=priority,
                        retry=retry,
                        timeout=timeout,
                        args=args,
                        kwargs=kwargs,
                        misfire=misfire,
                        isolation=isolation,
                        depends_on=depends_on,
                        overlap=overlap,
                        max_instances=max_instances,
                    )
                    break
                except ValidationError:  # shared: the id was registered elsewhere a moment ago?
                    shared = self._coordinator is not None and replace_existing
                    if not (retry_once and shared and id not in self._core.tasks):
                        raise
                    self._follow_others()
            if on_loop:
                self._loop_ids.add(task.id)
            elif self._loop_ids:
                self._loop_ids.discard(task.id)  # an id handed out again
            return task

    def scheduled(
        self,
        schedule: Schedule | str,
        *,
        name: str | None = None,
        id: str | None = None,
        replace_existing: bool = False,
        priority: Priority | int = Priority.NORMAL,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        args: tuple[Any, ...] | list[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        misfire: MisfirePolicy | None = None,
        depends_on: Sequence[str] = (),
        overlap: Overlap | None = None,
        max_instances: int | None = None,
    ) -> Callable[[F], F]:
        """The decorator form of :meth:`schedule`: ``@scheduler.scheduled(FixedRate(60))``
        registers the function under its ``__name__`` (or ``name``) and leaves it as it
        was.  (Not ``task``: :meth:`task` looks a task up by id.)"""

        def register(task_name: str, action: Callable[..., Any]) -> None:
            self.schedule(
                task_name,
                action,
                schedule,
                id=id,
                replace_existing=replace_existing,
                priority=priority,
                retry=retry,
                timeout=timeout,
                args=args,
                kwargs=kwargs,
                misfire=misfire,
                depends_on=depends_on,
                overlap=overlap,
                max_instances=max_instances,
            )

        return registering(schedule, name=name, register=register)

    def reschedule(self, task_id: str, schedule: Schedule | str) -> ScheduledTask:
        """Give the task a new *when* (a schedule, or cron text): same id, history
        kept, as if registered now.  A run in flight or a pending retry finishes
        first; see :meth:`SchedulerCore.reschedule
        <lldsched.core.machine.SchedulerCore.reschedule>`.  Raises
        :class:`~lldsched.errors.SchedulerStateError` for a finished (succeeded or
        cancelled) task, and after shutdown."""
        with self._lock:
            self._follow_others()  # shared: act on the row as it is now
            self._check_open("reschedule", task_id)
            return self._core.reschedule(task_id, schedule)

    def modify(
        self,
        task_id: str,
        *,
        priority: Priority | int | Unchanged = UNCHANGED,
        retry: RetryPolicy | Unchanged | None = UNCHANGED,
        timeout: float | Unchanged | None = UNCHANGED,
    ) -> ScheduledTask:
        """Change the task's priority, retry policy or timeout (what is not given stays);
        see :meth:`SchedulerCore.modify <lldsched.core.machine.SchedulerCore.modify>`."""
        with self._lock:
            self._follow_others()  # shared: act on the row as it is now
            return self._core.modify(task_id, priority=priority, retry=retry, timeout=timeout)

    def run_now(self, task_id: str) -> bool:
        """Run the task once more, at once, without moving its schedule; True if a run
        was queued (or a pending retry brought forward).  False if it is due at once
        anyway, running, paused or finished; see :meth:`SchedulerCore.run_now
        <lldsched.core.machine.SchedulerCore.run_now>`.  Raises
        :class:`~lldsched.errors.SchedulerStateError` once shutdown has begun."""
        with self._lock:
            self._follow_others()  # shared: act on the row as it is now
            self._check_open("run_now", task_id)
            return self._core.run_now(task_id)

    def cancel(self, task_id: str) -> bool:
        """Stop all future runs of the task; True if it was live.  A run in flight on a
        thread finishes (its record is kept) and its context's flag is raised: the
        thread rule is cooperative.  A running *coroutine* is cancelled, and a running
        *process-isolated* run killed; either attempt is recorded failed
        (``CancelledError: task cancelled``)."""
        with self._lock:
            self._follow_others()  # shared: act on the row as it is now
            changed = self._core.cancel(task_id)
            if changed:
                self._coroutines.cancel(task_id, "cancelled")
                self._processes.kill(task_id, "task cancelled")
            self._notify_idle()  # a wait_drained() waiter may have been waiting on this task
            return changed

    def pause(self, task_id: str) -> bool:
        """Hold the task; True if it was live.  A run in flight on a thread finishes;
        nothing follows.  A running *coroutine* is cancelled, and a running
        *process-isolated* run killed: its attempt is recorded failed
        (``CancelledError: task paused``) and, like any failure, retried after
        ``resume()`` while attempts remain."""
        with self._lock:
            self._follow_others()  # shared: act on the row as it is now
            changed = self._core.pause(task_id)
            if changed:
                self._coroutines.cancel(task_id, "paused")
                self._processes.kill(task_id, "task paused")
            self._notify_idle()  # a wait_drained() waiter may have been waiting on this task
            return changed

    def resume(self, task_id: str) -> bool:
        """Return a paused task to its queue; a slot it slept through runs at once."""
        with self._lock:
            self._follow_others()  # shared: act on the row as it is now
            self._check_open("resume", task_id)
            return self._core.resume(task_id)

    def redrive(self, task_id: str) -> bool:
        """Put a dead-lettered (FAILED) task back, due now, with a fresh attempt counter."""
        with self._lock:
            self._follow_others()  # shared: act on the row as it is now
            self._check_open("redrive", task_id)
            return self._core.redrive(task_id)

    def remove(self, task_id: str) -> ScheduledTask:
        """Cancel the task if live, and forget it (here and in the store)."""
        with self._lock:
            self._follow_others()  # shared: act on the row as it is now
            task = self._core.remove(task_id)
            self._coroutines.cancel(task_id, "cancelled")
            self._processes.kill(task_id, "task cancelled")
            self._loop_ids.discard(task_id)
            self._notify_idle()
            return task

    # -- queries ------------------------------------------------------------------------

    def task(self, task_id: str) -> ScheduledTask:
        """The task with this id, or :class:`~lldsched.errors.TaskNotFoundError`
        (:class:`~lldsched.errors.TaskRetiredError` if it finished and retired)."""
        with self._lock:
            return self._core.get(task_id)

    def tasks(self) -> list[ScheduledTask]:
        """Every registered task, in registration order (retired tasks are not)."""
        with self._lock:
            return list(self._core.tasks.values())

    def records(self) -> list[ExecutionRecord]:
        """Every record the scheduler still holds: its tasks' histories (each bounded by
        ``history_limit``; a store keeps them all) and those of the tasks it retired (one
        history of that bound), merged in the order the runs finished."""
        with self._lock:
            merged = [record for task in self._core.tasks.values() for record in task.history]
            merged += self._core.retired_records()
        merged.sort(key=_finished)
        return merged

    def dead_letter(self) -> list[str]:
        """Ids of FAILED tasks, oldest failure first."""
        with self._lock:
            return self._core.dead_letter()

    def pending(self) -> list[ScheduledTask]:
        """Tasks waiting in the heap, in the order they will run."""
        with self._lock:
            return self._queue.pending()

    def queue_stats(self) -> QueueStats:
        """How many entries the heap holds, and how many are tombstones."""
        with self._lock:
            return self._queue.stats()

    # -- listeners ------------------------------------------------------------------------

    def add_listener(self, listener: Listener) -> None:
        """Deliver every future event to ``listener`` as well."""
        with self._lock:
            self._dispatcher.add(listener)
            self._core.emit = self._dispatcher.publish
        self._dispatcher.start()  # idempotent; a no-op once the scheduler is shut down

    def remove_listener(self, listener: Listener) -> bool:
        """Stop delivering to ``listener``; True if it was registered."""
        with self._lock:
            found = self._dispatcher.remove(listener)
            if not self._dispatcher.listeners:
                self._core.emit = None  # back to the fast path: no event objects at all
            return found

    @property
    def dropped_events(self) -> int:
        """Events dropped because the listeners fell more than the backlog behind."""
        return self._dispatcher.dropped

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Wait until nothing is due at the clock's now, nothing is in flight, and every
        event so far was delivered.  False if ``timeout`` seconds pass first.

        Made for tests and demos on a :class:`~lldsched.clock.FakeClock`:
        ``clock.advance(30); scheduler.wait_idle()``.
        """
        return self._wait(timeout, drained=False)

    def wait_drained(self, timeout: float = 5.0) -> bool:
        """Wait until no work is left at all: nothing queued (retries included), nothing
        in flight, every event delivered.  False if ``timeout`` seconds pass first.

        With recurring tasks this only returns once they are cancelled or paused.
        """
        return self._wait(timeout, drained=True)

    def _wait(self, timeout: float, *, drained: bool) -> bool:
        deadline = time.monotonic() + timeout
        with self._lock:
            self._idle_waiters += 1
            try:
                while not self._is_idle(drained):
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    self._idle.wait(remaining)
            finally:
                self._idle_waiters -= 1
        return self._dispatcher.flush(max(0.0, deadline - time.monotonic()))

    # -- the timer thread -------------------------------------------------------------------

    def _run_timer(self) -> None:
        try:
            self._timer_loop()
        except BaseException:
            log.exception("the timer thread died; no further task will be dispatched")
            raise

    def _timer_loop(self) -> None:
        queue = self._queue
        cond = self._wake
        clock = self._clock
        pool = self._pool
        deadlines = self._deadlines
        max_wait = self._max_wait
        monotonic = getattr(clock, "monotonic", None)  # jump detection (none on a FakeClock)
        coordinator = self._coordinator
        with cond:
            last_wall, last_mono = clock.now(), monotonic() if monotonic is not None else 0.0
            while self._state is _RUNNING:
                now = clock.now()
                if monotonic is not None:
                    mono = monotonic()
                    jump = (now - last_wall) - (mono - last_mono)
                    if abs(jump) > JUMP_TOLERANCE + JUMP_DRIFT * (mono - last_mono):
                        log.warning("the wall clock jumped by %+.3f s; re-evaluating", jump)
                        if coordinator is None:  # shared: the rows decide, claims use now
                            after_clock_jump(self._core, jump, now)
                    last_wall, last_mono = now, mono
                while deadlines and deadlines[0][0] <= now:
                    heapq.heappop(deadlines)[2].cancel("timeout")
                if coordinator is not None:
                    self._followed(coordinator.tick(now))
                room = pool.room
                if room:
                    if coordinator is None:
                        batch = queue.pop_due(now, room)
                    else:
                        batch = coordinator.claim(now, room)
                    if batch:
                        self._in_flight += len(batch)
                        self._hand_out(batch)
                        continue
                    if self._idle_waiters and self._in_flight == 0:
                        self._idle.notify_all()  # only tombstones were due: idle
                    wake = queue.next_due()
                else:
                    wake = None  # the hand-off queue is full: wait for a worker to make room
                if deadlines and (wake is None or deadlines[0][0] < wake):
                    wake = deadlines[0][0]
                if max_wait is not None and (wake is None or wake - now > max_wait):
                    wake = now + max_wait  # look again soon: a jump or a suspend shows then
                if coordinator is not None:
                    wake = coordinator.wake(now, wake)  # renewal, and the poll bound
                clock.wait(cond, wake)

    def _hand_out(self, batch: list[Entry]) -> None:
        """Give due entries to the workers, and loop tasks' entries to the event loop."""
        loop_ids = self._loop_ids
        if loop_ids:  # no coroutine task registered: no per-entry test at all
            to_loop = [entry for entry in batch if entry[3] in loop_ids]
            if to_loop:
                self._coroutines.put(to_loop)
                batch = [entry for entry in batch if entry[3] not in loop_ids]
                if not batch:
                    return
        self._pool.put(batch)

    def _begin_on_loop(self, entry: Entry) -> Run | None:
        """The event loop begins a loop task's attempt (under the lock); its records
        carry the loop's lane, one past the worker threads."""
        run = self._begin(entry, self._pool.workers)
        if run is None:  # a tombstone: cancelled or paused while it waited for a slot
            self._settle(1)
        return run

    # -- the workers (called by the pool: prepare and complete under the lock) -------------

    def _begin(self, entry: Entry, worker: int) -> Run | None:
        if self._coordinator is None:
            return self._core.begin(entry, worker)
        return self._coordinator.begin(entry, worker)  # with its claim's token

    def _prepare(self, entry: Entry, worker: int) -> Run | None:
        run = self._begin(entry, worker)
        if run is None:  # a tombstone: cancelled or paused after the timer popped it
            self._settle(1)
            return None
        context = run.context
        if context is not None:
            timeout = run.task.timeout
            if timeout is not None:
                self._arm_deadline(self._clock.now() + timeout, context)
        return run

    def _execute(self, run: Run) -> _Outcome:
        if run.task._options.isolation != "thread":
            return self._execute_in_process(run)
        now = self._clock.now
        started = now()
        try:
            error, value = run.invoke()
        except BaseException as exc:  # recorded by _complete, then re-raised there
            return started, now(), error_text(exc), exc, None, None, False
        if value is None:  # the common case: no result text to build
            return started, now(), error, None, None, None, False
        if must_await(value):  # a coroutine: the event loop runs it, this worker moves on
            return started, started, None, None, None, value, False
        return started, now(), None, None, result_text(value), None, False

    def _execute_in_process(self, run: Run) -> _Outcome:
        """Run a process-isolated attempt: this worker waits for its child (killed at
        the timeout: the worker is free as soon as the kill is reaped)."""
        task = run.task
        options = task._options
        action = task.action
        assert action is not None  # registration resolved the import path
        path = f"{action.__module__}:{action.__qualname__}"  # checked at registration
        try:
            ended = self._processes.run(
                task.id, path, options.args, options.kwargs, timeout=options.timeout
            )
        except Exception as exc:  # shut down meanwhile (SchedulerStateError), or no process
            now = self._clock.now()
            return now, now, error_text(exc), None, None, None, False
        started, finished, error, result, timed_out = ended
        return started, finished, error, None, result, None, timed_out

    def _complete(self, run: Run, outcome: _Outcome) -> None:
        started, finished, error, escaped, result, awaitable, timed_out = outcome
        if awaitable is not None:
            if self._coroutines.submit(run, started, awaitable):
                return  # recorded by _finish_coroutine when it completes
            finished = self._clock.now()
            error = "SchedulerStateError: the scheduler shut down before the coroutine ran"
        self._core.finish(run, started, finished, error, result=result, timed_out=timed_out)
        if self._coordinator is not None:
            self._coordinator.done(run)
        self._settle(1)
        if escaped is not None:
            raise escaped  # KeyboardInterrupt or SystemExit: ends this worker thread

    def _finish_coroutine(
        self,
        run: Run,
        started: float,
        finished: float,
        error: str | None,
        result: str | None,
        timed_out: bool,
    ) -> None:
        """A coroutine run is over (the loop thread calls this under the lock)."""
        self._core.finish(run, started, finished, error, result=result, timed_out=timed_out)
        if self._coordinator is not None:
            self._coordinator.done(run)
        self._settle(1)

    def _follow_others(self) -> None:
        """Shared mode: apply what other processes wrote before a verb changes a task, so
        the row this process writes starts from the latest one (under the lock)."""
        if self._coordinator is not None:
            self._followed(self._coordinator.sync())

    def _followed(self, tasks: list[ScheduledTask]) -> None:
        """Tasks another process changed: keep the loop-task ids, and cancel a coroutine
        whose task was paused or cancelled elsewhere (as pause() and cancel() do)."""
        for task in tasks:
            if is_loop_action(task.action):
                self._loop_ids.add(task.id)
            else:
                self._loop_ids.discard(task.id)
            if task.running and task.status in (TaskStatus.PAUSED, TaskStatus.CANCELLED):
                self._coroutines.cancel(task.id, task.status.value)

    def _drop_due(self, now: float) -> None:
        """Shared mode: the heap's due entries are hints, dropped; the store decides."""
        self._queue.pop_due(now, len(self._queue))

    def _wake_from_store(self) -> None:
        """The store heard of another process's change (any thread, no lock held)."""
        with self._lock:
            self._wake.notify_all()

    def _cancel_overlapped(self, run: Run) -> None:
        """Overlap.CANCEL_OTHER cancelled ``run`` (the core raised its flag, under the
        lock): a coroutine run is cancelled for real; a thread's run is cooperative."""
        self._coroutines.cancel_run(run, "overlap")

    def _arm_deadline(self, deadline: float, context: RunContext) -> None:
        deadlines = self._deadlines
        heapq.heappush(deadlines, (deadline, next(self._deadline_sequence), context))
        if deadlines[0][2] is context:
            self._wake.notify_all()

    def _settle(self, count: int) -> None:
        """``count`` entries popped by the timer are done (run, or dropped)."""
        self._in_flight -= count
        self._notify_idle()
        if self._draining:
            self._wake.notify_all()  # shutdown's drain waits for runs to settle

    def _notify_idle(self) -> None:
        """Wake wait_idle() / wait_drained() callers if nothing is in flight."""
        if self._idle_waiters and self._in_flight == 0:
            self._idle.notify_all()

    def _is_idle(self, drained: bool) -> bool:
        if self._in_flight:
            return False
        if self._state is not _RUNNING:
            return True  # nothing will run without start() (or ever, after shutdown)
        if drained:
            return len(self._queue) == 0
        due = self._queue.next_due()
        return due is None or due > self._clock.now()

    def _check_open(self, verb: str, task_id: str) -> None:
        if self._state is _STOPPED:
            raise SchedulerStateError(f"cannot {verb} {task_id!r}: the scheduler is shut down")

    def _join(self, remaining: Callable[[], float | None]) -> None:
        if self._timer is not None and self._timer is not threading.current_thread():
            self._timer.join(remaining())
        self._pool.shutdown(timeout=remaining())
        self._processes.close(remaining())
        self._coroutines.shutdown(remaining())
        self._dispatcher.close(remaining())

    def _threads_alive(self) -> bool:
        timer_alive = self._timer is not None and self._timer.is_alive()
        return (
            timer_alive
            or self._pool.alive > 0
            or self._coroutines.alive
            or self._processes.alive > 0
        )

    def __repr__(self) -> str:
        return (
            f"<Scheduler {self._state} workers={self._pool.workers} "
            f"tasks={len(self._core.tasks)} clock={self._clock!r}>"
        )


def _coordinated(store: TaskStore | None) -> CoordinatedStore | None:
    """``store`` if it coordinates several schedulers (opened shared), else None."""
    if store is None or getattr(store, "shared", False) is not True:
        return None
    if not isinstance(store, CoordinatedStore):
        raise ValidationError(f"{store!r} says shared=True but lacks the CoordinatedStore methods")
    return store
