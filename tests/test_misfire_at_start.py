"""Slots that pass between a task's registration and ``start()`` meet its misfire policy,
as a restart from a durable store decides the same slots (recovery.at_start)."""

from __future__ import annotations

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    Misfire,
    MisfirePolicy,
    ScheduledTask,
    Scheduler,
    TaskStatus,
)
from tests import jobs
from tests.conftest import T0, settle

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
    run due at the construction: it is not decided again at the start, where its slot,
    650 s late, would be recorded ``coalesced`` and not run."""
    store, task_id = stored(MisfirePolicy(Misfire.RUN_ONCE, grace=1))
    clock = FakeClock(T0 + 400)  # down past 300: recovery leaves it to run
    scheduler = Scheduler(clock=clock, store=store)
    assert seen(scheduler.task(task_id)) == ([], T0 + 300)
    clock.advance(LATE - 400)
    scheduler.start()
    try:
        settle(scheduler)
        records, due = seen(scheduler.task(task_id))
        assert records[0] == ("ok", 300.0, LATE) and due == T0 + 900
    finally:
        assert scheduler.shutdown()


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
