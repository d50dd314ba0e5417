"""A thread started where the interpreter's exit may refuse it.

At the interpreter's exit (:func:`~lldsched.threaded.lastwrites._shut_unwatched`, the exit
hook that shuts the schedulers no one shut down) Python 3.12.0 to 3.12.2 refuse to
start a thread ("can't create new thread at interpreter shutdown", CPython gh-113964),
in an ``atexit`` hook, in threading's own exit hooks and in every thread still running
alike.  Once that hook has begun (:func:`at_exit`), :func:`start` says False instead
of raising, and its caller does the thread's work itself or goes without it.  The
threads the exit can reach start so, each with its own answer:

* the shutdown's store steps (:meth:`Deadline.run
  <lldsched.threaded.deadline.Deadline.run>`): run on the exiting thread;
* the thread that keeps the leases while a shutdown waits
  (:func:`~lldsched.threaded.shared.leases.leases_kept`): none, the leases unrenewed for the
  exit's writes;
* the lease watch (:class:`~lldsched.threaded.shared.leasewatch.LeaseWatch`), which a worker
  of a shutdown a Ctrl-C cut short starts as it begins a run: that run unwatched;
* a PostgreSQL store's deadline watcher (:mod:`lldsched.stores.postgres.deadline`; a
  listener reconnecting as the process exits arms it): the round trip unwatched;
* its settle writer (:class:`~lldsched.stores.postgres.batch.SettleQueue`): the settle
  written by its caller;
* a shared SQLite store's write gate (:mod:`lldsched.stores.sqlite.gate`): the write
  tries for the lock on its own thread, within the store's ``timeout``.

The others start as before, and a refused one raises.  The exit starts none of them:
the timer, the workers and the listeners' steady thread (``start()``), a PostgreSQL
store's listener (a scheduler's construction), a delivery thread for events (at the
exit a scheduler never started publishes none, and a shutdown cut short still has its
steady one), the coroutine loop's executor joiner (a started loop's shutdown),
``aclose()``'s.  The coroutine loop itself, which a worker's awaitable at the exit may
start, raises to :meth:`CoroutineRunner.submit
<lldsched.threaded.coroutines.CoroutineRunner.submit>`, which records the run failed as
for any loop that cannot start.  docs/decisions/platforms.md, "At exit, Python 3.12.0 to
3.12.2 start no thread", says why for each.
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
