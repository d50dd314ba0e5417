"""Both runtimes have the shape views rely on (lldsched.runtime): the same verbs, by name
and meaning."""

from __future__ import annotations

import inspect

import pytest

from lldsched import FakeClock, FixedRate, OneTime, Scheduler, TaskNotFoundError, TaskStatus
from lldsched.runtime import Controls, Observable, Reads, Runtime, Stepped
from lldsched.sim import Simulation, fixed
from tests.conftest import T0, SchedulerFactory, settle

VERBS = ("pause", "resume", "cancel", "redrive", "run_now", "remove", "reschedule", "modify",
         "task", "tasks", "records", "dead_letter", "pending", "queue_stats", "metrics",
         "add_listener", "remove_listener")  # fmt: skip


def test_both_runtimes_satisfy_the_protocols_statically_and_at_run_time() -> None:
    threaded = Scheduler(workers=2)
    scheduler: Runtime = threaded  # mypy checks these two assignments
    simulation: Stepped = Simulation(workers=3)
    for runtime in (scheduler, simulation):
        for protocol in (Controls, Reads, Observable, Runtime):
            assert isinstance(runtime, protocol)
    assert isinstance(simulation, Stepped) and not isinstance(scheduler, Stepped)
    assert (scheduler.workers, simulation.workers) == (2, 3)
    assert threaded.shutdown()


def test_the_verbs_take_the_same_parameters_in_both_runtimes() -> None:
    for verb in VERBS:
        ours = inspect.signature(getattr(Scheduler, verb)).parameters
        theirs = inspect.signature(getattr(Simulation, verb)).parameters
        assert list(ours) == list(theirs), verb


def test_the_registration_options_share_names_in_both_runtimes() -> None:
    options = {"id", "replace_existing", "priority", "retry", "timeout", "args", "kwargs"}
    options |= {"misfire"}
    for runtime in (Scheduler, Simulation):
        for register in (runtime.schedule, runtime.scheduled):
            keywords = {
                name
                for name, parameter in inspect.signature(register).parameters.items()
                if parameter.kind is inspect.Parameter.KEYWORD_ONLY
            }
            assert options <= keywords, (runtime, register)


def test_scheduler_records_merge_the_task_histories_in_finish_order(
    make_scheduler: SchedulerFactory,
) -> None:
    clock = FakeClock(T0)
    scheduler = make_scheduler(clock=clock, workers=2)
    fast = scheduler.schedule("fast", lambda: None, FixedRate(10))
    slow = scheduler.schedule("slow", lambda: None, FixedRate(25))
    for _ in range(6):
        settle(scheduler)
        clock.advance(10)
    settle(scheduler)
    records = scheduler.records()
    assert {r.task_id for r in records} == {fast.id, slow.id}
    assert len(records) == len(fast.history) + len(slow.history)
    assert [r.finished for r in records] == sorted(r.finished for r in records)
    assert [r for r in records if r.task_id == slow.id] == list(slow.history)
    assert scheduler.now == clock.now()


def test_simulation_remove_forgets_the_task_and_its_run_in_flight_is_recorded() -> None:
    sim = Simulation(workers=1, start=T0)
    task = sim.schedule("long", FixedRate(60), duration=fixed(30))
    kept = sim.schedule("kept", OneTime(delay=100), duration=fixed(1))
    sim.run_for(10)  # "long" is running
    assert sim.remove(task.id) is task
    assert task.status is TaskStatus.CANCELLED
    assert [t.id for t in sim.tasks()] == [kept.id]
    with pytest.raises(TaskNotFoundError, match=task.id):
        sim.task(task.id)
    with pytest.raises(TaskNotFoundError, match="nope"):
        sim.remove("nope")
    sim.run_for(200)
    assert [(r.name, r.finished - T0) for r in sim.records()] == [("long", 30.0), ("kept", 101.0)]
