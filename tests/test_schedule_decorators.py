"""Jittered and Window: decorators over any schedule, in both runtimes, through a durable
store, through recovery, in words, and refusing bad input with the value quoted."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    CronSchedule,
    ExecutionRecord,
    FakeClock,
    FixedDelay,
    FixedRate,
    Jittered,
    Misfire,
    MisfirePolicy,
    OneTime,
    Outcome,
    RetryPolicy,
    Schedule,
    ScheduleError,
    Scheduler,
    SqliteTaskStore,
    TaskStatus,
    ValidationError,
    Window,
)
from lldsched.schedules.base import first_slot_after, measures_elapsed_time, slot_after
from lldsched.sim import Simulation
from lldsched.stores.codec import decode_schedule, encode_schedule
from tests import jobs
from tests.conftest import T0, SchedulerFactory, settle
from tests.runtimes import KINDS, Driven

HOUR = 3600.0


def record(slot: float, finished: float, task_id: str = "task-1") -> ExecutionRecord:
    return ExecutionRecord(task_id, "t", 1, slot, slot, 0, slot, finished, True)


def simulated_dues(schedule: object, seconds: float, duration: float = 1.0) -> list[float]:
    sim = Simulation(workers=1, start=T0)
    sim.schedule("t", schedule, duration=duration)  # type: ignore[arg-type]
    sim.run_for(seconds)
    return [r.due - T0 for r in sim.records()]


def threaded_dues(
    make_scheduler: SchedulerFactory, schedule: object, seconds: float, step: float = 1.0
) -> tuple[list[float], TaskStatus]:
    """Dues on a running Scheduler whose fake clock is moved ``step`` at a time; each run
    takes one fake second (the action moves the clock)."""
    clock = FakeClock(T0)
    scheduler = make_scheduler(workers=1, clock=clock)
    task = scheduler.schedule("t", lambda: clock.advance(1), schedule)  # type: ignore[arg-type]
    for _ in range(int(seconds / step)):
        settle(scheduler)
        clock.advance(step)
    settle(scheduler)
    return [r.due - T0 for r in task.history], task.status


# -- Jittered: the delay ------------------------------------------------------------------


def test_a_delay_is_never_negative_and_always_under_max_delay() -> None:
    jittered = Jittered(FixedRate(60), 5, seed=7)
    rng = random.Random(1)
    for slot in [T0 + 60 * k for k in range(500)] + [rng.uniform(0, 4e9) for _ in range(500)]:
        assert 0 <= jittered.delay(slot) < 5
        assert jittered.delayed(slot) >= slot


def test_a_delay_is_a_function_of_seed_and_slot_only() -> None:
    slots = [T0 + 60 * k for k in range(50)]
    first = [Jittered(FixedRate(60), 5, seed=7).delay(s) for s in slots]
    again = [Jittered(CronSchedule("* * * * *"), 5, seed=7).delay(s) for s in slots]
    other = [Jittered(FixedRate(60), 5, seed=8).delay(s) for s in slots]
    assert first == again
    assert first != other
    assert len(set(first)) == len(first)  # it varies from slot to slot


def test_the_undelayed_slot_is_read_back_from_the_delayed_instant() -> None:
    rng = random.Random(2)
    for max_delay in (0.001, 0.5, 5, 300, 86_400):
        jittered = Jittered(FixedRate(60), max_delay, seed=rng.randrange(1000))
        for _ in range(300):
            slot = rng.uniform(1e9, 2e9)
            assert jittered.undelayed(jittered.delayed(slot)) == pytest.approx(slot, abs=1e-6)
            on_grid = round(slot, 5)  # a slot read back once is a 10-microsecond decimal
            assert jittered.slot_of(jittered.delayed(on_grid)) == on_grid


def test_fifty_hourly_tasks_with_their_own_seeds_start_spread_over_the_window() -> None:
    hourly = CronSchedule("0 * * * *")
    sim = Simulation(workers=50, start=T0)
    for seed in range(50):
        sim.schedule(f"report-{seed}", Jittered(hourly, 300, seed=seed), duration=1)
    sim.run_for(HOUR + 400)  # 10:00 and the five minutes after it
    starts = sorted(r.started - (T0 + HOUR) for r in sim.records())
    assert len(starts) == 50 and len(set(starts)) == 50
    assert starts[0] >= 0 and starts[-1] < 300
    assert starts[-1] - starts[0] > 200  # spread, not bunched


def test_jitter_never_drifts_a_fixed_rate_grid() -> None:
    jittered = Jittered(FixedRate(60), 5, seed=7)
    dues = simulated_dues(jittered, 1000 * 60)
    assert len(dues) == 1000
    for k, due in enumerate(dues):
        assert jittered.slot_of(T0 + due) - T0 == 60 * k  # exactly: not a float of drift
        assert 0 <= due - 60 * k < 5


def test_a_late_finish_still_follows_the_wrapped_schedules_overrun_rule() -> None:
    jittered = Jittered(FixedRate(60), 5, seed=7)
    slot = jittered.delayed(T0)
    following = jittered.next_run(record(slot, finished=T0 + 150), T0 + 150)
    assert following == jittered.delayed(T0 + 180)  # SKIP: the first slot after the finish


def test_jittered_dues_are_the_same_in_both_runtimes(make_scheduler: SchedulerFactory) -> None:
    schedule = Jittered(FixedRate(60), 5, seed=11)
    simulated = simulated_dues(schedule, 600)
    threaded, _ = threaded_dues(make_scheduler, schedule, 600)
    assert len(simulated) == 10
    assert threaded[:10] == simulated


def test_a_jittered_cron_schedule_runs_each_fire_a_little_late() -> None:
    schedule = Jittered(CronSchedule("*/15 * * * *"), 30, seed=3)
    dues = simulated_dues(schedule, HOUR + 60)
    assert [math.floor(d / 900) for d in dues] == [1, 2, 3, 4]
    assert all(0 <= d % 900 < 30 for d in dues)


def test_jittered_answers_what_recovery_asks_through_the_wrapped_schedule() -> None:
    jittered = Jittered(FixedRate(60), 5, seed=7)
    slot = jittered.delayed(T0)
    assert slot_after(jittered, slot) == jittered.delayed(T0 + 60)
    # the first delayed slot after an instant: 600's, delayed past T0 + 600 ...
    assert first_slot_after(jittered, slot, T0 + 600, limit=10) == jittered.delayed(T0 + 600)
    # ... and 660's once that instant is past 600's delayed run
    later = jittered.delayed(T0 + 600)
    assert first_slot_after(jittered, slot, later, limit=10) == jittered.delayed(T0 + 660)
    assert measures_elapsed_time(jittered)
    assert not measures_elapsed_time(Jittered(CronSchedule("0 * * * *"), 5, seed=7))
    assert slot_after(Jittered(OneTime(T0), 5, seed=7), slot) is None


# -- Window ----------------------------------------------------------------------------------


def test_max_runs_retires_the_task_as_succeeded_after_that_many_runs(
    make_scheduler: SchedulerFactory,
) -> None:
    window = Window(FixedRate(60), max_runs=3)
    assert simulated_dues(window, 600) == [0, 60, 120]
    dues, status = threaded_dues(make_scheduler, Window(FixedRate(60), max_runs=3), 600, step=30)
    assert (dues, status) == ([0, 60, 120], TaskStatus.SUCCEEDED)


def test_max_runs_counts_successful_runs_of_each_task_apart() -> None:
    window = Window(FixedDelay(10), max_runs=2)
    sim = Simulation(workers=2, start=T0)
    first = sim.schedule("a", window, duration=1)
    second = sim.schedule("b", window, duration=1, fails=0.0)
    sim.run_for(600)
    assert [r.name for r in sim.records()] == ["a", "b", "a", "b"]
    assert first.status is second.status is TaskStatus.SUCCEEDED
    assert window.runs_counted(first.id) == 0  # forgotten once retired


def test_a_failed_run_is_retried_and_not_counted_as_a_run() -> None:
    from lldsched.sim import fails_on

    sim = Simulation(workers=1, start=T0)
    task = sim.schedule("flaky", Window(FixedRate(60), max_runs=2), duration=1, fails=fails_on(1))
    sim.run_for(600)
    assert [(r.attempt, r.ok) for r in sim.records()] == [(1, False), (2, True)] * 2
    assert task.status is TaskStatus.SUCCEEDED


def test_nothing_runs_before_start_a_task_registered_early_starts_there(
    make_scheduler: SchedulerFactory,
) -> None:
    window = Window(FixedRate(60), start=T0 + 300, max_runs=2)
    assert simulated_dues(window, 900) == [300, 360]
    dues, _ = threaded_dues(
        make_scheduler, Window(FixedRate(60), start=T0 + 300, max_runs=2), 900, 30
    )
    assert dues == [300, 360]


@pytest.mark.parametrize(
    "schedule",
    [FixedRate(300, start_delay=300), FixedDelay(300, start_delay=300), OneTime(delay=300)],
    ids=["rate", "delay", "one-off"],
)
def test_a_start_delay_counts_from_start_exactly(schedule: Schedule) -> None:
    """A schedule that counts elapsed seconds starts its count at ``start`` itself: its
    first slot is ``start + start_delay`` to the bit, and a rate's grid stays on it (it
    was asked from a ulp before ``start``, so every slot was 2.4e-7 s early here)."""
    start = 1767604020.0  # 2026-01-05 09:07 UTC, whose ulp is 2.4e-7 s
    sim = Simulation(start=start - 3720)
    sim.schedule("t", Window(schedule, start=start), id="t", duration=0)
    sim.run(start + 1000)
    dues = [record.due - start for record in sim.records()]
    assert dues and dues == [300.0 * n for n in range(1, len(dues) + 1)]


def test_a_cron_fire_exactly_at_start_runs() -> None:
    window = Window(CronSchedule("0 * * * *"), start=T0 + HOUR, max_runs=1)
    assert window.first_run(T0) == T0 + HOUR
    assert Window(CronSchedule("0 * * * *"), start=T0 + 1).first_run(T0) == T0 + HOUR


def test_a_window_registered_at_its_start_first_runs_as_its_schedule_would() -> None:
    hourly = CronSchedule("0 * * * *")  # T0 is 09:00: a fire at the start, not after now
    assert hourly.first_run(T0) == T0 + HOUR
    assert Window(hourly, start=T0).first_run(T0) == T0 + HOUR
    assert Window(hourly, start=T0 - HOUR).first_run(T0) == T0 + HOUR


def test_nothing_runs_after_end_and_the_task_then_succeeds() -> None:
    window = Window(FixedRate(60), end=T0 + 180)
    sim = Simulation(workers=1, start=T0)
    task = sim.schedule("t", window, duration=1)
    sim.run_for(900)
    assert [r.due - T0 for r in sim.records()] == [0, 60, 120, 180]  # end is inclusive
    assert task.status is TaskStatus.SUCCEEDED


def test_a_window_that_has_ended_is_refused_at_schedule_and_nothing_is_registered() -> None:
    sim = Simulation(workers=1, start=T0)
    with pytest.raises(ScheduleError, match="never fires"):
        sim.schedule("late", Window(FixedRate(60), end=T0 - 1), duration=1)
    assert sim.tasks() == []


def test_window_answers_what_recovery_asks_and_stops_at_end() -> None:
    window = Window(FixedRate(60), end=T0 + 120)
    assert slot_after(window, T0 + 60) == T0 + 120
    assert slot_after(window, T0 + 120) is None
    assert first_slot_after(window, T0, T0 + 100, limit=10) == T0 + 120
    assert first_slot_after(window, T0, T0 + 130, limit=10) is None
    assert measures_elapsed_time(window)
    assert not measures_elapsed_time(Window(CronSchedule("0 * * * *"), max_runs=2))


def test_a_window_that_ends_during_downtime_retires_its_task_after_recovery(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    schedule = Window(FixedRate(HOUR), end=T0 + 2 * HOUR + 100)
    with SqliteTaskStore(path) as store:
        first = Scheduler(clock=FakeClock(T0), store=store)
        first.schedule("hourly", jobs.noop, schedule)
        assert first.shutdown()
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(clock=FakeClock(T0 + 5 * HOUR), store=store).start()
        settle(scheduler)
        (task,) = scheduler.tasks()
        assert task.schedule == schedule
        assert task.status is TaskStatus.SUCCEEDED
        assert [(r.outcome.value, r.slot - T0) for r in store.records(task.id)] == [
            ("coalesced", 0.0),
            ("coalesced", HOUR),
            ("ok", 2 * HOUR),
        ]
        assert scheduler.shutdown()


def test_max_runs_holds_across_a_restart_from_a_sqlite_store(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    clock = FakeClock(T0)
    with SqliteTaskStore(path) as store:
        first = Scheduler(clock=clock, store=store).start()
        task = first.schedule("trial", jobs.flaky, Window(FixedRate(60), max_runs=3), args=(False,))
        settle(first)
        clock.advance(60)
        settle(first)
        assert [r.slot - T0 for r in task.history] == [0, 60]
        assert first.shutdown()
    clock.advance(30)  # back at T0 + 90: the next slot, T0 + 120, is the third run
    with SqliteTaskStore(path) as store:
        restarted = Scheduler(clock=clock, store=store).start()
        (task,) = restarted.tasks()
        assert task.schedule.runs_counted(task.id) == 2  # type: ignore[attr-defined]
        for _ in range(5):
            clock.advance(60)
            settle(restarted)
        assert [r.slot - T0 for r in store.records(task.id)] == [0, 60, 120]
        assert task.status is TaskStatus.SUCCEEDED
        assert restarted.shutdown()


def test_max_runs_counts_the_catch_up_runs_of_a_restart(tmp_path: Path) -> None:
    """A restart ten minutes after the first run, ``Misfire.RUN_ALL``: the catch-up plan
    handed its slots out without the window counting them, so ``max_runs=3`` ran 12
    times (the ten missed slots, then two more of its own)."""
    window = Window(FixedRate(60), max_runs=3)
    misfire = MisfirePolicy(Misfire.RUN_ALL, grace=1)
    clock = FakeClock(T0)
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        first = Scheduler(clock=clock, store=store).start()
        first.schedule("trial", jobs.noop, window, id="trial", misfire=misfire)
        settle(first)
        assert first.shutdown()
        clock.advance(600)
        restarted = Scheduler(clock=clock, store=store).start()
        restarted.schedule("trial", jobs.noop, window, id="trial", misfire=misfire,
                           replace_existing=True)  # fmt: skip
        settle(restarted)
        assert [r.slot - T0 for r in store.records("trial")] == [0, 60, 120]
        assert restarted.task("trial").status is TaskStatus.SUCCEEDED
        assert restarted.shutdown()


def test_a_retried_failure_is_not_a_run_for_the_restored_count(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    clock = FakeClock(T0)
    with SqliteTaskStore(path) as store:
        first = Scheduler(clock=clock, store=store).start()
        first.schedule("trial", jobs.flaky, Window(FixedDelay(60), max_runs=5), args=(True,))
        for backoff in (0, 1, 2):  # attempts 1 and 2 fail, the third succeeds
            clock.advance(backoff)
            settle(first)
        assert first.shutdown()
    with SqliteTaskStore(path) as store:
        (snapshot,) = store.load_all()
        assert (snapshot.run_count, snapshot.failure_count) == (3, 2)
        window = snapshot.task.schedule
        assert isinstance(window, Window) and window.runs_counted(snapshot.task.id) == 1


# -- composition, storage, words ------------------------------------------------------------


def test_decorators_compose_either_way() -> None:
    inside = Window(Jittered(FixedRate(60), 5, seed=1), max_runs=2)
    outside = Jittered(Window(FixedRate(60), max_runs=2), 5, seed=1)
    assert simulated_dues(inside, 600) == simulated_dues(outside, 600)
    assert len(simulated_dues(inside, 600)) == 2


def test_every_decorator_round_trips_through_json_and_a_sqlite_store(
    tmp_path: Path,
) -> None:
    start = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
    schedules: list[Schedule] = [
        Jittered(FixedRate(60), 5, seed=7),
        Jittered(CronSchedule("*/15 * * * * *", tz="Europe/Berlin"), 0.25, seed=-3),
        Window(FixedDelay(10, 2), start=start, end=start + timedelta(days=1), max_runs=5),
        Window(Jittered(OneTime(delay=5), 1, seed=0), end=T0 + 60),
        Jittered(Window(CronSchedule("0 9 * * 1-5"), max_runs=10), 300, seed=42),
    ]
    for schedule in schedules:
        assert decode_schedule(encode_schedule(schedule)) == schedule
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(clock=FakeClock(T0), store=store)
        for n, schedule in enumerate(schedules):
            scheduler.schedule(f"t{n}", jobs.noop, schedule)
        before = {t.name: t.next_run_at for t in scheduler.tasks()}
        assert scheduler.shutdown()
    with SqliteTaskStore(path) as store:
        restored = Scheduler(clock=FakeClock(T0), store=store)
        assert [t.schedule for t in restored.tasks()] == schedules
        assert {t.name: t.next_run_at for t in restored.tasks()} == before
        assert restored.shutdown()


def test_explain_composes_the_wrapped_schedules_words() -> None:
    assert Jittered(FixedRate(60), 5, seed=7).explain() == (
        "Every 60 s, started up to 5 s late (jitter, seed 7)"
    )
    start = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
    window = Window(
        Jittered(CronSchedule("0 * * * *"), 300, seed=2),
        start=start,
        end=start + timedelta(hours=8),
        max_runs=3,
    )
    assert window.explain() == (
        "Every hour (UTC), started up to 300 s late (jitter, seed 2), from 2026-06-01 09:00 UTC, "
        "until 2026-06-01 17:00 UTC, at most 3 runs"
    )
    assert Window(FixedDelay(10), max_runs=1).explain() == (
        "10 s after each run finishes, once at most"
    )


def test_decorators_are_immutable_values_with_readable_reprs() -> None:
    jittered = Jittered(FixedRate(60), 5, seed=7)
    assert jittered == Jittered(FixedRate(60), 5, seed=7)
    assert hash(jittered) == hash(Jittered(FixedRate(60), 5, seed=7))
    assert jittered != Jittered(FixedRate(60), 5, seed=8)
    assert repr(jittered) == "Jittered(FixedRate(60), max_delay=5, seed=7)"
    window = Window(CronSchedule("0 9 * * *"), start=T0, max_runs=3)
    assert window == Window(CronSchedule("0 9 * * *"), start=T0, max_runs=3)
    assert window != Window(CronSchedule("0 9 * * *"), start=T0, max_runs=4)
    assert repr(window) == f"Window(CronSchedule('0 9 * * *'), start={T0!r}, max_runs=3)"
    with pytest.raises(AttributeError, match="immutable"):
        jittered.seed = 8
    with pytest.raises(AttributeError, match="immutable"):
        window.max_runs = 5


# -- bad input ---------------------------------------------------------------------------------


RATE = FixedRate(60)
WRAPS = "wraps a schedule (an object with first_run() and next_run()) or cron text, got"
BAD: list[tuple[Any, tuple[Any, ...], dict[str, Any], str]] = [
    (Jittered, (RATE, 0), {"seed": 1}, "Jittered max_delay must be finite and > 0 seconds, got 0"),
    (Jittered, (RATE, -5), {"seed": 1}, "got -5"),
    (Jittered, (RATE, math.nan), {"seed": 1}, "got nan"),
    (Jittered, (RATE, math.inf), {"seed": 1}, "got inf"),
    (
        Jittered,
        (RATE, "5"),
        {"seed": 1},
        "Jittered max_delay must be a number of seconds or a timedelta, got '5'",
    ),
    (Jittered, (RATE, True), {"seed": 1}, "got True"),
    (Jittered, (RATE, 5), {"seed": "7"}, "Jittered seed must be an int, got '7'"),
    (Jittered, (RATE, 5), {"seed": True}, "Jittered seed must be an int, got True"),
    (Jittered, (RATE, 5), {"seed": 1.5}, "got 1.5"),
    (Jittered, (60, 5), {"seed": 1}, f"Jittered {WRAPS} 60"),
    (  # the hint a task's schedule gets for a number (schedule_of), the same words
        Jittered,
        (60, 5),
        {"seed": 1},
        f"Jittered {WRAPS} 60 (a number of seconds is no schedule: FixedRate(60) runs every "
        "60 s, OneTime(delay=60) once, in 60 s)",
    ),
    (Window, (timedelta(minutes=5),), {"max_runs": 3}, "FixedRate(300) runs every 300 s"),
    (  # cron text is taken by the rule a task's schedule is: bad text is refused, named
        Jittered,
        ("61 2 * * mon-fri", 120),
        {"seed": 1},
        "Jittered: cron minute field: 61 is out of range 0-59 (expression '61 2 * * mon-fri')",
    ),
    (Window, ("every day",), {"max_runs": 3}, "Window: cron expression 'every day' has 2 fields"),
    (Window, ("@weekly-ish",), {"max_runs": 3}, "Window: cron expression '@weekly-ish': unknown"),
    (Window, (RATE,), {}, "Window(FixedRate(60)) needs at least one of start=, end= or max_runs="),
    (Window, (RATE,), {"start": T0 + 10, "end": T0}, f"start {T0 + 10!r} is after its end {T0!r}"),
    (Window, (RATE,), {"max_runs": 0}, "Window max_runs must be an int >= 1, got 0"),
    (Window, (RATE,), {"max_runs": -2}, "got -2"),
    (Window, (RATE,), {"max_runs": 2.5}, "got 2.5"),
    (Window, (RATE,), {"max_runs": True}, "got True"),
    (Window, (RATE,), {"start": datetime(2026, 1, 5)}, "Window start must be timezone-aware"),
    (
        Window,
        (RATE,),
        {"end": "x"},
        "Window end must be epoch seconds or an aware datetime, got 'x'",
    ),
    (Window, (RATE,), {"end": math.nan}, "Window end must be finite"),
    (Window, (None,), {"max_runs": 1}, f"Window {WRAPS} None"),
    (Window, (True,), {"max_runs": 1}, f"Window {WRAPS} True"),  # a bool: no hint
]


@pytest.mark.parametrize(("kind", "args", "kwargs", "message"), BAD)
def test_bad_arguments_are_refused_at_construction_naming_the_value(
    kind: Any, args: tuple[Any, ...], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ScheduleError) as caught:
        kind(*args, **kwargs)
    assert message in str(caught.value)
    assert isinstance(caught.value, ValidationError)


@pytest.mark.parametrize("seconds", [60, 2.5, timedelta(hours=1)], ids=str)
def test_a_number_for_a_schedule_gets_one_hint_at_registration_and_in_a_decorator(
    seconds: object,
) -> None:
    """``Jittered(60, 5)`` was refused without the hint a registration's 60 gets."""
    scheduler = Scheduler()
    try:
        with pytest.raises(ValidationError) as registered:
            scheduler.schedule("job", print, seconds)  # type: ignore[arg-type]
    finally:
        scheduler.shutdown()
    with pytest.raises(ScheduleError) as wrapped:
        Jittered(seconds, 5, seed=1)  # type: ignore[arg-type]
    hint = str(registered.value).rpartition(" (")[2]
    assert hint.startswith("a number of seconds is no schedule: FixedRate(")
    assert str(wrapped.value).endswith(f" ({hint}")


def test_a_decorator_takes_cron_text_as_the_cron_schedule_of_it() -> None:
    """APScheduler's ``"cron", ..., jitter=120`` ports as ``Jittered(text, 120, seed=n)``:
    the text is taken as a task's schedule takes it (a ``CronSchedule`` naming no zone,
    which a runtime reads in its ``tz``).  It was refused as no schedule."""
    text = "30 2 * * mon-fri"
    jittered = Jittered(text, 120, seed=1)
    assert jittered == Jittered(CronSchedule(text), 120, seed=1)
    assert repr(jittered) == "Jittered(CronSchedule('30 2 * * mon-fri'), max_delay=120, seed=1)"
    window = Window("@daily", max_runs=3)
    assert window == Window(CronSchedule("@daily"), max_runs=3)
    nested = Window(Jittered("0 * * * *", 300, seed=7), max_runs=24)
    assert nested == Window(Jittered(CronSchedule("0 * * * *"), 300, seed=7), max_runs=24)


@pytest.mark.parametrize("kind", KINDS)
def test_cron_text_in_a_decorator_is_read_in_the_runtimes_zone_as_a_tasks_text_is(
    kind: str,
) -> None:
    text = "30 2 * * mon-fri"
    berlin = CronSchedule(text, tz="Europe/Berlin")
    driven = Driven(kind, tz="Europe/Berlin")
    try:
        plain = driven.add("plain", text, id="plain")
        windowed = driven.add("windowed", Window(text, max_runs=2))
        jittered = driven.add("jittered", Jittered(text, 120, seed=1))
        assert plain.schedule == berlin
        assert windowed.schedule == Window(berlin, max_runs=2)
        assert jittered.schedule == Jittered(berlin, 120, seed=1)
        assert windowed.next_run_at == plain.next_run_at == berlin.next_after(T0)
        assert jittered.next_run_at == Jittered(berlin, 120, seed=1).first_run(T0)
        driven.runtime.reschedule("plain", Jittered("0 3 * * *", 60, seed=2))
        assert plain.schedule == Jittered(CronSchedule("0 3 * * *", tz="Europe/Berlin"), 60, seed=2)
    finally:
        driven.close()


def test_a_slot_given_up_is_not_counted_as_a_run() -> None:
    # Every attempt fails and none is retried: each slot is given up and the task goes
    # on to its next slot; not one of them is a successful run, so the window never
    # retires it (it retired after two given-up slots, FAILED, into the dead letter).
    window = Window(FixedRate(60), max_runs=2)
    sim = Simulation(workers=1, start=T0)
    task = sim.schedule("down", window, duration=1, fails=1.0, retry=RetryPolicy(max_attempts=1))
    sim.run_for(630)  # between runs: slots 0 to 600 s given up, the next due at 660 s
    outcomes = [r.outcome for r in sim.records()]
    assert outcomes == [Outcome.GIVEN_UP] * 11
    assert task.status is TaskStatus.SCHEDULED and window.runs_counted(task.id) == 0


@pytest.mark.parametrize("leaves", ["removed", "cancelled"])
def test_a_task_that_leaves_with_a_plan_in_front_of_its_window_leaves_no_count(
    leaves: str,
) -> None:
    # run_now puts a plan in front of the window (the put-off slot); the task leaves
    # before the extra run.  Before: the window, behind the plan, was not found, kept
    # the two runs of the task that left, and a task registered again under its id
    # inherited them: it ran three of its five.
    window = Window(FixedRate(60), max_runs=5)
    sim = Simulation(start=T0, retain_finished=0)
    task = sim.schedule("campaign", window, action=jobs.noop, id="campaign")
    sim.run(T0 + 90)  # its runs at once and 60 s later
    assert sim.run_now(task.id) is True
    (sim.remove if leaves == "removed" else sim.cancel)(task.id)
    assert sim.tasks() == [] and window.runs_counted(task.id) == 0
    again = sim.schedule("campaign", window, action=jobs.noop, id="campaign")
    sim.run(T0 + HOUR)
    assert len([record for record in again.history if record.ok]) == 5
    assert again.status is TaskStatus.SUCCEEDED


@pytest.mark.parametrize("kind", KINDS)
def test_a_window_serving_many_tasks_keeps_no_count_of_those_that_left(kind: str) -> None:
    # One window, defined once, for a campaign registered every day and stopped after
    # two runs (cancelled, so it retires, or removed).  Before: the window kept the count
    # of each for good (20 here, one a day in a service), and a task registered again
    # under a removed one's id inherited its two runs: it ran three of its five.
    window = Window(FixedRate(60), max_runs=5)
    driven = Driven(kind, retain_finished=0)
    try:
        for day in range(20):
            task = driven.add("campaign", window, id=f"campaign-{day}")
            driven.run_until(driven.now + 90)  # its runs at once and 60 s later
            assert window.runs_counted(task.id) == 2
            (driven.runtime.remove if day % 2 == 0 else driven.runtime.cancel)(task.id)
        assert window._runs == {}
        again = driven.add("campaign", window, id="campaign-0")  # removed: the id is free
        driven.run_until(driven.now + HOUR)
        assert len([record for record in again.history if record.ok]) == 5
        assert again.status is TaskStatus.SUCCEEDED
    finally:
        driven.close()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("verb", ["reschedule", "replace_existing"])
def test_a_new_window_counts_the_runs_the_task_had_as_a_restart_does(
    kind: str, verb: str, tmp_path: Path
) -> None:
    """Two runs of ``max_runs=3``, then the task given ``Window(..., max_runs=5)``: a
    restart restores the count (runs minus failures, 2) into the new window, so the task
    runs 5 times in all; without one, the new window counted from none and the task ran
    7 times (2 + 5), the same calls giving two answers."""
    driven = Driven(kind)
    try:
        task = driven.add("trial", Window(FixedRate(60), max_runs=3), id="trial")
        driven.run_until(T0 + 90)  # its runs at T0 and T0 + 60
        wider = Window(FixedRate(60), max_runs=5)
        if verb == "reschedule":
            driven.runtime.reschedule("trial", wider)
        else:
            driven.add("trial", wider, id="trial", replace_existing=True)
        assert wider.runs_counted("trial") == 2
        driven.run_until(T0 + HOUR)
        assert len([record for record in task.history if record.ok]) == 5
        assert task.status is TaskStatus.SUCCEEDED
    finally:
        driven.close()


def test_a_new_window_given_while_a_run_is_in_flight_counts_the_runs_as_a_restart_does() -> None:
    """The new window stands behind the plan that lets the run in flight end first: it
    is told the finished run there, and counts the one in flight as it ends (6 runs in
    all when the count went to the plan; a restart between gives 5)."""
    sim = Simulation(workers=1, start=T0)
    task = sim.schedule(
        "trial", Window(FixedRate(60), max_runs=3), id="trial", duration=30, action=jobs.noop
    )
    sim.run(T0 + 70)  # its second run is in flight, to T0 + 90
    assert task.status is TaskStatus.RUNNING
    wider = Window(FixedRate(60), max_runs=5)
    sim.reschedule("trial", wider)
    assert wider.runs_counted("trial") == 1
    sim.run(T0 + HOUR)
    assert len([record for record in task.history if record.ok]) == 5
    assert task.status is TaskStatus.SUCCEEDED
