"""``OneTime(5)`` on a clock that reads the present warns that ``OneTime(delay=5)`` was meant.

``OneTime``'s first argument is an instant: ``OneTime(5)`` is 1970-01-01 00:00:05 UTC, so on
a wall clock its run was due decades ago and ran at once, with no word; a user who meant
"in 5 seconds" saw it run now.  A ``Simulation`` may start its clock near the epoch, where
``OneTime(5)`` is five seconds in, so nothing is refused: an ``at`` under a year of seconds
that the clock is ten years or more past warns, naming the value and ``delay=``, the same on
both runtimes (lldsched/schedules/delaymeant.py; docs/decisions/schedules.md, "`OneTime(5)`
on a clock that reads the present warns").
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

from lldsched import FakeClock, FixedRate, OneTime, Scheduler, Simulation
from tests.conftest import T0

MEANT = r"OneTime\(at=5\.0\) is the instant 1970-01-01T00:00:05\+00:00, \d+ years before"


@pytest.fixture
def quiet() -> Iterator[None]:
    """Any warning inside is an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def _noop() -> None:
    pass


def test_one_time_5_on_the_threaded_scheduler_s_real_clock_warns_naming_the_delay_meant() -> None:
    scheduler = Scheduler()  # the system clock
    try:
        with pytest.warns(UserWarning, match=MEANT) as caught:
            task = scheduler.schedule("soon", _noop, OneTime(5))
        (warning,) = caught
        assert "write OneTime(delay=5.0)" in str(warning.message)
        assert warning.filename == __file__  # the user's line, not lldsched's
        assert task.next_run_at is not None and task.next_run_at > 5  # at once, as written
    finally:
        scheduler.shutdown()


def test_the_simulation_started_at_a_present_day_epoch_warns_the_same() -> None:
    sim = Simulation(start=T0)
    with pytest.warns(UserWarning, match=MEANT) as caught:
        sim.schedule("soon", OneTime(5))
    assert caught[0].filename == __file__
    sim.run_for(1)
    assert [r.started for r in sim.records()] == [T0]  # ran at once, as before


@pytest.mark.usefixtures("quiet")
def test_a_simulation_started_near_the_epoch_is_told_nothing() -> None:
    sim = Simulation(start=0)
    sim.schedule("five in", OneTime(5))
    sim.run_for(10)
    assert [r.started for r in sim.records()] == [5.0]


@pytest.mark.usefixtures("quiet")
@pytest.mark.parametrize(
    "schedule",
    [OneTime(delay=5), OneTime(T0 - 60), OneTime(T0 + 60), OneTime(0), OneTime(-5)],
    ids=["delay", "passed", "ahead", "zero", "negative"],
)
def test_a_delay_an_instant_or_at_once_is_told_nothing(schedule: OneTime) -> None:
    """``OneTime(0)``, a test's "at once", runs at once whichever way it is read."""
    scheduler = Scheduler(clock=FakeClock(T0))
    try:
        scheduler.schedule("t", _noop, schedule)
    finally:
        scheduler.shutdown()


def test_reschedule_to_one_time_5_warns_too() -> None:
    sim = Simulation(start=T0)
    task = sim.schedule("t", FixedRate(60))
    with pytest.warns(UserWarning, match=MEANT):
        sim.reschedule(task.id, OneTime(5))
    assert task.next_run_at == T0
