"""The scheduler's vocabulary: statuses, priorities, records, events.

These are plain values shared by the core state machine, both runtimes, the
stores and the views.  Records and events are ``NamedTuple``s: immutable, cheap to
build on the hot path (one per run), and easy to turn into columns.

Times are float seconds since the epoch (UTC) everywhere inside the library; the
frames and plots turn them into timezone-aware datetimes, and a record's or an event's
``repr`` writes them as ISO 8601 instants in UTC (:func:`~lldsched.logs.instants_repr`).
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from lldsched.logs import instants_repr

__all__ = [
    "ExecutionRecord",
    "Outcome",
    "Priority",
    "TaskEvent",
    "TaskStatus",
]


class TaskStatus(enum.Enum):
    """Where a task is in its lifecycle (see docs/ARCHITECTURE.md).

    ``SCHEDULED -> RUNNING -> SCHEDULED | SUCCEEDED | RETRYING | FAILED``;
    ``RETRYING -> RUNNING``; any live status ``-> PAUSED | CANCELLED``.  A recurring
    task whose slot runs out of attempts gives the slot up and is SCHEDULED at its
    next slot; a one-off task is FAILED.
    ``SCHEDULED -> BLOCKED -> SCHEDULED``: a task registered with ``depends_on`` whose
    slot falls due before each upstream has succeeded since its previous slot started
    waits BLOCKED, off the heap, until they have (:mod:`lldsched.core.dependencies`).
    RETRYING is separate from SCHEDULED on purpose: a retry keeps the attempt
    counter, a normal reschedule resets it.
    """

    SCHEDULED = "scheduled"
    RUNNING = "running"
    RETRYING = "retrying"
    PAUSED = "paused"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    BLOCKED = "blocked"  # due, waiting for its upstreams (depends_on); not in the heap

    @property
    def is_terminal(self) -> bool:
        """SUCCEEDED, FAILED and CANCELLED: nothing runs after these (FAILED until redrive)."""
        return self in _TERMINAL

    def __repr__(self) -> str:
        return f"TaskStatus.{self.name}"


_TERMINAL = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.CANCELLED})


class Priority(enum.IntEnum):
    """Breaks ties between tasks due at the same instant: lower sorts first."""

    HIGH = 0
    NORMAL = 1
    LOW = 2


class Outcome(enum.StrEnum):
    """How one record ended: a run's outcome, or a slot decided without a run.

    A ``StrEnum``: each member *is* its string (``Outcome.OK == "ok"``), which is
    what frames, stores and plots keep.
    """

    OK = "ok"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    GIVEN_UP = "given_up"  # a run: a recurring slot's last attempt failed; the slot is given up
    MISSED = "missed"  # a misfire policy dropped the slot
    COALESCED = "coalesced"  # a misfire policy folded the slot into a later run
    SKIPPED = "skipped"  # an overrun policy dropped the slot at run time
    BLOCKED = "blocked"  # the slot waited for its upstreams (started..finished: the wait)
    CANCELLED = "cancelled"  # a run: CANCEL_OTHER cut it for a newer slot, or a shutdown did

    @property
    def ran(self) -> bool:
        """True for the outcomes of a run (an attempt that started), False for a
        slot a policy decided without running it."""
        return self not in _NOT_RUNS

    def __repr__(self) -> str:
        """``Outcome.OK``, the name that gives it, as :class:`TaskStatus` prints
        (a record's ``misfire``, the keys of ``metrics().outcomes``); ``str()`` and
        formatting stay its string, ``ok``."""
        return f"Outcome.{self.name}"


_NOT_RUNS = frozenset({Outcome.MISSED, Outcome.COALESCED, Outcome.SKIPPED, Outcome.BLOCKED})


class ExecutionRecord(NamedTuple):
    """One attempt of one task: the unit of history, frames and plots.

    ``due`` is the instant the attempt was due (a retry's due is its failed
    predecessor's finish plus backoff); ``slot`` is the schedule slot the attempt
    belongs to (equal to ``due`` for first attempts).  ``worker`` is the index of
    the worker that ran it.  ``started`` is the instant the run began: a thread run's
    as its worker began it, just before calling the action (the reading its
    ``timeout`` counts from, so a run its deadline stopped measures at least its
    timeout), a coroutine's as the event loop started it, a process run's as its child
    took the call; ``finished`` the instant it ended.  ``error`` is ``"Type: message"``
    (its cause named, cut to :data:`lldsched.errors.ERROR_LIMIT` characters:
    :func:`lldsched.errors.error_text`) or ``None``; the traceback is on the run's log
    line, never in the record (that line carries this record as its ``run_record``:
    docs/EXTENDING.md keeps tracebacks by it).

    ``misfire`` is the outcome a policy decided for the record, ``None`` for an
    ordinary run (the field is named after the first such policy; stores keep it
    in one text column):

    * a slot that never ran is a record too: :attr:`Outcome.MISSED` or
      :attr:`Outcome.COALESCED` (a misfire policy, see :mod:`lldsched.policies`),
      :attr:`Outcome.SKIPPED` (a fixed rate's ``SKIP`` overrun policy, or a cron
      fire that passed while a run overran, or a slot ``Overlap.ALLOW`` found
      ``max_instances`` runs in flight for: its ``error`` names the policy);
      ``Overlap.BUFFER_ONE`` records the slots it folded into one run
      :attr:`Outcome.COALESCED`, ``error`` naming the policy; ``attempt`` is 0, ``worker`` is -1,
      ``ok`` is False, and ``started == finished`` is the instant the decision was
      taken;
    * :attr:`Outcome.BLOCKED` is the wait of a dependent task's slot for its upstreams
      (``depends_on``): ``started`` is when the slot was found blocked, ``finished``
      when the wait ended (released, paused, cancelled, or failed because an upstream
      died: then ``error`` names it); the slot's run, if any, has its own record;
    * :attr:`Outcome.GIVEN_UP` marks a *run*: the last failed attempt of a
      recurring task's slot, after which the retry policy gave the slot up: the
      task is due at its next slot (or FAILED, when
      :attr:`~lldsched.policies.RetryPolicy.fail_after_given_up` slots in a row
      were given up); ``error`` and ``timed_out`` say how the attempt failed;
    * :attr:`Outcome.CANCELLED` marks a *run* that ``Overlap.CANCEL_OTHER``
      cancelled because a newer slot came due while it ran: ``error`` says so
      (``"OverlapCancelled: ... came due while it ran"``, or ``... came due before it
      started`` for a coroutine cut before its body began); it is never retried;
      or a run a shutdown cut (a coroutine cancelled, a worker process killed:
      ``"CancelledError: scheduler shut down"``, ``"CancelledError: the scheduler
      shut down without draining ..."``, ``"CancelledError: the scheduler shut down,
      its drain out of time after 4 s ..."``): its task stays due at the same slot with
      the same attempt, which a restart from a durable store runs again.

    :attr:`Outcome.ran` tells the two kinds apart.

    ``token`` is the fencing token of the claim the run held in a shared store
    (docs/CLUSTER.md), ``None`` for a scheduler that shares nothing.  ``node`` is the
    process that ran it there: its store's holder id (``"host:pid:random"``, the
    ``node`` a shared store writes in its leases), ``None`` for a scheduler that shares
    nothing, for a slot decided without a run, and for a record a store kept before it
    had the column.  A ``worker`` index is a worker of that process: every process
    numbers its workers from 0.

    ``result`` is what the action returned, as text: its ``repr`` cut to
    :data:`lldsched.core.results.RESULT_LIMIT` characters (never the object itself,
    never pickled), ``None`` when it returned ``None`` or did not succeed.  A
    coroutine action's result is what the coroutine returned once awaited.
    """

    task_id: str
    name: str
    attempt: int
    due: float
    slot: float
    worker: int
    started: float
    finished: float
    ok: bool
    error: str | None = None
    timed_out: bool = False
    misfire: Outcome | None = None
    result: str | None = None
    token: int | None = None
    node: str | None = None

    @classmethod
    def of(
        cls,
        *,
        task_id: str,
        name: str,
        attempt: int,
        due: float,
        slot: float,
        worker: int,
        started: float,
        finished: float,
        ok: bool,
        error: str | None = None,
        timed_out: bool = False,
        misfire: Outcome | None = None,
        result: str | None = None,
        token: int | None = None,
        node: str | None = None,
    ) -> ExecutionRecord:
        """A record built by field name, at the cost of a positional build.

        Calling the class itself with keywords makes CPython gather them into a
        dict first (about 3,000 machine instructions, a sixth of a simulated run
        and more of a dispatch: ``benchmarks/bench_sim.py``, ``bench_dispatch.py``);
        a classmethod takes keywords at the cost of a plain call.  The core builds
        the records of slots decided without a run through here (a run's own record
        is built by ``tuple.__new__`` in ``RunTransitions._record_of``, a measured speed
        trick).
        """
        fields = (task_id, name, attempt, due, slot, worker, started, finished, ok, error)
        return cls(*fields, timed_out, misfire, result, token, node)

    def __repr__(self) -> str:
        """Its fields, the instants (``due``, ``slot``, ``started``, ``finished``) as ISO
        8601 in UTC to the millisecond, as a log line writes them: what a notebook shows
        for ``task.history[0]``.  The fields themselves stay epoch seconds."""
        return instants_repr(self, instants=_RECORD_INSTANTS)

    @property
    def duration(self) -> float:
        """Seconds from start to finish."""
        return self.finished - self.started

    @property
    def lateness(self) -> float:
        """Seconds from due to start: dispatch latency, or a wait for a free worker.  Of a
        slot decided without a run (``outcome.ran`` False), how long after it was due it
        was decided: no wait."""
        return self.started - self.due

    @property
    def outcome(self) -> Outcome:
        """How it ended: ok, failed, timed_out, or what ``misfire`` holds, when set: a
        run's given_up or cancelled (an overlap policy, a shutdown), or a slot decided
        without a run (missed, coalesced, skipped, blocked)."""
        if self.misfire is not None:
            return self.misfire
        if self.timed_out:
            return Outcome.TIMED_OUT
        return Outcome.OK if self.ok else Outcome.FAILED


_RECORD_INSTANTS = frozenset({"due", "slot", "started", "finished"})


class TaskEvent(NamedTuple):
    """A status change of one task, or a change of its definition, published to
    listeners after the fact.

    ``previous`` is ``None`` for a new task's registration.  A finished run carries its
    ``record``; a run that finishes after its task was paused or cancelled is
    published with ``previous == status`` and the record attached.  A change of the
    definition (a replace by ``replace_existing=True``, ``reschedule``, ``modify``,
    ``run_now``) changes no status: its event has ``previous == status`` and no record.
    """

    task_id: str
    name: str
    previous: TaskStatus | None
    status: TaskStatus
    at: float
    record: ExecutionRecord | None = None

    def __repr__(self) -> str:
        """Its fields, ``at`` as an ISO 8601 instant in UTC (and its record's instants:
        :meth:`ExecutionRecord.__repr__`); ``at`` itself stays epoch seconds."""
        return instants_repr(self, instants=_EVENT_INSTANTS)


_EVENT_INSTANTS = frozenset({"at"})
