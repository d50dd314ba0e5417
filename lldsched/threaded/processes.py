"""ProcessPool: the worker processes that run process-isolated tasks (``isolation="process"``).

Python cannot stop a thread, but it can stop a process.  A task registered with
``isolation="process"`` names its action by import path, and each of its runs is
sent to a child process as JSON text: ``{"call": "package.module:function", "args":
[...], "kwargs": {...}}``.  The child imports the function itself, calls it, and
answers with JSON text too: ``{"started": true}`` when it takes the call, then
``{"result": text}`` (the return value as :func:`~lldsched.core.results.result_text`
writes it) or ``{"error": text, "traceback": text}`` (the exception as ``"Type:
message"``, and as Python prints it: the parent logs it).  Nothing is pickled: not the
action, not an argument, not a result, not the exception, not the child itself.  An
action's ``SystemExit``, ``KeyboardInterrupt`` or ``GeneratorExit`` is a failed run,
as on a thread: the child answers and takes the next call (it exited, or said it was
killed by SIGINT, with no word of what the action raised).

This module owns the children, that protocol, and the ways a run ends without an
answer:

* **the timeout** is counted from the child's ``started`` (a fresh child's
  interpreter start is not the action's time).  At the deadline the child gets
  SIGKILL at once (no SIGTERM grace: a grace period is time the slot stays taken,
  and a plain Python child dies on SIGTERM without running anything anyway), and so
  does every process its job started that is still in its process group (each child
  leads one: :func:`~lldsched.threaded.processlife.kill_group`); the run is reported
  timed out, its error the budget's wording every runtime's record uses
  (:func:`~lldsched.core.runs.timeout_error`), then that its worker process was
  killed (:func:`~lldsched.core.isolation.killed_at_deadline`; the simulation cuts
  such a run at its deadline alike).  A modify or a replace that changes the task's
  timeout during the run re-arms that deadline from the child's start
  (:meth:`ProcessPool.retime`; docs/decisions/changing-a-task.md, "A run in flight is held to its
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
  (:meth:`ProcessPool._never_taken`);
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
* **a kill asked for** (:meth:`ProcessPool.kill`: the task was cancelled or paused,
  or the scheduler shuts down without draining, or its drain runs out of time) is a
  failed run whose error says why.
  One asked for after the run began and before a child was busy with it (the worker
  takes one, or starts one, without the scheduler's lock) found no child to kill: the
  caller's ``stopped`` says so once the child is held, and the run is never sent (its
  error ``CancelledError: task cancelled (before its worker process started it)``).
  A shutdown's finds the pool closed instead: :meth:`ProcessPool.run` answers None,
  the run never started, and the caller puts it back as unbegun (its attempt unspent).

A child that is lost is replaced at once (starting one takes a few milliseconds;
the new interpreter boots in the background), so the caller's slot is free as soon
as the kill is reaped; the run's record ends before all that, when the pool saw the
loss (:meth:`ProcessPool._send`).  Children are started lazily, at the first run
that finds no idle one, as ``python -c`` subprocesses (fork and exec at once, as the
``spawn`` start method does: never a bare fork of a threaded process) that inherit
three pipe descriptors (the calls', the answers' and the lifeline's) and the parent's
``sys.path``.  Not ``multiprocessing.Process``: its ``spawn`` child imports the
parent's main module again (a script without the ``if __name__ == "__main__"``
guard would start a second scheduler in every child) and unpickles its target;
this child imports lldsched and the functions it is asked to call, nothing else.

**A child dies with its parent**, as a thread dies with its process: each holds the
reading end of a *lifeline* pipe whose end-of-file ends it (the whole rule is
in :mod:`lldsched.threaded.processlife`, which starts, kills and reaps a child).

**What a child gets, and what the parent believes.**  A child is started with an
argument list, never a shell; it inherits the parent's environment (secrets in it
included), working directory, user, stdout and stderr, and no descriptor but its three
pipes (``close_fds``).  Its action is the task's own code and can do whatever the
parent's user can: isolation bounds its time and its crashes, not its rights.  The
parent reads only JSON objects from the pipe, each at most
:data:`~lldsched.threaded.processwire.ANSWER_LIMIT` bytes: anything else (an action that
wrote on the pipe) fails the run, naming what came, and the child is killed and
replaced, never reused.  The run's timeout bounds the whole answer, not its first byte:
a child that writes the start of a message and then stops is killed at the deadline like
one that wrote nothing (:func:`~lldsched.threaded.processwire.receive` reads the frame
itself; ``recv_bytes`` would wait for the rest of it for ever).

**POSIX only** (Linux, macOS; :data:`SUPPORTED`): the child inherits its pipes
with ``subprocess``'s ``pass_fds``, which Windows lacks (and
:class:`multiprocessing.connection.Connection` reads a Windows pipe by handle, not
by descriptor), and the kill is SIGKILL.  On Windows the threaded scheduler
refuses ``isolation="process"`` at registration (:func:`check_supported`), and a
process-isolated task restored from a store there fails each attempt with that
reason instead of starting a child.  None of this uses :mod:`multiprocessing`'s
start methods: ``spawn``, ``forkserver`` and ``fork`` change nothing here.

The pool has no size of its own: the caller (the scheduler's worker thread) waits
for its child, so there are never more busy children than worker threads, and the
idle ones are the ones those threads left behind.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from lldsched.core.isolation import (
    DRAIN_OUT_OF_TIME,
    KILLED,
    killed_at_deadline,
    killed_by_shutdown,
    worker_killed,
)
from lldsched.core.runs import rearmed
from lldsched.errors import SchedulerStateError, ValidationError
from lldsched.logs import WORKERS, Repeats, say_with_traceback
from lldsched.threaded.deadline import Deadline
from lldsched.threaded.processchild import serve
from lldsched.threaded.processlife import (
    BEFORE,
    DURING,
    REAP_TIMEOUT,
    Child,
    death,
    died_how,
    end_child,
    kill_group,
    let_exit,
    start_child,
)
from lldsched.threaded.processwire import Garbled, receive, send

__all__ = [
    "DRAIN_OUT_OF_TIME",
    "KILLED",
    "NOT_SENT",
    "START_TIMEOUT",
    "SUPPORTED",
    "ProcessOutcome",
    "ProcessPool",
    "check_supported",
    "killed_by_shutdown",
    "serve",
]

log = logging.getLogger(WORKERS)

_EXIT_GRACE = 1.0  # seconds a child whose pipe closed gets to exit on its own

START_TIMEOUT = 60.0
"""Seconds a worker process has to take a call (say ``started``) once it is held for the
run, a fresh one's interpreter start included (about a second on a loaded 2-core host;
ten on one booting a worker process for each of twenty workers at once): past it the
child is killed, and the run ends as :meth:`ProcessPool._send` says.  Not the task's
``timeout``, which counts from ``started``: the start is not the action's time."""

NOT_SENT = "(before its worker process started it)"
"""What the error of a run stopped before a child held it ends with (never sent)."""


SUPPORTED = os.name == "posix"
"""Whether this platform runs process-isolated tasks (see the module docstring)."""

_UNSUPPORTED = (
    "isolation='process' needs a POSIX system (Linux, macOS): its worker process inherits "
    "pipe descriptors (subprocess's pass_fds) and is killed with SIGKILL, and neither "
    f"exists on {sys.platform!r}"
)


def check_supported(name: str) -> None:
    """ValidationError naming task ``name`` where :data:`SUPPORTED` is False."""
    if not SUPPORTED:
        raise ValidationError(
            f"task {name!r}: {_UNSUPPORTED}; run it on a thread (isolation='thread', with a "
            "ctx to stop at its timeout) or on a POSIX host"
        )


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


class _Budget:
    """The timeout a busy child's run is held to, and the pipe that wakes its worker's
    wait when :meth:`ProcessPool.retime` changes it (``timeout`` under the pool's lock):
    the :class:`~lldsched.threaded.processwire.Bound` the worker reads the child's answer
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
        deadline = rearmed(self.begun, timeout, now)
        return math.inf if deadline is None else deadline - now

    def wake(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.write(self.waking, b"!")

    def close(self) -> None:
        os.close(self.woken)
        os.close(self.waking)


class ProcessPool:
    """Child processes that run one call at a time each; see the module docstring.

    ``now`` is the caller's clock (the instants of :class:`ProcessOutcome`);
    ``monotonic`` the one the deadlines count on: real seconds, whatever ``now`` is
    (docs/decisions/threaded.md, "A deadline that stops a run counts real seconds"; a test
    passes its own, and wakes the waits it moved past, to kill without waiting).
    """

    def __init__(
        self,
        *,
        now: Callable[[], float],
        repeats: Repeats | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._now = now
        self._monotonic = monotonic
        # A system refusing processes for an hour is said once a window, not once a
        # lost child (lldsched/logs.py; its own lock: several workers may replace).
        self._repeats = repeats if repeats is not None else Repeats()
        # Guards _idle, _busy, _budgets (and each one's timeout) and _closed.  Taken
        # by the worker threads to take and give back a child, and by kill(), retime()
        # and close(); never held while waiting for a child's answer.  Lock order: the
        # scheduler's lock, then this one (kill() and retime() are called under the
        # scheduler's lock); never the other way round.
        self._lock = threading.Lock()
        self._idle: list[Child] = []
        self._busy: list[Child] = []
        # The timeout each busy child's run is held to (retime changes it; run drops it).
        self._budgets: dict[Child, _Budget] = {}
        self._closed = False

    # -- running -----------------------------------------------------------------------

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
                self._budgets[child] = _Budget(timeout, self._lock, self._monotonic)
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
            error = killed_at_deadline(finished - started, expired, pid)
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
        included, wakes and waits again for the new deadline: :class:`_Budget`)."""
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

    def kill(self, task_id: str, reason: str) -> bool:
        """Kill the child running ``task_id``'s run, if any; its run ends failed, its
        error saying ``reason`` (``"task cancelled"``).  True if one was killed."""
        with self._lock:
            children = [child for child in self._busy if child.task_id == task_id]
            for child in children:
                child.killed = reason
                kill_group(child.process)
        return bool(children)

    def kill_all(self, reason: str) -> int:
        """Take no more runs and kill every busy child (shutdown without drain, or out
        of time); how many were killed.  Nothing lost is replaced after this."""
        with self._lock:
            self._closed = True
            for child in self._busy:
                child.killed = reason
                kill_group(child.process)
            return len(self._busy)

    def close(self, timeout: float | None = None) -> None:
        """Take no more runs; end the idle children (their pipe closes, they exit; one
        that never served is killed at once: :func:`~lldsched.threaded.processlife.let_exit`)
        and reap them, killing any still alive after ``timeout`` (one bound for them all,
        not one each; None: :data:`~lldsched.threaded.processlife.REAP_TIMEOUT`, as
        :func:`~lldsched.threaded.processlife.end_child` gives one: an idle child runs no
        run, and a thread its last job left that never ends held a shutdown with no
        timeout for ever).  A busy child is left to its caller (kill it first with
        :meth:`kill_all`).  Idempotent."""
        deadline = Deadline(REAP_TIMEOUT if timeout is None else timeout)
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for child in idle:
            let_exit(child)  # all at once: they exit in parallel
        for child in idle:
            try:
                child.process.wait(deadline.remaining())
            except subprocess.TimeoutExpired:  # out of time: killed now, not after _end's wait
                kill_group(child.process)
            end_child(child)

    def let_go_after_fork(self) -> None:
        """In a child forked from this pool's process: close this copy's ends of the
        children's pipes and take no run, without waiting for a child or killing one
        (they are the parent's).  A copy held open kept a child from reading the end of
        its pipe when the parent closed it: the parent's shutdown waited out its
        timeout, then killed it.  Takes no lock: the forked child runs one thread, and
        the lock may have been held at the fork (:mod:`lldsched.threaded.forked`).

        Each ``Popen`` copy is told it made no process (``_child_created``, CPython's
        own flag, which only the spawn in the parent set): this process did not, and
        cannot reap it.  Dropped as it was, the copy said ``ResourceWarning: subprocess
        N is still running`` in every forked child, and polled a pid not its child."""
        self._closed = True
        for child in (*self._idle, *self._busy):
            child.connection.close()
            child.let_go()  # else the child outlived the parent while this copy lives
            child.process._child_created = False  # type: ignore[attr-defined]
        self._idle, self._busy = [], []

    @property
    def pids(self) -> list[int]:
        """The process ids of the live children, idle and busy (for tests and tools)."""
        with self._lock:
            children = [*self._idle, *self._busy]
        return [child.process.pid for child in children if child.process.poll() is None]

    @property
    def alive(self) -> int:
        """How many children are alive."""
        return len(self.pids)

    # -- the children --------------------------------------------------------------------

    def _take(self, task_id: str) -> Child:
        with self._lock:
            if self._closed:
                raise SchedulerStateError("the process pool is closed and takes no run")
            child = self._idle.pop() if self._idle else None
            if child is not None:
                self._hold(child, task_id)
                return child
        child = self._start()  # outside the lock: a few milliseconds
        with self._lock:
            if not self._closed:
                self._hold(child, task_id)
                return child
        end_child(child)
        raise SchedulerStateError("the process pool is closed and takes no run")

    def _hold(self, child: Child, task_id: str) -> None:
        """``child`` is busy with a run of ``task_id`` (caller holds the lock)."""
        child.task_id = task_id
        child.killed = None
        self._busy.append(child)

    def _give_back(self, child: Child) -> None:
        """``child`` answered: idle again, unless it was killed after it answered (a
        cancel that came a moment late) or the pool closed meanwhile."""
        with self._lock:
            if child.killed is None and not self._closed:
                self._busy.remove(child)
                child.task_id = None
                self._idle.append(child)
                return
        self._lose(child)

    def _lose(self, child: Child, *, began: bool = True) -> str:
        """End ``child`` (its pipe closed, killed if it will not exit), reap it and start
        its replacement (the pool open); the error text of the run it was running, had
        it neither timed out nor garbled its answer (:meth:`_lost`), saying it ended
        before it took the call where it had not ``began`` (:meth:`_never_taken`)."""
        process = child.process
        child.connection.close()  # a live child reads end-of-file and exits
        lingered = False
        try:  # a child that closed its pipe is exiting: wait for its own exit code
            process.wait(_EXIT_GRACE)
        except subprocess.TimeoutExpired:
            kill_group(process)  # SIGKILL: it would not exit
            process.wait(REAP_TIMEOUT)
            lingered = True
        finally:
            child.let_go()
        with self._lock:
            self._busy.remove(child)
            killed = child.killed
            closed = self._closed
        if not closed:
            self._replace()
        if killed is not None:
            return f"CancelledError: {killed} {worker_killed(process.pid)}"
        if lingered:  # its SIGKILL is ours: death() would say it died of one
            return (
                f"ChildProcessError: the worker process {process.pid} closed its pipe "
                f"{DURING if began else BEFORE} and did not exit within {_EXIT_GRACE:g} s; "
                "it was killed"
            )
        return death(process, began=began)

    def _replace(self) -> None:
        """Start a child to stand in for a lost one; if the system refuses a process
        now, the next run that finds no idle child tries again."""
        try:
            replacement = self._start()
        except OSError as exc:
            with self._repeats.lock:
                repeated = self._repeats.admit("replace")
            if repeated is None:  # said with its traceback less than a window ago
                log.debug("still cannot start a worker process to replace a lost one: %s", exc)
            else:
                message = "could not start a worker process to replace a lost one"
                args: tuple[int, ...] = ()
                if repeated:
                    message += " (%d more times since its last line, at DEBUG)"
                    args = (repeated,)
                say_with_traceback(log, logging.ERROR, message, args, exc, {"repeated": repeated})
            return
        with self._lock:
            closed = self._closed
            if not closed:
                self._idle.append(replacement)
        if closed:
            end_child(replacement)

    def _start(self) -> Child:
        """A new child, booting in the background."""
        if not SUPPORTED:  # a task restored from a store written on a POSIX host
            raise OSError(_UNSUPPORTED)
        return start_child()
