"""The lab's listener decision stays honest: a listener under the lock holds every run while
it blocks; off the lock, runs go on (lldsched.lab.dispatch)."""

from __future__ import annotations

import re

import pytest

from lldsched.lab.dispatch import (
    InlineListenerScheduler,
    measure_listener_latency,
    runs_while_a_listener_blocks,
)
from lldsched.threaded.scheduler import Scheduler


def test_a_listener_under_the_lock_holds_every_run_while_it_blocks() -> None:
    assert not runs_while_a_listener_blocks(InlineListenerScheduler, patience=0.3)


def test_a_listener_off_the_lock_blocks_no_run() -> None:
    assert runs_while_a_listener_blocks(Scheduler, patience=5.0)


def test_a_latency_burst_of_no_task_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="tasks must be a whole number >= 1, got 0"):
        measure_listener_latency((0.0,), tasks=0)


def test_a_listener_delay_below_zero_is_refused_naming_it() -> None:
    """It was measured, and reported as a listener taking -1 ms per event."""
    said = "listener delay must be finite and >= 0 seconds, got -0.001"
    with pytest.raises(ValueError, match=re.escape(said)):
        measure_listener_latency((0.0, -0.001), tasks=1)


@pytest.mark.parametrize("patience", [0, -1, float("nan")])
def test_patience_that_is_not_a_positive_time_is_refused_naming_it(patience: float) -> None:
    said = f"patience must be finite and > 0 seconds, got {patience!r}"
    with pytest.raises(ValueError, match=re.escape(said)):
        runs_while_a_listener_blocks(Scheduler, patience=patience)
