"""The simulation's one event loop: stepping event by event and running to an instant
process the same events in the same order."""

from __future__ import annotations

import pytest

from lldsched import FixedRate, OneTime, SchedulerStateError
from lldsched.sim import Simulation, fixed
from lldsched.sim.clock import VirtualClock
from lldsched.sim.scenario import build_scenario

DAY = 86_400.0


def with_interventions(sim: Simulation) -> Simulation:
    """The scenario plus a pause and a resume of compaction, so all three kinds of event occur."""
    compaction = next(task for task in sim.tasks() if task.name == "compaction")
    sim.at(sim.now + 6 * 3600, lambda: sim.pause(compaction.id))
    sim.at(sim.now + 9 * 3600 + 30, lambda: sim.resume(compaction.id))
    return sim


def test_a_stepped_day_gives_the_same_records_as_a_run_day() -> None:
    run = with_interventions(build_scenario(seed=7))
    end = run.now + DAY
    run.run(end)

    stepped = with_interventions(build_scenario(seed=7))
    kinds = set()
    while (step := stepped.step()) is not None and step.at <= end:
        kinds.add(step.kind)
    # step() went one event past the day: drop the record of that event, if it made one
    records = [r for r in stepped.records() if r.finished <= end]

    assert kinds == {"finish", "intervention", "start"}
    assert len(records) > 500
    assert records == run.records()


def test_step_describes_the_event_it_processed() -> None:
    sim = build_scenario(seed=1)
    first = sim.step()
    assert first is not None
    assert (first.at, first.kind, first.record) == (sim.now, "start", None)
    assert first.task_id is not None
    assert sim.task(first.task_id).name == "heartbeat"  # due at midnight with high priority
    while (step := sim.step()) is not None and step.kind != "finish":
        pass
    assert step is not None and step.record is not None
    assert step.task_id == step.record.task_id and step.at == step.record.finished


def test_step_says_blocked_for_a_dependent_held_back_not_started() -> None:
    """A dependent due while its upstream runs is held BLOCKED: step() said "start", and the
    player showed "load started at 00:00" for a run that began only at 00:50."""
    sim = Simulation(workers=2, start=0.0)
    extract = sim.schedule("extract", FixedRate(100), duration=50.0)
    load = sim.schedule("load", FixedRate(100), duration=5.0, depends_on=[extract.id])
    steps = [sim.step() for _ in range(4)]
    assert [(s.at, s.kind, s.task_id) for s in steps if s is not None] == [
        (0.0, "start", extract.id),
        (0.0, "blocked", load.id),
        (50.0, "finish", extract.id),
        (50.0, "start", load.id),
    ]
    assert sim.busy == 1 and steps[1] is not None and steps[1].record is None


def test_step_returns_none_when_nothing_is_left_to_happen() -> None:
    sim = Simulation(workers=1, start=100.0)
    assert sim.step() is None
    assert sim.now == 100.0


def test_the_virtual_clock_moves_forward_and_refuses_to_go_back() -> None:
    clock = VirtualClock(10.0)
    clock.advance_to(12.5)
    clock.advance_to(12.5)
    assert clock.now() == 12.5
    with pytest.raises(SchedulerStateError, match=r"from 12\.5 to 12\.0"):
        clock.advance_to(12.0)
    assert clock.now() == 12.5


def test_run_to_an_instant_processes_the_events_at_that_very_instant() -> None:
    """``run(until)`` stops after the last event at or before ``until``: a finish, an
    intervention and a start due at ``until`` itself happen in it, in that order."""
    sim = Simulation(workers=1, start=0.0)
    order: list[str] = []
    first = sim.schedule("first", OneTime(delay=0), duration=fixed(60))
    second = sim.schedule("second", OneTime(delay=60), duration=fixed(5))
    sim.at(60.0, lambda: order.append(f"intervention, first {sim.task(first.id).status.value}"))
    sim.run(60.0)
    assert order == ["intervention, first succeeded"]
    assert sim.task(second.id).running and sim.now == 60.0
