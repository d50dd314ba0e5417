"""EventDispatcher: the threaded runtime's delivery of events to listeners.

A listener is anything with ``on_event(event)``, or a plain callable taking the
event.  The threaded runtime never calls one on the hot path: the core publishes
each :class:`~lldsched.model.TaskEvent` into an :class:`EventDispatcher` (an O(1)
append), and one delivery thread calls the listeners in order, one event at a
time.  So a raising listener is logged and skipped, and a slow one delays only
the listeners after it, never the timer or a worker.

**Who hears an event**: the listeners registered when it was published and still
registered when its delivery begins.  A listener added while earlier events wait in
the queue hears none of them (each event keeps a reference to the listeners' list as
it was published: the list is replaced, never changed in place), and once
``remove``/``remove_listener`` returns, a listener hears no event whose delivery had
not begun, even one published before (the delivery thread may be inside the call of
an event it took before the removal, and finishes that event's listeners).

**When a listener falls behind**, undelivered events wait in a backlog bounded
by ``backlog`` (10,000 by default).  When it is full, the *oldest* undelivered
event is dropped to make room for the new one, :attr:`EventDispatcher.dropped`
counts it, and a warning is logged as an overflow begins (the backlog full again
after it emptied), once a minute at most: a listener that keeps up between bursts,
but not within them, overflows at every burst, and wrote a warning each time (as
often as each dropped event).  The overflows of the minute after a warning are
DEBUG lines; the next warning counts them and the events they dropped.  The
scheduler never blocks on a listener and its memory stays bounded; a listener that
must see every event (an audit log) should be fast, or write to a store instead.

**Its thread** waits for events from :meth:`~EventDispatcher.start` (the scheduler's
``start()``) to :meth:`~EventDispatcher.close` (its shutdown).  Outside those, an event
published is delivered by a thread started for it, which ends once nothing is left to
deliver (before ``start()``, :data:`LINGER` seconds later): a scheduler built with
listeners and never started (a notebook cell run again, the old one dropped) left a
thread waiting for ever, and its listeners with it, one more each run
(docs/decisions/teaching-kit.md, "A scheduler never started leaves no thread").
"""

from __future__ import annotations

import collections
import logging
import threading
import time

from lldsched.checks import whole
from lldsched.listeners import (
    Listener,
    Registered,
    as_callback,
    check_unregistered,
    notify,
    same_listener,
    still_registered,
)
from lldsched.logs import LISTENERS, Repeats
from lldsched.model import TaskEvent
from lldsched.threaded.deadline import Waiters

__all__ = ["EventDispatcher"]

log = logging.getLogger(LISTENERS)

LINGER = 0.25
"""Seconds a delivery thread started before :meth:`EventDispatcher.start` waits for
another event once it delivered what was queued, before it ends: a burst of
registrations (a cell's) is delivered by one thread, not one per lull.  Started a
thread each time the queue emptied, 10,000 registrations before ``start()`` took
0.21 s instead of 0.07 s: each of the two dozen starts waited for the thread to get
the GIL.  Not after :meth:`~EventDispatcher.close`, which waits for the thread."""


class EventDispatcher:
    """Delivers published events to listeners on a daemon thread of its own: one that
    waits for them between :meth:`start` and :meth:`close`, one that ends once they are
    delivered before and after."""

    def __init__(
        self,
        backlog: int = 10_000,
        name: str = "lldsched-events",
        *,
        repeats: Repeats | None = None,
    ) -> None:
        """``repeats``: what tells a listener's repeated failure (lldsched/logs.py; a
        test's, on its own clock); a fresh :class:`~lldsched.logs.Repeats` by default."""
        whole(backlog, name="listener backlog", at_least=1)
        self.backlog = backlog
        self.dropped = 0
        self._name = name
        # Guards _events, _listeners, _busy, _closed, _steady, _delivering, _flushing
        # and dropped.  _cond (on it) is notified when an event arrives and on close, for
        # the delivery thread; flush() callers wait on locks of their own (_flushing),
        # let go as the backlog empties.
        # Taken inside the scheduler's lock (publish), never the other way round;
        # never held while a listener runs.  Every method takes it by its name
        # (``with self._lock``); _cond, which wraps it, serves only to wait and notify
        # (a Condition's ``with`` is two Python calls more: 106,402 against 111,832
        # instructions a dispatched job with a store and a listener,
        # benchmarks/threaded_instructions.py store-listener, 2026-12-08).
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._flushing = Waiters()  # flush() callers' own locks (deadline.Waiters)
        # Each event with the listeners registered as it was published (_listeners is
        # replaced, never changed in place, so that reference is the snapshot): one
        # added later never hears it, one removed before its delivery began neither.
        self._events: collections.deque[tuple[TaskEvent, Registered]] = collections.deque()
        self._listeners: Registered = []
        self._busy = False
        self._closed = False
        self._steady = False  # started, not closed: the delivery thread waits for events
        self._delivering = False  # a delivery thread is in its loop (it clears this as it ends)
        self._overflowing = False
        self._thread: threading.Thread | None = None
        # A listener raising on every event is said once a window (lldsched/logs.py);
        # used by the delivery thread only (one runs at a time).
        self._repeats = repeats if repeats is not None else Repeats()
        # An overflow's warning, once a window too: its own Repeats (on the same clock),
        # used under the lock by publish(), never by the delivery thread.
        self._overflows = self._repeats.sibling()
        self._dropped_said = 0  # dropped when the last overflow's WARNING was written

    @property
    def listeners(self) -> list[Listener]:
        with self._lock:
            return [listener for listener, _ in self._listeners]

    def add(self, listener: Listener) -> None:
        """Deliver to ``listener`` the events published from now on (none queued
        before); ValidationError for what is no listener, or one already added
        (:func:`~lldsched.listeners.check_unregistered`)."""
        callback = as_callback(listener)
        with self._lock:
            check_unregistered(listener, (known for known, _ in self._listeners))
            self._listeners = [*self._listeners, (listener, callback)]

    def remove(self, listener: Listener) -> bool:
        """Stop delivering to ``listener``: no event whose delivery has not begun, even
        one queued before, reaches it once this returns; True if it was registered."""
        with self._lock:
            kept = [pair for pair in self._listeners if not same_listener(pair[0], listener)]
            found = len(kept) != len(self._listeners)
            self._listeners = kept
            return found

    def start(self) -> None:
        """From now until :meth:`close`, a delivery thread waits for events (before, one
        is started for the events published, and ends once they are delivered); a no-op
        once started or closed."""
        with self._lock:
            if self._steady or self._closed:
                return
            self._steady = True
            if not self._delivering:  # else the thread delivering now stays, and waits
                self._spawn()

    def _spawn(self) -> None:
        """Start a delivery thread (caller holds the lock)."""
        self._delivering = True
        self._thread = threading.Thread(target=self._deliver, name=self._name, daemon=True)
        self._thread.start()

    def publish(self, event: TaskEvent) -> None:
        """Queue ``event`` for delivery: O(1), never blocks on a listener."""
        with self._lock:
            events = self._events
            if not events:
                # The thread waits only while none is queued: told before the append (it
                # wakes once the lock is let go), so a Ctrl-C landing between the two on
                # the main thread leaves the event unpublished, never queued unannounced
                # (told after, the thread slept on with it, and every event after it,
                # until the shutdown: wait_idle() timed out)
                self._cond.notify_all()
            elif len(events) >= self.backlog:
                events.popleft()
                self.dropped += 1
                if not self._overflowing:
                    self._overflowing = True
                    self._say_overflow()
            events.append((event, self._listeners))
            if not self._steady:  # before start() or after close() no thread waits: one now
                self._deliver_late()

    def _say_overflow(self) -> None:
        """Say that an overflow began (caller holds the lock, :attr:`dropped` counts its
        first drop): a WARNING the first time in each window (:class:`Repeats`), which
        counts the overflows and the drops since the last one; DEBUG inside it."""
        repeated = self._overflows.admit("overflow")
        message = "listeners fell %d events behind; dropping the oldest"
        if repeated is None:  # warned less than a window ago
            log.debug(message + " (again: the dropped events are counted)", self.backlog)
            return
        before = self.dropped - 1 - self._dropped_said  # dropped since the last WARNING
        self._dropped_said = self.dropped
        args: tuple[object, ...] = (self.backlog,)
        message += " ("
        if before:  # the rest of the last warning's overflow, and those said at DEBUG
            message += "%d more dropped since the last such warning, %d overflows since; "
            args = (*args, before, repeated)
        log.warning(message + "metrics().dropped_events counts them)", *args)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every event published so far was delivered; False on timeout.

        Before :meth:`start` and once closed, it delivers what was published since the
        last delivery thread ended (a verb allowed after a shutdown, a run that outlived
        one), as :meth:`close` does: waiting for a thread that has ended waited out the
        timeout.
        """
        at = None if timeout is None else time.monotonic() + timeout
        waiter = None
        while True:
            with self._lock:
                if waiter is not None:  # its time ran out: not to be let go now
                    self._flushing.discard(waiter)
                self._deliver_late()
                if not self._events and not self._busy:
                    return True
                left = None if at is None else at - time.monotonic()
                if left is not None and left <= 0:
                    return False
                # a lock of its own, not Condition.wait: a Ctrl-C cut that one's taking
                # the lock back, and the ``with`` then let go of the delivery thread's
                waiter = self._flushing.waiter()
            waiter.acquire(timeout=-1 if left is None else left)  # let go as all is delivered

    @property
    def delivered(self) -> bool:
        """True when every event published so far was delivered: none waits, and no
        listener is inside a call (what :meth:`flush` waits for, read without waiting)."""
        with self._lock:
            return not self._events and not self._busy

    def close(self, timeout: float | None = None) -> None:
        """Deliver what is queued (up to ``timeout``), then stop the thread.

        Called again, it delivers what was published since the thread stopped (a run
        that outlived a shutdown's timeout, a verb after it), on a thread started for
        that, which stops again once they are delivered.  (:meth:`publish` starts such a
        thread too, so an event published once closed is not held until a call.)"""
        with self._lock:
            self._closed = True
            self._steady = False
            self._cond.notify_all()
            self._deliver_late()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _deliver_late(self) -> None:
        """Before :meth:`start` or once closed, start a delivery thread for the events
        published since the last one ended; it ends once they are delivered (caller holds
        the lock)."""
        if not self._steady and self._events and not self._delivering:
            self._spawn()

    @property
    def thread(self) -> threading.Thread | None:
        """The thread it runs on (None before it starts)."""
        return self._thread

    @property
    def busy(self) -> bool:
        """True while the delivery thread is inside a listener (one still busy after
        :meth:`close`'s timeout), unless that thread is the caller's own: a listener
        that shut the scheduler down.  A thread that is only on its way out is not."""
        thread = self._thread
        return self._busy and thread is not None and thread is not threading.current_thread()

    def _deliver(self) -> None:
        """The delivery thread's loop: each event, in order, to every listener, with
        the lock let go; return once nothing is left, unless started and not closed."""
        cond = self._cond
        lock = self._lock
        events = self._events
        flushing = self._flushing
        while True:
            with lock:
                self._busy = False
                if not events:
                    self._overflowing = False
                    if flushing:
                        flushing.wake()  # flush() waiters
                while not events and self._steady:
                    cond.wait()
                if not events and not self._closed:  # before start(): more may follow
                    cond.wait(LINGER)
                if not events:
                    if self._steady:  # start() came meanwhile: this thread stays
                        continue
                    self._delivering = False
                    return
                event, listeners = events.popleft()
                if listeners is not self._listeners:  # changed since it was published
                    listeners = still_registered(listeners, self._listeners)
                self._busy = True
            # its sys.exit() too: see notify; repeats guarded by being this thread's only
            notify(listeners, event, catch=BaseException, repeats=self._repeats)
            # Waiting for the next event, the thread keeps no listener alive: a removed
            # one (a closed ControlPanel's) is garbage at once, not after the next event.
            del listeners, event
