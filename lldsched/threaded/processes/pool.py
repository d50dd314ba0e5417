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

This module owns the children and that protocol.  A run in a child, and the ways it
ends without an answer (its timeout, a crash, a child that does not take the call
within :data:`~lldsched.threaded.processes.runs.START_TIMEOUT`, a kill asked for), are
:mod:`~lldsched.threaded.processes.runs`' (:class:`~lldsched.threaded.processes.runs.ProcessRuns`,
mixed into the pool).

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
in :mod:`lldsched.threaded.processes.life`, which starts, kills and reaps a child).

**What a child gets, and what the parent believes.**  A child is started with an
argument list, never a shell; it inherits the parent's environment (secrets in it
included), working directory, user, stdout and stderr, and no descriptor but its three
pipes (``close_fds``).  Its action is the task's own code and can do whatever the
parent's user can: isolation bounds its time and its crashes, not its rights.  The
parent reads only JSON objects from the pipe, each at most
:data:`~lldsched.threaded.processes.wire.ANSWER_LIMIT` bytes: anything else (an action that
wrote on the pipe) fails the run, naming what came, and the child is killed and
replaced, never reused.  The run's timeout bounds the whole answer, not its first byte:
a child that writes the start of a message and then stops is killed at the deadline like
one that wrote nothing (:func:`~lldsched.threaded.processes.wire.receive` reads the frame
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

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from lldsched.core.isolation import DRAIN_OUT_OF_TIME, KILLED, killed_by_shutdown, worker_killed
from lldsched.errors import SchedulerStateError, ValidationError
from lldsched.logs import WORKERS, Repeats, say_with_traceback
from lldsched.threaded.deadline import Deadline
from lldsched.threaded.processes.life import (
    BEFORE,
    DURING,
    REAP_TIMEOUT,
    Child,
    death,
    end_child,
    kill_group,
    let_exit,
    start_child,
)
from lldsched.threaded.processes.runs import Budget, ProcessRuns

__all__ = [
    "DRAIN_OUT_OF_TIME",
    "KILLED",
    "SUPPORTED",
    "ProcessPool",
    "check_supported",
    "killed_by_shutdown",
]

log = logging.getLogger(WORKERS)

_EXIT_GRACE = 1.0  # seconds a child whose pipe closed gets to exit on its own

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


class ProcessPool(ProcessRuns):
    """Child processes that run one call at a time each; see the module docstring.

    ``now`` is the caller's clock (the instants of
    :class:`~lldsched.threaded.processes.runs.ProcessOutcome`);
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
        self._budgets: dict[Child, Budget] = {}
        self._closed = False

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
        that never served is killed at once: :func:`~lldsched.threaded.processes.life.let_exit`)
        and reap them, killing any still alive after ``timeout`` (one bound for them all,
        not one each; None: :data:`~lldsched.threaded.processes.life.REAP_TIMEOUT`, as
        :func:`~lldsched.threaded.processes.life.end_child` gives one: an idle child runs no
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
