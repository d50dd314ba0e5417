"""A fork waits for the calls under way on this process's SQLite file stores.

SQLite keeps the locks of all of a process's connections to one file in one table of
that process (its inode's lock counts, the WAL index's lock masks), shared by every
connection it opens to the file.  A fork copies that table as it is.  A child forked
while a thread of the parent was inside a store call's transaction (a running
scheduler's claim, settle or save: gunicorn forking its workers from a master that
made one at import under ``--preload``, a ``multiprocessing`` fork from a process that
runs one) inherits a table saying that a connection of its own holds the file's write
lock: the copy of the parent's, which no thread of the child will ever end.  Every
connection the child opens on that file (the store the gunicorn recipe opens in
``post_fork``, docs/CLUSTER.md) then finds the write lock held for good: each write
waits out its ``timeout`` and fails "database is locked", and a shared store's does so
holding the file's write gate (:mod:`~lldsched.stores.sqlite.gate`), so every other
process's writes wait behind it and fail too, at every claim, for the child's life
(seen with gunicorn 27 under ``--preload``: a worker that never ran a job, the
master's claims failing ``WriteLockTimeout``, the worker's shutdown out of time).
The parent's copy cannot be ended in the child: its close would roll back a
transaction whose WAL index the parent is still writing
(:meth:`SqliteTaskStore._let_go_in_child`).

So a fork is made with no call under way: before it, the forking thread takes the lock
of every file store this process opened (the lock each call holds throughout, its
transaction included: :mod:`~lldsched.stores.sqlite.connection`), waiting up to
:data:`FORK_WAIT` in all for the calls under way to end (milliseconds: a write and its
commit), and lets them go after it, in the parent and in the child (an ``RLock`` belongs
to the forking thread, which the child has). The wait is bounded, so no lock the forking
thread holds itself (a verb's hold waits for the scheduler's lock inside the store's)
can hang the fork. A call that outlasts the wait (one waiting that long for another
process's lock) is left under way at the fork, as before. Private databases are not
waited for: their copy in a child shares nothing with the parent, and one a call was
inside at the fork is refused there (:mod:`~lldsched.stores.forks`). ``subprocess`` runs
no fork hook (nor needs one: the child execs at once), nor does uWSGI without
``py-call-osafterfork``. docs/decisions/persistence.md, "A fork waits for the SQLite
store's calls under way".
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from typing import Protocol

from lldsched.stores import forks

__all__ = ["FORK_WAIT", "opened"]

FORK_WAIT = 1.0
"""Seconds a fork waits, in all, for the calls under way on this process's file stores."""


class _FileStore(Protocol):
    """A SQLite file store, as the fork hook sees it (a Protocol: sqlite.py imports this)."""

    _opened_in: int  # the process that opened it (forks.py)
    _lock: threading.RLock  # held by each of its calls throughout


_stores: weakref.WeakSet[_FileStore] = weakref.WeakSet()
"""The file stores this process opened and has not collected."""

# Guards _stores: a store opened on one thread while another thread forks.
_stores_lock = threading.Lock()


class _Held(threading.local):
    """The locks a thread's fork hook took before its fork, let go after it: each
    thread's own, as two threads may fork at once and each must let go of its own."""

    def __init__(self) -> None:
        self.locks: list[threading.RLock] = []


_held = _Held()


def opened(store: _FileStore) -> None:
    """Note ``store``, a SQLite file store just opened: a fork waits for its calls."""
    with _stores_lock:
        _stores.add(store)


def _before_fork() -> None:
    """Take the lock of each file store of this process, within :data:`FORK_WAIT`."""
    with _stores_lock:
        stores = list(_stores)
    deadline = time.monotonic() + FORK_WAIT
    for store in stores:
        if store._opened_in != forks.current[0]:  # a copy from an earlier fork: not in use
            continue
        lock = store._lock
        if lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            _held.locks.append(lock)


def _after_fork() -> None:
    """Let go of what :func:`_before_fork` took (in the parent, and in the child)."""
    while _held.locks:
        _held.locks.pop().release()


if hasattr(os, "register_at_fork"):  # POSIX; Windows has no fork
    os.register_at_fork(
        before=_before_fork, after_in_parent=_after_fork, after_in_child=_after_fork
    )
