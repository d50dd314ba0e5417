"""Recovery: a scheduler reopened on its store gets its tasks back and settles the slots that
passed while it was down, as each task's misfire policy says; both runtimes decide alike."""

from __future__ import annotations

import asyncio
import logging
import shutil
import threading
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

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
    RetryPolicy,
    Schedule,
    ScheduledTask,
    Scheduler,
    Simulation,
    SqliteTaskStore,
    TaskNotFoundError,
    TaskSnapshot,
    TaskStatus,
    Window,
    checks,
)
from lldsched.core.recovery import after_clock_jump, pending_slot, recover
from lldsched.model import ExecutionRecord, Outcome
from lldsched.threaded.jumps import LastLook
from tests import jobs
from tests.conftest import T0, SchedulerFactory, settle
from tests.harness import Harness
from tests.waits import wait_until

HOUR = 3600.0
SKIP = MisfirePolicy(Misfire.SKIP)
RUN_ALL = MisfirePolicy(Misfire.RUN_ALL)


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    jobs.CALLS.clear()


def calls(label: str) -> list[float]:
    """The due instants ``label`` ran for, relative to T0, in hours."""
    return [(due - T0) / HOUR for name, due, _ in jobs.CALLS if name == label]


def outcomes(scheduler: Scheduler | Simulation, name: str) -> list[tuple[str, float]]:
    (task,) = [t for t in scheduler.tasks() if t.name == name]
    return [(r.outcome, (r.slot - T0) / HOUR) for r in task.history]


def state(task: ScheduledTask) -> tuple[object, ...]:
    return (task.id, task.definition, task.status, task.next_run_at, task.attempt, task.history)


class Reopening:
    """One store as each next process opens it: ``kind`` ``"memory"`` (the same object)
    or ``"sqlite"`` (the file at ``path`` opened again, the last process's store closed:
    that process stopped)."""

    def __init__(self, kind: str, path: Path) -> None:
        self.kind = kind
        self.path = path
        self.memory = InMemoryTaskStore()
        self.opened: list[SqliteTaskStore] = []

    def __call__(self) -> InMemoryTaskStore | SqliteTaskStore:
        if self.kind == "memory":
            return self.memory
        self.close()
        self.opened.append(SqliteTaskStore(self.path))
        return self.opened[-1]

    def close(self) -> None:
        for store in self.opened:
            store.close()


def test_definitions_statuses_history_and_dead_letter_come_back(
    make_scheduler: SchedulerFactory, clock: FakeClock, tmp_path: Path
) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        scheduler = make_scheduler(clock=clock, store=store)
        never = RetryPolicy.never()
        scheduler.schedule("tick", jobs.note, FixedRate(60), args=("tick",), misfire=SKIP)
        scheduler.schedule("cron", jobs.noop, CronSchedule("*/5 * * * *"))
        dead = scheduler.schedule("dead", jobs.broken, OneTime(delay=0), retry=never)
        slow_retry = RetryPolicy(3, initial_backoff=600, max_backoff=600)
        scheduler.schedule("retrying", jobs.broken, FixedDelay(30), retry=slow_retry)
        stop = RetryPolicy(max_attempts=1, fail_after_given_up=1)  # recurring: no second slot
        dead_too = scheduler.schedule(
            "dead-too", jobs.broken, FixedRate(90, start_delay=30), retry=stop
        )
        paused = scheduler.schedule("paused", jobs.noop, FixedRate(300))
        cancelled = scheduler.schedule("cancelled", jobs.noop, FixedDelay(10))
        done = scheduler.schedule("done", jobs.note, OneTime(delay=30), kwargs={"label": "x"})
        settle(scheduler)
        clock.advance(60)
        settle(scheduler)
        scheduler.pause(paused.id)
        scheduler.cancel(cancelled.id)
        assert scheduler.dead_letter() == [dead.id, dead_too.id]
        assert scheduler.shutdown()
        before = [state(t) for t in scheduler.tasks()]
        counts = {t.id: (t.run_count, t.failure_count, t.last_error) for t in scheduler.tasks()}

    with SqliteTaskStore(path) as store:
        again = Scheduler(clock=clock, store=store)
        assert [state(t) for t in again.tasks()] == before
        assert {t.id: (t.run_count, t.failure_count, t.last_error) for t in again.tasks()} == counts
        assert again.dead_letter() == [dead.id, dead_too.id]
        assert again.task(done.id).status is TaskStatus.SUCCEEDED
        assert again.task(paused.id).status is TaskStatus.PAUSED
        # New ids continue after the restored ones.
        assert again.schedule("new", jobs.noop, OneTime(delay=1)).id == "task-9"
        assert again.shutdown()


@pytest.mark.parametrize(
    ("policy", "runs", "decided"),
    [
        (Misfire.RUN_ONCE, [3.0], [("coalesced", 1.0), ("coalesced", 2.0)]),
        (Misfire.RUN_ALL, [1.0, 2.0, 3.0], []),
        (Misfire.SKIP, [], [("missed", 1.0), ("missed", 2.0), ("missed", 3.0)]),
    ],
)
def test_down_for_three_hours_an_hourly_job_runs_as_its_policy_says(
    tmp_path: Path, policy: Misfire, runs: list[float], decided: list[tuple[str, float]]
) -> None:
    # Registered at 09:00 with its first slot at 10:00; down from 09:30 to 12:30.
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        first = Scheduler(clock=FakeClock(T0), store=store)
        first.schedule(
            "hourly", jobs.note, FixedRate(HOUR, start_delay=HOUR), args=("hourly",),
            misfire=MisfirePolicy(policy),
        )  # fmt: skip
        assert first.shutdown()
    clock = FakeClock(T0 + 3.5 * HOUR)
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(clock=clock, store=store).start()
        settle(scheduler)
        assert calls("hourly") == runs
        assert outcomes(scheduler, "hourly") == decided + [("ok", slot) for slot in runs]
        (task,) = scheduler.tasks()
        assert task.next_run_at == T0 + 4 * HOUR  # 13:00, in the future
        assert scheduler.shutdown()
        assert [(r.outcome, (r.slot - T0) / HOUR) for r in store.records(task.id)] == (
            decided + [("ok", slot) for slot in runs]
        )


def test_a_one_off_whose_slot_is_skipped_ends_cancelled_with_its_slot_recorded_missed(
    tmp_path: Path,
) -> None:
    store = InMemoryTaskStore()
    Scheduler(clock=FakeClock(T0), store=store).schedule(
        "reminder", jobs.noop, OneTime(T0 + HOUR), misfire=SKIP
    )
    scheduler = Scheduler(clock=FakeClock(T0 + 2 * HOUR), store=store)
    (task,) = scheduler.tasks()
    assert task.status is TaskStatus.CANCELLED and task.next_run_at is None
    assert [r.outcome for r in task.history] == ["missed"]
    assert store.get(task.id) is not None and store.get(task.id).status is TaskStatus.CANCELLED  # type: ignore[union-attr]


def test_a_run_in_flight_at_the_crash_runs_again_with_the_same_attempt(tmp_path: Path) -> None:
    store = InMemoryTaskStore()
    writer = Scheduler(clock=FakeClock(T0), store=store)
    task = writer.schedule("job", jobs.note, FixedRate(HOUR), args=("job",), misfire=SKIP)
    # What the store held when the process died with attempt 1 in flight (no record).
    store.save(TaskSnapshot(task.definition, TaskStatus.RUNNING, T0, 1, 0, 0, None, True))
    clock = FakeClock(T0 + 2.5 * HOUR)
    scheduler = Scheduler(clock=clock, store=store).start()
    try:
        settle(scheduler)
        # At-least-once: the attempt in flight runs again, whatever the policy; the slots
        # after it (10:00, 11:00) are the policy's (SKIP): missed, and 12:00 is next.
        assert [(due - T0, attempt) for _, due, attempt in jobs.CALLS] == [(0.0, 1)]
        assert outcomes(scheduler, "job") == [("missed", 1.0), ("missed", 2.0), ("ok", 0.0)]
        assert scheduler.task(task.id).next_run_at == T0 + 3 * HOUR
    finally:
        assert scheduler.shutdown()


def test_an_attempt_owed_from_before_runs_before_the_slots_run_all_catches_up() -> None:
    # In flight at 09:00 when the process died, back at 11:30: the 09:00 attempt runs
    # again first, then RUN_ALL's 10:00 and 11:00, oldest first; 12:00 is next.
    store = InMemoryTaskStore()
    writer = Scheduler(clock=FakeClock(T0), store=store)
    task = writer.schedule("job", jobs.note, FixedRate(HOUR), args=("job",), misfire=RUN_ALL)
    store.save(TaskSnapshot(task.definition, TaskStatus.RUNNING, T0, 1, 0, 0, None, True))
    scheduler = Scheduler(clock=FakeClock(T0 + 2.5 * HOUR), store=store).start()
    try:
        settle(scheduler)
        assert calls("job") == [0.0, 1.0, 2.0]
        assert [slot for _, slot in outcomes(scheduler, "job")] == [0.0, 1.0, 2.0]
        assert scheduler.task(task.id).next_run_at == T0 + 3 * HOUR
    finally:
        assert scheduler.shutdown()


def test_a_retry_in_flight_at_the_crash_keeps_its_attempt_count_and_slot() -> None:
    store = InMemoryTaskStore()
    writer = Scheduler(clock=FakeClock(T0), store=store)
    task = writer.schedule("job", jobs.note, FixedRate(HOUR), args=("job",))
    failed = ExecutionRecord(task.id, "job", 1, T0, T0, 0, T0, T0 + 1, False, "RuntimeError")
    store.save(TaskSnapshot(task.definition, TaskStatus.RETRYING, T0 + 2, 1, 1, 1, "x"), failed)
    store.save(TaskSnapshot(task.definition, TaskStatus.RUNNING, T0 + 2, 2, 1, 1, "x", True))
    scheduler = Scheduler(clock=FakeClock(T0 + 30), store=store)
    restored = scheduler.task(task.id)
    assert (restored.status, restored.attempt, restored.next_run_at) == (
        TaskStatus.RETRYING, 1, T0 + 2,
    )  # fmt: skip
    scheduler.start()
    try:
        settle(scheduler)
        assert [(due - T0, attempt) for _, due, attempt in jobs.CALLS] == [(2.0, 2)]
        assert restored.history[-1].slot == T0 and restored.next_run_at == T0 + HOUR
    finally:
        assert scheduler.shutdown()


def test_the_slot_a_stored_task_stands_at_is_one_rule_for_a_restart_and_a_followed_row() -> None:
    """``pending_slot``: what ``recover`` and a shared store's follow both read."""
    definition = (
        Scheduler(clock=FakeClock(T0)).schedule("job", jobs.noop, FixedRate(HOUR)).definition
    )
    ran = ExecutionRecord("task-1", "job", 1, T0, T0, 0, T0, T0 + 1, False, "RuntimeError")
    skipped = ran._replace(slot=T0 + HOUR, misfire=Outcome.MISSED)  # decided, never ran
    retrying = TaskSnapshot(definition, TaskStatus.RETRYING, T0 + 2, 1, 1, 1, "x")
    assert pending_slot(retrying, 1, records=lambda: [ran, skipped]) == T0  # the run's slot
    assert pending_slot(retrying, 1, records=lambda: [skipped]) == T0 + 2  # none ran: its due
    put_off = retrying._replace(status=TaskStatus.SCHEDULED, attempt=0, slot=T0 - HOUR)

    def unread() -> list[ExecutionRecord]:
        raise AssertionError("records read for a task with no attempt behind it")

    assert pending_slot(put_off, 0, records=unread) == T0 - HOUR  # a plan's run put off
    assert pending_slot(put_off._replace(slot=None), 0, records=unread) == T0 + 2
    assert pending_slot(put_off._replace(slot=None, next_run_at=None), 0, records=unread) == 0.0


@pytest.mark.parametrize(
    ("schedule", "policy", "decided", "status"),
    [
        (FixedRate(HOUR, start_delay=HOUR), Misfire.RUN_ONCE,
         [("coalesced", 1.0), ("coalesced", 2.0), ("ok", 3.0)], TaskStatus.SCHEDULED),
        (FixedRate(HOUR, start_delay=HOUR), Misfire.SKIP,
         [("missed", 1.0), ("missed", 2.0), ("missed", 3.0)], TaskStatus.SCHEDULED),
        (OneTime(T0 + HOUR), Misfire.SKIP, [("missed", 1.0)], TaskStatus.CANCELLED),
    ],
)  # fmt: skip
def test_a_restart_killed_among_its_misfire_decisions_decides_no_slot_twice(
    schedule: Schedule, policy: Misfire, decided: list[tuple[str, float]], status: TaskStatus
) -> None:
    # Down from 09:00 to 12:30; the first restart wrote its decision for 10:00 (with the
    # task as it was, due at 10:00) and was killed before its next write.
    store = InMemoryTaskStore()
    writer = Scheduler(clock=FakeClock(T0), store=store)
    task = writer.schedule("hourly", jobs.note, schedule, args=("hourly",),
                           misfire=MisfirePolicy(policy))  # fmt: skip
    first = ExecutionRecord.of(
        task_id=task.id, name="hourly", attempt=0, due=T0 + HOUR, slot=T0 + HOUR, worker=-1,
        started=T0 + 3.5 * HOUR, finished=T0 + 3.5 * HOUR, ok=False,
        misfire=Outcome(decided[0][0]),
    )  # fmt: skip
    store.save(TaskSnapshot(task.definition, TaskStatus.SCHEDULED, T0 + HOUR, 0, 0, 0, None), first)
    scheduler = Scheduler(clock=FakeClock(T0 + 3.5 * HOUR), store=store).start()
    try:
        settle(scheduler)
        assert outcomes(scheduler, "hourly") == decided  # the 10:00 decision once
        assert [(r.outcome, (r.slot - T0) / HOUR) for r in store.records(task.id)] == decided
        assert scheduler.task(task.id).status is status
    finally:
        assert scheduler.shutdown()


def test_a_paused_task_is_left_paused_and_resume_runs_its_slot_at_once() -> None:
    store = InMemoryTaskStore()
    writer = Scheduler(clock=FakeClock(T0), store=store)
    task = writer.schedule("job", jobs.note, FixedRate(HOUR), args=("job",), misfire=SKIP)
    writer.pause(task.id)
    clock = FakeClock(T0 + 5 * HOUR)
    scheduler = Scheduler(clock=clock, store=store).start()
    try:
        assert scheduler.task(task.id).status is TaskStatus.PAUSED
        assert scheduler.task(task.id).history == ()
        scheduler.resume(task.id)
        settle(scheduler)
        assert [due for _, due, _ in jobs.CALLS] == [clock.now()]
    finally:
        assert scheduler.shutdown()


def test_every_decision_reaches_the_listeners(tmp_path: Path, log: EventLog) -> None:
    store = InMemoryTaskStore()
    Scheduler(clock=FakeClock(T0), store=store).schedule(
        "hourly", jobs.noop, FixedRate(HOUR, start_delay=HOUR), misfire=SKIP
    )
    scheduler = Scheduler(clock=FakeClock(T0 + 3.5 * HOUR), store=store, listeners=[log])
    scheduler.start()
    try:
        event = log.wait_for(lambda e: e.record is not None and e.record.slot == T0 + 3 * HOUR)
        assert event is not None and event.record is not None
        assert event.record.outcome == "missed" and event.previous is event.status
    finally:
        assert scheduler.shutdown()


def test_both_runtimes_recover_a_store_to_the_same_decisions_and_runs(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        writer = Simulation(start=T0, store=store)  # a simulated task may have no action
        for policy in Misfire:
            misfire = MisfirePolicy(policy, max_catch_up=2)
            hourly = FixedRate(HOUR, start_delay=HOUR)
            writer.schedule(f"rate-{policy.value}", hourly, misfire=misfire)
            writer.schedule(f"cron-{policy.value}", CronSchedule("30 * * * *"), misfire=misfire)
        writer.schedule("delay", FixedDelay(600), misfire=SKIP)
    shutil.copy(path, tmp_path / "copy.db")
    back = T0 + 5.25 * HOUR

    with SqliteTaskStore(path) as store:
        clock = FakeClock(back)
        threaded = Scheduler(clock=clock, store=store).start()
        settle(threaded)
        while (pending := threaded.pending()) and (pending[0].next_run_at or 0) <= back + 2 * HOUR:
            clock.set(max(clock.now(), pending[0].next_run_at or 0.0))  # event by event
            settle(threaded)
        assert threaded.shutdown()
    with SqliteTaskStore(tmp_path / "copy.db") as store:
        sim = Simulation(start=back, store=store)
        sim.run(back + 2 * HOUR)

    def history(runtime: Scheduler | Simulation) -> dict[str, list[tuple[str, float, int]]]:
        return {
            t.name: [(r.outcome, r.slot, r.attempt) for r in t.history] for t in runtime.tasks()
        }

    assert history(threaded) == history(sim)
    # Back at 14:15 after 09:00; each policy on the hourly grid (10:00 ... 14:00):
    assert outcomes(sim, "rate-skip") == [
        ("missed", 1.0), ("missed", 2.0), ("missed", 3.0), ("missed", 4.0), ("missed", 5.0),
        ("ok", 6.0), ("ok", 7.0),
    ]  # fmt: skip
    once = [("coalesced", 1.0), ("coalesced", 2.0), ("coalesced", 3.0), ("coalesced", 4.0)]
    assert outcomes(sim, "rate-run_once") == [*once, ("ok", 5.0), ("ok", 6.0), ("ok", 7.0)]
    assert outcomes(sim, "rate-run_all") == [
        ("missed", 1.0), ("missed", 2.0), ("missed", 3.0), ("ok", 4.0), ("ok", 5.0),
        ("ok", 6.0), ("ok", 7.0),
    ]  # fmt: skip
    assert outcomes(sim, "delay")[:2] == [("missed", 0.0), ("ok", 5.25 + 600 / HOUR)]
    assert {t.name: t.next_run_at for t in threaded.tasks()} == {
        t.name: t.next_run_at for t in sim.tasks()
    }


class JumpingClock(FakeClock):
    """A fake clock with a monotonic side: ``advance`` moves both, ``jump`` only the wall.

    ``parked`` is set each time the timer parks, so a test knows the timer has handled
    what happened before."""

    def __init__(self, start: float) -> None:
        super().__init__(start)
        self._mono = 0.0
        self.parked = threading.Event()

    def monotonic(self) -> float:
        return self._mono

    def advance(self, seconds: float | timedelta) -> float:
        self._mono += checks.seconds(seconds, name="advance()")
        return super().advance(seconds)

    def jump(self, seconds: float, *, wake: bool = True) -> None:
        """Move the wall clock alone; ``wake=False``: as a real clock does, wake nobody
        (the timer notices at its next wake-up)."""
        with self._lock:
            self._now += seconds
        if wake:
            self._notify_all()

    def elapse(self, seconds: float) -> None:
        """Let ``seconds`` pass on both clocks without waking anybody, as real time
        passes while the timer sleeps (its last look grows older)."""
        with self._lock:
            self._now += seconds
            self._mono += seconds

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        self.parked.set()
        super().wait(condition, deadline)


def test_a_forward_jump_of_the_wall_clock_is_downtime_for_the_misfire_policy(
    make_scheduler: SchedulerFactory,
) -> None:
    clock = JumpingClock(T0)
    scheduler = make_scheduler(clock=clock)
    scheduler.schedule("skip", jobs.note, FixedRate(HOUR, start_delay=HOUR), args=("skip",),
                       misfire=SKIP)  # fmt: skip
    scheduler.schedule("once", jobs.note, FixedRate(HOUR, start_delay=HOUR), args=("once",))
    settle(scheduler)
    clock.jump(3.5 * HOUR)
    settle(scheduler)
    assert calls("skip") == [] and calls("once") == [3.0]
    assert outcomes(scheduler, "skip") == [("missed", 1.0), ("missed", 2.0), ("missed", 3.0)]
    assert outcomes(scheduler, "once") == [("coalesced", 1.0), ("coalesced", 2.0), ("ok", 3.0)]
    assert {t.next_run_at for t in scheduler.tasks()} == {T0 + 4 * HOUR}


class FirstLookHeld(JumpingClock):
    """A JumpingClock whose first reading on the timer's thread waits for a ``jump``."""

    def __init__(self, start: float) -> None:
        super().__init__(start)
        self.jumped = threading.Event()
        self._held = False

    def now(self) -> float:
        if not self._held and threading.current_thread().name.endswith("-timer"):
            self._held = True
            assert self.jumped.wait(5)
        return super().now()

    def jump(self, seconds: float, *, wake: bool = True) -> None:
        with self._lock:
            self._now += seconds
        self.jumped.set()  # before the wake-up: the timer may hold the lock meanwhile
        if wake:
            self._notify_all()


def test_a_wait_idle_for_slots_a_jump_skipped_returns_as_the_timer_skips_them(
    make_scheduler: SchedulerFactory,
) -> None:
    # wait_idle() finds a SKIP task due after a jump the timer has not seen yet, and
    # waits; the timer wakes, sees the jump, and the misfire policy moves the task to
    # its next slot: nothing was due after all, nothing ran, and the waiter is told then
    # (no run settles to tell it: it would wait out its timeout before it looked again).
    clock = JumpingClock(T0)
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("skip", jobs.note, FixedRate(HOUR, start_delay=HOUR),
                              args=("skip",), misfire=SKIP)  # fmt: skip
    looked(clock, scheduler)  # the timer parked, waiting for the slot at 1 h
    clock.jump(3.5 * HOUR, wake=False)  # and sleeps on
    answers: list[bool] = []
    waiter = threading.Thread(target=lambda: answers.append(scheduler.wait_idle(timeout=5)))
    waiter.start()
    wait_until(lambda: bool(scheduler._idle_waiters), timeout=5, what="wait_idle() to wait")
    clock.parked.clear()
    clock.advance(0)  # wake the timer
    assert clock.parked.wait(5)  # it handled the jump, and parked again
    assert not scheduler._idle_waiters  # the waiter let go then, not at its timeout
    waiter.join()
    assert answers == [True]
    assert calls("skip") == [] and task.next_run_at == T0 + 4 * HOUR


def minutely_over_a_two_hour_suspend(make_scheduler: SchedulerFactory) -> ScheduledTask:
    """Notebook 07, "Check yourself", answer 5: a task due every minute on a laptop that
    sleeps two hours; the task once the scheduler settled after the lid opened.

    A suspend moves the wall clock and not the monotonic one, and wakes nobody; the
    timer's wait (for the slot at 60 s) ends when the monotonic clock reaches it, 60 s
    after the lid opens, with the wall clock two hours later still."""
    clock = JumpingClock(T0)
    scheduler = make_scheduler(clock=clock, history_limit=200)
    task = scheduler.schedule("minutely", jobs.note, FixedRate(60), args=("minutely",))
    settle(scheduler)
    looked(clock, scheduler)  # the timer parked, waiting for the slot at 60 s
    clock.jump(2 * HOUR, wake=False)  # the lid closes and opens
    clock.advance(60)  # the wait ends
    settle(scheduler)
    return scheduler.task(task.id)


def test_a_minutely_task_over_a_two_hour_suspend_runs_once_as_the_timer_wakes(
    make_scheduler: SchedulerFactory,
) -> None:
    # The 120 slots slept through and the one due as the timer wakes meet the misfire
    # policy: RUN_ONCE runs the latest, coalesces the 120 before it, and the grid
    # carries on (notebook 07 says so: tests/test_notebook_figures.py).
    task = minutely_over_a_two_hour_suspend(make_scheduler)
    slept = [T0 + 60 * minute for minute in range(1, 121)]
    assert [(r.outcome, r.slot) for r in task.history] == [
        (Outcome.OK, T0),
        *[(Outcome.COALESCED, slot) for slot in slept],
        (Outcome.OK, T0 + 2 * HOUR + 60),
    ]
    assert calls("minutely") == [0.0, (2 * HOUR + 60) / HOUR]
    assert task.next_run_at == T0 + 2 * HOUR + 120


def test_a_jump_right_after_start_is_a_jump_though_the_timer_had_not_looked_yet(
    make_scheduler: SchedulerFactory,
) -> None:
    # Before: the first reading the jumps are measured from was the timer thread's own,
    # taken when it first got the lock; a jump before that (a loaded machine, a test
    # that jumps right after start()) was its starting point, not a jump: the slots it
    # passed ran late, one by one, and no misfire policy was applied (a flake of the
    # test above under --switch-interval=1e-6).  The reading is start()'s now.
    clock = FirstLookHeld(T0)
    scheduler = make_scheduler(clock=clock, start=False)
    scheduler.schedule("skip", jobs.note, FixedRate(HOUR, start_delay=HOUR), args=("skip",),
                       misfire=SKIP)  # fmt: skip
    scheduler.start()  # the timer's first reading waits for the jump
    clock.jump(3.5 * HOUR)
    settle(scheduler)
    assert calls("skip") == []
    assert outcomes(scheduler, "skip") == [("missed", 1.0), ("missed", 2.0), ("missed", 3.0)]


def test_a_backward_jump_moves_interval_slots_back_and_leaves_calendar_slots(
    make_scheduler: SchedulerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    clock = JumpingClock(T0)
    scheduler = make_scheduler(clock=clock)
    rate = scheduler.schedule("rate", jobs.noop, FixedRate(60, start_delay=60))
    cron = scheduler.schedule("cron", jobs.noop, CronSchedule("0 12 * * *"))
    at = scheduler.schedule("at", jobs.noop, OneTime(T0 + 600))
    assert clock.parked.wait(5)
    clock.parked.clear()
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        clock.jump(-HOUR)
        assert clock.parked.wait(5)  # the timer handled the jump and parked again
    assert rate.next_run_at == T0 - HOUR + 60  # still a minute away
    assert cron.next_run_at == T0 + 3 * HOUR and at.next_run_at == T0 + 600
    assert "the wall clock jumped by -3600.000 s: the due times re-evaluated" in caplog.messages


def test_a_fixed_rate_set_back_runs_on_its_moved_grid(make_scheduler: SchedulerFactory) -> None:
    # The clock is set back an hour a minute before a fixed rate's slot: the slot moves
    # back with it and runs a minute later, recorded for its moved slot, and the next
    # follows one period after (not an hour and more later).
    clock = JumpingClock(T0)
    scheduler = make_scheduler(clock=clock)
    rate = scheduler.schedule("rate", jobs.noop, FixedRate(60, start_delay=60))
    assert clock.parked.wait(5)
    clock.parked.clear()
    clock.jump(-HOUR)
    assert clock.parked.wait(5)  # the timer handled the jump
    clock.parked.clear()
    clock.advance(60)
    assert clock.parked.wait(5)  # and handed out the slot now due
    settle(scheduler)
    (record,) = scheduler.task(rate.id).history
    assert (record.slot, record.started) == (T0 - HOUR + 60, T0 - HOUR + 60)
    assert scheduler.task(rate.id).next_run_at == T0 - HOUR + 120


def looked(clock: JumpingClock, scheduler: Scheduler) -> None:
    """Wake the timer and wait until it parked again: it has looked at the clock since
    the last run ended (and handed out what that made due)."""
    clock.parked.clear()
    clock.advance(0)
    assert clock.parked.wait(5)
    settle(scheduler)


def _in_flight(
    make_scheduler: SchedulerFactory, clock: JumpingClock, schedule: Schedule
) -> tuple[Scheduler, ScheduledTask, threading.Event]:
    """A scheduler on ``clock`` with one task on ``schedule`` whose first run has
    started and goes on until the event returned is set."""
    started, release = threading.Event(), threading.Event()

    def job() -> None:
        started.set()
        assert release.wait(5)

    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("job", job, schedule)
    assert started.wait(5)
    return scheduler, task, release


@pytest.mark.parametrize("timer_looks", ["while it runs", "after it ended"])
@pytest.mark.parametrize(
    ("schedule", "next_due"),
    [(FixedRate(60), -HOUR + 60), (FixedDelay(600), -HOUR + 600)],
    ids=["rate", "delay"],
)
def test_a_run_in_flight_when_the_clock_is_set_back_is_followed_one_period_later(
    make_scheduler: SchedulerFactory, schedule: Schedule, next_due: float, timer_looks: str
) -> None:
    # The run starts at T0; the wall clock is set back an hour while it runs; it ends at
    # once (T0 - 1 h by the wall).  Its next run is one period later by the wall clock:
    # a fixed rate waited out the hour (its next slot counted from the slot the run
    # served, which the jump left behind, sixty slots lost without a record), and a
    # fixed delay ending before the timer looked moved back twice (a run at once).
    clock = JumpingClock(T0)
    scheduler, task, release = _in_flight(make_scheduler, clock, schedule)
    clock.parked.clear()
    if timer_looks == "while it runs":
        clock.jump(-HOUR)
        assert clock.parked.wait(5)  # the timer handled the jump, the run still going
    else:
        clock.jump(-HOUR, wake=False)  # the timer sleeps on: the worker sees it first
    release.set()
    settle(scheduler)
    looked(clock, scheduler)
    assert scheduler.task(task.id).next_run_at == T0 + next_due
    (record,) = scheduler.task(task.id).history
    # It read T0 at its start and T0 - 1 h at its finish: it is recorded as starting at
    # its finish (duration 0), never as finishing before it started (a negative duration
    # in a frame, a bar drawn backwards).
    assert (record.slot, record.started, record.finished) == (T0, T0 - HOUR, T0 - HOUR)
    assert record.duration == 0.0


@pytest.mark.parametrize("where", ["thread", "coroutine"])
def test_a_small_backward_jump_moves_a_fixed_delays_next_run_back_once(
    make_scheduler: SchedulerFactory, where: str
) -> None:
    # The clock is set back 2 minutes, 5 minutes after the timer's last look, while the
    # run goes on; the run ends then.  Its next run is 600 s after the finish it read.
    # Before: the worker's test (its finish earlier than the last look's wall reading)
    # did not see a jump shorter than the time since that look, the run counted its
    # delay from the moved clock, and the timer then moved it back once more: 2 minutes
    # early (a jump of up to max_wait, 60 s by default, and more under load).
    clock = JumpingClock(T0)
    started, release = threading.Event(), threading.Event()

    def job() -> None:
        started.set()
        assert release.wait(5)

    async def coroutine_job() -> None:
        started.set()
        while not release.is_set():  # the loop's thread: no blocking wait on it
            await asyncio.sleep(0.001)

    scheduler = make_scheduler(clock=clock)
    action = job if where == "thread" else coroutine_job
    task = scheduler.schedule("job", action, FixedDelay(600))
    assert started.wait(5) and clock.parked.wait(5)  # the timer looked at T0 and parked
    clock.elapse(300)
    clock.jump(-120, wake=False)
    release.set()
    settle(scheduler)
    looked(clock, scheduler)
    (record,) = scheduler.task(task.id).history
    assert record.finished == T0 + 180
    assert scheduler.task(task.id).next_run_at == T0 + 180 + 600


class FinishHeld(JumpingClock):
    """A JumpingClock on which the run's finish, read on ``runner`` once ``armed``, is
    followed, before the runner can record it, by a backward jump of ``jump`` seconds
    and the timer's look at it (the instants between a worker's finish and its taking
    the scheduler's lock)."""

    def __init__(self, start: float, jump: float) -> None:
        super().__init__(start)
        self.set_back = jump
        self.runner: threading.Thread | None = None
        self.armed = threading.Event()
        self.held = threading.Event()

    def now(self) -> float:
        value = super().now()
        if self.armed.is_set() and self.runner is threading.current_thread():
            self.armed.clear()
            if self.set_back:
                self.jump(self.set_back, wake=False)
            self.parked.clear()
            self._notify_all()  # the timer looks, sees the jump, the run not recorded yet
            assert self.parked.wait(5)
            self.held.set()
        return value


@pytest.mark.parametrize("jumped", ["after its finish", "before its finish"])
@pytest.mark.parametrize("where", ["thread", "coroutine"])
@pytest.mark.parametrize(
    ("schedule", "next_due"),
    [(FixedDelay(600), 30 - 600 + 600), (FixedRate(60), -600 + 60)],
    ids=["delay", "rate"],
)
def test_a_finish_read_before_a_jump_the_timer_saw_before_it_was_recorded_is_moved_once(
    make_scheduler: SchedulerFactory, schedule: Schedule, next_due: float, where: str, jumped: str
) -> None:
    # The run reads its finish at T0 + 30 s; the clock is set back 10 minutes and the
    # timer looks (the run in flight for the core) before the worker records the run.
    # Before: the finish was read on the clock from before the jump, the look had
    # moved nothing of a task in flight (a fixed rate's slot only), so a fixed delay
    # counted from the old clock (10 minutes late) and a fixed rate's finish, ten
    # minutes past its moved slots, skipped ten of them and waited out the jump.  Now
    # the finish is read as the moved clock reads it, as a finish read after the jump.
    # A finish read after the jump, the timer looking before it is recorded, moves once
    # too (the look leaves a task in flight where it is; docs/DECISIONS.md said twice).
    clock = FinishHeld(T0, jump=-600 if jumped == "after its finish" else 0.0)
    started, release = threading.Event(), threading.Event()

    def job() -> None:
        clock.runner = threading.current_thread()
        started.set()
        assert release.wait(5)

    async def coroutine_job() -> None:
        clock.runner = threading.current_thread()
        started.set()
        while not release.is_set():  # the loop's thread: no blocking wait on it
            await asyncio.sleep(0.001)

    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("job", job if where == "thread" else coroutine_job, schedule)
    assert started.wait(5) and clock.parked.wait(5)  # the timer looked at T0 and parked
    clock.elapse(30)
    if jumped == "before its finish":
        clock.jump(-600, wake=False)
    clock.armed.set()
    release.set()
    settle(scheduler)
    assert clock.held.is_set()
    looked(clock, scheduler)
    (record,) = scheduler.task(task.id).history  # no slot skipped
    assert (record.slot, record.started, record.finished) == (T0, T0 - 570, T0 - 570)
    assert scheduler.task(task.id).next_run_at == T0 + next_due


def test_a_fixed_rate_run_in_flight_keeps_its_overrun_across_a_backward_jump(
    make_scheduler: SchedulerFactory,
) -> None:
    # The run outlasts three of its slots and the clock is set back an hour meanwhile:
    # the slots it outlasted are read on the moved grid, skipped (recorded), and the
    # next is the first slot of the moved grid not before the finish.
    clock = JumpingClock(T0)
    scheduler, task, release = _in_flight(make_scheduler, clock, FixedRate(60))
    clock.jump(-HOUR, wake=False)
    clock.advance(150)  # three slots (60, 120, 150 s later on the moved grid) go by...
    release.set()  # ...while the run goes on
    settle(scheduler)
    looked(clock, scheduler)
    assert [(r.outcome.value, r.slot - T0) for r in scheduler.task(task.id).history] == [
        ("ok", 0.0), ("skipped", -HOUR + 60), ("skipped", -HOUR + 120),
    ]  # fmt: skip
    assert scheduler.task(task.id).next_run_at == T0 - HOUR + 180


@pytest.mark.parametrize("overlap", [Overlap.ALLOW, Overlap.CANCEL_OTHER])
def test_an_overlapping_fixed_rate_set_back_while_its_run_goes_on_queues_its_slot_on_the_moved_grid(
    make_scheduler: SchedulerFactory, overlap: Overlap
) -> None:
    # The run of the slot at T0 queues the next slot (T0 + 60 s) as it begins; the wall
    # clock is set back an hour while it runs.  That queued slot moves back with the
    # clock, as the next slot of a task without an overlap policy does: one period
    # after the slot the run serves on the moved grid.  Before: it stayed at T0 + 60 s,
    # and the task waited out the hour, sixty slots lost without a record.
    clock = JumpingClock(T0)
    started, release = threading.Event(), threading.Event()

    def job() -> None:
        started.set()
        assert release.wait(5)

    scheduler = make_scheduler(clock=clock, workers=2)
    limit = 2 if overlap is Overlap.ALLOW else None
    task = scheduler.schedule("job", job, FixedRate(60), overlap=overlap, max_instances=limit)
    assert started.wait(5)
    clock.parked.clear()
    clock.jump(-HOUR)
    assert clock.parked.wait(5)  # the timer handled the jump, the run still going
    release.set()
    settle(scheduler)
    looked(clock, scheduler)
    assert scheduler.task(task.id).next_run_at == T0 - HOUR + 60
    clock.advance(60)
    settle(scheduler)
    looked(clock, scheduler)
    history = scheduler.task(task.id).history
    assert [(r.outcome.value, r.slot - T0) for r in history] == [
        ("ok", 0.0), ("ok", -HOUR + 60),
    ]  # fmt: skip
    assert scheduler.task(task.id).next_run_at == T0 - HOUR + 120


@pytest.mark.parametrize("overlap", [Overlap.ALLOW, Overlap.CANCEL_OTHER])
@pytest.mark.parametrize(
    ("misfire", "decided"),
    [
        (None, [("coalesced", 1.0), ("coalesced", 2.0), ("ok", 3.0)]),
        (SKIP, [("missed", 1.0), ("missed", 2.0), ("missed", 3.0)]),
    ],
    ids=["run-once", "skip"],
)
def test_a_forward_jump_meets_the_misfire_policy_of_a_slot_queued_behind_a_run_in_flight(
    make_scheduler: SchedulerFactory,
    overlap: Overlap,
    misfire: MisfirePolicy | None,
    decided: list[tuple[str, float]],
) -> None:
    # The run of the slot at T0 queues the next slot (T0 + 1 h) as it begins; the wall
    # clock jumps 3.5 h ahead while it runs.  That queued slot and the two after it
    # passed while nobody ran them: the task's misfire policy decides them, as for a
    # task with no run in flight.  Before: the queued slot ran 2.5 h late beside the
    # run, and the two after it were recorded skipped whatever the policy said.
    clock = JumpingClock(T0)
    started, release, later = threading.Event(), threading.Event(), threading.Event()

    def job() -> None:
        if started.is_set():  # a run after T0's: it ends at once
            later.set()
            return
        started.set()
        assert release.wait(5)

    scheduler = make_scheduler(clock=clock, workers=2)
    limit = 2 if overlap is Overlap.ALLOW else None
    task = scheduler.schedule(
        "job", job, FixedRate(HOUR), overlap=overlap, max_instances=limit, misfire=misfire
    )
    assert started.wait(5) and clock.parked.wait(5)  # the timer parked, T0 + 1 h queued
    clock.parked.clear()
    clock.jump(3.5 * HOUR)
    assert clock.parked.wait(5)  # the timer handled the jump, the run still going
    if misfire is None:
        assert later.wait(5)  # the slot it runs began beside the run of T0
    release.set()
    settle(scheduler)
    looked(clock, scheduler)
    ran = "cancelled" if overlap is Overlap.CANCEL_OTHER and misfire is None else "ok"
    assert sorted(outcomes(scheduler, "job"), key=lambda o: o[1]) == [(ran, 0.0), *decided]
    assert scheduler.task(task.id).next_run_at == T0 + 4 * HOUR


def test_a_fake_clock_moving_is_never_taken_for_a_jump(make_scheduler: SchedulerFactory) -> None:
    clock = FakeClock(T0)
    scheduler = make_scheduler(clock=clock)
    scheduler.schedule("skip", jobs.note, FixedRate(HOUR, start_delay=HOUR), args=("skip",),
                       misfire=SKIP)  # fmt: skip
    settle(scheduler)
    clock.advance(3.5 * HOUR)
    settle(scheduler)
    assert calls("skip") == [1.0]  # an ordinary late run: FixedRate SKIP then goes to 13:00


def test_a_simulation_restores_a_store_and_models_its_restored_tasks() -> None:
    store = InMemoryTaskStore()
    Simulation(start=T0, store=store).schedule("job", FixedRate(HOUR, start_delay=HOUR))
    sim = Simulation(start=T0 + 0.5 * HOUR, store=store)
    (task,) = sim.tasks()
    sim.model(task.id, duration=120.0)
    sim.run(T0 + 1.5 * HOUR)
    (run,) = sim.records()
    assert (run.slot, run.duration) == (T0 + HOUR, 120.0)
    with pytest.raises(TaskNotFoundError):
        sim.model("task-99", duration=1.0)


def test_last_look_tells_a_finish_read_before_a_backward_jump_it_saw() -> None:
    mono = [0.0]
    look = LastLook(lambda: mono[0])
    assert not look.read_before_set_back(T0 + 1e9)  # no look yet: nothing is ahead
    look.took(T0, 0.0)
    mono[0] = 30.0
    finished = T0 + 30  # read before the jump
    assert look.look(T0 + 30 - 600, 30.0) == -600 and look.set_back_by == -600
    assert look.read_before_set_back(finished) and not look.set_back_since(finished)
    assert not look.read_before_set_back(T0 + 30 - 600)  # read after it: as the clock reads
    assert look.look(T0 + 40 - 600, 40.0) == 0.0 and look.set_back_by == -600  # kept
    assert not LastLook(None).read_before_set_back(T0)  # a clock with no monotonic()


def test_a_restored_task_with_runs_behind_it_runs_its_next_slot_once() -> None:
    # Ran at 09:00 and stopped; back at 10:00, the 10:00 slot is its own (not the old
    # run's 09:00 again): it runs once, recorded for 10:00, and 11:00 is next.
    store = InMemoryTaskStore()
    writer = Scheduler(clock=FakeClock(T0), store=store)
    task = writer.schedule("job", jobs.note, FixedRate(HOUR), args=("job",))
    ran = ExecutionRecord(task.id, "job", 1, T0, T0, 0, T0, T0 + 1, True)
    store.save(TaskSnapshot(task.definition, TaskStatus.SCHEDULED, T0 + HOUR, 0, 1, 0, None), ran)
    scheduler = Scheduler(clock=FakeClock(T0 + HOUR), store=store).start()
    try:
        settle(scheduler)
        assert calls("job") == [1.0]
        assert outcomes(scheduler, "job") == [("ok", 0.0), ("ok", 1.0)]
        assert scheduler.task(task.id).next_run_at == T0 + 2 * HOUR
    finally:
        assert scheduler.shutdown()


def test_a_restored_retry_belongs_to_the_slot_that_failed_not_to_an_older_run() -> None:
    # 08:00 ran fine, 09:00 failed and its retry is due at 09:00:02 when the process stops.
    store = InMemoryTaskStore()
    writer = Scheduler(clock=FakeClock(T0), store=store)
    task = writer.schedule("job", jobs.note, FixedRate(HOUR), args=("job",))
    earlier = T0 - HOUR
    ran = ExecutionRecord(task.id, "job", 1, earlier, earlier, 0, earlier, earlier + 1, True)
    failed = ExecutionRecord(task.id, "job", 1, T0, T0, 0, T0, T0 + 1, False, "RuntimeError")
    store.save(TaskSnapshot(task.definition, TaskStatus.SCHEDULED, T0, 0, 1, 0, None), ran)
    store.save(TaskSnapshot(task.definition, TaskStatus.RETRYING, T0 + 2, 1, 2, 1, "x"), failed)
    scheduler = Scheduler(clock=FakeClock(T0 + 30), store=store).start()
    try:
        settle(scheduler)
        assert [(due - T0, attempt) for _, due, attempt in jobs.CALLS] == [(2.0, 2)]
        # The retry's record is 09:00's, and no slot is recorded twice or skipped.
        assert outcomes(scheduler, "job") == [("ok", -1.0), ("failed", 0.0), ("ok", 0.0)]
        assert scheduler.task(task.id).next_run_at == T0 + HOUR
    finally:
        assert scheduler.shutdown()


def test_a_task_that_never_ran_is_stored_and_restored_with_no_runs_and_no_failures() -> None:
    store = InMemoryTaskStore()
    writer = Scheduler(clock=FakeClock(T0), store=store)
    task = writer.schedule("later", jobs.noop, FixedRate(HOUR, start_delay=HOUR))
    (snapshot,) = store.load_all()
    assert (snapshot.run_count, snapshot.failure_count, snapshot.last_error) == (0, 0, None)
    restored = Scheduler(clock=FakeClock(T0), store=store).task(task.id)
    assert (restored.run_count, restored.failure_count, restored.last_error) == (0, 0, None)


def test_a_forward_jump_leaves_a_fixed_rate_run_in_flight_on_its_grid() -> None:
    # The wall clock jumps ahead 3630 s (not a whole number of periods) while the run of
    # the slot at T0 goes on: the slots it outlasted are its overrun's, skipped on the
    # task's own grid, and its next slot is on that grid, not moved by the jump.
    clock = JumpingClock(T0)
    h = Harness(clock)
    task = h.core.add("rate", jobs.noop, FixedRate(60))
    run = h.begin()
    clock.jump(3630)
    after_clock_jump(h.core, 3630, clock.now())
    h.core.finish(run, T0, clock.now(), None)
    assert task.next_run_at == T0 + 3660
    skipped = [r.slot - T0 for r in task.history if r.outcome is Outcome.SKIPPED]
    assert skipped[:2] == [60, 120]


def test_a_forward_jump_catches_up_every_slot_queued_behind_a_run_in_flight_under_run_all() -> None:
    # RUN_ALL behind a run in flight: the slot queued behind it runs first, beside it, and
    # the plan's later slots after the last run out, as a plan in front of the schedule
    # does (overlapping.py); none is recorded skipped.
    clock = JumpingClock(T0)
    h = Harness(clock)
    task = h.core.add("rate", jobs.noop, FixedRate(HOUR), overlap=Overlap.ALLOW,
                      max_instances=2, misfire=RUN_ALL)  # fmt: skip
    run = h.begin()  # the slot at T0, T0 + 1 h queued behind it
    clock.jump(3.5 * HOUR)
    after_clock_jump(h.core, 3.5 * HOUR, clock.now())
    beside = h.begin()  # the slot at T0 + 1 h, beside the run of T0
    h.core.finish(beside, clock.now(), clock.now(), None)
    h.core.finish(run, T0, clock.now(), None)
    for _ in range(2):
        h.step()
    assert [(r.outcome.value, (r.slot - T0) / HOUR) for r in task.history] == [
        ("ok", 1.0), ("ok", 0.0), ("ok", 2.0), ("ok", 3.0),
    ]  # fmt: skip
    assert task.next_run_at == T0 + 4 * HOUR


@pytest.mark.parametrize("overlap", [Overlap.ALLOW, Overlap.CANCEL_OTHER])
def test_a_forward_jump_past_the_end_of_a_schedule_leaves_the_run_in_flight_to_end_it(
    overlap: Overlap,
) -> None:
    # SKIP, the window closing before the clock lands: every slot behind the run is
    # missed and none is left.  The run in flight goes on (it is not cancelled, as a
    # task with nothing in flight is) and its end ends the task.
    clock = JumpingClock(T0)
    h = Harness(clock)
    limit = 2 if overlap is Overlap.ALLOW else None
    task = h.core.add("rate", jobs.noop, Window(FixedRate(HOUR), end=T0 + 3 * HOUR),
                      overlap=overlap, max_instances=limit, misfire=SKIP)  # fmt: skip
    run = h.begin()  # the slot at T0, T0 + 1 h queued behind it
    clock.jump(3.5 * HOUR)
    after_clock_jump(h.core, 3.5 * HOUR, clock.now())
    assert task.status is TaskStatus.RUNNING and h.queue.pending() == []
    assert run.context is None or not run.context.cancelled
    h.core.finish(run, T0, clock.now(), None)
    assert task.status is TaskStatus.SUCCEEDED
    assert [(r.outcome.value, (r.slot - T0) / HOUR) for r in task.history] == [
        ("missed", 1.0), ("missed", 2.0), ("missed", 3.0), ("ok", 0.0),
    ]  # fmt: skip


@pytest.mark.parametrize("overlap", [Overlap.ALLOW, Overlap.CANCEL_OTHER])
def test_a_slot_dropped_behind_a_run_in_flight_is_written_through_the_store_at_once(
    overlap: Overlap,
) -> None:
    # As above: SKIP, the window closed before the clock lands, the slot queued behind the
    # run of T0 is dropped.  The row says so at once: due at the run in flight, as for an
    # overlapping task whose schedule ended as its run began.  It kept the dropped slot
    # (T0 + 1 h, recorded missed) until the run ended, and a restart meanwhile ran that
    # slot.  Restarted now, the run of T0, never recorded, runs again (at least once: the
    # rule for a run in flight at a crash); no slot recorded missed runs, and the task ends.
    clock = JumpingClock(T0)
    store = InMemoryTaskStore()
    h = Harness(clock, store=store)
    limit = 2 if overlap is Overlap.ALLOW else None
    task = h.core.add("rate", jobs.noop, Window(FixedRate(HOUR), end=T0 + 3 * HOUR),
                      overlap=overlap, max_instances=limit, misfire=SKIP)  # fmt: skip
    h.begin()  # the slot at T0, T0 + 1 h queued behind it
    clock.jump(3.5 * HOUR)
    after_clock_jump(h.core, 3.5 * HOUR, clock.now())
    (row,) = store.load_all()
    assert (row.status, row.next_run_at, row.running) == (TaskStatus.RUNNING, T0, True)
    assert task.next_run_at == T0
    sim = Simulation(start=clock.now(), store=store)  # the process died with the run going
    sim.run(clock.now() + 2 * HOUR)
    assert [(r.outcome.value, (r.slot - T0) / HOUR) for r in store.records(task.id)] == [
        ("missed", 1.0), ("missed", 2.0), ("missed", 3.0), ("ok", 0.0),
    ]  # fmt: skip
    assert sim.task(task.id).status is TaskStatus.SUCCEEDED


def test_an_overlapping_task_paused_mid_run_and_set_back_resumes_at_its_moved_slot() -> None:
    clock = JumpingClock(T0)
    h = Harness(clock)
    task = h.core.add("rate", jobs.noop, FixedRate(60), overlap=Overlap.ALLOW, max_instances=2)
    run = h.begin()  # the slot at T0, T0 + 60 queued behind it
    assert h.core.pause(task.id) is True
    clock.jump(-HOUR)
    after_clock_jump(h.core, -HOUR, clock.now())
    assert task.status is TaskStatus.PAUSED and task.next_run_at == T0 - HOUR + 60
    assert h.core.resume(task.id) is True
    assert task.next_run_at == T0 - HOUR + 60
    h.core.finish(run, T0 - HOUR, clock.now(), None)
    assert task.next_run_at == T0 - HOUR + 60


def test_a_restore_at_the_instant_of_a_slot_runs_that_slot_and_coalesces_those_before() -> None:
    # The default misfire policy runs the latest slot that passed: a slot due at the
    # very instant of the restore is one of them, and the latest.
    store = InMemoryTaskStore()
    Simulation(start=T0, store=store).schedule("job", FixedRate(HOUR, start_delay=HOUR))
    sim = Simulation(start=T0 + 3 * HOUR, store=store)
    sim.run(T0 + 3 * HOUR)
    assert [(r.slot - T0, r.started - T0, r.outcome.value) for r in sim.records()] == [
        (HOUR, 3 * HOUR, "coalesced"), (2 * HOUR, 3 * HOUR, "coalesced"),
        (3 * HOUR, 3 * HOUR, "ok"),
    ]  # fmt: skip
    assert sim.tasks()[0].next_run_at == T0 + 4 * HOUR


def test_a_restored_task_has_its_stored_history_back() -> None:
    store = InMemoryTaskStore()
    first = Simulation(start=T0, store=store)
    task = first.schedule("job", FixedRate(60), duration=1)
    first.run(T0 + 150)
    ran = task.history
    assert len(ran) == 3
    restored = Simulation(start=T0 + 150, store=store).task(task.id)
    assert restored.history == ran


def test_a_restored_dead_letter_keeps_its_order_of_failure_not_of_registration() -> None:
    store = InMemoryTaskStore()
    first = Simulation(start=T0, store=store)
    once = RetryPolicy(max_attempts=1)
    late = first.schedule("late", OneTime(delay=20), fails=1.0, retry=once)
    early = first.schedule("early", OneTime(delay=10), fails=1.0, retry=once)
    first.run(T0 + 30)
    assert first.dead_letter() == [early.id, late.id]
    assert Simulation(start=T0 + 30, store=store).dead_letter() == [early.id, late.id]


def test_the_one_run_a_restore_decides_records_the_slots_it_outlasts_skipped() -> None:
    # RUN_ONCE after downtime: one run, for the latest slot that passed; it runs 150 s,
    # and the slots it outlasts are skipped with a record, as after any overrun.
    store = InMemoryTaskStore()
    Simulation(start=T0, store=store).schedule("job", FixedRate(60, start_delay=60))
    sim = Simulation(start=T0 + 200, store=store)
    (task,) = sim.tasks()
    sim.model(task.id, duration=150.0)
    sim.run(T0 + 400)
    assert [(r.slot - T0, r.started - T0, r.outcome.value) for r in sim.records()] == [
        (60, 200, "coalesced"), (120, 200, "coalesced"), (180, 200, "ok"),
        (240, 350, "skipped"), (300, 350, "skipped"),
    ]  # fmt: skip
    assert task.next_run_at == T0 + 360


def test_a_retry_of_a_cron_task_moves_back_with_the_clock() -> None:
    # A retry's backoff is elapsed time, whatever the schedule: set back with the clock,
    # while the cron slots themselves stay where they are.
    clock = JumpingClock(T0)
    h = Harness(clock)
    task = h.core.add("cron", jobs.noop, CronSchedule("0 * * * *"),
                      retry=RetryPolicy(max_attempts=3, initial_backoff=30))  # fmt: skip
    failed = h.step(duration=5, error="ValueError: boom")
    assert failed is not None and task.status is TaskStatus.RETRYING
    due = task.next_run_at
    assert due == failed.finished + 30
    clock.jump(-HOUR)
    after_clock_jump(h.core, -HOUR, clock.now())
    assert task.next_run_at == due - HOUR


def test_a_paused_task_stays_paused_and_unqueued_when_the_clock_is_set_back() -> None:
    clock = JumpingClock(T0)
    h = Harness(clock)
    task = h.core.add("rate", jobs.noop, FixedRate(60, start_delay=60))
    assert h.core.pause(task.id) is True
    clock.jump(-HOUR)
    after_clock_jump(h.core, -HOUR, clock.now())
    assert task.status is TaskStatus.PAUSED and h.queue.pending() == []


def test_a_paused_task_set_back_resumes_at_its_moved_due_instant_not_an_hour_later() -> None:
    # A fixed rate paused a minute before its slot, the clock set back an hour: its due
    # instant moves back with the clock, as a queued one's does, so resume() queues it a
    # minute on; before, it kept T0 + 60 and the resumed task waited out the hour.  A
    # cron task's instant is calendar time: it stays.  A paused retry's backoff moves.
    clock = JumpingClock(T0)
    h = Harness(clock)
    rate = h.core.add("rate", jobs.noop, FixedRate(60, start_delay=60))
    cron = h.core.add("cron", jobs.noop, CronSchedule("0 * * * *"))
    cron_due = cron.next_run_at
    for task in (rate, cron):
        assert h.core.pause(task.id) is True
    clock.jump(-HOUR)
    after_clock_jump(h.core, -HOUR, clock.now())
    assert (rate.status, rate.next_run_at) == (TaskStatus.PAUSED, T0 - HOUR + 60)
    assert (cron.status, cron.next_run_at) == (TaskStatus.PAUSED, cron_due)
    assert h.queue.pending() == []
    assert h.core.resume(rate.id) is True
    assert rate.next_run_at == T0 - HOUR + 60
    assert [task.id for task in h.queue.pending()] == [rate.id]


def test_a_paused_retry_set_back_keeps_its_backoff_from_the_moved_clock() -> None:
    clock = JumpingClock(T0)
    h = Harness(clock)
    task = h.core.add("cron", jobs.noop, CronSchedule("0 * * * *"),
                      retry=RetryPolicy(max_attempts=3, initial_backoff=30))  # fmt: skip
    failed = h.step(duration=5, error="ValueError: boom")
    assert failed is not None and task.status is TaskStatus.RETRYING
    due = task.next_run_at
    assert due is not None
    assert h.core.pause(task.id) is True
    clock.jump(-HOUR)
    after_clock_jump(h.core, -HOUR, clock.now())
    assert (task.status, task.next_run_at) == (TaskStatus.PAUSED, due - HOUR)
    assert h.core.resume(task.id) is True
    assert (task.status, task.next_run_at) == (TaskStatus.RETRYING, due - HOUR)


def test_a_run_now_set_back_before_it_ran_is_followed_by_its_waited_slot_moved_too() -> None:
    # run_now at T0 + 20 s queues an extra run; the slot the task waited for (T0 + 60 s)
    # runs after it.  The clock is set back an hour before the extra run: both move back
    # with it, so the waited slot still comes 40 s after the extra run, not an hour late.
    clock = JumpingClock(T0)
    h = Harness(clock)
    task = h.core.add("rate", jobs.noop, FixedRate(60))
    h.step()  # the slot at T0
    clock.advance(20)
    assert h.core.run_now(task.id) is True
    clock.jump(-HOUR)
    after_clock_jump(h.core, -HOUR, clock.now())
    assert task.next_run_at == T0 + 20 - HOUR
    h.step()  # the extra run
    assert task.next_run_at == T0 + 60 - HOUR
    h.step()  # the slot it waited for, then the grid goes on
    assert [r.slot - T0 for r in task.history] == [0, 20 - HOUR, 60 - HOUR]
    assert task.next_run_at == T0 + 120 - HOUR


@pytest.mark.parametrize("set_back_during", ["the first", "the last"])
def test_a_catch_up_set_back_mid_run_goes_on_and_hands_over_on_the_moved_grid(
    set_back_during: str,
) -> None:
    # A fixed rate slept through its slots at T0 + 60 s and + 120 s (a forward jump);
    # RUN_ALL catches them up.  The clock is set back an hour while a catch-up run goes
    # on: the catch-up slot still to come moves back with the clock, and after the last
    # the grid goes on one period later, nothing skipped (the record of the run in
    # flight is read as moved, once).
    clock = JumpingClock(T0)
    h = Harness(clock)
    task = h.core.add("rate", jobs.noop, FixedRate(60), misfire=RUN_ALL)
    h.step()  # the slot at T0
    clock.jump(150)
    after_clock_jump(h.core, 150, clock.now())
    if set_back_during == "the last":
        h.step()  # the catch-up of T0 + 60 s
    run = h.begin()
    clock.jump(-HOUR)
    after_clock_jump(h.core, -HOUR, clock.now())
    h.core.finish(run, clock.now(), clock.now(), None)
    if set_back_during == "the first":
        assert task.next_run_at == T0 + 120 - HOUR  # the second catch-up slot, moved
        h.step()
    moved = -HOUR if set_back_during == "the first" else 0
    assert [(r.outcome.value, r.slot - T0) for r in task.history] == [
        ("ok", 0), ("ok", 60), ("ok", 120 + moved),
    ]  # fmt: skip
    assert task.next_run_at == T0 + 180 - HOUR


def test_the_run_after_one_set_back_in_flight_still_skips_the_slots_it_outlasts() -> None:
    # The clock is set back an hour while the run of T0 goes on; the next run (one
    # period later on the moved grid) outlasts two slots: they are recorded skipped, as
    # any fixed rate's run that outlasts its period skips them.
    clock = JumpingClock(T0)
    h = Harness(clock)
    task = h.core.add("rate", jobs.noop, FixedRate(60))
    run = h.begin()
    clock.jump(-HOUR)
    after_clock_jump(h.core, -HOUR, clock.now())
    h.core.finish(run, clock.now(), clock.now(), None)
    assert task.next_run_at == T0 + 60 - HOUR
    h.step(duration=150)
    assert [(r.outcome.value, r.slot - T0) for r in task.history] == [
        ("ok", 0), ("ok", 60 - HOUR), ("skipped", 120 - HOUR), ("skipped", 180 - HOUR),
    ]  # fmt: skip
    assert task.next_run_at == T0 + 240 - HOUR


def test_a_catch_up_stores_the_slot_it_hands_out_next_behind_the_run_due() -> None:
    # RUN_ALL owes the slots at T0 + 60, 120 and 180 s.  Due at each, the store keeps the
    # slot that comes next (TaskSnapshot.waited: what a restart, or another process
    # sharing the store, goes on to), until the last hands the task back to its grid.
    clock = FakeClock(T0)
    store = InMemoryTaskStore()
    h = Harness(clock, store=store)
    h.core.add("rate", jobs.noop, FixedRate(60), misfire=RUN_ALL)
    h.step()  # the slot at T0
    clock.advance(210)
    after_clock_jump(h.core, 210, clock.now())
    stored: list[tuple[float | None, float | None]] = []
    for _ in range(3):
        (snapshot,) = store.load_all()
        due, waited = snapshot.next_run_at, snapshot.waited
        stored.append((due and due - T0, waited and waited - T0))
        h.step()
    assert stored == [(60, 120), (120, 180), (180, None)]


@pytest.mark.parametrize("restart", [False, True])
def test_a_task_paused_mid_catch_up_runs_every_slot_of_its_plan_restarted_or_not(
    tmp_path: Path, restart: bool
) -> None:
    # First due 01:00, down until 06:30: RUN_ALL catches up 01:00 to 06:00, a minute a
    # run.  Paused while 02:00 runs, its plan holds 03:00 to 06:00; the store keeps only
    # 03:00 and the slot behind it (04:00).  Restarted or not, resume runs the paused slot
    # (03:00) at once, then 04:00, 05:00 and 06:00; 07:00 is next.
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        task = Simulation(start=T0, store=store).schedule(
            "job", FixedRate(HOUR, start_delay=HOUR), misfire=RUN_ALL
        )
    store = SqliteTaskStore(path)
    try:
        sim = Simulation(start=T0 + 6.5 * HOUR, store=store)
        sim.model(task.id, duration=60.0)
        sim.run(T0 + 6.5 * HOUR + 90)  # 01:00 ran, 02:00 runs
        assert sim.pause(task.id)
        sim.run(T0 + 6.5 * HOUR + 200)
        if restart:
            store.close()
            store = SqliteTaskStore(path)
            sim = Simulation(start=T0 + 6.5 * HOUR + 200, store=store)
            sim.model(task.id, duration=60.0)
            assert sim.task(task.id).status is TaskStatus.PAUSED
            assert sim.task(task.id).next_run_at == T0 + 3 * HOUR
        assert sim.resume(task.id)
        sim.run(T0 + 7.5 * HOUR)
        ran = [(r.slot - T0) / HOUR for r in store.records(task.id) if r.outcome.ran]
        assert ran == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]  # the paused slot keeps its slot
        assert not [r for r in store.records(task.id) if not r.outcome.ran]
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize("restarted", ["while 03:00 runs", "while paused"])
def test_a_catch_up_restarted_within_grace_runs_every_slot_of_its_plan(
    tmp_path: Path, kind: str, restarted: str
) -> None:
    # First due 01:00, down until 06:30, four hours of grace: 01:00 is 5.5 h late, and
    # RUN_ALL catches up 01:00 to 06:00, a minute a run.  Restarted at 06:32:30, while
    # 03:00 runs (or paused while 02:00 ran, and resumed after the restart), the store
    # keeps 03:00 and the slot behind it (04:00), only 2.5 h late: within grace, so the
    # restart decides no misfire.  03:00 runs (again), then 04:00, 05:00 and 06:00, and
    # 07:00 is next, as without the restart.  The restart put back only 03:00 and 04:00,
    # and the fixed rate went on from 04:00's run: 05:00 and 06:00 were recorded skipped.
    store = Reopening(kind, tmp_path / "tasks.db")
    paused = restarted == "while paused"
    back = T0 + 6.5 * HOUR
    try:
        task = Simulation(start=T0, store=store()).schedule(
            "job", FixedRate(HOUR, start_delay=HOUR),
            misfire=MisfirePolicy(Misfire.RUN_ALL, grace=4 * HOUR),
        )  # fmt: skip
        sim = Simulation(start=back, store=store())
        sim.model(task.id, duration=60.0)
        sim.run(back + 90)  # 01:00 ran, 02:00 runs
        if paused:
            assert sim.pause(task.id)
        sim.run(back + 150)
        reopened = store()
        sim = Simulation(start=back + 150, store=reopened)
        sim.model(task.id, duration=60.0)
        assert sim.task(task.id).next_run_at == T0 + 3 * HOUR
        if paused:
            assert sim.resume(task.id)
        sim.run(T0 + 7.5 * HOUR)
        records = reopened.records(task.id)
        ran = [(r.slot - T0) / HOUR for r in records if r.outcome.ran]
        assert ran == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
        assert [r for r in records if not r.outcome.ran] == []
    finally:
        store.close()


@pytest.mark.parametrize("restart", [False, True])
def test_a_catch_up_restarted_within_the_default_grace_runs_every_slot_of_its_plan(
    restart: bool,
) -> None:
    # Every 10 s, down until 105 s: RUN_ALL catches up 10 s to 100 s, a second a run.
    # Restarted at 109.5 s, while the 50 s slot runs: 60 s, the slot after it, is within
    # the default minute of grace, and the rest of the plan runs (110 s is skipped by the
    # run of 100 s, which ends at 111 s, restarted or not).  The restart ran 50 s and 60 s,
    # and the fixed rate went on from there: 70 s to 100 s were recorded skipped.
    store = InMemoryTaskStore()
    task = Simulation(start=T0, store=store).schedule(
        "job", FixedRate(10, start_delay=10), misfire=RUN_ALL
    )
    sim = Simulation(start=T0 + 105, store=store)
    sim.model(task.id, duration=1.0)
    if restart:
        sim.run(T0 + 109.5)
        sim = Simulation(start=T0 + 109.5, store=store)
        sim.model(task.id, duration=1.0)
    sim.run(T0 + 125)
    records = [(r.slot - T0, r.outcome) for r in store.records(task.id)]
    ok = [(10.0 * n, Outcome.OK) for n in range(1, 11)]
    assert records == [*ok, (110.0, Outcome.SKIPPED), (120.0, Outcome.OK)]


@pytest.mark.parametrize("restart", [False, True])
def test_a_task_paused_before_a_capped_run_once_catch_up_resumes_at_its_slot_after_the_downtime(
    tmp_path: Path, restart: bool
) -> None:
    # Minutely from 09:01, down until the next day 09:00:30: more than 1,000 slots passed.
    # RUN_ONCE runs the last slot it listed (the 1,000th, 01:40), one record stands for
    # the slots beyond, and the task resumes at 09:01 (the first slot after the downtime).
    # Paused before the catch-up runs, restarted or not, resume runs the catch-up at
    # once and then 09:01, not the minute after the 1,000th slot.
    path = tmp_path / "tasks.db"
    back = T0 + 86400 + 30
    with SqliteTaskStore(path) as store:
        task = Simulation(start=T0, store=store).schedule(
            "job", FixedRate(60, start_delay=60), misfire=MisfirePolicy(Misfire.RUN_ONCE)
        )
    store = SqliteTaskStore(path)
    try:
        sim = Simulation(start=back, store=store)
        assert sim.pause(task.id)
        assert sim.task(task.id).next_run_at == T0 + 60 * 1000
        sim.run(back + 10)
        if restart:
            store.close()
            store = SqliteTaskStore(path)
            sim = Simulation(start=back + 10, store=store)
            assert sim.task(task.id).status is TaskStatus.PAUSED
        assert sim.resume(task.id)
        sim.run(back + 60)
        ran = [r.slot - T0 for r in store.records(task.id) if r.outcome.ran]
        assert ran == [60 * 1000, 86400 + 60]  # the catch-up (its own slot), then 09:01
        decided = [r for r in store.records(task.id) if not r.outcome.ran]
        assert {r.outcome for r in decided} == {Outcome.COALESCED}
        assert decided[-1].slot == T0 + 60 * 1001  # it stands for the slots beyond the cap
        assert decided[-1].error is not None and "more than 1000 slots" in decided[-1].error
    finally:
        store.close()


@pytest.mark.parametrize("restart", [False, True])
def test_a_task_paused_mid_capped_run_all_catch_up_runs_its_plan_restarted_or_not(
    tmp_path: Path, restart: bool
) -> None:
    # Minutely from 09:01, down until the next day 09:00:30: more than 1,000 slots passed.
    # RUN_ALL lists 1,000 of them and runs the last 100 it listed (the 901st to the
    # 1,000th); one record stands for the slots beyond, and the task resumes at 09:01.
    # Paused while the 901st runs, restarted or not, resume runs the paused slot (the
    # 902nd) at once, then the 903rd to the 1,000th.  The catch-up outlasted 09:01 and
    # 09:02: the 1,000th's run skips them, as a fixed rate's run skips the slots it
    # outlasts (recorded, tests/test_catchup_overrun.py), and 09:03 runs.
    path = tmp_path / "tasks.db"
    back = T0 + 86400 + 30
    with SqliteTaskStore(path) as store:
        task = Simulation(start=T0, store=store).schedule(
            "job", FixedRate(60, start_delay=60), misfire=RUN_ALL
        )
    store = SqliteTaskStore(path)
    try:
        sim = Simulation(start=back, store=store)
        sim.model(task.id, duration=1.0)
        sim.run(back + 0.5)  # the 901st runs
        assert sim.pause(task.id)
        sim.run(back + 10)
        if restart:
            store.close()
            store = SqliteTaskStore(path)
            sim = Simulation(start=back + 10, store=store)
            sim.model(task.id, duration=1.0)
            assert sim.task(task.id).status is TaskStatus.PAUSED
        assert sim.resume(task.id)
        sim.run(back + 160)
        records = store.records(task.id)
        ran = [(r.slot - T0) / 60 for r in records if r.outcome.ran]
        assert ran == [*range(901, 1001), 1443]
        skipped = [(r.slot - T0) / 60 for r in records if r.outcome is Outcome.SKIPPED]
        assert skipped == [1441, 1442]
    finally:
        store.close()


@pytest.mark.parametrize("restart", [False, True])
def test_a_task_paused_before_a_capped_plans_last_slot_resumes_as_it_would_unrestarted(
    tmp_path: Path, restart: bool
) -> None:
    # The capped plan of the test above (the 998th to the 1,000th run, then the 1,441st).
    # Paused while the 999th runs, the row keeps the 1,000th and the slot the plan resumes
    # at (the 1,441st, ``resumes``): no slot of the plan comes after it.  Resumed at
    # 09:10:10 (the 1,450th passed), restarted at that instant or not, the 1,000th runs,
    # and the slots slept through from the 1,441st on are skipped, as after any pause;
    # the 1,451st is next.  The restart read the 1,441st as a plan's slot and decided the
    # slots from it again: the 1,441st to the 1,447th missed, the 1,448th to 1,450th ran.
    path = tmp_path / "tasks.db"
    back = T0 + 86400 + 30
    later = T0 + 1450 * 60 + 10
    with SqliteTaskStore(path) as store:
        task = Simulation(start=T0, store=store).schedule(
            "job", FixedRate(60, start_delay=60),
            misfire=MisfirePolicy(Misfire.RUN_ALL, max_catch_up=3),
        )  # fmt: skip
    store = SqliteTaskStore(path)
    try:
        sim = Simulation(start=back, store=store)
        sim.model(task.id, duration=1.0)
        sim.run(back + 1.5)  # the 998th ran, the 999th runs
        assert sim.pause(task.id)
        sim.run(back + 5)
        (row,) = store.load_all()
        assert (row.next_run_at, row.waited, row.resumes) == (_minute(1000), _minute(1441), True)
        if restart:
            store.close()
            store = SqliteTaskStore(path)
            sim = Simulation(start=later, store=store)
            sim.model(task.id, duration=1.0)
        else:
            sim.run(later)
        assert sim.resume(task.id)
        sim.run(later + 60)
        records = store.records(task.id)
        (paused,) = [i for i, r in enumerate(records) if r.slot == _minute(999)]
        after = [((r.slot - T0) / 60, r.outcome) for r in records[paused + 1 :]]
        skipped = [(float(n), Outcome.SKIPPED) for n in range(1441, 1451)]
        assert after == [(1000.0, Outcome.OK), *skipped, (1451.0, Outcome.OK)]
    finally:
        store.close()


@pytest.mark.parametrize("grace", [60.0, 12 * HOUR], ids=["beyond-grace", "within-grace"])
@pytest.mark.parametrize("restart", [False, True])
def test_a_capped_catch_up_runs_its_plan_as_cut_restarted_or_not(
    tmp_path: Path, restart: bool, grace: float
) -> None:
    # Minutely from 09:01, down until the next day 09:00:30: more than 1,000 slots passed.
    # RUN_ALL (max_catch_up=3) runs the 998th to the 1,000th slot; one record stands for
    # the slots beyond the cap, and the task resumes at 09:01 (the 1,441st).  Restarted
    # while the 999th runs, the 999th runs again (at least once), then the 1,000th and
    # the 1,441st, as without the restart.  The restart decided the plan again from the
    # 999th: it ran the 1,438th to the 1,440th (which the cap's record stood for) instead
    # of the 1,000th, and recorded the 1,002nd to the 1,437th missed a second time.
    # With twelve hours of grace the 1,000th (7.3 h late) is within it, and the restart
    # decides no misfire: it put back only the 999th and the 1,000th, and the fixed rate
    # went on from the 1,000th's run, recording skipped the slots the cap's record stood for.
    path = tmp_path / "tasks.db"
    back = T0 + 86400 + 30
    policy = MisfirePolicy(Misfire.RUN_ALL, max_catch_up=3, grace=grace)
    with SqliteTaskStore(path) as store:
        task = Simulation(start=T0, store=store).schedule(
            "job", FixedRate(60, start_delay=60), misfire=policy
        )
    store = SqliteTaskStore(path)
    try:
        sim = Simulation(start=back, store=store)
        sim.model(task.id, duration=1.0)
        sim.run(back + 1.5)  # the 998th ran, the 999th runs
        if restart:
            store.close()
            store = SqliteTaskStore(path)
            sim = Simulation(start=back + 10, store=store)
            sim.model(task.id, duration=1.0)
        sim.run(back + 90)
        records = store.records(task.id)
        ran = [(r.slot - T0) / 60 for r in records if r.outcome.ran]
        assert ran == [998, 999, 1000, 1441]
        decided = [(r.slot - T0) / 60 for r in records if not r.outcome.ran]
        assert decided[-2:] == [997, 1001]  # the cap's record last, as it was decided
        assert not [r for r in records if r.outcome is Outcome.SKIPPED]
    finally:
        store.close()


def test_a_forward_jump_during_a_capped_catch_up_runs_its_plan_as_cut() -> None:
    # As above, in one process that stays up: the wall clock jumps a day (the plan cut
    # at the cap: the 998th to the 1,000th run, then the 1,441st), and again by 10 s
    # once the 998th ran.  The second jump finds the 999th passed: the plan goes on as it
    # was cut.  It was decided again from the 999th: the 1,438th to the 1,440th ran.
    clock = JumpingClock(T0)
    h = Harness(clock)
    task = h.core.add("job", jobs.noop, FixedRate(60, start_delay=60),
                      misfire=MisfirePolicy(Misfire.RUN_ALL, max_catch_up=3))  # fmt: skip
    clock.jump(86400 + 30)
    after_clock_jump(h.core, 86400 + 30, clock.now())
    h.step()  # the 998th
    assert task.next_run_at == T0 + 999 * 60
    clock.jump(10)
    after_clock_jump(h.core, 10, clock.now())
    for _ in range(3):
        h.step()
    ran = [(r.slot - T0) / 60 for r in task.history if r.outcome.ran]
    assert ran == [998, 999, 1000, 1441]
    assert task.next_run_at == T0 + 1442 * 60


def _minute(n: int) -> float:
    """The ``n``-th slot of a minutely fixed rate from 09:01 (09:01 is the first)."""
    return T0 + 60.0 * n


def _went_on_as_cut(records: Sequence[ExecutionRecord], on_misfire: Misfire) -> None:
    """``records`` say the 1,000th slot's retry ran, and only the 1,006th on met the
    policy (the cap's record stood for the 1,001st to the 1,005th): each slot decided
    once."""
    (failed,) = [i for i, r in enumerate(records) if r.outcome is Outcome.FAILED]
    after = [((r.slot - T0) / 60, r.outcome.value) for r in records[failed:]]
    if on_misfire is Misfire.RUN_ONCE:
        assert after == [
            (1000, "failed"), (1006, "coalesced"), (1007, "coalesced"), (1000, "ok"),
            (1008, "ok"),
        ]  # fmt: skip
    else:
        assert after == [(1000, "failed"), (1000, "ok"), (1006, "ok"), (1007, "ok"), (1008, "ok")]
    decided = [r.slot for r in records if not r.outcome.ran]
    assert len(decided) == len(set(decided))


@pytest.mark.parametrize("on_misfire", [Misfire.RUN_ONCE, Misfire.RUN_ALL])
def test_a_capped_plans_last_slot_retried_after_a_restart_beyond_grace_goes_on_as_cut(
    tmp_path: Path, on_misfire: Misfire
) -> None:
    # Minutely from 09:01, down until 10 s after the 1,005th slot: more than 1,000 slots
    # passed.  The plan (RUN_ONCE, or RUN_ALL with max_catch_up=3) ends at the 1,000th
    # slot, one record (at the 1,001st) stands for the 1,001st to the 1,005th, and the task
    # resumes at the 1,006th.  The 1,000th's first attempt fails; the process stops before
    # its retry, and one restarted 10 s after the 1,008th (beyond grace) runs the retry,
    # then decides the slots from the 1,006th on: only those passed since the plan.  It
    # decided them again from the 1,001st (the slot after the retry's): the cap's record,
    # at that very slot, was not found, and the 1,002nd to the 1,005th were decided twice.
    path = tmp_path / "tasks.db"
    policy = MisfirePolicy(on_misfire, max_catch_up=3)
    with SqliteTaskStore(path) as store:
        task = Simulation(start=T0, store=store).schedule(
            "job", FixedRate(60, start_delay=60), misfire=policy,
            retry=RetryPolicy(3, initial_backoff=30),
        )  # fmt: skip
    calls: list[int] = []

    def fails(rng: object, attempt: int) -> bool:
        """The 1,000th slot's first attempt (the plan's last run) fails."""
        calls.append(attempt)
        return len(calls) == (1 if on_misfire is Misfire.RUN_ONCE else 3)

    with SqliteTaskStore(path) as store:
        first = Simulation(start=_minute(1005) + 10, store=store)
        first.model(task.id, fails=fails)
        first.run(_minute(1005) + 11)
        assert first.task(task.id).status is TaskStatus.RETRYING
    with SqliteTaskStore(path) as store:
        sim = Simulation(start=_minute(1008) + 10, store=store)
        sim.run(_minute(1008) + 11)
        records = store.records(task.id)
    (cap,) = [r for r in records if r.error is not None and "more than 1000" in r.error]
    assert cap.slot == _minute(1001)
    _went_on_as_cut(records, on_misfire)


@pytest.mark.parametrize("on_misfire", [Misfire.RUN_ONCE, Misfire.RUN_ALL])
def test_a_capped_plans_last_slot_retried_after_a_forward_jump_goes_on_as_cut(
    on_misfire: Misfire,
) -> None:
    # As above, in one process that stays up: the wall clock jumps to 10 s after the
    # 1,005th slot (the plan cut at the cap), the 1,000th's first attempt fails, and the
    # clock jumps again, to 10 s after the 1,008th, before its retry.  The retry runs,
    # then the slots from the 1,006th on meet the policy, as after a restart.
    clock = JumpingClock(T0)
    h = Harness(clock)
    task = h.core.add(
        "job", jobs.noop, FixedRate(60, start_delay=60),
        misfire=MisfirePolicy(on_misfire, max_catch_up=3),
        retry=RetryPolicy(3, initial_backoff=30, jitter=0.0),
    )  # fmt: skip
    clock.jump(_minute(1005) + 10 - T0)
    after_clock_jump(h.core, _minute(1005) + 10 - T0, clock.now())
    if on_misfire is Misfire.RUN_ALL:
        h.step()  # the 998th
        h.step()  # the 999th
    h.step(error="boom")  # the 1,000th's first attempt
    assert task.status is TaskStatus.RETRYING
    jump = _minute(1008) + 10 - clock.now()
    clock.jump(jump)
    after_clock_jump(h.core, jump, clock.now())
    while (record := h.step()) is not None and record.slot < _minute(1008):
        pass
    _went_on_as_cut(task.history, on_misfire)


def test_a_capped_plans_last_slot_in_flight_at_a_crash_runs_again_and_goes_on_as_cut(
    tmp_path: Path,
) -> None:
    # As above (RUN_ONCE), but the 1,000th's first attempt is in flight when the process
    # dies: the restart 10 s after the 1,008th runs that attempt again, then decides the
    # slots from the 1,006th on, not from the 1,001st (the cap's record's slot).
    clock = JumpingClock(T0)
    store = SqliteTaskStore(tmp_path / "tasks.db")
    h = Harness(clock, store=store)
    task = h.core.add("job", jobs.noop, FixedRate(60, start_delay=60),
                      misfire=MisfirePolicy(Misfire.RUN_ONCE))  # fmt: skip
    clock.jump(_minute(1005) + 10 - T0)
    after_clock_jump(h.core, _minute(1005) + 10 - T0, clock.now())
    h.begin()  # the 1,000th: in flight when the process dies
    store.close()
    clock.jump(_minute(1008) + 10 - clock.now())
    store = SqliteTaskStore(tmp_path / "tasks.db")
    try:
        again = Harness(clock, store=store)
        recover(again.core, store)
        while (record := again.step()) is not None and record.slot < _minute(1008):
            pass
        records = store.records(task.id)
        (cap,) = [r for r in records if r.error is not None and "more than 1000" in r.error]
        after = [((r.slot - T0) / 60, r.outcome.value) for r in records[records.index(cap) :]]
        assert after == [(1001, "coalesced"), (1006, "coalesced"), (1007, "coalesced"),
                         (1000, "ok"), (1008, "ok")]  # fmt: skip
    finally:
        store.close()


def _restarted_at_0630_to_run_all(
    tmp_path: Path,
) -> tuple[Simulation, ScheduledTask, SqliteTaskStore]:
    """An hourly task first due 01:00 (``RUN_ALL``), its store opened again by a
    simulation at 06:30 (the slots 01:00 to 06:00 to catch up, a minute a run): the
    simulation, the task and the store, which the caller closes."""
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        task = Simulation(start=T0, store=store).schedule(
            "job", FixedRate(HOUR, start_delay=HOUR), misfire=RUN_ALL
        )
    store = SqliteTaskStore(tmp_path / "tasks.db")
    sim = Simulation(start=T0 + 6.5 * HOUR, store=store)
    sim.model(task.id, duration=60.0)
    return sim, task, store


def test_a_catch_up_slot_resumed_keeps_its_slot_and_the_grid_after_the_plan(
    tmp_path: Path,
) -> None:
    # First due 01:00, down until 06:30: RUN_ALL catches up 01:00 to 06:00, a minute a
    # run.  Paused while 05:00 runs, the plan's last slot (06:00) waits for the resume at
    # 06:50.  Its record says slot 06:00 (the slot it serves, as its plan's other runs
    # do), due 06:50 (when the resume made it due: lateness is dispatch latency, and a
    # pause is none); the grid goes on at 07:00, not an hour after the resume.
    sim, task, store = _restarted_at_0630_to_run_all(tmp_path)
    sim.run(T0 + 6.5 * HOUR + 270)  # 01:00 to 04:00 ran, 05:00 runs
    assert sim.pause(task.id)
    resumed = T0 + 6.5 * HOUR + 20 * 60
    sim.run(resumed)
    assert sim.task(task.id).next_run_at == T0 + 6 * HOUR
    assert sim.resume(task.id)
    sim.run(T0 + 7.5 * HOUR)
    records = [r for r in sim.task(task.id).history if r.outcome.ran]
    assert [(r.slot - T0) / HOUR for r in records] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    (paused,) = [r for r in records if r.slot == T0 + 6 * HOUR]
    assert (paused.due, paused.started) == (resumed, resumed)
    store.close()


def test_paused_past_a_slot_after_a_catch_up_resume_re_anchors_the_grid(tmp_path: Path) -> None:
    # As above, but paused once the plan is over: 01:00 to 06:00 ran from 06:30, and the
    # own schedule's 07:00 is next.  Paused at 06:40 and resumed at 07:20, the task runs
    # at once and its grid restarts there (07:20, 08:20), as any fixed rate resumed after
    # sleeping through its slot: the plan handed the task back at its last run.  A plan
    # left in front after its last run (mutation of catchup.py's _next_on_grid) took the
    # resumed run for one it decided: slot 07:00, and the grid on at 08:00.
    sim, task, store = _restarted_at_0630_to_run_all(tmp_path)
    sim.run(T0 + 6.5 * HOUR + 600)  # the plan's six runs are over
    assert sim.task(task.id).next_run_at == T0 + 7 * HOUR
    assert sim.pause(task.id)
    resumed = T0 + 7 * HOUR + 20 * 60
    sim.run(resumed)
    assert sim.resume(task.id)
    sim.run(T0 + 8.5 * HOUR)
    records = [r for r in sim.task(task.id).history if r.outcome.ran]
    assert [(r.slot - T0) / 60 for r in records] == [60, 120, 180, 240, 300, 360, 440, 500]
    assert records[-2].due == resumed
    store.close()


def test_an_extra_run_resumed_and_run_after_a_restart_keeps_its_slot(tmp_path: Path) -> None:
    # Hourly from 01:00; run_now at 00:10 (the extra run's slot), paused at once,
    # resumed at 00:30, and the process stops before the run.  Restarted at 00:30, it
    # runs the extra run as the process that resumed it would have: slot 00:10, due
    # 00:30 (the row keeps the slot, TaskSnapshot.slot), then 01:00 on the grid.
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        sim = Simulation(start=T0, store=store)
        task = sim.schedule("job", FixedRate(HOUR, start_delay=HOUR))
        sim.run(T0 + 600)
        assert sim.run_now(task.id) and sim.pause(task.id)
        sim.run(T0 + 1800)
        assert sim.resume(task.id)  # due now: the stop comes before its run
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        sim = Simulation(start=T0 + 1800, store=store)
        sim.run(T0 + 1.5 * HOUR)
        records = [r for r in sim.task(task.id).history if r.outcome.ran]
        assert [(r.slot - T0, r.due - T0) for r in records] == [(600, 1800), (HOUR, HOUR)]


@pytest.mark.parametrize(
    "restart", ["before the next run", "mid-run", "after the next run", "paused"]
)
def test_a_capped_catch_up_set_back_then_restarted_goes_on_as_cut(
    tmp_path: Path, restart: str
) -> None:
    # Minutely from 09:01, the wall clock jumps a day (the plan cut at the cap: the 998th
    # to the 1,000th run, then the 1,441st; one record stands for the slots beyond) and,
    # once the 998th ran, is set back an hour and 30 s: the rest of the plan moves back
    # with it (the 999th and 1,000th to 30 s before the 939th's and 940th's instants,
    # then the 1,441st, off the grid the decisions were recorded on).  Restarted on the
    # SQLite file then, the plan goes on as it was cut and moved: no slot recorded twice
    # (nor missed once more), none run twice (but the one in flight at the crash, at
    # least once), and the grid after it where the jump put it.  The restart read the
    # plan from the moved 999th up to the cap's record: it ran 63 slots a minute apart
    # (the plan has three), and resumed at the 1,441st, not moved (with a jump of a whole
    # hour those 63 were the 939th to the 1,000th: slots decided missed, and run, before).
    path = tmp_path / "tasks.db"
    clock = JumpingClock(T0)
    policy = MisfirePolicy(Misfire.RUN_ALL, max_catch_up=3)
    store = SqliteTaskStore(path)
    h = Harness(clock, store=store)
    task = h.core.add("job", jobs.noop, FixedRate(60, start_delay=60), misfire=policy)
    clock.jump(86400 + 30)
    after_clock_jump(h.core, 86400 + 30, clock.now())
    h.step()  # the 998th
    back = -(HOUR + 30)
    clock.jump(back)
    after_clock_jump(h.core, back, clock.now())
    assert task.next_run_at == T0 + 999 * 60 + back
    moved = [(999 * 60 + back) / 60, (1000 * 60 + back) / 60, (1441 * 60 + back) / 60]
    if restart == "mid-run":
        h.begin()  # the 999th, moved: in flight when the process dies
    elif restart == "after the next run":
        h.step()
    elif restart == "paused":  # the store keeps the moved 999th, and the 1,000th behind it
        assert h.core.pause(task.id)
    store.close()  # the process dies

    store = SqliteTaskStore(path)
    try:
        again = Harness(clock, store=store)
        recover(again.core, store)
        if restart == "paused":
            assert again.core.resume(task.id)
        for _ in range(3 if restart == "after the next run" else 4):
            again.step()
        records = store.records(task.id)
        ran = [(r.slot - T0) / 60 for r in records if r.outcome.ran]
        assert ran == [998, *moved, moved[-1] + 1]
        decided = [r.slot for r in records if not r.outcome.ran]  # the store keeps 1,000
        assert len(decided) == len(set(decided))  # each slot decided once, not again
        assert decided[-1] == T0 + 1001 * 60  # the cap's record last, as it was decided
        assert not set(decided) & {r.slot for r in records if r.outcome.ran}
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_capped_catch_up_set_back_and_paused_with_a_retry_owed_goes_on_as_cut(
    tmp_path: Path, kind: str
) -> None:
    # As above, but the 998th's first attempt fails: its retry is owed when the clock is
    # set back, and the task is paused before the retry runs.  The store keeps the retry
    # as the run due, and the moved 999th as the slot the plan waits for.  Restarted and
    # resumed, the retry runs, then the moved 999th and 1,000th, then the 1,441st, moved:
    # the plan goes on as it was cut and moved.  The restart counted the retry as a run of
    # the plan no record counts (``made=1``) while the 998th's first attempt, recorded,
    # counted it already: the plan lost the moved 1,000th.
    clock = JumpingClock(T0)
    policy = MisfirePolicy(Misfire.RUN_ALL, max_catch_up=3)
    reopen = Reopening(kind, tmp_path / "tasks.db")
    store = reopen()
    h = Harness(clock, store=store)
    task = h.core.add(
        "job", jobs.noop, FixedRate(60, start_delay=60), misfire=policy,
        retry=RetryPolicy(3, initial_backoff=30, jitter=0.0),
    )  # fmt: skip
    clock.jump(86400 + 30)
    after_clock_jump(h.core, 86400 + 30, clock.now())
    h.step(error="boom")  # the 998th's first attempt
    assert task.status is TaskStatus.RETRYING
    back = -(HOUR + 30)
    clock.jump(back)
    after_clock_jump(h.core, back, clock.now())
    assert h.core.pause(task.id)
    try:
        store = reopen()
        again = Harness(clock, store=store)
        recover(again.core, store)
        assert again.core.resume(task.id)
        for _ in range(5):
            again.step()
        records = store.records(task.id)
        ran = [((r.slot - T0) / 60, r.attempt) for r in records if r.outcome.ran]
        moved = [(n * 60 + back) / 60 for n in (999, 1000, 1441, 1442)]
        assert ran == [(998, 1), (998, 2), *((slot, 1) for slot in moved)]
    finally:
        reopen.close()


BACK = T0 + 630  # 09:10:30: the end of the downtime of the RUN_ALL tests below


def _minutely_run_all(
    store: Reopening, policy: MisfirePolicy
) -> tuple[str, Simulation, InMemoryTaskStore | SqliteTaskStore]:
    """Every minute from 09:01, ``policy`` (``RUN_ALL``), registered on ``store`` at
    09:00; down until :data:`BACK`.  The process back then (returned not run yet, with the
    store it opened: its runs take a second) catches up 09:01 to 09:10."""
    task = Simulation(start=T0, store=store()).schedule(
        "job", FixedRate(60, start_delay=60), misfire=policy
    )
    opened = store()
    sim = Simulation(start=BACK, store=opened)
    sim.model(task.id, duration=1.0)
    return task.id, sim, opened


def _restarted(store: InMemoryTaskStore | SqliteTaskStore, task_id: str, at: float) -> Simulation:
    """A process started at ``at`` on ``store``, its runs of ``task_id`` a second each."""
    sim = Simulation(start=at, store=store)
    sim.model(task_id, duration=1.0)
    return sim


def _minutes(records: Sequence[ExecutionRecord]) -> list[tuple[float, Outcome]]:
    """Each record's slot (minutes after 09:00) and outcome."""
    return [((r.slot - T0) / 60, r.outcome) for r in records]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize("max_catch_up", [10, 100])
def test_a_run_all_plan_restarted_runs_its_slots_and_the_policy_decides_those_since(
    tmp_path: Path, kind: str, max_catch_up: int
) -> None:
    # Every minute from 09:01, down until 09:10:30: RUN_ALL catches up 09:01 to 09:10, a
    # second a run.  The process stops while 09:04 runs (three ran), and one started five
    # minutes later, at 09:15:33.5, runs 09:04 again and the rest of the plan (09:05 to
    # 09:10), and decides 09:11 to 09:15, which passed after the plan was made, on their
    # own: five slots, fewer than max_catch_up, all run.  Nothing is recorded missed.
    # The row kept only 09:04 and 09:05: the restart decided 09:05 to 09:15 again, eleven
    # slots, and with max_catch_up=10 recorded 09:05, a slot of the plan, missed.
    store = Reopening(kind, tmp_path / "tasks.db")
    try:
        policy = MisfirePolicy(Misfire.RUN_ALL, max_catch_up=max_catch_up)
        task_id, sim, _ = _minutely_run_all(store, policy)
        sim.run(BACK + 3.5)  # 09:01 to 09:03 ran, 09:04 runs
        reopened = store()
        (row,) = reopened.load_all()
        assert (row.next_run_at, row.waited, row.until) == (T0 + 240, T0 + 300, T0 + 660)
        _restarted(reopened, task_id, BACK + 303.5).run(T0 + 1030)
        ok = [(minute, Outcome.OK) for minute in range(1, 18)]
        assert _minutes(reopened.records(task_id)) == ok
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize("paused", [False, True])
def test_a_run_all_plan_restarted_within_grace_leaves_the_slots_since_to_its_schedule(
    tmp_path: Path, kind: str, paused: bool
) -> None:
    # Every minute from 09:01, down until 09:10:30, five minutes of grace: RUN_ALL catches
    # up 09:01 to 09:10, a second a run.  The process stops while 09:09 runs (or once it
    # is paused there), and one started at 09:13:58.5 finds 09:10 (the slot after the one
    # due) within grace: nothing is decided again.  09:09 and 09:10 run, the rest of the
    # plan, and the fixed rate goes on from 09:10's run, which ends past 09:14: 09:11 to
    # 09:14, which passed after the plan was made, are skipped, as a run that outlasts its
    # slots skips them, and 09:15 runs.  The restart caught them up with the plan: the row
    # kept only 09:09 and 09:10, and every slot after 09:10 up to the restart was read as
    # one of the plan's.
    store = Reopening(kind, tmp_path / "tasks.db")
    try:
        policy = MisfirePolicy(Misfire.RUN_ALL, grace=300)
        task_id, sim, _ = _minutely_run_all(store, policy)
        sim.run(BACK + 8.5)  # 09:01 to 09:08 ran, 09:09 runs
        if paused:
            assert sim.pause(task_id)
        reopened = store()
        (row,) = reopened.load_all()
        assert (row.waited, row.until) == (T0 + 600, T0 + 660)
        sim = _restarted(reopened, task_id, BACK + 208.5)
        if paused:
            assert sim.resume(task_id)
        sim.run(T0 + 930)
        ok = [(minute, Outcome.OK) for minute in range(1, 11)]
        skipped = [(minute, Outcome.SKIPPED) for minute in range(11, 15)]
        assert _minutes(reopened.records(task_id)) == [*ok, *skipped, (15, Outcome.OK)]
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize("restart", [False, True])
def test_a_run_all_plan_paused_and_restarted_resumes_as_it_would_unrestarted(
    tmp_path: Path, kind: str, restart: bool
) -> None:
    # Every minute from 09:01, down until 09:10:30: RUN_ALL catches up 09:01 to 09:10, a
    # second a run.  Paused while 09:04 runs, resumed five minutes later (at 09:15:33.5),
    # restarted in between or not: 09:04 to 09:10 run (the plan; the paused slot keeps
    # its slot), and the fixed rate goes on from 09:10's run: 09:11 to 09:15, slept
    # through after the plan was made, are skipped, and 09:16 runs.  Restarted, they ran
    # with the plan: the row kept 09:04 and 09:05, and every slot after 09:05 up to the
    # restart was read as the plan's.
    store = Reopening(kind, tmp_path / "tasks.db")
    try:
        task_id, sim, opened = _minutely_run_all(store, RUN_ALL)
        sim.run(BACK + 3.5)  # 09:01 to 09:03 ran, 09:04 runs
        assert sim.pause(task_id)
        sim.run(BACK + 303.5)
        if restart:  # the process stops; another one opens the store
            opened = store()
            sim = _restarted(opened, task_id, BACK + 303.5)
        assert sim.resume(task_id)
        sim.run(T0 + 990)
        ok = [(minute, Outcome.OK) for minute in range(1, 11)]
        skipped = [(minute, Outcome.SKIPPED) for minute in range(11, 16)]
        assert _minutes(opened.records(task_id)) == [*ok, *skipped, (16, Outcome.OK)]
    finally:
        store.close()


def test_a_forward_jump_during_a_run_all_plan_runs_its_slots_and_decides_those_since() -> None:
    # Every minute from 09:01, the wall clock jumps to 09:10:30: RUN_ALL (max_catch_up=10)
    # catches up 09:01 to 09:10.  Once three ran, it jumps five minutes again: the plan's
    # 09:04 to 09:10 run, and 09:11 to 09:15 are decided on their own (all run).  Decided
    # again from 09:04 with them, twelve slots, 09:04 and 09:05 were recorded missed.
    clock = JumpingClock(T0)
    h = Harness(clock)
    task = h.core.add(
        "job", jobs.noop, FixedRate(60, start_delay=60),
        misfire=MisfirePolicy(Misfire.RUN_ALL, max_catch_up=10),
    )  # fmt: skip
    clock.jump(630)
    after_clock_jump(h.core, 630, clock.now())
    for _ in range(3):
        h.step()
    clock.jump(300)
    after_clock_jump(h.core, 300, clock.now())
    for _ in range(12):
        h.step()
    assert _minutes(task.history) == [(minute, Outcome.OK) for minute in range(1, 16)]


class SnapshotsKept(InMemoryTaskStore):
    """An in-memory store that also keeps every snapshot it was told to save, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.saved: list[TaskSnapshot] = []

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        super().save(snapshot, record)
        self.saved.append(snapshot)


@pytest.mark.parametrize("verb", ["cancel", "remove"])
@pytest.mark.parametrize("plan", ["catch-up", "run_now"])
@pytest.mark.parametrize("runtime", ["scheduler", "simulation"])
def test_a_task_cancelled_or_removed_with_a_plan_in_front_writes_no_plan_in_its_final_row(
    runtime: str, plan: str, verb: str
) -> None:
    """Back at 03:30 after a downtime, RUN_ALL's catch-up of 01:00, 02:00 and 03:00 is
    planned in front of an hourly task (or a run_now put its next slot off), then the task
    is cancelled or removed before any of it ran.  Before, the CANCELLED row (a removal's
    too, before its delete) kept the plan: ``waited`` and ``until``, for a task that
    runs nothing again, read back by every restart and every other process."""
    store = SnapshotsKept()
    hourly = FixedRate(HOUR, start_delay=HOUR)
    writer = Scheduler(clock=FakeClock(T0), store=store)  # never started
    writer.schedule("job", jobs.noop, hourly, id="job", misfire=RUN_ALL)
    assert writer.shutdown()
    at = T0 + 3.5 * HOUR if plan == "catch-up" else T0 + 0.5 * HOUR
    made: Scheduler | Simulation
    made = (
        Scheduler(clock=FakeClock(at), store=store)
        if runtime == "scheduler"
        else Simulation(store=store, start=at)
    )
    try:
        if plan == "run_now":
            assert made.run_now("job")
        planned = store.get("job")
        assert planned is not None and planned.waited is not None  # the plan, in front
        getattr(made, verb)("job")
        final = store.saved[-1]
        assert final.status is TaskStatus.CANCELLED
        assert (final.waited, final.slot, final.resumes, final.until) == (None, None, False, None)
    finally:
        if isinstance(made, Scheduler):
            assert made.shutdown()
