"""A fixed rate's on-time slots are counted from its grid's origin: the ``k``-th slot
is ``FixedRate.slot_at(origin, k)``, the very float, however many runs came before it
(docs/decisions/schedules.md, "A fixed rate's grid is counted from its origin").  Counted from
each run's slot instead, every step rounded once and the grid drifted: 0.1 s at 2026's
epochs stepped 0.0999999046 s, 0.095 s early after a million runs."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lldsched import (
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    Scheduler,
    Simulation,
    SqliteTaskStore,
)
from lldsched.persistence import TaskStore
from lldsched.policies import Overlap
from lldsched.sim import fixed
from lldsched.testing import Stepper

START = 1_767_571_200.0  # 2026-01-05 00:00 UTC


def noop() -> None:
    """An action for the threaded scheduler."""


def test_twenty_thousand_on_time_simulated_runs_are_each_on_the_grid_from_the_first_slot() -> None:
    rate, n = FixedRate(0.1), 20_000
    sim = Simulation(workers=1, start=START)
    sim.schedule("poll", rate, duration=fixed(0.05))
    sim.run(rate.slot_at(START, n - 1) + 0.06)
    slots = [r.slot for r in sim.records()]
    assert slots == [rate.slot_at(START, k) for k in range(n)]
    assert [r.started for r in sim.records()] == slots  # on time, every one
    summed = START
    for _ in range(n - 1):
        summed += 0.1
    assert slots[-1] - summed > 1e-3  # what a grid stepped by addition made of it


@settings(max_examples=40, deadline=None)
@given(
    period=st.sampled_from([0.1, 1 / 3, 0.7, 1.1, 60.0]) | st.floats(1e-3, 90),
    offset=st.floats(0, 86_400),
    length=st.floats(0, 1),
)
def test_on_time_simulated_runs_stay_on_the_grid_of_any_period_and_origin(
    period: float, offset: float, length: float
) -> None:
    rate, start = FixedRate(period), START + offset
    sim = Simulation(workers=1, start=start)
    sim.schedule("poll", rate, duration=fixed(length * period))
    sim.run(rate.slot_at(start, 499) + period / 2)
    slots = [r.slot for r in sim.records()]  # the last run may not have ended (length 1)
    assert len(slots) >= 499
    assert slots == [rate.slot_at(start, k) for k in range(len(slots))]


def test_on_time_threaded_runs_on_a_fake_clock_are_each_on_the_grid_from_the_first_slot() -> None:
    rate = FixedRate(0.1)
    store = InMemoryTaskStore()
    with Stepper(Scheduler(workers=1, clock=FakeClock(START), store=store)) as steps:
        steps.scheduler.schedule("poll", noop, rate, id="poll")
        steps.advance(40.0)
    records = store.records("poll")
    assert len(records) == 401
    assert [r.slot for r in records] == [rate.slot_at(START, k) for k in range(401)]
    assert [r.started for r in records] == [r.slot for r in records]


def _opened(
    kind: str, path: Path, memory: InMemoryTaskStore
) -> contextlib.AbstractContextManager[TaskStore]:
    """The store a restart opens again: the same in-memory store handed over, or the file."""
    if kind == "memory":
        return contextlib.nullcontext(memory)
    return SqliteTaskStore(path)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_after_a_restart_the_runs_go_on_on_the_grid_of_the_first_slot(
    tmp_path: Path, kind: str
) -> None:
    """The stored row keeps the grid's origin (``TaskSnapshot.grid``) beside the next
    slot, and the restarted scheduler counts the grid on from that origin: the slots
    after the restart are the first grid's, the very floats.  Before, it counted a new
    grid from the restored slot (``slot_at(restored, j)``), a rounding off."""
    rate = FixedRate(1 / 3 + 0.1)  # 0.1 s restarted at slot 400 is on both grids alike
    memory = InMemoryTaskStore()
    with _opened(kind, tmp_path / "tasks.db", memory) as store:
        sim = Simulation(start=START, store=store)
        sim.schedule("poll", rate, id="poll", duration=fixed(0.0))
        sim.run(rate.slot_at(START, 399) + 0.05)
        (row,) = store.load_all()
    restored = row.next_run_at
    assert restored == rate.slot_at(START, 400)
    with _opened(kind, tmp_path / "tasks.db", memory) as store:
        sim = Simulation(start=restored, store=store)
        sim.run(rate.slot_at(START, 799) + 0.05)
        slots = [r.slot for r in store.records("poll")]  # type: ignore[attr-defined]
        (row,) = store.load_all()
    assert slots == [rate.slot_at(START, k) for k in range(800)]
    assert row.grid == START  # kept, not moved to the restored slot


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_restarted_after_every_few_runs_the_slots_stay_on_the_first_grid(
    tmp_path: Path, kind: str
) -> None:
    """A service restarted again and again (a deploy, a crash loop) runs its fixed rate
    on the grid of its first slot: the ``k``-th slot is ``slot_at(origin, k)`` however
    many restarts came between.  Restarted from the restored slot each time, a 0.1 s
    grid stepped by one rounded sum a restart, 0.0999999046 s at 2026's epochs: off the
    grid after three restarts, and 0.095 s early after a million."""
    rate = FixedRate(1 / 3 + 0.1)  # an awkward float: no step of it is exact at the epoch
    memory = InMemoryTaskStore()
    runs, lives = 3, 150
    now = START
    for life in range(lives):
        with _opened(kind, tmp_path / "tasks.db", memory) as store:
            sim = Simulation(start=now, store=store)
            if life == 0:
                sim.schedule("poll", rate, id="poll", duration=fixed(0.0))
            now = rate.slot_at(START, runs * (life + 1) - 1) + rate.period / 2
            sim.run(now)
    with _opened(kind, tmp_path / "tasks.db", memory) as store:
        slots = [r.slot for r in store.records("poll")]  # type: ignore[attr-defined]
        (row,) = store.load_all()
    assert len(slots) == runs * lives
    assert slots == [rate.slot_at(START, k) for k in range(runs * lives)]
    assert (row.next_run_at, row.grid) == (rate.slot_at(START, runs * lives), START)


def test_threaded_restarts_on_a_fake_clock_keep_the_first_grid(tmp_path: Path) -> None:
    """The threaded runtime restored from SQLite at each start, driven on a ``FakeClock``
    (no sleep): each life's runs are on the first slot's grid."""
    rate = FixedRate(0.1)
    path = tmp_path / "tasks.db"
    now = START
    for life in range(40):
        with SqliteTaskStore(path) as store:
            scheduler = Scheduler(workers=1, clock=FakeClock(now), store=store)
            with Stepper(scheduler) as steps:
                if life == 0:
                    scheduler.schedule("poll", noop, rate, id="poll")
                now = rate.slot_at(START, 2 * life + 1) + 0.05
                steps.advance_to(now)
    with SqliteTaskStore(path) as store:
        slots = [r.slot for r in store.records("poll")]
    assert slots == [rate.slot_at(START, k) for k in range(80)]


def test_a_row_written_before_the_grid_was_kept_restarts_on_its_slot_and_keeps_it_since(
    tmp_path: Path,
) -> None:
    """A file of the previous schema (8: no grid kept) is migrated at open, and its row,
    which keeps no grid (NULL), is restored as that release restored it, its grid
    counted from the restored slot; its next write keeps that origin, which every later
    restart counts from."""
    rate = FixedRate(0.1)
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        sim = Simulation(start=START, store=store)
        sim.schedule("poll", rate, id="poll", duration=fixed(0.0))
        sim.run(rate.slot_at(START, 9) + 0.05)
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as connection:
        connection.executescript(  # as the previous release left it
            "BEGIN; ALTER TABLE tasks DROP COLUMN grid; ALTER TABLE tasks DROP COLUMN blocked_due;"
            " ALTER TABLE tasks DROP COLUMN blocked_slot;"
            " ALTER TABLE tasks DROP COLUMN blocked_next; PRAGMA user_version = 8; COMMIT;"
        )
    restored = rate.slot_at(START, 10)
    with SqliteTaskStore(path) as store:
        (row,) = store.load_all()
        assert (row.next_run_at, row.grid) == (restored, None)
        sim = Simulation(start=restored, store=store)
        sim.run(restored + 0.05)  # one run: the row is written with the origin it counts from
        (row,) = store.load_all()
        assert row.grid == restored
    for life in range(10):
        with SqliteTaskStore(path) as store:
            sim = Simulation(start=rate.slot_at(restored, 2 * life) + 0.05, store=store)
            sim.run(rate.slot_at(restored, 2 * life + 2) + 0.05)
    with SqliteTaskStore(path) as store:
        slots = [r.slot for r in store.records("poll")]
    assert slots[:10] == [rate.slot_at(START, k) for k in range(10)]
    assert slots[10:] == [rate.slot_at(restored, j) for j in range(21)]


def test_a_resumed_fixed_rate_counts_its_new_grid_from_the_resumed_run() -> None:
    rate = FixedRate(0.1)
    sim = Simulation(workers=1, start=START)
    sim.schedule("poll", rate, id="poll", duration=fixed(0.0))
    sim.run(START + 0.55)
    sim.pause("poll")
    resumed = START + 7.77
    sim.run(resumed)
    sim.resume("poll")
    sim.run(rate.slot_at(resumed, 299) + 0.05)
    slots = [r.slot for r in sim.records()]
    assert slots[:6] == [rate.slot_at(START, k) for k in range(6)]
    assert slots[6:] == [rate.slot_at(resumed, j) for j in range(300)]


@pytest.mark.parametrize("overlap", [Overlap.ALLOW, Overlap.CANCEL_OTHER])
def test_overlapping_runs_queue_each_next_slot_on_the_grid(overlap: Overlap) -> None:
    """A task whose runs may overlap queues the slot after a run's as that run begins:
    counted from the grid's origin too, and, its runs shorter than a period, on time."""
    rate = FixedRate(0.1)
    sim = Simulation(workers=2, start=START)
    instances = 2 if overlap is Overlap.ALLOW else None
    sim.schedule("poll", rate, duration=fixed(0.05), overlap=overlap, max_instances=instances)
    sim.run(rate.slot_at(START, 1999) + 0.06)
    slots = [r.slot for r in sim.records()]
    assert slots == [rate.slot_at(START, k) for k in range(2000)]


def test_a_run_now_extra_run_keeps_the_grid_from_the_first_slot() -> None:
    rate = FixedRate(0.1)
    sim = Simulation(workers=1, start=START)
    sim.schedule("poll", rate, id="poll", duration=fixed(0.0))
    sim.run(START + 0.55)
    assert sim.run_now("poll")
    sim.run(rate.slot_at(START, 299) + 0.05)
    ran = [r.slot for r in sim.records()]
    assert ran[6] == START + 0.55  # the extra run, then the slot it put off, and on
    assert ran[:6] + ran[7:] == [rate.slot_at(START, k) for k in range(300)]
