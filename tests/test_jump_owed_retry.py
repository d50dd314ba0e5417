"""A forward wall-clock jump in one process decides a retry's slots as a restart does.

The slots a forward jump passed were passed while the process was not there: downtime
for the misfire policy.  A restart (:func:`lldsched.core.recovery.recover`) and a claim
on a shared store (``Coordinator._misfire``) decide them for a task awaiting a retry
too: the retry is owed from before, runs first, and the policy decides the slots after
its slot (:func:`lldsched.core.misfires.apply.first_decided`).  One process decided only the
SCHEDULED tasks at a jump: a retry due ran, and the slots after it were recorded
``skipped`` (the overrun rule) where a restart records them ``missed`` or ``coalesced``
(or runs them, ``RUN_ALL``); a retry with a longer backoff met no policy at all; and a
retry within a ``RUN_ALL`` catch-up lost the slots the jump passed without a record.
Each case here is checked against a restart of the same state at the jump's instant
(docs/decisions/persistence.md, "A forward jump decides a retry's slots as a restart does")."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    Misfire,
    MisfirePolicy,
    RetryPolicy,
    Scheduler,
    TaskStatus,
)
from lldsched.testing import Stepper
from tests import jobs
from tests.conftest import T0, SchedulerFactory, settle
from tests.test_recovery import HOUR, JumpingClock, looked

SKIP = MisfirePolicy(Misfire.SKIP)
RUN_ONCE = MisfirePolicy(Misfire.RUN_ONCE)
RUN_ALL = MisfirePolicy(Misfire.RUN_ALL)
POLICIES = [
    pytest.param(policy, id=policy.on_misfire.value) for policy in (SKIP, RUN_ONCE, RUN_ALL)
]

Outcomes = list[tuple[float, int, str]]
Result = tuple[Outcomes, Outcomes, float | None]  # at the jump, at the end, next due
Setup = Callable[[Scheduler, FakeClock], None]


@pytest.fixture(autouse=True)
def _calls() -> Iterator[None]:
    jobs.CALLS.clear()
    yield
    jobs.CALLS.clear()


def _history(scheduler: Scheduler) -> Outcomes:
    """The task's records: (slot in hours from 09:00, attempt, outcome)."""
    return [
        ((r.slot - T0) / HOUR, r.attempt, r.outcome.value) for r in scheduler.task("job").history
    ]


def _calls_made() -> list[tuple[float, int]]:
    return [((due - T0) / HOUR, attempt) for _, due, attempt in jobs.CALLS]


def _hourly(policy: MisfirePolicy, *, fails: float, backoff: float) -> Setup:
    """Registers ``job``: hourly from 09:00, the first attempt of the run due ``fails``
    hours after 09:00 fails and is retried after ``backoff`` seconds; and lets 09:00 run."""

    def setup(scheduler: Scheduler, clock: FakeClock) -> None:
        scheduler.schedule(
            "job", jobs.fails_first_at, FixedRate(HOUR), id="job", misfire=policy,
            args=("job", T0 + fails * HOUR),
            retry=RetryPolicy(3, initial_backoff=backoff, max_backoff=backoff),
        )  # fmt: skip
        settle(scheduler)

    return setup


def _step_to(clock: JumpingClock, scheduler: Scheduler, until: float) -> None:
    """Move both sides of ``clock`` to each due instant up to ``until`` in turn, letting
    what falls due run (the Stepper's walk, on a clock whose monotonic side moves too)."""
    while True:
        dues = [t.next_run_at for t in scheduler.pending() if t.next_run_at is not None]
        if not dues or min(dues) > until:
            break
        clock.advance(max(0.0, min(dues) - clock.now()))
        settle(scheduler)
    clock.advance(until - clock.now())
    settle(scheduler)


def _jumped(make_scheduler: SchedulerFactory, setup: Setup, *, jump: float, until: float) -> Result:
    """One process: ``setup``, then the wall clock jumps forward by ``jump`` seconds;
    the records right after the jump, once stepped up to ``until``, and the next due
    instant then."""
    clock = JumpingClock(T0)
    scheduler = make_scheduler(clock=clock)
    setup(scheduler, clock)
    looked(clock, scheduler)  # the timer parked, the retry ahead
    assert scheduler.task("job").status is TaskStatus.RETRYING
    clock.jump(jump)
    looked(clock, scheduler)  # the timer saw the jump
    at_jump = _history(scheduler)
    _step_to(clock, scheduler, until)
    return at_jump, _history(scheduler), scheduler.task("job").next_run_at


def _restarted(
    setup: Setup, *, jump: float, until: float, before: tuple[float, ...] = ()
) -> Result:
    """The same on a store: stopped where the jump came, started again ``jump`` seconds
    later (:func:`_jumped`'s reference); ``before``: the jumps ``setup`` made on a
    :class:`JumpingClock`, each a stop and a start here too."""
    store = InMemoryTaskStore()
    clock = FakeClock(T0)
    with Stepper(Scheduler(clock=clock, store=store)) as steps:
        setup(steps.scheduler, clock)
        steps.settle()
    for earlier in before:
        clock = FakeClock(clock.now() + earlier)
        with Stepper(Scheduler(clock=clock, store=store)) as steps:
            steps.settle()
    with Stepper(Scheduler(clock=FakeClock(clock.now() + jump), store=store)) as steps:
        steps.settle()
        at_start = _history(steps.scheduler)
        steps.advance_to(until)
        return at_start, _history(steps.scheduler), steps.scheduler.task("job").next_run_at


def _both(
    make_scheduler: SchedulerFactory,
    setup: Setup,
    *,
    jump: float,
    until: float,
    before: tuple[float, ...] = (),
) -> tuple[Result, Result]:
    """:func:`_jumped` and its reference, :func:`_restarted`, which ran the same
    actions for the same slots and attempts, in the same order."""
    jobs.CALLS.clear()
    jumped = _jumped(make_scheduler, setup, jump=jump, until=until)
    calls = _calls_made()
    jobs.CALLS.clear()
    restarted = _restarted(setup, jump=jump, until=until, before=before)
    assert _calls_made() == calls
    return jumped, restarted


@pytest.mark.parametrize("policy", POLICIES)
def test_a_retry_due_when_a_forward_jump_passed_its_next_slots_meets_the_policy_first(
    make_scheduler: SchedulerFactory, policy: MisfirePolicy
) -> None:
    # 09:00's first attempt fails, its retry due 2 s later; the wall clock jumps to
    # 11:30.  10:00 and 11:00 are the policy's, decided before the retry runs, as a
    # restart at 11:30 and a shared claim decide them (tests/test_store_running_row.py).
    # Before, the retry ran and both were recorded skipped after it, whatever the policy.
    setup = _hourly(policy, fails=0, backoff=2)
    jumped, restarted = _both(make_scheduler, setup, jump=2.5 * HOUR, until=T0 + 2.5 * HOUR)
    assert jumped == restarted
    expected = {
        Misfire.SKIP: [(0.0, 1, "failed"), (1.0, 0, "missed"), (2.0, 0, "missed"), (0.0, 2, "ok")],
        Misfire.RUN_ONCE: [(0.0, 1, "failed"), (1.0, 0, "coalesced"), (0.0, 2, "ok"),
                           (2.0, 1, "ok")],
        Misfire.RUN_ALL: [(0.0, 1, "failed"), (0.0, 2, "ok"), (1.0, 1, "ok"), (2.0, 1, "ok")],
    }  # fmt: skip
    assert jumped[1] == expected[policy.on_misfire]
    assert jumped[2] == T0 + 3 * HOUR


@pytest.mark.parametrize("policy", POLICIES)
def test_a_retry_due_after_the_jump_has_the_slots_the_jump_passed_decided_at_the_jump(
    make_scheduler: SchedulerFactory, policy: MisfirePolicy
) -> None:
    # The same failure, retried after three hours (12:00); the jump to 11:30 passed
    # 10:00 and 11:00 before the retry is due.  They are decided at the jump, as a
    # restart at 11:30 decides them at its start; the retry then runs at 12:00 and
    # the grid goes on.  Before, the jump decided nothing, and the slots were recorded
    # skipped after the retry's run.
    setup = _hourly(policy, fails=0, backoff=3 * HOUR)
    jumped, restarted = _both(make_scheduler, setup, jump=2.5 * HOUR, until=T0 + 4.5 * HOUR)
    assert jumped == restarted
    decided_at_jump = {
        Misfire.SKIP: [(0.0, 1, "failed"), (1.0, 0, "missed"), (2.0, 0, "missed")],
        Misfire.RUN_ONCE: [(0.0, 1, "failed"), (1.0, 0, "coalesced")],
        Misfire.RUN_ALL: [(0.0, 1, "failed")],
    }  # fmt: skip
    assert jumped[0] == decided_at_jump[policy.on_misfire]
    assert not [outcome for _, _, outcome in jumped[1] if outcome == "skipped"]
    assert jumped[2] == T0 + 5 * HOUR


@pytest.mark.parametrize(
    "policy",
    [
        pytest.param(RUN_ALL, id="run_all"),
        pytest.param(MisfirePolicy(Misfire.RUN_ALL, max_catch_up=2), id="run_all-keeping-2"),
    ],
)
def test_a_retry_within_a_catch_up_meets_the_policy_for_the_slots_a_later_jump_passed(
    make_scheduler: SchedulerFactory, policy: MisfirePolicy
) -> None:
    # 09:00 ran; a first jump to 12:30 decides 10:00 to 12:00 (a plan of three runs, or
    # of 11:00 and 12:00 keeping two), and 11:00's first attempt fails, its retry due 2 s
    # on; a second jump, to 16:30, passes 13:00 to 16:00.  As a restart at 16:30 would:
    # the retry, then the policy decides 12:00 to 16:00 (runs them all, or the last two
    # and records the others missed).  Before, the plan ran its last slot (12:00) and
    # went on at 17:00: 13:00 to 16:00 left no record at all.
    hourly = _hourly(policy, fails=2, backoff=2)

    def setup(scheduler: Scheduler, clock: FakeClock) -> None:
        hourly(scheduler, clock)
        if isinstance(clock, JumpingClock):  # the restart's reference: a restart too
            looked(clock, scheduler)
            clock.jump(3.5 * HOUR)
            looked(clock, scheduler)

    jumped, restarted = _both(
        make_scheduler, setup, jump=4 * HOUR, until=T0 + 8.5 * HOUR, before=(3.5 * HOUR,)
    )
    ran = {slot for slot, _, outcome in jumped[1] if outcome == "ok"}
    decided = {slot for slot, _, outcome in jumped[1] if outcome in ("missed", "coalesced")}
    assert ran | decided == {float(hour) for hour in range(9)}  # every slot has its record
    assert jumped[1] == restarted[1] and jumped[2] == restarted[2] == T0 + 9 * HOUR
