"""What the threaded scheduler is made of, declared once for its modules.

:class:`~lldsched.threaded.scheduler.Scheduler` is one class written in several modules,
as the core is: construction (:mod:`~lldsched.threaded.scheduler`) and, mixed into it,
registration (:mod:`~lldsched.threaded.registering`), the timer thread
(:mod:`~lldsched.threaded.timer`), the runs its workers and its event loop carry out
(:mod:`~lldsched.threaded.running`; their failures' log lines:
:mod:`~lldsched.threaded.failurelog`), the control verbs
(:mod:`~lldsched.threaded.control`; on a shared store:
:mod:`~lldsched.threaded.sharedverbs`), the reads (:mod:`~lldsched.threaded.reads`),
shutdown (:mod:`~lldsched.threaded.stopping`; its last writes:
:mod:`~lldsched.threaded.lastwrites`; what it says it left:
:mod:`~lldsched.threaded.shutdownwarnings`) and the waits for quiet
(:mod:`~lldsched.threaded.idlewaits`).  :class:`SchedulerParts` is their common base: it
declares the collaborators, the state the one lock guards and the helpers more than one
module calls, so each module type-checks on its own and mypy checks that ``Scheduler``'s
definitions match.  At run time it adds nothing.

**At most 29 instance attributes.**  CPython 3.11 keeps up to 29 of an instance's
attributes inline; a 30th moves them all into a dict, and every ``self._x`` read on
the dispatch path gets slower: two attributes more (28 to 30) cost about 650
instructions a dispatched job, +1.8 % (``benchmarks/threaded_instructions.py
dispatch``).  New state goes into an object it belongs with, as the look for a
wall-clock jump keeps its readings in one :class:`~lldsched.threaded.jumps.LastLook`;
``tests/test_scheduler_timer.py`` counts them.
"""

from __future__ import annotations

import collections
import itertools
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from lldsched.clock import Clock
from lldsched.core.context import RunContext
from lldsched.core.duequeue import TaskQueue
from lldsched.core.machine import SchedulerCore
from lldsched.core.names import RefusedVerb
from lldsched.core.task import Entry, Run, ScheduledTask
from lldsched.errors import SchedulerShutDownError, SchedulerStateError
from lldsched.logs import Repeats
from lldsched.threaded.coroutines import CoroutineRunner
from lldsched.threaded.deadline import Flag, Waiters
from lldsched.threaded.dispatcher import EventDispatcher
from lldsched.threaded.jumps import LastLook
from lldsched.threaded.pool import WorkerPool
from lldsched.threaded.processes import ProcessPool
from lldsched.threaded.shared import Coordinator

__all__ = [
    "DEAD",
    "FORKED",
    "NEW",
    "RUNNING",
    "STOPPED",
    "Explained",
    "LogLine",
    "Outcome",
    "SchedulerParts",
    "shut_down",
    "torn",
]

NEW, RUNNING, DEAD, STOPPED, FORKED = "new", "running", "dead", "stopped", "forked"
"""The scheduler's states: built, between start() and shutdown(), started but its timer
thread died (set by that thread as it dies: nothing is dispatched any more, and only
shutdown() leaves it), shut down (final), and the copy in a child forked from the process
that made it (final; set by :mod:`~lldsched.threaded.forked`, the only state not set
under the lock)."""


def shut_down(verb: RefusedVerb, subject: str) -> SchedulerShutDownError:
    """The error a shut-down scheduler raises for ``verb`` (one of
    :data:`~lldsched.core.names.REFUSED_AFTER_SHUTDOWN`) on ``subject``, a task's id or
    the name registered.  Made only when raised: the checks stay one comparison."""
    return SchedulerShutDownError(f"cannot {verb} {subject!r}: the scheduler is shut down")


def torn(cut: tuple[str, str], verb: str, subject: str) -> SchedulerStateError:
    """The error a scheduler whose verb ``cut`` (verb, subject) an interrupt landed in the
    middle of raises for a later ``verb`` on ``subject`` (``SchedulerCore.under_way``
    left set: docs/decisions/simulation.md, "A Ctrl-C in a threaded scheduler's verb")."""
    return SchedulerStateError(
        f"cannot {verb} {subject!r}: a KeyboardInterrupt or SystemExit landed in the middle "
        f"of its verb {cut[0]} {cut[1]!r}, not in a store call, and may have left that task "
        "half made (its place in the due queue, its row in the store, its event); the "
        "scheduler refuses its verbs from then on: read what it holds, then shutdown() it "
        "and build it again (a durable store gives its tasks back)"
    )


Begun = tuple[Run, float]
"""A run its worker began (``RunExecution._prepare``, under the lock) and the instant it
began it: the pool's job, which ``_execute`` times from that instant (the run's
``started``, its deadline's too) and ``_complete`` records.  Carried with the run, not
kept on the scheduler, whose attributes stay inline (at most 29)."""

Outcome = tuple[float, float, "str | None", "str | None", object, bool, "Explained"]
"""What running an attempt produced: started, finished, error text, result text, an
awaitable still to run (None for a run that is over), whether the run was stopped
at its timeout (a child process killed), and what explains a failure (below)."""

Explained = BaseException | str | None
"""What explains a failed run beyond its error text, for its log line: the exception
an action raised on a thread or the event loop (with its traceback), or the traceback
text a worker process sent; None when there is none (a success, a timeout, a kill)."""

LogLine = tuple[int, str, tuple[object, ...], Explained, dict[str, object], float]
"""A line to log: its level, its message, the message's arguments, what explains the
failure, whose traceback it carries (None: a line alone), its structured fields (the
log record's ``extra``: ``task_id``, ``outcome``, ..., and the attempt's record as
``run_record``: ``failurelog.RUN_RECORD``) and the instant it is about (the record's end,
on the scheduler's clock: what repeats are counted by)."""


class SchedulerParts:
    """The members the scheduler's modules share (see the module docstring).

    Everything below but the collaborators' own locks is guarded by ``_lock``, the
    scheduler's one lock (its comment in ``Scheduler.__init__`` says who waits on
    which of its conditions, and the lock order)."""

    name: str  # the scheduler's name (its threads', its log lines' ``scheduler``)
    _lock: threading.Lock
    _wake: threading.Condition  # the timer's condition on _lock (the drain's: _drain_settled)
    _clock: Clock
    _max_wait: float | None
    _core: SchedulerCore
    _queue: TaskQueue
    _pool: WorkerPool[Entry, Begun, Outcome]
    _dispatcher: EventDispatcher
    _coroutines: CoroutineRunner
    _processes: ProcessPool
    _coordinator: Coordinator | None  # the shared store's side, or None
    _last_look: LastLook  # for a wall-clock jump (timer._look_at_clock)
    _thread_prefix: str  # "lldsched-<name>-": the start of every thread's name
    # Begins an attempt (None: a tombstone): the core's begin, or the coordinator's,
    # which begins with its claim's token.
    _begin: Callable[[Entry, int], Run | None]
    _loop_ids: set[str]  # tasks whose action is an async def: the loop runs them
    _deadlines: list[tuple[float, int, RunContext]]  # timeouts to flag, earliest first
    _armed: dict[RunContext, float]  # a context in _deadlines whose run has not ended: its deadline
    _deadline_sequence: itertools.count[int]
    _in_flight: int  # entries popped by the timer and not yet settled
    _draining: bool  # shutdown(drain=True) is handing out the last due entries
    # Set by each settled run while _draining: the drain waits on it (a deadline.Flag,
    # whose guard is taken inside _lock).  A bool and a flag, not a flag or None: the
    # hot path's test of _draining stays a test of False (None's truth is a call in 3.11).
    _drain_settled: Flag
    # wait_idle() / wait_drained() callers' own locks, let go by _wake_idle (not a
    # Condition on _lock: a Ctrl-C cut its re-acquisition; deadline.Waiters).
    _idle_waiters: Waiters
    # Failed attempts' log lines, appended under _lock in the order recorded and
    # logged after it is let go (failurelog._say_failures); a deque: the thread that
    # logs pops without _lock.
    _failures: collections.deque[LogLine]
    # Which failed attempts' lines are repeats (lldsched/logs.py); its lock is taken
    # (never inside _lock) by the one thread that logs _failures at a time, so that
    # they are written in order; held while a logging handler runs.
    _saying: Repeats
    _state: str  # NEW, RUNNING, DEAD or STOPPED (FORKED: a forked child's copy, threaded/forked.py)
    # Set when the first shutdown() returns: a second call made meanwhile waits for it
    # (within its own timeout) before it joins, never closes what the first still uses.
    # _first_over says it (an attribute stored just before: a signal that lands at the
    # start of set() leaves the flag unset; a later call then waits for nothing, and one
    # already waiting reads it every ASK_EVERY: stopping._first_ended).
    _first_over: bool = False
    _shut_down: Flag
    # The first shutdown() made its last writes (stale rows, a shared store's settles held
    # back): until then (a signal cut it short) the store is not let go, and a second
    # shutdown() makes them (lastwrites._writes_left).  Both False on the class, set on the
    # instance by a shutdown: two more attributes set in __init__ grew every scheduler's
    # __dict__, and its look-ups cost a registration 320 instructions, a dispatched job
    # 950 (benchmarks/threaded_instructions.py).
    _last_written: bool = False
    # A shutdown() (or aclose()) returned to a caller outside the scheduler's own threads:
    # the end of a with or async with block makes no second one (stopping._block_stops).
    # False on the class, set on the instance, as _last_written is.
    _stop_returned: bool = False
    # The tasks whose runs a shutdown cut, kept due (stopping._cut_by_shutdown): not
    # counted among the runs due by it that it did not start.  Empty on the class, set
    # on the instance at the first cut (under _lock), as _last_written is.
    _cut_ids: frozenset[str] = frozenset()
    _timer: threading.Thread | None

    if TYPE_CHECKING:  # called across the modules; each is defined in one of them

        def _hand_out(self, batch: list[Entry]) -> None: ...  # timer

        def _arm_deadline(self, deadline: float, context: RunContext) -> None: ...  # timer

        def _disarm_deadline(self, context: RunContext) -> None: ...  # timer

        def _look_at_clock(self, now: float) -> None: ...  # timer

        def _refuse_if_dead(self, verb: str) -> None: ...  # timer

        def _settle(self, count: int) -> None: ...  # running

        def _cut_by_shutdown(self, run: Run) -> None: ...  # stopping

        def _own_thread(self) -> bool: ...  # stopping

        def _notify_idle(self) -> None: ...  # running

        def _wake_idle(self) -> None: ...  # running

        def _followed(self, tasks: list[ScheduledTask]) -> None: ...  # sharedverbs

        def _stop_lost(self, task_id: str) -> None: ...  # control

        def _follow_others(self) -> None: ...  # sharedverbs

        def _acting_on(  # sharedverbs
            self, task_id: str, also: Sequence[str] = (), *, refused: RefusedVerb | None = None
        ) -> AbstractContextManager[None]: ...
