"""A worker process's side: the loop that takes a call, runs it and answers.

A child of :class:`~lldsched.threaded.processes.ProcessPool` runs :func:`serve`
(the pool's boot line imports it through :mod:`lldsched.threaded.processes`, whose
name a process listing shows): it reads a call (``{"call": "package.module:function",
"args": [...], "kwargs": {...}}``), says ``{"started": true}`` (the parent kills a child
that has not within :data:`~lldsched.threaded.processes.runs.START_TIMEOUT`), imports and calls the
function (awaiting what must be awaited) and answers ``{"result": text}`` or
``{"error": text, "traceback": text}``, until the parent's end of its pipe closes.
It also owns the child's *lifeline* (:func:`_watch`): a daemon thread that ends the
child at once when its parent died.  A child runs one call at a time, on its main
thread: nothing here is shared between threads but the lifeline's descriptor, which
only the watcher reads.

**The child's pipes are its own**, held by no process its action starts: the parent
learns that a child crashed from the end-of-file of its answering pipe, which comes only
once every copy of the writing end is closed.  ``pass_fds`` hands them over inheritable,
so a command the action started (``os.system("... &")``, ``subprocess.Popen(...,
close_fds=False)``) kept a copy, and a fork (``os.fork``, ``multiprocessing``'s fork
start method, a daemon) copies every descriptor: a child that crashed while such a
process lived on was never seen to, its run held its worker until that process ended
(for ever, without a timeout; a cancel killed the child and waited on), and a forked
copy that returned from the action answered its call a second time and took calls of
its own.  So :func:`serve` makes the three descriptors non-inheritable, has a process
forked from the child close its copies of the pipes (:func:`os.register_at_fork`), and
ends such a copy when it returns from the action, unheard.  A fork in C without Python's
fork hooks is not seen (a C extension's bare ``fork()`` that does not ``exec``).
"""

from __future__ import annotations

import json
import os
import signal
import threading
from multiprocessing.connection import Connection

from lldsched.core.results import awaited, must_await, result_text
from lldsched.errors import error_text, traceback_text
from lldsched.importpath import import_callable
from lldsched.threaded.processes.wire import Pipe

__all__ = ["serve"]

_ORPHANED = 70  # a child's exit code when its parent died (nobody but init reads it)


def serve(reading: int, writing: int, lifeline: int) -> None:
    """A child's loop: take a call, run it, answer; return when the parent's end closes,
    or is found closed by an answer (the parent exited during a call, without a
    shutdown, and the call returned before :func:`_watch` ended this process: the answer
    has nobody to go to, and its BrokenPipeError, printed on the stderr the child shares
    with the parent, was a traceback in a service's log)."""
    for fd in (reading, writing, lifeline):  # pass_fds made them inheritable
        os.set_inheritable(fd, False)  # a command the action starts holds none
    threading.Thread(target=_watch, args=(lifeline,), name="lldsched-lifeline", daemon=True).start()
    connection = Pipe(reading, writing)
    serving = os.getpid()
    os.register_at_fork(after_in_child=connection.close)  # nor a process it forks
    while True:
        try:
            request = json.loads(connection.recv_bytes())
        except EOFError:
            return
        if not _told(connection, b'{"started": true}'):
            return
        try:
            function = import_callable(request["call"])
            value = function(*request["args"], **request["kwargs"])
            if must_await(value):
                import asyncio  # not with lldsched (docs/PERFORMANCE.md, "Start-up")

                value = asyncio.run(awaited(value))
            answer = {"result": result_text(value)}
        except BaseException as exc:  # SystemExit, KeyboardInterrupt: a failed run, as on a thread
            answer = {"error": error_text(exc), "traceback": traceback_text(exc)}
        if os.getpid() != serving:  # a copy the action forked, back here
            return
        if not _told(connection, json.dumps(answer).encode()):
            return


def _watch(lifeline: int) -> None:
    """End this child at once (``os._exit``) when its lifeline reads end-of-file: the
    parent closes its end only after reaping this child, so end-of-file means the parent
    died (SIGKILL, the OOM killer, a crash, an exit without shutdown) and its kernel
    closed the end; a call in progress dies with it, as a thread's would."""
    while os.read(lifeline, 64):  # nothing is ever written; only end-of-file returns
        pass
    os.killpg(0, signal.SIGKILL)  # this child and what its job started (see processlife.kill_group)
    os._exit(_ORPHANED)  # not reached: SIGKILL ends this process too


def _told(connection: Connection, message: bytes) -> bool:
    """Send ``message`` to the parent; False if its end is closed (it exited)."""
    try:
        connection.send_bytes(message)
    except BrokenPipeError:
        return False
    return True
