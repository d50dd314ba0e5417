import math


def next_slot(slot: float, period: float, finished: float, policy: str) -> float:
    """The next due instant of a fixed-rate task whose run for ``slot`` ended at ``finished``."""
    following = slot + period
    if following >= finished or policy == "catch_up":
        return following  # on time (a slot exactly at the finish is not missed), or catch up
    # skip: the first slot of the grid that is not before the finish
    return slot + math.ceil((finished - slot) / period) * period
