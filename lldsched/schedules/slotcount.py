"""How many slots of a schedule come from one slot up to an instant, counted as its runs
are due: what a record standing for the slots past a cap states it stands for (a
misfire's, a run's skipped slots, :func:`~lldsched.core.names.cap_text`).  A grid's slots
are counted from its origin by a binary search, any other schedule's stepped through
(:func:`~lldsched.schedules.base.slots_on`), at most :data:`COUNT_LIMIT`.
"""

from __future__ import annotations

from lldsched.schedules.base import Schedule, on_grid, slots_on

__all__ = ["COUNT_LIMIT", "slots_counted"]

COUNT_LIMIT = 100_000
"""The most slots :func:`slots_counted` steps through one at a time (a schedule with no
grid); a grid's slots are counted in a few ``slot_at`` calls however many they are."""
_FARTHEST_K = 1 << 62  # a grid counted with no end stops here


def slots_counted(
    schedule: Schedule,
    first: float,
    end: float | None,
    *,
    inclusive: bool = False,
    origin: float | None = None,
    limit: int = COUNT_LIMIT,
) -> int | None:
    """How many slots from ``first`` (a slot, counted) on come before ``end`` (not after
    it, ``inclusive``; ``None``: for as long as the schedule has them): what the record
    standing for the rest past a cap states it stands for (:func:`~lldsched.core.names.
    cap_text`).  A grid's slots (``slot_at``: a fixed rate, a ``Window`` or ``Jittered``
    around one) are counted from ``origin`` while ``first`` is on it (:func:`on_grid`),
    the very floats its runs are due at, by a binary search; any other schedule's are
    stepped through (:func:`slots_on`), at most ``limit``: ``None`` past that ("more
    than ``limit``")."""

    def inside(slot: float | None) -> bool:
        if slot is None or end is None:
            return slot is not None
        return slot <= end if inclusive else slot < end

    grid = getattr(schedule, "slot_at", None)
    if grid is not None:
        anchor, k = on_grid(schedule, first, origin)
        low, high = 0, 1  # slot k + low is inside, k + high maybe not
        while inside(grid(anchor, k + high)):
            if high >= _FARTHEST_K:  # a grid with no end, and no ``end``: bounded all the same
                return high
            low, high = high, high * 2
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if inside(grid(anchor, k + middle)) else (low, middle)
        return low + 1
    count = 1
    for slot in slots_on(schedule, first):
        if not inside(slot):
            break
        if count == limit:
            return None
        count += 1
    return count
