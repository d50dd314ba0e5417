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
process's lock) is left under way at the fork, and so is a store's constructor (its
creation, migration and checks write and read the file) that outlasts it: each waited for
as a call is (:func:`opening`).  The child cannot use that file then: a store opened
on it there is refused (:func:`refuse_if_cut`, a :class:`~lldsched.errors.StoreError`
saying why and what to do) rather than given a store whose every write fails "database
is locked" after its timeout, for the child's life.  Private databases are not
waited for: their copy in a child shares nothing with the parent, and one a call was
inside at the fork is refused there (:mod:`~lldsched.stores.forks`). ``subprocess`` runs
no fork hook (nor needs one: the child execs at once), nor does uWSGI without
``py-call-osafterfork``. docs/decisions/persistence.md, "A fork waits for the SQLite
store's calls under way" and "A child forked while a call was inside a file is refused
that file".
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from typing import Protocol

from lldsched.errors import StoreError
from lldsched.stores import forks

__all__ = ["FORK_WAIT", "Opening", "not_opened", "opened", "opening", "refuse_if_cut"]

FORK_WAIT = 1.0
"""Seconds a fork waits, in all, for the calls under way on this process's file stores."""


class _FileStore(Protocol):
    """A SQLite file store, as the fork hook sees it (a Protocol: sqlite.py imports this)."""

    _opened_in: int  # the process that opened it (forks.py)
    _lock: threading.RLock  # held by each of its calls throughout


class Opening:
    """A file store's constructor under way on ``path`` (its real path): ``lock``, held by
    the constructing thread until :func:`opened` or :func:`not_opened`, is what a fork
    waits for, as it waits for a store's own lock."""

    __slots__ = ("__weakref__", "lock", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.RLock()


_stores: weakref.WeakKeyDictionary[_FileStore, str] = weakref.WeakKeyDictionary()
"""The file stores this process opened and has not collected, each with its real path."""

_openings: set[Opening] = set()
"""The file stores' constructors under way in this process."""

# Guards _stores and _openings: a store opened on one thread while another thread forks.
# A fork holds it from before to after (within FORK_WAIT), so no constructor begins on
# the file, nor a store joins _stores, while the fork waits for those under way.
_stores_lock = threading.Lock()

_cut: dict[str, int] = {}
"""In a forked child, the real paths of the files a call or a constructor of the parent
was inside at the fork (past :data:`FORK_WAIT`), each with that parent's process id: a
store opened on one here is refused (:func:`refuse_if_cut`).  Empty in a process never
forked so; a child's own children keep it (the copied locks are theirs too)."""


class _Held(threading.local):
    """What a thread's fork hook took before its fork, let go after it: each thread's
    own, as two threads may fork at once and each must let go of its own."""

    def __init__(self) -> None:
        self.locks: list[threading.RLock] = []
        self.registry = False  # whether it holds _stores_lock
        self.cut: list[str] = []  # the files a call was inside past the wait
        self.parent = 0  # the process that forked


_held = _Held()


def opening(path: str) -> Opening:
    """A file store's constructor begins on ``path``, its lock held by this thread: a fork
    waits for it (:func:`opened` or :func:`not_opened` ends it).  Refused in a child
    forked while a call of the parent was inside that file (:func:`refuse_if_cut`)."""
    real = os.path.realpath(path)
    refuse_if_cut(path, real)
    begun = Opening(real)
    begun.lock.acquire()
    with _stores_lock:
        _openings.add(begun)
    return begun


def not_opened(begun: Opening | None) -> None:
    """The constructor ``begun`` raised: nothing to wait for (None: a private database,
    never waited for)."""
    if begun is None:
        return
    begun.lock.release()  # first: a fork waiting for it holds _stores_lock
    with _stores_lock:
        _openings.discard(begun)


def opened(store: _FileStore, begun: Opening) -> None:
    """Note ``store``, a SQLite file store just opened (its constructor ``begun``): a fork
    waits for its calls from now on."""
    begun.lock.release()  # first: a fork waiting for it holds _stores_lock
    with _stores_lock:
        _openings.discard(begun)
        _stores[store] = begun.path


def refuse_if_cut(path: str, real: str) -> None:
    """:class:`StoreError` if ``path`` (real path ``real``) is a file a thread of the
    parent was inside a call of, past :data:`FORK_WAIT`, when it forked this process: its
    SQLite locks, copied at the fork, say this process holds them, and no thread here
    lets them go (the parent's copy cannot be closed here either:
    :meth:`SqliteTaskStore._let_go_in_child`), so every write of a store here would wait
    out its timeout and fail "database is locked", a shared store's holding the file's
    write gate meanwhile (every other process's writes waiting behind it)."""
    parent = _cut.get(real)
    if parent is not None:
        raise StoreError(
            f"the SQLite store {path!r} cannot be opened in process {os.getpid()}: it was "
            f"forked from process {parent} while a thread there was inside a call of a "
            f"store on that file, or opening one, past the fork's wait ({FORK_WAIT:g} s). "
            "SQLite's locks on the file, copied at the fork, say this process holds them, "
            "and nothing here can let them go: every write would wait out its timeout and "
            "fail 'database is locked'. Fork while no call of the store is under way "
            "(before it is opened: gunicorn's post_fork, not --preload at import time), or "
            "start the process without a fork (multiprocessing's spawn, subprocess)"
        )


def _before_fork() -> None:
    """Take the lock of each file store of this process and of each constructor under
    way, within :data:`FORK_WAIT` in all; note the files of those it could not take."""
    deadline = time.monotonic() + FORK_WAIT
    _held.registry = _stores_lock.acquire(timeout=FORK_WAIT)  # not, if this thread holds it
    _held.parent = os.getpid()
    waits: list[tuple[threading.RLock, str]] = [
        (store._lock, path)
        for store, path in list(_stores.items())
        if store._opened_in == forks.current[0]  # a copy from an earlier fork: not in use
    ]
    waits += [(begun.lock, begun.path) for begun in list(_openings)]
    for lock, path in waits:
        if lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            _held.locks.append(lock)
        else:
            _held.cut.append(path)


def _after_fork() -> None:
    """Let go of what :func:`_before_fork` took (in the parent, and in the child)."""
    while _held.locks:
        _held.locks.pop().release()
    _held.cut.clear()
    if _held.registry:
        _held.registry = False
        _stores_lock.release()


def _after_fork_in_child() -> None:
    """:func:`_after_fork`, in the child: the files a call was inside are noted
    (:data:`_cut`), and the parent's constructors under way forgotten (no thread here
    runs them)."""
    for path in _held.cut:
        _cut.setdefault(path, _held.parent)
    _openings.clear()
    _after_fork()


if hasattr(os, "register_at_fork"):  # POSIX; Windows has no fork
    os.register_at_fork(
        before=_before_fork, after_in_parent=_after_fork, after_in_child=_after_fork_in_child
    )
