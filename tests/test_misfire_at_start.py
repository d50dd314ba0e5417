"""Slots that pass between a task's registration and ``start()`` meet its misfire policy,
as a restart from a durable store decides the same slots (recovery.at_start)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lldsched import (
    EventLog,
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    Misfire,
    MisfirePolicy,
    ScheduledTask,
    Scheduler,
    TaskStatus,
)
from lldsched.core.recovery import Found, at_start, recover
from lldsched.stores.sqlite import SqliteTaskStore
from tests import jobs
from tests.conftest import T0, settle
from tests.harness import Harness, RecordingStore

EVERY = 300.0  # every 5 minutes, first at T0 + 5 min; started at T0 + 10:50
LATE = 650.0


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    jobs.CALLS.clear()


def seen(task: ScheduledTask) -> tuple[list[tuple[str, float, float]], float | None]:
    """The task's records (outcome, slot and start relative to T0) and its next due."""
    records = [(r.outcome.value, r.slot - T0, r.started - T0) for r in task.history]
    return records, task.next_run_at


def started_late(
    policy: MisfirePolicy, start_delay: float = EVERY
) -> tuple[list[tuple[str, float, float]], float | None]:
    """Registered at T0 (the scheduler's construction) on a scheduler started at T0 + LATE."""
    clock = FakeClock(T0)
    scheduler = Scheduler(clock=clock)
    task = scheduler.schedule(
        "x", jobs.note, FixedRate(EVERY, start_delay=start_delay), args=("x",), misfire=policy
    )
    clock.advance(LATE)
    scheduler.start()
    try:
        settle(scheduler)
        return seen(scheduler.task(task.id))
    finally:
        assert scheduler.shutdown()


def stored(policy: MisfirePolicy, start_delay: float = EVERY) -> tuple[InMemoryTaskStore, str]:
    """A task registered at T0 on a durable store, its process stopped at once."""
    store = InMemoryTaskStore()
    first = Scheduler(clock=FakeClock(T0), store=store)
    task = first.schedule(
        "x", jobs.note, FixedRate(EVERY, start_delay=start_delay), args=("x",), misfire=policy
    )
    assert first.shutdown()
    return store, task.id


def restarted(
    policy: MisfirePolicy, start_delay: float = EVERY
) -> tuple[list[tuple[str, float, float]], float | None]:
    """Registered at T0 on a durable store, the process down until T0 + LATE."""
    store, task_id = stored(policy, start_delay)
    scheduler = Scheduler(clock=FakeClock(T0 + LATE), store=store).start()
    try:
        settle(scheduler)
        return seen(scheduler.task(task_id))
    finally:
        assert scheduler.shutdown()


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (Misfire.SKIP, [("missed", 300.0, LATE), ("missed", 600.0, LATE)]),
        (Misfire.RUN_ONCE, [("coalesced", 300.0, LATE), ("ok", 600.0, LATE)]),
        (Misfire.RUN_ALL, [("ok", 300.0, LATE), ("ok", 600.0, LATE)]),
    ],
)
def test_slots_passed_before_start_meet_the_policy_as_after_a_restart(
    policy: Misfire, expected: list[tuple[str, float, float]]
) -> None:
    """Before, every policy ran 300 late and recorded 600 ``skipped`` (the overrun rule)."""
    misfire = MisfirePolicy(policy, grace=1)
    records, due = started_late(misfire)
    assert records == expected and due == T0 + 900
    assert (records, due) == restarted(misfire)


def test_a_slot_due_at_the_construction_instant_meets_the_policy_too() -> None:
    """Registered at the instant of the construction (a FakeClock does not move between
    them; nor does a coarse clock), its first slot is due then: nobody decided it, so it
    is decided at the start with the others.  Before, it ran 650 s late at the start and
    the slots after it were recorded ``skipped`` (the overrun rule), whatever the policy,
    while a real clock, a microsecond later, got the policy."""
    misfire = MisfirePolicy(Misfire.SKIP, grace=1)
    records, due = started_late(misfire, start_delay=0)
    assert records == [("missed", 0.0, LATE), ("missed", 300.0, LATE), ("missed", 600.0, LATE)]
    assert due == T0 + 900
    assert (records, due) == restarted(misfire, start_delay=0)


def test_a_run_recovery_left_due_at_the_construction_runs_at_the_start() -> None:
    """Recovery decided the downtime (``RUN_ONCE``: its one passed slot runs) and left that
    run due at the construction; no slot after it passed by the start, where it runs."""
    store, task_id = stored(MisfirePolicy(Misfire.RUN_ONCE, grace=1))
    clock = FakeClock(T0 + 400)  # down past 300: recovery leaves it to run
    scheduler = Scheduler(clock=clock, store=store)
    assert seen(scheduler.task(task_id)) == ([], T0 + 300)
    clock.advance(550 - 400)  # 600 still to come
    scheduler.start()
    try:
        settle(scheduler)
        assert seen(scheduler.task(task_id)) == ([("ok", 300.0, 550.0)], T0 + 600)
    finally:
        assert scheduler.shutdown()


BUILT = 400.0  # the construction of a scheduler on a store: slot 300 passed (down since T0)
OWED_BUILT = 700.0  # with an attempt of 300 owed: 600, the slot after it, passed
STARTED = 1250.0  # its start: 600, 900 and 1200 passed since the construction

Outcomes = list[tuple[str, float]]


def stored_owing(policy: MisfirePolicy) -> tuple[InMemoryTaskStore, str]:
    """``stored``, its process killed with the attempt of slot 300 in flight (a RUNNING
    row, no record): at-least-once, that attempt is owed and runs first."""
    store, task_id = stored(policy)
    (row,) = store.load_all()
    store.save(row._replace(status=TaskStatus.RUNNING, attempt=1, running=True))
    return store, task_id


def built_then_started(
    policy: MisfirePolicy, *, owed: bool, built: float, started: float = STARTED
) -> tuple[Outcomes, float | None, list[int], Outcomes]:
    """A scheduler built on a store at ``T0 + built`` (``stored``, or ``stored_owing``),
    its FakeClock advanced to ``T0 + started`` before ``start()``.  The task's records
    (outcome, slot), its next due, the slots of the runs its action made, and what a
    listener heard of the misfire decisions (outcome, slot).  ``built == started``: a
    restart at that instant."""
    store, task_id = (stored_owing if owed else stored)(policy)
    jobs.CALLS.clear()
    heard = EventLog()
    clock = FakeClock(T0 + built)
    scheduler = Scheduler(clock=clock, store=store, listeners=[heard])
    clock.advance(started - built)
    scheduler.start()
    try:
        settle(scheduler)
        task = scheduler.task(task_id)
        records = [(r.outcome.value, r.slot - T0) for r in task.history]
        runs = [int(due - T0) for _, due, _ in jobs.CALLS]
        decided = [
            (e.record.outcome.value, e.record.slot - T0)
            for e in heard.events
            if e.record is not None and e.record.misfire is not None
        ]
        return records, task.next_run_at, runs, decided
    finally:
        assert scheduler.shutdown()


RESTORED_RUN_CASES = [
    # Recovery at 400 left 300 to run (RUN_ONCE: the latest passed; RUN_ALL: its plan);
    # 600, 900 and 1200 pass before the start: one downtime, from T0 to the start.
    pytest.param(
        MisfirePolicy(Misfire.RUN_ONCE, grace=1),
        False,
        [("coalesced", 300.0), ("coalesced", 600.0), ("coalesced", 900.0), ("ok", 1200.0)],
        id="run_once",
    ),
    pytest.param(
        MisfirePolicy(Misfire.RUN_ALL, grace=1, max_catch_up=2),
        False,
        [("missed", 300.0), ("missed", 600.0), ("ok", 900.0), ("ok", 1200.0)],
        id="run_all-max_catch_up",
    ),
    # The attempt of 300 owed: it runs first, and the slots after it are the policy's;
    # recovery at 700 decided 600 (SKIP: missed; RUN_ONCE, RUN_ALL: run after it).
    pytest.param(
        MisfirePolicy(Misfire.SKIP, grace=1),
        True,
        [("missed", 600.0), ("missed", 900.0), ("missed", 1200.0), ("ok", 300.0)],
        id="owed-skip",
    ),
    pytest.param(
        MisfirePolicy(Misfire.RUN_ONCE, grace=1),
        True,
        [("coalesced", 600.0), ("coalesced", 900.0), ("ok", 300.0), ("ok", 1200.0)],
        id="owed-run_once",
    ),
    pytest.param(
        MisfirePolicy(Misfire.RUN_ALL, grace=1, max_catch_up=2),
        True,
        [("missed", 600.0), ("ok", 300.0), ("ok", 900.0), ("ok", 1200.0)],
        id="owed-run_all-max_catch_up",
    ),
]


@pytest.mark.parametrize(("policy", "owed", "expected"), RESTORED_RUN_CASES)
def test_slots_passed_after_a_restored_run_left_due_meet_the_policy_as_after_a_restart(
    policy: MisfirePolicy, owed: bool, expected: Outcomes
) -> None:
    """A run recovery left due at the construction (an owed attempt, a ``RUN_ONCE`` run, a
    ``RUN_ALL`` plan), and slots after it passing before ``start()``: nobody ran those
    either, so the whole downtime, from the last process's stop to the start, meets the
    policy once, as a restart at the start decides it: ``RUN_ONCE`` one run for it (and
    the owed attempt), ``RUN_ALL`` at most ``max_catch_up`` runs, ``SKIP`` the slots
    ``missed``; listeners hear the same decisions.  Before, the run left due ran at the
    start and the slots after it were recorded ``skipped`` (the overrun rule)."""
    built = OWED_BUILT if owed else BUILT
    records, due, runs, heard = built_then_started(policy, owed=owed, built=built)
    assert records == expected and due == T0 + 1500
    assert runs == [int(slot) for outcome, slot in expected if outcome == "ok"]
    assert heard == [(outcome, slot) for outcome, slot in expected if outcome != "ok"]
    restart = built_then_started(policy, owed=owed, built=STARTED)
    assert (records, due, runs, heard) == restart


def test_a_slot_passed_within_grace_before_start_runs_late_as_after_a_restart() -> None:
    misfire = MisfirePolicy(Misfire.SKIP, grace=400)  # 300 is 350 s late: no misfire
    records, due = started_late(misfire)
    assert records[0] == ("ok", 300.0, LATE) and due == T0 + 900
    assert (records, due) == restarted(misfire)


def test_a_paused_task_is_left_to_resume_as_a_restart_leaves_it() -> None:
    clock = FakeClock(T0)
    scheduler = Scheduler(clock=clock)
    task = scheduler.schedule(
        "x",
        jobs.note,
        FixedRate(EVERY, start_delay=EVERY),
        args=("x",),
        misfire=MisfirePolicy(Misfire.SKIP, grace=1),
    )
    scheduler.pause(task.id)
    clock.advance(LATE)
    scheduler.start()
    try:
        settle(scheduler)
        paused = scheduler.task(task.id)
        assert paused.status is TaskStatus.PAUSED and paused.history == ()
    finally:
        assert scheduler.shutdown()


def test_a_scheduler_built_on_a_store_and_started_later_decides_the_slots_since() -> None:
    """Recovery decided the downtime up to the construction; the slots passed from then to
    ``start()`` meet the policy at the start, as a process built at the start decides them."""
    store, task_id = stored(MisfirePolicy(Misfire.SKIP, grace=1))
    clock = FakeClock(T0 + 400)  # down past 300: recovery records it missed, due at 600
    scheduler = Scheduler(clock=clock, store=store)
    clock.advance(LATE - 400)
    scheduler.start()
    try:
        settle(scheduler)
        records, due = seen(scheduler.task(task_id))
        assert records == [("missed", 300.0, 400.0), ("missed", 600.0, LATE)] and due == T0 + 900
    finally:
        assert scheduler.shutdown()


def test_a_slot_within_grace_at_the_construction_and_late_beyond_it_at_the_start_misfires() -> None:
    """Recovery at 400 decided nothing (300 was 100 s late, within ``grace``); at the start
    it is 350 s late, and 600 passed too: both meet the policy, as a restart at the start
    decides them.  Before, 300 ran at the start and 600 was recorded ``skipped``."""
    policy = MisfirePolicy(Misfire.SKIP, grace=150)
    records, due, runs, heard = built_then_started(policy, owed=False, built=BUILT, started=LATE)
    assert records == [("missed", 300.0), ("missed", 600.0)] and due == T0 + 900 and runs == []
    assert (records, due, runs, heard) == built_then_started(
        policy, owed=False, built=LATE, started=LATE
    )


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (Misfire.SKIP, [("missed", 300.0), ("missed", 600.0)]),
        (Misfire.RUN_ONCE, [("coalesced", 300.0), ("ok", 600.0)]),
        (Misfire.RUN_ALL, [("ok", 300.0), ("ok", 600.0)]),
    ],
)
def test_a_shared_store_claims_slots_passed_before_start_as_misfires(
    tmp_path: Path, policy: Misfire, expected: Outcomes
) -> None:
    """On a shared store the claim decides (``Coordinator._misfire``) a slot due before the
    process was there to claim it: before its ``start()``, not only before its
    construction.  Built at 30 (300 still to come) and started at ``LATE``, the slots
    300 and 600 meet the policy as they do in one process.  Before, 300 ran late at the
    start and 600 was recorded ``skipped`` (the overrun rule), whatever the policy."""
    store = SqliteTaskStore(tmp_path / "shared.db", shared=True, lease=30, poll=0.05)
    try:
        seeder = Scheduler(clock=FakeClock(T0), store=store)  # never started
        seeder.schedule(
            "x", jobs.note, FixedRate(EVERY, start_delay=EVERY), args=("x",), id="x",
            misfire=MisfirePolicy(policy, grace=1),
        )  # fmt: skip
        clock = FakeClock(T0 + 30)
        scheduler = Scheduler(clock=clock, store=store)
        clock.advance(LATE - 30)
        scheduler.start()
        try:
            settle(scheduler)
            records = [(r.outcome.value, r.slot - T0) for r in store.records("x")]
            assert sorted(records, key=lambda r: r[1]) == expected
            assert store.load_all()[0].next_run_at == T0 + 900
        finally:
            assert scheduler.shutdown()
    finally:
        store.close()


@pytest.mark.parametrize("policy", [Misfire.RUN_ONCE, Misfire.RUN_ALL], ids=lambda p: p.value)
def test_a_decision_recovery_took_stands_when_no_slot_passed_before_the_start(
    policy: Misfire,
) -> None:
    """Started before the task's next slot (as a scheduler started right after its
    construction is), the decision recovery took stands: its row is not written again,
    its plan not made again.  Deciding it again would give the same runs and records
    (``test_slots_passed_after_a_restored_run_left_due_meet_the_policy_as_after_a_restart``),
    at the cost of two more writes of every restored task's row at each start."""
    store = RecordingStore()
    first = Scheduler(clock=FakeClock(T0), store=store)
    task = first.schedule(
        "x",
        jobs.note,
        FixedRate(EVERY, start_delay=EVERY),
        args=("x",),
        misfire=MisfirePolicy(policy, grace=1),
    )
    assert first.shutdown()
    clock = FakeClock(T0 + BUILT)
    h = Harness(clock, store=store)
    found: dict[str, Found] = {}
    recover(h.core, store, found=found)
    restored = h.core.tasks[task.id]
    decided = (restored.next_run_at, restored._schedule, len(store.saved))
    assert decided[0] == T0 + 300 and found[task.id].decided is not None
    clock.set(T0 + 599)  # 600 still to come
    at_start(h.core, found, clock.now())
    assert (restored.next_run_at, restored._schedule, len(store.saved)) == decided


@pytest.mark.parametrize("owed", [False, True], ids=["due", "owed"])
@pytest.mark.parametrize("policy", list(Misfire), ids=lambda p: p.value)
@pytest.mark.parametrize("down", [3 * 3600.0, 86400.0], ids=["3h", "a-day"])
def test_a_long_downtime_decided_again_at_the_start_records_no_slot_twice(
    down: float, policy: Misfire, owed: bool
) -> None:
    """Minutely, down 3 hours (more decisions than the task's history keeps,
    ``history_limit``) or a day (more than ``MAX_SLOTS``: one record stands for the
    rest), built 30 s after and started 3 min after: each slot decided once, as a
    restart at the start decides them.  Decided again from the task's history alone,
    the slots recovery recorded beyond its last 100 records were recorded a second time
    (about 80 of 183), and its record standing for the slots beyond the cap would read
    as a plan cut there (``misfireplan.cut_record``)."""
    misfire = MisfirePolicy(policy, grace=1, max_catch_up=5)

    def decided(built: float) -> tuple[list[tuple[float, str]], float | None]:
        store = InMemoryTaskStore()
        first = Scheduler(clock=FakeClock(T0), store=store)
        task = first.schedule(
            "x", jobs.note, FixedRate(60, start_delay=60), args=("x",), misfire=misfire
        )
        assert first.shutdown()
        if owed:  # the attempt of its first slot in flight when the process died
            (row,) = store.load_all()
            store.save(row._replace(status=TaskStatus.RUNNING, attempt=1, running=True))
        clock = FakeClock(T0 + built)
        scheduler = Scheduler(clock=clock, store=store)
        clock.set(T0 + down + 180)
        scheduler.start()
        try:
            settle(scheduler)
            records = sorted((r.slot - T0, r.outcome.value) for r in store.records(task.id))
            return records, scheduler.task(task.id).next_run_at
        finally:
            assert scheduler.shutdown()

    records, due = decided(down + 30)
    slots = [slot for slot, _ in records]
    assert len(slots) == len(set(slots)) and due == T0 + down + 240
    assert (records, due) == decided(down + 180)
