"""InMemoryTaskStore: latest snapshot per task, every record (or a retention), delete, and
the protocol."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from lldsched import (
    ExecutionRecord,
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    RetryPolicy,
    Simulation,
    SqliteTaskStore,
    TaskSnapshot,
    TaskStatus,
    TaskStore,
    ValidationError,
)
from tests.conftest import T0, SchedulerFactory, settle
from tests.tracking import tracked_from


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


def test_a_tasks_records_in_the_store_cost_the_collector_one_object_besides_them(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    store = InMemoryTaskStore()
    scheduler = make_scheduler(clock=clock, store=store)
    scheduler.schedule("tick", lambda: None, FixedRate(10))
    settle(scheduler)
    clock.advance(10)
    settle(scheduler)
    assert len(store.records()) == 2
    kept = [*store.load_all(), *store.records()]
    held = sorted(type(thing).__name__ for thing in tracked_from(store, leave_out=kept))
    # The store, its lock, its dicts of snapshots and of records, and the task's list of
    # records (their numbers in it: no second list).  From Python 3.14 the collector
    # tracks every dict, the store's empty one of failed ids too (3.11 to 3.13 untrack a
    # dict that holds no tracked object).
    empty = ["dict"] if sys.version_info >= (3, 14) else []
    assert held == sorted(["InMemoryTaskStore", "dict", "dict", "list", "lock", *empty])


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


def test_a_retention_keeps_the_latest_records_of_each_task_as_sqlite_does(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    store = InMemoryTaskStore(retention=3)
    # One worker: "tick", registered first, saves its first record first (with more, the
    # two first runs, due together, could finish in either order, and so list).
    scheduler = make_scheduler(clock=clock, store=store, workers=1)
    tick = scheduler.schedule("tick", lambda: None, FixedRate(10))
    other = scheduler.schedule("other", lambda: None, FixedRate(10))
    held = []  # the most a task's list held after each run: a number and a record each
    for _ in range(9):
        settle(scheduler)
        held.append(max(len(kept) for kept in store._records.values()))
        clock.advance(10)
    settle(scheduler)
    latest = [r.started for r in store.records(tick.id)]
    assert latest == [clock.now() - 20, clock.now() - 10, clock.now()]  # of 10 runs
    # every task's records in the order saved, as SQLite gives them (not grouped by task)
    assert [r.task_id for r in store.records()] == [tick.id, other.id] * 3
    # trimmed a tenth late (of 3: one record), never later, and trimmed
    assert max(held) == 2 * (3 + 1) and held[-1] < max(held)


class _Held(InMemoryTaskStore):
    """An in-memory store that notes how many records its task holds after each save."""

    def __init__(self, *, retention: int) -> None:
        super().__init__(retention=retention)
        self.held: list[int] = []

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        super().save(snapshot, record)
        if record is not None:
            self.held.append(len(self._records[record.task_id]) // 2)  # a number, a record


def test_a_retention_of_a_hundred_holds_a_tenth_more_between_trims() -> None:
    """``retention=100`` holds 110 records at most, never fewer than 100 once trimmed
    (the module's "batches of a tenth"), and answers the latest 100."""
    store = _Held(retention=100)
    sim = Simulation(workers=1, start=T0, store=store)
    tick = sim.schedule("tick", FixedRate(1), id="tick")
    sim.run_for(299)
    sim.shutdown()
    assert len(store.held) == 300 and max(store.held) == 110
    assert min(store.held[110:]) == 100 and store.held[110] == 100  # the first trim
    assert [r.due for r in store.records(tick.id)] == [T0 + n for n in range(200, 300)]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_the_least_retention_keeps_the_latest_record_of_each_task(
    kind: str, tmp_path: Path
) -> None:
    """``retention=1``, the least a store takes (0 is refused below), keeps one record a
    task, its latest, on either store."""
    store = (
        InMemoryTaskStore(retention=1)
        if kind == "memory"
        else SqliteTaskStore(tmp_path / "t.db", retention=1)
    )
    with store:
        sim = Simulation(workers=1, start=T0, store=store)
        tick = sim.schedule("tick", FixedRate(10), id="tick")
        sim.schedule("other", FixedRate(10), id="other")
        sim.run_for(100)
        assert [(r.task_id, r.due) for r in store.records()] == [
            ("tick", T0 + 100),
            ("other", T0 + 100),
        ]
        assert [r.due for r in store.records(tick.id)] == [T0 + 100]
        sim.shutdown()


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "10"])
def test_a_bad_retention_is_refused_naming_it(bad: object) -> None:
    with pytest.raises(ValidationError) as raised:
        InMemoryTaskStore(retention=bad)  # type: ignore[arg-type]
    assert "retention" in str(raised.value) and repr(bad) in str(raised.value)


@pytest.mark.parametrize("bad", [5, ["a"], b"a", True])
@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_records_of_what_is_no_task_id_is_refused_naming_it(
    kind: str, bad: object, tmp_path: Path
) -> None:
    """Before: ``records(5)`` answered ``[]`` (no row matched) and ``records(["a"])``
    raised ``TypeError`` from the in-memory store and, from SQLite's, a ``StoreError``
    saying the store failed to read its records."""
    store = InMemoryTaskStore() if kind == "memory" else SqliteTaskStore(tmp_path / "t.db")
    with store:
        with pytest.raises(ValidationError, match=re.escape(f"or None, got {bad!r}")):
            store.records(bad)  # type: ignore[arg-type]
        assert store.records() == [] and store.records("a") == []


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_failed_task_removed_leaves_the_dead_letter(
    kind: str, make_scheduler: SchedulerFactory, clock: FakeClock, tmp_path: Path
) -> None:
    """As SQLite's ``delete`` does, the in-memory store's forgets a FAILED task's place in
    the dead letter with its row: the scheduler's ``remove`` of it leaves none behind."""
    store = InMemoryTaskStore() if kind == "memory" else SqliteTaskStore(tmp_path / "t.db")
    with store:
        scheduler = make_scheduler(clock=clock, store=store)
        once = RetryPolicy(max_attempts=1)
        doomed = scheduler.schedule("doomed", _fails, OneTime(delay=0), retry=once)
        other = scheduler.schedule("other", _fails, OneTime(delay=0), retry=once)
        settle(scheduler)
        assert sorted(store.dead_letter()) == sorted([doomed.id, other.id])
        scheduler.remove(doomed.id)
        assert store.dead_letter() == [other.id]
        scheduler.shutdown()


@pytest.mark.parametrize("verb", ["get", "delete"])
@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_get_or_delete_of_what_is_no_task_id_is_refused_naming_it(
    kind: str, verb: str, tmp_path: Path
) -> None:
    """``delete(snapshot)``, its ``.id`` forgotten, is refused on either store, not a
    delete of nothing, unsaid (``storechecks.id_asked``); ``get`` likewise."""
    store = InMemoryTaskStore() if kind == "memory" else SqliteTaskStore(tmp_path / "t.db")
    said = re.escape(f"{verb}() takes a task id (a str), got 5")
    with store, pytest.raises(ValidationError, match=said):
        getattr(store, verb)(5)


def _fails() -> None:
    raise RuntimeError("no")
