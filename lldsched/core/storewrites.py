"""What the core does when its store fails a write after the fact, and when it is closed.

The design (docs/DECISIONS.md, "A store that raises"): a registration or a change of
definition whose write fails raises and changes nothing; a later transition whose
write fails is logged, and the in-memory registry stays authoritative.

A store closed before its scheduler (``store.close()`` while the scheduler runs, or
a ``with`` block of the store that ends before the scheduler's) fails *every* later
write the same way, and logging each with its traceback buried the one thing to do.
So, here and only here:

* the first write a closed store refuses (:class:`~lldsched.errors.StoreClosedError`)
  is said **once**, at error level, without a traceback: which store, that the
  scheduler goes on in memory and its changes are no longer stored, and what to do;
  each later one is counted (:attr:`StoreWrites.missed`) and logged at debug level
  (a shared store's claims, renewals and change feed, which the timer calls at every
  wake, are told apart the same way: :meth:`StoreWrites.found_closed`);
* a verb (register, pause, cancel, modify, remove, ...) refuses with a
  ``StoreClosedError`` naming the store *before* it changes anything
  (:meth:`StoreWrites.check_open`): a caller is there to be told, and a change it
  believes stored would be lost at the next restart.

Any other failure keeps the design above: logged with its traceback, each time.
"""

from __future__ import annotations

import logging

from lldsched.errors import StoreClosedError
from lldsched.persistence import TaskStore

__all__ = ["ADVICE", "StoreWrites", "check_store", "store_failed"]

log = logging.getLogger("lldsched")

ADVICE = (
    "shut the scheduler down before closing its store (put the scheduler's `with` "
    "block inside the store's)"
)
"""What to do about a store closed before its scheduler, in every message that says so."""


class StoreWrites:
    """The core's account of the calls its store failed (one per core with a store)."""

    __slots__ = ("closed", "missed", "store")

    def __init__(self, store: TaskStore) -> None:
        self.store = store
        self.closed = False  # a call found the store closed (said once, in the log)
        self.missed = 0  # calls a closed store refused: writes, and a shared store's reads

    def failed(self, error: Exception, verb: str, task_id: str) -> None:
        """A write of ``task_id`` (``verb``: ``"save"`` or ``"delete"``) raised ``error``
        after the change it describes was made: logged (called in an ``except`` block)."""
        if not self.found_closed(error, f"{verb} of {task_id}"):
            log.exception("store %r failed to %s %s", self.store, verb, task_id)

    def found_closed(self, error: Exception, doing: str) -> bool:
        """True if ``error`` says the store is closed (then logged here: at error level
        the first time, naming the store and what to do, at debug level after); False
        for any other error, which the caller logs as it always did.  ``doing`` is
        what failed (``"save of task-1"``, ``"claim"``)."""
        if not isinstance(error, StoreClosedError):
            return False
        self.missed += 1
        if self.closed:
            log.debug("store %r is closed: %s not done", self.store, doing)
            return True
        self.closed = True
        log.error(
            "store %r was closed while its scheduler still runs (found at a %s): nothing "
            "the scheduler does from now on is stored (a restart will not see it), and its "
            "verbs raise StoreClosedError; %s",
            self.store,
            doing,
            ADVICE,
        )
        return True

    def check_open(self, verb: str, task: str) -> None:
        """Raise :class:`StoreClosedError` if the store is closed (it says so, or a write
        found it so), before ``verb`` changes anything of ``task`` (an id, or a name)."""
        store = self.store
        if self.closed or getattr(store, "closed", False) is True:
            raise StoreClosedError(
                f"cannot {verb} {task!r}: the store {store!r} is closed but its scheduler "
                f"still runs, and nothing was changed; {ADVICE}"
            )


def check_store(writes: StoreWrites | None, verb: str, task_id: str) -> None:
    """A core's verb: refuse ``verb`` on ``task_id`` before it changes anything if the
    store is closed (:meth:`StoreWrites.check_open`); ``None``: no store, nothing to check."""
    if writes is not None:
        writes.check_open(verb, task_id)


def store_failed(writes: StoreWrites | None, error: Exception, verb: str, task_id: str) -> None:
    """A core's write that failed after the change it describes was made: logged by
    :meth:`StoreWrites.failed` (called in an ``except`` block, so with a store)."""
    assert writes is not None  # a core makes one with its store
    writes.failed(error, verb, task_id)
