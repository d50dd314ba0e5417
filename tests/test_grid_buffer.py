"""``Overlap.BUFFER_ONE`` keeps a fixed rate's grid: the run a long run's slots fold into
is for a slot of the task's grid, ``FixedRate.slot_at(origin, k)``, the very float, and
so is every slot after it, however many slots the run outlasted, with or without a
catch-up plan in front of the rate (docs/decisions/schedules.md, "A fixed rate's slots after
downtime are its grid's").  A run that outlasted more than ``MAX_SKIPPED`` slots had its
latest slot counted on from the run's slot (``buffered``), a rounding off the grid at a
0.1 s or ``1/3 + 0.1`` s period, where a new grid started."""

from __future__ import annotations

import pytest

from lldsched import (
    EventLog,
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    Overlap,
    Scheduler,
    Simulation,
)
from lldsched.core.names import MAX_SKIPPED
from lldsched.model import ExecutionRecord
from lldsched.policies import Misfire, MisfirePolicy
from lldsched.sim import uniform
from lldsched.testing import Stepper
from tests.test_grid_downtime import START, off_grid

PERIODS = [0.1, 1 / 3 + 0.1]


def _folded_past_the_list(records: list[ExecutionRecord], period: float) -> bool:
    """Some run outlasted more than MAX_SKIPPED slots (BUFFER_ONE asked on past them)."""
    return any(r.finished - r.slot > (MAX_SKIPPED + 2) * period for r in records)


@pytest.mark.parametrize("period", PERIODS)
def test_buffer_one_runs_longer_than_a_period_stay_on_the_grid_in_sim(period: float) -> None:
    """Runs of up to 30 periods on one worker: the slots each folds, the run for the
    latest of them and every slot after are slots of the first grid."""
    rate = FixedRate(period)
    sim = Simulation(workers=1, start=START, seed=7)
    sim.schedule(
        "poll", rate, duration=uniform(0.5 * period, 30 * period), overlap=Overlap.BUFFER_ONE
    )
    sim.run(START + 2_000 * period)
    records = sim.records()
    assert len(records) > 300
    assert {"ok", "coalesced"} <= {record.outcome.value for record in records}
    assert _folded_past_the_list(records, period)
    assert off_grid(rate, START, [record.slot for record in records]) == []


@pytest.mark.parametrize("period", PERIODS)
def test_buffer_one_with_catch_up_plans_after_restarts_stays_on_the_grid(period: float) -> None:
    """Restarts after downtime put a ``RUN_ALL`` plan (``CatchUp``) in front of the rate;
    runs outlast the plan's slots and the slots after it: every record, and the next due
    slot, is a slot of the first grid."""
    rate = FixedRate(period)
    store = InMemoryTaskStore()
    misfire = MisfirePolicy(Misfire.RUN_ALL, grace=0.0, max_catch_up=4)
    now = START
    for life in range(30):
        sim = Simulation(workers=1, start=now, store=store, seed=life)
        if life == 0:
            sim.schedule(
                "poll", rate, id="poll", misfire=misfire, overlap=Overlap.BUFFER_ONE,
                duration=uniform(0.5 * period, 30 * period),
            )  # fmt: skip
        else:  # models are not stored: the restored task takes them again
            sim.model("poll", duration=uniform(0.5 * period, 30 * period))
        now += period * (40 + 3.61 * (life % 7))
        sim.run(now)
        now += period * (6 + 1.37 * (life % 5))
    records = store.records("poll")
    assert {"ok", "coalesced", "missed"} <= {record.outcome.value for record in records}
    assert _folded_past_the_list(records, period)
    assert off_grid(rate, START, [record.slot for record in records]) == []
    (row,) = store.load_all()
    assert row.grid == START and row.next_run_at is not None
    assert off_grid(rate, START, [row.next_run_at]) == []


@pytest.mark.parametrize("period", PERIODS)
def test_buffer_one_runs_longer_than_a_period_stay_on_the_grid_on_threads(period: float) -> None:
    """The threaded runtime, stepped on a FakeClock: each of 60 runs moves the clock on
    by its own length (up to 29.7 periods) while it runs; the runs after them take no
    time (a run that always outlasts its period leaves the task due at once for good,
    and the stepper never settles)."""
    rate = FixedRate(period)
    clock = FakeClock(START)
    lengths = iter([(0.5 + 7.3 * (n % 5)) * period for n in range(60)])

    def job() -> None:
        clock.advance(next(lengths, 0.0))  # 60 runs that outlast slots, then none

    log = EventLog()  # every record (a task's history keeps the latest only)
    with Stepper(Scheduler(workers=1, clock=clock, listeners=[log])) as steps:
        steps.scheduler.schedule("poll", job, rate, id="poll", overlap=Overlap.BUFFER_ONE)
        steps.advance(1_200 * period)
    records = [record for event in log.events if (record := event.record) is not None]
    assert len(records) > 40
    assert {"ok", "coalesced"} <= {record.outcome.value for record in records}
    assert _folded_past_the_list(records, period)
    assert off_grid(rate, START, [record.slot for record in records]) == []
