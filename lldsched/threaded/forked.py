"""A scheduler in a child forked from the process that made it: refused at its first verb.

A fork copies the whole memory of a process but only the thread that called it.  A
scheduler made before the fork (at import under gunicorn's ``--preload``, uWSGI
without ``lazy-apps``, the parent of a ``multiprocessing`` fork child) reaches the
child with its tasks and its state and without its threads: the timer, the workers,
the listeners' and the event loop's.  The child's copy said ``running``, and
``schedule()`` there took work that never ran, without a word.  Worse, its lock may
have been held at the fork by one of those threads (the timer popping an entry, the
core writing its store): the child's copy of the lock is then held for good, and its
first verb hung.

So every scheduler is noted here when it is made, and in a forked child each one
noted is marked :data:`~lldsched.threaded.parts.FORKED` (its ``running`` is False)
and its lock is replaced by a :class:`Refusal`, whose every acquisition raises
:class:`~lldsched.errors.SchedulerStateError` naming the fork and what to do.  Every
verb and read takes that lock first, so each refuses there, whatever state the
lock was in, and a verb added later refuses too.  The work is done once per fork, by
:func:`os.register_at_fork`: nothing is added to a registration or a run, nor to
a verb but ``shutdown()``'s one comparison (below).

``shutdown()`` in the child is the one verb that does not refuse: an ``atexit`` hook
or a ``with`` block left in a worker calls it, and nothing of the child's is running.
It stops nothing and returns True: the threads were the parent's, and so are the
worker processes of ``isolation="process"`` (not the child's to kill) and the store
(refused in the child on its own: :mod:`lldsched.stores.forks`).

The child's copies of the pipes to the worker processes of ``isolation="process"``
are closed at the fork too (:meth:`ProcessPool.let_go_after_fork
<lldsched.threaded.processes.ProcessPool.let_go_after_fork>`): a worker process exits
when its pipe from the scheduler closes, and a copy held open by a child that lives
on (every gunicorn worker) kept it from ever seeing that, so the parent's shutdown
waited out its timeout and then killed it.  Its copy of each worker process's
lifeline is closed there too: a worker process dies when its parent dies because the
lifeline's writing end closes then, and a copy in a child that lives on kept it open,
so the worker process outlived the parent it was to die with.

A scheduler made in the child after the fork is the child's own, and unaffected.

**uWSGI runs no fork hook** unless told to (``py-call-osafterfork = true``): it forks
its workers in C, and measured with uWSGI 2.0.31, a worker's copy still said
``running`` and took work it never ran, the refusal never made.  The stores' refusal
(:mod:`lldsched.stores.forks`) is just as blind there, and so is the closing of the
pipes above: there a worker process outlives a killed master while a uWSGI worker
lives.  A per-verb check of the process id would see it, at a system call each
verb and registration (0.7 µs measured in a sandbox: a fifth of a ``pause``).
Instead a scheduler made where uWSGI will fork it (its master, before the workers:
``uwsgi.worker_id()`` is 0, with a master or more than one process) without that
option is warned of, once, as it is made (:func:`_warn_under_uwsgi`), naming the two
settings that answer it; a durable store opened there is too
(:func:`lldsched.forkhooks.uwsgi_forks_unhooked`, the one test of both).
"""

from __future__ import annotations

import logging
import os
import weakref
from typing import Any, NoReturn, Protocol

from lldsched.errors import SchedulerStateError, doc_url
from lldsched.forkhooks import UWSGI_SETTINGS, uwsgi_forks_unhooked
from lldsched.logs import SCHEDULER
from lldsched.threaded.parts import FORKED
from lldsched.threaded.processes import ProcessPool

__all__ = ["Refusal", "note"]

log = logging.getLogger(SCHEDULER)


class _Made(Protocol):
    """What the fork changes of a scheduler (a Protocol: this module imports no Scheduler)."""

    name: str
    _state: str
    _lock: Any  # a threading.Lock; a Refusal in a forked child
    _processes: ProcessPool


_made: weakref.WeakSet[_Made] = weakref.WeakSet()
"""The schedulers made in this process and still alive."""

_pid = [os.getpid()]
"""This process's id: the process the schedulers in :data:`_made` were made in."""


def note(scheduler: _Made) -> None:
    """Note ``scheduler``, just made in this process: a child forked from it refuses it."""
    _made.add(scheduler)
    _warn_under_uwsgi(scheduler.name)


def _warn_under_uwsgi(name: str) -> None:
    """Warn if uWSGI will fork this process's workers from here without running the
    fork hooks (see the module docstring)."""
    if uwsgi_forks_unhooked():
        log.warning(
            "the scheduler %r is made in uWSGI's master, before it forks the workers, and "
            "uWSGI runs no fork hook: in a worker its copy would take work that never runs, "
            "without an error. %s",
            name,
            UWSGI_SETTINGS,
        )


class Refusal:
    """Stands in a forked child for the lock of a scheduler made before the fork: every
    acquisition raises the :class:`~lldsched.errors.SchedulerStateError` that says so."""

    __slots__ = ("_made_in", "_name")

    def __init__(self, name: str, made_in: int) -> None:
        self._name = name
        self._made_in = made_in

    def acquire(self, blocking: bool = True, timeout: float = -1) -> NoReturn:
        raise SchedulerStateError(
            f"the scheduler {self._name!r} was made in process {self._made_in} and is used in "
            f"process {os.getpid()}, a child forked from it: its threads (timer, workers, "
            "listeners) stayed in the parent, so nothing would run here, and its tasks are a "
            "copy. Do not share a scheduler across a fork: make the scheduler after the fork, "
            "in each process that runs jobs (gunicorn: in post_fork or the app factory, not "
            "at import with --preload; uWSGI: lazy-apps = true; multiprocessing: in the "
            "child), with a shared store to run each job once among them "
            f"({doc_url('docs/CLUSTER.md')})"
        )

    def __enter__(self) -> NoReturn:
        self.acquire()

    def __exit__(self, *exc: object) -> None:  # never reached: __enter__ raised
        """Nothing to let go."""

    def locked(self) -> bool:
        return True


def _after_fork_in_child() -> None:
    """Mark each scheduler made before the fork forked, its lock a :class:`Refusal`."""
    made_in, _pid[0] = _pid[0], os.getpid()
    for scheduler in list(_made):
        scheduler._lock = Refusal(scheduler.name, made_in)
        scheduler._state = FORKED
        scheduler._processes.let_go_after_fork()
    _made.clear()  # refused already; a fork from this child keeps the refusal it copies


if hasattr(os, "register_at_fork"):  # POSIX; Windows has no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)
