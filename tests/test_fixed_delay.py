"""A fixed delay is at least a microsecond (docs/decisions/schedules.md, "A fixed delay is at least
a microsecond").

``FixedDelay(0)`` made its task due again at the instant its run finished, so on a clock
that stands still (a ``FakeClock``, a simulation whose runs take no time) it ran for ever
at one instant: ``Simulation.run_for`` never returned, a ``Stepper`` raised
``SettleTimeoutError``, and a draining ``shutdown()`` reran it until its timeout.  It is
refused at construction now, naming the value, as a fixed rate's period under a
microsecond is; the shortest delay moves a frozen clock on both runtimes, so the
simulation and the drain end; and a store an earlier release wrote with one still opens.
"""

from __future__ import annotations

import logging
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lldsched import FakeClock, FixedDelay, ScheduleError, Scheduler, Simulation, SqliteTaskStore
from lldsched.checks import FINEST
from lldsched.logs import STORE
from lldsched.testing import Stepper

T0 = datetime(2026, 1, 5, tzinfo=UTC).timestamp()


def noop() -> None:
    return None


def instants(start: float, end: float, step: float) -> list[float]:
    """The instants a task ``step`` seconds apart, taking no time, starts at from
    ``start`` to ``end`` included, added up as the core adds them (finish + delay)."""
    found, at = [], start
    while at <= end:
        found.append(at)
        at = at + step
    return found


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "FixedDelay delay must be finite and > 0 seconds, got 0"),
        (0.0, "FixedDelay delay must be finite and > 0 seconds, got 0.0"),
        (-0.0, "FixedDelay delay must be finite and > 0 seconds, got -0.0"),
        (
            timedelta(0),
            "FixedDelay delay must be finite and > 0 seconds, got datetime.timedelta(0) "
            "(0 seconds)",
        ),
        (
            5e-7,
            "FixedDelay delay must be at least 1e-06 seconds (a microsecond: a shorter step "
            "is lost in an instant's float), got 5e-07",
        ),
    ],
    ids=repr,
)
def test_a_delay_under_a_microsecond_is_refused_naming_it(value: object, message: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        FixedDelay(value)  # type: ignore[arg-type]
    assert str(caught.value) == message


def test_a_reschedule_to_no_delay_is_refused_and_the_task_keeps_its_schedule() -> None:
    simulation = Simulation(start=T0)
    task = simulation.schedule("poll", FixedDelay(10))
    with pytest.raises(ScheduleError, match=r"got 0$"):
        simulation.reschedule(task.id, FixedDelay(0))
    assert task.schedule == FixedDelay(10) and task.next_run_at == T0


def test_the_shortest_delay_is_a_microsecond() -> None:
    assert FixedDelay(FINEST).delay == 1e-6
    assert FixedDelay(timedelta(microseconds=1)) == FixedDelay(1e-6)


def test_the_shortest_delay_moves_a_simulation_whose_runs_take_no_time() -> None:
    # Before: FixedDelay(0) with runs of no length stayed at T0 and run_for never returned.
    simulation = Simulation(start=T0)
    simulation.schedule("poll", FixedDelay(FINEST))
    simulation.run_for(0.001)
    started = [record.started for record in simulation.records()]
    assert started == instants(T0, T0 + 0.001, FINEST)
    assert simulation.now == T0 + 0.001


def test_the_shortest_delay_moves_a_stepped_scheduler_one_run_an_instant() -> None:
    # Before: FixedDelay(0) was due again at T0 after every run, and advance(0) raised
    # SettleTimeoutError after its timeout.
    with Stepper(Scheduler(clock=FakeClock(T0)), timeout=5) as steps:
        task = steps.scheduler.schedule("poll", noop, FixedDelay(FINEST))
        steps.advance(0)
        assert [record.started for record in task.history] == [T0]
        assert task.next_run_at == T0 + FINEST
        steps.advance(5e-6)
        started = [record.started for record in task.history]
        assert started == instants(T0, T0 + 5e-6, FINEST)


def test_a_draining_shutdown_on_a_frozen_clock_runs_what_is_due_once_and_ends() -> None:
    # Before: FixedDelay(0)'s next run was due at the shutdown instant after every run, so
    # the drain reran it until its timeout and shutdown() returned False.
    scheduler = Scheduler(clock=FakeClock(T0))
    scheduler.start()
    task = scheduler.schedule("poll", noop, FixedDelay(FINEST))
    assert scheduler.shutdown(drain=True, timeout=5.0) is True
    assert [record.started for record in task.history] == [T0]  # the next is after T0


def test_a_store_written_with_no_delay_opens_with_the_shortest_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # An earlier release stored FixedDelay(0); refused now, it would have made the whole
    # store fail to open.  It is read as the shortest delay, said at WARNING.
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        Simulation(start=T0, store=store).schedule("poll", FixedDelay(5), id="poll")
    with sqlite3.connect(path) as connection:
        changed = connection.execute(
            "UPDATE tasks SET definition = replace(definition, '\"delay\":5,', '\"delay\":0,')"
        ).rowcount
    connection.close()
    assert changed == 1
    with caplog.at_level(logging.WARNING, logger=STORE), SqliteTaskStore(path) as store:
        simulation = Simulation(start=T0, store=store)
        task = simulation.task("poll")
        assert task.schedule == FixedDelay(FINEST)
        simulation.run_for(5e-6)  # it moves on, one run an instant
        assert len(simulation.records()) == len(instants(T0, T0 + 5e-6, FINEST))
    assert "a stored FixedDelay(0) is read as FixedDelay(1e-06)" in caplog.text


def test_a_stored_negative_delay_is_refused_not_read_as_the_shortest_one() -> None:
    from lldsched.stores.codec import decode_schedule

    stored = {"type": "FixedDelay", "delay": -0.5, "start_delay": 0}
    with pytest.raises(ScheduleError, match=r"-0\.5"):
        decode_schedule(stored)
