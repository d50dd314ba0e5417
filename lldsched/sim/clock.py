"""VirtualClock: the simulation's time, which only the simulation moves."""

from __future__ import annotations

import threading

from lldsched.errors import SchedulerStateError

__all__ = ["VirtualClock"]


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
