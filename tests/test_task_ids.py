"""Caller-chosen task ids, and replace_existing: registering a job again gives the same task."""

from __future__ import annotations

import enum
import logging
from pathlib import Path
from typing import Any, cast

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    Priority,
    RetryPolicy,
    ScheduleError,
    Scheduler,
    SchedulerStateError,
    Simulation,
    SqliteTaskStore,
    TaskStatus,
    ValidationError,
)
from lldsched.sim import fixed
from tests import jobs
from tests.conftest import T0
from tests.runtimes import KINDS, Driven


class Never:
    """A schedule with no first run."""

    def first_run(self, now: float) -> None:
        return None

    def next_run(self, record: object, now: float) -> None:
        return None

    def __repr__(self) -> str:
        return "Never()"


def test_a_caller_chosen_id_is_the_task_id_and_default_ids_step_around_it(driven: Any) -> None:
    report = driven.add("report", FixedRate(3600), id="task-2")
    first, third = driven.add("a", FixedRate(60)), driven.add("b", FixedRate(60))
    assert report.id == "task-2" and driven.runtime.task("task-2") is report
    assert (first.id, third.id) == ("task-1", "task-3")


def test_registering_an_id_that_exists_raises_naming_it_and_keeps_the_first_task(
    driven: Any,
) -> None:
    # first due in an hour: the started threaded runtime leaves its due time alone
    hourly = FixedRate(3600, start_delay=3600)
    report = driven.add("report", hourly, id="nightly-report")
    with pytest.raises(ValidationError, match="'nightly-report' is already registered"):
        driven.add("other", FixedRate(60), id="nightly-report")
    assert driven.runtime.tasks() == [report] and report.name == "report"
    assert report.schedule == hourly and report.next_run_at == T0 + 3600


@pytest.mark.parametrize("bad", ["", "   ", 17, b"report"])
def test_a_bad_id_is_refused_naming_it_and_nothing_is_registered(driven: Any, bad: Any) -> None:
    with pytest.raises(ValidationError, match="task id must be a non-empty string, got"):
        driven.add("report", FixedRate(60), id=bad)
    assert driven.runtime.tasks() == []


def test_replace_existing_without_an_id_is_refused_rather_than_making_a_copy(
    driven: Any,
) -> None:
    driven.add("report", FixedRate(60))
    with pytest.raises(ValidationError, match="replace_existing=True needs the id="):
        driven.add("report", FixedRate(60), replace_existing=True)
    assert len(driven.runtime.tasks()) == 1


def test_replace_existing_updates_the_definition_and_keeps_id_history_and_due_time(
    driven: Any,
) -> None:
    task = driven.add("report", FixedRate(3600), id="report")
    driven.run_until(T0 + 10)
    assert task.run_count == 1 and task.next_run_at == T0 + 3600
    retry = RetryPolicy(max_attempts=5)
    again = driven.add(
        "hourly report", FixedRate(3600), id="report", replace_existing=True,
        priority=Priority.HIGH, retry=retry, timeout=30.0,
    )  # fmt: skip
    assert again is task and driven.runtime.tasks() == [task]
    assert (task.name, task.priority, task.retry, task.timeout) == (
        "hourly report", Priority.HIGH, retry, 30.0,
    )  # fmt: skip
    assert task.run_count == 1 and len(task.history) == 1  # history kept
    assert task.next_run_at == T0 + 3600  # the same schedule: the grid is not moved
    changed = driven.events[-1]
    assert (changed.task_id, changed.previous, changed.status, changed.record) == (
        "report", TaskStatus.SCHEDULED, TaskStatus.SCHEDULED, None,
    )  # fmt: skip
    driven.run_until(T0 + 3600)
    assert [r.name for r in task.history] == ["report", "hourly report"]


def test_replacing_with_an_identical_definition_writes_and_announces_nothing(
    driven: Any,
) -> None:
    driven.add("report", FixedRate(3600), id="report")
    before = len(driven.events)
    driven.add("report", FixedRate(3600), id="report", replace_existing=True)
    assert len(driven.events) == before


def test_replacing_with_another_schedule_starts_it_as_if_registered_now(driven: Any) -> None:
    task = driven.add("report", FixedRate(3600), id="report")
    driven.run_until(T0 + 100)
    driven.add("report", FixedRate(600, start_delay=600), id="report", replace_existing=True)
    assert task.schedule == FixedRate(600, start_delay=600)
    assert task.next_run_at == T0 + 700 and driven.runtime.pending() == [task]
    driven.run_until(T0 + 1300)
    assert [r.slot - T0 for r in task.history] == [0, 700, 1300]


def test_replace_does_not_change_whether_a_task_runs(driven: Any) -> None:
    paused = driven.add("paused", FixedRate(60, start_delay=60), id="paused")
    cancelled = driven.add("cancelled", FixedRate(60, start_delay=60), id="cancelled")
    driven.runtime.pause(paused.id)
    driven.runtime.cancel(cancelled.id)
    for task_id in ("paused", "cancelled"):
        driven.add(task_id, FixedRate(30), id=task_id, replace_existing=True)
    assert paused.status is TaskStatus.PAUSED and paused.schedule == FixedRate(30)
    assert cancelled.status is TaskStatus.CANCELLED and cancelled.next_run_at is None
    assert driven.runtime.pending() == []
    driven.runtime.resume(paused.id)  # the new schedule's first run, which is now
    driven.run_until(T0 + 30)
    assert [r.slot - T0 for r in paused.history] == [0, 30]


@pytest.mark.parametrize("finish", ["run", "cancel"])
def test_the_refusals_for_a_finished_tasks_id_name_the_way_to_register_it_anew(
    driven: Any, finish: str
) -> None:
    """A one-off that ran keeps its id (until it retires), where APScheduler frees a
    ``date`` job's id once it ran.  Registering the id again is refused, and so is a
    reschedule; each message names ``remove(id)``, which the new registration needs.
    Before, the one said "pass replace_existing=True to update it", which updates the
    definition and runs nothing (the task stays finished), and the other "register it
    anew", which the first refuses: each sent the caller to the other."""
    task = driven.add("remind", OneTime(delay=60), id="remind")
    if finish == "cancel":
        driven.runtime.cancel("remind")
    driven.run_until(T0 + 60)
    assert task.status in (TaskStatus.SUCCEEDED, TaskStatus.CANCELLED)
    with pytest.raises(ValidationError, match="is already registered") as refused:
        driven.add("remind", OneTime(at=T0 + 120), id="remind")
    assert "remove('remind') first" in str(refused.value)
    with pytest.raises(SchedulerStateError, match="will not run again") as rescheduling:
        driven.runtime.reschedule("remind", OneTime(at=T0 + 120))
    assert "remove('remind') first" in str(rescheduling.value)
    driven.runtime.remove("remind")  # as both say
    again = driven.add("remind", OneTime(at=T0 + 120), id="remind")
    driven.run_until(T0 + 120)
    assert (again.status, again.run_count) == (TaskStatus.SUCCEEDED, 1)


def test_a_failed_task_replaced_stays_in_the_dead_letter_until_redriven(driven: Any) -> None:
    failing = _failing(driven, "flaky")
    driven.run_until(T0 + 1)
    assert failing.status is TaskStatus.FAILED
    driven.add("flaky", FixedRate(60), id="flaky", replace_existing=True)
    assert failing.status is TaskStatus.FAILED and driven.runtime.dead_letter() == ["flaky"]
    assert failing.schedule == FixedRate(60) and failing.next_run_at is None


def _failing(driven: Driven, task_id: str) -> Any:
    if isinstance(driven.runtime, Scheduler):
        return driven.runtime.schedule(
            task_id, jobs.broken, OneTime(delay=1), id=task_id, retry=RetryPolicy.never()
        )
    return driven.runtime.schedule(
        task_id, OneTime(delay=1), fails=1.0, id=task_id, retry=RetryPolicy.never()
    )


def test_a_running_task_replaced_finishes_its_run_then_follows_the_new_definition() -> None:
    sim = Simulation(workers=1, start=T0)
    task = sim.schedule("report", FixedRate(60), duration=fixed(30), id="report")
    sim.at(
        T0 + 10,
        lambda: sim.schedule(
            "report", FixedRate(100, start_delay=100), duration=fixed(5),
            id="report", replace_existing=True,
        ),
    )  # fmt: skip
    sim.run(T0 + 400)
    # The run in flight ends at 30; the new schedule starts from that finish.
    assert [(r.started - T0, r.finished - T0) for r in task.history] == [
        (0, 30), (130, 135), (230, 235), (330, 335),
    ]  # fmt: skip


def test_a_rejected_replacement_leaves_the_task_as_it_was(driven: Any) -> None:
    task = driven.add("report", FixedRate(3600), id="report", priority=Priority.LOW)
    driven.run_until(T0 + 1)
    before = (task.name, task.schedule, task.priority, task.retry, task.next_run_at)
    events = len(driven.events)
    with pytest.raises(ScheduleError, match="'every hour'"):
        driven.add("renamed", "every hour", id="report", replace_existing=True)
    with pytest.raises(ValidationError, match="retry must be a RetryPolicy, got 3"):
        driven.add("renamed", FixedRate(60), id="report", replace_existing=True, retry=3)
    with pytest.raises(ScheduleError, match="'0 0 30 2 \\*'"):
        driven.add("renamed", "0 0 30 2 *", id="report", replace_existing=True)
    never = r"Never.* never fires after 2026-01-05T09:00:01\.000\+00:00$"  # the instant in ISO
    with pytest.raises(ScheduleError, match=never):
        driven.add("renamed", Never(), id="report", replace_existing=True)
    assert (task.name, task.schedule, task.priority, task.retry, task.next_run_at) == before
    assert driven.runtime.pending() == [task] and len(driven.events) == events


def test_a_replacement_with_an_action_that_is_not_callable_is_refused(driven: Any) -> None:
    task = driven.add("report", FixedRate(3600), id="report")
    runtime, not_callable = driven.runtime, cast(Any, 42)
    with pytest.raises(ValidationError, match="action must be callable, got 42"):
        if isinstance(runtime, Scheduler):
            runtime.schedule(
                "report", not_callable, FixedRate(60), id="report", replace_existing=True
            )
        else:
            runtime.schedule(
                "report", FixedRate(60), action=not_callable, id="report", replace_existing=True
            )
    assert task.action is jobs.noop and task.schedule == FixedRate(3600)


def test_a_replacement_the_durable_store_refuses_changes_nothing(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        scheduler = Scheduler(workers=1, clock=clock, store=store)
        task = scheduler.schedule("report", jobs.noop, FixedRate(3600), id="report")
        with pytest.raises(ValidationError, match="lambda"):
            scheduler.schedule(
                "report", lambda: None, FixedRate(60), id="report", replace_existing=True
            )
        assert task.action is jobs.noop and task.schedule == FixedRate(3600)
        assert task.next_run_at == T0 and scheduler.pending() == [task]
        stored = store.get("report")
        assert stored is not None and stored.task.schedule == FixedRate(3600)
        scheduler.shutdown()


def test_a_replacement_is_written_through_the_store() -> None:
    store = InMemoryTaskStore()
    sim = Simulation(workers=1, start=T0, store=store)
    sim.schedule("report", FixedRate(3600), id="report")
    sim.schedule("report", FixedRate(60), id="report", replace_existing=True, timeout=5.0)
    stored = store.get("report")
    assert stored is not None and len(store) == 1
    assert (stored.task.schedule, stored.task.timeout) == (FixedRate(60), 5.0)


def test_replace_existing_after_shutdown_is_refused_like_any_registration() -> None:
    scheduler = Scheduler(workers=1, clock=FakeClock(T0))
    task = scheduler.schedule("report", jobs.noop, FixedRate(60), id="report")
    scheduler.shutdown()
    with pytest.raises(SchedulerStateError, match=r"'report'.*shut down"):
        scheduler.schedule("report", jobs.noop, FixedRate(5), id="report", replace_existing=True)
    assert task.schedule == FixedRate(60)


# -- a service that restarts on a durable store ------------------------------------------


def start_service(kind: str, path: Path, *, period: float = 3600) -> list[tuple[Any, ...]]:
    """What a service does at every start: open the store, register its jobs by id."""
    with SqliteTaskStore(path) as store:
        driven = Driven(kind, store=store)
        try:
            driven.add("nightly report", "0 2 * * *", id="nightly-report", replace_existing=True)
            driven.add("heartbeat", FixedRate(period), id="heartbeat", replace_existing=True)
            driven.run_until(driven.now + 1)
            return [
                (task.id, task.name, task.schedule, task.status.value, task.run_count,
                 task.next_run_at)
                for task in driven.runtime.tasks()
            ]  # fmt: skip
        finally:
            driven.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_restarted_service_on_sqlite_gets_the_same_tasks_not_copies(
    kind: str, tmp_path: Path
) -> None:
    path = tmp_path / "tasks.db"
    first = start_service(kind, path)
    assert [row[0] for row in first] == ["nightly-report", "heartbeat"]
    assert first[1][3:] == ("scheduled", 1, T0 + 3600)  # ran once, next in an hour
    assert start_service(kind, path) == first  # restored, registered again: the same tasks
    with SqliteTaskStore(path) as store:
        assert len(store) == 2 and len(store.records("heartbeat")) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_restart_with_a_changed_job_updates_the_stored_definition(
    kind: str, tmp_path: Path
) -> None:
    path = tmp_path / "tasks.db"
    start_service(kind, path)
    second = start_service(kind, path, period=600)
    assert second[1][2] == FixedRate(600) and second[1][4] == 2  # history kept, ran again
    with SqliteTaskStore(path) as store:
        stored = store.get("heartbeat")
        assert stored is not None and stored.task.schedule == FixedRate(600)
        assert len(store) == 2 and len(store.records("heartbeat")) == 2


def test_a_restart_that_registers_again_without_replace_existing_raises_and_loses_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    start_service("threaded", path)
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(workers=1, clock=FakeClock(T0), store=store)
        with pytest.raises(ValidationError, match="'heartbeat' is already registered"):
            scheduler.schedule("heartbeat", jobs.noop, FixedRate(3600), id="heartbeat")
        assert [task.id for task in scheduler.tasks()] == ["nightly-report", "heartbeat"]
        scheduler.shutdown()
        assert len(store) == 2


def test_replacing_with_a_new_priority_reorders_the_queued_entry_at_once() -> None:
    sim = Simulation(workers=1, start=T0)
    sim.schedule("blocker", OneTime(delay=0), duration=fixed(100))
    sim.schedule("low", OneTime(delay=10), duration=fixed(5), id="low", priority=Priority.LOW)
    sim.schedule("normal", OneTime(delay=10), duration=fixed(5))

    def raise_it() -> None:
        sim.schedule("low", OneTime(delay=10), duration=fixed(5), id="low",
                     replace_existing=True, priority=Priority.HIGH)  # fmt: skip

    sim.at(T0 + 50, raise_it)
    sim.run(T0 + 200)
    assert [(r.name, r.started - T0) for r in sim.records()] == [
        ("blocker", 0), ("low", 100), ("normal", 105),
    ]  # fmt: skip


def test_replacing_a_paused_task_with_a_new_priority_queues_nothing_and_it_stays_paused() -> None:
    sim = Simulation(start=T0)
    task = sim.schedule("report", FixedRate(60, start_delay=60), id="report")
    assert sim.pause(task.id) is True
    sim.schedule("report", FixedRate(60, start_delay=60), id="report", replace_existing=True,
                 priority=Priority.HIGH)  # fmt: skip
    assert task.priority is Priority.HIGH and sim.pending() == []
    sim.run(T0 + 300)
    assert task.status is TaskStatus.PAUSED and sim.records() == []


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("on", ["memory", "sqlite"])
@pytest.mark.parametrize(
    "task_id",
    ["r" * 2001, "é" * 1000 + "r", "e" * 1999 + "€"],
    ids=["ascii", "two-byte", "three-byte-last"],
)
def test_an_id_over_2000_bytes_is_refused_on_every_store_naming_its_length_and_the_bound(
    tmp_path: Path, kind: str, on: str, task_id: str
) -> None:
    """The PostgreSQL store keeps an id as an index key (PostgreSQL refuses a key over
    2,704 bytes after compression: a random id over 2,689 bytes, in the records' key), and
    refused one over 2,000 bytes; the in-memory and SQLite stores took any length, so an
    id tried there was refused only on moving to PostgreSQL.  One bound for every store
    and runtime now, checked at registration (docs/decisions/checking-input.md, "A task id is at
    most 2,000 bytes")."""
    store = SqliteTaskStore(tmp_path / "tasks.db") if on == "sqlite" else None
    driven = Driven(kind, store=store)
    try:
        kept = driven.add("kept", FixedRate(60), id="k" * 1000 + "é" * 500)  # 2,000 bytes
        size = len(task_id.encode("utf-8"))
        with pytest.raises(ValidationError) as caught:
            driven.add("report", FixedRate(60), id=task_id)  # before: registered
        assert str(caught.value) == (
            f"task id {task_id[:40]!r}... ({size} bytes in UTF-8) is longer than the 2000 "
            "bytes a task id may have (the same bound on every store: PostgreSQL keeps an "
            "id as an index key); nothing was registered"
        )
        assert driven.runtime.tasks() == [kept]
        if store is not None:
            assert [row.task.id for row in store.load_all()] == [kept.id]
    finally:
        driven.close()
        if store is not None:
            store.close()


class Job(str, enum.Enum):  # noqa: UP042  # the idiom under test, not a StrEnum
    """Job ids as an application names them: the ``(str, Enum)`` idiom, whose ``str()``
    is ``'Job.REPORT'`` while its text (what a store keeps, what a lookup matches) is
    ``'report'``."""

    REPORT = "report"
    EXPORT = "export"


def test_an_id_a_name_and_an_upstream_given_as_a_str_enum_are_kept_as_their_text(
    driven: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A ``str`` subclass was kept as given: the task's repr and its log lines named
    ``Job.REPORT``, an id no lookup finds, while the store kept ``'report'``, so a
    record's ``task_id`` changed type across a restart."""
    report = driven.add(Job.REPORT, FixedRate(60), id=Job.REPORT, action=jobs.broken,
                        retry=RetryPolicy(max_attempts=1))  # fmt: skip
    export = driven.add(Job.EXPORT, FixedRate(60), id=Job.EXPORT, depends_on=[Job.REPORT])
    with caplog.at_level(logging.ERROR, logger="lldsched.jobs"):
        driven.run_until(T0)
    for value in (report.id, report.name, export.id, export.name, *export.depends_on,
                  *(record.task_id for record in driven.runtime.records()),
                  *(record.name for record in driven.runtime.records()),
                  *(event.task_id for event in driven.events)):  # fmt: skip
        assert type(value) is str and value in ("report", "export")
    assert "Job." not in repr(report) and "Job." not in caplog.text
    if driven.kind == "threaded":  # the simulation logs no job's failure
        assert "task report 'report' attempt 1 of 1 failed" in caplog.text
