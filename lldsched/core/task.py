"""ScheduledTask: one registered task, its definition, where it is in its lifecycle,
and the attempt it has in flight (:class:`Run`).

A ``ScheduledTask`` carries what runs and when (id, name, action, schedule,
priority, options) and where the task is now: its status, next due instant,
attempt counter, generation (which tombstones stale heap entries) and the
statistics of its runs.  :attr:`ScheduledTask.definition` gives the definition
alone as an immutable :class:`~lldsched.persistence.Task`, which is what stores keep.

Memory is a feature here (a scheduler may hold 100,000 tasks), so the object is
flat and its rarely-set parts are shared: :class:`TaskOptions` is one shared
default instance unless a task sets a retry policy, timeout, arguments or takes
a run context, and :class:`RunStats` is created at the first run.

Only the core state machine (:class:`~lldsched.core.machine.SchedulerCore`)
mutates a ``ScheduledTask``, under its runtime's lock; any thread may read it.
Each attribute read is atomic and ``history`` returns a copy, but two reads are
not a consistent pair (a run may end between them), and ``Scheduler.task(id)`` gives
this same live object again, not a copy: what must agree is read from one read
(``history``, one copy; an event, whose record and status change came together).  One
read of ``definition`` is consistent without the lock: a change of several of its
parts (a replace, a ``modify``) is made inside :meth:`ScheduledTask.redefining`,
and a read while it is under way gets the definition the task had before it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

from lldsched.core.context import RunContext
from lldsched.core.names import SCHEDULED
from lldsched.logs import instant_text
from lldsched.model import ExecutionRecord, Priority, TaskStatus
from lldsched.persistence import Task
from lldsched.policies import MisfirePolicy, Overlap, RetryPolicy
from lldsched.schedules.base import Schedule
from lldsched.schedules.catchup import CatchUp
from lldsched.schedules.decorators import describe

__all__ = [
    "DEFAULT_OPTIONS",
    "Entry",
    "Flight",
    "Restored",
    "Run",
    "RunStats",
    "ScheduledTask",
    "TaskOptions",
    "fit_flight",
]

Entry = tuple[float, int, int, str]
"""A heap entry ``(due, priority, sequence, task_id)``.

Tuples compare in C and the unique ``sequence`` settles every tie; the entry is
live while the task registered under ``task_id`` has ``generation == sequence``
(see :mod:`lldsched.core.duequeue`)."""


Isolation = Literal["thread", "process"]
"""Where a task's action runs (``isolation.ISOLATIONS`` as a type): ``isolation="proc"``
fails a type checker, not only the registration."""


class TaskOptions(NamedTuple):
    """How a task runs and fails, beyond its schedule and priority."""

    retry: RetryPolicy = RetryPolicy()
    timeout: float | None = None
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] | None = None
    pass_context: bool = False  # the action declares a ``ctx`` parameter
    misfire: MisfirePolicy | None = None  # None: DEFAULT_MISFIRE
    isolation: Isolation = "thread"  # or "process": lldsched.threaded.processes.pool runs it
    depends_on: tuple[str, ...] = ()  # upstream task ids (lldsched.core.dependencies)
    overlap: Overlap | None = None  # None: runs never overlap (lldsched.policies.Overlap)
    max_instances: int | None = None  # with Overlap.ALLOW only


DEFAULT_OPTIONS = TaskOptions()


class Restored(NamedTuple):
    """A task as a store described it, with what recovery decided about its state
    (:meth:`SchedulerCore.restore <lldsched.core.machine.SchedulerCore.restore>` builds
    the :class:`ScheduledTask`)."""

    definition: Task
    status: TaskStatus
    attempt: int
    next_run_at: float | None
    slot: float  # the schedule slot its pending attempts belong to
    run_count: int
    failure_count: int
    last_error: str | None
    history: tuple[ExecutionRecord, ...]
    grid: float | None = None  # a fixed rate's grid origin, as stored (None: from ``slot``)
    blocked: tuple[float, float] | None = None  # a moved wait's slot found blocked: due, slot


class RunStats:
    """Counts and recent history of a task's runs (created at its first run).

    The history starts as a single record and becomes a bounded deque at the
    second: a one-off task, the commonest kind, never pays for a deque (about
    760 bytes, and one more object for the garbage collector to track).
    """

    __slots__ = (
        "_first",
        "_limit",
        "_recent",
        "failure_count",
        "given_up",
        "last_error",
        "run_count",
    )

    def __init__(self, history_limit: int | None) -> None:
        self.run_count = 0
        self.failure_count = 0
        self.given_up = 0  # slots given up in a row (since the last successful run)
        self.last_error: str | None = None
        self._limit = history_limit
        self._first: ExecutionRecord | None = None  # the history while it holds one record
        self._recent: deque[ExecutionRecord] | None = None  # the history from the second on

    def add(self, record: ExecutionRecord) -> None:
        """Keep ``record`` as the newest of the history (the oldest falls off at the limit)."""
        recent = self._recent
        if recent is not None:
            recent.append(record)
        elif self._first is None and self._limit != 0:
            self._first = record
        else:
            self._recent = deque((self._first,) if self._first else (), maxlen=self._limit)
            self._recent.append(record)
            self._first = None

    def records(self) -> tuple[ExecutionRecord, ...]:
        """The history, oldest first: one it had at one instant, also when read by a
        thread that does not hold the runtime's lock while the core adds a record (the
        second add sets ``_recent`` before it clears ``_first``, so the first record is
        read before the tail is looked for; a deque is copied in one C call)."""
        first = self._first
        recent = self._recent
        if recent is not None:
            return tuple(recent)
        return (first,) if first is not None else ()


class _Edit:
    """A change of a task's definition (:meth:`ScheduledTask.redefining`): ``before``,
    the definition it started from, while it is under way; ``None`` once it ended."""

    __slots__ = ("before",)

    def __init__(self, before: Task) -> None:
        self.before: Task | None = before


class ScheduledTask:
    """One task and where it is in its lifecycle (see :class:`TaskStatus`).

    ``id``, ``name``, ``action``, ``schedule`` and ``priority`` are what it is;
    ``status``, ``next_run_at`` (epoch seconds, ``None`` when nothing is due; a PAUSED
    task keeps the instant it was due, which ``resume`` runs at, or at once if passed) and
    ``attempt`` (attempts made for the current slot: 0 when SCHEDULED, >= 1 when
    RETRYING) are where it is; ``generation`` is the sequence of its live heap entry
    (0: none).  The properties below read its options and its runs.  The runtime
    changes it under its lock: read it, never assign to it.
    """

    __slots__ = (
        "_edit",
        "_flight",
        "_grid",
        "_options",
        "_queued",
        "_run",
        "_schedule",
        "_slot",
        "_stats",
        "action",
        "attempt",
        "generation",
        "id",
        "name",
        "next_run_at",
        "priority",
        "status",
    )

    def __init__(
        self,
        task_id: str,
        name: str,
        action: Callable[..., Any] | None,
        schedule: Schedule,
        priority: Priority = Priority.NORMAL,
        options: TaskOptions = DEFAULT_OPTIONS,
        first_run: float | None = None,
    ) -> None:
        self.id = task_id
        self.name = name
        self.action = action
        # What the core asks for the next due instant: the task's own schedule, or a plan
        # in front of it (schedules/catchup.CatchUp: a run_now's slot, a misfire's
        # catch-up, a reschedule after owed work), which users never see (`schedule`).
        self._schedule = schedule
        self.priority = priority
        self._options = options
        # names.SCHEDULED, not TaskStatus.SCHEDULED: on 3.11 an Enum class answers
        # attribute reads through EnumType.__getattr__ (3 % of a registration, callgrind).
        self.status = SCHEDULED
        self.next_run_at = first_run
        self.attempt = 0  # attempts made for the current slot: 0 when SCHEDULED, >= 1 when RETRYING
        self.generation = 0  # the sequence of its live heap entry; 0: none
        self._slot = first_run or 0.0  # the schedule slot the pending attempts belong to
        # A fixed rate's grid origin: its k-th slot is ``_grid + k * period``, counted so
        # by FixedRate.next_on_grid (which starts a new grid at a slot off this one).
        self._grid = self._slot
        self._run: Run | None = None  # the attempt in flight, if any
        self._queued = False  # a live entry sits in the runtime's heap
        self._stats: RunStats | None = None  # created at the first run
        # Runs in flight besides _run, for a task whose overlap policy lets runs
        # overlap (CANCEL_OTHER, ALLOW); None until the first such run begins.
        self._flight: Flight | None = None

    # -- the definition ------------------------------------------------------------

    @property
    def schedule(self) -> Schedule:
        """The schedule the task was registered (or rescheduled) with, as given: never a
        plan the core put in front of it for a few runs (a ``run_now``'s put-off slot, a
        misfire's catch-up), which is the core's (its snapshot's ``waited``)."""
        schedule = self._schedule
        return schedule.inner if schedule.__class__ is CatchUp else schedule

    def explain(self) -> str:
        """When the task runs, in words: its schedule's ``explain()`` (``"At 03:00, Monday
        through Friday (Europe/Berlin)"``), or the schedule's repr for a schedule of one's
        own without one.  Typed, where ``task.schedule.explain()`` is not: ``explain`` is
        no part of the :class:`~lldsched.schedules.base.Schedule` protocol, which a
        schedule of one's own meets with ``first_run`` and ``next_run`` alone."""
        return describe(self.schedule)

    @property
    def retry(self) -> RetryPolicy:
        """The task's retry policy (``RetryPolicy()`` unless another was given)."""
        return self._options.retry

    @property
    def timeout(self) -> float | None:
        """The task's timeout in seconds, or ``None`` for none."""
        return self._options.timeout

    @property
    def args(self) -> tuple[Any, ...]:
        """The positional arguments each run passes to the action."""
        return self._options.args

    @property
    def kwargs(self) -> Mapping[str, Any] | None:
        """The keyword arguments each run passes to the action, or ``None``: a read-only
        view, as :attr:`args` is a tuple.  A registration of the task's id with
        ``replace_existing=True`` changes them (and its store's row); ``dict(task.kwargs)``
        is a dict of one's own."""
        return _read_only(self._options.kwargs)

    @property
    def misfire(self) -> MisfirePolicy | None:
        """The misfire policy given at registration (None: the default policy)."""
        return self._options.misfire

    @property
    def depends_on(self) -> tuple[str, ...]:
        """Ids of the upstream tasks each slot waits for (see
        :mod:`lldsched.core.dependencies`); empty for most tasks."""
        return self._options.depends_on

    @property
    def overlap(self) -> Overlap | None:
        """The overlap policy given at registration (None: runs never overlap)."""
        return self._options.overlap

    @property
    def max_instances(self) -> int | None:
        """How many runs may overlap under ``Overlap.ALLOW`` (None for other policies)."""
        return self._options.max_instances

    # The last change of several parts of the definition (redefining): unset until the
    # first, so a registration pays nothing for it.
    _edit: _Edit

    @property
    def definition(self) -> Task:
        """What runs and when, as an immutable value (what a store keeps): the one the
        task has, or, read while a change of it is under way, the one it had before;
        never parts of both, also when read without the runtime's lock."""
        while True:
            edit: _Edit | None = getattr(self, "_edit", None)
            if edit is not None:
                before = edit.before
                if before is not None:  # a change under way: the definition it started from
                    return before
            definition = self._defined()
            if getattr(self, "_edit", None) is edit:  # no change began since: one whole
                return definition

    @contextmanager
    def redefining(self) -> Iterator[None]:
        """The core changes several parts of the definition in this block (under the
        runtime's lock, which keeps two from overlapping): until it ends,
        :attr:`definition` reads the definition the task had when it began."""
        edit = self._edit = _Edit(self._defined())
        try:
            yield
        finally:
            edit.before = None

    def _defined(self) -> Task:
        """The definition from the parts as they are now: the core's read, under the
        runtime's lock (a store's snapshot, on the per-run path: nothing checked)."""
        options = self._options
        schedule = self._schedule
        if schedule.__class__ is CatchUp:  # the plan is the core's: stores keep the schedule
            schedule = schedule.inner
        return Task(
            self.id, self.name, self.action, schedule, self.priority,
            options.retry, options.timeout, options.args,
            _read_only(options.kwargs), options.misfire,
            options.isolation, options.depends_on, options.overlap, options.max_instances,
        )  # fmt: skip

    # -- the runs --------------------------------------------------------------------

    @property
    def slot(self) -> float:
        """The schedule slot the task's pending (or running) attempts belong to."""
        return self._slot

    @property
    def running(self) -> bool:
        """True while an attempt is in flight (also for a task paused or cancelled mid-run)."""
        return self._run is not None

    @property
    def runs(self) -> tuple[Run, ...]:
        """The runs in flight, oldest first (more than one only under an overlap policy)."""
        run = self._run
        if run is None:
            return ()
        flight = self._flight
        return (*flight.others, run) if flight is not None else (run,)

    @property
    def run_count(self) -> int:
        """Attempts finished, every outcome counted."""
        stats = self._stats
        return stats.run_count if stats is not None else 0

    @property
    def failure_count(self) -> int:
        """Attempts that did not succeed: raised, timed out, or cancelled in flight
        (``Overlap.CANCEL_OTHER``, or a shutdown's cut, which spends no attempt);
        ``run_count - failure_count`` is the successes (the control panel's "ok", and
        what :mod:`~lldsched.core.dependencies` waits for).  The summaries of records
        (``task_summary``) count cancelled runs apart."""
        stats = self._stats
        return stats.failure_count if stats is not None else 0

    @property
    def last_error(self) -> str | None:
        """The error text of the most recent failed attempt."""
        stats = self._stats
        return stats.last_error if stats is not None else None

    @property
    def given_up(self) -> int:
        """Slots given up in a row: recurring slots whose attempts all failed since the
        last successful run (see :class:`~lldsched.policies.RetryPolicy`)."""
        stats = self._stats
        return stats.given_up if stats is not None else 0

    @property
    def history(self) -> tuple[ExecutionRecord, ...]:
        """The most recent records, oldest first (bounded by the scheduler's history
        limit): the task's runs, and the slots decided without one (skipped, missed,
        coalesced, blocked), which :attr:`run_count` does not count."""
        stats = self._stats
        return stats.records() if stats is not None else ()

    def __repr__(self) -> str:
        """One line a person reads (a notebook shows a task, or ``tasks()``, by it): the
        next run as an instant in UTC, to the millisecond, as a log line writes it
        (``next_run_at`` itself stays epoch seconds: ``task.next_run_at``)."""
        return (
            f"<ScheduledTask {self.id} {self.name!r} {self.status.value} "
            f"next_run_at={instant_text(self.next_run_at)} attempt={self.attempt}>"
        )


class Flight:
    """The overlapping runs of one task (``Overlap.CANCEL_OTHER`` or ``ALLOW``): the
    runs in flight besides the newest (:attr:`ScheduledTask._run`), oldest first,
    those of them ``CANCEL_OTHER`` cancelled, with the slot that did, and the slot queued behind
    them."""

    __slots__ = ("cancelled", "others", "pending", "queued")

    def __init__(self) -> None:
        self.others: list[Run] = []
        self.cancelled: dict[int, float] = {}  # id(run) -> the slot that cut it; in flight
        self.pending: float | None = None  # the next slot, queued while runs are in flight
        # The generation of the pending slot's entry: while the task's generation is
        # still this, that entry is live (queued, or handed out), due at ``pending``.
        self.queued = 0

    @property
    def count(self) -> int:
        """Runs in flight, the newest included (the task has one in ``_run``)."""
        return len(self.others) + 1


def fit_flight(task: ScheduledTask) -> None:
    """Give a task whose runs may overlap (CANCEL_OTHER, ALLOW) its :class:`Flight`:
    the core's begin() tests that slot, not the options, on every run.  A task that
    loses its policy (a replaced definition) keeps a flight until it has drained."""
    if task._flight is None and task._options.overlap in (Overlap.CANCEL_OTHER, Overlap.ALLOW):
        task._flight = Flight()


class Run(NamedTuple):
    """One attempt in flight: what the runtime needs to run it and report it.

    ``action`` and ``options`` are the task's as its attempt began (read under the
    runtime's lock, with the run's context made from them): the run calls that action
    with those arguments, where that definition runs, whatever a replace or a modify
    made of the task since (docs/decisions/changing-a-task.md, "Changing a task"); only the deadline
    it is held to follows a new timeout (:func:`~lldsched.core.runs.rearmed`).  ``name`` is the
    task's name as its attempt began, which its record carries: a rename meanwhile (a replace
    with another name) names the runs after it, never the run it found in flight."""

    task: ScheduledTask
    attempt: int
    due: float
    slot: float
    worker: int
    context: RunContext | None
    action: Callable[..., Any] | None
    options: TaskOptions
    name: str  # the task's name as the attempt began: its record's
    token: int | None = None  # the fencing token of its claim in a shared store

    def __repr__(self) -> str:
        """The task and the attempt, never the arguments (a password, a token): a run
        is named in log lines and in the tracebacks of the scheduler's own errors."""
        return f"<Run of {self.task!r} attempt={self.attempt} due={instant_text(self.due)}>"

    def invoke(self) -> tuple[Exception | None, object]:
        """Call the action the run began with: ``(None, what it returned)``, or ``(the exception,
        None)`` when it raised (its record's text is :func:`~lldsched.errors.error_text`'s;
        the exception itself, with its traceback, is what the runtime logs).

        What it returned may be awaitable (an ``async def`` action, or a function that
        returns a coroutine): the runtime must await it before anything is recorded
        (:func:`~lldsched.core.results.must_await`).  ``Exception``s become data;
        other ``BaseException``s (KeyboardInterrupt, SystemExit) propagate, as they
        should.
        """
        action = self.action
        if action is None:
            return _RETURNED_NONE
        options = self.options
        try:
            if options.pass_context:  # (a CANCEL_OTHER run has a context for its flag only)
                value = action(*options.args, ctx=self.context, **(options.kwargs or {}))
            elif options.kwargs:
                value = action(*options.args, **options.kwargs)
            else:
                value = action(*options.args)
        except Exception as exc:
            return exc, None
        return _RETURNED_NONE if value is None else (None, value)


_RETURNED_NONE: tuple[Exception | None, object] = (None, None)  # the common outcome, built once


def _read_only(kwargs: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A read-only view of a task's keyword arguments (None stays None): what a caller is
    given is never the dict each run passes, which a change would change without the
    store knowing (docs/decisions/changing-a-task.md, "A task's kwargs are read-only").
    Made at each read, never kept: a run passes the dict itself (``**`` of a view builds a
    dict at each call)."""
    return None if kwargs is None else MappingProxyType(kwargs)
