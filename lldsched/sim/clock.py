"""VirtualClock: the simulation's time, which only the simulation moves, and its end."""

from __future__ import annotations

import math
import threading

from lldsched.clock import LATEST
from lldsched.errors import SchedulerStateError

__all__ = ["LAST_INSTANT", "VirtualClock"]

LAST_INSTANT = math.nextafter(LATEST, -math.inf)
"""The last instant a ``datetime`` shows (9999-12-31T23:59:59.99997 UTC, the last float
before :data:`~lldsched.clock.LATEST`) and the last virtual time reaches: an event after
it (a slot, a retry, a run's modelled finish in year 10000) is never reached, as the
threaded runtime's clock never reaches it (docs/decisions/simulation.md, "Virtual time ends with
year 9999").  The event loop's ``_INF`` is after every event."""


class VirtualClock:
    """Simulated seconds since the epoch.  Nothing waits on it: time jumps from event
    to event, so ``wait`` is an error (a threaded component was given a virtual clock)."""

    __slots__ = ("_now",)

    def __init__(self, start: float) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance_to(self, instant: float) -> None:
        """Move time forward to ``instant``; time never goes back."""
        if instant < self._now:
            raise SchedulerStateError(
                f"virtual time cannot go back from {self._now!r} to {instant!r}"
            )
        self._now = instant

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        raise SchedulerStateError("nothing waits on a simulation's virtual clock")

    def __repr__(self) -> str:
        return f"VirtualClock(now={self._now!r})"
