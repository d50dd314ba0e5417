"""``schedule(..., paused=True)``: a new task registered paused (APScheduler's
``next_run_time=None``), alike in both runtimes; a task that existed keeps its status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    OneTime,
    Scheduler,
    SqliteTaskStore,
    TaskStatus,
    ValidationError,
)
from tests import jobs
from tests.conftest import T0, SchedulerFactory
from tests.waits import wait_until


def test_a_task_registered_paused_does_not_run_until_resumed(driven: Any) -> None:
    task = driven.add("report", FixedRate(60), id="report", paused=True)  # due at once
    assert task.status is TaskStatus.PAUSED
    driven.run_until(T0 + 300)
    assert task.run_count == 0 and task.status is TaskStatus.PAUSED
    driven.runtime.resume("report")
    driven.run_until(T0 + 301)
    assert task.run_count == 1 and task.history[0].started == T0 + 300  # at its resume


def test_it_is_announced_as_a_registration_then_a_pause(driven: Any) -> None:
    driven.add("report", OneTime(delay=0), id="report", paused=True)
    changes = [(e.previous, e.status) for e in driven.events if e.task_id == "report"]
    assert changes == [(None, TaskStatus.SCHEDULED), (TaskStatus.SCHEDULED, TaskStatus.PAUSED)]


def test_an_existing_task_keeps_its_status_whatever_paused_says(driven: Any) -> None:
    task = driven.add("report", FixedRate(60, start_delay=60), id="report", paused=True)
    driven.runtime.resume("report")  # an operator resumed it
    again = driven.add("report", FixedRate(120), id="report", replace_existing=True, paused=True)
    assert again is task and task.status is TaskStatus.SCHEDULED  # the next start's call
    driven.runtime.pause("report")
    driven.add("report", FixedRate(60), id="report", replace_existing=True)  # paused=False
    assert task.status is TaskStatus.PAUSED


def test_paused_that_is_not_a_bool_is_refused_naming_it_and_registers_nothing(
    driven: Any,
) -> None:
    with pytest.raises(
        ValidationError, match=r"task 'report': paused must be True or False, got 'yes'"
    ):
        driven.add("report", FixedRate(60), id="report", paused="yes")
    assert driven.runtime.tasks() == []


def test_a_running_scheduler_never_starts_a_task_registered_paused_before_the_pause(
    make_scheduler: SchedulerFactory,
) -> None:
    # a task due at once on a running scheduler: registration and pause in one lock hold
    scheduler = make_scheduler(workers=4)
    tasks = [
        scheduler.schedule(f"job-{n}", jobs.noop, OneTime(delay=0), paused=True) for n in range(200)
    ]
    assert scheduler.wait_idle()
    assert all(t.status is TaskStatus.PAUSED and t.run_count == 0 for t in tasks)
    assert scheduler.records() == []


def test_the_decorator_form_takes_paused(make_scheduler: SchedulerFactory) -> None:
    scheduler = make_scheduler(clock=FakeClock(T0))

    @scheduler.scheduled(FixedRate(60), id="tick", paused=True)
    def tick() -> None: ...

    assert scheduler.task("tick").status is TaskStatus.PAUSED


def test_a_durable_store_keeps_the_task_paused_across_a_restart(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    for _ in range(2):  # a service registering its jobs at every start
        with (
            SqliteTaskStore(tmp_path / "tasks.db") as store,
            Scheduler(workers=1, clock=clock, store=store) as scheduler,
        ):
            task = scheduler.schedule(
                "report", jobs.noop, FixedRate(60), id="report", replace_existing=True, paused=True
            )
            assert scheduler.wait_idle()
            assert task.status is TaskStatus.PAUSED and task.run_count == 0
        clock.advance(600)


def test_on_a_shared_store_the_other_process_finds_it_paused_and_runs_nothing(
    tmp_path: Path,
) -> None:
    stores = [SqliteTaskStore(tmp_path / "tasks.db", shared=True, poll=0.02) for _ in range(2)]
    first, second = (Scheduler(workers=1, store=store).start() for store in stores)
    try:
        first.schedule("beat", jobs.noop, FixedRate(0.01), id="beat", paused=True)
        again = second.schedule(  # the other process's start: the same job, replace_existing
            "beat", jobs.noop, FixedRate(0.01), id="beat", replace_existing=True
        )
        assert again.status is TaskStatus.PAUSED
        assert first.wait_idle() and second.wait_idle()
        assert stores[0].records("beat") == []
        second.resume("beat")
        # The run lands in either process: the store is where both write it.
        wait_until(lambda: bool(stores[0].records("beat")), timeout=10, what="a run of beat")
    finally:
        for scheduler in (first, second):
            scheduler.shutdown()
        for store in stores:
            store.close()
