"""InMemoryTaskStore: latest snapshot per task, every record, delete, and the protocol."""

from __future__ import annotations

from lldsched import FakeClock, FixedRate, InMemoryTaskStore, OneTime, TaskStatus, TaskStore
from tests.conftest import SchedulerFactory, settle


def test_the_store_holds_the_latest_snapshot_and_every_record(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    store = InMemoryTaskStore()
    assert isinstance(store, TaskStore)
    scheduler = make_scheduler(clock=clock, store=store)
    tick = scheduler.schedule("tick", lambda: None, FixedRate(10))
    once = scheduler.schedule("once", lambda: None, OneTime(delay=5))
    settle(scheduler)
    clock.advance(10)
    settle(scheduler)
    snapshots = {s.task.id: s for s in store.load_all()}
    assert snapshots[tick.id].status is TaskStatus.SCHEDULED
    assert snapshots[tick.id].next_run_at == clock.now() + 10
    assert snapshots[once.id].status is TaskStatus.SUCCEEDED and snapshots[once.id].run_count == 1
    assert [r.task_id for r in store.records(tick.id)] == [tick.id, tick.id]
    assert len(store.records()) == 3 and len(store) == 2


def test_remove_deletes_the_task_from_the_store(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    store = InMemoryTaskStore()
    scheduler = make_scheduler(clock=clock, store=store)
    task = scheduler.schedule("tick", lambda: None, FixedRate(10))
    settle(scheduler)
    removed = scheduler.remove(task.id)
    assert removed is task and task.status is TaskStatus.CANCELLED
    assert store.get(task.id) is None and store.records(task.id) == []
    assert scheduler.tasks() == []


def test_without_a_store_nothing_is_written_anywhere(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    assert scheduler._core._store is None and scheduler._core.emit is None
    task = scheduler.schedule("x", lambda: None, OneTime(delay=0))
    settle(scheduler)
    assert task.status is TaskStatus.SUCCEEDED
