"""A record names its task as the task was named when the run happened: an audit trail
read after a rename (``schedule(..., id=..., replace_existing=True)`` with another name)
says which job ran, not what the job is called today.  The scheduler's history, the
listeners' events, the log line, a frame and every store agree (docs/decisions/persistence.md, "A
record keeps the name its run had").  Each test failed before the fix: the run in flight
across a rename was recorded under the new name, and the durable stores read every
record's name from its task's row."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    FakeClock,
    FixedDelay,
    FixedRate,
    RunContext,
    Scheduler,
    SqliteTaskStore,
    TaskEvent,
)
from lldsched.stores.memory import InMemoryTaskStore
from lldsched.testing import Stepper
from tests import jobs
from tests.conftest import SchedulerFactory, settle

WAIT = 10.0  # bound of every wait below: a failing test fails, it never hangs
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


@pytest.fixture(params=["memory", "sqlite", "sqlite-shared", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """Each kind of store, closed after the test."""
    opened: Any
    if request.param == "memory":
        opened = InMemoryTaskStore()
    elif request.param.startswith("sqlite"):
        opened = SqliteTaskStore(tmp_path / "jobs.db", shared=request.param == "sqlite-shared")
    else:
        from lldsched.stores.postgres import PostgresTaskStore

        opened = PostgresTaskStore(request.getfixturevalue("postgres_dsn"))
    yield opened
    opened.close()


BEGAN = threading.Event()  # held() is running
GO = threading.Event()  # the test let it return


def held(ctx: RunContext) -> str:
    """Wait for the test, then return the name the run's context gave (at module level:
    a durable store keeps the action as an import path)."""
    BEGAN.set()
    assert GO.wait(WAIT)
    return ctx.name


def test_a_run_in_flight_across_a_rename_keeps_the_name_it_began_with(
    make_scheduler: SchedulerFactory, store: Any
) -> None:
    BEGAN.clear()
    GO.clear()
    events: list[TaskEvent] = []
    scheduler = make_scheduler(workers=1, store=store)
    scheduler.add_listener(events.append)
    try:
        scheduler.schedule("nightly report", held, FixedDelay(3600), id="job")
        assert BEGAN.wait(WAIT)  # a run begun under the first name...
        scheduler.schedule(  # ...and the task renamed while it runs
            "daily report", held, FixedDelay(3600), id="job", replace_existing=True
        )
    finally:
        GO.set()
    settle(scheduler)
    (record,) = scheduler.task("job").history
    assert record.name == "nightly report"
    assert record.result == "'nightly report'"  # what its context said
    assert [event.record.name for event in events if event.record is not None] == ["nightly report"]
    assert store.records("job") == [record]  # the store agrees, after the rename
    assert scheduler.task("job").name == "daily report"  # the task's name is the new one


def _renamed_runs(scheduler: Scheduler, names: list[str]) -> None:
    """One run under each of ``names``, the task renamed between runs (a stepped clock)."""
    with Stepper(scheduler) as stepper:
        for name in names:
            scheduler.schedule(
                name, jobs.noop, FixedRate(60, start_delay=60), id="job", replace_existing=True
            )
            stepper.advance(60)


def test_a_store_keeps_each_records_name_through_renames(store: Any) -> None:
    names = ["first", "second", "third"]
    _renamed_runs(Scheduler(workers=1, store=store, clock=FakeClock(T0)), names)
    assert [record.name for record in store.records("job")] == names
    assert [record.name for record in store.records()] == names


def test_a_frame_shows_the_name_each_run_had() -> None:
    pytest.importorskip("pandas")
    from lldsched.views.frames import to_frame

    scheduler = Scheduler(workers=1, clock=FakeClock(T0))
    _renamed_runs(scheduler, ["first", "second"])
    assert [record.name for record in scheduler.task("job").history] == ["first", "second"]
    assert list(to_frame(scheduler)["name"]) == ["first", "second"]


def test_a_record_written_before_names_were_kept_reads_its_tasks_name(tmp_path: Path) -> None:
    # A file of schema 4 kept no name per record: migrated, its records read the task's
    # name, as they did, and the records written since keep their own.
    path = tmp_path / "old.db"
    with SqliteTaskStore(path) as store:
        _renamed_runs(Scheduler(workers=1, store=store, clock=FakeClock(T0)), ["old name"])
    connection = sqlite3.connect(path, isolation_level=None)
    connection.executescript(
        "BEGIN; ALTER TABLE records DROP COLUMN name; ALTER TABLE records DROP COLUMN node;"
        " ALTER TABLE tasks DROP COLUMN slot;"
        " ALTER TABLE tasks DROP COLUMN slot_due; ALTER TABLE tasks DROP COLUMN resume_at;"
        " ALTER TABLE tasks DROP COLUMN grid; ALTER TABLE tasks DROP COLUMN blocked_due;"
        " ALTER TABLE tasks DROP COLUMN blocked_slot; ALTER TABLE tasks DROP COLUMN blocked_next;"
        " PRAGMA user_version = 4; COMMIT;"
    )
    connection.close()
    with SqliteTaskStore(path) as store:
        clock = FakeClock(T0 + 60)
        _renamed_runs(Scheduler(workers=1, store=store, clock=clock), ["new", "newest"])
        assert [record.name for record in store.records("job")] == [
            "newest",  # kept no name: its task's
            "new",
            "newest",
        ]
