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
not do as it is (docs/decisions/threaded.md, "A store that hangs").

Taking the lock in time is not enough when the step itself calls the store under it
(shutdown gives back the claims it dropped, records the coroutines it cancelled,
writes the settles held back for a batch): a call that hangs there would hold the
caller.  :meth:`Deadline.run` runs such a step on a thread of its own and waits for it
until the deadline; a step still stuck then holds the lock until the store returns,
and the steps after it find the lock held and are left undone, as above.

A timed ``lock.acquire(timeout=...)`` has no ``with`` block's entry: on the main thread a
signal whose Python handler raises (a Ctrl-C's ``KeyboardInterrupt``; a SIGTERM handler
that calls ``sys.exit``) and that lands as it returns True raises before any ``try`` that
would let the lock go, and the lock stays taken for good (the timer, the workers, every
later verb and a second shutdown then wait on it).  So the lock is taken that way only
in a :class:`Hold` (``with deadline.holding(lock) as hold:``), which on the main thread
keeps every signal that has a Python handler from the moment it starts taking the lock
until it has let it go, and hands it to the handler it kept it from then: a step under
the lock is never cut by a signal, and one that comes while it waits for a lock another
thread holds is handed over within :data:`ASK_EVERY` (docs/decisions/simulation.md, "A Ctrl-C in a
threaded scheduler's shutdown", "Any signal a Python handler raises from, not only
Ctrl-C").

At the interpreter's exit (:func:`~lldsched.threaded.lastwrites._shut_unwatched`) Python
3.12.0 to 3.12.2 refuse to start a thread ("can't create new thread at interpreter
shutdown", CPython gh-113964): there :func:`~lldsched.threadstarts.start` says False
instead of raising, and the step runs on the calling thread, bounded only by the
store's own timeouts (docs/decisions/platforms.md, "Python 3.12 and 3.13").
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from itertools import compress
from types import FrameType, TracebackType
from typing import Any, cast

from lldsched.threadstarts import start

__all__ = ["ASK_EVERY", "LOCK_GRACE", "Deadline", "Flag", "Hold", "Waiters"]

Handler = Callable[[int, FrameType | None], Any]
"""A Python signal handler, as ``signal.signal`` takes it."""

LOCK_GRACE = 0.1
"""Seconds a lock is waited for even once the deadline has passed, the first time: a
thread that holds it for a moment (a worker settling a run) lets it go by then, even on
a loaded machine, so a shutdown out of time still closes what it must.  After one
acquisition found it held that long, the others of the same deadline only try."""

ASK_EVERY = 0.05
"""Seconds a :class:`Hold` on the main thread waits for a lock another thread holds
before it looks whether a signal came meanwhile (it then gives up the wait and hands it
over): the wait keeps the signals from their handlers, since the wait's end is where one
that raises would leave the lock taken."""

_SIGNALS = sorted(signal.valid_signals())
"""Every signal of the platform (62 on Linux), in the order of their numbers: the order
a :class:`Hold` keeps them in and hands them over."""


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
        first), and let go at the end of the block; the signals kept out of it
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
        whatever it was doing, once the store returns).  Where the interpreter's exit
        refuses a thread (:func:`start`), ``step`` runs on this one: True."""
        thread = threading.Thread(target=step, name=name, daemon=True)
        if not start(thread):  # the interpreter's exit on Python 3.12.0-3.12.2
            step()
            return True
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

    On the main thread, every signal with a Python handler in place (SIGINT's own,
    which raises ``KeyboardInterrupt``; an application's SIGTERM handler that calls
    ``sys.exit``, or raises its own exception) is kept from it from the moment the hold
    starts taking the lock until the lock is let go, then handed to it: a signal cannot
    land between the lock taken and the block entered, nor between the block's end and
    the lock let go, and the step under the lock runs whole.  A signal kept while the
    lock is still waited for ends the wait (within :data:`ASK_EVERY`) and is handed
    over at once, nothing held.  Elsewhere no signal lands (Python runs handlers on the
    main thread only), and nothing is kept; nor is a signal without a Python handler
    (ignored, or its default action, which raises nothing).  Nested holds keep them in
    turn: the inner one hands them to the outer one's keeping."""

    __slots__ = ("_caught", "_deadline", "_handlers", "_kept", "_lock", "_over", "held")

    def __init__(self, lock: threading.Lock, deadline: Deadline) -> None:
        self.held = False
        self._lock = lock
        self._deadline = deadline
        self._kept: list[int] = []  # the signals kept from their handlers now
        self._handlers: dict[int, Handler] = {}  # the handler each was kept from
        self._caught: dict[int, FrameType | None] = {}  # each signal kept that came
        self._over = True  # nothing kept: a signal to :meth:`_keep` goes to its handler

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
        self, event: Flag, *, until: Deadline | None = None, by: Deadline | None = None
    ) -> bool:
        """The caller holds the lock and has cleared ``event``, which a thread sets under
        the lock when what the caller waits for may have happened: let the lock go (and
        a signal kept meanwhile through, handed over here), wait for ``event`` until the
        deadline (or ``until``, when the caller has something to do then), and take the
        lock back before the deadline (or ``by``).  True when the caller holds the lock
        again (re-test what it waits for); False when the time ran out before the lock
        could be taken back, and the caller does not hold it.

        Waiting on an event, not on a condition: ``Condition.wait(timeout)`` takes the
        lock back for as long as that takes (a store call that hangs under it); on a
        :class:`Flag`, not a ``threading.Event``, whose wait a signal can break."""
        self.held = False
        self._lock.release()
        self._hand_over()
        event.wait((self._deadline if until is None else until).remaining())
        self._take(by)
        return self.held

    def _take(self, by: Deadline | None = None) -> None:
        """Keep the signals (on the main thread), then take the lock before the deadline
        (or ``by``); a signal kept while it waited is handed over at once, the lock not
        taken."""
        try:
            if threading.current_thread() is threading.main_thread():
                self._keep_signals()
            caught = self._was_caught if self._kept else None
            self.held = (self._deadline if by is None else by)._take(self._lock, caught)
        finally:  # not taken (or a signal came as they were kept): their handlers back
            if not self.held:
                self._hand_over()

    def _keep_signals(self) -> None:
        """Keep every signal that has a Python handler from it (:meth:`_keep`).  Changing
        one runs the handlers of the signals that came before: one that raises stops
        here, and the caller puts back those kept so far.

        The handlers are read and sifted by ``map`` and ``compress``, in C: a Python loop
        over every signal ran a few lines a signal, most of a hold's time, for the few
        that have a Python handler (an ignored one, or one left to its default action,
        raises nothing here)."""
        read = list(map(signal.getsignal, _SIGNALS))
        callables = compress(zip(_SIGNALS, read, strict=True), map(callable, read))
        python = cast("Iterator[tuple[int, Handler]]", callables)  # sifted by callable()
        wanted = [(signum, _real(signum, handler)) for signum, handler in python]
        self._over = False
        kept, handlers = self._kept, self._handlers
        for signum, handler in wanted:  # said kept first: a signal may land after each call
            handlers[signum] = handler
            kept.append(signum)
            try:
                signal.signal(signum, self._keep)
            except ValueError:  # a subinterpreter's main thread: no signal lands there
                kept.pop()
                return

    def _keep(self, signum: int, frame: FrameType | None) -> None:
        """Each kept signal's handler while the lock is taken or held: keep it for later
        (once, as Python runs a handler once for the same signal come twice).  Once the
        hold is over, the signal goes to its handler: one left in place by a put back
        that a signal cut short (:meth:`_hand_over`)."""
        if self._over:
            self._handlers[signum](signum, frame)
        else:
            self._caught.setdefault(signum, frame)

    def _was_caught(self) -> bool:
        return bool(self._caught)

    def _hand_over(self) -> None:
        """Put the handlers kept from back, and hand each its signal kept, if one came
        (the lock let go: ``KeyboardInterrupt``, or ``SystemExit``, raised from here).
        Each gets its own, even when one before raised: the exception raised is the
        last one's, the earlier as its ``__context__``, as Python raises a handler's
        exception while an earlier one is on its way.  Nothing if none kept.

        Over first (an attribute: no signal lands before it is stored): a signal that
        comes as the handlers are put back goes to its own at once, through the keeper
        if that one is not back yet, and its exception leaves the rest with the keeper,
        which passes each signal on from then on (the next hold puts the handler back:
        :func:`_real`)."""
        kept = self._kept
        if not kept:
            return
        self._over = True
        self._kept = []
        caught, self._caught = self._caught, {}
        handlers = self._handlers
        try:
            for signum in kept:
                signal.signal(signum, handlers[signum])
        finally:  # every handler back, or passed on to: each signal kept goes to it
            _hand([(signum, handlers[signum]) for signum in kept if signum in caught], caught)


def _real(signum: int, handler: Handler) -> Handler:
    """``handler``, or if it is the keeper of a hold that is over (left in place by a put
    back a signal cut short), the handler that one kept it from."""
    hold = getattr(handler, "__self__", None)
    while isinstance(hold, Hold) and hold._over and handler == hold._keep:
        handler = hold._handlers[signum]
        hold = getattr(handler, "__self__", None)
    return handler


def _hand(handlers: list[tuple[int, Handler]], caught: dict[int, FrameType | None]) -> None:
    """Call each of ``handlers`` with its signal ``caught``, each even if one before
    raised."""
    if handlers:
        (signum, handler), rest = handlers[0], handlers[1:]
        try:
            handler(signum, caught[signum])
        finally:
            _hand(rest, caught)


class Waiters(set[threading.Lock]):
    """Threads waiting until something another thread makes true under a lock, ``guard``,
    is true, each on a lock of its own: the wait to use on the caller's thread, where a
    Ctrl-C lands, instead of ``Condition.wait`` on ``guard``.

    ``Condition.wait`` takes ``guard`` back untimed, and on POSIX a SIGINT interrupts
    that acquisition: its ``KeyboardInterrupt`` came out with ``guard`` not taken, and
    the ``with guard:`` block around the wait then let go of the lock another thread
    held (a worker, the timer, the delivery thread, which raised ``RuntimeError`` as it
    let it go in turn).  Here ``guard`` is taken back by a ``with`` only, which a Ctrl-C
    leaves not taken and not entered, or taken and entered (docs/decisions/simulation.md, "A Ctrl-C
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


class Flag:
    """A :class:`threading.Event` (``set``, ``clear``, ``is_set``, ``wait``) whose wait a
    signal cannot break: the one to wait on from the caller's thread, where a signal's
    handler raises.

    ``Event.wait`` is ``Condition.wait`` on the event's own lock, which it takes back
    untimed as it ends, an acquisition a signal interrupts on POSIX: a handler that
    raised while the thread inside ``set()`` held that lock let its ``with`` block let
    go of the lock that thread held, and ``set()`` raised ``RuntimeError`` (a worker
    settling a run under the scheduler's lock, the first shutdown() on another thread;
    python/cpython#118433).  Here the waiter waits on a lock of its own
    (:class:`Waiters`), which ``set()`` lets go, and takes the flag's guard only with
    ``with``: a signal leaves it taken and entered, or neither.  Its handler's exception
    reaches the waiter, and the setter never sees it (docs/decisions/simulation.md, "No
    `Event.wait` on the caller's thread")."""

    __slots__ = ("_guard", "_set", "_waiters")

    def __init__(self) -> None:
        # Guards _waiters, and _set as set() raises it with the waiters let go (is_set()
        # and clear() touch _set alone, without it).  Taken last: a flag is set under the
        # scheduler's lock, and nothing is waited for while it is held.
        self._guard = threading.Lock()
        self._set = False
        self._waiters = Waiters()

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        with self._guard:
            self._set = True
            waiters = self._waiters
            if waiters:
                waiters.wake()

    def clear(self) -> None:
        self._set = False

    def wait(self, timeout: float | None = None) -> bool:
        """Until the flag is set, or ``timeout`` seconds (``None``: no bound) pass: True
        if it was set (though it may be cleared since, as ``Event.wait`` says), else
        False.  A waiter a signal's exception took away is let go by the next
        :meth:`set`."""
        with self._guard:
            if self._set:
                return True
            waiter = self._waiters.waiter()
        if waiter.acquire(timeout=-1 if timeout is None else timeout):
            return True  # let go by set()
        with self._guard:
            self._waiters.discard(waiter)
            return self._set
