"""The end of year 9999, the last instant a ``datetime`` shows: a schedule may come due
past it from an instant inside it (a fixed rate at the end of 9999), and a modelled run
may end past it.  Neither runtime reaches such an instant (docs/decisions/simulation.md, "Virtual
time ends with year 9999"): the threaded one waits for it (its clock never gets there,
and a ``FakeClock`` refuses to go), and the simulation's ``step()`` says nothing is left
to happen, its clock kept inside year 9999.  ``step()`` went past it: its records were
dated in year 10000 (a frame showed ``10000-01-01``), its clock stood there, so
``run()`` refused every ``until`` from then on, and ``while sim.step(): ...`` never
ended."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lldsched import FakeClock, FixedRate, OneTime, Scheduler, Simulation, TaskStatus
from lldsched.clock import LATEST, utc_datetime
from lldsched.errors import ValidationError
from lldsched.sim import fixed
from lldsched.views.frames import to_frame
from tests import jobs

START = datetime(9999, 12, 31, 23, 58, tzinfo=UTC).timestamp()  # two minutes to the end
FIRES = [START, START + 60.0]  # the next slot, START + 120, is the first of year 10000


def test_a_simulation_steps_to_the_last_fire_of_year_9999_and_then_no_further() -> None:
    sim = Simulation(workers=1, start=START)
    task = sim.schedule("tick", FixedRate(60))
    steps = []
    while (step := sim.step()) is not None:  # ended: nothing is left before year 10000
        steps.append(step)
        assert len(steps) <= len(FIRES), f"stepped past year 9999: {steps}"
    assert [(step.kind, step.at) for step in steps] == [("finish", at) for at in FIRES]
    assert sim.now == FIRES[-1]  # the clock stays where the last event was
    assert task.status is TaskStatus.SCHEDULED and task.next_run_at == LATEST  # kept due
    assert list(to_frame(sim)["start"].dt.year) == [9999, 9999]
    sim.run(LATEST - 1)  # still runs on to any instant of year 9999
    assert sim.now == LATEST - 1 and sim.step() is None
    with pytest.raises(ValidationError, match="year 9999"):
        sim.run(LATEST)
    assert sim.shutdown()  # nothing in flight


def test_the_threaded_runtime_keeps_such_a_task_due_too() -> None:
    clock = FakeClock(START)
    with Scheduler(workers=1, clock=clock) as scheduler:
        task = scheduler.schedule("tick", jobs.noop, FixedRate(60))
        for at in FIRES:
            clock.set(at)
            assert scheduler.wait_idle(timeout=5.0)
        with pytest.raises(ValidationError, match="past year 9999"):
            clock.advance(120)  # the clock cannot reach the next slot
        assert task.status is TaskStatus.SCHEDULED and task.next_run_at == LATEST
        assert [record.started for record in scheduler.records()] == FIRES
        assert scheduler.shutdown(timeout=5.0)


@pytest.mark.parametrize("timeout", [5.0, None])
def test_a_run_modelled_to_end_past_year_9999_never_ends_and_shutdown_says_so(
    timeout: float | None,
) -> None:
    sim = Simulation(workers=1, start=START)
    task = sim.schedule("long", OneTime(START), duration=fixed(3600.0))
    step = sim.step()
    assert step is not None and (step.kind, step.at) == ("start", START)
    assert sim.step() is None  # its finish, in year 10000, is never reached
    assert sim.now == START and sim.busy == 1 and task.status is TaskStatus.RUNNING
    assert sim.shutdown(timeout=timeout) is False  # a run still in flight, as on threads
    assert sim.now < LATEST and utc_datetime(sim.now).year == 9999
    assert sim.records() == [] and task.status is TaskStatus.RUNNING


async def awaited() -> None:
    return None


def test_a_coroutine_run_modelled_past_year_9999_is_cut_by_any_shutdown_at_its_end() -> None:
    """Without a bound, a shutdown's drain still ends with year 9999: the coroutine run
    in flight then is cancelled there, its task kept due (it finished in year 10000)."""
    sim = Simulation(workers=1, start=START)
    task = sim.schedule("long", OneTime(START), duration=fixed(3600.0), action=awaited)
    assert sim.step() is not None and sim.step() is None
    assert sim.shutdown(timeout=None)
    (record,) = sim.records()
    assert (record.error, record.finished) == ("CancelledError: scheduler shut down", sim.now)
    assert utc_datetime(sim.now) == datetime(9999, 12, 31, 23, 59, 59, 999969, tzinfo=UTC)
    assert task.status is TaskStatus.SCHEDULED
