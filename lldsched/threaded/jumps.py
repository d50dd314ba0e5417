"""What the threaded scheduler takes for a wall-clock jump, and its last look for one.

Due instants are wall-clock instants; the timer waits on a monotonic timeout and
compares the two clocks each time it wakes (:mod:`lldsched.threaded.timer` says
when, and what a jump then does).  A gap of more than :data:`JUMP_TOLERANCE`
(plus :data:`JUMP_DRIFT` of the time waited, for NTP slewing) is a jump.  The
readings of the last look are kept in one :class:`LastLook`, which a worker (or the
event loop) also reads before it records a run, under the scheduler's lock; so is the
instant the timer last woke, for ``Scheduler.metrics()``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["JUMP_DRIFT", "JUMP_TOLERANCE", "LastLook"]

JUMP_TOLERANCE = 1.0
"""Seconds of disagreement between wall and monotonic time taken for a clock jump,
plus :data:`JUMP_DRIFT` of the time waited."""
JUMP_DRIFT = 0.001


class LastLook:
    """The last look for a wall-clock jump (guarded by the scheduler's lock).

    ``monotonic`` is the clock's (None on a clock with none, a ``FakeClock``: nothing
    looks), ``wall`` and ``mono`` the readings of the last look.  A run that finished
    earlier by the wall clock than ``set_back_before`` finished after the clock was
    set back since that look; it is ``wall - JUMP_TOLERANCE``, kept ready so that the
    test a worker (or the event loop) makes of every run it records is one comparison
    (35,649 to 35,722 instructions a dispatched job over three runs, against 35,827
    and 35,845 with the subtraction made there on a ``(wall, mono)`` tuple), and
    ``-inf`` until the first look, and for good without a ``monotonic``.

    ``woke`` is the clock instant the timer last woke (``None`` before it first did),
    which ``Scheduler.metrics()`` reports: set at every wake, whether the clock has a
    ``monotonic()`` or not, and kept here, with the timer's other readings, because the
    scheduler keeps no 30th attribute (``lldsched/threaded/parts.py``)."""

    __slots__ = ("mono", "monotonic", "set_back_before", "wall", "woke")

    def __init__(self, monotonic: Callable[[], float] | None) -> None:
        self.monotonic = monotonic
        self.wall = self.set_back_before = -math.inf
        self.mono = 0.0
        self.woke: float | None = None

    def took(self, wall: float, mono: float) -> None:
        """A look read ``wall`` and ``mono`` (the first, or one that compared)."""
        self.wall, self.mono = wall, mono
        self.set_back_before = wall - JUMP_TOLERANCE

    def look(self, wall: float, mono: float) -> float:
        """Take a look that read ``wall`` and ``mono``: the seconds the wall clock
        jumped by since the last look, or 0.0 when the two clocks agree."""
        waited = mono - self.mono
        jump = (wall - self.wall) - waited
        self.took(wall, mono)
        return jump if abs(jump) > JUMP_TOLERANCE + JUMP_DRIFT * waited else 0.0
