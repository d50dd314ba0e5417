"""Every duration of the public API takes a ``datetime.timedelta`` as well as seconds.

One rule (:func:`lldsched.checks.seconds`): a ``timedelta`` is kept as its float
seconds, so a value built from one equals the value built from the number, prints as
the number, and a ``timedelta`` out of bounds is refused with the message a number
gets, quoting it and its seconds.  A bad one loses nothing already registered.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    EventLog,
    FakeClock,
    FixedDelay,
    FixedRate,
    Jittered,
    MisfirePolicy,
    OneTime,
    RetryPolicy,
    ScheduleError,
    Scheduler,
    Simulation,
    SqliteTaskStore,
    ValidationError,
)
from lldsched.sim.cluster_scenario import ClusterScenario, ClusterTask, Crash, Pause

MINUTE = timedelta(minutes=1)
NEGATIVE = timedelta(seconds=-5)
SHOWN = "datetime.timedelta(days=-1, seconds=86395) (-5 seconds)"


def noop() -> None:
    return None


@pytest.mark.parametrize(
    ("given", "same"),
    [
        (lambda: FixedRate(timedelta(minutes=5)), lambda: FixedRate(300)),
        (lambda: FixedRate(MINUTE, start_delay=MINUTE), lambda: FixedRate(60, start_delay=60)),
        (lambda: FixedDelay(MINUTE, start_delay=MINUTE), lambda: FixedDelay(60, start_delay=60)),
        (lambda: OneTime(delay=MINUTE), lambda: OneTime(delay=60)),
        (lambda: Jittered(FixedRate(600), MINUTE, seed=1),
         lambda: Jittered(FixedRate(600), 60, seed=1)),
        (
            lambda: RetryPolicy(initial_backoff=timedelta(seconds=2), max_backoff=MINUTE),
            lambda: RetryPolicy(initial_backoff=2, max_backoff=60),
        ),
        (lambda: MisfirePolicy(grace=timedelta(minutes=2)), lambda: MisfirePolicy(grace=120)),
        (lambda: ClusterTask("t", every=MINUTE), lambda: ClusterTask("t", every=60)),
        (lambda: Pause(node=0, at=MINUTE, seconds=MINUTE), lambda: Pause(0, at=60, seconds=60)),
        (lambda: Crash(node=0, at=MINUTE, restart_after=MINUTE), lambda: Crash(0, 60, 60)),
        (
            lambda: ClusterScenario(
                nodes=2, lease=MINUTE, renewal=timedelta(seconds=20), horizon=10 * MINUTE,
                skews=(timedelta(seconds=1), timedelta(0)),
            ),
            lambda: ClusterScenario(nodes=2, lease=60, renewal=20, horizon=600, skews=(1, 0)),
        ),
    ],
)  # fmt: skip
def test_a_value_built_from_a_timedelta_equals_the_one_built_from_seconds(
    given: Callable[[], object], same: Callable[[], object]
) -> None:
    built, expected = given(), same()
    assert built == expected and hash(built) == hash(expected)


def test_schedules_print_the_seconds_a_timedelta_gave() -> None:
    assert repr(FixedRate(timedelta(minutes=5))) == "FixedRate(300.0)"
    assert repr(FixedDelay(MINUTE, start_delay=timedelta(seconds=5))) == (
        "FixedDelay(60.0, start_delay=5.0)"
    )
    assert FixedRate(timedelta(minutes=5)).explain() == "Every 300 s"
    assert RetryPolicy(max_backoff=MINUTE).max_backoff == 60.0


def test_a_retry_backoff_from_timedeltas_is_the_backoff_from_seconds() -> None:
    policy = RetryPolicy(initial_backoff=timedelta(seconds=2), max_backoff=timedelta(seconds=5))
    assert [policy.backoff(attempt) for attempt in (1, 2, 3)] == [2.0, 4.0, 5.0]


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: FixedRate(timedelta(0)), ScheduleError,
         "FixedRate period must be finite and > 0 seconds, got datetime.timedelta(0) (0 seconds)"),
        (lambda: FixedRate(NEGATIVE), ScheduleError,
         f"FixedRate period must be finite and > 0 seconds, got {SHOWN}"),
        (lambda: FixedRate(60, start_delay=NEGATIVE), ScheduleError,
         f"FixedRate start_delay must be finite and >= 0 seconds, got {SHOWN}"),
        (lambda: FixedDelay(NEGATIVE), ScheduleError,
         f"FixedDelay delay must be finite and > 0 seconds, got {SHOWN}"),
        (lambda: OneTime(delay=NEGATIVE), ScheduleError,
         f"OneTime delay must be finite and >= 0 seconds, got {SHOWN}"),
        (lambda: Jittered(FixedRate(60), timedelta(0), seed=1), ScheduleError,
         "Jittered max_delay must be finite and > 0 seconds, got datetime.timedelta(0) "
         "(0 seconds)"),
        (lambda: RetryPolicy(initial_backoff=NEGATIVE), ValidationError,
         f"initial_backoff must be finite and >= 0, got {SHOWN}"),
        (lambda: RetryPolicy(multiplier=timedelta(seconds=2)), ValidationError,  # type: ignore[arg-type]
         "multiplier must be a number, got datetime.timedelta(seconds=2)"),
        (lambda: MisfirePolicy(grace=NEGATIVE), ValidationError,
         f"misfire grace must be finite and >= 0 seconds, got {SHOWN}"),
        (lambda: Scheduler(max_wait=timedelta(0)), ValidationError,
         "max_wait must be finite and > 0 seconds, got datetime.timedelta(0) (0 seconds)"),
        (lambda: Scheduler(retain_finished=NEGATIVE), ValidationError,
         "retain_finished must be a count of finished tasks (an int >= 0), an age "
         f"(a timedelta >= 0) or None, got {SHOWN}"),
        (lambda: FakeClock(0).advance(NEGATIVE), ValidationError,
         f"FakeClock.advance() takes finite seconds >= 0 (or a timedelta), got {SHOWN}"),
        (lambda: Simulation().run_for(NEGATIVE), ValidationError,
         f"run_for() takes seconds >= 0, got {SHOWN}"),
        (lambda: ClusterTask("t", every=timedelta(0)), ValidationError,
         "task 't' every must be finite and > 0 seconds, got datetime.timedelta(0) (0 seconds)"),
        (lambda: FakeClock(timedelta(0)), ValidationError,  # type: ignore[arg-type]
         "start must be epoch seconds or an aware datetime, got datetime.timedelta(0)"),
    ],
)  # fmt: skip
def test_a_timedelta_out_of_bounds_is_refused_naming_it_and_its_seconds(
    build: Callable[[], object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        build()
    assert str(caught.value) == message


def test_a_registration_timeout_takes_a_timedelta_and_a_bad_one_loses_nothing(
    clock: FakeClock,
) -> None:
    scheduler = Scheduler(clock=clock)
    rate = FixedRate(MINUTE, start_delay=MINUTE)
    kept = scheduler.schedule("kept", noop, rate, timeout=timedelta(seconds=3))
    assert kept.timeout == 3.0 and kept.next_run_at == clock.now() + 60
    before = (kept.status, kept.next_run_at, kept.generation, scheduler.queue_stats())
    with pytest.raises(ValidationError) as caught:
        scheduler.schedule("bad", noop, FixedRate(60), timeout=timedelta(0))
    assert str(caught.value) == (
        "task 'bad': timeout must be seconds > 0, got datetime.timedelta(0) (0 seconds)"
    )
    with pytest.raises(ValidationError, match=r"timeout must be seconds > 0, got .*\(-5 seconds\)"):
        scheduler.modify(kept.id, timeout=NEGATIVE)
    assert scheduler.tasks() == [kept] and kept.timeout == 3.0
    assert (kept.status, kept.next_run_at, kept.generation, scheduler.queue_stats()) == before
    scheduler.modify(kept.id, timeout=MINUTE)
    assert kept.timeout == 60.0
    assert scheduler.shutdown(timeout=timedelta(seconds=5))


def test_the_clock_the_simulation_and_retention_take_timedeltas() -> None:
    clock = FakeClock(1_000)
    assert clock.advance(MINUTE) == 1_060
    sim = Simulation(workers=1, start=0, retain_finished=timedelta(hours=1))
    task = sim.schedule("tick", FixedRate(MINUTE), duration=timedelta(seconds=2))
    sim.run_for(timedelta(minutes=3))
    assert sim.now == 180 and task.run_count == 3
    assert [record.finished - record.started for record in sim.records()] == [2.0] * 3


def test_the_scheduler_waits_take_timedeltas(clock: FakeClock) -> None:
    log = EventLog()
    scheduler = Scheduler(clock=clock, listeners=[log], max_wait=MINUTE)
    task = scheduler.schedule("soon", noop, OneTime(delay=timedelta(seconds=10)))
    scheduler.start()
    clock.advance(timedelta(seconds=10))
    assert scheduler.wait_idle(timeout=timedelta(seconds=5))
    assert log.wait_for(lambda event: event.task_id == task.id, timeout=timedelta(seconds=5))
    assert scheduler.wait_drained(timedelta(seconds=5))
    with pytest.raises(ValidationError, match=r"^wait_idle\(\) timeout must be finite and >= 0"):
        scheduler.wait_idle(timeout=NEGATIVE)
    with pytest.raises(ValidationError, match=r"^shutdown\(\) timeout must be finite and >= 0"):
        scheduler.shutdown(timeout=NEGATIVE)
    assert scheduler.shutdown(timeout=timedelta(seconds=5))


def test_an_action_waits_on_its_context_for_a_timedelta(clock: FakeClock) -> None:
    flags: list[bool] = []
    done = threading.Event()

    def action(ctx: Any) -> None:
        flags.append(ctx.wait(timedelta(0)))
        done.set()

    scheduler = Scheduler(clock=clock)
    scheduler.schedule("waits", action, OneTime(delay=0))
    scheduler.start()
    assert done.wait(5) and flags == [False]
    assert scheduler.shutdown()


def test_a_sqlite_store_takes_timedeltas(tmp_path: Path) -> None:
    with SqliteTaskStore(
        tmp_path / "tasks.db",
        timeout=timedelta(seconds=5),
        shared=True,
        lease=timedelta(seconds=30),
        poll=timedelta(milliseconds=500),
    ) as store:
        assert store._shared is not None
        assert (store._shared.lease, store._shared.poll) == (30.0, 0.5)
    with pytest.raises(ValidationError) as caught:
        SqliteTaskStore(tmp_path / "other.db", timeout=NEGATIVE)
    assert str(caught.value) == f"timeout must be finite and >= 0 seconds, got {SHOWN}"


def test_a_cluster_scenario_takes_timedeltas_through_replace_too() -> None:
    scenario = ClusterScenario(tasks=(ClusterTask("t", every=MINUTE, duration=timedelta(5)),))
    assert scenario.tasks[0].duration == 5 * 86400.0
    # replace() calls the class's __init__, so it takes timedeltas at run time; mypy
    # types it by the fields (the seconds they hold), hence the ignores.
    longer = replace(scenario, lease=timedelta(minutes=2), renewal=timedelta(seconds=30))  # type: ignore[arg-type]
    assert (longer.lease, longer.renewal, longer.first) == (120.0, 30.0, 0.0)
    with pytest.raises(ValidationError, match=r"^renewal must be shorter than the lease"):
        replace(scenario, renewal=timedelta(minutes=1))  # type: ignore[arg-type]
