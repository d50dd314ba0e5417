"""reschedule(task_id, schedule): a new *when* for a registered task, same id, history kept."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from typing import Any

import pytest

from lldsched import (
    CronSchedule,
    EventLog,
    FakeClock,
    FixedDelay,
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    Overlap,
    RetryPolicy,
    ScheduleError,
    SchedulerStateError,
    Simulation,
    TaskNotFoundError,
    TaskStatus,
    ValidationError,
)
from lldsched.sim import fixed
from tests.conftest import T0, SchedulerFactory, settle


def first_runs_fail(count: int = 1) -> Callable[[random.Random, int], bool]:
    """A failure model: the first ``count`` runs fail, every later one succeeds."""
    outcomes = iter([True] * count)
    return lambda rng, attempt: next(outcomes, False)


def test_a_scheduled_task_takes_the_new_schedule_as_if_registered_now(driven: Any) -> None:
    task = driven.add("report", FixedRate(3600))
    driven.run_until(T0 + 100)
    assert driven.runtime.reschedule(task.id, FixedRate(600, start_delay=600)) is task
    assert task.schedule == FixedRate(600, start_delay=600) and task.next_run_at == T0 + 700
    assert driven.runtime.pending() == [task] and task.status is TaskStatus.SCHEDULED
    changed = driven.events[-1]
    assert (changed.previous, changed.status, changed.record) == (
        TaskStatus.SCHEDULED, TaskStatus.SCHEDULED, None,
    )  # fmt: skip
    driven.run_until(T0 + 1300)
    assert [r.slot - T0 for r in task.history] == [0, 700, 1300]  # history kept


def test_cron_text_is_a_schedule_and_reads_in_the_runtime_zone() -> None:
    sim = Simulation(workers=1, start=T0, tz="Europe/Berlin")  # T0 is 10:00 in Berlin
    task = sim.schedule("report", FixedRate(3600))
    sim.reschedule(task.id, "0 12 * * *")
    assert task.schedule == CronSchedule("0 12 * * *", tz="Europe/Berlin")
    assert task.next_run_at == T0 + 2 * 3600  # 12:00 Berlin is 11:00 UTC: two hours on


def test_a_running_task_finishes_its_run_then_the_new_schedule_starts_from_its_finish() -> None:
    sim = Simulation(workers=1, start=T0)
    task = sim.schedule("report", FixedRate(60), duration=fixed(30))
    sim.at(T0 + 10, lambda: sim.reschedule(task.id, FixedDelay(100, start_delay=50)))
    sim.run(T0 + 400)
    assert [(r.started - T0, r.finished - T0) for r in task.history] == [
        (0, 30), (80, 110), (210, 240), (340, 370),
    ]  # fmt: skip


def test_a_retrying_task_runs_its_pending_retry_first_with_its_attempt_counter() -> None:
    sim = Simulation(workers=1, start=T0)
    retry = RetryPolicy(max_attempts=3, initial_backoff=20)
    task = sim.schedule("import", FixedRate(3600), fails=first_runs_fail(), retry=retry)
    sim.run(T0 + 5)
    assert task.status is TaskStatus.RETRYING and task.next_run_at == T0 + 20
    sim.reschedule(task.id, FixedRate(600, start_delay=600))
    assert task.status is TaskStatus.RETRYING and task.next_run_at == T0 + 20
    sim.run(T0 + 1300)
    assert [(r.attempt, r.started - T0, r.ok) for r in task.history] == [
        (1, 0, False), (2, 20, True), (1, 620, True), (1, 1220, True),
    ]  # fmt: skip


def test_a_paused_task_stays_paused_and_resumes_on_the_new_schedule(driven: Any) -> None:
    task = driven.add("report", FixedRate(3600))
    driven.run_until(T0 + 1)
    driven.runtime.pause(task.id)
    driven.runtime.reschedule(task.id, FixedRate(600, start_delay=600))
    assert task.status is TaskStatus.PAUSED and driven.runtime.pending() == []
    driven.run_until(T0 + 2000)
    assert task.run_count == 1
    driven.runtime.resume(task.id)  # its first slot (601) passed while paused: runs at once
    driven.run_until(T0 + 2600)
    assert [r.started - T0 for r in task.history] == [0, 2000, 2600]


def test_a_failed_task_takes_the_schedule_and_stays_dead_lettered_until_redrive() -> None:
    sim = Simulation(workers=1, start=T0)
    task = sim.schedule(
        "import", OneTime(delay=0), fails=first_runs_fail(), retry=RetryPolicy.never()
    )
    sim.run(T0 + 10)
    assert task.status is TaskStatus.FAILED
    sim.reschedule(task.id, FixedRate(300))
    assert task.status is TaskStatus.FAILED and sim.dead_letter() == [task.id]
    assert sim.pending() == [] and task.next_run_at is None
    sim.redrive(task.id)
    sim.run(T0 + 700)
    assert [r.started - T0 for r in task.history] == [0, 10, 310, 610]


def test_a_rescheduled_task_whose_owed_retry_fails_for_good_is_redriven_onto_the_new_grid() -> None:
    sim = Simulation(workers=1, start=T0)
    # fail_after_given_up=1: the slot given up sends this recurring task to the dead letter
    retry = RetryPolicy(max_attempts=2, initial_backoff=10, fail_after_given_up=1)
    task = sim.schedule("import", FixedRate(3600), fails=first_runs_fail(2), retry=retry)
    sim.run(T0 + 1)
    sim.reschedule(task.id, FixedRate(600))
    sim.run(T0 + 100)
    assert task.status is TaskStatus.FAILED  # the owed retry failed too
    sim.at(T0 + 200, lambda: sim.redrive(task.id))
    sim.run(T0 + 900)
    assert [(r.attempt, r.started - T0) for r in task.history][2:] == [(1, 200), (1, 800)]


@pytest.mark.parametrize("finish", ["cancel", "succeed"])
def test_a_finished_task_cannot_be_rescheduled_and_is_left_as_it_was(
    driven: Any, finish: str
) -> None:
    task = driven.add("once", OneTime(delay=60))
    if finish == "cancel":
        driven.runtime.cancel(task.id)
    else:
        driven.run_until(T0 + 60)
    status = task.status
    with pytest.raises(
        SchedulerStateError, match=rf"reschedule task 'task-1' \('once'\).*{status.value}"
    ):
        driven.runtime.reschedule(task.id, FixedRate(60))
    assert task.status is status and task.schedule == OneTime(delay=60)
    assert driven.runtime.pending() == []


def test_an_unknown_id_raises_naming_it(driven: Any) -> None:
    with pytest.raises(TaskNotFoundError, match="'nightly'"):
        driven.runtime.reschedule("nightly", FixedRate(60))


def test_a_bad_schedule_is_refused_naming_it_and_the_task_keeps_its_own(driven: Any) -> None:
    task = driven.add("report", FixedRate(3600))
    driven.run_until(T0 + 1)
    with pytest.raises(ScheduleError, match="'61 \\* \\* \\* \\*'"):
        driven.runtime.reschedule(task.id, "61 * * * *")
    with pytest.raises(ValidationError, match=r"schedule must provide first_run.*got 60"):
        driven.runtime.reschedule(task.id, 60)
    assert task.schedule == FixedRate(3600) and task.next_run_at == T0 + 3600
    assert driven.runtime.pending() == [task]


def test_reschedule_supersedes_an_extra_run_not_yet_started() -> None:
    sim = Simulation(workers=1, start=T0)
    task = sim.schedule("report", FixedRate(3600))
    sim.run(T0 + 100)
    sim.run_now(task.id)
    sim.reschedule(task.id, FixedRate(600, start_delay=600))
    sim.run(T0 + 800)
    assert [r.started - T0 for r in task.history] == [0, 700]


@pytest.mark.parametrize("overlap", [Overlap.ALLOW, Overlap.CANCEL_OTHER])
@pytest.mark.parametrize("paused", [False, True], ids=["running", "paused mid-run"])
def test_reschedule_supersedes_the_slot_an_overlapping_task_queued_behind_its_run(
    overlap: Overlap, paused: bool
) -> None:
    # The run of the slot at T0 queues the old schedule's next slot (T0 + 60 s) as it
    # begins.  A reschedule at T0 + 30 s drops that slot as it drops any plan in front of
    # the old schedule: the run in flight finishes (T0 + 100 s), and the new schedule's
    # first run counts from that finish.  Before: the old slot still ran, beside the
    # run (or at the resume), and the new schedule waited for it to end.
    sim = Simulation(workers=2, start=T0)
    limit = 2 if overlap is Overlap.ALLOW else None
    task = sim.schedule("long", FixedRate(60), duration=fixed(100), overlap=overlap,
                        max_instances=limit)  # fmt: skip
    sim.run(T0 + 30)
    if paused:
        assert sim.pause(task.id) is True
    sim.reschedule(task.id, FixedRate(1000))
    if paused:
        assert sim.resume(task.id) is True
    sim.run(T0 + 1500)
    assert [(r.slot - T0, r.started - T0) for r in task.history] == [
        (0, 0), (100, 100), (1100, 1100),
    ]  # fmt: skip


def test_the_new_schedule_is_written_through_the_store() -> None:
    store = InMemoryTaskStore()
    sim = Simulation(workers=1, start=T0, store=store)
    task = sim.schedule("report", FixedRate(3600))
    sim.reschedule(task.id, FixedRate(60, start_delay=60))
    stored = store.get(task.id)
    assert stored is not None
    assert (stored.task.schedule, stored.next_run_at) == (FixedRate(60, start_delay=60), T0 + 60)


def test_rescheduling_a_running_task_on_the_threaded_runtime_waits_for_its_run(
    make_scheduler: SchedulerFactory, clock: FakeClock, log: EventLog
) -> None:
    release = threading.Event()
    scheduler = make_scheduler(clock=clock, listeners=[log])
    task = scheduler.schedule("job", lambda: release.wait(5), FixedRate(60))
    assert log.wait_for(lambda e: e.status is TaskStatus.RUNNING, timeout=5) is not None
    scheduler.reschedule(task.id, FixedRate(600, start_delay=300))
    assert task.status is TaskStatus.RUNNING and scheduler.pending() == []
    clock.advance(10)
    release.set()
    settle(scheduler)
    assert task.next_run_at == T0 + 310  # the new first run, counted from the finish at +10


def test_reschedule_after_shutdown_is_refused(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("job", lambda: None, FixedRate(60, start_delay=60))
    scheduler.shutdown()
    with pytest.raises(SchedulerStateError, match=r"cannot reschedule 'task-1'.*shut down"):
        scheduler.reschedule(task.id, FixedRate(5))
    assert task.schedule == FixedRate(60, start_delay=60) and task.next_run_at == T0 + 60
