"""Forks: a store opened in one process is refused in a child forked from it (a private
one only if a call of it was under way at the fork), and refuses to be pickled for
another process.

A store object is one process's: its connection (SQLite's file locks are not
inherited by a child, and a PostgreSQL socket carries one session), its node id,
the leases it holds, and for an unshared SQLite store the claim on the file (an
``flock`` the child inherits, and lets go of at the fork: :mod:`lldsched.stores.sqlite.claim`;
used there, the store would run every task a second time).  A server that opens the
store before it forks its workers (gunicorn's ``--preload``, a module-level store)
would give every worker the same one.  So each store notes the process that opened
it, and every use from another process raises :class:`~lldsched.errors.StoreError`
saying to open the store after the fork (docs/CLUSTER.md).  The check comes before the
store's lock is waited for (each store's ``_refuse_if_forked``): a thread of the parent
inside a store call at the fork leaves the child's copy of that lock held for good.
``close()`` alone is let through, and lets go of the child's copies only.

**A private store** (:class:`~lldsched.stores.memory.InMemoryTaskStore`, an SQLite
``":memory:"`` database) has nothing another process shares: the child's copy is its
own, and it is let through, unless another thread of the parent was inside a call of it
at the fork (a running scheduler saving as gunicorn forks its workers).  That call never
ends in the child, which has no such thread: the copy of the store's lock is held for
good (every call there, reads included, waited for it for good) and what the call was
writing may be half-written.  So each private store is noted here (:func:`private`, a
weak reference: a store collected is forgotten), and in the child a hook tries each one's
lock: one held is torn, its lock replaced by a :class:`Torn`, whose every acquisition
raises :func:`torn`'s :class:`~lldsched.errors.StoreError` (what happened, and to open
the store after the fork).  Every call of a store takes its lock, so each refuses there,
at no cost to the parent's calls; ``close()`` alone returns (:func:`is_torn`).  A lock
the forking thread holds itself (an ``RLock`` it re-enters: the SQLite store's) is not
torn: that call goes on in the child and ends.  The memory store's plain ``Lock`` says
not who holds it, so it is torn whichever thread held it (the forking thread can hold it
only if a signal handler or a finaliser forks inside a store call; that call still ends
on the lock it took).

Which process this is, is kept by :func:`os.register_at_fork` rather than asked of
the kernel at every use: the check is one comparison.  A server that forks in C
without running Python's fork hooks (uWSGI, unless ``py-call-osafterfork = true``)
leaves it unchanged, so there the refusal does not fire (nor is a private store torn
at the fork seen: its calls there wait for good); a scheduler made where
uWSGI will fork it says so (:mod:`lldsched.threaded.forked`), and so does a durable
store opened there (:func:`opened_before_uwsgi_forks`): its copy in every worker would
share the master's connection, file claim and write gate, unrefused
(:mod:`lldsched.forkhooks`).

The ``spawn`` and ``forkserver`` start methods of :mod:`multiprocessing` (the
default on macOS and Windows, and on Linux from Python 3.14) do not fork the
parent: they pickle a ``Process``'s target and arguments and unpickle them in a
fresh interpreter.  A store handed to such a child would arrive as a copy without
its connection (or not at all: a lock cannot be pickled), so every store refuses to
be pickled, with :func:`not_sent`'s :class:`~lldsched.errors.StoreError`, raised in
the parent by ``Process.start()`` (``spawn`` and ``forkserver`` pickle there), before
any child runs.  Open the store in the child, from its path or dsn.
"""

from __future__ import annotations

import logging
import os
import weakref
from typing import Any, NoReturn, Protocol

from lldsched.errors import StoreError
from lldsched.forkhooks import UWSGI_SETTINGS, uwsgi_forks_unhooked
from lldsched.logs import STORE

__all__ = [
    "Torn",
    "current",
    "is_torn",
    "not_sent",
    "opened_before_uwsgi_forks",
    "private",
    "refuse",
    "torn",
]

log = logging.getLogger(STORE)

current = [os.getpid()]
"""This process's id, as a one-element list updated in every forked child."""


class _Private(Protocol):
    """A private store, as the fork hook sees it (a Protocol: the stores import this)."""

    _lock: Any  # a threading.Lock or RLock; a Torn in a child forked while it was held


_private: weakref.WeakKeyDictionary[_Private, str] = weakref.WeakKeyDictionary()
"""The private stores of this process still alive, each with its name as messages show it."""


def private(store: _Private, name: str) -> None:
    """Note ``store``, a private one just opened (``name`` as messages show it): a child
    forked from here keeps its copy, unless a call of it was under way at the fork."""
    _private[store] = name


class Torn:
    """Stands in a forked child for the lock of a private store that another thread of the
    parent held at the fork: every acquisition raises :func:`torn`'s StoreError."""

    __slots__ = ("_forked_in", "_store")

    def __init__(self, store: str, forked_in: int) -> None:
        self._store = store
        self._forked_in = forked_in

    def acquire(self, blocking: bool = True, timeout: float = -1) -> NoReturn:
        raise torn(self._store, self._forked_in)

    def __enter__(self) -> NoReturn:
        self.acquire()

    def __exit__(self, *exc: object) -> None:  # never reached: __enter__ raised
        """Nothing to let go."""

    def locked(self) -> bool:
        return True


def is_torn(lock: object) -> bool:
    """Whether ``lock``, a store's, is a :class:`Torn` (for ``close()``, which returns)."""
    return isinstance(lock, Torn)


def _after_fork_in_child() -> None:
    """Note this process's id, and tear each private store whose lock was held at the fork."""
    forked_in, current[0] = current[0], os.getpid()
    for store, name in list(_private.items()):
        lock = store._lock
        if lock.acquire(blocking=False):  # free, or the forking thread's own (re-entered)
            lock.release()
        else:  # held by a thread the child does not have
            store._lock = Torn(name, forked_in)
            del _private[store]  # a fork from this child copies the Torn


if hasattr(os, "register_at_fork"):  # POSIX; Windows has no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)


def opened_before_uwsgi_forks(store: str) -> None:
    """Warn, once for ``store`` (its name as messages show it), a durable one just opened,
    if uWSGI will fork its workers from here without the fork hooks
    (:func:`uwsgi_forks_unhooked`): its copy in every worker is not refused there."""
    if uwsgi_forks_unhooked():
        log.warning(
            "the store %s is opened in uWSGI's master, before it forks the workers, and "
            "uWSGI runs no fork hook: every worker would use its copy (the master's "
            "connection, file claim and write gate) at once, without an error. %s",
            store,
            UWSGI_SETTINGS,
        )


def refuse(store: str, opened_in: int) -> StoreError:
    """The error for ``store`` (its name as messages show it), opened in ``opened_in``
    and used in this process."""
    return StoreError(
        f"the store {store} was opened in process {opened_in} and is used in process "
        f"{current[0]}, a child forked from it: a store (its connection, its node id, "
        "its leases and file claim) belongs to the process that opened it. Open the store "
        "in each process after the fork (gunicorn: in post_fork, not with --preload at "
        "import time)"
    )


def torn(store: str, forked_in: int) -> StoreError:
    """The error for ``store``, a private one (its name as messages show it), that another
    thread of ``forked_in`` was inside a call of when that process forked."""
    return StoreError(
        f"the store {store} was inside a call in another thread of process {forked_in} when "
        f"that process forked, and is used in process {current[0]}, forked from it: that "
        "call never ends here, so the store's copy here may be half-written, and its lock "
        "is held for good. A private store is a child's own copy only if no call of it is "
        "under way at the fork. Open the store in each process after the fork (gunicorn: "
        "in post_fork, not with --preload at import time)"
    )


def not_sent(store: str) -> StoreError:
    """The error for pickling ``store`` (its name as messages show it), which is how
    ``multiprocessing``'s spawn and forkserver start methods send it to a child."""
    return StoreError(
        f"the store {store} cannot be pickled to another process: a store (its connection, "
        "its node id, its leases and file claim) belongs to the process that opened it. "
        "multiprocessing's spawn and forkserver start methods (the default on macOS, Windows "
        "and Python 3.14) pickle a Process's arguments; pass the store's path or dsn instead "
        "and open the store in the child"
    )
