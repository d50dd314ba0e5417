"""Recurring tasks outlive a bad slot: when a slot's attempts run out, the slot is given up
(its last record says so), listeners hear it, and the task is due at its next slot with a
fresh attempt counter; ``RetryPolicy.fail_after_given_up`` stops it after N in a row."""

from __future__ import annotations

from pathlib import Path

import pytest

from lldsched import (
    CronSchedule,
    FakeClock,
    FixedDelay,
    FixedRate,
    OneTime,
    Outcome,
    OverrunPolicy,
    RetryPolicy,
    Simulation,
    SqliteTaskStore,
    TaskStatus,
    ValidationError,
)
from lldsched.stores.codec import decode_task, encode_task
from tests import jobs
from tests.conftest import SchedulerFactory, settle
from tests.harness import Harness, RecordingStore

BROKEN = "RuntimeError: database restarting"


def noop() -> None:
    return None


def fail_slot(h: Harness, attempts: int, duration: float = 0.0) -> None:
    """Run ``attempts`` attempts in a row, each failing."""
    for _ in range(attempts):
        assert h.step(duration=duration, error=BROKEN) is not None


def test_a_fixed_rate_task_whose_slot_fails_three_times_gives_it_up_and_runs_at_the_next(
    clock: FakeClock,
) -> None:
    h = Harness(clock)
    slot = clock.now()
    task = h.core.add("hourly", noop, FixedRate(3600))  # the default RetryPolicy(): 3 attempts
    fail_slot(h, 3)
    last = task.history[-1]
    assert [r.outcome for r in task.history] == [Outcome.FAILED, Outcome.FAILED, Outcome.GIVEN_UP]
    assert last.outcome.ran and last.error == BROKEN and last.attempt == 3 and last.slot == slot
    assert task.status is TaskStatus.SCHEDULED and task.attempt == 0
    assert task.next_run_at == slot + 3600 and task.slot == slot + 3600
    assert h.core.dead_letter() == [] and task.given_up == 1
    following = h.step()
    assert following is not None and following.ok and following.attempt == 1
    assert following.due == slot + 3600 and task.given_up == 0  # a success ends the streak


def test_listeners_hear_the_given_up_slot_and_the_store_keeps_it(clock: FakeClock) -> None:
    store = RecordingStore()
    h = Harness(clock, store=store)
    task = h.core.add("hourly", noop, FixedRate(3600), retry=RetryPolicy(max_attempts=2))
    fail_slot(h, 2)
    event = h.events[-1]
    assert (event.previous, event.status) == (TaskStatus.RUNNING, TaskStatus.SCHEDULED)
    assert event.record is not None and event.record.outcome is Outcome.GIVEN_UP
    assert [r.outcome for r in store.records(task.id)] == [Outcome.FAILED, Outcome.GIVEN_UP]
    assert [status for _, status in store.saved][-1] == "scheduled"


def test_the_next_slot_has_a_fresh_attempt_counter_and_retries_again(clock: FakeClock) -> None:
    h = Harness(clock)
    task = h.core.add("hourly", noop, FixedRate(3600), retry=RetryPolicy(max_attempts=2))
    fail_slot(h, 2)
    retried = [h.step(error=BROKEN), h.step()]
    assert [(r.attempt, r.outcome) for r in retried if r is not None] == [
        (1, Outcome.FAILED), (2, Outcome.OK),
    ]  # fmt: skip
    assert task.status is TaskStatus.SCHEDULED and task.given_up == 0


def test_a_one_off_task_whose_attempts_run_out_still_fails_into_the_dead_letter(
    clock: FakeClock,
) -> None:
    h = Harness(clock)
    task = h.core.add("once", noop, OneTime(delay=0), retry=RetryPolicy(max_attempts=2))
    fail_slot(h, 2)
    assert task.status is TaskStatus.FAILED and task.next_run_at is None
    assert h.core.dead_letter() == [task.id]
    assert [r.outcome for r in task.history] == [Outcome.FAILED, Outcome.FAILED]


def test_fail_after_given_up_stops_the_task_after_that_many_slots_in_a_row(
    clock: FakeClock,
) -> None:
    h = Harness(clock)
    retry = RetryPolicy(max_attempts=1, fail_after_given_up=2)
    task = h.core.add("hourly", noop, FixedRate(3600), retry=retry)
    fail_slot(h, 1)
    assert task.status is TaskStatus.SCHEDULED and task.given_up == 1
    fail_slot(h, 1)
    assert task.status is TaskStatus.FAILED and task.next_run_at is None
    assert h.core.dead_letter() == [task.id] and h.queue.pop_live() is None
    assert [r.outcome for r in task.history] == [Outcome.GIVEN_UP, Outcome.GIVEN_UP]


def test_a_successful_slot_between_two_given_up_slots_resets_the_count(clock: FakeClock) -> None:
    h = Harness(clock)
    retry = RetryPolicy(max_attempts=1, fail_after_given_up=2)
    task = h.core.add("hourly", noop, FixedRate(3600), retry=retry)
    fail_slot(h, 1)
    h.step()
    fail_slot(h, 1)
    assert task.status is TaskStatus.SCHEDULED and task.given_up == 1
    assert h.core.dead_letter() == []


def test_redrive_after_the_limit_starts_a_fresh_count(clock: FakeClock) -> None:
    h = Harness(clock)
    retry = RetryPolicy(max_attempts=1, fail_after_given_up=1)
    task = h.core.add("hourly", noop, FixedRate(3600), retry=retry)
    fail_slot(h, 1)
    assert task.status is TaskStatus.FAILED
    assert h.core.redrive(task.id) is True and task.given_up == 0
    fail_slot(h, 1)
    assert task.status is TaskStatus.FAILED and h.core.dead_letter() == [task.id]


@pytest.mark.parametrize("limit", [0, -1, 1.5, True, "3", 2.0])
def test_a_bad_fail_after_given_up_is_rejected_with_the_value_in_the_message(
    limit: object, make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock, start=False)
    kept = scheduler.schedule("kept", noop, FixedRate(60))
    with pytest.raises(ValidationError, match="fail_after_given_up") as raised:
        scheduler.schedule("bad", noop, FixedRate(60), retry=RetryPolicy(fail_after_given_up=limit))  # type: ignore[arg-type]
    assert repr(limit) in str(raised.value)
    assert scheduler.tasks() == [kept]


def test_fail_after_given_up_defaults_to_never_and_survives_the_codec() -> None:
    assert RetryPolicy().fail_after_given_up is None
    assert not RetryPolicy().fails_after(10**6)
    task = Harness(FakeClock(0)).core.add(
        "hourly", jobs.noop, FixedRate(3600), retry=RetryPolicy(fail_after_given_up=4)
    )
    assert decode_task(task.id, encode_task(task.definition)).retry.fail_after_given_up == 4


# -- where the task goes next: the schedule's answer, as after a success ------------------


def test_a_skip_fixed_rate_whose_retries_outlast_the_period_goes_to_the_first_slot_after(
    clock: FakeClock,
) -> None:
    h = Harness(clock)
    slot = clock.now()
    retry = RetryPolicy(max_attempts=2, initial_backoff=50)
    task = h.core.add("minutely", noop, FixedRate(60), retry=retry)
    fail_slot(h, 2, duration=10)  # 0-10, retry due 60, runs 60-70: the slot is given up at 70
    assert task.next_run_at == slot + 120
    assert [(r.outcome, r.slot - slot) for r in task.history] == [
        (Outcome.FAILED, 0), (Outcome.GIVEN_UP, 0), (Outcome.SKIPPED, 60),
    ]  # fmt: skip


def test_a_catch_up_fixed_rate_runs_the_slot_after_the_given_up_one_at_once(
    clock: FakeClock,
) -> None:
    h = Harness(clock)
    slot = clock.now()
    retry = RetryPolicy(max_attempts=2, initial_backoff=50)
    task = h.core.add("minutely", noop, FixedRate(60, OverrunPolicy.CATCH_UP), retry=retry)
    fail_slot(h, 2, duration=10)
    assert task.next_run_at == slot + 60 and task.history[-1].outcome is Outcome.GIVEN_UP


def test_a_fixed_delay_gives_up_and_waits_its_delay_from_the_last_attempt(
    clock: FakeClock,
) -> None:
    h = Harness(clock)
    task = h.core.add("poll", noop, FixedDelay(300), retry=RetryPolicy.never())
    fail_slot(h, 1, duration=7)
    assert task.status is TaskStatus.SCHEDULED and task.next_run_at == clock.now() + 300


def test_a_cron_task_gives_up_its_fire_and_waits_for_the_next(clock: FakeClock) -> None:
    h = Harness(clock)
    task = h.core.add("hourly", noop, CronSchedule("0 * * * *"), retry=RetryPolicy(max_attempts=2))
    first = task.next_run_at
    assert first is not None
    fail_slot(h, 2, duration=5)
    assert task.status is TaskStatus.SCHEDULED and task.next_run_at == first + 3600


# -- both runtimes, and a store --------------------------------------------------------------


def test_the_simulation_drives_the_same_rule() -> None:
    sim = Simulation(workers=1, start=0.0)
    task = sim.schedule("hourly", FixedRate(3600), fails=1.0, retry=RetryPolicy(max_attempts=2))
    sim.run(3 * 3600 - 1)
    given_up = [r for r in sim.records() if r.outcome is Outcome.GIVEN_UP]
    assert [r.slot for r in given_up] == [0.0, 3600.0, 7200.0]
    assert task.status is TaskStatus.SCHEDULED and task.given_up == 3 and sim.dead_letter() == []


def test_the_threaded_scheduler_drives_the_same_rule(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("hourly", jobs.broken, FixedRate(3600), retry=RetryPolicy.never())
    settle(scheduler)
    clock.advance(3600)
    settle(scheduler)
    assert [r.outcome for r in task.history] == [Outcome.GIVEN_UP, Outcome.GIVEN_UP]
    assert task.status is TaskStatus.SCHEDULED and scheduler.dead_letter() == []


def test_the_count_of_given_up_slots_survives_a_restart_on_a_durable_store(
    make_scheduler: SchedulerFactory, clock: FakeClock, tmp_path: Path
) -> None:
    path = tmp_path / "tasks.db"
    retry = RetryPolicy(max_attempts=1, fail_after_given_up=2)
    with SqliteTaskStore(path) as store:
        first = make_scheduler(clock=clock, store=store)
        task = first.schedule("hourly", jobs.broken, FixedRate(3600), retry=retry)
        settle(first)
        assert task.given_up == 1
        assert first.shutdown()
    with SqliteTaskStore(path) as store:
        again = make_scheduler(clock=clock, store=store)
        (restored,) = again.tasks()
        assert restored.given_up == 1 and restored.retry.fail_after_given_up == 2
        clock.advance(3600)
        settle(again)
        assert restored.status is TaskStatus.FAILED and again.dead_letter() == [restored.id]


def test_a_redrive_before_a_restart_still_begins_a_fresh_count_after_it(
    make_scheduler: SchedulerFactory, clock: FakeClock, tmp_path: Path
) -> None:
    """The records still hold the slots that failed the task, and no record marks the
    redrive: a restart counts the task's live streak modulo its limit (each limit reached
    failed the task). Before, the restarted task counted 3 slots against its limit of 2
    and failed at its next slot given up, where the scheduler that redrove it counted 1."""
    path = tmp_path / "tasks.db"
    retry = RetryPolicy(max_attempts=1, fail_after_given_up=2)
    with SqliteTaskStore(path) as store:
        first = make_scheduler(clock=clock, store=store)
        task = first.schedule("hourly", jobs.broken, FixedRate(3600), id="h", retry=retry)
        settle(first)
        clock.advance(3600)
        settle(first)
        assert task.status is TaskStatus.FAILED
        assert first.redrive("h") and task.given_up == 0
        settle(first)  # the redriven slot, given up: one of a fresh streak
        assert task.status is TaskStatus.SCHEDULED and task.given_up == 1
        assert first.shutdown()
    with SqliteTaskStore(path) as store:
        again = make_scheduler(clock=clock, store=store)
        assert again.task("h").given_up == 1
