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
    looks), ``wall`` and ``mono`` the readings of the last look.  A worker (or the event
    loop) tests every run it records against them (:meth:`set_back_since`): one reading
    of ``monotonic`` and one comparison with ``set_back_below``, kept ready
    (``wall - mono - JUMP_TOLERANCE``; ``-inf`` until the first look, and for good
    without a ``monotonic``, whose ``reading`` is then ``+inf``).

    The same lag (the finish less that reading) above ``ahead_above`` (``wall - mono +
    JUMP_TOLERANCE``; ``+inf`` until the first look) is a finish read *ahead* of the
    clock now (:meth:`read_before_set_back`): read before a backward jump that a look
    saw while the run was in flight (between the finish and its taking the lock), or
    after a forward jump no look saw yet.  ``set_back_by`` is the last backward jump a
    look saw (0.0 before any), what such a finish is moved by.

    ``woke`` is the clock instant the timer last woke (``None`` before it first did),
    which ``Scheduler.metrics()`` reports: set at every wake, whether the clock has a
    ``monotonic()`` or not, and kept here, with the timer's other readings, because the
    scheduler keeps no 30th attribute (``lldsched/threaded/parts.py``)."""

    __slots__ = (
        "ahead_above",
        "mono",
        "monotonic",
        "reading",
        "set_back_below",
        "set_back_by",
        "wall",
        "woke",
    )

    def __init__(self, monotonic: Callable[[], float] | None) -> None:
        self.monotonic = monotonic
        self.reading: Callable[[], float] = _never if monotonic is None else monotonic
        self.wall = self.set_back_below = -math.inf
        self.ahead_above = math.inf
        self.set_back_by = 0.0
        self.mono = 0.0
        self.woke: float | None = None

    def took(self, wall: float, mono: float) -> None:
        """A look read ``wall`` and ``mono`` (the first, or one that compared)."""
        self.wall, self.mono = wall, mono
        offset = wall - mono
        self.set_back_below = offset - JUMP_TOLERANCE
        self.ahead_above = offset + JUMP_TOLERANCE

    def set_back_since(self, finished: float) -> bool:
        """True when a run that read ``finished`` on the wall clock read it after the
        clock was set back since this look (more than ``JUMP_TOLERANCE``), judged by a
        ``monotonic`` reading now: the wall clock moved less than the monotonic clock
        since the look (:meth:`jumped_lag`, which the runtime asks of every run).

        A jump of any size is seen.  Before, the test was the finish alone against the
        look's wall reading, and missed a jump shorter than the time since the look (up
        to ``max_wait``): a fixed delay ending meanwhile counted from the moved clock
        and was moved back once more by the timer's next look.  A reading taken a
        while after the finish (a worker waiting for the lock) only errs towards a
        look, which finds no jump."""
        lag = self.jumped_lag(finished)
        return lag is not None and lag < self.set_back_below

    def read_before_set_back(self, finished: float) -> bool:
        """True when a run that read ``finished`` on the wall clock read it ahead of the
        clock now (more than ``JUMP_TOLERANCE``), judged by a ``monotonic`` reading now;
        the other bound of :meth:`set_back_since`'s test (both in :meth:`jumped_lag`,
        which the runtime asks).  After a look for a forward jump no look saw yet (which moves
        ``ahead_above`` up), still true only for a finish read before a backward jump
        that a look saw while the run was in flight: the runtime moves that finish by
        ``set_back_by``, so it reads as the moved clock does, as a finish read after the
        jump would.  A reading taken a while after the finish (a worker waiting for
        the lock longer than the jump, less ``JUMP_TOLERANCE``) errs towards a finish
        left as it read (docs/DECISIONS.md)."""
        lag = self.jumped_lag(finished)
        return lag is not None and lag > self.ahead_above

    def jumped_lag(self, finished: float) -> float | None:
        """``finished`` less a ``monotonic`` reading now, where it tells of a jump
        (:meth:`set_back_since` or :meth:`read_before_set_back`: one reading, both
        bounds); None where it tells of none.  The runtime asks it of every run it
        records, and moves the finish of one it answers for (``_jumped_since``)."""
        lag = finished - self.reading()
        return lag if lag < self.set_back_below or lag > self.ahead_above else None

    def look(self, wall: float, mono: float) -> float:
        """Take a look that read ``wall`` and ``mono``: the seconds the wall clock
        jumped by since the last look, or 0.0 when the two clocks agree."""
        waited = mono - self.mono
        jump = (wall - self.wall) - waited
        self.took(wall, mono)
        if abs(jump) <= JUMP_TOLERANCE + JUMP_DRIFT * waited:
            return 0.0
        if jump < 0:
            self.set_back_by = jump
        return jump


def _never() -> float:
    """The ``reading`` of a clock with no ``monotonic()``: no run is ever found to have
    finished after a jump (such a clock *is* time, and never jumps)."""
    return math.inf
