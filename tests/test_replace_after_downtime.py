"""A task restored after a downtime whose schedule changed at registration.

The restart's misfire decision (``coalesced`` records for the passed slots, one run for
the latest) stands: the catch-up run is owed work, and the new schedule's first run
counts from its finish (docs/decisions/changing-a-task.md, "A slot already due when the
schedule changes runs first").  The same on ``Scheduler`` and ``Simulation``, with a
store of its own or a shared one, and for ``reschedule`` as for a replacement.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    Misfire,
    MisfirePolicy,
    Scheduler,
    Simulation,
    TaskEvent,
    TaskStatus,
)
from lldsched.core.names import MISFIRE_CAP
from lldsched.model import ExecutionRecord, Outcome
from lldsched.stores.sqlite import SqliteTaskStore
from lldsched.testing import Stepper
from tests import jobs
from tests.conftest import T0
from tests.waits import wait_until

HOUR = 3600.0
OLD = FixedRate(HOUR)  # due at T0, T0+1h, ...
NEW = FixedRate(2 * HOUR, start_delay=2 * HOUR)  # a new schedule, first run 2h on
BACK = T0 + 5.5 * HOUR  # down from T0+1h30 to T0+5h30: slots 2h, 3h, 4h, 5h passed

Verb = Callable[..., object]


def _register(runtime: Scheduler | Simulation, schedule: FixedRate, **options: object) -> None:
    """Register the service's job, as at every start (a simulation takes it by keyword)."""
    if isinstance(runtime, Simulation):
        runtime.schedule("job", schedule, action=jobs.noop, id="job", **options)  # type: ignore[arg-type]
    else:
        runtime.schedule("job", jobs.noop, schedule, id="job", **options)  # type: ignore[arg-type]


def _replace(runtime: Scheduler | Simulation, **options: object) -> object:
    _register(runtime, NEW, replace_existing=True, **options)
    return None


def _reschedule(runtime: Scheduler | Simulation, **options: object) -> object:
    _register(runtime, OLD, replace_existing=True, **options)  # the service's registration
    return runtime.reschedule("job", NEW)


def _slots(records: list[ExecutionRecord], outcome: Outcome | None = None) -> list[float]:
    """The slots of ``records`` (those with ``outcome``, or those that ran), hours from T0."""
    return [
        (record.slot - T0) / HOUR
        for record in records
        if (record.outcome is outcome if outcome is not None else record.outcome.ran)
    ]


def _before_the_downtime(path: Path, *, shared: bool = False, **options: object) -> None:
    store = SqliteTaskStore(path, shared=shared)
    scheduler = Scheduler(workers=1, clock=FakeClock(T0), store=store)
    with store, Stepper(scheduler) as steps:
        _register(scheduler, OLD, replace_existing=True, **options)
        steps.advance(1.5 * HOUR)  # runs at T0 and T0+1h


def _restarted_on_threads(
    path: Path,
    verb: Verb,
    *,
    started: bool,
    due: float,
    listeners: Sequence[Callable[[TaskEvent], None]] = (),
    **options: object,
) -> list[ExecutionRecord]:
    """The records once a ``Scheduler`` restarted at ``BACK`` on the store, the job given
    ``NEW`` by ``verb`` before its ``start()`` (the job still ``due`` then, as decided at
    its construction) or after it, ran 4.5 h."""
    store = SqliteTaskStore(path)
    scheduler = Scheduler(workers=1, clock=FakeClock(BACK), store=store, listeners=listeners)
    with store, contextlib.ExitStack() as stack:
        if started:
            steps = stack.enter_context(Stepper(scheduler))
        verb(scheduler, **options)
        if not started:
            assert scheduler.task("job").next_run_at == due  # still due
            steps = stack.enter_context(Stepper(scheduler))
        steps.advance(4.5 * HOUR)
        records = scheduler.records()
        assert store.records("job") == records  # the store holds the same
    return records


def _assert_the_decision_stood(records: list[ExecutionRecord]) -> None:
    # 2h, 3h and 4h were folded into the run of 5h, which runs at the restart, once;
    # the new schedule's first run counts from its finish: 5h30 + 2h.
    assert _slots(records, Outcome.COALESCED) == [2, 3, 4]
    assert _slots(records) == [0, 1, 5, 7.5, 9.5]
    late = [record for record in records if record.slot == T0 + 5 * HOUR]
    assert [record.started for record in late] == [BACK]


@pytest.mark.parametrize("verb", [_replace, _reschedule], ids=["replace", "reschedule"])
@pytest.mark.parametrize("started", [False, True], ids=["before-start", "after-start"])
def test_a_scheduler_restored_after_a_downtime_runs_the_catch_up_then_the_new_schedule(
    tmp_path: Path, verb: Verb, started: bool
) -> None:
    # A service registers its jobs before start() (the restart's decisions were taken
    # as the scheduler was built, and are taken again at start), or after it.
    path = tmp_path / "tasks.db"
    _before_the_downtime(path)
    heard: list[TaskEvent] = []
    records = _restarted_on_threads(
        path, verb, started=started, due=T0 + 5 * HOUR, listeners=[heard.append]
    )
    _assert_the_decision_stood(records)
    decided = [e.record.slot for e in heard if e.record is not None and not e.record.outcome.ran]
    assert [(slot - T0) / HOUR for slot in decided] == [2, 3, 4]  # the listeners heard them


@pytest.mark.parametrize("verb", [_replace, _reschedule], ids=["replace", "reschedule"])
def test_a_simulation_restored_after_a_downtime_runs_the_catch_up_then_the_new_schedule(
    tmp_path: Path, verb: Verb
) -> None:
    path = tmp_path / "tasks.db"
    _before_the_downtime(path)
    store = SqliteTaskStore(path)
    with store:
        sim = Simulation(workers=1, start=BACK, store=store)
        verb(sim)
        sim.run(BACK + 4.5 * HOUR)
        records = store.records("job")  # the restored history, then the simulation's
        assert records[-len(sim.records()) :] == sim.records()
        _assert_the_decision_stood(records)


@pytest.mark.parametrize("claimed", [False, True], ids=["before-a-claim", "after-a-claim"])
def test_on_a_shared_store_only_a_claims_decision_is_kept(tmp_path: Path, claimed: bool) -> None:
    # A shared store's downtime is decided by the node that claims the passed slot, not
    # at load.  Registered with the new schedule before any claim (both nodes), the task
    # starts afresh and no record says a slot was folded into a run.  After the first
    # node's claim decided it (2h, 3h and 4h coalesced into the run of 5h, which it ran),
    # the second node's registration keeps that decision, its records and its one run.
    path = tmp_path / "tasks.db"
    _before_the_downtime(path, shared=True)
    with SqliteTaskStore(path, shared=True) as one, SqliteTaskStore(path, shared=True) as two:
        first = Scheduler(workers=1, clock=FakeClock(BACK), store=one)
        if claimed:
            with Stepper(first):
                _register(first, OLD, replace_existing=True)
                first.wait_idle()
        else:
            _replace(first)
        second = Scheduler(workers=1, clock=FakeClock(BACK), store=two)
        _replace(second)
        stepped, idle = (second, first) if claimed else (first, second)
        idle.shutdown()  # a Stepper waits for its own scheduler's due tasks only
        with Stepper(stepped) as steps:
            steps.advance(4.5 * HOUR)
        records = one.records("job")
    if claimed:
        _assert_the_decision_stood(records)
    else:
        assert [r.outcome for r in records if not r.outcome.ran] == []
        assert _slots(records) == [0, 1, 7.5, 9.5]


def test_a_skip_policy_runs_nothing_for_the_downtime_and_records_every_passed_slot(
    tmp_path: Path,
) -> None:
    # SKIP decided every passed slot missed: nothing is owed, the new schedule starts now.
    path = tmp_path / "tasks.db"
    store = SqliteTaskStore(path)
    skip = MisfirePolicy(Misfire.SKIP)
    scheduler = Scheduler(workers=1, clock=FakeClock(T0), store=store)
    with store, Stepper(scheduler) as steps:
        scheduler.schedule("job", jobs.noop, OLD, id="job", misfire=skip)
        steps.advance(1.5 * HOUR)
    store = SqliteTaskStore(path)
    with store:
        sim = Simulation(workers=1, start=BACK, store=store)
        _register(sim, NEW, replace_existing=True, misfire=skip)
        sim.run(BACK + 4.5 * HOUR)
        records = store.records("job")
    assert _slots(records, Outcome.MISSED) == [2, 3, 4, 5]
    assert _slots(records) == [0, 1, 7.5, 9.5]


def _restored_records(
    path: Path, back: float, until: float, schedule: FixedRate, **options: object
) -> list[ExecutionRecord]:
    """The store's records once a simulation restarted at ``back`` on it, the job
    registered anew with ``schedule``, ran until ``until``."""
    with SqliteTaskStore(path) as store:
        sim = Simulation(workers=1, start=back, store=store)
        _register(sim, schedule, replace_existing=True, **options)
        sim.run(until)
        return store.records("job")


def test_a_downtime_that_ends_on_a_slot_runs_that_slot_once_then_the_new_schedule(
    tmp_path: Path,
) -> None:
    # Back at 5h sharp: 2h, 3h and 4h are folded into the run of 5h, due at the instant
    # the registration changes the schedule (a task registered due now is not owed).
    path = tmp_path / "tasks.db"
    _before_the_downtime(path)
    records = _restored_records(path, T0 + 5 * HOUR, T0 + 10 * HOUR, NEW)
    assert _slots(records, Outcome.COALESCED) == [2, 3, 4]
    assert _slots(records) == [0, 1, 5, 7, 9]


# RUN_ALL, max_catch_up=2: 2h and 3h missed, 4h and 5h run, then the new schedule; with
# max_catch_up=1, 2h to 4h missed and 5h runs (one run decided, no plan in front: it was
# dropped, without a record, the new schedule started at once).
CAUGHT_UP = pytest.mark.parametrize(
    ("most", "missed", "ran"),
    [(2, [2, 3], [0, 1, 4, 5, 7.5, 9.5]), (1, [2, 3, 4], [0, 1, 5, 7.5, 9.5])],
    ids=["two-runs", "one-run"],
)


@CAUGHT_UP
def test_a_run_all_plan_runs_its_catch_up_runs_then_the_new_schedule(
    tmp_path: Path, most: int, missed: list[float], ran: list[float]
) -> None:
    path = tmp_path / "tasks.db"
    run_all = MisfirePolicy(Misfire.RUN_ALL, max_catch_up=most)
    store = SqliteTaskStore(path)
    scheduler = Scheduler(workers=1, clock=FakeClock(T0), store=store)
    with store, Stepper(scheduler) as steps:
        _register(scheduler, OLD, misfire=run_all)
        steps.advance(1.5 * HOUR)
    records = _restored_records(path, BACK, BACK + 4.5 * HOUR, NEW, misfire=run_all)
    assert _slots(records, Outcome.MISSED) == missed
    assert _slots(records) == ran


@CAUGHT_UP
@pytest.mark.parametrize("verb", [_replace, _reschedule], ids=["replace", "reschedule"])
@pytest.mark.parametrize("started", [False, True], ids=["before-start", "after-start"])
def test_a_scheduler_runs_a_run_all_plans_catch_up_runs_then_the_new_schedule(
    tmp_path: Path, verb: Verb, started: bool, most: int, missed: list[float], ran: list[float]
) -> None:
    # The threaded runtime decides the downtime again at start(): registered before it,
    # the plan's second run (5h) was dropped there, with no record, the new schedule's
    # grid asked for the slots after the first.
    path = tmp_path / "tasks.db"
    run_all = MisfirePolicy(Misfire.RUN_ALL, max_catch_up=most)
    _before_the_downtime(path, misfire=run_all)
    due = T0 + ran[2] * HOUR  # the first catch-up run
    records = _restarted_on_threads(path, verb, started=started, due=due, misfire=run_all)
    assert _slots(records, Outcome.MISSED) == missed
    assert _slots(records) == ran


@pytest.mark.parametrize("verb", [_replace, _reschedule], ids=["replace", "reschedule"])
def test_a_new_schedule_given_while_the_first_catch_up_run_runs_keeps_the_second_on_threads(
    tmp_path: Path, verb: Verb
) -> None:
    # The plan's first run (4h) in flight as the schedule changes: its second run (5h) is
    # owed all the same, then the new schedule counts from its finish.  Was: dropped,
    # without a record (as the changed-schedule test above met by chance, the timer's
    # first run begun before or after the registration).
    path = tmp_path / "tasks.db"
    run_all = MisfirePolicy(Misfire.RUN_ALL, max_catch_up=2)
    _before_the_downtime(path, misfire=run_all)
    store = SqliteTaskStore(path)
    scheduler = Scheduler(workers=1, clock=FakeClock(BACK), store=store)
    jobs.GATE.clear()
    # the service's job held at the gate, registered before start(); the stepper, built
    # once the run is let go, waits for it (built before, it would wait at the gate)
    scheduler.schedule("job", jobs.gated, OLD, id="job", replace_existing=True, misfire=run_all)
    with store, contextlib.ExitStack() as stack:
        stack.callback(scheduler.shutdown, timeout=5)
        stack.callback(jobs.GATE.set)
        scheduler.start()
        job = scheduler.task("job")
        wait_until(lambda: job.status is TaskStatus.RUNNING, timeout=10, what="4h in flight")
        verb(scheduler, misfire=run_all)
        jobs.GATE.set()
        with Stepper(scheduler) as steps:
            steps.advance(4.5 * HOUR)
            records = scheduler.records()
    assert _slots(records, Outcome.MISSED) == [2, 3]
    assert _slots(records) == [0, 1, 4, 5, 7.5, 9.5]


@pytest.mark.parametrize("verb", [_replace, _reschedule], ids=["replace", "reschedule"])
@pytest.mark.parametrize("twice", ["at-once", "in-flight", "between-them"])
def test_a_simulation_keeps_the_owed_catch_up_runs_through_a_second_change(
    tmp_path: Path, verb: Verb, twice: str
) -> None:
    # The owed runs survive a second change of schedule: made at once (the first change
    # left them a plan ending in the new schedule's first run), or while the first of
    # them runs, or between them.  Was: a second change before them dropped both; during
    # or after the first, the second.  Runs take a minute here: the last new schedule
    # counts from 5h's finish.
    path = tmp_path / "tasks.db"
    run_all = MisfirePolicy(Misfire.RUN_ALL, max_catch_up=2)
    _before_the_downtime(path, misfire=run_all)
    later = FixedRate(3 * HOUR, start_delay=3 * HOUR)
    with SqliteTaskStore(path) as store:
        sim = Simulation(workers=1, start=BACK, store=store)
        sim.schedule(
            "job", OLD, action=None, id="job", replace_existing=True, misfire=run_all, duration=60
        )
        verb(sim, misfire=run_all, duration=60)

        def change() -> None:
            sim.reschedule("job", later)

        if twice == "at-once":
            change()
        else:  # during 4h's run, or as it ended and 5h is due (before that instant's start)
            sim.at(BACK + (30 if twice == "in-flight" else 60), change)
        sim.run(BACK + 7 * HOUR)
        records = store.records("job")
    assert _slots(records, Outcome.MISSED) == [2, 3]
    finish = BACK + 2 * 60  # 4h and 5h run a minute each from the restart
    assert _slots(records) == pytest.approx(
        [0, 1, 4, 5, *((finish - T0) / HOUR + h for h in (3, 6))]
    )


def test_a_downtime_past_the_misfire_cap_runs_the_one_catch_up_then_the_new_schedule(
    tmp_path: Path,
) -> None:
    # 1,000 slots listed one by one (MAX_SLOTS), one record standing for the rest: each
    # is coalesced into the run of the 1,000th passed slot, which runs.
    path = tmp_path / "tasks.db"
    store = SqliteTaskStore(path)
    scheduler = Scheduler(workers=1, clock=FakeClock(T0), store=store)
    with store, Stepper(scheduler) as steps:
        _register(scheduler, FixedRate(60))
        steps.advance(30)  # runs at T0
    back = T0 + 2000 * 60 + 30
    records = _restored_records(path, back, back + 4 * HOUR, NEW)
    assert [r.outcome for r in records[-4:]] == [Outcome.COALESCED, *[Outcome.OK] * 3]
    stands_for_the_rest = records[-4]  # the cap's record, after the 999 listed
    assert stands_for_the_rest.error is not None
    assert stands_for_the_rest.error.startswith(MISFIRE_CAP)
    ran = [r.slot for r in records[-3:]]
    assert ran == [T0 + 1000 * 60, back + 2 * HOUR, back + 4 * HOUR]
