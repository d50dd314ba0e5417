"""A fixed rate's on-time slots are counted from its grid's origin: the ``k``-th slot
is ``FixedRate.slot_at(origin, k)``, the very float, however many runs came before it
(docs/DECISIONS.md, "A fixed rate's grid is counted from its origin").  Counted from
each run's slot instead, every step rounded once and the grid drifted: 0.1 s at 2026's
epochs stepped 0.0999999046 s, 0.095 s early after a million runs."""

from __future__ import annotations

import contextlib
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


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_after_a_restart_the_runs_go_on_on_the_grid_of_the_restored_slot(
    tmp_path: Path, kind: str
) -> None:
    """The stored row keeps the next slot (counted from the first), and the restarted
    scheduler counts its grid on from it: no run adds its period to the one before."""
    rate = FixedRate(0.1)
    memory = InMemoryTaskStore()

    def opened() -> contextlib.AbstractContextManager[TaskStore]:
        if kind == "memory":
            return contextlib.nullcontext(memory)
        return SqliteTaskStore(tmp_path / "tasks.db")

    with opened() as store:
        sim = Simulation(start=START, store=store)
        sim.schedule("poll", rate, id="poll", duration=fixed(0.0))
        sim.run(rate.slot_at(START, 399) + 0.05)
        (row,) = store.load_all()
    restored = row.next_run_at
    assert restored == rate.slot_at(START, 400)
    with opened() as store:
        sim = Simulation(start=restored, store=store)
        sim.run(rate.slot_at(restored, 399) + 0.05)
        slots = [r.slot for r in store.records("poll")]  # type: ignore[attr-defined]
    assert slots[:400] == [rate.slot_at(START, k) for k in range(400)]
    assert slots[400:] == [rate.slot_at(restored, j) for j in range(400)]


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
