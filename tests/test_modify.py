"""modify(task_id, priority=..., retry=..., timeout=...): change how a task runs, in place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    Priority,
    RetryPolicy,
    Scheduler,
    SchedulerStateError,
    Simulation,
    SqliteTaskStore,
    TaskNotFoundError,
    TaskStatus,
    ValidationError,
)
from lldsched.sim import fixed
from tests import jobs
from tests.conftest import T0


def test_a_new_priority_reorders_the_queued_entry_at_once() -> None:
    sim = Simulation(workers=1, start=T0)
    sim.schedule("blocker", OneTime(delay=0), duration=fixed(100))
    low = sim.schedule("low", OneTime(delay=10), duration=fixed(5), priority=Priority.LOW)
    sim.schedule("normal", OneTime(delay=10), duration=fixed(5))
    sim.at(T0 + 50, lambda: sim.modify(low.id, priority=Priority.HIGH))
    sim.run(T0 + 200)
    assert [(r.name, r.started - T0) for r in sim.records()] == [
        ("blocker", 0), ("low", 100), ("normal", 105),
    ]  # fmt: skip
    assert low.priority is Priority.HIGH


def test_only_the_options_given_change_and_the_event_says_the_task_changed(
    driven: Any,
) -> None:
    retry = RetryPolicy(max_attempts=5)
    task = driven.add("report", FixedRate(60), retry=retry, timeout=30.0)
    driven.run_until(T0 + 1)
    assert driven.runtime.modify(task.id, priority=Priority.HIGH) is task
    assert (task.priority, task.retry, task.timeout) == (Priority.HIGH, retry, 30.0)
    driven.runtime.modify(task.id, timeout=None, retry=None)  # None: none, and the default
    assert (task.priority, task.retry, task.timeout) == (Priority.HIGH, RetryPolicy(), None)
    assert task.next_run_at == T0 + 60 and driven.runtime.pending() == [task]
    changed = driven.events[-1]
    assert (changed.previous, changed.status, changed.record) == (
        TaskStatus.SCHEDULED, TaskStatus.SCHEDULED, None,
    )  # fmt: skip


def test_modifying_to_the_same_values_writes_and_announces_nothing(driven: Any) -> None:
    task = driven.add("report", FixedRate(60), priority=Priority.LOW)
    before = len(driven.events)
    driven.runtime.modify(task.id, priority=2, timeout=None)
    driven.runtime.modify(task.id)
    assert len(driven.events) == before


def test_a_new_retry_policy_decides_the_next_failure() -> None:
    sim = Simulation(workers=1, start=T0)
    task = sim.schedule("import", OneTime(delay=0), fails=1.0, duration=fixed(1))
    sim.run(T0 + 1)
    assert task.status is TaskStatus.RETRYING  # attempt 1 failed; 3 allowed
    sim.modify(task.id, retry=RetryPolicy.never())
    assert task.next_run_at == T0 + 2  # the pending retry keeps its due time
    sim.run(T0 + 10)
    assert task.status is TaskStatus.FAILED and task.run_count == 2


@pytest.mark.parametrize(
    ("schedule", "retry", "after"),
    [
        (FixedRate(100), RetryPolicy(max_attempts=1), [(2, 10, "given_up"), (1, 100, "given_up")]),
        (OneTime(delay=0), RetryPolicy(max_attempts=1), [(2, 10, "failed")]),
        # None is the default policy (3 attempts, 1 s then 2 s): its second backoff follows
        (FixedRate(100), None, [(2, 10, "failed"), (3, 12, "given_up"), (1, 100, "failed")]),
    ],
    ids=["recurring, lowered", "one-off, lowered", "recurring, default"],
)
def test_a_retry_pending_at_a_new_retry_policy_still_runs_once_then_the_policy_decides(
    driven: Any, schedule: Any, retry: RetryPolicy | None, after: list[tuple[int, int, str]]
) -> None:
    # Attempt 1 failed at 0 and its retry is due at 10 when the policy changes: the retry
    # keeps its due time and runs; the new policy judges its failure
    # (docs/decisions/changing-a-task.md, "A pending retry runs under the policy that changed").
    task = driven.add(
        "import", schedule, action=jobs.broken, retry=RetryPolicy(initial_backoff=10), id="import"
    )
    driven.run_until(T0 + 1)
    driven.runtime.modify(task.id, retry=retry)
    assert (task.status, task.next_run_at, task.attempt) == (TaskStatus.RETRYING, T0 + 10, 1)
    driven.run_until(T0 + 100)
    assert [(r.attempt, r.due - T0, r.outcome) for r in task.history] == [(1, 0, "failed"), *after]
    one_off = isinstance(schedule, OneTime)
    assert driven.runtime.dead_letter() == (["import"] if one_off else [])


def test_the_run_in_flight_is_judged_at_its_finish_by_the_new_timeout() -> None:
    sim = Simulation(workers=1, start=T0)
    task = sim.schedule("job", OneTime(delay=0), duration=fixed(30), retry=RetryPolicy.never())
    sim.at(T0 + 5, lambda: sim.modify(task.id, timeout=10.0))
    sim.run(T0 + 40)
    (record,) = task.history
    assert record.timed_out and task.status is TaskStatus.FAILED


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"priority": 7}, "priority must be a Priority .*got 7"),
        ({"priority": True}, "priority must be a Priority .*got True"),
        ({"retry": 3}, "retry must be a RetryPolicy, got 3"),
        ({"timeout": -1}, "timeout must be seconds > 0, got -1"),
        ({"timeout": "30"}, "timeout must be seconds > 0, got '30'"),
    ],
)
def test_a_bad_value_is_refused_naming_it_and_the_task_is_untouched(
    driven: Any, options: dict[str, Any], message: str
) -> None:
    task = driven.add("report", FixedRate(60), priority=Priority.LOW, timeout=5.0)
    with pytest.raises(ValidationError, match=message):
        driven.runtime.modify(task.id, **options)
    assert (task.priority, task.retry, task.timeout) == (Priority.LOW, RetryPolicy(), 5.0)


def test_an_unknown_id_raises_naming_it(driven: Any) -> None:
    with pytest.raises(TaskNotFoundError, match="'nightly'"):
        driven.runtime.modify("nightly", priority=Priority.HIGH)


def test_a_cancelled_task_cannot_be_modified(driven: Any) -> None:
    task = driven.add("report", FixedRate(60, start_delay=60))
    driven.runtime.cancel(task.id)
    with pytest.raises(SchedulerStateError, match=r"modify task 'task-1' .*cancelled"):
        driven.runtime.modify(task.id, priority=Priority.HIGH)
    assert task.priority is Priority.NORMAL


def test_a_modification_is_written_through_the_store() -> None:
    store = InMemoryTaskStore()
    sim = Simulation(workers=1, start=T0, store=store)
    task = sim.schedule("report", FixedRate(60))
    sim.modify(task.id, retry=RetryPolicy(max_attempts=9), timeout=12.0)
    stored = store.get(task.id)
    assert stored is not None
    assert (stored.task.retry, stored.task.timeout) == (RetryPolicy(max_attempts=9), 12.0)


def test_a_modified_task_comes_back_modified_from_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(workers=1, clock=FakeClock(T0), store=store)
        task = scheduler.schedule("report", jobs.noop, FixedRate(60), id="report")
        scheduler.modify(task.id, priority=Priority.HIGH, timeout=9.0)
        scheduler.shutdown()
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(workers=1, clock=FakeClock(T0), store=store)
        restored = scheduler.task("report")
        assert (restored.priority, restored.timeout) == (Priority.HIGH, 9.0)
        scheduler.shutdown()


def test_modify_still_works_after_shutdown_for_the_store_to_keep() -> None:
    scheduler = Scheduler(workers=1, clock=FakeClock(T0))
    task = scheduler.schedule("report", jobs.noop, FixedRate(60, start_delay=60))
    scheduler.shutdown()
    scheduler.modify(task.id, priority=Priority.LOW)
    assert task.priority is Priority.LOW and task.status is TaskStatus.SCHEDULED


def test_modify_returns_the_task_also_when_nothing_changes() -> None:
    sim = Simulation(start=T0)
    task = sim.schedule("report", FixedRate(60), timeout=5)
    assert sim.modify(task.id, timeout=5) is task
    assert sim.modify(task.id, timeout=6) is task


def test_modifying_a_paused_task_queues_nothing_and_it_stays_paused() -> None:
    sim = Simulation(start=T0)
    task = sim.schedule("report", FixedRate(60, start_delay=60))
    assert sim.pause(task.id) is True
    sim.modify(task.id, priority=Priority.HIGH, timeout=5)
    assert sim.pending() == []
    sim.run(T0 + 300)
    assert task.status is TaskStatus.PAUSED and sim.records() == []
