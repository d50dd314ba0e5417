"""Dependencies (depends_on): a dependent's slot waits BLOCKED until each upstream has
succeeded since the dependent's previous slot started; both runtimes, one rule."""

from __future__ import annotations

import logging
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
    ScheduledTask,
    Scheduler,
    SchedulerStateError,
    Simulation,
    TaskSnapshot,
    TaskStatus,
    ValidationError,
)
from lldsched.errors import StoreError
from lldsched.model import ExecutionRecord, Outcome
from lldsched.stores.sqlite import SqliteTaskStore
from lldsched.testing import Stepper
from tests import jobs
from tests.conftest import T0
from tests.runtimes import KINDS, Driven

BLOCKED, SCHEDULED, FAILED = TaskStatus.BLOCKED, TaskStatus.SCHEDULED, TaskStatus.FAILED
HOUR = 3600.0


def add_action(
    driven: Driven, name: str, action: Any, schedule: Any, **options: Any
) -> ScheduledTask:
    """Register ``action`` (a tests.jobs function) under ``name`` on either runtime."""
    runtime = driven.runtime
    if isinstance(runtime, Scheduler):
        return runtime.schedule(name, action, schedule, **options)
    return runtime.schedule(name, schedule, action=action, **options)


def add_failing(driven: Driven, name: str, schedule: Any, **options: Any) -> ScheduledTask:
    """Register ``tests.jobs.broken`` (always raises) under ``name``."""
    return add_action(driven, name, jobs.broken, schedule, **options)


def runs(driven: Driven, task: ScheduledTask) -> list[ExecutionRecord]:
    """The task's records of attempts that ran, oldest first."""
    driven.settle()
    return [record for record in task.history if record.outcome.ran]


def waits(task: ScheduledTask) -> list[ExecutionRecord]:
    """The task's records of blocked waits, oldest first."""
    return [record for record in task.history if record.outcome is Outcome.BLOCKED]


# -- registration ------------------------------------------------------------------------


def test_an_unknown_upstream_id_is_rejected_naming_it_and_nothing_is_registered(
    driven: Driven,
) -> None:
    driven.add("extract", OneTime(delay=0), id="extract")
    with pytest.raises(ValidationError, match=r"not registered: \['nope'\]"):
        driven.add("load", OneTime(delay=0), depends_on=["extract", "nope"])
    assert [task.name for task in driven.runtime.tasks()] == ["extract"]


def test_a_task_that_names_itself_is_a_cycle(driven: Driven) -> None:
    with pytest.raises(ValidationError, match=r"makes a cycle: a -> a"):
        driven.add("a", OneTime(delay=0), id="a", depends_on=["a"])
    assert driven.runtime.tasks() == []


def test_a_cycle_through_a_replaced_task_is_rejected_with_its_path_and_nothing_is_lost(
    driven: Driven,
) -> None:
    driven.add("a", OneTime(delay=HOUR), id="a")
    driven.add("b", OneTime(delay=HOUR), id="b", depends_on=["a"])
    driven.add("c", OneTime(delay=HOUR), id="c", depends_on=["b"])
    with pytest.raises(ValidationError, match=r"makes a cycle: a -> c -> b -> a"):
        driven.add("a", OneTime(delay=HOUR), id="a", replace_existing=True, depends_on=["c"])
    with pytest.raises(ValidationError, match=r"makes a cycle: a -> b -> a"):
        driven.add("a", OneTime(delay=HOUR), id="a", replace_existing=True, depends_on=["b"])
    assert [task.id for task in driven.runtime.tasks()] == ["a", "b", "c"]
    assert driven.runtime.task("a").depends_on == ()
    assert driven.runtime.task("c").depends_on == ("b",)


@pytest.mark.parametrize(
    ("depends_on", "message"),
    [
        ("extract", r"depends_on must be a list of task ids, got 'extract'"),
        (["extract", "extract"], r"depends_on names \['extract'\] more than once"),
        ([3], r"depends_on holds task ids \(non-empty strings\), got 3"),
        ([" "], r"got ' '"),
    ],
)
def test_bad_depends_on_values_are_rejected_naming_them(
    driven: Driven, depends_on: Any, message: str
) -> None:
    driven.add("extract", OneTime(delay=0), id="extract")
    with pytest.raises(ValidationError, match=message):
        driven.add("load", OneTime(delay=0), depends_on=depends_on)
    assert len(driven.runtime.tasks()) == 1


# -- the rule ------------------------------------------------------------------------------


def test_a_dependent_waits_blocked_until_its_upstream_succeeds_then_runs_at_once(
    driven: Driven,
) -> None:
    extract = driven.add("extract", OneTime(delay=600))
    load = driven.add("load", OneTime(delay=0), depends_on=[extract.id])
    driven.run_until(T0 + 60)
    assert load.status is BLOCKED
    assert load.next_run_at == T0  # the slot it waits to run
    assert driven.runtime.pending() == [extract]  # a blocked task is not in the heap
    driven.run_until(T0 + 1200)
    assert load.status is TaskStatus.SUCCEEDED
    (run,) = runs(driven, load)
    assert (run.slot, run.due, run.started) == (T0, T0 + 600, T0 + 600)
    (wait,) = waits(load)
    assert (wait.started, wait.finished, wait.attempt, wait.worker) == (T0, T0 + 600, 0, -1)
    assert wait.error is None


def test_an_upstream_that_already_succeeded_lets_a_new_dependent_run_on_time(
    driven: Driven,
) -> None:
    extract = driven.add("extract", OneTime(delay=0))
    driven.run_until(T0 + 60)
    load = driven.add("load", OneTime(delay=0), depends_on=[extract.id])
    driven.run_until(T0 + 120)
    assert [run.started for run in runs(driven, load)] == [T0 + 60]
    assert waits(load) == []


def test_a_recurring_dependent_runs_once_per_upstream_success(driven: Driven) -> None:
    hourly = driven.add("hourly", FixedRate(HOUR))
    half = driven.add("half-hourly", FixedRate(1800, start_delay=60), depends_on=[hourly.id])
    driven.run_until(T0 + 3 * HOUR - 1)
    started = [run.started for run in runs(driven, half)]
    assert started == [T0 + 60, T0 + HOUR, T0 + 2 * HOUR]
    assert [run.slot for run in runs(driven, half)] == [T0 + 60, T0 + 1860, T0 + 3660]
    assert half.status is BLOCKED  # slot T0 + 5460 waits for the success at T0 + 3 h


def test_a_one_off_upstream_that_succeeded_satisfies_every_later_slot(driven: Driven) -> None:
    setup = driven.add("setup", OneTime(delay=0))
    sync = driven.add("sync", FixedRate(60), depends_on=[setup.id])
    driven.run_until(T0 + 300)
    assert len(runs(driven, sync)) == 6
    assert sync.status is SCHEDULED


def test_a_retry_does_not_wait_for_the_upstream_again(driven: Driven) -> None:
    extract = driven.add("extract", OneTime(delay=0))
    retry = RetryPolicy(max_attempts=3, initial_backoff=10, jitter=0)
    # tests.jobs.flaky(True) fails its first two attempts, then succeeds
    load = add_action(driven, "load", jobs.flaky, FixedRate(HOUR), args=(True,),
                      depends_on=[extract.id], retry=retry)  # fmt: skip
    driven.run_until(T0 + 60)
    assert [(run.attempt, run.ok) for run in runs(driven, load)] == [
        (1, False), (2, False), (3, True),
    ]  # fmt: skip
    assert waits(load) == []


def test_dependents_released_by_one_success_start_by_priority_then_registration_order(
    driven: Driven,
) -> None:
    extract = driven.add("extract", OneTime(delay=600))
    first = driven.add("first", OneTime(delay=0), depends_on=[extract.id])
    urgent = driven.add("urgent", OneTime(delay=0), depends_on=[extract.id], priority=Priority.HIGH)
    second = driven.add("second", OneTime(delay=0), depends_on=[extract.id])
    driven.run_until(T0 + 1200)
    started = [
        event.name
        for event in driven.events
        if event.status is TaskStatus.RUNNING and event.name != "extract"
    ]
    assert started == ["urgent", "first", "second"]
    assert {task.status for task in (first, urgent, second)} == {TaskStatus.SUCCEEDED}


def test_a_dependent_waits_for_every_upstream(driven: Driven) -> None:
    a = driven.add("a", OneTime(delay=600))
    b = driven.add("b", OneTime(delay=1200))
    both = driven.add("both", OneTime(delay=0), depends_on=[a.id, b.id])
    driven.run_until(T0 + 900)
    assert both.status is BLOCKED
    driven.run_until(T0 + 1800)
    assert [run.started for run in runs(driven, both)] == [T0 + 1200]


# -- dead upstreams ------------------------------------------------------------------------


def test_a_failed_upstream_fails_its_blocked_dependent_naming_it(driven: Driven) -> None:
    extract = add_failing(driven, "extract", OneTime(delay=600), retry=RetryPolicy.never())
    load = driven.add("load", OneTime(delay=0), depends_on=[extract.id])
    report = driven.add("report", OneTime(delay=0), depends_on=[load.id])
    driven.run_until(T0 + 1200)
    assert (extract.status, load.status, report.status) == (FAILED, FAILED, FAILED)
    assert driven.runtime.dead_letter() == [extract.id, load.id, report.id]
    (wait,) = waits(load)
    assert wait.error is not None and wait.error.startswith(
        f"UpstreamFailed: upstream {extract.id}"
    )
    assert load.last_error == wait.error
    assert runs(driven, load) == []
    assert (wait.ok, wait.started, wait.finished) == (False, T0, T0 + 600)
    assert load.next_run_at is None and report.next_run_at is None  # nothing will run
    failed = [(e.task_id, e.previous) for e in driven.events if e.status is FAILED]
    assert failed == [(extract.id, TaskStatus.RUNNING), (load.id, BLOCKED), (report.id, BLOCKED)]


def test_a_cancelled_upstream_fails_its_dependents_now_and_at_their_next_slot(
    driven: Driven,
) -> None:
    extract = driven.add("extract", FixedRate(HOUR, start_delay=600))
    waiting = driven.add("waiting", OneTime(delay=0), depends_on=[extract.id])
    later = driven.add("later", OneTime(delay=1800), depends_on=[extract.id])
    driven.run_until(T0 + 60)
    assert driven.runtime.cancel(extract.id) is True
    driven.settle()
    assert waiting.status is FAILED
    assert later.status is SCHEDULED  # not due yet
    driven.run_until(T0 + 1800)
    assert later.status is FAILED
    # Before, "...; redrive it, then this task": redrive() of a cancelled task is False.
    assert (later.last_error or "").endswith(
        " is cancelled; it will not run again: register this task again without it "
        "(replace_existing=True)"
    )


def test_a_redriven_dependent_runs_after_its_redriven_upstream_succeeds(driven: Driven) -> None:
    add_failing(driven, "extract", OneTime(delay=0), id="extract", retry=RetryPolicy.never())
    load = driven.add("load", OneTime(delay=0), id="load", depends_on=["extract"])
    driven.run_until(T0 + 60)
    assert load.status is FAILED
    # the upstream is fixed (a new action) and redriven; then the dependent
    add_action(driven, "extract", jobs.noop, OneTime(delay=0), id="extract",
               replace_existing=True, retry=RetryPolicy.never())  # fmt: skip
    assert driven.runtime.redrive("load") is True
    driven.run_until(T0 + 120)
    assert load.status is FAILED  # its upstream is still FAILED: it fails again at once
    assert driven.runtime.redrive("extract") is True
    assert driven.runtime.redrive("load") is True
    driven.run_until(T0 + 180)
    assert load.status is TaskStatus.SUCCEEDED
    assert [run.started for run in runs(driven, load)] == [T0 + 120]
    assert len(waits(load)) == 2  # the two failed waits, each with no time blocked


def test_an_upstream_with_dependents_cannot_be_removed(driven: Driven) -> None:
    extract = driven.add("extract", OneTime(delay=HOUR), id="extract")
    driven.add("load", OneTime(delay=0), id="load", depends_on=["extract"])
    with pytest.raises(
        SchedulerStateError, match=r"cannot remove 'extract'.*: load depends on it;"
    ):
        driven.runtime.remove("extract")
    assert extract.status is SCHEDULED
    driven.add("report", OneTime(delay=0), id="report", depends_on=["extract"])
    with pytest.raises(SchedulerStateError, match=r": load, report depend on it;"):
        driven.runtime.remove("extract")
    driven.runtime.remove("report")
    driven.runtime.remove("load")
    driven.runtime.remove("extract")
    assert driven.runtime.tasks() == []


def test_a_dependent_removed_and_registered_again_without_upstreams_frees_its_old_one(
    driven: Driven,
) -> None:
    # The new "load" names no upstream: "extract" has no dependent left to refuse for.
    driven.add("extract", OneTime(delay=HOUR), id="extract")
    driven.add("load", OneTime(delay=0), id="load", depends_on=["extract"])
    driven.runtime.remove("load")
    driven.add("load", OneTime(delay=0), id="load")
    driven.runtime.remove("extract")
    assert [task.id for task in driven.runtime.tasks()] == ["load"]


def test_a_blocked_dependent_registered_again_with_another_upstream_waits_for_that_one(
    driven: Driven,
) -> None:
    # "load" is BLOCKED on "extract" from T0 + 60 s, then registered again naming
    # "other" instead: extract's success at 1 h no longer releases it, other's at 2 h
    # does, and its one wait is recorded from when it blocked; "extract" has no
    # dependent left.
    driven.add("extract", OneTime(delay=HOUR), id="extract")
    driven.add("other", OneTime(delay=2 * HOUR), id="other")
    driven.add("load", OneTime(T0 + 60), id="load", depends_on=["extract"])
    driven.run_until(T0 + 120)
    load = driven.add("load", OneTime(T0 + 60), id="load", depends_on=["other"],
                      replace_existing=True)  # fmt: skip
    driven.run_until(T0 + 1.5 * HOUR)
    assert load.status is BLOCKED
    driven.run_until(T0 + 3 * HOUR)
    assert [(r.outcome.value, r.started - T0, r.finished - T0) for r in load.history] == [
        ("blocked", 60, 2 * HOUR), ("ok", 2 * HOUR, 2 * HOUR),
    ]  # fmt: skip
    driven.runtime.remove("extract")


def test_a_dependent_that_ran_and_is_given_another_upstream_waits_for_a_success_since_its_start(
    driven: Driven,
) -> None:
    # "other" succeeded at 10 s, "load" ran at 30 s on extract's success at 20 s, then
    # names "other" too: its slot at 1 h + 30 s waits for a success of other after 30 s
    # (at 2 h + 10 s), as any slot does, and as a restart or another process counts it
    # from the records; the new definition does not make it a new task.
    driven.add("other", FixedRate(2 * HOUR, start_delay=10), id="other")
    driven.add("extract", FixedRate(HOUR, start_delay=20), id="extract")
    load = driven.add("load", FixedRate(HOUR, start_delay=30), id="load", depends_on=["extract"])
    driven.run_until(T0 + 60)
    driven.add("load", FixedRate(HOUR, start_delay=30), id="load", replace_existing=True,
               depends_on=["extract", "other"])  # fmt: skip
    driven.run_until(T0 + HOUR + 60)
    assert load.status is BLOCKED
    driven.run_until(T0 + 2 * HOUR + 15)
    assert [run.started - T0 for run in runs(driven, load)] == [30, 2 * HOUR + 10]
    assert [(w.started - T0, w.finished - T0) for w in waits(load)] == [(HOUR + 30, 2 * HOUR + 10)]


def test_a_blocked_dependent_given_an_upstream_that_succeeded_before_its_start_stays_blocked(
    driven: Driven,
) -> None:
    # "load" ran at 30 s and is BLOCKED from 1 h + 30 s on extract (every 2 h); named
    # "other" instead (which succeeded at 10 s, before load's start): still BLOCKED, its
    # one wait ending at other's next success (3 h + 10 s), as in several processes.
    driven.add("other", FixedRate(3 * HOUR, start_delay=10), id="other")
    driven.add("extract", FixedRate(2 * HOUR, start_delay=20), id="extract")
    load = driven.add("load", FixedRate(HOUR, start_delay=30), id="load", depends_on=["extract"])
    driven.run_until(T0 + HOUR + 60)
    assert load.status is BLOCKED
    driven.add("load", FixedRate(HOUR, start_delay=30), id="load", replace_existing=True,
               depends_on=["other"])  # fmt: skip
    assert load.status is BLOCKED
    driven.run_until(T0 + 3 * HOUR + 15)
    assert [run.started - T0 for run in runs(driven, load)] == [30, 3 * HOUR + 10]
    assert [(w.started - T0, w.finished - T0) for w in waits(load)] == [(HOUR + 30, 3 * HOUR + 10)]


def test_a_dependent_given_another_upstream_during_its_run_counts_from_that_run() -> None:
    # load runs 10 minutes from 30 s and from 1 h + 30 s; "other" succeeded at 1 h + 10 s,
    # between those starts. Named during the second run, other counts from that run's
    # start, as the run's record will say: the slot at 2 h + 30 s waits for its next
    # success (4 h + 10 s), not the one before the run.
    sim = Simulation(workers=2, start=T0)
    sim.schedule("other", FixedRate(3 * HOUR, start_delay=HOUR + 10), id="other")
    sim.schedule("extract", FixedRate(HOUR, start_delay=20), id="extract")
    load = sim.schedule("load", FixedRate(HOUR, start_delay=30), id="load", duration=600,
                        depends_on=["extract"])  # fmt: skip
    sim.run(T0 + HOUR + 60)
    assert load.running
    sim.schedule("load", FixedRate(HOUR, start_delay=30), id="load", duration=600,
                 depends_on=["extract", "other"], replace_existing=True)  # fmt: skip
    sim.run(T0 + 4 * HOUR + 900)
    assert [r.started - T0 for r in load.history if r.outcome.ran] == [
        30, HOUR + 30, 4 * HOUR + 10,
    ]  # fmt: skip


# -- control verbs on a blocked task -------------------------------------------------------


def test_pause_and_resume_a_blocked_task_check_its_upstreams_again(driven: Driven) -> None:
    extract = driven.add("extract", OneTime(delay=600))
    load = driven.add("load", OneTime(delay=0), depends_on=[extract.id])
    driven.run_until(T0 + 60)
    assert driven.runtime.pause(load.id) is True
    assert load.status is TaskStatus.PAUSED
    assert [(w.started, w.finished) for w in waits(load)] == [(T0, T0 + 60)]
    driven.run_until(T0 + 120)
    assert driven.runtime.resume(load.id) is True
    driven.run_until(T0 + 130)
    assert load.status is BLOCKED  # resumed, due at once, and still waiting
    driven.run_until(T0 + 1200)
    assert [run.started for run in runs(driven, load)] == [T0 + 600]


def test_a_blocked_task_can_be_cancelled_and_not_run_now(driven: Driven) -> None:
    extract = driven.add("extract", OneTime(delay=600))
    load = driven.add("load", OneTime(delay=0), depends_on=[extract.id])
    driven.run_until(T0 + 60)
    assert driven.runtime.run_now(load.id) is False  # run_now cannot skip its upstreams
    assert driven.runtime.cancel(load.id) is True
    driven.run_until(T0 + 1200)
    assert load.status is TaskStatus.CANCELLED
    assert runs(driven, load) == []
    assert len(waits(load)) == 1


def test_a_rescheduled_blocked_task_stays_blocked_and_runs_at_its_new_time(
    driven: Driven,
) -> None:
    extract = driven.add("extract", OneTime(delay=600))
    load = driven.add("load", OneTime(delay=0), depends_on=[extract.id])
    driven.run_until(T0 + 60)
    driven.runtime.reschedule(load.id, OneTime(delay=HOUR))
    assert load.status is BLOCKED
    assert load.next_run_at == T0 + 60 + HOUR
    driven.run_until(T0 + 2 * HOUR)
    assert [run.started for run in runs(driven, load)] == [T0 + 60 + HOUR]


@pytest.mark.parametrize("end", ["released", "cancelled", "removed", "upstream failed"])
def test_a_wait_a_reschedule_kept_blocked_is_recorded_for_the_slot_found_blocked(
    driven: Driven, end: str
) -> None:
    # The reschedule moves the task's next slot, not the wait going on: its record named
    # the new schedule's first run (due and slot 1860) for a wait that started at 0.
    # Removed, the wait's record named it too, and began when the task was removed.
    if end == "upstream failed":
        add_failing(driven, "extract", OneTime(delay=600), id="extract", retry=RetryPolicy.never())
    else:
        driven.add("extract", OneTime(delay=600), id="extract")
    load = driven.add("load", FixedRate(HOUR), id="load", depends_on=["extract"])
    driven.run_until(T0 + 60)
    driven.runtime.reschedule(load.id, FixedRate(HOUR, start_delay=1800))
    driven.runtime.reschedule(load.id, FixedRate(HOUR, start_delay=1800))  # a second, alike
    assert (load.status, load.next_run_at) == (BLOCKED, T0 + 1860)
    if end == "cancelled":
        driven.runtime.cancel(load.id)
    if end == "removed":
        driven.runtime.remove(load.id)
    driven.run_until(T0 + 2000)
    (wait,) = waits(load)
    ended = T0 + 60 if end in ("cancelled", "removed") else T0 + 600
    assert (wait.slot, wait.due, wait.started, wait.finished) == (T0, T0, T0, ended)
    ran = [(run.slot, run.due, run.started) for run in runs(driven, load)]
    assert ran == ([(T0 + 1860, T0 + 1860, T0 + 1860)] if end == "released" else [])


def test_an_upstream_cancelled_after_its_success_counted_leaves_a_wait_for_another_one(
    driven: Driven,
) -> None:
    # load's first slot has extract's success and waits for clean's; extract cancelled
    # then fails only the dependents still waiting for it: load runs on clean's success.
    driven.add("extract", FixedRate(HOUR), id="extract")
    driven.add("clean", OneTime(delay=600), id="clean")
    load = driven.add("load", OneTime(delay=10), id="load", depends_on=["extract", "clean"])
    driven.run_until(T0 + 60)
    assert load.status is BLOCKED
    assert driven.runtime.cancel("extract") is True
    assert (load.status, load.last_error) == (BLOCKED, None)
    driven.run_until(T0 + 700)
    assert [run.started for run in runs(driven, load)] == [T0 + 600]


def test_run_now_on_a_dependent_whose_upstreams_have_not_succeeded_adds_no_run(
    driven: Driven,
) -> None:
    # Its extra run could not run now: it waited BLOCKED for extract's success at 500,
    # used it, and left the slot it put off (1000) waiting an hour for the next one.
    driven.add("extract", FixedRate(HOUR, start_delay=500), id="extract")
    load = driven.add("load", FixedRate(HOUR, start_delay=1000), id="load", depends_on=["extract"])
    driven.run_until(T0 + 10)
    assert driven.runtime.run_now(load.id) is False
    assert (load.status, load.next_run_at) == (SCHEDULED, T0 + 1000)
    driven.run_until(T0 + 1200)
    assert [(run.slot, run.started) for run in runs(driven, load)] == [(T0 + 1000, T0 + 1000)]
    assert waits(load) == []
    assert [(e.previous, e.status) for e in driven.events if e.task_id == load.id] == [
        (None, SCHEDULED), (SCHEDULED, TaskStatus.RUNNING), (TaskStatus.RUNNING, SCHEDULED),
    ]  # fmt: skip


def test_run_now_on_a_shared_dependent_whose_records_cannot_be_read_adds_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On a shared store run_now counts the wait from the store's records; records that
    # cannot be read decide nothing there: the run is added, and the readiness check at
    # its begin reads them again (read as "would wait", run_now refused a run that may
    # well be able to run).
    store = SqliteTaskStore(tmp_path / "tasks.db", shared=True)
    scheduler = Scheduler(workers=1, clock=FakeClock(T0), store=store)
    with store:
        scheduler.schedule("extract", jobs.noop, FixedRate(HOUR, start_delay=500), id="extract")
        scheduler.schedule("load", jobs.noop, FixedRate(HOUR, start_delay=1000), id="load",
                           depends_on=["extract"])  # fmt: skip

        def unreadable(task_id: str | None = None) -> list[ExecutionRecord]:
            raise StoreError("the server is down (injected)")

        monkeypatch.setattr(store, "records", unreadable)
        assert scheduler.run_now("load") is True
        assert scheduler.task("load").next_run_at == T0
        scheduler.shutdown()


def test_run_now_on_a_dependent_whose_upstreams_succeeded_runs_at_once_on_their_success(
    driven: Driven,
) -> None:
    # One success runs one slot: the slot the extra run put off waits for the next one.
    driven.add("extract", FixedRate(HOUR), id="extract")
    load = driven.add("load", FixedRate(HOUR, start_delay=1000), id="load", depends_on=["extract"])
    driven.run_until(T0 + 10)
    assert driven.runtime.run_now(load.id) is True
    driven.run_until(T0 + HOUR + 10)
    assert [(run.slot, run.started) for run in runs(driven, load)] == [
        (T0 + 10, T0 + 10), (T0 + 1000, T0 + HOUR),
    ]  # fmt: skip
    assert [(wait.slot, wait.started, wait.finished) for wait in waits(load)] == [
        (T0 + 1000, T0 + 1000, T0 + HOUR)
    ]


def test_dropping_the_dependencies_of_a_blocked_task_releases_it(driven: Driven) -> None:
    # Its one wait is recorded from when it blocked, and "extract", named by nobody
    # now, can be removed.
    driven.add("extract", OneTime(delay=600), id="extract")
    load = driven.add("load", OneTime(delay=0), id="load", depends_on=["extract"])
    driven.run_until(T0 + 60)
    driven.add("load", OneTime(delay=0), id="load", replace_existing=True)
    driven.run_until(T0 + 120)
    assert [run.started for run in runs(driven, load)] == [T0 + 60]
    assert [(w.started, w.finished) for w in waits(load)] == [(T0, T0 + 60)]
    driven.runtime.remove("extract")
    assert [task.id for task in driven.runtime.tasks()] == ["load"]


def test_a_slot_found_blocked_late_keeps_its_due_in_the_wait_record() -> None:
    # The timer first looks at 09:01:30 (the clock jumped there) for a slot due at
    # 09:01:00: the wait is recorded from 09:01:30, for the slot due at 09:01:00.
    clock = FakeClock(T0)
    scheduler = Scheduler(workers=1, clock=clock).start()
    try:
        scheduler.schedule("extract", jobs.noop, OneTime(T0 + HOUR), id="extract")
        load = scheduler.schedule(
            "load", jobs.noop, OneTime(T0 + 60), id="load", depends_on=["extract"]
        )
        clock.set(T0 + 90)
        assert scheduler.wait_idle(timeout=5.0)
        assert load.status is BLOCKED
        clock.set(T0 + HOUR)
        assert scheduler.wait_idle(timeout=5.0)
        clock.set(T0 + HOUR + 1)  # the released slot, queued at T0 + HOUR, has run
        assert scheduler.wait_idle(timeout=5.0)
        assert [(w.due, w.slot, w.started, w.finished) for w in waits(load)] == [
            (T0 + 60, T0 + 60, T0 + 90, T0 + HOUR)
        ]
        assert load.status is TaskStatus.SUCCEEDED
    finally:
        assert scheduler.shutdown(timeout=5.0)


# -- events --------------------------------------------------------------------------------


def test_listeners_hear_blocked_and_released_with_the_wait_record(driven: Driven) -> None:
    extract = driven.add("extract", OneTime(delay=600))
    load = driven.add("load", OneTime(delay=0), depends_on=[extract.id])
    driven.run_until(T0 + 1200)
    changes = [
        (event.previous, event.status, event.record is not None)
        for event in driven.events
        if event.task_id == load.id
    ]
    assert changes == [
        (None, SCHEDULED, False),
        (SCHEDULED, BLOCKED, False),
        (BLOCKED, SCHEDULED, True),
        (SCHEDULED, TaskStatus.RUNNING, False),
        (TaskStatus.RUNNING, TaskStatus.SUCCEEDED, True),
    ]
    released = next(e for e in driven.events if e.previous is BLOCKED)
    assert released.record is not None and released.record.outcome is Outcome.BLOCKED


# -- stores --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("store_kind", ["memory", "sqlite"])
def test_depends_on_and_the_blocked_state_survive_a_store(
    kind: str, store_kind: str, tmp_path: Path
) -> None:
    def open_store() -> Any:
        return SqliteTaskStore(tmp_path / "tasks.db") if store_kind == "sqlite" else memory

    memory = InMemoryTaskStore()
    store = open_store()
    first = Driven(kind, store=store)
    first.add("extract", OneTime(delay=600), id="extract")
    first.add("load", OneTime(delay=0), id="load", depends_on=["extract"])
    first.run_until(T0 + 60)
    assert first.runtime.task("load").status is BLOCKED
    first.close()
    if store_kind == "sqlite":
        store.close()
        store = open_store()

    second = Driven(kind, store=store)
    try:
        load = second.runtime.task("load")
        assert (load.status, load.depends_on) == (BLOCKED, ("extract",))
        assert second.runtime.pending() == [second.runtime.task("extract")]
        second.clock.set(T0 + 60)
        second.run_until(T0 + 1200)
        assert load.status is TaskStatus.SUCCEEDED
        assert [run.started for run in runs(second, load)] == [T0 + 600]
    finally:
        second.close()
        if store_kind == "sqlite":
            store.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_wait_a_reschedule_kept_blocked_names_the_slot_found_blocked_after_a_restart(
    kind: str, tmp_path: Path
) -> None:
    # The slot found blocked (0) lived in memory only: restarted during the wait, the
    # record named the new schedule's first run (due and slot 1860), as if that slot had
    # waited from before it was due.  The row keeps it now, as an uninterrupted run does.
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        first = Driven(kind, store=store)
        first.add("extract", OneTime(delay=600), id="extract")
        first.add("load", FixedRate(HOUR), id="load", depends_on=["extract"])
        first.run_until(T0 + 60)
        first.runtime.reschedule("load", FixedRate(HOUR, start_delay=1800))
        first.close()
    with SqliteTaskStore(path) as store:
        second = Driven(kind, store=store)
        try:
            second.clock.set(T0 + 60)
            second.run_until(T0 + 2000)
            load = second.runtime.task("load")
            assert [(w.slot, w.due, w.finished) for w in waits(load)] == [(T0, T0, T0 + 600)]
            assert [(r.slot, r.started) for r in runs(second, load)] == [(T0 + 1860, T0 + 1860)]
        finally:
            second.close()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("upstream", ["failed", "cancelled"])
def test_a_dependent_stored_blocked_on_an_upstream_stored_dead_fails_at_the_restart(
    kind: str, upstream: str, tmp_path: Path
) -> None:
    # A crash between the upstream's write (FAILED or CANCELLED) and its dependent's
    # (FAILED by its strand) leaves the dependent stored BLOCKED: recovery fails it at
    # once, as the strand would have, instead of leaving it waiting for good.
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        first = Driven(kind, store=store)
        extract = first.add("extract", OneTime(delay=600), id="extract")
        first.add("load", FixedRate(HOUR), id="load", depends_on=["extract"])
        first.run_until(T0 + 60)
        assert first.runtime.task("load").status is BLOCKED
        first.close()
        status = TaskStatus.CANCELLED if upstream == "cancelled" else FAILED
        record = ExecutionRecord(
            "extract", "extract", 1, T0 + 600, T0 + 600, 0, T0 + 600, T0 + 601, False, "boom"
        )
        store.save(  # the upstream's write, the dependent's never made
            TaskSnapshot(extract.definition, status, None, 1, 1, 1, "boom"),
            None if upstream == "cancelled" else record,
        )
    with SqliteTaskStore(path) as store:
        second = Driven(kind, store=store)
        try:
            load = second.runtime.task("load")
            assert load.status is FAILED
            assert second.runtime.dead_letter() == (
                ["extract", "load"] if status is FAILED else ["load"]
            )
            (wait,) = waits(load)
            assert wait.error is not None and wait.error.startswith(
                f"UpstreamFailed: upstream extract is {status.value}"
            )
            assert load.next_run_at is None
            second.run_until(T0 + 2 * HOUR)
            assert runs(second, load) == []
        finally:
            second.close()
    with SqliteTaskStore(path) as store:  # and the store says so, for the next restart
        (stored,) = [snap for snap in store.load_all() if snap.task.id == "load"]
        assert stored.status is FAILED


@pytest.mark.parametrize("kind", KINDS)
def test_an_upstream_purged_as_it_retired_still_counts_as_succeeded_after_a_restart(
    kind: str, tmp_path: Path
) -> None:
    # "Initialise once, then sync every minute" with purge_retired=True: init retires at
    # once and its row is deleted.  After a restart sync named an id the store no longer
    # held: it ran one slot and then stayed BLOCKED for good.
    path = tmp_path / "tasks.db"
    options: dict[str, Any] = {"purge_retired": True, "retain_finished": 0}
    with SqliteTaskStore(path) as store:
        first = Driven(kind, store=store, **options)
        # init is due after sync is registered: a running scheduler would run (and
        # retire) an init due at once before sync could name it
        first.add("init", OneTime(delay=10), id="init")
        first.add("sync", FixedRate(60, start_delay=30), id="sync", depends_on=["init"])
        first.run_until(T0 + 300)
        first.close()
        assert [snap.task.id for snap in store.load_all()] == ["sync"]
    with SqliteTaskStore(path) as store:
        second = Driven(kind, store=store, **options)
        try:
            second.clock.set(T0 + 300)
            second.run_until(T0 + 600)
            sync = second.runtime.task("sync")
            assert sync.status is SCHEDULED and waits(sync) == []
            assert [r.slot - T0 for r in runs(second, sync) if r.started >= T0 + 300] == [
                330.0, 390.0, 450.0, 510.0, 570.0,
            ]  # fmt: skip
        finally:
            second.close()


def test_a_restored_dependent_waits_for_a_success_newer_than_its_last_run() -> None:
    store = InMemoryTaskStore()
    sim = Simulation(workers=1, start=T0, store=store)
    sim.schedule("hourly", FixedRate(HOUR), action=jobs.noop, id="hourly")
    sim.schedule("report", FixedRate(HOUR, start_delay=60), action=jobs.noop, id="report",
                 depends_on=["hourly"])  # fmt: skip
    sim.run(T0 + 120)
    restarted = Simulation(workers=1, start=T0 + 120, store=store)
    report = restarted.task("report")
    assert report.status is SCHEDULED
    restarted.run(T0 + HOUR + 120)
    # its slot at T0 + 1 h + 60 s waits for hourly's run at T0 + 1 h: it ran then
    assert [r.started for r in report.history if r.outcome.ran] == [T0 + 60, T0 + HOUR + 60]


def test_a_one_off_upstream_that_succeeded_still_satisfies_every_slot_after_a_restart() -> None:
    # "Initialise once, then sync every minute", restarted after sync ran: init's one
    # success is older than sync's latest start, and it still counts (SUCCEEDED for good).
    store = InMemoryTaskStore()
    sim = Simulation(workers=1, start=T0, store=store)
    sim.schedule("init", OneTime(delay=0), action=jobs.noop, id="init")
    sim.schedule("sync", FixedRate(60, start_delay=30), action=jobs.noop, id="sync",
                 depends_on=["init"])  # fmt: skip
    sim.run(T0 + 100)
    restarted = Simulation(workers=1, start=T0 + 100, store=store)
    sync = restarted.task("sync")
    assert restarted.task("init").status is TaskStatus.SUCCEEDED
    restarted.run(T0 + 300)
    assert sync.status is SCHEDULED and waits(sync) == []
    assert [r.slot - T0 for r in sync.history if r.outcome.ran] == [30, 90, 150, 210, 270]


# -- the simulation ------------------------------------------------------------------------


def test_a_blocked_simulated_task_draws_nothing_from_its_models() -> None:
    def drawn(sim: Simulation, *, blocked: bool) -> list[float]:
        sim.schedule("up", OneTime(delay=600 if blocked else 0), id="up")
        sim.schedule("down", FixedRate(HOUR), id="down", depends_on=["up"],
                     duration=lambda rng, attempt: rng.uniform(1, 2))  # fmt: skip
        sim.run(T0 + 1800)
        return [r.duration for r in sim.records() if r.task_id == "down" and r.outcome.ran]

    assert drawn(Simulation(start=T0, seed=3), blocked=True) == drawn(
        Simulation(start=T0, seed=3), blocked=False
    )


# -- frames and the Gantt chart --------------------------------------------------------------


def etl(hours: int) -> Simulation:
    """extract (10 to 25 min) then transform then load, hourly, on two workers."""
    sim = Simulation(workers=2, start=T0, seed=1)
    sim.schedule("extract", FixedRate(HOUR, start_delay=300), id="extract",
                 duration=lambda rng, attempt: rng.uniform(600, 1500))  # fmt: skip
    sim.schedule("transform", FixedRate(HOUR), id="transform", duration=400,
                 depends_on=["extract"])  # fmt: skip
    sim.schedule("load", FixedRate(HOUR), id="load", duration=300, depends_on=["transform"])
    sim.run(T0 + hours * HOUR)
    return sim


def test_frames_show_each_blocked_wait_and_the_summary_adds_them_up() -> None:
    from lldsched.views.frames import ran, task_summary, to_frame

    sim = etl(hours=2)
    frame = to_frame(sim)
    waited = frame[frame["outcome"] == "blocked"]
    assert waited["task_id"].tolist() == ["transform", "load", "transform", "load"]
    assert (waited["attempt"] == 0).all() and (waited["worker"] == -1).all()
    assert len(ran(frame)) == len(frame) - len(waited)
    summary = task_summary(frame)
    assert summary.loc["extract", "blocked"] == 0
    assert summary.loc["transform", "blocked"] == 2
    assert (
        summary.loc["load", "blocked_time"] == waited[waited["task_id"] == "load"]["duration"].sum()
    )
    # transform waits from its slot until extract's success, then starts at once
    transform = ran(frame)[ran(frame)["task_id"] == "transform"]
    extract = ran(frame)[ran(frame)["task_id"] == "extract"]
    assert transform["start"].tolist() == extract["finish"].tolist()


def test_the_gantt_chart_draws_dependency_arrows_and_blocked_waits() -> None:
    from lldsched.views.frames import dependencies_of, to_frame
    from lldsched.views.plots import gantt

    sim = etl(hours=2)
    assert dependencies_of(sim) == {"transform": ("extract",), "load": ("transform",)}
    figure = gantt(to_frame(sim), by="task", depends_on=dependencies_of(sim))
    ax = figure.axes[0]
    arrows = [child for child in ax.texts if getattr(child, "arrow_patch", None) is not None]
    assert len(arrows) == 4  # two runs each of transform and load, one upstream each
    assert any(c.get_gid() == "blocked" for c in ax.collections)
    shown = ax.get_legend()
    assert shown is not None
    legend = [text.get_text() for text in shown.get_texts()]
    assert "upstream → dependent" in legend and "blocked (waits for upstreams)" in legend
    plain = gantt(to_frame(sim), by="task").axes[0]
    assert not any(getattr(c, "arrow_patch", None) for c in plain.texts)


def test_the_control_panel_shows_a_blocked_task_and_can_pause_it() -> None:
    from lldsched.views.widgets import ControlPanel

    driven = Driven("threaded")
    try:
        extract = driven.add("extract", OneTime(delay=600))
        load = driven.add("load", OneTime(delay=0), depends_on=[extract.id])
        driven.run_until(T0 + 60)
        assert isinstance(driven.runtime, Scheduler)
        panel = ControlPanel(driven.runtime, loop=None)
        assert panel.row(load.id)["status"] == "blocked"
        assert not panel.button(load.id, "pause").disabled
        panel.button(load.id, "pause").click()
        assert load.status is TaskStatus.PAUSED
        panel.close()
    finally:
        driven.close()


def test_the_codec_keeps_depends_on_and_rejects_a_stored_value_that_is_not_a_list() -> None:
    import json
    import re

    from lldsched.stores.codec import decode_task, encode_task

    sim = Simulation(start=T0)
    sim.schedule("extract", OneTime(delay=0), id="extract", action=jobs.noop)
    load = sim.schedule("load", OneTime(delay=0), id="load", action=jobs.noop,
                        depends_on=["extract"])  # fmt: skip
    text = encode_task(load.definition)
    assert decode_task("load", text).depends_on == ("extract",)
    assert "depends_on" not in encode_task(sim.task("extract").definition)  # as before
    document = json.loads(text)
    document["depends_on"] = "extract"
    with pytest.raises(StoreError, match=r"task load: .*depends_on must be a list"):
        decode_task("load", json.dumps(document))
    for ids in (["extract", ""], ["extract", 1]):  # each id a non-empty string
        document["depends_on"] = ids
        with pytest.raises(StoreError, match=re.escape(f"a list of task ids, got {ids!r}")):
            decode_task("load", json.dumps(document))


@pytest.mark.parametrize("kind", KINDS)
def test_a_retired_upstream_counts_as_it_ended(kind: str) -> None:
    def make() -> Scheduler | Simulation:
        if kind == "threaded":
            clock = FakeClock(T0)
            return Scheduler(workers=1, clock=clock, retain_finished=0)
        return Simulation(workers=1, start=T0, retain_finished=0)

    runtime = make()
    try:
        ok = add_to(runtime, "setup", OneTime(delay=0), id="setup")
        gone = add_to(runtime, "gone", OneTime(delay=HOUR), id="gone")
        sync = add_to(runtime, "sync", FixedRate(60), id="sync", depends_on=["setup"])
        stuck = add_to(runtime, "stuck", OneTime(delay=0), id="stuck", depends_on=["gone"])
        runtime.cancel(gone.id)  # retires at once (retain_finished=0)
        advance(runtime, T0 + 150)
        assert stuck.status is FAILED
        assert "upstream gone is cancelled" in (stuck.last_error or "")
        assert ok.id not in [task.id for task in runtime.tasks()]  # setup retired, SUCCEEDED
        assert len([r for r in sync.history if r.outcome.ran]) == 3  # and still satisfies sync
    finally:
        if isinstance(runtime, Scheduler):
            assert runtime.shutdown(timeout=5.0)


def register_init_then_sync(driven: Driven) -> ScheduledTask:
    """A service's registration code, run at every start: by id, replace_existing=True."""
    driven.add("init", OneTime(delay=10), id="init", replace_existing=True)
    return driven.add(
        "sync", FixedRate(60, start_delay=30), id="sync", depends_on=["init"],
        replace_existing=True,
    )  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
def test_a_dependent_registered_again_may_name_the_upstream_that_retired(kind: str) -> None:
    # "Initialise once, then sync every minute", registered again once init ran and
    # retired (retain_finished=0): the identical definition was refused, "depends_on
    # names ids that are not registered: ['init']", though sync still named it and an
    # identical definition changes nothing.  A new task still cannot name it.
    driven = Driven(kind, retain_finished=0)
    try:
        sync = register_init_then_sync(driven)
        driven.run_until(T0 + 100)
        assert [task.id for task in driven.runtime.tasks()] == ["sync"]  # init retired
        assert register_init_then_sync(driven) is sync
        with pytest.raises(ValidationError, match=r"not registered: \['init'\]"):
            driven.add("other", FixedRate(60), id="other", depends_on=["init"])
        driven.run_until(T0 + 300)
        assert [r.slot - T0 for r in runs(driven, sync)] == [30.0, 90.0, 150.0, 210.0, 270.0]
        assert sync.status is SCHEDULED and waits(sync) == []
    finally:
        driven.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_service_that_registers_its_pipeline_at_every_start_starts_again(
    kind: str, tmp_path: Path
) -> None:
    # The same registration code at the next start, on a SQLite store: init, restored
    # SUCCEEDED, retires again as it is registered (retain_finished=0), and sync named it.
    options: dict[str, Any] = {"retain_finished": 0}
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        first = Driven(kind, store=store, **options)
        register_init_then_sync(first)
        first.run_until(T0 + 100)
        first.close()
        second = Driven(kind, store=store, **options)
        try:
            second.clock.set(T0 + 100)
            sync = register_init_then_sync(second)
            second.run_until(T0 + 300)
            assert [r.slot - T0 for r in store.records("sync") if r.outcome.ran] == [
                30.0, 90.0, 150.0, 210.0, 270.0,
            ]  # fmt: skip
            assert [r.slot - T0 for r in store.records("init")] == [10.0]  # never again
            assert sync.status is SCHEDULED
        finally:
            second.close()


@pytest.mark.parametrize("kind", KINDS)
def test_an_id_registered_anew_once_its_cancelled_upstream_was_let_go_is_waited_for(
    kind: str,
) -> None:
    # "gone" retires CANCELLED while "stuck" names it, and counts as cancelled until no
    # task names it.  Registered anew under that id once "stuck" is removed, it is a new
    # upstream: a dependent of it waits BLOCKED for its success, not failed for the old one.
    driven = Driven(kind, retain_finished=0)
    try:
        driven.add("gone", OneTime(delay=HOUR), id="gone")
        driven.add("stuck", FixedRate(HOUR, start_delay=1000), id="stuck", depends_on=["gone"])
        assert driven.runtime.cancel("gone") is True  # retires at once (retain_finished=0)
        driven.runtime.remove("stuck")
        driven.add("gone", OneTime(delay=600), id="gone")
        load = driven.add("load", OneTime(delay=0), id="load", depends_on=["gone"])
        driven.run_until(T0 + 60)
        assert (load.status, load.last_error) == (BLOCKED, None)
        driven.run_until(T0 + 700)
        assert [run.started for run in runs(driven, load)] == [T0 + 600]
    finally:
        driven.close()


@pytest.mark.parametrize("kind", KINDS)
def test_pipelines_that_succeed_and_retire_leave_nothing_in_the_graph(kind: str) -> None:
    # A pipeline a day that succeeds: "extract-i", then "load-i", both retiring at once.
    # The dependent's edges go with it, and then what was kept of its retired upstream.
    # The upstream is due a second on, not at once: the threaded timer, started already,
    # ran it (and retired it) before its dependent could name it, now and then.
    driven = Driven(kind, retain_finished=0)
    try:
        for day in range(5):
            driven.add("extract", OneTime(delay=1), id=f"extract-{day}")
            driven.add("load", OneTime(delay=10), id=f"load-{day}", depends_on=[f"extract-{day}"])
            driven.run_until(driven.now + 60)
            assert driven.runtime.tasks() == []  # both ran, and retired
        graph = driven.runtime._core._deps
        assert graph is not None
        assert (graph._dependents, graph._retired, graph.waiting) == ({}, {}, {})
    finally:
        driven.close()


def add_to(runtime: Scheduler | Simulation, name: str, schedule: Any, **options: Any) -> Any:
    if isinstance(runtime, Scheduler):
        return runtime.schedule(name, jobs.noop, schedule, **options)
    return runtime.schedule(name, schedule, action=jobs.noop, **options)


def advance(runtime: Scheduler | Simulation, when: float) -> None:
    if isinstance(runtime, Simulation):
        runtime.run(when)
        return
    clock = runtime.clock
    assert isinstance(clock, FakeClock)
    runtime.start()
    for instant in range(int(clock.now()), int(when) + 1, 30):
        clock.set(float(instant))
        assert runtime.wait_idle(timeout=5.0)


# -- What the graph keeps of a task that left (a scheduler that runs for months) ------------


def test_an_upstream_removed_after_its_dependents_leaves_nothing_in_the_graph(
    driven: Driven,
) -> None:
    # A pipeline a day: "extract-i" fails, "load-i" fails with it (UpstreamFailed), and
    # the operator removes both from the dead letter, dependent first.  Before: every
    # removed upstream left its (empty) set of dependents in the graph for good, one
    # entry a pipeline (and each later unlink walked them all).
    for day in range(20):
        driven.add("extract", OneTime(delay=0), id=f"extract-{day}", action=jobs.broken,
                   retry=RetryPolicy(max_attempts=1))  # fmt: skip
        driven.add("load", OneTime(delay=0), id=f"load-{day}", depends_on=[f"extract-{day}"])
        driven.run_until(driven.now + 60)
        assert driven.runtime.dead_letter() == [f"extract-{day}", f"load-{day}"]
        driven.runtime.remove(f"load-{day}")
        driven.runtime.remove(f"extract-{day}")
    assert driven.runtime.tasks() == []
    graph = driven.runtime._core._deps
    assert graph is not None
    assert (graph._dependents, graph._retired, graph.waiting) == ({}, {}, {})


def test_on_a_shared_store_a_dependency_keeps_nothing_of_the_tasks_that_left(
    tmp_path: Path,
) -> None:
    # On a shared store the graph keeps, per upstream, the latest successes this process
    # ran and whether it died here; once any task had depends_on, every task that ran
    # got an entry.  Before: one a one-off task, never dropped (302 after 300 one-off
    # tasks, 7 registered), and one a task removed live.  Now: only the registered
    # tasks have one.
    store = SqliteTaskStore(tmp_path / "tasks.db", shared=True)
    scheduler = Scheduler(workers=1, clock=FakeClock(T0), store=store, retain_finished=3,
                          purge_retired=True)  # fmt: skip
    with store, Stepper(scheduler) as steps:
        scheduler.schedule("up", jobs.noop, FixedRate(60), id="up")
        scheduler.schedule("down", jobs.noop, FixedRate(300), id="down", depends_on=["up"])
        for minute in range(40):
            action = jobs.broken if minute % 4 == 0 else jobs.noop
            scheduler.schedule(
                "reminder", action, OneTime(delay=10), retry=RetryPolicy(max_attempts=1)
            )
            steps.advance(60)
            for task_id in scheduler.dead_letter():
                scheduler.remove(task_id)
            # a campaign stopped while it is due (removed live: its cancel notes it dead)
            scheduler.remove(scheduler.schedule("campaign", jobs.noop, FixedRate(HOUR)).id)
        graph = scheduler._core._deps
        assert graph is not None
        registered = {task.id for task in scheduler.tasks()}
        assert len(registered) == 2 + 3  # up, down and the three finished tasks held
        assert set(graph._here) <= registered
        assert graph._died_here <= registered
        assert set(graph._dependents) == {"up"}


class _RowsOnly:
    """A store of one's own with only what ``TaskStore`` asks (save, delete, load_all):
    no ``records``, which a store shared by processes has and dependencies count from."""

    def __init__(self) -> None:
        self._rows = InMemoryTaskStore()

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        self._rows.save(snapshot, record)

    def delete(self, task_id: str) -> None:
        self._rows.delete(task_id)

    def load_all(self) -> list[TaskSnapshot]:
        return self._rows.load_all()


@pytest.mark.parametrize("kind", KINDS)
def test_dependencies_on_a_store_of_ones_own_count_in_memory_without_reading_its_records(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A store no other process shares is not read for what a dependent waits for: the
    # scheduler's memory says it (only a shared store's records count another
    # process's runs).  Read, a store without records() failed every readiness check.
    driven = Driven(kind, store=_RowsOnly())
    try:
        extract = driven.add("extract", OneTime(delay=600))
        load = driven.add("load", OneTime(delay=0), depends_on=[extract.id])
        driven.run_until(T0 + 60)
        assert load.status is BLOCKED
        driven.run_until(T0 + 1200)
        assert (extract.status, load.status) == (TaskStatus.SUCCEEDED, TaskStatus.SUCCEEDED)
        (wait,) = waits(load)
        assert (wait.started, wait.finished) == (T0, T0 + 600)
    finally:
        driven.close()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
