"""One worker process from the parent's side: started, held by its lifeline, killed, reaped.

:class:`~lldsched.threaded.processes.ProcessPool` runs process-isolated tasks in
children; this module owns each child's life as the parent sees it.  A child is
started (:func:`start_child`) as a ``python -c`` subprocess of the Python and the
interpreter options a :mod:`multiprocessing` spawn would have (:func:`_executable`,
:func:`_interpreter_flags`), with three inherited pipe descriptors (the calls', the
answers', the lifeline's) and a process group of its own; its whole program is
:data:`_BOOT`.  It is killed with every process its job started that is still in its
group (:func:`kill_group`), reaped after its pipe closed (:func:`end_child`; one that
never served a call is killed instead, :func:`let_exit`: it may be hung in its
start-up, where it never reads that end-of-file), and a run whose child died on its
own fails with :func:`death`'s text, saying whether it had taken the call.  The JSON protocol
with a child, the pool of them and the ways a run ends are
:mod:`lldsched.threaded.processes.pool`'; the child's own side is
:mod:`lldsched.threaded.processes.child`.

**A child dies with its parent**, as a thread dies with its process.  When the parent
dies without a shutdown (SIGKILL, the OOM killer, a crash, ``os._exit``), a child that
lived on would finish its call with no timeout enforced (the parent enforced it) while a
restarted scheduler on a durable store runs the same job again, and a call that hangs
would never end.  So each child inherits the reading end of a *lifeline*, a pipe on
which nothing is written, and a daemon thread in it
(:func:`~lldsched.threaded.processes.child._watch`) reads it: at end-of-file it ends the
child at once with ``os._exit``, the call in progress killed where it stands (no
``finally``, no ``atexit``, unflushed output lost, as at a SIGKILL).  The kernel closes
the parent's writing end when the parent dies, however it dies; the parent closes it
itself only after it reaped the child, so a normal shutdown is unchanged (an idle child
exits at the end of its call pipe, a busy one is waited for or killed first).  A process
forked from the parent closes its copy of that end
(:meth:`~lldsched.threaded.processes.ProcessPool.let_go_after_fork`), or a gunicorn
worker forked from a preloaded app would keep every child alive.  Not Linux's
``prctl(PR_SET_PDEATHSIG)``: it fires when the *thread* that started the child ends (a
child is started by whichever worker thread needed one), it has no macOS equivalent,
and a parent that dies before the child calls it is missed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable

from lldsched.threaded.processes.wire import Pipe

__all__ = [
    "BEFORE",
    "DURING",
    "REAP_TIMEOUT",
    "Child",
    "death",
    "died_how",
    "end_child",
    "kill_group",
    "let_exit",
    "start_child",
]

REAP_TIMEOUT = 5.0  # seconds to wait for a killed child to be reaped (SIGKILL: at once)

DURING = "during the run"
"""When a child that took its call (it said ``started``) was lost, as its run's error says."""

BEFORE = "before it took the call (the action never began)"
"""When a child that never took its call was lost: a fresh one that could not start (its
stderr, the parent's, says why), or one killed before it did."""


class Child:
    """One worker process, the parent's end of its pipe and of its lifeline."""

    __slots__ = ("answered", "connection", "killed", "lifeline", "process", "task_id")

    def __init__(self, process: subprocess.Popen[bytes], connection: Pipe, lifeline: int) -> None:
        self.process = process
        self.connection = connection
        self.lifeline = lifeline  # the writing end of its lifeline; -1 once closed
        self.task_id: str | None = None  # the task whose run it is busy with
        self.killed: str | None = None  # why the pool killed it mid-run, if it did
        self.answered = False  # it answered a call: idle since, until it takes the next

    def let_go(self) -> None:
        """Close this process's end of the child's lifeline (see
        :func:`~lldsched.threaded.processes.child._watch`): once the child is reaped, or in
        a forked copy of the parent.  Idempotent."""
        lifeline, self.lifeline = self.lifeline, -1
        if lifeline >= 0:
            os.close(lifeline)


def start_child() -> Child:
    """A new child, booting in the background (the caller checked the platform:
    :data:`~lldsched.threaded.processes.pool.SUPPORTED`)."""
    executable = _executable()
    from_parent, to_child = os.pipe()  # (read, write); ours stay non-inheritable (PEP 446)
    from_child, to_parent = os.pipe()
    lifeline, holding = os.pipe()  # nothing is written on it: only its end is read
    try:
        process = subprocess.Popen(
            [
                executable,
                *_interpreter_flags(),
                "-c",
                _BOOT,
                json.dumps(sys.path),
                str(from_parent),
                str(to_parent),
                str(lifeline),
            ],
            pass_fds=(from_parent, to_parent, lifeline),
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # a group of its own: kill_group takes its job's processes
        )
    except BaseException:
        for fd in (to_child, from_parent, from_child, to_parent, lifeline, holding):
            os.close(fd)
        raise
    os.close(from_parent)  # the child holds these: its death reads as end-of-file here
    os.close(to_parent)
    os.close(lifeline)
    return Child(process, Pipe.parents_end(from_child, to_child), holding)


def let_exit(child: Child) -> None:
    """Tell an idle ``child`` to exit: close its pipe (it reads end-of-file and exits).
    One that never answered a call is killed instead, at once: it ran nothing of a job,
    and may still be starting, or hung in its start-up (a ``sitecustomize`` or an import
    path that blocks), where it would never read that end-of-file (a shutdown with no
    timeout waited for it for ever).  Idempotent."""
    if not child.answered:
        kill_group(child.process)
    child.connection.close()


def end_child(child: Child) -> None:
    """End an idle child (:func:`let_exit`) and reap it, killing it if it does not exit
    within :data:`REAP_TIMEOUT`."""
    let_exit(child)
    try:
        child.process.wait(REAP_TIMEOUT)
    except subprocess.TimeoutExpired:
        kill_group(child.process)
        child.process.wait(REAP_TIMEOUT)
    finally:
        child.let_go()


def kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL a child and every process its job started that is still in its process
    group (each child leads a session of its own: ``start_new_session``), so a job that
    shelled out (``subprocess.run(["pg_dump", ...])``) does not leave its command running
    past the timeout, the cancel or the shutdown that killed it.  A process that left the
    group (its own ``setsid``, a daemon) is not followed.  Nothing once the child was
    reaped: its group's id is then no longer known to be its own.  Another thread's
    ``wait`` may reap it between the check and the signal (``returncode`` is set just
    after the reap): harmless, as Linux gives no new process a pid that is still a
    group's id with members, and a group with none answers ``ProcessLookupError``; only
    a pid reused and made a group leader in that instant would be hit."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):  # the whole group is gone already
            os.killpg(process.pid, signal.SIGKILL)


def death(process: subprocess.Popen[bytes], *, began: bool = True) -> str:
    """The error text of a run whose child died on its own, after it took the call
    (``began``: :data:`DURING`) or before (:data:`BEFORE`)."""
    when = DURING if began else BEFORE
    return f"ChildProcessError: the worker process {process.pid} {died_how(process)} {when}"


def died_how(process: subprocess.Popen[bytes]) -> str:
    """How a reaped child ended: ``exited with code 3``, or ``was killed by signal 9
    (SIGKILL)``."""
    code = process.returncode
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "an unknown signal"
        return f"was killed by signal {-code} ({name})"
    return f"exited with code {code}"


def _executable() -> str:
    """The Python a child runs: the one :mod:`multiprocessing` starts
    (``multiprocessing.set_executable``, ``sys.executable`` unless told), so one knob
    serves both; an embedded interpreter (a Windows service, uWSGI) may have none, and
    the run's error says so instead of ``PermissionError: [Errno 13] Permission denied:
    ''``."""
    from multiprocessing import spawn  # its module holds the setting; imported once

    executable = spawn.get_executable()
    if not executable:
        raise OSError(
            "no Python executable to start a worker process with (sys.executable is "
            f"{sys.executable!r}: an embedded interpreter?); name one with "
            "multiprocessing.set_executable(path), or run the task on a thread"
        )
    return os.fsdecode(executable)


def _interpreter_flags() -> list[str]:
    """The parent's own interpreter options, for a child's command line: ``-W`` options,
    ``-X dev`` and the other ``-X`` options, ``-O``, ``-I``/``-E``/``-s``/``-P``, as
    :mod:`multiprocessing`'s ``spawn`` passes them.  Without them a job run under
    ``python -X dev -W error::DeprecationWarning`` failed on a deprecated call on a
    thread and passed unseen in a worker process (and asserts ran there under ``-O``).
    The list comes from :mod:`subprocess` (``_args_from_interpreter_flags``, what
    ``spawn`` and the test suite of CPython call, 3.3 to 3.14); a Python without it
    starts children with no options, as before."""
    options: Callable[[], list[str]] | None = getattr(
        subprocess, "_args_from_interpreter_flags", None
    )
    return [] if options is None else options()


# -- the child's command line (its side: lldsched/threaded/processes/child.py) -------


_BOOT = (
    "import sys, json; sys.path[:] = json.loads(sys.argv[1]); "
    "from lldsched.threaded.processes import serve; "
    "serve(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))"
)
"""A child's whole command line program: the parent's import path, then
:func:`~lldsched.threaded.processes.child.serve`, imported through the package,
:mod:`lldsched.threaded.processes`, which gives it (a process listing shows that name,
and the line a child of an earlier release ran still imports)."""
