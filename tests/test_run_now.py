"""run_now(task_id): one extra run at once, and the schedule's grid does not move."""

from __future__ import annotations

import inspect
import threading
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    EventLog,
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    Misfire,
    MisfirePolicy,
    OneTime,
    Outcome,
    Overlap,
    RetryPolicy,
    Scheduler,
    SchedulerStateError,
    Simulation,
    SqliteTaskStore,
    TaskNotFoundError,
    TaskStatus,
    Window,
)
from lldsched.sim import fails_on, fixed
from tests import jobs
from tests.conftest import T0, SchedulerFactory, settle
from tests.runtimes import KINDS, Driven


def test_an_extra_run_happens_at_once_and_the_grid_stays_where_it_was(driven: Any) -> None:
    task = driven.add("report", FixedRate(3600))
    driven.run_until(T0 + 600)
    assert driven.runtime.run_now(task.id) is True
    driven.run_until(T0 + 7200)
    # The extra run is due (and its slot is) the instant it was asked for.
    assert [(r.due - T0, r.slot - T0) for r in task.history] == [
        (0, 0), (600, 600), (3600, 3600), (7200, 7200),
    ]  # fmt: skip
    assert task.next_run_at == T0 + 10800 and task.schedule == FixedRate(3600)
    changed = [e for e in driven.events if e.record is None and e.previous is e.status]
    assert [(e.status, e.at - T0) for e in changed] == [(TaskStatus.SCHEDULED, 600)]


def test_a_pending_one_off_runs_now_and_still_at_its_own_time(driven: Any) -> None:
    task = driven.add("reminder", OneTime(at=T0 + 3600))
    driven.run_until(T0 + 60)
    assert driven.runtime.run_now(task.id) is True
    driven.run_until(T0 + 4000)
    assert [r.started - T0 for r in task.history] == [60, 3600]
    assert task.status is TaskStatus.SUCCEEDED


def test_a_pending_retry_is_brought_forward_with_its_attempt_counter() -> None:
    sim = Simulation(workers=1, start=T0)
    retry = RetryPolicy(max_attempts=3, initial_backoff=60)
    task = sim.schedule("import", FixedRate(3600), fails=fails_on(1), retry=retry)
    sim.run(T0 + 10)
    assert task.status is TaskStatus.RETRYING and task.next_run_at == T0 + 60
    assert sim.run_now(task.id) is True
    sim.run(T0 + 3600)
    assert [(r.attempt, r.due - T0, r.slot - T0, r.ok) for r in task.history] == [
        (1, 0, 0, False), (2, 10, 0, True), (1, 3600, 3600, False),
    ]  # fmt: skip


def test_an_extra_run_that_fails_retries_and_the_slot_it_waited_for_follows() -> None:
    sim = Simulation(workers=1, start=T0)
    retry = RetryPolicy(max_attempts=2, initial_backoff=30)
    task = sim.schedule("sync", FixedRate(600), fails=fails_on(1), retry=retry, duration=fixed(1))
    sim.run(T0 + 100)
    sim.run_now(task.id)
    sim.run(T0 + 700)
    assert [(r.attempt, r.started - T0, r.slot - T0) for r in task.history] == [
        (1, 0, 0), (2, 31, 0), (1, 100, 100), (2, 131, 100), (1, 600, 600), (2, 631, 600),
    ]  # fmt: skip


@pytest.mark.parametrize("state", ["paused", "cancelled", "succeeded", "failed"])
def test_run_now_returns_false_and_changes_nothing_when_it_cannot_add_a_run(
    driven: Any, state: str
) -> None:
    """docs/GUIDE.md, "Changing a task": False when paused, finished or in the dead
    letter (a blocked task: tests/test_dependencies.py)."""
    if state == "failed":
        task = driven.add("job", OneTime(delay=60), action=jobs.broken, retry=RetryPolicy.never())
        driven.run_until(T0 + 60)
        assert task.status is TaskStatus.FAILED
    else:
        task = driven.add("job", OneTime(delay=60))
    if state == "paused":
        driven.runtime.pause(task.id)
    elif state == "cancelled":
        driven.runtime.cancel(task.id)
    elif state == "succeeded":
        driven.run_until(T0 + 60)
    before = (task.status, task.next_run_at, len(driven.events))
    assert driven.runtime.run_now(task.id) is False
    assert (task.status, task.next_run_at, len(driven.events)) == before


def test_a_task_due_at_once_anyway_gets_no_second_run() -> None:
    sim = Simulation(workers=1, start=T0)
    task = sim.schedule("job", OneTime(delay=0))
    assert sim.run_now(task.id) is False
    sim.run(T0 + 10)
    assert task.run_count == 1


def test_a_running_task_is_not_run_twice_at_once() -> None:
    sim = Simulation(workers=2, start=T0)
    task = sim.schedule("job", FixedRate(3600), duration=fixed(100))
    sim.run(T0 + 10)
    assert task.status is TaskStatus.RUNNING
    assert sim.run_now(task.id) is False
    sim.run(T0 + 3700)
    assert [r.started - T0 for r in task.history] == [0, 3600]


def test_a_running_task_that_allows_overlap_gets_no_run_now_either() -> None:
    """``overlap=ALLOW`` is for the slots of the schedule: a run_now beside a run in
    flight is refused all the same, and nothing is kept to run once it finishes."""
    sim = Simulation(workers=2, start=T0)
    task = sim.schedule(
        "job", FixedRate(3600), duration=fixed(100), overlap=Overlap.ALLOW, max_instances=2
    )
    sim.run(T0 + 10)
    assert task.status is TaskStatus.RUNNING
    assert sim.run_now(task.id) is False
    sim.run(T0 + 3700)
    assert [r.started - T0 for r in task.history] == [0, 3600]


@pytest.mark.parametrize("runtime", [Scheduler, Simulation])
def test_each_runtime_says_what_false_means_and_what_to_do(
    runtime: type[Scheduler] | type[Simulation],
) -> None:
    """The simulation's docstring said nothing of False; both now say when it is
    answered, that nothing is kept for later, and what to do for a run in flight."""
    said = " ".join((inspect.getdoc(runtime.run_now) or "").split())
    assert "False if it is due at once anyway, running, paused" in said
    assert "nothing is kept to run later" in said
    assert "call it again once that run has finished" in said


def test_an_unknown_id_raises_naming_it(driven: Any) -> None:
    with pytest.raises(TaskNotFoundError, match="'nightly'"):
        driven.runtime.run_now("nightly")


def test_the_extra_run_is_written_through_the_store() -> None:
    store = InMemoryTaskStore()
    sim = Simulation(workers=1, start=T0, store=store)
    task = sim.schedule("report", FixedRate(3600))
    sim.run(T0 + 100)
    sim.run_now(task.id)
    stored = store.get(task.id)
    assert stored is not None and stored.next_run_at == T0 + 100
    sim.run(T0 + 100)
    assert [r.slot - T0 for r in store.records(task.id)] == [0, 100]
    stored = store.get(task.id)
    assert stored is not None and stored.next_run_at == T0 + 3600


def test_the_threaded_runtime_runs_it_without_the_clock_moving(
    make_scheduler: SchedulerFactory, clock: FakeClock, log: EventLog
) -> None:
    scheduler = make_scheduler(clock=clock, listeners=[log])
    task = scheduler.schedule("report", lambda: None, FixedRate(3600, start_delay=3600))
    assert scheduler.run_now(task.id) is True
    settle(scheduler)
    (record,) = task.history
    assert record.started == T0 and task.next_run_at == T0 + 3600


def test_run_now_during_shutdown_is_refused(
    make_scheduler: SchedulerFactory, clock: FakeClock, log: EventLog
) -> None:
    release = threading.Event()
    scheduler = make_scheduler(clock=clock, listeners=[log])
    busy = scheduler.schedule("busy", lambda: release.wait(5), OneTime(delay=0))
    later = scheduler.schedule("later", lambda: None, FixedRate(3600, start_delay=3600))
    assert log.wait_for(lambda e: e.status is TaskStatus.RUNNING, timeout=5) is not None
    stopping = threading.Thread(target=scheduler.shutdown)
    stopping.start()  # waits for the busy run, which waits for release
    try:
        assert scheduler._timer is not None
        scheduler._timer.join(5)  # the timer stops once shutdown() has begun
        assert not scheduler.running and stopping.is_alive()
        with pytest.raises(SchedulerStateError, match=r"cannot run_now 'task-2'.*shut down"):
            scheduler.run_now(later.id)
        assert later.next_run_at == T0 + 3600 and later.run_count == 0
    finally:
        release.set()
        stopping.join(5)
    assert busy.status is TaskStatus.SUCCEEDED and later.status is TaskStatus.SCHEDULED


@pytest.mark.parametrize("runtime", ["scheduler", "simulation"])
def test_a_plan_in_front_of_the_schedule_is_never_what_a_user_reads_back(
    make_scheduler: SchedulerFactory, runtime: str
) -> None:
    """task(), tasks(), the task's definition, the store's snapshots and the frames'
    schedules all give the schedule the user registered, while a run_now's put-off slot
    is planned in front of it (the snapshot's ``waited`` says that one)."""
    from lldsched.views.frames import schedules_of

    hourly = FixedRate(3600, start_delay=3600)
    store = InMemoryTaskStore()
    made: Any
    if runtime == "scheduler":  # never started: the extra run stays due
        made = make_scheduler(clock=FakeClock(T0), store=store, start=False)
        task = made.schedule("hourly", jobs.noop, hourly, id="hourly")
    else:
        made = Simulation(store=store, start=T0)
        task = made.schedule("hourly", hourly, duration=fixed(1), id="hourly")
    assert made.run_now(task.id)
    (stored,) = store.load_all()
    assert (stored.waited, stored.next_run_at) == (T0 + 3600, T0)
    for schedule in (
        made.task(task.id).schedule, made.tasks()[0].schedule, stored.task.schedule,
        schedules_of(made)[task.id], task.definition.schedule,
    ):  # fmt: skip
        assert type(schedule) is FixedRate and schedule == hourly


def test_a_restart_between_a_run_now_and_its_run_keeps_the_grid(tmp_path: Path) -> None:
    """The store keeps the slot the run_now put off (TaskSnapshot.waited): the restarted
    scheduler runs the extra run, then that slot, as the first one would have."""
    hourly = FixedRate(3600, start_delay=3600)
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        clock = FakeClock(T0)
        first = Scheduler(clock=clock, store=store)  # never started
        task = first.schedule("hourly", jobs.noop, hourly, id="hourly")
        clock.advance(600)  # off the grid (T0 + 3600 k)
        assert first.run_now(task.id)
        assert first.shutdown()
    clock = FakeClock(T0 + 610)  # within the misfire grace: the extra run is only late
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        again = Scheduler(clock=clock, store=store).start()
        try:
            settle(again)
            restored = again.task("hourly")
            assert [r.slot for r in restored.history] == [T0 + 600]
            assert restored.next_run_at == T0 + 3600 and restored.schedule == hourly
        finally:
            assert again.shutdown()


MISSED, COALESCED, OK = Outcome.MISSED, Outcome.COALESCED, Outcome.OK
EXTRA, PUT_OFF = 600, 3600  # the extra run's instant and the slot it put off, after T0


@pytest.mark.parametrize(
    ("policy", "back", "recorded", "then"),
    [
        # Restarted past the extra run's grace, before the slot it put off.
        (Misfire.SKIP, 700, [(EXTRA, MISSED)], PUT_OFF),
        (Misfire.RUN_ONCE, 700, [(EXTRA, OK)], PUT_OFF),
        (Misfire.RUN_ALL, 700, [(EXTRA, OK)], PUT_OFF),
        # Past that slot's grace too: the two meet the policy together.
        (Misfire.SKIP, 3700, [(EXTRA, MISSED), (PUT_OFF, MISSED)], 7200),
        (Misfire.RUN_ONCE, 3700, [(EXTRA, COALESCED), (PUT_OFF, OK)], 7200),
        (Misfire.RUN_ALL, 3700, [(EXTRA, OK), (PUT_OFF, OK)], 7200),
    ],
    ids=["skip", "run-once", "run-all", "skip-both", "run-once-both", "run-all-both"],
)
def test_a_restart_past_the_grace_of_a_run_now_keeps_the_slot_it_put_off_and_the_grid(
    tmp_path: Path, policy: Misfire, back: float, recorded: list[tuple[float, Outcome]], then: float
) -> None:
    """The extra run of a ``run_now`` made while no scheduler ran (an admin's process, a
    node whose clock lags the others', every process down for a deploy) meets the misfire
    policy as a passed slot, and the slot it put off after it: the task goes on at that
    slot, or, past it, on its grid.  Before, the passed slots were counted on from the
    extra run's instant, off the grid: the slot put off was dropped unrecorded and the
    task went on at the extra run's instant plus the period (T0 + 4200), a grid moved."""
    store = _run_now_made_at_extra(tmp_path, policy)
    store.close()
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        again = Scheduler(clock=FakeClock(T0 + back), store=store).start()
        try:
            settle(again)
            restored = again.task("hourly")
            assert [(r.slot - T0, r.outcome) for r in restored.history] == recorded
            assert restored.next_run_at == T0 + then and restored.schedule == HOURLY
        finally:
            assert again.shutdown()


def test_an_extra_run_and_the_slot_it_put_off_both_past_grace_run_once_each_at_start() -> None:
    """An extra run asked for before the scheduler started (``run_now`` on a scheduler
    not started), started once the slot it put off passed too: ``RUN_ALL`` runs the
    extra run and that slot, each once, and the task goes on on its grid.  Handed back
    to the slot put off after running it (as when only the extra run passed), it ran
    that slot a second time."""
    clock = FakeClock(T0)
    ran: list[float] = []
    scheduler = Scheduler(clock=clock)  # not started yet
    try:
        scheduler.schedule("hourly", lambda: ran.append(clock.now()), HOURLY, id="hourly",
                           misfire=MisfirePolicy(Misfire.RUN_ALL, grace=60))  # fmt: skip
        clock.advance(EXTRA)
        assert scheduler.run_now("hourly")
        clock.set(T0 + PUT_OFF + 100)  # past both graces
        scheduler.start()
        settle(scheduler)
        task = scheduler.task("hourly")
        assert [(r.slot - T0, r.outcome) for r in task.history] == [(EXTRA, OK), (PUT_OFF, OK)]
        assert task.next_run_at == T0 + 7200 and len(ran) == 2
        clock.set(T0 + 7200)
        settle(scheduler)
        assert [r.slot - T0 for r in scheduler.task("hourly").history] == [EXTRA, PUT_OFF, 7200]
    finally:
        assert scheduler.shutdown()


@pytest.mark.parametrize(
    ("policy", "recorded"),
    [
        (Misfire.SKIP, [(PUT_OFF, MISSED, 0), (7200, MISSED, 0), (EXTRA, OK, 1)]),
        (Misfire.RUN_ONCE, [(PUT_OFF, COALESCED, 0), (EXTRA, OK, 1), (7200, OK, 1)]),
        (Misfire.RUN_ALL, [(EXTRA, OK, 1), (PUT_OFF, OK, 1), (7200, OK, 1)]),
    ],
    ids=["skip", "run-once", "run-all"],
)
def test_an_extra_run_in_flight_at_a_crash_runs_again_then_the_grid_from_the_slot_put_off(
    tmp_path: Path, policy: Misfire, recorded: list[tuple[float, Outcome, int]]
) -> None:
    """The extra run was in flight when its process died (its row left ``running``): the
    restart runs it again, owed, and the policy decides the slots from the one it put off
    (before: from the extra run's instant plus the period, T0 + 4200 and 7800 decided, the
    grid moved, the slot put off never recorded)."""
    store = _run_now_made_at_extra(tmp_path, policy)
    row = store.get("hourly")
    assert row is not None
    store.save(row._replace(status=TaskStatus.RUNNING, attempt=1, running=True))
    store.close()
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        again = Scheduler(clock=FakeClock(T0 + 7900), store=store).start()
        try:
            settle(again)
            restored = again.task("hourly")
            assert [(r.slot - T0, r.outcome, r.attempt) for r in restored.history] == recorded
            assert restored.next_run_at == T0 + 10800
        finally:
            assert again.shutdown()


HOURLY = FixedRate(3600, start_delay=3600)


def _run_now_made_at_extra(tmp_path: Path, policy: Misfire) -> SqliteTaskStore:
    """A store whose hourly task (first slot at T0 + PUT_OFF, grace 60 s, ``policy``) got a
    ``run_now`` at T0 + EXTRA from a scheduler that never started; left open."""
    store = SqliteTaskStore(tmp_path / "tasks.db")
    clock = FakeClock(T0)
    first = Scheduler(clock=clock, store=store)  # never started
    first.schedule("hourly", jobs.noop, HOURLY, id="hourly",
                   misfire=MisfirePolicy(policy, grace=60))  # fmt: skip
    clock.advance(EXTRA)  # off the grid (T0 + 3600 k)
    assert first.run_now("hourly")
    assert first.shutdown()
    return store


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("restart", [False, True], ids=["one process", "restarted"])
def test_a_windows_max_runs_counts_the_extra_run_as_a_restart_does(
    kind: str, restart: bool, tmp_path: Path
) -> None:
    """``Window(..., max_runs=3)`` runs at most 3 times, an extra run among them.  The
    extra run was handed its put-off slot by the plan, which never told the window: 4
    runs in one process, while a restart (which counts runs from the store's counters)
    ran 3."""
    window = Window(FixedRate(100), max_runs=3)
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        driven = Driven(kind, store=store)
        try:
            driven.add("trial", window, id="trial")
            driven.run_until(T0)
            assert driven.runtime.run_now("trial") is True
            driven.run_until(T0)
            assert len(store.records("trial")) == 2
            if restart:
                driven.close()
                driven = Driven(kind, store=store)
                driven.add("trial", window, id="trial", replace_existing=True)
            driven.run_until(T0 + 1000)
            assert driven.runtime.task("trial").status is TaskStatus.SUCCEEDED
            assert [r.due - T0 for r in store.records("trial")] == [0, 0, 100]
        finally:
            driven.close()
