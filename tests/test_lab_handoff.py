"""The lab's hand-off decision stays honest: unbounded, a burst leaves the heap and a HIGH
task waits behind it; bounded, neither (lldsched.lab.handoff)."""

from __future__ import annotations

import pytest

from lldsched.lab.handoff import UNBOUNDED, run_a_burst


def test_an_unbounded_handoff_takes_the_whole_burst_and_high_waits_behind_it() -> None:
    outcome = run_a_burst(UNBOUNDED, burst=300)
    assert outcome.handed_off == 300
    assert outcome.runs_before_high == 300


def test_a_bounded_handoff_keeps_the_burst_in_the_heap_and_high_passes_it() -> None:
    outcome = run_a_burst(None, burst=300)  # the default bound: 16 per worker
    assert outcome.handed_off <= 17  # the bound, and one a worker may take meanwhile
    assert outcome.runs_before_high <= 17


@pytest.mark.parametrize("burst", [0, -1])
def test_a_burst_below_one_task_is_refused_naming_it(burst: int) -> None:
    with pytest.raises(ValueError, match=f"burst must be a whole number >= 1, got {burst}"):
        run_a_burst(None, burst=burst)
