"""Deadline: the time a bounded ``shutdown(timeout=...)`` has left, and the scheduler's
lock taken, or waited on, within it.

The core writes its store under the scheduler's lock, so a store whose ``save`` hangs
holds that lock for as long as it hangs.  ``with lock:`` cannot give up, and neither
can ``Condition.wait(timeout)``: its timeout bounds the wait for a notification, then it
takes the lock back for as long as that takes.  A shutdown that waited that way
returned after the hang, not after its timeout (a save blocked 8 s made
``shutdown(timeout=1)`` return after 7.7 s).  Here the lock is taken with
``acquire(timeout=...)``, and a wait for something notified under the lock is a wait on
a :class:`threading.Event` the notifier sets, with the lock taken back the same bounded
way: each says False when the time ran out first, and the caller leaves what it could
not do as it is (docs/DECISIONS.md, "A store that hangs").

Taking the lock in time is not enough when the step itself calls the store under it
(shutdown gives back the claims it dropped, records the coroutines it cancelled,
writes the settles held back for a batch): a call that hangs there would hold the
caller.  :meth:`Deadline.run` runs such a step on a thread of its own and waits for it
until the deadline; a step still stuck then holds the lock until the store returns,
and the steps after it find the lock held and are left undone, as above.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

__all__ = ["LOCK_GRACE", "Deadline"]

LOCK_GRACE = 0.1
"""Seconds a lock is waited for even once the deadline has passed, the first time: a
thread that holds it for a moment (a worker settling a run) lets it go by then, even on
a loaded machine, so a shutdown out of time still closes what it must.  After one
acquisition found it held that long, the others of the same deadline only try."""


class Deadline:
    """An instant on the monotonic clock, ``timeout`` seconds from now (``None``: never)."""

    __slots__ = ("_at", "_grace")

    def __init__(self, timeout: float | None) -> None:
        self._at = None if timeout is None else time.monotonic() + timeout
        self._grace = LOCK_GRACE  # 0.0 once a lock was found held past the deadline

    def before(self, seconds: float) -> Deadline:
        """A deadline ``seconds`` earlier than this one (never, for one that is never)."""
        earlier = Deadline(None)
        if self._at is not None:
            earlier._at = self._at - seconds
        return earlier

    def remaining(self) -> float | None:
        """Seconds left (0.0 once passed); ``None`` without a bound."""
        at = self._at
        return None if at is None else max(0.0, at - time.monotonic())

    def acquire(self, lock: threading.Lock) -> bool:
        """Take ``lock`` before the deadline, or within :data:`LOCK_GRACE` of it; False
        if the time ran out first, and then the caller does not hold it."""
        wait = self.remaining()
        if wait is None:
            return lock.acquire()
        if lock.acquire(timeout=max(wait, self._grace)):
            return True
        self._grace = 0.0  # held past the deadline: the next acquisitions only try
        return False

    @contextlib.contextmanager
    def holding(self, lock: threading.Lock) -> Iterator[bool]:
        """``with deadline.holding(lock) as held:``: :meth:`acquire`, released at the end
        of the block if it was taken (``held``)."""
        held = self.acquire(lock)
        try:
            yield held
        finally:
            if held:
                lock.release()

    def run(self, step: Callable[[], object], *, name: str) -> bool:
        """Run ``step`` on a daemon thread called ``name`` and wait for it until the
        deadline, or within :data:`LOCK_GRACE` of it as :meth:`acquire` waits for a lock
        (a step bounded by the same time left ends a moment after it): True if it ended
        by then, False if it is still going (a store call that hangs; it ends on its own,
        whatever it was doing, once the store returns)."""
        thread = threading.Thread(target=step, name=name, daemon=True)
        thread.start()
        wait = self.remaining()
        thread.join(None if wait is None else wait + self._grace)
        if thread.is_alive():
            self._grace = 0.0  # out of time: the next steps only try
            return False
        return True

    def wait(
        self, signal: threading.Event, lock: threading.Lock, *, until: Deadline | None = None
    ) -> bool:
        """The caller holds ``lock`` and has cleared ``signal``, which a thread sets under
        ``lock`` when what the caller waits for may have happened: release the lock, wait
        for ``signal`` until the deadline (or the earlier ``until``, when the caller has
        something to do then), and take the lock back before this deadline.  True when
        the caller holds the lock again (re-test what it waits for); False when the time
        ran out before the lock could be taken back, and the caller does not hold it."""
        lock.release()
        signal.wait((self if until is None else until).remaining())
        return self.acquire(lock)
