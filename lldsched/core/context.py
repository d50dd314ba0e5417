"""RunContext: what a running task can know about its own run, and its cancel flag.

Python cannot stop a thread from the outside, so lldsched never tries to.  A
timeout is *detected*: a run that outlasts its budget is recorded ``timed_out``
and goes down the retry path when it returns.  What can be stopped is code that
cooperates: an action that declares a parameter named ``ctx`` is called with a
:class:`RunContext`, whose flag is raised when the run's budget runs out or its
task is cancelled.  A loop that checks ``ctx.cancelled`` (or waits with
``ctx.wait(seconds)`` instead of ``time.sleep``) stops promptly; a blocking call
that does not look at the flag (a C extension, a socket without a timeout)
runs to its end, and the scheduler's worker stays busy until it does.

A coroutine action (``async def``) is different: it can be cancelled at its next
``await``, so the threaded runtime does cancel it at its timeout and on cancel or
pause (the flag is raised as well); the thread rule stays cooperative.

In a shared store (docs/CLUSTER.md) the run holds a lease: ``fencing_token`` is
its token, to hand to a sink that refuses older tokens, and ``lease_lost``
turns True (and the flag is raised, reason ``"lease"``) once the lease could not
be renewed: another process may be running the same slot by then.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import NamedTuple

from lldsched.checks import wait_seconds

__all__ = ["RunContext"]


class Rearmed(NamedTuple):
    """A run's flag deadline as the runtime last re-armed it (:meth:`RunContext._rearmed`)."""

    begun: float  # the instant the deadline counts from
    budget: float | None  # the timeout it was armed with (None: no deadline)


class RunContext:
    """One attempt of one task, as seen by the action that runs it.

    ``task_id``, ``name``, ``attempt`` (1 for a slot's first), ``due`` (epoch seconds)
    and ``worker`` describe the run; ``fencing_token`` is its claim's token in a shared
    store (``None`` otherwise).  :attr:`cancelled` and :meth:`wait` are the cooperative
    flag; :attr:`reason` says why it was raised.
    """

    __slots__ = (
        "_begun",
        "_budget",
        "_flag",
        "_lease_lost",
        "_reason",
        "attempt",
        "due",
        "fencing_token",
        "name",
        "task_id",
        "worker",
    )

    # Set by a runtime that re-armed the flag's deadline (a modify or a replace changed
    # the task's timeout during the run): the instant its deadline counts from, and the
    # budget it was last armed with.  Unset before, as an assignment in __init__ is a
    # cost every run with a context would pay; read and written only through
    # _rearmed() and _rearm(), which know that.
    _begun: float
    _budget: float | None

    def __init__(
        self,
        task_id: str,
        name: str,
        attempt: int,
        due: float,
        worker: int,
        fencing_token: int | None = None,
    ) -> None:
        self.fencing_token = fencing_token  # the claim's token in a shared store, else None
        self._lease_lost = False
        self.task_id = task_id
        self.name = name
        self.attempt = attempt
        self.due = due
        self.worker = worker
        self._flag = threading.Event()
        self._reason: str | None = None

    @property
    def cancelled(self) -> bool:
        """True once the flag is raised: the run's budget ran out, its task was
        cancelled, a newer slot cancelled it (``Overlap.CANCEL_OTHER``) or its lease
        was lost (see :attr:`reason`)."""
        return self._flag.is_set()

    @property
    def lease_lost(self) -> bool:
        """True once this run's lease in a shared store was lost: its record will be
        refused, and another process may run the slot again."""
        return self._lease_lost

    def lose_lease(self) -> None:
        """Mark the lease lost and raise the flag with reason ``"lease"`` (the runtime
        calls this when a renewal finds the lease gone)."""
        self._lease_lost = True
        self.cancel("lease")

    @property
    def reason(self) -> str | None:
        """Why the flag was raised: ``"timeout"``, ``"cancelled"``, ``"overlap"``
        (``Overlap.CANCEL_OTHER``) or ``"lease"``; for a coroutine run also ``"paused"``
        or ``"shutdown"`` (a thread's run is not flagged by a pause).  ``None`` while
        clear."""
        return self._reason

    def wait(self, timeout: float | timedelta | None = None) -> bool:
        """Sleep up to ``timeout`` seconds (or a ``timedelta``; real time), returning early
        if cancelled.  A timeout at or below 0 only reads the flag.

        Returns True when the flag is raised: the cooperative replacement for
        ``time.sleep`` inside an action.
        """
        if timeout is None:
            return self._flag.wait()
        return self._flag.wait(wait_seconds(timeout, name="wait() timeout", at_least=None))

    def cancel(self, reason: str) -> None:
        """Raise the flag (the runtimes call this; the first reason is kept)."""
        if self._reason is None:
            self._reason = reason
        self._flag.set()

    def _rearmed(self) -> Rearmed | None:
        """What the runtime's latest re-arm of the flag's deadline set (:meth:`_rearm`),
        or None while it was never re-armed (its budget is then the one the run began
        with).  The runtime's (the threaded timer's ``_retime`` and a run's record)."""
        try:
            return Rearmed(self._begun, self._budget)
        except AttributeError:  # never re-armed: the slots are unset (see above)
            return None

    def _rearm(self, begun: float, budget: float | None) -> None:
        """The runtime re-armed the flag's deadline: it counts from ``begun`` (the run's
        begin, or the first re-arm's instant) with ``budget`` (the task's timeout now;
        None: no deadline)."""
        self._begun = begun
        self._budget = budget

    def __repr__(self) -> str:
        state = f"cancelled={self._reason!r}" if self.cancelled else "running"
        return (
            f"<RunContext {self.task_id} attempt {self.attempt} on worker {self.worker}: {state}>"
        )
