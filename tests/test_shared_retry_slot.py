"""A retry read from a shared store's feed belongs to its task's last run's slot.

The change feed gives a task's latest row, not each one between: a process that read the
row only once another process's run of 10:00 had failed (its run of 09:00 read in the
same breath) kept 09:00 as the slot its task stood at.  Claiming the retry, it ran it as
09:00's (its record in 09:00, 10:00 recorded ``skipped`` after it).  The row does not
keep a retry's slot; the records do (:func:`lldsched.core.recovery.pending_slot`, the
rule a restart and a row loaded shared use).  A retry paused in one process and resumed
in another alike: the paused row, followed, kept the slot the follower last knew.  On
SQLite and on a real PostgreSQL server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lldsched import FakeClock, FixedRate, Scheduler
from lldsched.policies import RetryPolicy
from lldsched.stores.postgres import PostgresTaskStore
from lldsched.stores.sqlite import SqliteTaskStore
from lldsched.testing import Stepper
from tests.conftest import T0

HOUR = 3600.0
BACKOFF = 600.0
RUNS: list[float] = []


def _second_fails() -> None:
    """Succeeds, then fails once (the 10:00 run's attempt 1), then succeeds."""
    RUNS.append(0.0)
    if len(RUNS) == 2:
        raise RuntimeError("the 10:00 run fails once")


@pytest.fixture(params=["sqlite", "postgres"])
def two_stores(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Callable[[], SqliteTaskStore | PostgresTaskStore]:
    """``make()``: a store of one process on one shared place (one per call)."""
    RUNS.clear()
    request.addfinalizer(RUNS.clear)
    if request.param == "sqlite":
        path = str(tmp_path / "tasks.db")
        opened: list[SqliteTaskStore] = []

        @request.addfinalizer
        def _close() -> None:
            for store in opened:
                store.close()

        def make_sqlite() -> SqliteTaskStore:
            store = SqliteTaskStore(path, shared=True, poll=0.05)
            opened.append(store)
            return store

        return make_sqlite
    open_store: Callable[..., PostgresTaskStore] = request.getfixturevalue("open_store")
    return lambda: open_store(poll=0.05)


def test_a_retry_followed_from_the_feed_runs_in_the_slot_it_retries(
    two_stores: Callable[[], SqliteTaskStore | PostgresTaskStore],
) -> None:
    first, second = two_stores(), two_stores()
    retry = RetryPolicy(max_attempts=3, initial_backoff=BACKOFF, max_backoff=BACKOFF)
    a = Scheduler(clock=FakeClock(T0), store=first, name="a")
    a.schedule("job", _second_fails, FixedRate(HOUR), id="job", retry=retry)
    b = Scheduler(clock=FakeClock(T0), store=second, name="b")  # loads job due at 09:00
    with Stepper(a) as steps:  # a runs 09:00, then 10:00's attempt 1 fails
        steps.settle()
        steps.advance(HOUR)
        steps.settle()
    with Stepper(b) as steps:  # b reads the row retrying 10:00, and runs the retry
        steps.advance_to(T0 + HOUR + BACKOFF)
        steps.settle()
        assert b.task("job").next_run_at == T0 + 2 * HOUR
    history = [(r.slot - T0, r.attempt, r.outcome.value) for r in second.records("job")]
    assert history == [(0.0, 1, "ok"), (HOUR, 1, "failed"), (HOUR, 2, "ok")]


def _paused_and_resumed(
    pauser: Scheduler,
    resumer: Scheduler,
    store: SqliteTaskStore | PostgresTaskStore,
    resumed_at: float,
) -> tuple[list[tuple[float, int, str]], float | None]:
    """``pauser`` (``job`` registered) runs 09:00, fails 10:00's attempt 1 and pauses the
    retry; ``resumer`` resumes it at ``resumed_at`` (the same scheduler: the
    single-process reference) and runs it.  ``store``'s history and the task's next due
    instant, both from 09:00."""
    with Stepper(pauser) as steps:
        steps.settle()
        steps.advance(HOUR)
        steps.settle()
        pauser.pause("job")
        if resumer is pauser:
            _resume(steps, resumer, resumed_at)
    if resumer is not pauser:
        with Stepper(resumer) as steps:
            _resume(steps, resumer, resumed_at)
    due = resumer.task("job").next_run_at
    history = [(r.slot - T0, r.attempt, r.outcome.value) for r in store.records("job")]
    return history, None if due is None else due - T0


@pytest.mark.parametrize("resumed_at", [HOUR + BACKOFF / 2, HOUR + 2 * BACKOFF])
def test_a_retry_paused_in_one_process_and_resumed_in_another_runs_in_its_slot(
    two_stores: Callable[[], SqliteTaskStore | PostgresTaskStore],
    tmp_path: Path,
    resumed_at: float,
) -> None:
    """Before, the follower kept 09:00 (the slot it loaded the task at): the retry ran
    recorded in 09:00, and 10:00 was recorded ``skipped`` after it."""
    store = SqliteTaskStore(str(tmp_path / "alone.db"))
    alone = Scheduler(clock=FakeClock(T0), store=store)
    _job(alone)
    reference = _paused_and_resumed(alone, alone, store, resumed_at)
    store.close()
    assert reference == ([(0.0, 1, "ok"), (HOUR, 1, "failed"), (HOUR, 2, "ok")], 2 * HOUR)
    RUNS.clear()
    first, second = two_stores(), two_stores()
    a = Scheduler(clock=FakeClock(T0), store=first, name="a")
    _job(a)
    b = Scheduler(clock=FakeClock(T0), store=second, name="b")  # loads job due at 09:00
    assert _paused_and_resumed(a, b, second, resumed_at) == reference


def _resume(steps: Stepper, scheduler: Scheduler, resumed_at: float) -> None:
    steps.advance_to(T0 + resumed_at)
    scheduler.resume("job")
    steps.advance_to(T0 + max(resumed_at, HOUR + BACKOFF))
    steps.settle()


def _job(scheduler: Scheduler) -> None:
    retry = RetryPolicy(max_attempts=3, initial_backoff=BACKOFF, max_backoff=BACKOFF)
    scheduler.schedule("job", _second_fails, FixedRate(HOUR), id="job", retry=retry)
