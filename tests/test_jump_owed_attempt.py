"""A forward wall-clock jump before an owed first attempt ran leaves it owed.

A run in flight when its process died is owed (at-least-once): the restart runs it
again, as the attempt it was, and the misfire policy decides only the slots after its
slot (:func:`lldsched.core.misfires.apply.first_decided`).  A forward jump (or a suspend)
noticed in the restarted process before that attempt ran decided the task's slots by
the policy as if the interrupted slot were one of them (``after_clock_jump`` passed
``owed`` for a retry only): with ``SKIP`` it was recorded ``missed`` and never ran (a
run lost), with ``RUN_ONCE`` coalesced.  Each case is checked against a restart of the
same store at the jump's instant (docs/decisions/persistence.md, "A restart killed before the
attempt it owes ran leaves it owed")."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    Misfire,
    MisfirePolicy,
    OneTime,
    Scheduler,
)
from lldsched.model import TaskStatus
from lldsched.persistence import TaskSnapshot
from lldsched.testing import Stepper
from tests import jobs
from tests.conftest import T0, SchedulerFactory, settle
from tests.test_recovery import HOUR, JumpingClock
from tests.waits import wait_until

JUMPED = T0 + 2.5 * HOUR  # the wall clock after the jump: 10:00 and 11:00 passed

Outcomes = list[tuple[float, int, str]]

# The job's records, by policy, as a restart at 11:30 writes them: the owed attempt of
# 09:00 runs (attempt 1), and the policy decides 10:00 and 11:00.
EXPECTED = {
    Misfire.SKIP: [(1.0, 0, "missed"), (2.0, 0, "missed"), (0.0, 1, "ok")],
    Misfire.RUN_ONCE: [(1.0, 0, "coalesced"), (0.0, 1, "ok"), (2.0, 1, "ok")],
    Misfire.RUN_ALL: [(0.0, 1, "ok"), (1.0, 1, "ok"), (2.0, 1, "ok")],
}


@pytest.fixture(autouse=True)
def _calls() -> Iterator[None]:
    jobs.CALLS.clear()
    jobs.GATE.clear()
    yield
    jobs.GATE.set()  # no worker left waiting on a failed test
    jobs.CALLS.clear()
    jobs.GATE.clear()


def _crashed(policy: MisfirePolicy) -> InMemoryTaskStore:
    """A store as the process running attempt 1 of ``job`` (hourly from 09:00) left it
    when it died: the row ``running``, no record; and two one-off tasks (``b0``, ``b1``)
    due just before 09:00, which hold the one worker of the process restarted on it, and
    its hand-off queue, so that the owed attempt waits in the heap."""
    store = InMemoryTaskStore()
    writer = Scheduler(clock=FakeClock(T0 - 2), store=store)
    for delay in (0, 1):  # due at 08:59:58 and 08:59:59, before the job
        writer.schedule(f"b{delay}", jobs.gated, OneTime(delay=delay), id=f"b{delay}")
    task = writer.schedule(
        "job", jobs.note, FixedRate(HOUR), args=("job",), id="job", misfire=policy
    )
    store.save(TaskSnapshot(task.definition, TaskStatus.RUNNING, T0, 1, 0, 0, None, True))
    return store


def _history(scheduler: Scheduler) -> Outcomes:
    return [
        ((r.slot - T0) / HOUR, r.attempt, r.outcome.value) for r in scheduler.task("job").history
    ]


def _job_calls() -> list[tuple[float, int]]:
    return [((due - T0) / HOUR, attempt) for label, due, attempt in jobs.CALLS if label == "job"]


def _jumped(make_scheduler: SchedulerFactory, policy: MisfirePolicy) -> tuple[Outcomes, Outcomes]:
    """Restarted at 09:00:10 on :func:`_crashed`, the owed attempt held back behind the
    blockers; the wall clock jumps to 11:30 and the timer notices before the attempt
    runs.  The job's records at the jump, and once everything ran."""
    clock = JumpingClock(T0 + 10)
    store = _crashed(policy)
    scheduler = make_scheduler(clock=clock, store=store, workers=1, handoff=1)
    pool, tasks = scheduler._pool, scheduler._core.tasks

    def held_back() -> bool:
        # b0 runs, b1 waits for the worker: the hand-off queue is full, and the timer,
        # which holds the lock from its hand-out until it parks, is parked (the lock is
        # free), so the jump below is what wakes it next.
        with scheduler._wake:
            return tasks["b0"].status is TaskStatus.RUNNING and pool.queued == 1

    try:
        wait_until(held_back, timeout=5, what="the blockers to hold the worker")
        assert scheduler.task("job").status is TaskStatus.SCHEDULED and not jobs.CALLS
        clock.parked.clear()
        clock.jump(JUMPED - clock.now())  # wakes the timer, which looks at the clock
        assert clock.parked.wait(5)
        at_jump = _history(scheduler)
        # Its row still says the attempt is owed: a crash now leaves it to the next.
        (row,) = [row for row in store.load_all() if row.task.id == "job"]
        assert row.running and row.next_run_at == T0 and row.attempt == 0
    finally:
        jobs.GATE.set()  # the blockers end, so the scheduler can stop
    settle(scheduler)
    return at_jump, _history(scheduler)


def _restarted(policy: MisfirePolicy) -> Outcomes:
    """The reference: the same store, restarted at 11:30 (the blockers not holding)."""
    jobs.GATE.set()
    clock = FakeClock(JUMPED)
    with Stepper(Scheduler(clock=clock, store=_crashed(policy))) as steps:
        steps.settle()
        return _history(steps.scheduler)


@pytest.mark.parametrize("on_misfire", list(EXPECTED), ids=lambda m: m.value)
def test_a_forward_jump_before_the_owed_attempt_ran_decides_only_the_slots_after_it(
    make_scheduler: SchedulerFactory, on_misfire: Misfire
) -> None:
    # Before: the jump read 09:00 as a slot of its own, SKIP recorded it missed and the
    # owed attempt never ran; RUN_ONCE coalesced it into 11:00 (one run fewer).
    policy = MisfirePolicy(on_misfire)
    at_jump, jumped = _jumped(make_scheduler, policy)
    calls = _job_calls()
    jobs.CALLS.clear()
    restarted = _restarted(policy)
    assert jumped == restarted == EXPECTED[on_misfire]
    assert calls == _job_calls()
    assert calls[0] == (0.0, 1)  # the owed attempt first, as attempt 1 of its slot
    decided = [record for record in EXPECTED[on_misfire] if record[2] != "ok"]
    assert at_jump == decided  # decided at the jump, the owed attempt not yet run
