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

A timed ``lock.acquire(timeout=...)`` has no ``with`` block's entry: on the main thread a
Ctrl-C (SIGINT) that lands as it returns True raises ``KeyboardInterrupt`` before any
``try`` that would let the lock go, and the lock stays taken for good (the timer, the
workers, every later verb and a second shutdown then wait on it).  So the lock is taken
that way only in a :class:`Hold` (``with deadline.holding(lock) as hold:``), which on the
main thread keeps a SIGINT from the moment it starts taking the lock until it has let
it go, and hands it to the handler it kept it from then: a step under the lock is never
cut by a Ctrl-C, and a Ctrl-C while it waits for a lock another thread holds is raised
within :data:`ASK_EVERY` (docs/DECISIONS.md, "A Ctrl-C in a threaded scheduler's
shutdown").
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

__all__ = ["ASK_EVERY", "LOCK_GRACE", "Deadline", "Hold", "Waiters"]

LOCK_GRACE = 0.1
"""Seconds a lock is waited for even once the deadline has passed, the first time: a
thread that holds it for a moment (a worker settling a run) lets it go by then, even on
a loaded machine, so a shutdown out of time still closes what it must.  After one
acquisition found it held that long, the others of the same deadline only try."""

ASK_EVERY = 0.05
"""Seconds a :class:`Hold` on the main thread waits for a lock another thread holds
before it looks whether a Ctrl-C came meanwhile (it then gives up the wait and raises
it): the wait keeps SIGINT from its handler, since the wait's end is where a Ctrl-C
would leave the lock taken."""


class Deadline:
    """An instant on the monotonic clock, ``timeout`` seconds from now (``None``: never)."""

    __slots__ = ("_at", "_grace")

    def __init__(self, timeout: float | None, *, grace: float = LOCK_GRACE) -> None:
        self._at = None if timeout is None else time.monotonic() + timeout
        self._grace = grace  # 0.0 once a lock was found held past the deadline

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

    def holding(self, lock: threading.Lock) -> Hold:
        """``with deadline.holding(lock) as hold:``: ``lock`` taken before the deadline,
        or within :data:`LOCK_GRACE` of it (``hold.held``; False if the time ran out
        first), and let go at the end of the block; a Ctrl-C kept out of it
        (:class:`Hold`)."""
        return Hold(lock, self)

    def _take(self, lock: threading.Lock, caught: Callable[[], bool] | None) -> bool:
        """Take ``lock`` before the deadline, or within :data:`LOCK_GRACE` of it; False if
        the time ran out first, or ``caught()`` said True (asked every
        :data:`ASK_EVERY` seconds of the wait; ``None``: never)."""
        wait = self.remaining()
        at = None if wait is None else time.monotonic() + max(wait, self._grace)
        while True:
            left = None if at is None else max(0.0, at - time.monotonic())
            if caught is not None:
                left = ASK_EVERY if left is None else min(left, ASK_EVERY)
            if lock.acquire(timeout=-1 if left is None else left):
                return True
            if at is not None and time.monotonic() >= at:
                self._grace = 0.0  # held past the deadline: the next acquisitions only try
                return False
            if caught is not None and caught():
                return False

    def run(self, step: Callable[[], object], *, name: str) -> bool:
        """Run ``step`` on a daemon thread called ``name`` and wait for it until the
        deadline, or within :data:`LOCK_GRACE` of it as :meth:`holding` waits for a lock
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


class Hold:
    """The lock a :class:`Deadline` takes, for a ``with`` block (:meth:`Deadline.holding`):
    :attr:`held` says whether it was taken in time; let go at the end of the block, and
    in :meth:`wait`.

    On the main thread, with a Python handler for SIGINT in place (Python's own, which
    raises ``KeyboardInterrupt``, or the application's), a SIGINT is kept from it from
    the moment the hold starts taking the lock until the lock is let go, then handed to
    it: a Ctrl-C cannot land between the lock taken and the block entered, nor between
    the block's end and the lock let go, and the step under the lock runs whole.  A
    Ctrl-C kept while the lock is still waited for ends the wait (within
    :data:`ASK_EVERY`) and is raised at once, nothing held.  Elsewhere no signal lands
    (Python runs handlers on the main thread only), and nothing is kept.  Nested holds
    keep it in turn: the inner one hands it to the outer one's keeping."""

    __slots__ = ("_caught", "_deadline", "_handler", "_lock", "held")

    def __init__(self, lock: threading.Lock, deadline: Deadline) -> None:
        self.held = False
        self._lock = lock
        self._deadline = deadline
        self._handler: Callable[[int, FrameType | None], Any] | None = None  # kept from
        self._caught: tuple[int, FrameType | None] | None = None  # a SIGINT kept

    def __enter__(self) -> Hold:
        self._take()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self.held:
            self.held = False
            self._lock.release()
        self._hand_over()

    def wait(
        self, event: threading.Event, *, until: Deadline | None = None, by: Deadline | None = None
    ) -> bool:
        """The caller holds the lock and has cleared ``event``, which a thread sets under
        the lock when what the caller waits for may have happened: let the lock go (and
        a Ctrl-C kept meanwhile through, raised here), wait for ``event`` until the
        deadline (or ``until``, when the caller has something to do then), and take the
        lock back before the deadline (or ``by``).  True when the caller holds the lock
        again (re-test what it waits for); False when the time ran out before the lock
        could be taken back, and the caller does not hold it.

        Waiting on an event, not on a condition: ``Condition.wait(timeout)`` takes the
        lock back for as long as that takes (a store call that hangs under it)."""
        self.held = False
        self._lock.release()
        self._hand_over()
        event.wait((self._deadline if until is None else until).remaining())
        self._take(by)
        return self.held

    def _take(self, by: Deadline | None = None) -> None:
        """Keep SIGINT (on the main thread), then take the lock before the deadline (or
        ``by``); a Ctrl-C kept while it waited is raised at once, the lock not taken."""
        if threading.current_thread() is threading.main_thread():
            handler = signal.getsignal(signal.SIGINT)
            if callable(handler):  # else SIGINT raises nothing here (ignored, or fatal)
                try:
                    signal.signal(signal.SIGINT, self._keep)
                except ValueError:  # a subinterpreter's main thread: no signal lands there
                    pass
                else:
                    self._handler = handler
        caught = None if self._handler is None else self._was_caught
        try:
            self.held = (self._deadline if by is None else by)._take(self._lock, caught)
        finally:  # not taken (or another signal's handler raised): SIGINT's handler back
            if not self.held:
                self._hand_over()

    def _keep(self, signum: int, frame: FrameType | None) -> None:
        """The SIGINT handler while the lock is taken or held: keep it for later."""
        self._caught = (signum, frame)

    def _was_caught(self) -> bool:
        return self._caught is not None

    def _hand_over(self) -> None:
        """Put the handler kept from back, and hand it the SIGINT kept, if one came (the
        lock let go: ``KeyboardInterrupt`` raised from here).  Nothing if none kept."""
        handler = self._handler
        if handler is None:
            return
        self._handler = None
        signal.signal(signal.SIGINT, handler)  # a SIGINT pending is kept before it is put back
        caught, self._caught = self._caught, None
        if caught is not None:
            handler(*caught)


class Waiters(set[threading.Lock]):
    """Threads waiting until something another thread makes true under a lock, ``guard``,
    is true, each on a lock of its own: the wait to use on the caller's thread, where a
    Ctrl-C lands, instead of ``Condition.wait`` on ``guard``.

    ``Condition.wait`` takes ``guard`` back untimed, and on POSIX a SIGINT interrupts
    that acquisition: its ``KeyboardInterrupt`` came out with ``guard`` not taken, and
    the ``with guard:`` block around the wait then let go of the lock another thread
    held (a worker, the timer, the delivery thread, which raised ``RuntimeError`` as it
    let it go in turn).  Here ``guard`` is taken back by a ``with`` only, which a Ctrl-C
    leaves not taken and not entered, or taken and entered (docs/DECISIONS.md, "A Ctrl-C
    in a threaded scheduler's shutdown")::

        waiter = None
        while True:
            with guard:
                if waiter is not None:  # its time ran out: not to be let go now
                    waiters.discard(waiter)
                if what_it_waits_for():
                    return True
                ...  # out of time: return False
                waiter = waiters.waiter()
            waiter.acquire(timeout=left)  # let go by wake(), or the time ran out

    A waiter a Ctrl-C left behind is let go by the next :meth:`wake`, and forgotten.
    Empty is false, as a set's (the notifier's test, ``if waiters:``, costs no call)."""

    __slots__ = ()

    def waiter(self) -> threading.Lock:
        """A lock of the caller's own, taken, for :meth:`wake` to let go (caller holds
        ``guard``)."""
        waiter = threading.Lock()
        waiter.acquire()
        self.add(waiter)
        return waiter

    def wake(self) -> None:
        """Let every waiter go, once, and forget them (caller holds ``guard``)."""
        for waiter in self:
            waiter.release()
        self.clear()
