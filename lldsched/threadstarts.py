"""A thread started where the interpreter's exit may refuse it.

At the interpreter's exit (:func:`~lldsched.threaded.control._shut_unwatched`, the exit
hook that shuts the schedulers no one shut down) Python 3.12.0 to 3.12.2 refuse to
start a thread ("can't create new thread at interpreter shutdown", CPython gh-113964),
in an ``atexit`` hook, in threading's own exit hooks and in every thread still running
alike.  Once that hook has begun (:func:`at_exit`), :func:`start` says False instead
of raising, and its caller does the thread's work itself or goes without it: the
threaded runtime's steps run on the exiting thread (:mod:`lldsched.threaded.deadline`),
a PostgreSQL store's round trip goes unwatched by its client-side deadline
(:mod:`lldsched.stores.postgres_deadline`; its listener reconnecting as the process
exits had ended in a traceback).  Elsewhere a refused thread still raises
(docs/decisions/platforms.md, "At exit, Python 3.12.0 to 3.12.2 start no thread").
"""

from __future__ import annotations

import threading

__all__ = ["at_exit", "start"]

_exiting = False
"""Set by :func:`at_exit`: the interpreter is exiting, and may refuse new threads."""


def at_exit() -> None:
    """The interpreter's exit hook runs: from now on a thread the interpreter refuses to
    start is no error (:func:`start`)."""
    global _exiting
    _exiting = True


def start(thread: threading.Thread) -> bool:
    """Start ``thread``: True.  False if the interpreter's exit refuses it (Python 3.12.0
    to 3.12.2 start none once the main thread has returned); the caller then does the
    thread's work itself, or goes without it.  Raises as ``thread.start()`` does
    otherwise."""
    try:
        thread.start()
    except RuntimeError:
        if not _exiting:
            raise
        return False
    return True
