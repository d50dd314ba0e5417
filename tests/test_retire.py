"""Finished tasks retire from the registry after the runtime's ``retain_finished``
(lldsched.core.retention): by count or by age, in both runtimes; their records stay."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import lldsched.core.retention
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
    StoreError,
    TaskNotFoundError,
    TaskRetiredError,
    TaskStatus,
    ValidationError,
    Window,
)
from lldsched.storecalls import purge
from lldsched.testing import Stepper
from tests import jobs
from tests.conftest import T0
from tests.interrupting import InterruptingStore
from tests.runtimes import KINDS, Driven


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def opened() -> Iterator[list[Driven]]:
    """Drivens a test opens, closed after it."""
    made: list[Driven] = []
    yield made
    for driven in made:
        driven.close()


def driven_with(made: list[Driven], kind: str, **options: Any) -> Driven:
    driven = Driven(kind, **options)
    made.append(driven)
    return driven


def one_offs(driven: Driven, count: int, *, first: float = 1.0) -> list[str]:
    """Register ``count`` one-off tasks due a second apart from ``T0 + first``."""
    return [driven.add(f"once-{n}", OneTime(T0 + first + n)).id for n in range(count)]


def add_broken(driven: Driven, name: str, schedule: Any) -> str:
    """A task whose action always raises, with one attempt."""
    runtime = driven.runtime
    once = RetryPolicy(max_attempts=1)
    if isinstance(runtime, Scheduler):
        return runtime.schedule(name, jobs.broken, schedule, retry=once).id
    return runtime.schedule(name, schedule, action=jobs.broken, retry=once).id


def held(driven: Driven) -> list[str]:
    return [task.id for task in driven.runtime.tasks()]


# -- by count ------------------------------------------------------------------------------


def test_a_count_keeps_the_most_recently_finished_tasks(kind: str, opened: list[Driven]) -> None:
    driven = driven_with(opened, kind, retain_finished=2)
    ids = one_offs(driven, 4)
    driven.run_until(T0 + 10)
    assert held(driven) == ids[2:]
    assert all(driven.runtime.task(i).status is TaskStatus.SUCCEEDED for i in ids[2:])


def test_a_count_of_a_hundred_or_more_retires_in_batches_holding_a_hundredth_more(
    kind: str, opened: list[Driven]
) -> None:
    driven = driven_with(opened, kind, retain_finished=200)  # up to 202 held, batches of 3
    ids = one_offs(driven, 206)  # the n-th finishes at T0 + 1 + n
    driven.run_until(T0 + 202)
    assert held(driven) == ids  # 202 finished: none retired yet
    driven.run_until(T0 + 203)
    assert held(driven) == ids[3:]  # 203: the three earliest retire together, 200 stay
    driven.run_until(T0 + 205)
    assert held(driven) == ids[3:]  # 202 again
    driven.run_until(T0 + 206)
    assert held(driven) == ids[6:]
    with pytest.raises(TaskRetiredError):
        driven.runtime.task(ids[5])


def test_a_task_that_retired_says_so_naming_its_id_and_the_retention(
    kind: str, opened: list[Driven]
) -> None:
    driven = driven_with(opened, kind, retain_finished=1)
    first, _ = one_offs(driven, 2)
    driven.run_until(T0 + 10)
    with pytest.raises(TaskRetiredError) as raised:
        driven.runtime.task(first)
    message = str(raised.value)
    assert repr(first) in message
    assert "succeeded" in message and "retired" in message and "retain_finished=1" in message
    assert isinstance(raised.value, TaskNotFoundError)  # code that catches not-found still works


def test_every_control_verb_on_a_retired_task_says_it_retired(
    kind: str, opened: list[Driven]
) -> None:
    driven = driven_with(opened, kind, retain_finished=0)
    (task_id,) = one_offs(driven, 1)
    driven.run_until(T0 + 10)
    runtime = driven.runtime
    verbs: list[Any] = [
        runtime.cancel, runtime.pause, runtime.resume, runtime.redrive, runtime.remove,
        runtime.run_now, lambda i: runtime.reschedule(i, FixedRate(60)),
        lambda i: runtime.modify(i, timeout=5.0),
    ]  # fmt: skip
    for verb in verbs:
        with pytest.raises(TaskRetiredError, match="retired"):
            verb(task_id)


def test_zero_retires_a_task_as_it_finishes(kind: str, opened: list[Driven]) -> None:
    driven = driven_with(opened, kind, retain_finished=0)
    one_offs(driven, 3)
    recurring = driven.add("every minute", FixedRate(60)).id
    driven.run_until(T0 + 200)
    assert held(driven) == [recurring]  # a live recurring task never retires


def test_a_cancelled_task_retires_too(kind: str, opened: list[Driven]) -> None:
    driven = driven_with(opened, kind, retain_finished=0)
    recurring = driven.add("every minute", FixedRate(60)).id
    driven.runtime.cancel(recurring)
    # its first run (due at once) may be in flight on a thread: it retires when that ends
    driven.settle()
    with pytest.raises(TaskRetiredError, match="cancelled"):
        driven.runtime.task(recurring)


def test_none_keeps_every_finished_task(kind: str, opened: list[Driven]) -> None:
    driven = driven_with(opened, kind, retain_finished=None)
    ids = one_offs(driven, 5)
    driven.run_until(T0 + 10)
    assert held(driven) == ids


def test_the_default_keeps_ten_thousand_finished_tasks() -> None:
    assert Simulation().retain_finished == 10_000
    assert Scheduler().retain_finished == 10_000


# -- by age --------------------------------------------------------------------------------


def test_an_age_keeps_a_finished_task_that_long_after_it_finished(
    kind: str, opened: list[Driven]
) -> None:
    driven = driven_with(opened, kind, retain_finished=timedelta(minutes=1))
    early = one_offs(driven, 2)  # finish at T0 + 1 and T0 + 2
    late = driven.add("later", OneTime(T0 + 61.5)).id
    last = driven.add("last", OneTime(T0 + 100)).id
    driven.run_until(T0 + 61.5)  # "later" finishes: T0 + 1 is a minute old, T0 + 2 is not
    assert held(driven) == [early[1], late, last]
    driven.run_until(T0 + 100)
    assert held(driven) == [late, last]


def test_an_age_retires_the_only_finished_task_at_a_later_run_of_another(
    kind: str, opened: list[Driven]
) -> None:
    driven = driven_with(opened, kind, retain_finished=timedelta(minutes=1))
    (once,) = one_offs(driven, 1)  # finishes at T0 + 1, the only finished task held
    tick = driven.add("tick", FixedRate(45)).id  # runs at T0, T0 + 45, T0 + 90, ...
    driven.run_until(T0 + 45)  # 44 s after it finished: held
    assert held(driven) == [once, tick]
    driven.run_until(T0 + 90)  # a run finishes 89 s after it did: it retires
    assert held(driven) == [tick]


def test_a_finished_task_removed_while_held_is_not_retired_again(
    kind: str, opened: list[Driven]
) -> None:
    # Removed within its retention, it is no longer held: the retirement a later finish
    # makes due passes over it (before it would look for a task no longer registered).
    driven = driven_with(opened, kind, retain_finished=timedelta(minutes=1))
    (once,) = one_offs(driven, 1)  # finishes at T0 + 1
    tick = driven.add("tick", FixedRate(45)).id
    driven.run_until(T0 + 45)
    driven.runtime.remove(once)
    driven.run_until(T0 + 90)  # a run finishes 89 s after it did
    assert held(driven) == [tick]
    assert driven.runtime.task(tick).run_count == 3


# -- what stays -----------------------------------------------------------------------------


def test_the_records_of_retired_tasks_stay_in_records(kind: str, opened: list[Driven]) -> None:
    driven = driven_with(opened, kind, retain_finished=1)
    ids = one_offs(driven, 4)
    driven.run_until(T0 + 10)
    records = driven.runtime.records()
    assert [(r.task_id, r.due, r.ok) for r in records] == [
        (task_id, T0 + 1 + n, True) for n, task_id in enumerate(ids)
    ]


def test_a_scheduler_keeps_the_priority_and_schedule_of_the_tasks_its_history_reaches() -> None:
    # history_limit=2: the retired tasks' shared history holds the last two records, of
    # "x" (registered again after it retired) and "b"; the report reads their priority
    # and schedule as each was when it last retired, and nothing of "a".
    scheduler = Scheduler(clock=FakeClock(T0), history_limit=2, retain_finished=0)
    with Stepper(scheduler) as steps:
        for task_id, priority, period in [
            ("x", Priority.HIGH, 60), ("a", Priority.HIGH, 60),
            ("x", Priority.LOW, 120), ("b", Priority.HIGH, 60),
        ]:  # fmt: skip
            scheduler.schedule(task_id, jobs.noop, FixedRate(period), id=task_id,
                               priority=priority)  # fmt: skip
            steps.settle()  # its first run, due now
            scheduler.cancel(task_id)  # it retires
        assert [r.task_id for r in scheduler.records()] == ["x", "b"]
        assert scheduler.priorities() == {"x": Priority.LOW, "b": Priority.HIGH}
        assert scheduler.schedules() == {"x": FixedRate(120), "b": FixedRate(60)}


def test_what_the_report_reads_of_retired_tasks_is_forgotten_a_hundredth_at_a_time() -> None:
    # history_limit=200: the priorities of the last 200 tasks that retired are kept, and
    # up to 2 more (a hundredth) before the oldest are forgotten, in one batch.
    scheduler = Scheduler(clock=FakeClock(T0), history_limit=200, retain_finished=0)
    with Stepper(scheduler) as steps:
        for count, kept_then in [(202, 202), (1, 200)]:
            for _ in range(count):
                scheduler.schedule("hot", jobs.noop, OneTime(delay=0), priority=Priority.HIGH)
            steps.settle()
            assert scheduler.tasks() == []
            kept = scheduler.priorities()
            assert set(kept.values()) == {Priority.HIGH}
            assert len(kept) == kept_then


def test_the_store_keeps_a_retired_tasks_records_and_final_state(
    kind: str, opened: list[Driven]
) -> None:
    store = InMemoryTaskStore()
    driven = driven_with(opened, kind, store=store, retain_finished=0)
    (task_id,) = one_offs(driven, 1)
    driven.run_until(T0 + 10)
    assert held(driven) == []
    snapshot = store.get(task_id)
    assert snapshot is not None and snapshot.status is TaskStatus.SUCCEEDED
    assert [(r.task_id, r.ok) for r in store.records(task_id)] == [(task_id, True)]


def test_a_failed_task_stays_in_the_dead_letter_until_redriven(
    kind: str, opened: list[Driven]
) -> None:
    driven = driven_with(opened, kind, retain_finished=0)
    failed = add_broken(driven, "fails", OneTime(T0 + 1))
    one_offs(driven, 3, first=2)
    driven.run_until(T0 + 10)
    runtime = driven.runtime
    assert held(driven) == [failed]
    assert runtime.task(failed).status is TaskStatus.FAILED
    assert runtime.dead_letter() == [failed]
    assert runtime.redrive(failed)
    driven.run_until(T0 + 20)
    assert runtime.dead_letter() == [failed]  # it failed again: back in the dead letter
    assert runtime.remove(failed).id == failed
    assert held(driven) == [] and runtime.dead_letter() == []


def test_a_retired_id_registered_again_is_a_new_task(kind: str, opened: list[Driven]) -> None:
    driven = driven_with(opened, kind, retain_finished=0)
    driven.add("reminder", OneTime(T0 + 1), id="reminder-42")
    driven.run_until(T0 + 10)
    again = driven.add("reminder", OneTime(T0 + 20), id="reminder-42")
    assert driven.runtime.task("reminder-42") is again
    assert again.status is TaskStatus.SCHEDULED and again.run_count == 0


def test_a_retired_id_replaced_stays_finished_as_a_held_one_does(
    kind: str, opened: list[Driven]
) -> None:
    """replace_existing=True finds a retired task as it finds a held one: it takes the new
    definition and keeps its finished status, so nothing runs again."""
    store = InMemoryTaskStore()
    driven = driven_with(opened, kind, store=store, retain_finished=0)
    driven.add("migrate", OneTime(T0 + 1), id="migrate")
    driven.run_until(T0 + 10)
    assert held(driven) == []
    again = driven.add("migrate", OneTime(T0 + 20), id="migrate", replace_existing=True)
    assert (again.status, again.next_run_at, again.schedule) == (
        TaskStatus.SUCCEEDED, None, OneTime(T0 + 20)
    )  # fmt: skip
    driven.run_until(T0 + 30)
    assert [r.outcome.value for r in store.records("migrate")] == ["ok"]  # one run, not two
    snapshot = store.get("migrate")
    assert snapshot is not None and snapshot.status is TaskStatus.SUCCEEDED
    assert snapshot.task.schedule == OneTime(T0 + 20)  # the new definition is written
    with pytest.raises(TaskRetiredError, match="'migrate' finished \\(succeeded\\)"):
        driven.runtime.task("migrate")  # and it retired again


def test_a_retired_dependent_replaced_is_linked_to_its_upstream_again(
    kind: str, opened: list[Driven]
) -> None:
    """replace_existing=True on a retired task that names an upstream: held again, it is
    that upstream's dependent again, which therefore cannot be removed under it (as
    under a dependent that never retired)."""
    driven = driven_with(opened, kind, retain_finished=1)
    driven.add("load", FixedRate(60), id="load")
    driven.add("report", OneTime(T0 + 1), id="report", depends_on=["load"])
    driven.add("other", OneTime(T0 + 2), id="other")
    driven.run_until(T0 + 10)
    assert held(driven) == ["load", "other"]  # report finished first, and retired
    again = driven.add(
        "report", OneTime(T0 + 20), id="report", depends_on=["load"], replace_existing=True
    )
    assert again.status is TaskStatus.SUCCEEDED and again.depends_on == ("load",)
    assert held(driven) == ["load", "report"]  # the newest finished now: other retired
    told = [(e.previous, e.status, e.record) for e in driven.events if e.task_id == "report"]
    assert told[-1] == (TaskStatus.SUCCEEDED, TaskStatus.SUCCEEDED, None)  # replaced: said
    with pytest.raises(SchedulerStateError, match=r"'load'.*report depends on it"):
        driven.runtime.remove("load")
    assert held(driven) == ["load", "report"]  # nothing changed


class _SavesFail(InMemoryTaskStore):
    """An in-memory store whose saves raise while ``down`` is set."""

    down = False

    def save(self, snapshot: Any, record: Any = None) -> None:
        if self.down:
            raise StoreError("connection refused: the server is down")
        super().save(snapshot, record)


def test_a_retired_id_whose_replacement_the_store_refuses_is_still_retired(
    kind: str, opened: list[Driven]
) -> None:
    store = _SavesFail()
    driven = driven_with(opened, kind, store=store, retain_finished=0)
    driven.add("migrate", OneTime(T0 + 1), id="migrate")
    driven.run_until(T0 + 10)
    store.down = True
    with pytest.raises(StoreError, match="server is down"):
        driven.add("migrate", OneTime(T0 + 20), id="migrate", replace_existing=True)
    assert held(driven) == []
    with pytest.raises(TaskRetiredError, match="'migrate' finished \\(succeeded\\)"):
        driven.runtime.task("migrate")  # not "unknown": registering it again still replaces
    store.down = False
    again = driven.add("migrate", OneTime(T0 + 20), id="migrate", replace_existing=True)
    assert again.status is TaskStatus.SUCCEEDED


def test_a_retired_id_replaced_with_an_action_the_store_cannot_keep_is_refused_naming_it(
    kind: str, tmp_path: Path
) -> None:
    """The failed-save rule of a registration (SchedulerCore._first_write) for a retired
    id replaced: the store's error names the value it could not keep, nothing is
    written or announced, and the id is still retired (registering it again replaces)."""
    store = SqliteTaskStore(tmp_path / "tasks.db")
    driven = Driven(kind, store=store, retain_finished=0)
    try:
        driven.add("migrate", OneTime(T0 + 1), id="migrate")
        driven.run_until(T0 + 10)
        told = len(driven.events)
        runtime = driven.runtime
        options: dict[str, Any] = {"id": "migrate", "replace_existing": True}
        with pytest.raises(ValidationError, match=r"<lambda>.* has none"):
            if isinstance(runtime, Scheduler):
                runtime.schedule("migrate", lambda: None, OneTime(T0 + 20), **options)
            else:
                runtime.schedule("migrate", OneTime(T0 + 20), action=lambda: None, **options)
        assert held(driven) == [] and len(driven.events) == told
        snapshot = store.get("migrate")
        assert snapshot is not None and snapshot.task.schedule == OneTime(T0 + 1)  # as it was
        with pytest.raises(TaskRetiredError, match="'migrate' finished \\(succeeded\\)"):
            runtime.task("migrate")
        again = driven.add("migrate", OneTime(T0 + 20), id="migrate", replace_existing=True)
        assert again.status is TaskStatus.SUCCEEDED
    finally:
        driven.close()
        store.close()


@pytest.mark.parametrize("retain", [None, 0], ids=["held", "retired"])
def test_a_finished_id_replaced_with_paused_keeps_its_finished_status_held_or_retired(
    kind: str, opened: list[Driven], retain: int | None
) -> None:
    """paused=True pauses a task the call creates; a finished task replaced, held or
    retired, keeps the status it finished with, as any replacement keeps its status.
    PAUSED would make resume() run the one-off job again, what replacing a retired id
    by its old status is there to prevent (docs/decisions/lifecycle.md, "Finished tasks retire")."""
    store = InMemoryTaskStore()
    driven = driven_with(opened, kind, store=store, retain_finished=retain)
    driven.add("migrate", OneTime(T0 + 1), id="migrate")
    driven.run_until(T0 + 10)
    assert held(driven) == ([] if retain == 0 else ["migrate"])
    again = driven.add(
        "migrate", OneTime(T0 + 20), id="migrate", replace_existing=True, paused=True
    )
    assert (again.status, again.next_run_at, again.schedule) == (
        TaskStatus.SUCCEEDED, None, OneTime(T0 + 20)
    )  # fmt: skip
    told = [(e.previous, e.status) for e in driven.events if e.task_id == "migrate"]
    assert told[-1] == (TaskStatus.SUCCEEDED, TaskStatus.SUCCEEDED)
    snapshot = store.get("migrate")
    assert snapshot is not None and snapshot.status is TaskStatus.SUCCEEDED
    assert snapshot.task.schedule == OneTime(T0 + 20)
    driven.run_until(T0 + 30)
    assert [r.outcome.value for r in store.records("migrate")] == ["ok"]  # one run, not two


def test_a_one_off_registered_by_id_at_every_start_runs_once_whatever_the_retention(
    kind: str,
) -> None:
    """The service start of docs/GUIDE.md, "Durability" (id= and replace_existing=True on
    a durable store): a restored finished task retires at once past the retention, and
    registering it again must not run it again."""
    store = InMemoryTaskStore()
    for start in range(3):
        driven = Driven(kind, store=store, retain_finished=0)
        try:
            task = driven.add("migrate", OneTime(T0 + 1), id="migrate", replace_existing=True)
            assert task.status is (TaskStatus.SCHEDULED if start == 0 else TaskStatus.SUCCEEDED)
            driven.run_until(T0 + 10 * (start + 1))
        finally:
            driven.close()
    assert [r.outcome.value for r in store.records("migrate")] == ["ok"]


def _three_finished(kind: str) -> tuple[InMemoryTaskStore, list[str]]:
    """A store left holding three finished one-off tasks by a runtime that kept them
    all, and their ids."""
    store = InMemoryTaskStore()
    first = Driven(kind, store=store, retain_finished=None)
    try:
        ids = one_offs(first, 3)
        first.run_until(T0 + 10)
    finally:
        first.close()
    return store, ids


def test_a_store_reopened_retires_its_finished_tasks_past_the_retention(kind: str) -> None:
    store, ids = _three_finished(kind)
    reopened = Driven(kind, store=store, retain_finished=1)
    try:
        assert held(reopened) == ids[2:]
        with pytest.raises(TaskRetiredError):
            reopened.runtime.task(ids[0])
    finally:
        reopened.close()


def test_only_the_most_recent_retired_ids_are_remembered(
    opened: list[Driven], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lldsched.core.retention, "RETIRED_IDS_REMEMBERED", 2)
    driven = driven_with(opened, "simulated", retain_finished=0)
    ids = one_offs(driven, 3)
    driven.run_until(T0 + 10)
    with pytest.raises(TaskRetiredError):
        driven.runtime.task(ids[1])
    with pytest.raises(TaskNotFoundError) as raised:
        driven.runtime.task(ids[0])
    assert not isinstance(raised.value, TaskRetiredError)
    assert "retired long ago" in str(raised.value) and repr(ids[0]) in str(raised.value)


def test_a_task_cancelled_mid_run_retires_when_its_run_ends() -> None:
    sim = Simulation(workers=1, start=T0, retain_finished=0)
    task = sim.schedule("long", OneTime(T0 + 1), duration=10.0)
    sim.at(T0 + 5, lambda: sim.cancel(task.id))
    sim.run(T0 + 6)
    assert sim.task(task.id).status is TaskStatus.CANCELLED  # its run is still going
    sim.run(T0 + 12)
    with pytest.raises(TaskRetiredError, match="cancelled"):
        sim.task(task.id)
    assert [(r.task_id, r.finished) for r in sim.records()] == [(task.id, T0 + 11)]


# -- bad values ----------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [-1, True, 1.5, "10", timedelta(seconds=-1)])
@pytest.mark.parametrize("runtime", [Scheduler, Simulation])
def test_a_bad_retention_is_refused_naming_the_value(bad: object, runtime: type[Any]) -> None:
    with pytest.raises(ValidationError) as raised:
        runtime(retain_finished=bad)
    assert "retain_finished" in str(raised.value) and repr(bad) in str(raised.value)


def test_retired_ids_are_forgotten_oldest_first_a_hundredth_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lldsched.core.retention, "RETIRED_IDS_REMEMBERED", 300)
    retention = lldsched.core.retention.Retention(0, history_limit=10)
    remembered = []
    for i in range(1_000):
        retention.retired(f"t{i}", TaskStatus.SUCCEEDED, ())
        remembered.append(sum(isinstance(retention.not_found(f"t{j}"), TaskRetiredError)
                              for j in range(i + 1)))  # fmt: skip
    assert max(remembered) == 303  # 300 and a hundredth more, then back to 300
    assert remembered[-1] >= 300
    newest = [f"t{i}" for i in range(1_000 - 300, 1_000)]
    assert all(isinstance(retention.not_found(task_id), TaskRetiredError) for task_id in newest)
    assert not isinstance(retention.not_found("t0"), TaskRetiredError)


def test_a_count_retires_the_earliest_finished_first_across_many_batches() -> None:
    retention = lldsched.core.retention.Retention(100, history_limit=10)
    retired: list[str] = []
    for i in range(5_000):
        retention.finished(f"t{i}", float(i))
        if i % 7 == 3:
            retention.forget(f"t{i - 1}")  # removed: leaves the held list, never retires
        retired.extend(retention.due(float(i)))
        assert retention.held() <= 101  # the count and a hundredth more
    expected = [f"t{i}" for i in range(5_000) if i % 7 != 2]
    assert retired == expected[: len(retired)] and len(retired) >= len(expected) - 102


# -- purge_retired: the store forgets a retired task too ------------------------------------


def test_purge_retired_deletes_a_retiring_task_from_the_store(
    kind: str, opened: list[Driven]
) -> None:
    store = InMemoryTaskStore()
    driven = driven_with(opened, kind, store=store, retain_finished=1, purge_retired=True)
    ids = one_offs(driven, 3)
    driven.run_until(T0 + 10)
    assert held(driven) == ids[2:]
    assert [snapshot.task.id for snapshot in store.load_all()] == ids[2:]
    assert [r.task_id for r in store.records()] == ids[2:]  # the retired ones' records too
    with pytest.raises(TaskRetiredError, match="purge_retired: deleted from the store"):
        driven.runtime.task(ids[0])
    assert [r.task_id for r in driven.runtime.records()] == ids  # what stays: the history


def test_purge_retired_leaves_the_dead_letter_and_recurring_tasks_in_the_store(
    kind: str, opened: list[Driven]
) -> None:
    store = InMemoryTaskStore()
    driven = driven_with(opened, kind, store=store, retain_finished=0, purge_retired=True)
    failed = add_broken(driven, "broken", OneTime(T0 + 1))
    ticking = driven.add("tick", FixedRate(1)).id
    one_offs(driven, 2)
    driven.run_until(T0 + 10)
    assert sorted(snapshot.task.id for snapshot in store.load_all()) == sorted([failed, ticking])
    assert store.dead_letter() == [failed]


def test_a_store_reopened_with_purge_retired_deletes_its_finished_tasks_past_the_retention(
    kind: str,
) -> None:
    store, ids = _three_finished(kind)
    assert len(store) == 3  # without purge_retired the store keeps every task
    reopened = Driven(kind, store=store, retain_finished=1, purge_retired=True)
    try:
        assert held(reopened) == ids[2:]
        assert [snapshot.task.id for snapshot in store.load_all()] == ids[2:]
    finally:
        reopened.close()


def test_a_purge_that_fails_is_logged_and_the_task_retires_all_the_same(
    opened: list[Driven], caplog: pytest.LogCaptureFixture
) -> None:
    class NoDelete(InMemoryTaskStore):
        def delete(self, task_id: str) -> None:
            raise OSError(f"disk full deleting {task_id}")

    store = NoDelete()
    driven = driven_with(opened, "simulated", store=store, retain_finished=0, purge_retired=True)
    (task_id,) = one_offs(driven, 1)
    with caplog.at_level("ERROR", logger="lldsched"):
        driven.run_until(T0 + 10)
    assert held(driven) == [] and len(store) == 1
    assert f"disk full deleting {task_id}" in caplog.text


@pytest.mark.parametrize("bad", [1, "yes", None])
@pytest.mark.parametrize("runtime", [Scheduler, Simulation])
def test_a_purge_retired_that_is_not_a_bool_is_refused_naming_it(
    bad: object, runtime: type[Any]
) -> None:
    with pytest.raises(ValidationError) as raised:
        runtime(purge_retired=bad)
    assert "purge_retired must be True or False" in str(raised.value)
    assert repr(bad) in str(raised.value)


def test_a_retired_task_leaves_nothing_of_it_in_the_simulation() -> None:
    # The core tells the runtime a task retired: a long simulation of one-offs holds
    # neither the tasks nor their duration and failure models once they retire.
    sim = Simulation(retain_finished=0, start=T0)
    for n in range(3):
        sim.schedule(f"once-{n}", OneTime(T0 + 1 + n), duration=0.5)
    assert len(sim._models) == 3
    sim.run_for(10)
    assert sim.tasks() == [] and sim._models == {}


async def _coroutine() -> None:
    """A coroutine action: the event loop runs it (never, here: nothing is due)."""


def test_a_coroutine_task_that_retires_as_it_is_registered_leaves_no_loop_id() -> None:
    """A ``replace_existing`` registration of a retired id retires the task again at once
    (``retain_finished=0``); it leaves nothing of it among the ids of the tasks the event
    loop runs (the registration marked it after it retired: one stale id per id)."""
    scheduler = Scheduler(clock=FakeClock(T0), retain_finished=0)
    try:
        scheduler.schedule("co", _coroutine, OneTime(T0 + 3_600), id="co")
        assert "co" in scheduler._loop_ids
        scheduler.cancel("co")
        assert "co" not in scheduler._loop_ids  # retired at once
        again = scheduler.schedule(
            "co", _coroutine, OneTime(T0 + 7_200), id="co", replace_existing=True
        )
        assert again.status is TaskStatus.CANCELLED
        with pytest.raises(TaskRetiredError, match="'co'"):
            scheduler.task("co")
        assert "co" not in scheduler._loop_ids
    finally:
        scheduler.shutdown()


def test_a_purge_deletes_from_a_store_that_has_no_other_writer(tmp_path: Path) -> None:
    """``storecalls.purge``, what a retirement with ``purge_retired`` calls: an unshared
    SQLite store (one process holds its file) and a store without a ``purge`` of its own
    (the in-memory one, one of a user's) delete the row whoever wrote it."""
    sqlite = SqliteTaskStore(tmp_path / "tasks.db")
    memory = InMemoryTaskStore()
    for store in (sqlite, memory):
        scheduler = Scheduler(store=store)
        scheduler.schedule("once", jobs.noop, OneTime(T0 + 3600), id="once")
        scheduler.shutdown()
        assert purge(store, "once") is True
        assert store.load_all() == []
    sqlite.close()


def test_a_stores_ctrl_c_in_one_purge_of_a_batch_leaves_the_others_retiring() -> None:
    """A store's Ctrl-C in the purge of one task of a batch retiring at once
    (``purge_retired=True``; here the finished tasks a scheduler restores, on the main
    thread) came out of the batch's loop at once: the tasks after it were taken off the
    held list but stayed registered, never to retire, their rows never purged.  Now the
    batch retires whole, then the Ctrl-C is raised."""
    store = InterruptingStore()
    first = Scheduler(workers=1, clock=FakeClock(T0), store=store, retain_finished=None)
    for name in ("a", "b", "c"):
        first.schedule(name, jobs.noop, FixedRate(60), id=name)
        first.cancel(name)
    first.shutdown()
    store.armed = "a"  # its purge deletes the row, then raises
    with pytest.raises(KeyboardInterrupt, match="raised inside delete"):
        Scheduler(
            workers=1, clock=FakeClock(T0), store=store, retain_finished=0, purge_retired=True
        )
    assert store.load_all() == []  # b's and c's purged too
    again = Scheduler(workers=1, clock=FakeClock(T0), store=store)
    assert again.tasks() == []
    assert again.shutdown() is True


def test_a_restart_keeps_the_tasks_that_finished_last_by_their_last_record() -> None:
    # "early" ran at 1,000 s and 1,200 s (a window of two runs); "middle" once, at
    # 1,100 s.  Keeping one finished task, a restart keeps the one that finished last
    # ("early", at its last run), not the one whose first run was latest.
    store = InMemoryTaskStore()
    first = Simulation(start=1_000.0, store=store, retain_finished=None)
    first.schedule("early", Window(FixedRate(200), max_runs=2), id="early")
    first.schedule("middle", OneTime(delay=100), id="middle")
    first.run_for(300)
    finished = {task.id: task.status for task in first.tasks()}
    assert finished == {"early": TaskStatus.SUCCEEDED, "middle": TaskStatus.SUCCEEDED}
    again = Simulation(start=1_300.0, store=store, retain_finished=1)
    assert [task.id for task in again.tasks()] == ["early"]
