"""``schedule(..., paused=True)``: a new task registered paused (APScheduler's
``next_run_time=None``), alike in both runtimes; a task that existed keeps its status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    ExecutionRecord,
    FakeClock,
    FixedRate,
    OneTime,
    Scheduler,
    SqliteTaskStore,
    StoreError,
    TaskSnapshot,
    TaskStatus,
    ValidationError,
)
from lldsched.coordination import Claim
from lldsched.stores.memory import InMemoryTaskStore
from tests import jobs
from tests.cluster import StoreSpec, open_store
from tests.conftest import T0, SchedulerFactory
from tests.runtimes import KINDS, Driven
from tests.waits import wait_until


def test_a_task_registered_paused_does_not_run_until_resumed(driven: Any) -> None:
    task = driven.add("report", FixedRate(60), id="report", paused=True)  # due at once
    assert task.status is TaskStatus.PAUSED
    driven.run_until(T0 + 300)
    assert task.run_count == 0 and task.status is TaskStatus.PAUSED
    driven.runtime.resume("report")
    driven.run_until(T0 + 301)
    assert task.run_count == 1 and task.history[0].started == T0 + 300  # at its resume


def test_it_is_announced_once_as_a_registration_that_is_paused(driven: Any) -> None:
    """One event, ``previous`` None and PAUSED, as its one store write says and as another
    process on a shared store hears it: it was two, a registration SCHEDULED it never was
    (never queued, never written so), then a pause no one made."""
    driven.add("report", OneTime(delay=0), id="report", paused=True)
    changes = [(e.previous, e.status) for e in driven.events if e.task_id == "report"]
    assert changes == [(None, TaskStatus.PAUSED)]
    driven.runtime.resume("report")  # its resume is the pause's one status change
    changes = [(e.previous, e.status) for e in driven.events if e.task_id == "report"]
    assert changes[1] == (TaskStatus.PAUSED, TaskStatus.SCHEDULED)


def test_an_existing_task_keeps_its_status_whatever_paused_says(driven: Any) -> None:
    task = driven.add("report", FixedRate(60, start_delay=60), id="report", paused=True)
    driven.runtime.resume("report")  # an operator resumed it
    again = driven.add("report", FixedRate(120), id="report", replace_existing=True, paused=True)
    assert again is task and task.status is TaskStatus.SCHEDULED  # the next start's call
    driven.runtime.pause("report")
    driven.add("report", FixedRate(60), id="report", replace_existing=True)  # paused=False
    assert task.status is TaskStatus.PAUSED


class WritesKept(InMemoryTaskStore):
    """An in-memory store that keeps the status of every write, and refuses them all
    while ``down`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[tuple[str, TaskStatus]] = []
        self.down = False

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        if self.down:
            raise StoreError("connection refused: the server is down")
        self.written.append((snapshot.task.id, snapshot.status))
        super().save(snapshot, record)


@pytest.mark.parametrize("kind", KINDS)
def test_the_store_is_written_once_and_paused_in_both_runtimes(kind: str) -> None:
    store = WritesKept()
    driven = Driven(kind, store=store)
    try:
        task = driven.add("report", FixedRate(60), id="report", paused=True)
        assert store.written == [("report", TaskStatus.PAUSED)]
        assert task.status is TaskStatus.PAUSED
        assert driven.runtime.pending() == []  # nothing queued for it
        driven.runtime.resume("report")
        assert store.written[-1] == ("report", TaskStatus.SCHEDULED)
    finally:
        driven.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_paused_registration_the_store_refuses_registers_nothing(kind: str) -> None:
    store = WritesKept()
    driven = Driven(kind, store=store)
    try:
        store.down = True
        with pytest.raises(StoreError, match="the server is down"):
            driven.add("report", FixedRate(60), id="report", paused=True)
        assert driven.runtime.tasks() == [] and driven.events == []
        store.down = False
        task = driven.add("report", FixedRate(60), id="report", paused=True)  # the id is free
        assert task.status is TaskStatus.PAUSED
    finally:
        driven.close()


def test_paused_that_is_not_a_bool_is_refused_naming_it_and_registers_nothing(
    driven: Any,
) -> None:
    with pytest.raises(
        ValidationError, match=r"task 'report': paused must be True or False, got 'yes'"
    ):
        driven.add("report", FixedRate(60), id="report", paused="yes")
    assert driven.runtime.tasks() == []


def test_a_running_scheduler_never_starts_a_task_registered_paused_before_the_pause(
    make_scheduler: SchedulerFactory,
) -> None:
    # a task due at once on a running scheduler: registration and pause in one lock hold
    scheduler = make_scheduler(workers=4)
    tasks = [
        scheduler.schedule(f"job-{n}", jobs.noop, OneTime(delay=0), paused=True) for n in range(200)
    ]
    assert scheduler.wait_idle()
    assert all(t.status is TaskStatus.PAUSED and t.run_count == 0 for t in tasks)
    assert scheduler.records() == []


def test_the_decorator_form_takes_paused(make_scheduler: SchedulerFactory) -> None:
    scheduler = make_scheduler(clock=FakeClock(T0))

    @scheduler.scheduled(FixedRate(60), id="tick", paused=True)
    def tick() -> None: ...

    assert scheduler.task("tick").status is TaskStatus.PAUSED


def test_a_durable_store_keeps_the_task_paused_across_a_restart(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    for _ in range(2):  # a service registering its jobs at every start
        with (
            SqliteTaskStore(tmp_path / "tasks.db") as store,
            Scheduler(workers=1, clock=clock, store=store) as scheduler,
        ):
            task = scheduler.schedule(
                "report", jobs.noop, FixedRate(60), id="report", replace_existing=True, paused=True
            )
            assert scheduler.wait_idle()
            assert task.status is TaskStatus.PAUSED and task.run_count == 0
        clock.advance(600)


def test_on_a_shared_store_the_other_process_finds_it_paused_and_runs_nothing(
    tmp_path: Path,
) -> None:
    stores = [SqliteTaskStore(tmp_path / "tasks.db", shared=True, poll=0.02) for _ in range(2)]
    first, second = (Scheduler(workers=1, store=store).start() for store in stores)
    try:
        first.schedule("beat", jobs.noop, FixedRate(0.01), id="beat", paused=True)
        again = second.schedule(  # the other process's start: the same job, replace_existing
            "beat", jobs.noop, FixedRate(0.01), id="beat", replace_existing=True
        )
        assert again.status is TaskStatus.PAUSED
        assert first.wait_idle() and second.wait_idle()
        assert stores[0].records("beat") == []
        second.resume("beat")
        # The run lands in either process: the store is where both write it.
        wait_until(lambda: bool(stores[0].records("beat")), timeout=10, what="a run of beat")
    finally:
        for scheduler in (first, second):
            scheduler.shutdown()
        for store in stores:
            store.close()


def test_another_process_following_the_store_mid_registration_finds_it_paused(
    store_spec: StoreSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The interleaving forced: right after the registering process's first write of the
    # task, another process claims what is due and registers the same job
    # (replace_existing, as at its start), before the registering call returns.
    clock = FakeClock(T0)
    stores = [open_store(store_spec, lease=30.0, poll=30.0) for _ in range(2)]
    # Never started: nothing but the test's calls moves either of them.
    first, second = (Scheduler(workers=1, clock=clock, store=store) for store in stores)
    seen: list[tuple[list[Claim], TaskStatus]] = []
    save = stores[0].save

    def save_then_look(snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        save(snapshot, record)
        if not seen:
            claims = stores[1].claim(now=T0 + 3600, limit=16)  # FixedRate(60): due at T0
            again = second.schedule(
                "beat", jobs.noop, FixedRate(60), id="beat", replace_existing=True
            )
            seen.append((claims, again.status))

    monkeypatch.setattr(stores[0], "save", save_then_look)
    try:
        task = first.schedule("beat", jobs.noop, FixedRate(60), id="beat", paused=True)
        assert seen == [([], TaskStatus.PAUSED)]  # nothing claimed, and paused there too
        assert task.status is TaskStatus.PAUSED
        assert stores[1].claim(now=T0 + 3600, limit=16) == []
    finally:
        for scheduler in (first, second):
            scheduler.shutdown()
        for store in stores:
            store.close()
