"""Listeners: who hears about status changes, and how events reach them.

A listener is anything with ``on_event(event)``, or a plain callable taking the
event.  The threaded runtime never calls one on the hot path: the core publishes
each :class:`~lldsched.model.TaskEvent` into an :class:`EventDispatcher` (an O(1)
append), and one delivery thread calls the listeners in order, one event at a
time.  So a raising listener is logged and skipped, and a slow one delays only
the listeners after it, never the timer or a worker.

**When a listener falls behind**, undelivered events wait in a backlog bounded
by ``backlog`` (10,000 by default).  When it is full, the *oldest* undelivered
event is dropped to make room for the new one, :attr:`EventDispatcher.dropped`
counts it, and a warning is logged once per overflow episode.  The scheduler
never blocks on a listener and its memory stays bounded; a listener that must
see every event (an audit log) should be fast, or write to a store instead.

:class:`EventLog` is the listener tests and notebooks use: it keeps every event
and lets a thread wait, with a bounded timeout, for one that matches.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from lldsched.errors import ValidationError
from lldsched.model import ExecutionRecord, TaskEvent

__all__ = ["EventDispatcher", "EventLog", "TaskListener", "as_callback"]

log = logging.getLogger("lldsched")


@runtime_checkable
class TaskListener(Protocol):
    """Receives every status change of every task, after the fact."""

    def on_event(self, event: TaskEvent) -> None: ...


Listener = TaskListener | Callable[[TaskEvent], None]


def as_callback(listener: Listener) -> Callable[[TaskEvent], None]:
    """The function to call for ``listener``: its ``on_event``, or itself."""
    callback = getattr(listener, "on_event", listener)
    if not callable(callback):
        raise ValidationError(
            f"a listener needs an on_event(event) method or must be callable, got {listener!r}"
        )
    return callback


class EventDispatcher:
    """Delivers published events to listeners on its own daemon thread."""

    def __init__(self, backlog: int = 10_000, name: str = "lldsched-events") -> None:
        if isinstance(backlog, bool) or not isinstance(backlog, int) or backlog < 1:
            raise ValidationError(f"listener backlog must be an int >= 1, got {backlog!r}")
        self.backlog = backlog
        self.dropped = 0
        self._name = name
        # Guards _events, _listeners, _busy, _closed and dropped.  _cond is notified
        # when an event arrives, when the backlog empties and on close.  Taken
        # inside the scheduler's lock (publish), never the other way round; never
        # held while a listener runs.
        self._cond = threading.Condition(threading.Lock())
        self._events: collections.deque[TaskEvent] = collections.deque()
        self._listeners: list[tuple[Listener, Callable[[TaskEvent], None]]] = []
        self._busy = False
        self._closed = False
        self._overflowing = False
        self._thread: threading.Thread | None = None

    @property
    def listeners(self) -> list[Listener]:
        with self._cond:
            return [listener for listener, _ in self._listeners]

    def add(self, listener: Listener) -> None:
        callback = as_callback(listener)
        with self._cond:
            self._listeners = [*self._listeners, (listener, callback)]

    def remove(self, listener: Listener) -> bool:
        """Stop delivering to ``listener``; True if it was registered."""
        with self._cond:
            kept = [pair for pair in self._listeners if pair[0] is not listener]
            found = len(kept) != len(self._listeners)
            self._listeners = kept
            return found

    def start(self) -> None:
        with self._cond:
            if self._thread is not None or self._closed:
                return
            self._thread = threading.Thread(target=self._deliver, name=self._name, daemon=True)
            self._thread.start()

    def publish(self, event: TaskEvent) -> None:
        """Queue ``event`` for delivery: O(1), never blocks on a listener."""
        with self._cond:
            events = self._events
            if len(events) >= self.backlog:
                events.popleft()
                self.dropped += 1
                if not self._overflowing:
                    self._overflowing = True
                    log.warning(
                        "listeners fell %d events behind; dropping the oldest", self.backlog
                    )
            events.append(event)
            if len(events) == 1:
                self._cond.notify_all()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every event published so far was delivered; False on timeout.

        Only meaningful once the delivery thread runs (the scheduler has started).
        """
        with self._cond:
            return self._cond.wait_for(lambda: not self._events and not self._busy, timeout)

    def close(self, timeout: float | None = None) -> None:
        """Deliver what is queued (up to ``timeout``), then stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _deliver(self) -> None:
        cond = self._cond
        events = self._events
        while True:
            with cond:
                self._busy = False
                if not events:
                    self._overflowing = False
                    cond.notify_all()  # flush() waiters
                while not events and not self._closed:
                    cond.wait()
                if not events:
                    return
                event = events.popleft()
                listeners = self._listeners
                self._busy = True
            for listener, callback in listeners:
                try:
                    callback(event)
                except Exception:
                    log.exception("listener %r raised on %r; it stays registered", listener, event)


class EventLog:
    """A listener that keeps every event and lets threads wait for one.

    ``wait_for(predicate, timeout)`` is how tests and notebooks synchronise with a
    running scheduler without sleeping: it returns the first event (already seen
    or still to come) for which ``predicate(event)`` is true, or None when
    ``timeout`` seconds pass first.
    """

    def __init__(self) -> None:
        # Guards _events; notified on every event.  Re-entrant, so a predicate
        # given to wait_for may itself call runs() or events.
        self._cond = threading.Condition(threading.RLock())
        self._events: list[TaskEvent] = []

    def on_event(self, event: TaskEvent) -> None:
        with self._cond:
            self._events.append(event)
            self._cond.notify_all()

    __call__ = on_event

    @property
    def events(self) -> list[TaskEvent]:
        with self._cond:
            return list(self._events)

    def runs(self, name: str | None = None) -> list[ExecutionRecord]:
        """The records of finished runs, in the order they finished (of ``name`` only, if
        given).  Slots a misfire policy decided (``record.misfire``) did not run: they
        are in :attr:`events`, not here."""
        with self._cond:
            return [
                event.record
                for event in self._events
                if event.record is not None
                and event.record.misfire is None
                and (name is None or event.name == name)
            ]

    def wait_for(
        self, predicate: Callable[[TaskEvent], object], timeout: float = 5.0
    ) -> TaskEvent | None:
        """The first event satisfying ``predicate``, waiting up to ``timeout`` seconds for it."""
        deadline = time.monotonic() + timeout
        checked = 0
        with self._cond:
            while True:
                while checked < len(self._events):
                    event = self._events[checked]
                    checked += 1
                    if predicate(event):
                        return event
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._cond.wait(remaining)

    def clear(self) -> None:
        with self._cond:
            self._events.clear()

    def __len__(self) -> int:
        with self._cond:
            return len(self._events)
