"""A store closed before its scheduler: said once, and the verbs refuse.

``store.close()`` while the scheduler runs, or a ``with`` block of the store that ends
before the scheduler's, used to log a traceback at every transition.  Now the first
write the closed store refuses is one error-level line naming the store and what to
do; the scheduler goes on in memory (the design for a store that fails a write after
the fact); and every verb raises ``StoreClosedError`` naming the store before it
changes anything (``lldsched/core/store/writes.py``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    Scheduler,
    Simulation,
    SqliteTaskStore,
    StoreClosedError,
    StoreError,
    TaskStatus,
)
from tests.conftest import T0, settle

ADVICE = "shut the scheduler down before closing its store"


def noop() -> None:
    return None


@pytest.fixture(params=["memory", "sqlite"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """A fresh store of each kind in turn (closed after the test, if it is not yet)."""
    made: list[Any] = []

    def make() -> Any:
        store = (
            InMemoryTaskStore()
            if request.param == "memory"
            else SqliteTaskStore(tmp_path / "tasks.db")
        )
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


def errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "lldsched.store" and r.levelno >= logging.ERROR]


def test_a_closed_store_is_said_once_without_a_traceback_and_the_scheduler_goes_on(
    open_store: Callable[[], Any], clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store()
    scheduler = Scheduler(clock=clock, store=store)
    task = scheduler.schedule("tick", noop, FixedRate(60, start_delay=60))
    scheduler.start()
    store.close()
    with caplog.at_level(logging.DEBUG, logger="lldsched"):
        for _ in range(3):
            clock.advance(60)
            settle(scheduler)
        assert task.run_count == 3  # the registry stays authoritative
        assert scheduler.shutdown()
    (error,) = errors(caplog)
    assert error.exc_info is None
    message = error.getMessage()
    assert message.startswith(f"store {store!r} was closed while its scheduler still runs")
    assert "nothing the scheduler does from now on is stored" in message
    assert ADVICE in message
    # Every write it missed is still counted and said, at debug level: none is dropped silently.
    missed = [r for r in caplog.records if r.levelno == logging.DEBUG and "not done" in r.message]
    assert len(missed) == 3 * 2 - 1  # two transitions a run (begin, finish), the first said above


@pytest.mark.parametrize(
    ("verb", "call"),
    [
        ("register", lambda s, t: s.schedule("new", noop, OneTime(delay=5))),
        ("pause", lambda s, t: s.pause(t.id)),
        ("cancel", lambda s, t: s.cancel(t.id)),
        ("resume", lambda s, t: s.resume(t.id)),
        ("remove", lambda s, t: s.remove(t.id)),
        ("reschedule", lambda s, t: s.reschedule(t.id, FixedRate(30))),
        ("modify", lambda s, t: s.modify(t.id, timeout=5)),
        ("run now", lambda s, t: s.run_now(t.id)),
        ("redrive", lambda s, t: s.redrive(t.id)),
    ],
)
def test_verbs_on_a_scheduler_whose_store_closed_raise_naming_it_and_change_nothing(
    open_store: Callable[[], Any], clock: FakeClock, verb: str, call: Callable[..., object]
) -> None:
    store = open_store()
    scheduler = Scheduler(clock=clock, store=store)
    task = scheduler.schedule("tick", noop, FixedRate(60, start_delay=60))
    name = "'new'" if verb == "register" else repr(task.id)
    before = (task.status, task.next_run_at, task.schedule, task.timeout, scheduler.queue_stats())
    store.close()
    with pytest.raises(StoreClosedError) as caught:
        call(scheduler, task)
    assert str(caught.value) == (
        f"cannot {verb} {name}: the store {store!r} is closed but its scheduler still runs, "
        "and nothing was changed; shut the scheduler down before closing its store (put the "
        "scheduler's `with` block inside the store's)"
    )
    assert isinstance(caught.value, StoreError)
    assert scheduler.tasks() == [task]
    assert (
        task.status,
        task.next_run_at,
        task.schedule,
        task.timeout,
        scheduler.queue_stats(),
    ) == (before)
    assert scheduler.shutdown()


def test_a_store_whose_with_block_ends_before_the_schedulers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(T0)
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        scheduler = Scheduler(clock=clock, store=store)
        task = scheduler.schedule("tick", noop, FixedRate(60, start_delay=60))
    with caplog.at_level(logging.ERROR, logger="lldsched"), scheduler:
        clock.advance(60)
        settle(scheduler)
        with pytest.raises(StoreClosedError, match=r"^cannot pause 'task-1': the store Sqlite"):
            scheduler.pause(task.id)
    assert task.status is TaskStatus.SCHEDULED and task.run_count == 1
    assert len(errors(caplog)) == 1


def test_the_simulation_says_a_closed_store_once_too(caplog: pytest.LogCaptureFixture) -> None:
    store = InMemoryTaskStore()
    sim = Simulation(workers=1, start=T0, store=store)
    task = sim.schedule("tick", FixedRate(60), duration=1.0)
    store.close()
    with caplog.at_level(logging.ERROR, logger="lldsched"):
        sim.run_for(600)
    assert task.run_count == 10 and len(errors(caplog)) == 1  # the 11th is running at 600
    with pytest.raises(StoreClosedError, match=r"^cannot cancel 'task-1'"):
        sim.cancel(task.id)


def test_a_shared_store_closed_is_said_once_not_at_every_wake(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SqliteTaskStore(tmp_path / "shared.db", shared=True, poll=0.01)
    scheduler = Scheduler(store=store)
    task = scheduler.schedule("tick", noop, FixedRate(3600, start_delay=3600))
    with caplog.at_level(logging.DEBUG, logger="lldsched"), scheduler:
        store.close()
        writes = scheduler._core.store_writes
        assert writes is not None
        deadline = time.monotonic() + 10
        while writes.missed < 20 and time.monotonic() < deadline:  # twenty wakes, each refused
            scheduler.wait_idle(timeout=0.05)
        assert writes.missed >= 20
        with pytest.raises(StoreClosedError, match=r"^cannot cancel "):
            scheduler.cancel(task.id)
    (error,) = errors(caplog)
    assert error.exc_info is None and ADVICE in error.getMessage()


def test_an_in_memory_store_closes_like_a_durable_one() -> None:
    with InMemoryTaskStore() as store:
        scheduler = Scheduler(clock=FakeClock(T0), store=store)
        task = scheduler.schedule("tick", noop, FixedRate(60))
        assert not store.closed
    assert store.closed and repr(store) == "InMemoryTaskStore(1 tasks, closed)"
    for call in (lambda: store.load_all(), lambda: store.delete(task.id)):
        with pytest.raises(StoreClosedError, match=r"^the InMemoryTaskStore is closed$"):
            call()
    assert store.get(task.id) is not None and store.records() == []  # still readable
    store.close()  # idempotent
    assert scheduler.shutdown()
