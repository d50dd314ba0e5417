"""The lab's overrun decision stays honest: keeping a run queued per slot piles up and starves
the heartbeat; SKIP keeps both on time (lldsched.lab.overrun, on the simulation)."""

from __future__ import annotations

import re

import pytest

from lldsched.lab.overrun import KEEP_QUEUEING, simulate_overrun_day


def test_keep_queueing_piles_up_and_starves_the_heartbeat_and_skip_does_not() -> None:
    piled = simulate_overrun_day(KEEP_QUEUEING, hours=2)
    assert piled.most_at_once == 2  # runs of the same job overlap, on both workers
    assert piled.owed > 20 and piled.job_late_at_end > 600
    assert piled.heartbeat_worst > 600  # ten minutes behind after two hours
    skip = simulate_overrun_day("SKIP", hours=2)
    assert (skip.owed, skip.job_late_at_end, skip.heartbeat_worst, skip.most_at_once) == (
        0, 0.0, 0.0, 1,
    )  # fmt: skip


def test_catch_up_falls_behind_on_one_worker_and_leaves_the_heartbeat_alone() -> None:
    day = simulate_overrun_day("CATCH_UP", hours=2)
    assert day.job_late_at_end > 600 and day.most_at_once == 1
    assert day.heartbeat_worst == 0.0


def test_the_slots_owed_count_the_job_s_runs_in_flight_not_the_heartbeat_s() -> None:
    """CATCH_UP runs the job back to back, every 150 s from 0: by 7,200 s it has started
    49 runs (0, 150, ..., 7,200) of 120 slots (0, 60, ..., 7,140), and owes 71.  The
    heartbeat due at 7,200 s was running too, and counted as a run of the job: 70."""
    day = simulate_overrun_day("CATCH_UP", hours=2)
    assert (len(day.job), day.owed) == (48, 71)  # 48 finished, one in flight
    piled = simulate_overrun_day(KEEP_QUEUEING, hours=2)
    assert piled.owed == 120 - len(piled.job) - 2  # both workers hold a run of the job


def test_an_unknown_strategy_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'DROP'"):
        simulate_overrun_day("DROP")


@pytest.mark.parametrize("hours", [0, -1, 1.5, True])
def test_a_day_of_no_whole_hours_is_refused_naming_the_value(hours: object) -> None:
    with pytest.raises(ValueError, match=rf"hours must be a whole number >= 1, got {hours!r}"):
        simulate_overrun_day("SKIP", hours=hours)  # type: ignore[arg-type]


@pytest.mark.parametrize("strategy", [KEEP_QUEUEING, "SKIP"])
@pytest.mark.parametrize("period", [0, -60.0, float("nan")])
def test_a_period_that_is_not_a_positive_time_is_refused_naming_it(
    strategy: str, period: float
) -> None:
    """Keep queueing with a period of 0 queued runs at 0 s for ever (the call never
    returned); -60 read "intervention ... is in the past"; NaN, "cannot convert"."""
    said = f"period must be finite and > 0 seconds, got {period!r}"
    with pytest.raises(ValueError, match=re.escape(said)):
        simulate_overrun_day(strategy, hours=1, period=period)
