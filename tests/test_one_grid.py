"""One grid for a fixed rate's slots: the next slot, the slots a run skipped, the first
slot after an instant and recovery's passed slots are all ``anchor + k * period``
(``FixedRate.slot_at``), so a slot is recorded skipped or run, never both
(docs/decisions/schedules.md, "One grid for a fixed rate's slots")."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lldsched import (
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    Outcome,
    Simulation,
    SqliteTaskStore,
)
from lldsched.core.misfires.plan import passed_slots
from lldsched.schedules.base import next_run_and_skipped
from lldsched.schedules.catchup import CatchUp
from lldsched.sim import fixed
from tests.conftest import SchedulerFactory, settle
from tests.test_next_run_and_skipped import record_of

START = 1_767_571_200.0  # 2026-01-05 00:00 UTC


def both_skipped_and_run(records: object, period: float) -> list[float]:
    """The slots recorded skipped within half a period of a slot that ran."""
    ran = sorted(r.slot for r in records if r.outcome.ran)  # type: ignore[attr-defined]
    skipped = [r.slot for r in records if r.outcome is Outcome.SKIPPED]  # type: ignore[attr-defined]
    return [s for s in skipped if any(abs(s - r) < period / 2 for r in ran)]


@settings(max_examples=150, deadline=None)
@given(
    period=st.sampled_from([0.1, 0.3, 1 / 3, 0.7, 1.1, 2.9]) | st.floats(0.01, 5),
    runs=st.floats(0.0, 4.0),
    offset=st.floats(0, 86400),
)
@example(period=0.1, runs=2.0, offset=0.0)
def test_a_simulated_skip_run_never_records_a_slot_both_skipped_and_run(
    period: float, runs: float, offset: float
) -> None:
    start = START + offset
    sim = Simulation(workers=1, start=start)
    task = sim.schedule("poll", FixedRate(period), duration=fixed(runs * period))
    sim.run(start + 30 * period)
    assert both_skipped_and_run(task.history, period) == []


def test_the_run_of_two_fractional_periods_skips_the_slot_between_only() -> None:
    """FixedRate(0.1) with 0.2 s runs: 0.1 skipped, 0.2 run (it listed 0.1999998 too)."""
    sim = Simulation(workers=1, start=START)
    task = sim.schedule("poll", FixedRate(0.1), duration=fixed(0.2))
    sim.run(START + 0.45)
    rows = [(r.outcome, r.slot) for r in task.history]
    assert rows == [
        (Outcome.OK, START),
        (Outcome.SKIPPED, START + 0.1),
        (Outcome.OK, START + 2 * 0.1),
        (Outcome.SKIPPED, START + 2 * 0.1 + 0.1),
    ]  # the run of 0.4 is still running at 0.45


def test_a_threaded_skip_run_never_records_a_slot_both_skipped_and_run(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    store = InMemoryTaskStore()
    scheduler = make_scheduler(workers=1, clock=clock, store=store)
    start = clock.now()
    runs: list[float] = []

    def two_periods() -> None:  # the first three runs take two periods, the next none
        runs.append(clock.now())
        if len(runs) <= 3:
            clock.advance(0.2)

    scheduler.schedule("poll", two_periods, FixedRate(0.1))
    settle(scheduler)
    records = store.records()
    assert both_skipped_and_run(records, 0.1) == []
    assert [r.slot for r in records if r.outcome is Outcome.SKIPPED] == [
        start + 0.1,
        start + 2 * 0.1 + 0.1,
        (start + 2 * 0.1 + 2 * 0.1) + 0.1,
    ]


def test_a_run_that_skips_a_million_slots_lands_on_the_grid_without_drift() -> None:
    """k large: the next slot and the skipped slots are one rounding from the ideal
    ``anchor + k * period``; 0.1 added a million times to a 2026 instant drifts by
    about 0.095 s (each sum rounds 0.1 down to 0.0999999046)."""
    rate, k = FixedRate(0.1), 1_000_000
    due, skipped = next_run_and_skipped(rate, record_of(START, START + k * 0.1), limit=10)
    assert due == START + k * 0.1 and math.isclose(due - START, 100_000.0, abs_tol=3e-7)
    assert skipped == [START + j * 0.1 for j in range(1, 12)]
    summed = START
    for _ in range(k):
        summed += 0.1
    assert abs(summed - due) > 0.09  # what repeated addition made of the same slot
    slots, following = passed_slots(rate, START, START + k * 0.1, cap=k + 5)
    assert len(slots) == k + 1 and slots[-1] == due and following == START + (k + 1) * 0.1


def test_a_stored_resume_slot_one_float_off_the_grid_is_neither_skipped_twice_nor_run_twice() -> (
    None
):
    """A plan kept in a store before the grid was one (its resume slot summed, a float
    off the slot the run's own grid counts, as recovery's plans were): the run that
    outlasts it skips the slots from it on, and the slot its next run serves is not
    among them, however the two floats round."""
    rate = FixedRate(0.1)
    grid_slot = START + 3 * 0.1
    before = record_of(START - 0.1, START - 0.1)  # the run before the plan's slot
    for then in (math.nextafter(grid_slot, 0), grid_slot, math.nextafter(grid_slot, math.inf)):
        plan = CatchUp(rate, [START], then, resumes=True)
        plan.next_run_and_skipped(before, limit=10)  # hands out START
        due, skipped = plan.next_run_and_skipped(record_of(START, START + 0.55), limit=10)
        assert due == START + 6 * 0.1  # SKIP past the finish, counted from the run's slot
        # The slots from ``then`` on (its grid), and not the one ``due`` runs: a float
        # below it is that slot, not another (catchup.SAME_INSTANT).
        assert skipped == [then + j * 0.1 for j in range(3)]
        # The slot at ``then`` is due, not skipped, when the run ends before it.
        plan = CatchUp(rate, [START], then, resumes=True)
        plan.next_run_and_skipped(before, limit=10)
        due, skipped = plan.next_run_and_skipped(record_of(START, START + 0.25), limit=10)
        assert (due, list(skipped)) == (then, [])


@pytest.mark.parametrize("off", [-1, 0, 1])
def test_a_restored_sqlite_row_a_float_off_the_grid_runs_each_slot_once(
    tmp_path: Path, off: int
) -> None:
    """A row kept by the old rule (its next slot a float off ``anchor + k * period``) is
    the anchor its grid goes on from after a restart: no slot runs twice, none is
    recorded both missed (or skipped) and run."""
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        sim = Simulation(start=START, store=store)
        task = sim.schedule("poll", FixedRate(0.1), id="poll", duration=fixed(0.0))
        sim.run(START + 0.25)
        (row,) = store.load_all()
        assert row.next_run_at == FixedRate(0.1).slot_at(START, 3)  # counted from START
        stored = START + 0.1 + 0.1 + 0.1  # what the rule before summed, a float off it
        for _ in range(abs(off)):
            stored = math.nextafter(stored, math.inf if off > 0 else -math.inf)
        store.save(row._replace(next_run_at=stored))
    with SqliteTaskStore(path) as store:
        sim = Simulation(start=START + 0.75, store=store)
        sim.run(START + 1.65)
        records = store.records(task.id)
    ran = sorted(r.slot for r in records if r.outcome.ran)
    assert all(b - a > 0.05 for a, b in itertools.pairwise(ran))  # none ran twice
    assert both_skipped_and_run(records, 0.1) == []
    not_run = [r.slot for r in records if not r.outcome.ran]
    assert all(b - a > 0.05 for a, b in itertools.pairwise(sorted(not_run)))


@pytest.mark.parametrize("store_kind", ["memory", "sqlite"])
def test_a_restart_goes_on_counting_the_grid_from_the_origin_its_row_keeps(
    tmp_path: Path, store_kind: str
) -> None:
    """A 0.1 s grid restarted after 37 runs: its slots after the restart are
    ``slot_at(START, k)``, the very floats an unrestarted run's are.  Counted on from the
    restored slot (a new grid from it), each differed from those in the last bits."""
    grid = FixedRate(0.1)
    path = tmp_path / "tasks.db"
    store = SqliteTaskStore(path) if store_kind == "sqlite" else InMemoryTaskStore()
    try:
        first = Simulation(start=START, store=store)
        first.schedule("poll", grid, id="poll", duration=fixed(0.0))
        first.run(START + 3.65)
        assert first.shutdown()
        again = Simulation(start=START + 3.65, store=store)
        again.run(START + 9.95)
        slots = [r.slot for r in store.records("poll") if r.outcome.ran]
    finally:
        store.close()
    assert slots == [grid.slot_at(START, k) for k in range(100)]
