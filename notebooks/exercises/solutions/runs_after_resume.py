import math


def runs_after_resume(
    first: float, period: float, paused: float, resumed: float, policy: str
) -> list[float]:
    """The instants of the first three runs after the pause of a fixed-rate task on the
    grid ``first + k * period`` (each run takes no time), paused at ``paused`` and resumed
    at ``resumed``.  ``policy`` decides nothing: a pause is neither an overrun nor a
    downtime."""
    if paused < first:
        waiting = first  # paused before its first run
    else:  # the first slot after the pause: one at the pause instant has run
        waiting = first + (math.floor((paused - first) / period) + 1) * period
    # Resumed before that slot: nothing was missed, the old grid goes on.  After it: the
    # slot slept through runs once, at once, and the grid re-anchors on that run.
    start = max(waiting, resumed)
    return [start + k * period for k in range(3)]
