"""A message names a task by its id, and by its name after it only where the two differ:
a task registered with ``id=`` its own name was named twice, "task 'remind' ('remind')"
(one rule, ``lldsched.printable.name_after``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lldsched import FixedRate, OneTime, SchedulerStateError
from lldsched.sim import Simulation, fixed

START = datetime(2026, 1, 5, tzinfo=UTC)


def _finished(task_id: str) -> Simulation:
    sim = Simulation(workers=1, start=START)
    sim.schedule("remind", OneTime(delay=60), duration=fixed(1), id=task_id)
    sim.run(START.timestamp() + 120)
    return sim


def test_a_refusal_names_a_task_whose_name_is_its_id_once() -> None:
    sim = _finished("remind")
    with pytest.raises(SchedulerStateError) as refused:
        sim.reschedule("remind", FixedRate(60))
    assert str(refused.value).startswith(
        "cannot reschedule task 'remind': it is succeeded and will not run again; "
    )


def test_a_refusal_names_a_task_by_its_id_and_its_name_where_they_differ() -> None:
    sim = _finished("r1")
    with pytest.raises(SchedulerStateError) as refused:
        sim.reschedule("r1", FixedRate(60))
    assert str(refused.value).startswith("cannot reschedule task 'r1' ('remind'): it is succeeded")


def test_a_refused_remove_names_the_upstream_and_its_dependents_once_each() -> None:
    sim = Simulation(workers=1, start=START)
    sim.schedule("extract", OneTime(delay=3600), id="extract")
    sim.schedule("load", OneTime(delay=0), id="load", depends_on=["extract"])
    sim.schedule("report", OneTime(delay=0), id="r7", depends_on=["extract"])
    with pytest.raises(SchedulerStateError) as refused:
        sim.remove("extract")
    assert str(refused.value) == (
        "cannot remove 'extract': load, r7 ('report') depend on it; "
        "remove them first, or register them again without it"
    )


def test_an_upstream_failed_names_the_upstream_once() -> None:
    sim = Simulation(workers=1, start=START)
    sim.schedule("extract", OneTime(delay=60), id="extract", fails=1.0)
    down = sim.schedule("load", OneTime(delay=0), id="load", depends_on=["extract"])
    sim.run(START.timestamp() + 3600)
    assert (down.last_error or "").startswith("UpstreamFailed: upstream extract is failed; ")
