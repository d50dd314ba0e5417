"""``ScheduledTask.explain()``: when a task runs, in words, typed (README's first
scheduler), on both runtimes."""

from __future__ import annotations

from lldsched import FakeClock, FixedRate, OneTime, Scheduler, Simulation
from lldsched.model import ExecutionRecord
from tests.conftest import T0


class EveryHour:
    """A schedule of one's own: ``first_run`` and ``next_run`` only, no ``explain``."""

    def first_run(self, now: float) -> float | None:
        return now + 3600

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        return record.slot + 3600

    def __repr__(self) -> str:
        return "EveryHour()"


def test_a_task_explains_its_schedule_and_a_schedule_without_explain_by_its_repr() -> None:
    scheduler = Scheduler(clock=FakeClock(T0), tz="Europe/Berlin")
    simulation = Simulation(start=T0, tz="Europe/Berlin")
    for report, own, runtime in (
        (
            scheduler.schedule("report", print, "0 3 * * 1-5"),
            scheduler.schedule("own", print, EveryHour()),
            scheduler,
        ),
        (
            simulation.schedule("report", "0 3 * * 1-5", duration=1),
            simulation.schedule("own", EveryHour(), duration=1),
            simulation,
        ),
    ):
        assert report.explain() == "At 03:00, Monday through Friday (Europe/Berlin)"
        assert own.explain() == "EveryHour()"
        runtime.reschedule(report.id, FixedRate(30))
        assert runtime.task(report.id).explain() == "Every 30 s"
    scheduler.shutdown()


def test_a_task_explains_the_schedule_it_was_given_not_a_catch_up_in_front_of_it() -> None:
    """A ``run_now`` puts a plan in front of the schedule for one run: the task still
    explains the schedule it was registered with."""
    scheduler = Scheduler(clock=FakeClock(T0))
    task = scheduler.schedule("once", print, OneTime(delay=3600))
    given = task.explain()
    assert given == "Once, 3600 s after registration"
    scheduler.run_now(task.id)
    assert scheduler.task(task.id).explain() == given
    scheduler.shutdown()
