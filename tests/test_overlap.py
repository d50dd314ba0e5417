"""Overlap policies (lldsched.policies.Overlap): BUFFER_ONE, CANCEL_OTHER and ALLOW with
max_instances, decided by the core for both runtimes; their bad input; their records."""

from __future__ import annotations

import asyncio
import itertools
import sys
import threading
from collections.abc import Iterable
from types import FrameType
from typing import Any

import pytest

from lldsched import (
    CronSchedule,
    EventLog,
    FakeClock,
    FixedDelay,
    FixedRate,
    InMemoryTaskStore,
    Misfire,
    MisfirePolicy,
    OneTime,
    Overlap,
    OverrunPolicy,
    Priority,
    RetryPolicy,
    ScheduledTask,
    Simulation,
    StoreError,
    TaskStatus,
    ValidationError,
)
from lldsched.core.context import RunContext
from lldsched.core.recovery import after_clock_jump
from lldsched.model import ExecutionRecord, Outcome, TaskEvent
from lldsched.schedules.decorators import Jittered, Window
from lldsched.testing import Stepper
from tests.conftest import T0, SchedulerFactory, settle
from tests.harness import FailingStore, Harness
from tests.test_recovery import SnapshotsKept
from tests.waits import wait_until

# -- the simulation ----------------------------------------------------------------------


def _simulate(overlap: Overlap | None, *, max_instances: int | None = None) -> Simulation:
    """Every 60 s, each run 150 s, on three workers, for 600 s."""
    sim = Simulation(workers=3, start=T0)
    sim.schedule("long", FixedRate(60), duration=150, overlap=overlap, max_instances=max_instances)
    return sim.run_for(600)


def _table(records: list[ExecutionRecord]) -> list[tuple[float, str]]:
    return [(r.slot - T0, r.outcome.value) for r in records]


def test_buffer_one_folds_the_slots_of_a_long_run_into_one_run_for_the_latest_of_them() -> None:
    records = _simulate(Overlap.BUFFER_ONE).records()
    assert _table(records)[:5] == [
        (0, "ok"),
        (60, "coalesced"),
        (120, "ok"),  # the latest slot that came due while the first run ran
        (180, "coalesced"),
        (240, "ok"),
    ]
    buffered = records[2]
    assert buffered.started == records[0].finished  # at once, as the first run finished
    # The slot it was coalesced into, in UTC as every note and log line gives an instant
    # (it read in epoch seconds: "... for slot 1767603720.0").
    assert records[1].error == (
        "Overlap.BUFFER_ONE: coalesced into one run for slot 2026-01-05T09:02:00.000+00:00"
    )
    assert max(len([r for r in records if r.outcome.ran and r.started <= t < r.finished])
               for t in range(int(T0), int(T0) + 600, 10)) == 1  # fmt: skip


def test_cancel_other_cancels_the_running_run_when_the_next_slot_comes_due() -> None:
    records = _simulate(Overlap.CANCEL_OTHER).records()
    assert _table(records)[:3] == [(0, "cancelled"), (60, "cancelled"), (120, "cancelled")]
    first = records[0]
    assert first.finished == T0 + 60  # cut when the slot at 60 s came due
    assert first.error is not None and first.error.startswith("OverlapCancelled:")
    assert "CANCEL_OTHER" in first.error
    assert first.attempt == 1  # never retried: a cancelled run is no failure


def test_a_run_cancel_other_cut_counts_as_cancelled_not_as_a_success() -> None:
    # The run itself ended well (its action returned), but its record says it was cut:
    # the task's counters and the metrics' outcomes count it as that record does.
    sim = _simulate(Overlap.CANCEL_OTHER)
    (task,) = sim.tasks()
    assert (task.run_count, task.failure_count) == (10, 10)
    assert task.last_error is not None and task.last_error.startswith("OverlapCancelled:")
    outcomes = sim.metrics().outcomes
    assert (outcomes[Outcome.CANCELLED], outcomes[Outcome.OK]) == (10, 0)


def test_allow_runs_up_to_max_instances_at_once_and_records_the_slot_past_the_limit() -> None:
    sim = _simulate(Overlap.ALLOW, max_instances=2)
    records = sim.records()
    ran = [r for r in records if r.outcome.ran]
    assert [r.slot - T0 for r in ran][:4] == [0, 60, 180, 240]
    assert all(r.ok and r.started == r.due for r in ran)  # each on time, beside another
    skipped = [r for r in records if r.outcome is Outcome.SKIPPED]
    assert [r.slot - T0 for r in skipped][:2] == [120, 300]
    assert skipped[0].error == "Overlap.ALLOW: 2 runs in flight (max_instances=2)"
    assert len(sim.task("task-1").runs) == 2


def test_allow_with_one_instance_skips_each_slot_as_it_comes_due_naming_the_run_in_flight() -> None:
    # APScheduler's max_instances=1: a slot due while the run goes on is dropped at once
    records = _simulate(Overlap.ALLOW, max_instances=1).records()
    assert _table(records)[:4] == [(60, "skipped"), (120, "skipped"), (0, "ok"), (240, "skipped")]
    assert records[0].error == "Overlap.ALLOW: 1 run in flight (max_instances=1)"
    assert records[0].finished == T0 + 60  # decided when the slot came due, not at the end


def test_a_task_without_an_overlap_policy_keeps_its_schedule_rule_and_never_overlaps() -> None:
    records = _simulate(None).records()
    assert _table(records)[:4] == [(0, "ok"), (60, "skipped"), (120, "skipped"), (180, "ok")]


def test_cron_accepts_an_overlap_policy_in_the_simulation() -> None:
    sim = Simulation(workers=2, start=T0)
    sim.schedule(
        "cron", CronSchedule("* * * * *"), duration=90, overlap=Overlap.ALLOW, max_instances=2
    )
    ran = [r for r in sim.run_for(300).records() if r.outcome.ran]
    assert [r.slot - T0 for r in ran] == [60, 120, 180]  # each beside the one before


def test_a_failed_run_beside_another_is_given_up_and_the_last_run_out_retries() -> None:
    durations = iter([90.0, 10.0])  # slot 0 runs long; slot 60 starts and ends beside it
    sim = Simulation(workers=2, start=T0)
    task = sim.schedule(
        "flaky",
        FixedRate(60),
        duration=lambda rng, attempt: next(durations, 10.0),
        fails=lambda rng, attempt: attempt == 1,
        overlap=Overlap.ALLOW,
        max_instances=2,
    )
    sim.run(T0 + 90)
    beside, last = sim.records()
    assert beside.slot == T0 + 60 and beside.outcome is Outcome.GIVEN_UP  # no retry beside
    assert last.slot == T0 and last.outcome is Outcome.FAILED  # the last out: retried
    assert task.status is TaskStatus.RETRYING and task.attempt == 1
    sim.run(T0 + 200)
    later = [(r.slot - T0, r.attempt, r.outcome.value) for r in sim.records()[2:]]
    assert later[:2] == [(0, 2, "ok"), (120, 1, "failed")]  # the retry, then the next slot


def test_pause_holds_the_pending_slot_and_resume_brings_it_back() -> None:
    sim = Simulation(workers=3, start=T0)
    task = sim.schedule("long", FixedRate(60), duration=150, overlap=Overlap.ALLOW, max_instances=3)
    sim.run(T0 + 30)
    assert sim.pause(task.id) is True
    assert sim.pending() == []
    sim.run(T0 + 100)
    assert len(task.runs) == 1 and task.status is TaskStatus.PAUSED  # nothing started
    assert sim.resume(task.id) is True
    assert task.status is TaskStatus.RUNNING and task.next_run_at == T0 + 100
    sim.run(T0 + 100)
    assert len(task.runs) == 2


def test_an_overlapping_task_paused_or_cancelled_is_not_paused_again() -> None:
    sim = Simulation(workers=3, start=T0)
    task = sim.schedule("long", FixedRate(60), duration=150, overlap=Overlap.ALLOW, max_instances=3)
    sim.run(T0 + 30)
    assert sim.pause(task.id) is True
    assert sim.pause(task.id) is False  # paused already: nothing changes
    assert sim.cancel(task.id) is True
    assert sim.pause(task.id) is False and task.status is TaskStatus.CANCELLED
    sim.run(T0 + 600)
    assert task.status is TaskStatus.CANCELLED and [r.slot - T0 for r in sim.records()] == [0]


def test_cancel_raises_the_flag_of_every_run_in_flight_and_nothing_follows() -> None:
    sim = Simulation(workers=3, start=T0)
    task = sim.schedule("long", FixedRate(60), duration=150, overlap=Overlap.ALLOW, max_instances=3)
    sim.run(T0 + 90)
    assert len(task.runs) == 2
    assert sim.cancel(task.id) is True
    assert sim.pending() == []
    sim.run(T0 + 600)
    assert task.status is TaskStatus.CANCELLED and task.runs == ()
    assert [r.slot - T0 for r in sim.records() if r.outcome.ran] == [0, 60]


# -- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schedule", "options", "message"),
    [
        (FixedDelay(10), {"overlap": Overlap.BUFFER_ONE}, "a fixed delay never overlaps"),
        (OneTime(delay=5), {"overlap": Overlap.CANCEL_OTHER}, "a one-off runs once"),
        (
            FixedRate(10, on_overrun=OverrunPolicy.CATCH_UP),
            {"overlap": Overlap.BUFFER_ONE},
            "overlap=Overlap.BUFFER_ONE and on_overrun=OverrunPolicy.CATCH_UP",
        ),
        (FixedRate(10), {"overlap": "allow"}, "overlap must be Overlap"),
        (FixedRate(10), {"overlap": Overlap.ALLOW}, "needs max_instances"),
        (FixedRate(10), {"overlap": Overlap.ALLOW, "max_instances": 0}, "max_instances"),
        (FixedRate(10), {"overlap": Overlap.ALLOW, "max_instances": True}, "max_instances"),
        (
            FixedRate(10),
            {"overlap": Overlap.BUFFER_ONE, "max_instances": 2},
            "max_instances=2 is for overlap=Overlap.ALLOW, got overlap=Overlap.BUFFER_ONE",
        ),
    ],
)
def test_bad_overlap_options_are_rejected_at_registration_naming_the_value(
    schedule: Any, options: dict[str, Any], message: str
) -> None:
    sim = Simulation(start=T0)
    kept = sim.schedule("kept", FixedRate(60))
    with pytest.raises(ValidationError, match=message.replace("(", r"\(")):
        sim.schedule("bad", schedule, **options)
    assert [task.id for task in sim.tasks()] == [kept.id]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            2,
            "task 'bad': max_instances=2 was given without overlap=, and a task's runs "
            "never overlap unless it asks: pass overlap=Overlap.ALLOW, max_instances=2",
        ),
        (  # APScheduler's default, ported as it was written
            1,
            "task 'bad': max_instances=1 was given without overlap=, and a task's runs "
            "never overlap unless it asks: drop max_instances=1, one run at a time is the "
            "default (overlap=Overlap.ALLOW, max_instances=1 records a slot due during a "
            "run skipped as it comes due, as APScheduler does)",
        ),
        (
            "3",
            "task 'bad': max_instances='3' was given without overlap=, and a task's runs "
            "never overlap unless it asks: pass overlap=Overlap.ALLOW, max_instances=N "
            "(an int N >= 1)",
        ),
    ],
)
def test_max_instances_without_overlap_says_what_was_given_and_what_to_pass(
    driven: Any, given: object, message: str
) -> None:
    """The refusal said ``got overlap=None`` of a call that passed no ``overlap`` at all
    (APScheduler's ``max_instances=3``, ported alone)."""
    kept = driven.add("kept", FixedRate(60))
    with pytest.raises(ValidationError) as caught:
        driven.add("bad", FixedRate(60), max_instances=given)
    assert str(caught.value) == message
    assert driven.runtime.tasks() == [kept]


def test_an_overlap_policy_is_accepted_on_a_decorated_grid_schedule() -> None:
    sim = Simulation(start=T0)
    task = sim.schedule("jittered", Jittered(FixedRate(60), 5, seed=1), overlap=Overlap.BUFFER_ONE)
    assert task.overlap is Overlap.BUFFER_ONE and task.max_instances is None


def test_reschedule_to_a_schedule_the_policy_does_not_suit_is_rejected() -> None:
    sim = Simulation(start=T0)
    task = sim.schedule("t", FixedRate(60), overlap=Overlap.ALLOW, max_instances=2)
    with pytest.raises(ValidationError, match="a fixed delay never overlaps"):
        sim.reschedule(task.id, FixedDelay(5))
    assert task.schedule == FixedRate(60)


def test_modify_keeps_the_overlap_policy() -> None:
    sim = Simulation(start=T0)
    task = sim.schedule("t", FixedRate(60), overlap=Overlap.ALLOW, max_instances=2)
    sim.modify(task.id, timeout=5)
    assert task.overlap is Overlap.ALLOW and task.max_instances == 2


# -- the threaded runtime ------------------------------------------------------------------


class _Starts:
    """Counts runs that started; the test waits (bounded) for each."""

    def __init__(self) -> None:
        self._started = threading.Semaphore(0)
        self.release = threading.Event()

    def started(self) -> None:
        self._started.release()

    def wait_start(self, timeout: float = 5.0) -> bool:
        return self._started.acquire(timeout=timeout)


def _decided(log: EventLog, outcome: Outcome) -> TaskEvent | None:
    return log.wait_for(lambda e: e.record is not None and e.record.outcome is outcome)


def test_allow_on_threads_runs_two_at_once_and_skips_the_third_slot(
    make_scheduler: SchedulerFactory, clock: FakeClock, log: EventLog
) -> None:
    starts = _Starts()

    def job() -> None:
        starts.started()
        starts.release.wait(5)

    scheduler = make_scheduler(clock=clock, listeners=[log], workers=3)
    task = scheduler.schedule("job", job, FixedRate(10), overlap=Overlap.ALLOW, max_instances=2)
    assert starts.wait_start()
    clock.advance(10)
    assert starts.wait_start()  # the second run, beside the first
    clock.advance(10)
    skipped = _decided(log, Outcome.SKIPPED)
    assert skipped is not None and skipped.record is not None
    assert skipped.record.slot == T0 + 20 and "max_instances=2" in (skipped.record.error or "")
    starts.release.set()
    settle(scheduler)  # every run begun has ended and is recorded: the slots run are all here
    assert sorted(r.slot - T0 for r in log.runs("job")) == [0, 10]  # no third run
    assert task.status is TaskStatus.SCHEDULED and task.next_run_at == T0 + 30


def test_cancel_other_on_threads_raises_the_running_runs_flag_and_starts_the_new_slot(
    make_scheduler: SchedulerFactory, clock: FakeClock, log: EventLog
) -> None:
    contexts: list[RunContext] = []
    starts = _Starts()

    def cooperative(ctx: RunContext) -> None:
        contexts.append(ctx)
        starts.started()
        ctx.wait(5)

    scheduler = make_scheduler(clock=clock, listeners=[log], workers=2)
    scheduler.schedule("job", cooperative, FixedRate(10), overlap=Overlap.CANCEL_OTHER)
    assert starts.wait_start()
    clock.advance(10)
    assert starts.wait_start()
    cancelled = _decided(log, Outcome.CANCELLED)
    assert cancelled is not None and cancelled.record is not None
    assert cancelled.record.slot == T0 and "CANCEL_OTHER" in (cancelled.record.error or "")
    assert contexts[0].cancelled and contexts[0].reason == "overlap"
    assert not contexts[1].cancelled
    scheduler.cancel("task-1")
    settle(scheduler)


# A CANCEL_OTHER task whose own run holds the last worker: the slot that comes due finds
# no worker to begin on.  Before, the policy was applied only as the slot's run began, so
# the run in flight was never cancelled: it ran to its end (a run waiting on its flag, for
# good) and the slot ran late after it, on both runtimes.  Now the slot cancels it as it
# comes due; the run stops at its flag, and the slot's run takes its worker, on time.
# (docs/decisions/overlap.md, "Overlap policies": "CANCEL_OTHER cancels at the slot, whether or
# not a worker is free")

CUT_AT_THE_SLOT = [(0, 0, 60, "cancelled"), (60, 60, 60, "ok")]  # (slot, started, finished)


def _runs(records: Iterable[ExecutionRecord]) -> list[tuple[float, float, float, str]]:
    return [(r.slot - T0, r.started - T0, r.finished - T0, r.outcome.value) for r in records]


# a modify(priority=) during the run queues the slot again, as another entry: still cut
REPRIORITIZED = pytest.mark.parametrize("priority", [None, Priority.HIGH])


@REPRIORITIZED
def test_cancel_other_cuts_the_run_holding_the_last_worker_as_its_slot_comes_due_in_sim(
    priority: Priority | None,
) -> None:
    sim = Simulation(workers=1, start=T0)
    drawn = iter([150.0])  # the first run would take 150 s, the next ones none
    task = sim.schedule(
        "stuck", FixedRate(60), duration=lambda rng, attempt: next(drawn, 0.0),
        overlap=Overlap.CANCEL_OTHER,
    )  # fmt: skip
    sim.run(T0 + 1)
    if priority is not None:
        sim.modify(task.id, priority=priority)
    sim.run(T0 + 60)
    assert _runs(task.history) == CUT_AT_THE_SLOT
    assert task.history[0].error is not None and "CANCEL_OTHER" in task.history[0].error
    assert (task.status, task.next_run_at) == (TaskStatus.SCHEDULED, T0 + 120)


async def _co_noop() -> None:
    return None


@pytest.mark.parametrize("stuck_on", ["the last worker", "the coroutine lane"])
def test_cancel_other_cuts_the_run_holding_its_place_in_sim_with_a_coroutine_task_registered(
    stuck_on: str,
) -> None:
    # Once a coroutine task is registered the simulation picks each start by lane: the
    # CANCEL_OTHER slot that finds no place (no worker free, or the coroutine lane full)
    # still comes due at its instant there and cuts the run holding the place, after the
    # starts of its instant; a run due before it on the other lane starts at its own.
    sim = Simulation(workers=1, start=T0, max_coroutines=1)
    on_loop = stuck_on == "the coroutine lane"
    other_lane = None if on_loop else _co_noop
    early = sim.schedule("early", OneTime(delay=30), action=other_lane, duration=0)
    beside = sim.schedule("beside", OneTime(delay=60), action=other_lane, duration=0)
    drawn = iter([150.0])  # the first run would take 150 s, the next ones none
    task = sim.schedule(
        "stuck", FixedRate(60), duration=lambda rng, attempt: next(drawn, 0.0),
        overlap=Overlap.CANCEL_OTHER, action=_co_noop if on_loop else None,
    )  # fmt: skip
    sim.run(T0 + 60)
    assert _runs(task.history) == CUT_AT_THE_SLOT
    assert task.history[0].error is not None and "CANCEL_OTHER" in task.history[0].error
    assert (task.status, task.next_run_at) == (TaskStatus.SCHEDULED, T0 + 120)
    assert _runs(early.history) == [(30, 30, 30, "ok")]
    assert [r.task_id for r in sim.records()] == [early.id, beside.id, task.id, task.id]


# With a coroutine task registered the simulation picks each start by lane, a loop path of
# its own for the overdue CANCEL_OTHER slots: each test below runs both paths.
BY_LANE = pytest.mark.parametrize("by_lane", [False, True], ids=["one lane", "by lane"])


def _stuck(sim: Simulation, name: str, every: float, long_runs: int = 1) -> ScheduledTask:
    """A CANCEL_OTHER task every ``every`` s whose first ``long_runs`` runs take 150 s."""
    drawn = iter([150.0] * long_runs)
    return sim.schedule(
        name, FixedRate(every), duration=lambda rng, attempt: next(drawn, 0.0),
        overlap=Overlap.CANCEL_OTHER,
    )  # fmt: skip


def _lanes(sim: Simulation, by_lane: bool) -> Simulation:
    if by_lane:
        sim.schedule("co", OneTime(delay=10_000), action=_co_noop, duration=0)
    return sim


@BY_LANE
def test_a_shutdown_at_the_instant_a_cancel_other_slot_comes_due_drains_that_slot(
    by_lane: bool,
) -> None:
    # Made by an intervention at 60 s (before that instant's starts), the drain runs what
    # is due by then: the slot at 60 s, which cuts the run holding its worker; the other
    # task's slot at 70 s is due after the call, and its run ends at its own end.
    sim = _lanes(Simulation(workers=2, start=T0), by_lane)
    task, later = _stuck(sim, "sixty", 60), _stuck(sim, "seventy", 70)
    sim.at(T0 + 60, sim.shutdown)
    sim.run(T0 + 1000)
    assert _runs(task.history) == CUT_AT_THE_SLOT
    assert _runs(later.history) == [(0, 0, 150, "ok")] and sim.now == T0 + 150


@BY_LANE
def test_a_drain_before_a_cancel_other_slot_comes_due_leaves_its_run_uncut(by_lane: bool) -> None:
    # The slot at 60 s is due after the shutdown's instant: not drained, it cuts nothing,
    # and the run holding the worker finishes at its own end.
    sim = _lanes(Simulation(workers=1, start=T0), by_lane)
    task = _stuck(sim, "stuck", 60)
    sim.run(T0 + 30)
    assert sim.shutdown(timeout=None) is True
    assert _runs(task.history) == [(0, 0, 150, "ok")]
    assert (task.status, task.next_run_at) == (TaskStatus.SCHEDULED, T0 + 60)


@BY_LANE
def test_two_cancel_other_slots_due_apart_each_cut_their_run_at_their_own_instant(
    by_lane: bool,
) -> None:
    # Two CANCEL_OTHER tasks hold both workers; their next slots, at 60 s and 70 s, find
    # no worker free and each cuts its own task's run as it comes due.
    sim = _lanes(Simulation(workers=2, start=T0), by_lane)
    tasks = [_stuck(sim, "sixty", 60, long_runs=2), _stuck(sim, "seventy", 70)]
    sim.run(T0 + 70)
    assert [_runs(task.history) for task in tasks] == [
        [(0, 0, 60, "cancelled")],  # its slot at 60 s runs on, to 210 s
        [(0, 0, 70, "cancelled"), (70, 70, 70, "ok")],
    ]


@BY_LANE
def test_stepping_over_a_cancel_other_cut_says_the_cut_runs_finish(by_lane: bool) -> None:
    # The slot's coming due is not an event of its own: the step at 60 s is the cut
    # run's finish (a step that said nothing read as "nothing left to happen").
    sim = _lanes(Simulation(workers=1, start=T0), by_lane)
    task = _stuck(sim, "stuck", 60)
    steps = [sim.step() for _ in range(3)]
    assert [(s.at - T0, s.kind, s.task_id) for s in steps if s is not None] == [
        (0, "start", task.id),
        (60, "finish", task.id),
        (60, "finish", task.id),  # the slot at 60 s, a run that takes no time
    ]
    assert [s.record.outcome.value for s in steps[1:] if s and s.record] == ["cancelled", "ok"]


@REPRIORITIZED
@pytest.mark.parametrize("coroutine_beside", [False, True])
def test_cancel_other_cuts_the_run_holding_the_last_worker_as_its_slot_comes_due_on_threads(
    priority: Priority | None,
    coroutine_beside: bool,
    make_scheduler: SchedulerFactory,
    clock: FakeClock,
) -> None:
    # coroutine_beside: a coroutine task registered too, so the timer counts the worker
    # places and the event loop's apart; the slot of a thread task waits for a worker
    # though a coroutine place is free.
    starts = _Starts()
    flags: list[bool] = []

    def cooperative(ctx: RunContext) -> None:
        starts.started()
        if ctx.attempt == 1 and not flags:  # the first run waits on its flag (bounded)
            flags.append(ctx.wait(5))

    scheduler = make_scheduler(clock=clock, workers=1)
    if coroutine_beside:
        scheduler.schedule("later", _co_noop, OneTime(delay=3600))
    task = scheduler.schedule("stuck", cooperative, FixedRate(60), overlap=Overlap.CANCEL_OTHER)
    assert starts.wait_start()
    if priority is not None:
        scheduler.modify(task.id, priority=priority)
    clock.advance(60)
    assert starts.wait_start()  # the slot at 60 s began: the first run left its worker
    settle(scheduler)
    assert flags == [True]  # its flag went up: it did not wait its 5 s out
    assert _runs(task.history) == CUT_AT_THE_SLOT
    assert (task.status, task.next_run_at) == (TaskStatus.SCHEDULED, T0 + 120)


def test_cancel_other_runs_an_action_that_takes_no_context(
    make_scheduler: SchedulerFactory, clock: FakeClock, log: EventLog
) -> None:
    calls: list[int] = []
    scheduler = make_scheduler(clock=clock, listeners=[log])
    scheduler.schedule(
        "plain", lambda: calls.append(1), FixedRate(10), overlap=Overlap.CANCEL_OTHER
    )
    settle(scheduler)
    assert calls == [1] and log.runs("plain")[0].ok


def test_cancel_other_gives_every_run_a_cancel_flag_and_allow_gives_none_unasked() -> None:
    """CANCEL_OTHER cancels through the run's flag, so each of its runs has one (an action
    that takes no ``ctx`` too); ALLOW cancels nothing, and a run of it has a context only
    when its action asks for one."""
    cancelling = Harness(FakeClock(T0))
    cancelling.core.add("plain", _noop, FixedRate(60), overlap=Overlap.CANCEL_OTHER)
    first = cancelling.begin()
    assert first.context is not None and not first.context.cancelled
    second = cancelling.begin()  # the slot at T0 + 60, while the first still runs
    assert first.context.cancelled and first.context.reason == "overlap"
    assert second.context is not None and not second.context.cancelled
    allowing = Harness(FakeClock(T0))
    allowing.core.add("plain", _noop, FixedRate(60), overlap=Overlap.ALLOW, max_instances=2)
    assert [allowing.begin().context, allowing.begin().context] == [None, None]


def test_a_run_beside_others_leaves_the_slot_queued_behind_it_with_no_attempt_yet() -> None:
    """The stored row of a task whose runs overlap is its queued slot's: no attempt
    behind it (a crash then restores a fresh slot, not a retry)."""
    store = InMemoryTaskStore()
    h = Harness(FakeClock(T0), store=store)
    task = h.core.add("twice", _noop, FixedRate(60), overlap=Overlap.ALLOW, max_instances=2)
    for run in (h.begin(), h.begin()):  # the slot at T0, then T0 + 60 beside it
        assert run.attempt == 1
        (row,) = store.load_all()
        assert (row.status, row.attempt, task.attempt) == (TaskStatus.RUNNING, 0, 0)


def test_an_overlapping_task_a_store_restored_runs_beside_itself_as_before() -> None:
    # Overlap.ALLOW with two instances, every 60 s, each run 150 s: restored from the
    # store, the 60 s slot begins beside the run of the 0 s one, as without a restart.
    store = InMemoryTaskStore()
    Simulation(start=T0, store=store).schedule(
        "long", FixedRate(60), id="long", overlap=Overlap.ALLOW, max_instances=2
    )
    sim = Simulation(workers=3, start=T0, store=store)
    sim.model("long", duration=150)
    sim.run_for(300)
    ran = sorted((r.slot - T0, r.started - T0) for r in sim.records() if r.outcome.ran)
    assert ran == [(0, 0), (60, 60)]


def test_runs_overlap_again_once_a_catch_up_is_used_up() -> None:
    # A forward jump past three slots: RUN_ALL catches them up one after another (a plan
    # runs alone), then the task is on its own schedule again, and its next slot comes
    # due beside a run still in flight, as before the jump.  Before: the used-up plan
    # stayed in front of the schedule, and no run queued the slot behind it, for good.
    clock = FakeClock(T0)
    h = Harness(clock)
    task = h.core.add(
        "twice", _noop, FixedRate(60), overlap=Overlap.ALLOW, max_instances=2,
        misfire=MisfirePolicy(Misfire.RUN_ALL),
    )  # fmt: skip
    h.step()
    clock.advance(210)
    after_clock_jump(h.core, 210, clock.now())
    caught_up = [h.step() for _ in range(3)]
    assert [r.slot - T0 for r in caught_up if r is not None] == [60, 120, 180]
    first, beside = h.begin(), h.begin()  # 240 s, then 300 s beside it
    assert (first.slot - T0, beside.slot - T0, task.status) == (240, 300, TaskStatus.RUNNING)


def test_the_runs_of_a_task_cancelled_beside_each_other_are_each_written() -> None:
    store = InMemoryTaskStore()
    h = Harness(FakeClock(T0), store=store)
    task = h.core.add("twice", _noop, FixedRate(60), overlap=Overlap.ALLOW, max_instances=2)
    first, second = h.begin(), h.begin()
    assert h.core.cancel(task.id)
    for run in (first, second):  # the first ends while the second still runs
        h.core.finish(run, run.due, T0 + 70, None)
    assert [r.slot for r in store.records(task.id)] == [T0, T0 + 60]
    assert task.status is TaskStatus.CANCELLED


def test_an_overlapping_task_whose_window_closes_runs_its_last_slot_and_succeeds() -> None:
    h = Harness(FakeClock(T0))
    schedule = Window(FixedRate(60), end=T0 + 60)  # two slots: T0 and T0 + 60
    task = h.core.add("closing", _noop, schedule, overlap=Overlap.ALLOW, max_instances=2)
    first, last = h.begin(), h.begin()  # the last slot begins beside the first: none after
    assert (first.slot, last.slot) == (T0, T0 + 60) and h.queue.entries() == []
    assert task.attempt == 1  # the last slot's first attempt, as any run's (no slot behind)
    for run in (first, last):
        h.core.finish(run, run.due, T0 + 90, None)
    assert task.status is TaskStatus.SUCCEEDED


def _noop() -> None:
    return None


@pytest.mark.parametrize("max_coroutines", [None, 1])
def test_cancel_other_cancels_a_coroutine_run_for_real(
    max_coroutines: int | None, make_scheduler: SchedulerFactory, clock: FakeClock, log: EventLog
) -> None:
    # max_coroutines=1: the run holds the only coroutine place, and the slot that comes
    # due waits for it; the slot cancels the run all the same, as it comes due.
    starts = _Starts()

    async def slow() -> None:
        starts.started()
        await asyncio.sleep(60)  # far past the wait below: only a real cancel ends it

    places = {} if max_coroutines is None else {"max_coroutines": max_coroutines}
    scheduler = make_scheduler(clock=clock, listeners=[log], **places)
    scheduler.schedule("slow", slow, FixedRate(10), overlap=Overlap.CANCEL_OTHER)
    assert starts.wait_start()
    clock.advance(10)
    cancelled = _decided(log, Outcome.CANCELLED)
    assert cancelled is not None and cancelled.record is not None
    assert cancelled.record.slot == T0
    assert cancelled.record.finished == T0 + 10  # cut when the next slot came due
    assert starts.wait_start()
    scheduler.cancel("task-1")
    settle(scheduler)


@pytest.mark.parametrize("kind", ["thread", "coroutine"])
def test_a_run_cancel_other_cut_says_why_as_any_cancellation_and_frames_count_it_cancelled(
    make_scheduler: SchedulerFactory, clock: FakeClock, log: EventLog, kind: str
) -> None:
    pytest.importorskip("pandas")
    from lldsched.views.frames import task_summary, to_frame

    starts = _Starts()

    def cooperative(ctx: RunContext) -> None:
        starts.started()
        ctx.wait(5)

    async def slow() -> None:
        starts.started()
        await asyncio.sleep(60)  # only the cancellation ends it

    action: Any = cooperative if kind == "thread" else slow
    scheduler = make_scheduler(clock=clock, listeners=[log], workers=2)
    scheduler.schedule("job", action, FixedRate(10), overlap=Overlap.CANCEL_OTHER)
    assert starts.wait_start()
    clock.advance(10)
    cancelled = _decided(log, Outcome.CANCELLED)
    assert cancelled is not None and cancelled.record is not None
    assert cancelled.record.error == (  # its slot in UTC, as BUFFER_ONE's note says its own
        "OverlapCancelled: Overlap.CANCEL_OTHER, slot 2026-01-05T09:00:10.000+00:00 came due "
        "while it ran"
    )
    assert starts.wait_start()
    scheduler.cancel("task-1")
    settle(scheduler)
    records = log.runs("job")
    assert [r.error for r in records] == [
        cancelled.record.error,
        "CancelledError: task cancelled" if kind == "coroutine" else None,
    ]
    frame = to_frame(records)
    assert list(frame["outcome"]) == ["cancelled", "failed" if kind == "coroutine" else "ok"]
    summary = task_summary(frame).iloc[0]
    assert (summary["runs"], summary["cancelled"], summary["failed"]) == (
        2,
        1,
        1 if kind == "coroutine" else 0,
    )


def test_buffer_one_on_threads_starts_one_run_for_the_latest_slot_when_the_run_ends(
    make_scheduler: SchedulerFactory, clock: FakeClock, log: EventLog
) -> None:
    starts = _Starts()
    gate = threading.Event()

    def job() -> None:
        starts.started()
        gate.wait(5)

    scheduler = make_scheduler(clock=clock, listeners=[log], workers=2)
    task = scheduler.schedule("job", job, FixedRate(10), overlap=Overlap.BUFFER_ONE)
    assert starts.wait_start()
    clock.advance(35)  # slots 10, 20 and 30 come due while it runs
    # The timer's wake at that instant handed nothing out: one worker busy, none waited for.
    wait_until(
        lambda: scheduler.metrics().timer_woke == T0 + 35, timeout=5, what="the timer's wake"
    )
    metrics = scheduler.metrics()
    assert (metrics.busy, metrics.handoff, len(task.runs)) == (1, 0, 1)  # none beside it
    gate.set()
    assert starts.wait_start()
    settle(scheduler)
    slots = [(r.slot - T0, r.outcome.value) for e in log.events if (r := e.record) is not None]
    assert slots[:4] == [(0, "ok"), (10, "coalesced"), (20, "coalesced"), (30, "ok")]
    assert task.next_run_at == T0 + 40


@pytest.mark.parametrize("overlap", [Overlap.CANCEL_OTHER, Overlap.ALLOW])
def test_a_dependent_task_refuses_a_policy_that_starts_runs_beside_a_running_one(
    overlap: Overlap,
) -> None:
    sim = Simulation()
    upstream = sim.schedule("extract", FixedRate(60), duration=1)
    instances = 2 if overlap is Overlap.ALLOW else None
    with pytest.raises(
        ValidationError, match=f"depends_on cannot be combined with overlap={overlap}"
    ):
        sim.schedule(
            "load",
            FixedRate(60),
            duration=1,
            depends_on=[upstream.id],
            overlap=overlap,
            max_instances=instances,
        )
    assert [task.name for task in sim.tasks()] == ["extract"]  # nothing lost, nothing added
    buffered = sim.schedule(
        "load", FixedRate(60), duration=1, depends_on=[upstream.id], overlap=Overlap.BUFFER_ONE
    )
    assert buffered.status is TaskStatus.SCHEDULED


@pytest.mark.parametrize("overlap", [Overlap.ALLOW, Overlap.CANCEL_OTHER])
def test_a_late_run_is_heard_beginning_before_the_slots_it_skipped(overlap: Overlap) -> None:
    # Before: a run of an overlapping task that began late (it waited for a worker)
    # recorded the slots it was late for as it queued its next slot, inside begin(), and
    # those SKIPPED records were announced, as RUNNING -> RUNNING, before the run's own
    # SCHEDULED -> RUNNING: a listener that follows a task's status heard it leave a
    # status it never heard it enter (found by tests/test_concurrent_verbs.py).  Every
    # event now starts from the status the one before it left.
    log = EventLog()
    sim = Simulation(workers=1, start=T0, listeners=[log])
    sim.schedule("hog", OneTime(delay=0), duration=35, priority=Priority.HIGH)
    limit = 2 if overlap is Overlap.ALLOW else None
    late = sim.schedule("late", FixedRate(10), duration=1, overlap=overlap, max_instances=limit)
    sim.run_for(50)
    chain = [event for event in log.events if event.task_id == late.id]
    assert [(e.previous, e.status) for e in chain[:2]] == [
        (None, TaskStatus.SCHEDULED),
        (TaskStatus.SCHEDULED, TaskStatus.RUNNING),  # the late run begins
    ]
    for before, after in itertools.pairwise(chain):
        assert after.previous is before.status, (before, after)
    skipped = [
        e.record.slot - T0 for e in chain if e.record and e.record.outcome is Outcome.SKIPPED
    ]
    assert skipped[:3] == [10, 20, 30]  # recorded all the same, after the begin


def test_an_extra_run_of_an_overlapping_task_runs_alone_and_the_slot_it_waited_for_follows_it() -> (
    None
):
    # run_now puts a plan (CatchUp) in front of the schedule: a run of it queues nothing
    # behind it, so the slot the task waited for runs after it, late, never beside it.
    durations = iter([5.0, 100.0])  # the slot at T0, then the extra run, long
    sim = Simulation(workers=2, start=T0)
    task = sim.schedule(
        "allow",
        FixedRate(60),
        duration=lambda rng, attempt: next(durations, 5.0),
        overlap=Overlap.ALLOW,
        max_instances=2,
    )
    sim.run(T0 + 10)
    assert sim.run_now(task.id) is True
    sim.run(T0 + 150)
    assert [(r.slot - T0, r.started - T0, r.outcome.value) for r in sim.records()][:3] == [
        (0, 0, "ok"),
        (10, 10, "ok"),  # the extra run, until T0 + 110
        (60, 110, "ok"),  # the slot it waited for: after it, late, not beside it
    ]


def test_an_overlapping_task_that_fails_into_the_dead_letter_leaves_no_slot_queued() -> None:
    # The slot queued behind the run (T0 + 60) goes with the task: a FAILED task waits
    # for no slot, and pending() does not list it.
    sim = Simulation(workers=2, start=T0)
    task = sim.schedule(
        "doomed",
        FixedRate(60),
        duration=10,
        fails=1.0,
        retry=RetryPolicy(max_attempts=1, fail_after_given_up=1),
        overlap=Overlap.ALLOW,
        max_instances=2,
    )
    sim.run(T0 + 30)
    assert task.status is TaskStatus.FAILED and sim.dead_letter() == [task.id]
    assert sim.pending() == [] and task.next_run_at is None
    sim.run(T0 + 300)
    assert [(r.slot - T0, r.outcome.value) for r in sim.records()] == [(0, "given_up")]


def test_an_overlapping_task_replaced_mid_run_without_overlap_runs_its_queued_slot_after() -> None:
    # The run in flight keeps its flight; the slot it queued behind it (T0 + 60) runs
    # once the run ends, late, not beside it; then the schedule's own rule: the slots a
    # run outlasts are skipped.
    sim = Simulation(workers=2, start=T0)
    sim.schedule("long", FixedRate(60), duration=100, id="long", overlap=Overlap.ALLOW,
                 max_instances=2)  # fmt: skip
    sim.run(T0 + 30)
    task = sim.schedule("long", FixedRate(60), duration=100, id="long", replace_existing=True)
    assert task.overlap is None
    sim.run(T0 + 250)
    assert [(r.slot - T0, r.started - T0, r.outcome.value) for r in sim.records()] == [
        (0, 0, "ok"),
        (60, 100, "ok"),  # the queued slot: after the run, late
        (120, 200, "skipped"),
        (180, 200, "skipped"),
    ]
    assert task.status is TaskStatus.RUNNING and len(task.runs) == 1  # the slot at 240, alone


class _NoNextSlot:
    """A schedule of one's own whose first run is at once and whose next_run raises."""

    def first_run(self, now: float) -> float:
        return now

    def next_run(self, record: object, now: float) -> float | None:
        raise RuntimeError("no next slot today")


@pytest.mark.parametrize("overlap", [Overlap.CANCEL_OTHER, Overlap.ALLOW])
def test_a_schedule_that_raises_as_an_overlapping_run_begins_fails_the_task_at_the_runs_end(
    make_scheduler: SchedulerFactory,
    clock: FakeClock,
    overlap: Overlap,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Listing the slot to queue behind the run raised out of begin(): the worker logged
    # "could not start", the run was lost with the task RUNNING for good, and its entry
    # never settled (wait_idle() never true again; shutdown(timeout=None) hung).  Now
    # nothing is queued behind the run, which runs; its end asks the schedule again,
    # which fails the task loudly, as it does a task without an overlap policy.
    calls: list[int] = []
    scheduler = make_scheduler(clock=clock)
    max_instances = 2 if overlap is Overlap.ALLOW else None
    task = scheduler.schedule(
        "odd", lambda: calls.append(1), _NoNextSlot(), overlap=overlap, max_instances=max_instances
    )
    settle(scheduler)
    assert calls == [1]
    assert task.status is TaskStatus.FAILED and scheduler.dead_letter() == [task.id]
    assert task.last_error == "ScheduleError: RuntimeError: no next slot today"
    assert [r.outcome for r in task.history] == [Outcome.OK]
    assert "could not start" not in caplog.text
    assert "raised as its run began" in caplog.text


def test_a_schedule_that_raises_as_an_overlapping_coroutine_begins_loses_no_other_run(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    # The loop begins the loop tasks' entries in a batch: the raise lost the runs begun
    # before it in the batch too (each RUNNING for good), and everything after it.
    ran: list[str] = []

    def coroutine(name: str) -> Any:
        async def run() -> None:
            ran.append(name)

        return run

    scheduler = make_scheduler(clock=clock, start=False)
    for name, priority in (("before", Priority.HIGH), ("after", Priority.LOW)):
        scheduler.schedule(name, coroutine(name), OneTime(T0), priority=priority)
    odd = scheduler.schedule("odd", coroutine("odd"), _NoNextSlot(), overlap=Overlap.CANCEL_OTHER)
    scheduler.start()
    settle(scheduler)
    assert sorted(ran) == ["after", "before", "odd"]
    assert odd.status is TaskStatus.FAILED
    assert all(task.status is not TaskStatus.RUNNING for task in scheduler.tasks())


@pytest.mark.parametrize("verb", ["reschedule", "replace"])
def test_a_new_schedule_the_store_refuses_leaves_the_slot_queued_behind_the_run(
    clock: FakeClock, verb: str
) -> None:
    # The slot queued behind the run in flight was dropped before the store was asked:
    # the verb raised ("nothing changes") with the task due at T0 + 60, its entry and its
    # flight's pending slot gone, so no run began beside the first there.
    store = FailingStore()
    h = Harness(clock, store=store)
    task = h.core.add("job", _noop, FixedRate(60), task_id="job", overlap=Overlap.ALLOW,
                      max_instances=2)  # fmt: skip
    h.begin()
    assert task._flight is not None and task._flight.pending == T0 + 60
    store.down = True
    with pytest.raises(StoreError, match="server is down"):
        if verb == "reschedule":
            h.core.reschedule("job", FixedRate(30))
        else:
            h.core.add("job", _noop, FixedRate(30), task_id="job", replace_existing=True,
                       overlap=Overlap.ALLOW, max_instances=2)  # fmt: skip
    store.down = False
    assert task._flight.pending == T0 + 60 and task.next_run_at == T0 + 60
    assert h.queue.pending() == [task]
    second = h.begin()  # beside the first, at its slot
    assert second.slot == T0 + 60 and len(task.runs) == 2


class _SlotAfterBreaks:
    """A schedule of one's own, every minute from its first run at once, whose
    ``slot_after`` raises when BUFFER_ONE asks it (``core/overlapping.py``, ``buffered``)
    for the latest slot past the ones a run that skipped more than MAX_SKIPPED (10) lists,
    and only then.  It used to raise from its Nth call on: once the listing asked one
    more, it raised in the listing instead, and the BUFFER_ONE guard these tests are for
    was never reached; asked by the caller, no count of the calls before decides where."""

    def __init__(self) -> None:
        self.raised = False

    def first_run(self, now: float) -> float:
        return now

    def next_run(self, record: object, now: float) -> float | None:
        return T0 + 60 * ((now - T0) // 60 + 1)

    def slot_after(self, slot: float) -> float | None:
        frame: FrameType | None = sys._getframe(1)
        while frame is not None:
            code = frame.f_code
            if code.co_name == "buffered" and code.co_filename.endswith("overlapping.py"):
                self.raised = True
                raise RuntimeError("no slot after today")
            frame = frame.f_back
        return slot + 60


def test_buffer_one_whose_schedule_raises_past_the_skipped_slots_fails_the_task_threaded(
    make_scheduler: SchedulerFactory, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # BUFFER_ONE's latest slot, asked past the slots listed (core/overlapping.py, buffered),
    # was asked outside the guard that fails a task whose schedule raises: the exception
    # left finish() with the task RUNNING for good, no event, and its entry never settled
    # (the worker's "could not settle"; wait_idle() false ever after).
    schedule = _SlotAfterBreaks()
    scheduler = make_scheduler(clock=clock, workers=1)
    log = EventLog()
    scheduler.add_listener(log)

    def long_run() -> None:
        clock.advance(60 * 20 + 1)  # 20 slots come due while it runs

    task = scheduler.schedule("long", long_run, schedule, overlap=Overlap.BUFFER_ONE, id="long")
    settle(scheduler)
    assert schedule.raised  # where BUFFER_ONE asked
    assert task.status is TaskStatus.FAILED and scheduler.dead_letter() == ["long"]
    assert task.last_error == "ScheduleError: RuntimeError: no slot after today"
    assert [r.outcome for r in task.history] == [Outcome.OK]
    assert log.events[-1].status is TaskStatus.FAILED
    assert "could not settle" not in caplog.text and "scheduler raised" not in caplog.text


def test_buffer_one_whose_schedule_raises_past_the_skipped_slots_fails_the_task_in_sim() -> None:
    # The simulation's run raised out of Simulation.run() instead.
    schedule = _SlotAfterBreaks()
    sim = Simulation(workers=1, start=T0)
    task = sim.schedule("long", schedule, duration=60 * 20 + 1, overlap=Overlap.BUFFER_ONE)
    sim.run(T0 + 3600)
    assert schedule.raised  # where BUFFER_ONE asked
    assert task.status is TaskStatus.FAILED
    assert task.last_error == "ScheduleError: RuntimeError: no slot after today"


@pytest.mark.parametrize(
    ("overlap", "instances"), [(Overlap.ALLOW, 2), (Overlap.CANCEL_OTHER, None)]
)
def test_a_windows_max_runs_ends_a_task_whose_runs_may_overlap(
    overlap: Overlap, instances: int | None, make_scheduler: SchedulerFactory
) -> None:
    """A run of an ALLOW or CANCEL_OTHER task ends with its next slot queued behind it,
    and the task went on to that slot without the window counting the run:
    ``Window(FixedRate(60), max_runs=3)`` never ended, on both runtimes."""
    window = Window(FixedRate(60), max_runs=3)
    sim = Simulation(workers=2, start=T0)
    simulated = sim.schedule("trial", window, duration=1, overlap=overlap, max_instances=instances)
    sim.run(T0 + 600)
    assert (simulated.status, simulated.run_count) == (TaskStatus.SUCCEEDED, 3)
    scheduler = make_scheduler(workers=2, clock=FakeClock(T0))
    threaded = scheduler.schedule(
        "trial", lambda: None, window, overlap=overlap, max_instances=instances
    )
    with Stepper(scheduler) as steps:
        steps.advance(600)
        assert (threaded.status, threaded.run_count) == (TaskStatus.SUCCEEDED, 3)


def test_a_windows_max_runs_counts_the_runs_that_end_beside_others() -> None:
    """Runs that overlap: each successful one counts, the one that ends beside another
    too; at the max_runs-th nothing more starts, and what is in flight then finishes
    (here one run: 4 in all, the last of them the one in flight), then the task ends."""
    sim = Simulation(workers=3, start=T0)
    window = Window(FixedRate(60), max_runs=3)
    task = sim.schedule("long", window, duration=150, overlap=Overlap.ALLOW, max_instances=2)
    sim.run(T0 + 2000)
    ok = [r.slot - T0 for r in sim.records() if r.outcome is Outcome.OK]
    assert task.status is TaskStatus.SUCCEEDED and ok == [0, 60, 180, 240]


def test_an_overlapping_tasks_slot_queued_as_its_run_began_keeps_its_place_after_the_run() -> None:
    """The slot an ``ALLOW`` task queues behind its run as the run begins stays queued
    where it was when the run ends before it: a task due at the same instant, queued
    after it, still runs after it.  Queued again at the run's end, the slot took a new
    place behind that task (the entry's order among tasks due at one instant is the
    order they were queued in)."""
    h = Harness(FakeClock(T0))
    first = h.core.add("first", _noop, FixedRate(60), overlap=Overlap.ALLOW, max_instances=2)
    run = h.begin()  # the slot at T0; the one at T0 + 60 is queued as it begins
    second = h.core.add("second", _noop, FixedRate(60, start_delay=60))  # also due at T0 + 60
    h.clock.advance(10)
    h.core.finish(run, T0, h.clock.now(), None)
    assert first.next_run_at == second.next_run_at == T0 + 60
    assert [h.begin().task for _ in range(2)] == [first, second]


def _cancelled_beside_each_other_on_threads(
    make_scheduler: SchedulerFactory, store: InMemoryTaskStore, window: Window, log: EventLog
) -> ScheduledTask:
    """Runs at T0, T0 + 60 and T0 + 120 in flight on threads, the task cancelled, then
    the runs let finish in the order they began (each recorded before the next ends)."""
    gates = [threading.Event() for _ in range(3)]
    begun = itertools.count()
    started = threading.Semaphore(0)

    def job() -> None:
        gate = gates[next(begun)]
        started.release()
        gate.wait(5)

    clock = FakeClock(T0)
    scheduler = make_scheduler(clock=clock, store=store, listeners=[log], workers=3)
    task = scheduler.schedule(
        "long", job, window, id="long", overlap=Overlap.ALLOW, max_instances=3
    )
    for step in range(3):
        if step:
            clock.advance(60)
        assert started.acquire(timeout=5)
    assert scheduler.cancel(task.id)
    for ended, gate in enumerate(gates, start=1):
        gate.set()  # then its record, before the next run may end

        def recorded(_: TaskEvent, runs: int = ended) -> bool:
            return len(log.runs("long")) >= runs

        assert log.wait_for(recorded) is not None
    settle(scheduler)
    return task


@pytest.mark.parametrize("runtime", ["threaded", "simulated"])
def test_a_cancelled_task_whose_windows_max_runs_ends_in_flight_gets_no_plan_in_front(
    runtime: str, make_scheduler: SchedulerFactory
) -> None:
    """An ALLOW task with three runs in flight is cancelled; the second of them to end,
    beside the third, is its ``Window``'s ``max_runs``-th.  Before, that run put a plan
    that ends the task in front of the schedule of a task already CANCELLED (a cancel
    drops the plan in front: core/control.py), and the last run out, its pending slot
    dropped, then took the retry-and-schedule road: its final row read ``attempt`` 1
    where the rows of the same cancel with no window read 0.  Now a cancelled task
    counts nothing beside its runs: its final rows are those of a task with no window."""
    rows: dict[str, list[tuple[Any, ...]]] = {}
    for max_runs in (2, None):
        store = SnapshotsKept()
        window = Window(FixedRate(60), max_runs=max_runs, end=T0 + 10_000)
        log = EventLog()
        if runtime == "threaded":
            task = _cancelled_beside_each_other_on_threads(make_scheduler, store, window, log)
        else:
            sim = Simulation(workers=3, start=T0, store=store, listeners=[log])
            task = sim.schedule(
                "long", window, id="long", duration=150, overlap=Overlap.ALLOW, max_instances=3
            )
            sim.run(T0 + 130)  # runs of T0, T0 + 60 and T0 + 120 in flight
            assert len(task.runs) == 3 and sim.cancel(task.id)
            sim.run(T0 + 600)
        assert task.status is TaskStatus.CANCELLED and task._schedule is window  # no plan
        assert [r.slot - T0 for r in log.runs("long")] == [0, 60, 120]
        cancelled = next(i for i, s in enumerate(store.saved) if s.status is TaskStatus.CANCELLED)
        rows[str(max_runs)] = [
            (s.status, s.next_run_at, s.attempt, s.waited, s.slot, s.resumes, s.until)
            for s in store.saved[cancelled:]
        ]
    assert rows["2"] == rows["None"]
    assert rows["2"][-1] == (TaskStatus.CANCELLED, None, 0, None, None, False, None)
