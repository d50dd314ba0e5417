"""A run in a worker process: its call sent, its answer waited for, and how it ended.

:class:`ProcessRuns` is the part of :class:`~lldsched.threaded.processes.ProcessPool`
that carries out one run (:meth:`~ProcessRuns.run`, on the worker thread that took it);
a mixin, so the pool's children and its protocol (:mod:`~lldsched.threaded.processes.pool`)
and a run in one of them (here) read as two modules of one class, which declares below
the members of the pool it uses.  The ways a run ends without an answer:

* **the timeout** is counted from the child's ``started`` (a fresh child's
  interpreter start is not the action's time).  At the deadline the child gets
  SIGKILL at once (no SIGTERM grace: a grace period is time the slot stays taken,
  and a plain Python child dies on SIGTERM without running anything anyway), and so
  does every process its job started that is still in its process group (each child
  leads one: :func:`~lldsched.threaded.processes.life.kill_group`); the run is reported
  timed out, its error the budget's wording every runtime's record uses
  (:func:`~lldsched.core.runs.timeout_error`), then that its worker process was
  killed (:func:`~lldsched.core.isolation.killed_at_deadline`; the simulation cuts
  such a run at its deadline alike).  A modify or a replace that changes the task's
  timeout during the run re-arms that deadline from the child's start
  (:meth:`ProcessRuns.retime`; docs/decisions/changing-a-task.md, "A run in flight is held to its
  task's timeout now"), an answer the child began to write included.  The deadline
  counts real seconds (``time.monotonic``), not the caller's clock: it bounds what a
  real process spends (docs/decisions/threaded.md, "A deadline that stops a run counts real
  seconds");
* **a crash** (the child exits, ``os._exit(3)``, or dies of a signal) is a failed
  run whose error names the exit code or the signal (or that the child closed its pipe
  and did not exit within a second, then was killed), and whether it came before the
  child took the call (``... exited with code 1 before it took the call (the action
  never began)``: a fresh child that could not start) or during the run.  Not so a
  child that served a call before and is found dead before it says it took the next
  (it died idle: the OOM killer's pick, an operator's ``kill``): the call never began,
  the loss is said at WARNING, and another child takes it
  (:meth:`ProcessRuns._never_taken`);
* **a child that does not take the call** within :data:`START_TIMEOUT` (60 s) of being
  held for it, the send of the call included (one longer than the pipe's buffer waits
  for the child to read it), is killed as at a deadline.  A fresh one hung in its
  start-up (a ``sitecustomize``, an import path on a dead network mount) fails the run,
  ``ChildProcessError: the worker process 4242 did not take the call within 60 s (it
  hung before the action began); it was killed``; one that served before and hung
  idle (stopped, or held by a thread its last job left) is passed over as one found
  dead.  The wait had no bound: the worker waited for ever, its task RUNNING, and a
  shutdown with no timeout with it.  A run whose child never took its call has no
  duration (its ``started`` is its ``finished``), so a cancel during a hung start-up is
  not judged over the task's timeout;
* **a kill asked for** (:meth:`ProcessPool.kill
  <lldsched.threaded.processes.ProcessPool.kill>`: the task was cancelled or paused,
  or the scheduler shuts down without draining, or its drain runs out of time) is a
  failed run whose error says why.
  One asked for after the run began and before a child was busy with it (the worker
  takes one, or starts one, without the scheduler's lock) found no child to kill: the
  caller's ``stopped`` says so once the child is held, and the run is never sent (its
  error ``CancelledError: task cancelled (before its worker process started it)``).
  A shutdown's finds the pool closed instead: :meth:`ProcessRuns.run` answers None,
  the run never started, and the caller puts it back as unbegun (its attempt unspent).

The pool's fields are guarded by its lock (its comment in ``ProcessPool.__init__`` says
what it guards and the lock order); a run's :class:`Budget` is read and changed under
it.  No lock is held while a worker waits for its child's answer.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from lldsched.core.isolation import killed_at_deadline
from lldsched.core.runs import rearmed
from lldsched.errors import SchedulerStateError
from lldsched.logs import WORKERS
from lldsched.threaded.processes.life import Child, died_how, kill_group
from lldsched.threaded.processes.wire import Garbled, receive, send

__all__ = ["NOT_SENT", "START_TIMEOUT", "ProcessOutcome", "ProcessRuns"]

log = logging.getLogger(WORKERS)

START_TIMEOUT = 60.0
"""Seconds a worker process has to take a call (say ``started``) once it is held for the
run, a fresh one's interpreter start included (about a second on a loaded 2-core host;
ten on one booting a worker process for each of twenty workers at once): past it the
child is killed, and the run ends as :meth:`ProcessRuns._send` says.  Not the task's
``timeout``, which counts from ``started``: the start is not the action's time."""

NOT_SENT = "(before its worker process started it)"
"""What the error of a run stopped before a child held it ends with (never sent)."""


class ProcessOutcome(NamedTuple):
    """How an isolated run ended: instants on the caller's clock, and the error or result;
    ``traceback`` is the child's text of the exception the action raised (None for a
    success, a timeout, a crash or a kill)."""

    started: float
    finished: float
    error: str | None
    result: str | None
    timed_out: bool
    traceback: str | None = None


class Budget:
    """The timeout a busy child's run is held to, and the pipe that wakes its worker's
    wait when :meth:`ProcessRuns.retime` changes it (``timeout`` under the pool's lock):
    the :class:`~lldsched.threaded.processes.wire.Bound` the worker reads the child's answer
    within.  Its deadline is :func:`~lldsched.core.runs.rearmed`'s, counted on the pool's
    ``monotonic`` clock from ``begun`` (the child's start); ``armed`` is the timeout the
    last look at it found."""

    __slots__ = ("armed", "begun", "clock", "held", "lock", "timeout", "waking", "woken")

    def __init__(
        self, timeout: float | None, lock: threading.Lock, clock: Callable[[], float]
    ) -> None:
        self.timeout = self.armed = timeout
        self.lock = lock
        self.clock = clock
        self.held = clock()  # the child is held for the run: START_TIMEOUT counts from here
        self.begun: float | None = None  # set once the child started the call
        self.woken, self.waking = os.pipe()
        os.set_blocking(self.waking, False)  # a full pipe is awake enough

    def left(self) -> float:
        """Seconds left to the run's deadline now (``inf``: none; 0: passed); before the
        child started the call, to its :data:`START_TIMEOUT`."""
        with self.lock:  # the timeout is retime's to change
            timeout = self.armed = self.timeout
        now = self.clock()
        if self.begun is None:
            return self.held + START_TIMEOUT - now
        deadline = rearmed(self.begun, timeout=timeout, now=now)
        return math.inf if deadline is None else deadline - now

    def wake(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.write(self.waking, b"!")

    def close(self) -> None:
        os.close(self.woken)
        os.close(self.waking)


class ProcessRuns:
    """A run in a child, and how it ended: mixed into the process pool."""

    # The pool's members this part uses (ProcessPool.__init__ sets them).
    _now: Callable[[], float]
    _monotonic: Callable[[], float]
    _lock: threading.Lock  # the pool's: guards _busy, _budgets (see ProcessPool.__init__)
    _busy: list[Child]
    _budgets: dict[Child, Budget]

    if TYPE_CHECKING:

        def _take(self, task_id: str) -> Child: ...

        def _give_back(self, child: Child) -> None: ...

        def _lose(self, child: Child, *, began: bool = True) -> str: ...

    def run(
        self,
        task_id: str,
        path: str,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any] | None,
        *,
        timeout: float | None,
        stopped: Callable[[], str | None] | None = None,
    ) -> ProcessOutcome | None:
        """Run ``path(*args, **kwargs)`` in a child and wait for its end (or kill it
        ``timeout`` seconds after it started, or the timeout :meth:`retime` gave
        since).  None when the pool was closed (a shutdown: :meth:`kill_all` or
        :meth:`close`) before a child took the run: it never started, and nothing was
        sent.

        ``stopped`` is asked once a child is held for the run (called without this
        pool's lock; again for the next child if that one was found dead idle): the
        error of the run if it was stopped since its caller began it
        (``"CancelledError: task cancelled "`` and :data:`NOT_SENT`), or None.  A
        :meth:`kill` finds the child from then on; one that came before found none, and
        ``stopped`` says it: the run is then not sent, and ends failed with that
        error."""
        message = {"call": path, "args": list(args), "kwargs": dict(kwargs or {})}
        sent = json.dumps(message).encode()
        while True:  # again only after an idle child was found dead: another one takes it
            try:
                child = self._take(task_id)
            except SchedulerStateError:  # closed: a shutdown came between its begin and a child
                return None
            with self._lock:  # retime finds it from now on; stopped's caller saw any before
                self._budgets[child] = Budget(timeout, self._lock, self._monotonic)
            try:
                if stopped is not None:
                    error = stopped()
                    if error is not None:  # stopped before this child was busy with it
                        self._give_back(child)
                        return self._unstarted(error)
                outcome = self._send(child, sent)
            finally:
                with self._lock:
                    budget = self._budgets.pop(child)
                budget.close()
            if outcome is not None:
                return outcome

    def _send(self, child: Child, message: bytes) -> ProcessOutcome | None:
        """Send the call to ``child`` (held for it) and wait for its end, or kill it;
        None when ``child`` had answered a call before and was lost before it took this
        one (:meth:`_never_taken`): the run never started, and goes to another child.

        **A run ends when the pool sees it end**, whichever way: its answer, its
        deadline passing, its child's end-of-file (a crash, or a kill asked for) or what
        the child wrote on its pipe instead of an answer.  Its ``finished`` is taken
        then, here and nowhere else; what the pool does next (kill the child, reap it,
        start its replacement: a tenth of a second on a loaded machine) is the pool's
        work, not the run's (docs/decisions/threaded.md, "A run ends when the pool sees it
        end").

        **The call is taken within** :data:`START_TIMEOUT` of the child being held for
        it, or the child is killed: the send (a call longer than the pipe's buffer waits
        for the child to read it) and the wait for its ``started`` are bounded by it, as
        the rest of the run is by the task's timeout (docs/decisions/threaded.md, "A
        worker process that does not take its call is killed")."""
        connection = child.connection
        started = self._now()
        budget = self._budgets[child]  # set and dropped by this run's own thread only
        expired: float | None = None  # the timeout its deadline passed at, if it did
        late = False  # START_TIMEOUT passed before it took the call
        garbled: Garbled | None = None
        answer: dict[str, Any] | None = None
        try:
            if send(connection, message, budget):  # False: START_TIMEOUT passed first
                answer = receive(connection, budget)  # {"started": true}, or an answer
            if answer is not None and "started" in answer:
                started = self._now()
                budget.begun = self._monotonic()
                answer = receive(connection, budget)  # None: its deadline passed first
            if answer is None and child.killed is None:  # a bound passed, not a kill
                late = budget.begun is None
                expired = None if late else budget.armed
                assert late or expired is not None  # no deadline: receive waits for an answer
        except (EOFError, OSError):  # the child died (BrokenPipeError is an OSError)
            answer = None
        except Garbled as exc:  # something in the child wrote on its pipe: never reused
            answer, garbled = None, exc
        finished = self._now()  # the run ends here (see above)
        if answer is None:
            if budget.begun is None:
                return self._never_taken(child, finished, late=late, garbled=garbled)
            return self._lost(child, started, finished, expired, garbled)
        child.answered = True  # it served: found dead before its next call, it died idle
        self._give_back(child)  # a cancel after the answer loses the child, not the answer
        if "error" in answer:
            error = str(answer["error"])
            told = answer.get("traceback")
            return ProcessOutcome(
                started=started,
                finished=finished,
                error=error,
                result=None,
                timed_out=False,
                traceback=None if told is None else str(told),
            )
        result = answer.get("result")
        return ProcessOutcome(
            started=started,
            finished=finished,
            error=None,
            result=None if result is None else str(result),
            timed_out=False,
        )

    def _lost(
        self,
        child: Child,
        started: float,
        finished: float,
        expired: float | None,
        garbled: Garbled | None,
    ) -> ProcessOutcome:
        """The outcome of a run ``child`` took and gave no answer for, over at
        ``finished``: its deadline passed (``expired``, the timeout it passed), the child
        wrote ``garbled`` on its pipe (both: it is killed now, and never reused), or it
        died (a crash, or a kill asked for: :meth:`_lose`'s error).  The child is then
        reaped and replaced (:meth:`_lose`), none of it in the run's time."""
        pid = child.process.pid
        if expired is not None or garbled is not None:
            kill_group(child.process)  # SIGKILL, at once
        error = self._lose(child)
        if expired is not None:
            error = killed_at_deadline(finished - started, budget=expired, pid=pid)
        elif garbled is not None:
            error = f"ChildProcessError: the worker process {pid} {garbled}; it was killed"
        return ProcessOutcome(
            started=started,
            finished=finished,
            error=error,
            result=None,
            timed_out=expired is not None,
        )

    def _never_taken(
        self, child: Child, at: float, *, late: bool, garbled: Garbled | None
    ) -> ProcessOutcome | None:
        """The end, seen at ``at``, of a run ``child`` never took (it said no
        ``started``): it hung past :data:`START_TIMEOUT` (``late``) or wrote ``garbled``
        on its pipe (both: killed now), or it died, or a kill asked for (a cancel, a
        shutdown) killed it.  The action never began, so the run has no duration: its
        ``started`` is its ``finished`` (it read the instant the call was sent, and a
        task's run killed by a cancel a minute into a hung start-up was judged over
        its timeout, ``timed_out``).

        None for a child that answered a call before, lost on its own (not garbled,
        not a kill asked for): it died idle (the OOM killer, an operator's ``kill``, a
        thread its last job left) or hung idle (stopped; a thread its last job left
        holds the interpreter), the loss is said at WARNING, and another child takes
        the run.  A fresh child lost so fails the run: one that cannot boot would fail
        on every child, and passing it over would start children for ever."""
        pid = child.process.pid
        if late or garbled is not None:
            kill_group(child.process)  # SIGKILL, at once
        error = self._lose(child, began=False)
        if child.answered and child.killed is None and garbled is None:
            if late:
                log.warning(
                    "worker process %d did not take the call of task %r within %g s (it hung "
                    "while idle) and was killed; the run goes to another",
                    pid,
                    child.task_id,
                    START_TIMEOUT,
                )
            else:
                log.warning(
                    "worker process %d %s while idle; the run of task %r goes to another",
                    pid,
                    died_how(child.process),
                    child.task_id,
                )
            return None
        if late:
            error = (
                f"ChildProcessError: the worker process {pid} did not take the call within "
                f"{START_TIMEOUT:g} s (it hung before the action began); it was killed"
            )
        elif garbled is not None:
            error = f"ChildProcessError: the worker process {pid} {garbled}; it was killed"
        return ProcessOutcome(started=at, finished=at, error=error, result=None, timed_out=False)

    def retime(self, task_id: str, timeout: float | None) -> None:
        """The timeout of ``task_id`` changed while a run of it may be in flight (a
        modify or a replace: docs/decisions/changing-a-task.md, "A run in flight is held to its
        task's timeout now"): each child busy with one is held to ``timeout`` from its start,
        killed at once if that deadline passed (the wait for its answer, a frame begun
        included, wakes and waits again for the new deadline: :class:`Budget`)."""
        with self._lock:
            for child in self._busy:
                budget = self._budgets.get(child)
                if child.task_id == task_id and budget is not None:
                    budget.timeout = timeout
                    budget.wake()

    def _unstarted(self, error: str) -> ProcessOutcome:
        """The outcome of a run stopped before a child started it, failed with ``error``."""
        now = self._now()
        return ProcessOutcome(started=now, finished=now, error=error, result=None, timed_out=False)
