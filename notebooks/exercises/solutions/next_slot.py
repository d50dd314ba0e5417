import math


def next_slot(slot, period, finished, policy):
    """The next due instant of a fixed-rate task whose run for ``slot`` ended at ``finished``."""
    following = slot + period
    if following >= finished or policy == "catch_up":
        return following  # on time, or catch up: the first missed slot, due at once
    # skip: the first slot of the grid that is not before the finish
    return slot + math.ceil((finished - slot) / period) * period
