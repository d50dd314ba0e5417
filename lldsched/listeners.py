"""Listeners: who hears about status changes, and the listener tests and notebooks use.

A listener is anything with ``on_event(event)``, or a plain callable taking the
event (:func:`as_callback` turns either into a function).  How events reach
listeners is each runtime's business: the threaded runtime delivers them off the
hot path, on a thread of their own (:mod:`lldsched.threaded.dispatcher`); the
simulation calls them in order, in virtual time, on its own thread.

:class:`EventLog` is the listener tests and notebooks use: it keeps every event
and lets a thread wait, with a bounded timeout, for one that matches.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Protocol, runtime_checkable

from lldsched.checks import call_error, instance_hint, wait_seconds
from lldsched.errors import ValidationError, doc_url, error_text, shown
from lldsched.logs import LISTENERS, Repeats, say_with_traceback
from lldsched.model import ExecutionRecord, TaskEvent

__all__ = [
    "EventLog",
    "Listener",
    "Registered",
    "TaskListener",
    "as_callback",
    "check_unregistered",
    "listener_list",
    "notify",
    "same_listener",
    "still_registered",
]

log = logging.getLogger(LISTENERS)


@runtime_checkable
class TaskListener(Protocol):
    """Receives every status change of every task, after the fact."""

    def on_event(self, event: TaskEvent) -> object:
        """Hear ``event``: one status change of one task, after the fact, in order.
        What it returns is ignored (an awaitable is refused: :func:`notify`)."""


Listener = TaskListener | Callable[[TaskEvent], object]
"""What ``listeners=`` and ``add_listener`` take.  The return is ``object``, not ``None``:
what a listener returns is ignored, and one that hands the event on returns what that
call returns (``lambda event: loop.call_soon_threadsafe(queue.put_nowait, event)`` a
``Handle``; a function of the application may return a flag), which ``None`` made a
user's mypy refuse (docs/decisions/public-api.md, "A listener returns `object`, not
`None`")."""


def as_callback(listener: Listener) -> Callable[[TaskEvent], object]:
    """The function to call for ``listener``: its ``on_event``, or itself.

    An ``async def`` listener is refused (ValidationError naming it): listeners are
    called, never awaited (on the threaded runtime's events thread, in the simulation's
    loop), so its body would never run, and Python would only warn "coroutine ... was
    never awaited" on that thread.  A plain function that hands the event to the
    application's loop does what it meant (docs/ASYNCIO.md).  So is one that cannot be
    called with one event (:func:`~lldsched.checks.call_error`): a class given for an
    instance (``listeners=[EventLog]``), a function of no argument; each event raised
    ``TypeError`` in it, logged and never heard."""
    callback = getattr(listener, "on_event", listener)
    if not callable(callback):
        raise ValidationError(
            f"a listener needs an on_event(event) method or must be callable, got {shown(listener)}"
        )
    if inspect.iscoroutinefunction(callback) or inspect.iscoroutinefunction(
        type(callback).__call__  # an object whose __call__ is an async def
    ):
        raise ValidationError(
            f"a listener is called, never awaited, so an async def one never runs, got "
            f"{listener!r}: pass a plain function that hands the event to your event loop, "
            "e.g. lambda event: loop.call_soon_threadsafe(queue.put_nowait, event) "
            f"({doc_url('docs/ASYNCIO.md')})"
        )
    wrong = call_error(callback, None)  # each event calls callback(event)
    if wrong is not None:  # found now, not as a TypeError logged at every event
        raise ValidationError(
            f"a listener is called with each event, as callback(event), got {shown(listener)}"
            f"{instance_hint(listener)}: {wrong}"
        )
    return callback


def same_listener(one: object, other: object) -> bool:
    """Whether ``one`` and ``other`` are the same listener: the same object, or the same
    method of the same object (``panel.on_event`` makes a new bound method at each
    reading, so ``remove_listener(self.on_event)`` found none by identity, and a closed
    :class:`~lldsched.views.panel.ControlPanel` went on hearing every event).  Not
    ``==`` on anything else: two listeners that compare equal are still two."""
    if one is other:
        return True
    return inspect.ismethod(one) and inspect.ismethod(other) and one == other


def check_unregistered(listener: Listener, registered: Iterable[Listener]) -> None:
    """Refuse ``listener`` when it is among ``registered`` (:func:`same_listener`), naming
    it: it would hear every event twice, and one ``remove_listener`` removed both."""
    if any(same_listener(listener, known) for known in registered):
        raise ValidationError(
            f"listener {listener!r} is registered already: registered twice, it would "
            "hear every event twice"
        )


Registered = list[tuple[Listener, Callable[[TaskEvent], object]]]
"""The listeners a runtime calls, each with its callback (:func:`as_callback`), in order.
A runtime replaces its list at each change, never changes it in place: an event keeps
the list as it was published, and :func:`still_registered` tells who still hears it."""


def still_registered(published: Registered, registered: Registered) -> Registered:
    """The listeners of ``published`` (an event's, as it was published) that are still
    ``registered`` as its delivery begins: each registration's pair, by identity (a
    listener removed and added again is a new registration, which never hears an event
    published before it).  Called only when the two lists differ: a listener was added
    or removed since the event was published."""
    now = {id(pair) for pair in registered}
    return [pair for pair in published if id(pair) in now]


def listener_list(listeners: object) -> list[Listener]:
    """The ``listeners=`` a runtime is built with, as a list, each checked by
    :func:`as_callback`: ValidationError naming the value when it is not a list (or other
    iterable) of listeners, or naming one twice; one listener given alone is told to go
    in a list."""
    if isinstance(listeners, str | bytes) or not isinstance(listeners, Iterable):
        one = callable(getattr(listeners, "on_event", listeners))
        hint = " (one listener goes in a list: listeners=[it])" if one else ""
        raise ValidationError(
            f"listeners must be a list of listeners, got {shown(listeners)}{hint}"
        )
    given = list(listeners)
    for n, listener in enumerate(given):
        as_callback(listener)
        check_unregistered(listener, given[:n])
    return given


def notify(
    listeners: Iterable[tuple[Listener, Callable[[TaskEvent], object]]],
    event: TaskEvent,
    *,
    catch: type[BaseException] = Exception,
    repeats: Repeats | None = None,
    kept: list[BaseException] | None = None,
) -> None:
    """Call each listener's callback (:func:`as_callback`) with ``event``, in order.  One
    that raises is logged, naming it and the event, and stays registered; the others
    are still called.  Both runtimes and the design lab deliver events through this.

    ``catch`` is what counts as a listener's failure: ``Exception`` where listeners run
    on the caller's thread (the simulation: a Ctrl-C there must reach the caller);
    ``BaseException`` on a delivery thread of its own (the threaded runtime), where a
    listener's ``sys.exit()`` would otherwise end that thread silently, and every later
    event with it.

    ``repeats`` (the runtime's :class:`~lldsched.logs.Repeats`, keyed by listener) keeps
    a listener that raises on every event from writing a traceback per event: its
    first failure in each window is an ERROR with the traceback, the others DEBUG
    lines without, counted on its next ERROR.  Its traceback is bounded as a job's is
    (:func:`~lldsched.logs.say_with_traceback`).  The line names the event's task and its
    status change, not the event's ``repr`` (its record's result text).

    ``kept``, when given, takes what a listener raises that ``catch`` lets through (a
    Ctrl-C), and the listeners after it are called all the same: the simulation's event
    loop raises it once the event is whole (``SimulationHearing._emit``, sim/hearing.py).
    Without it, it is raised at once.

    A callback that returns an awaitable (``lambda event: handle(event)`` around an
    ``async def``: refused at registration only when the listener is itself ``async
    def``) fails as one that raises does, its coroutine closed unrun
    (:func:`_never_awaited`): before, it was dropped, said by nothing but Python's
    "coroutine ... was never awaited" warning when the collector found it."""
    for listener, callback in listeners:
        try:
            returned = callback(event)
            if returned is not None and inspect.isawaitable(returned):
                raise _never_awaited(returned)
        except catch as exc:
            _say_failed(listener, event, exc, repeats)
        except BaseException as exc:
            if kept is None:
                raise
            kept.append(exc)


def _never_awaited(returned: object) -> TypeError:
    """The error of a listener that returned ``returned``, an awaitable, closed here
    when it is a coroutine (it never runs: listeners are never awaited)."""
    coroutine = False
    if inspect.iscoroutine(returned):
        returned.close()
        coroutine = True
    return TypeError(
        f"a listener is called, never awaited, and this one returned {shown(returned)}, "
        f"which was {'closed unrun' if coroutine else 'left unawaited'}: pass a "
        "plain function that hands the event to your event loop, e.g. lambda event: "
        f"loop.call_soon_threadsafe(queue.put_nowait, event) ({doc_url('docs/ASYNCIO.md')})"
    )


def _say_failed(
    listener: Listener, event: TaskEvent, exc: BaseException, repeats: Repeats | None
) -> None:
    """Log that ``listener`` raised ``exc`` on ``event`` (in full, or as a repeat)."""
    previous = "new" if event.previous is None else event.previous.value
    fields: dict[str, object] = {
        "listener": _named(listener),
        "task_id": event.task_id,
        "task_name": event.name,
        "status": event.status.value,
        "error": error_text(exc),
        "repeated": 0,
    }
    named = fields["listener"]
    args: tuple[object, ...] = (named, event.task_id, event.name, previous, event.status.value)
    message = "listener %s raised on the event of task %s %r (%s -> %s); it stays registered"
    repeated = 0 if repeats is None else repeats.admit(id(listener))
    if repeated is None:  # said with its traceback less than a window ago
        log.debug(message + ": %s", *args, fields["error"], extra=fields)
        return
    if repeated:
        message += " (%d more failures of it since its last line, at DEBUG)"
        args = (*args, repeated)
    fields["repeated"] = repeated
    say_with_traceback(log, logging.ERROR, message, args, exc, fields)


def _named(listener: Listener) -> str:
    """A listener's name, for its line and its field: its qualified name, or its
    class's (not its ``repr``, which may raise, or name a memory address)."""
    try:
        name = getattr(listener, "__qualname__", None)
        return name if isinstance(name, str) else type(listener).__qualname__
    except Exception:
        return type(listener).__qualname__


class EventLog:
    """A listener that keeps every event and lets threads wait for one.

    ``wait_for(predicate, timeout)`` is how tests and notebooks synchronise with a
    running scheduler without sleeping: it returns the first event (already seen
    or still to come) for which ``predicate(event)`` is true, or None when
    ``timeout`` seconds pass first.

    It keeps every event until :meth:`clear`, unbounded: about 240 bytes an event with
    its record, and a run is two events (a month of a minutely task and an hourly one
    in a ``Simulation``: 97,000 events, 24 MB).  For a long simulation read
    ``sim.records()`` (kept as columns, 47 bytes a record), or count what you need in a
    listener of your own; for a service, see docs/OPERATIONS.md, "Monitoring".
    """

    def __init__(self) -> None:
        # Guards _events; notified on every event.  Re-entrant, so a predicate
        # given to wait_for may itself call runs() or events.
        self._cond = threading.Condition(threading.RLock())
        self._events: list[TaskEvent] = []

    def __repr__(self) -> str:
        with self._cond:
            return f"<EventLog {len(self._events)} events>"

    def on_event(self, event: TaskEvent) -> None:
        """Keep ``event`` and wake every ``wait_for`` caller (the listener protocol)."""
        with self._cond:
            self._events.append(event)
            self._cond.notify_all()

    __call__ = on_event

    @property
    def events(self) -> list[TaskEvent]:
        """A copy of every event kept so far, in the order received."""
        with self._cond:
            return list(self._events)

    def runs(self, name: str | None = None) -> list[ExecutionRecord]:
        """The records of finished runs, in the order they finished (of ``name`` only, if
        given).  Slots a policy decided without a run (missed, coalesced, skipped: see
        :attr:`~lldsched.model.Outcome.ran`) are in :attr:`events`, not here."""
        if name is not None and not isinstance(name, str):
            raise ValidationError(f"runs() takes a task name (a str) or None, got {shown(name)}")
        with self._cond:
            return [
                event.record
                for event in self._events
                if event.record is not None
                and event.record.outcome.ran
                and (name is None or event.name == name)
            ]

    def wait_for(
        self, predicate: Callable[[TaskEvent], object], timeout: float | timedelta = 5.0
    ) -> TaskEvent | None:
        """The first event satisfying ``predicate``, waiting up to ``timeout`` seconds (or a
        ``timedelta``) for it."""
        if not callable(predicate):
            raise ValidationError(
                f"wait_for() takes a predicate, a function of a TaskEvent, got {shown(predicate)}"
            )
        deadline = time.monotonic() + wait_seconds(timeout, name="wait_for() timeout")
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
        """Forget every event kept so far."""
        with self._cond:
            self._events.clear()

    def __len__(self) -> int:
        with self._cond:
            return len(self._events)
