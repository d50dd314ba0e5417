"""Hearing: how a simulation's listeners hear its events, in virtual time, in order.

The core publishes each event through ``_emit``, which calls the listeners at once, on
the caller's thread: an event a listener's verb publishes meanwhile waits until every
listener heard the one under way (:class:`Hearing`), and a listener's Ctrl-C raised
inside the event loop or a verb is kept until what it came in is whole
(:mod:`lldsched.sim.interrupts`).  Which listeners hear an event is the threaded
runtime's rule (:func:`lldsched.listeners.still_registered`).
"""

from __future__ import annotations

from collections import deque

from lldsched.listeners import Registered, notify, still_registered
from lldsched.logs import Repeats
from lldsched.model import TaskEvent
from lldsched.sim.parts import SimulationParts

__all__ = ["Hearing", "SimulationHearing"]


class Hearing:
    """How :meth:`SimulationHearing._emit` delivers events: ``waiting``, the events published
    while the listeners hear another (a listener's verb made them), heard once it is
    heard by every listener, in the order published; ``delivering``, True while
    :meth:`~SimulationHearing._emit` calls the listeners; ``repeats``, what tells a listener's
    repeated failure (once a minute of real time, not once a simulated event:
    lldsched/logs.py)."""

    __slots__ = ("delivering", "repeats", "waiting")

    def __init__(self) -> None:
        # each with the listeners registered as it was published (listeners.Registered)
        self.waiting: deque[tuple[TaskEvent, Registered]] = deque()
        self.delivering = False
        self.repeats = Repeats()


class SimulationHearing(SimulationParts):
    """The delivery of events to the listeners: mixed into the simulation."""

    _hearing: Hearing  # the events a listener's verb made wait (_emit)

    def _emit(self, event: TaskEvent) -> None:
        """The core's ``emit``: the listeners are called now, in virtual time.

        A listener's ``KeyboardInterrupt`` or ``SystemExit`` (a Ctrl-C: :func:`notify`
        lets it through here) raised while :meth:`_advance` (:mod:`~lldsched.sim.eventloop`)
        processes an event would leave that event half done if raised there (a run begun
        and never to finish, a worker never freed): it is kept, the listeners after it hear
        the event all the same, and :meth:`_advance` raises it as soon as that event is
        whole, before the next (a store's save that raises one meanwhile is kept alike:
        ``StoreWrites.collecting``).  A verb made outside the loop raises it once the
        verb is whole (:meth:`_whole`, :mod:`~lldsched.sim.verbs`).

        An event published while the listeners hear another (a listener's ``pause``, a
        run its ``shutdown`` finished) waits until every listener heard the one under
        way: called at once, the listeners after that one heard its consequence before
        it (``running -> paused``, then ``scheduled -> running``), unlike the
        threaded runtime's, which queues every event.  An event a listener's Ctrl-C
        left undelivered (raised at once, outside a verb and the loop) is heard before
        the next one published.

        Each event is heard by the listeners registered when it was published and still
        registered when its delivery begins, as on the threaded runtime: one a listener
        added hears neither the event under way nor those waiting (``_callbacks`` is
        replaced at each change, never changed in place, so an event keeps its list)."""
        hearing = self._hearing
        waiting = hearing.waiting
        waiting.append((event, self._callbacks))
        if hearing.delivering:  # a listener's verb: heard after the event under way
            return
        hearing.delivering = True
        try:
            while waiting:
                event, listeners = waiting.popleft()
                if listeners is not self._callbacks:  # changed since it was published
                    listeners = still_registered(listeners, self._callbacks)
                notify(
                    listeners,
                    event,
                    repeats=hearing.repeats,
                    kept=self._heard if self._advancing or self._in_verb else None,
                )
        finally:
            hearing.delivering = False
