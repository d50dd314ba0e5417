"""One running scheduler per name in a process: taken at ``start()``, let go by ``shutdown()``.

A scheduler's ``name=`` is how its log lines (the ``scheduler`` field of a failed
attempt's line) and its threads (``lldsched-<name>-timer``, ``-worker-0``, ...) are told
from another scheduler's of the same process.  Two running under one name cannot be told
apart, and nothing said so: a notebook's cell run again, a plugin loaded twice, a host
that names each scheduler after something that is not unique.  So a scheduler takes its
name as it starts (:func:`take`), and a second one started under a name a running
scheduler holds is refused with a :class:`~lldsched.errors.SchedulerStateError` naming
both, before anything starts; the first lets it go as its first ``shutdown()`` takes the
lock (:func:`let_go`), whatever that shutdown leaves running.  A scheduler built and
never started holds nothing (a command line's verb builds one beside the service), as it
holds no store (:mod:`lldsched.core.store.use`, the rule this one follows).

A name the scheduler was not given (``"1"``, ``"2"``: a count of the schedulers built in
the process) is never refused: a library that names none of its schedulers cannot be
refused for a name another library chose.  Nor is a name given by hand refused because
a scheduler that was only counted holds it: the name lldsched invented gives way, and
the one given it by hand holds it from its start (a second given it by hand is refused).
The count skips a name a running scheduler holds (:func:`taken`); a counted scheduler
and one given its count by hand, both running, share the name in their log lines and
threads (whichever started first): a running scheduler is not renamed behind its back
(its log lines so far, its threads' names), and its remedy is a ``name=`` of its own.

The ``logging`` module answers ``getLogger(name)`` with the one logger of that name, and
APScheduler refuses a second job store or executor under an alias in use
(``ValueError``): a name that must tell things apart is one thing's.  A warning instead
would go where the application's logging sends it, nowhere until it configures any
(docs/decisions/logging.md, "The `lldsched` logger has a `NullHandler`").

Nothing here is on a run's path: one dictionary look-up at ``start()``, one pass over the
running schedulers' names at ``shutdown()``, and a look-up at construction when no name
is given.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Protocol

from lldsched.errors import SchedulerStateError

__all__ = ["counted", "let_go", "take", "taken"]


class _Named(Protocol):
    """A scheduler, as this module reads it (it imports no Scheduler)."""

    @property
    def name(self) -> str: ...


# The name of each running scheduler, and the scheduler (kept alive while it holds it: a
# running scheduler is alive anyway, its threads hold it).
_running: dict[str, _Named] = {}
_lock = threading.Lock()  # guards _running (schedulers start and stop on any thread)
# The schedulers whose name was counted, not given (never refused).  Kept here rather
# than on the scheduler: a 30th attribute of a Scheduler slows every attribute read of
# it (docs/PERFORMANCE.md, "The thirtieth attribute").  Added to as a scheduler is
# built, read by take() under _lock: each a single operation on the set underneath.
_counted: weakref.WeakSet[_Named] = weakref.WeakSet()


def _forget_after_fork() -> None:
    """In a forked child no name is held: the parent's schedulers run nothing there
    (:mod:`lldsched.threaded.forked`).  The lock is new too: a thread of the parent may
    have held it at the fork."""
    global _lock
    _lock = threading.Lock()
    _running.clear()


if hasattr(os, "register_at_fork"):  # POSIX; Windows has no fork
    os.register_at_fork(after_in_child=_forget_after_fork)


def taken(name: str) -> bool:
    """True if a running scheduler of this process holds ``name``."""
    with _lock:
        return name in _running


def counted(scheduler: _Named) -> None:
    """``scheduler``'s name was counted, not given: :func:`take` never refuses it."""
    _counted.add(scheduler)


def take(scheduler: _Named) -> None:
    """``scheduler`` holds its name from now on; a :class:`SchedulerStateError` if another
    running scheduler holds it and both names were given (neither :func:`counted`)."""
    name = scheduler.name
    with _lock:
        holder = _running.get(name)
        if holder is None:
            _running[name] = scheduler
            return
        if holder is scheduler or scheduler in _counted:
            return
        if holder in _counted:  # a name given by hand outranks one lldsched counted
            _running[name] = scheduler
            return
    raise SchedulerStateError(
        f"start() of a scheduler named {name!r}: the running scheduler {holder!r} of this "
        "process has that name, and two running schedulers of one name cannot be told apart "
        "(their log lines' `scheduler` field, their threads' names). Shut that one down "
        "first (a notebook's cell run again: shut down the scheduler its last run "
        "started), or give this one a name=... of its own; nothing was started"
    )


def let_go(scheduler: _Named) -> None:
    """``scheduler`` no longer holds the name it took (nothing if it took none; by the
    scheduler, not its ``name``, which a caller may have set since)."""
    with _lock:
        for name in [name for name, holder in _running.items() if holder is scheduler]:
            del _running[name]
