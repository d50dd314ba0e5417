"""Forks: a store opened in one process is refused in a child forked from it, and
refuses to be pickled for another process.

A store object is one process's: its connection (SQLite's file locks are not
inherited by a child, and a PostgreSQL socket carries one session), its node id,
the leases it holds, and for an unshared SQLite store the claim on the file (an
``flock`` the child inherits, and lets go of at the fork: :mod:`lldsched.stores.claim`;
used there, the store would run every task a second time).  A server that opens the
store before it forks its workers (gunicorn's ``--preload``, a module-level store)
would give every worker the same one.  So each store notes the process that opened
it, and every use from another process raises :class:`~lldsched.errors.StoreError`
saying to open the store after the fork (docs/CLUSTER.md).  The check comes before the
store's lock is waited for (each store's ``_refuse_if_forked``): a thread of the parent
inside a store call at the fork leaves the child's copy of that lock held for good.
``close()`` alone is let through, and lets go of the child's copies only.

Which process this is, is kept by :func:`os.register_at_fork` rather than asked of
the kernel at every use: the check is one comparison.  A server that forks in C
without running Python's fork hooks (uWSGI, unless ``py-call-osafterfork = true``)
leaves it unchanged, so there the refusal does not fire; a scheduler made where
uWSGI will fork it says so (:mod:`lldsched.threaded.forked`).

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

import os

from lldsched.errors import StoreError

__all__ = ["current", "not_sent", "refuse"]

current = [os.getpid()]
"""This process's id, as a one-element list updated in every forked child."""

if hasattr(os, "register_at_fork"):  # POSIX; Windows has no fork
    os.register_at_fork(after_in_child=lambda: current.__setitem__(0, os.getpid()))


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
