"""``Overlap.CANCEL_OTHER`` when the other run took no time, or ends at the slot's instant.

An earlier session noted a possible double run of a CANCEL_OTHER slot at zero simulated
time: a run that begins and ends at one instant, its next slot queued behind it as it
began (lldsched/core/overlapping.py, ``_queue_following``).  Tried on both runtimes (the
simulation from epoch 0 and from a present-day epoch, the threaded scheduler stepped on a
``FakeClock``, thread and coroutine actions, one and two workers, a run begun late exactly
at its next slot, a run ending at the very instant its next slot comes due): every slot
runs once, and a run that took no time is never cut.  Not a defect; these tests keep it so
(docs/decisions/overlap.md, "A run that takes no time is never cut, nor run twice").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest

from lldsched import FakeClock, FixedRate, OneTime, Overlap, Scheduler, Simulation
from lldsched.model import ExecutionRecord
from lldsched.schedules.cron import CronSchedule
from lldsched.testing import Stepper
from tests.conftest import T0


def _slots(records: list[ExecutionRecord], start: float) -> list[tuple[float, float, str]]:
    """(slot, started, outcome) of each record, counted from ``start``."""
    return [(r.slot - start, r.started - start, r.outcome.value) for r in records]


def _once_each(records: list[ExecutionRecord]) -> None:
    ran = Counter(r.slot for r in records if r.outcome.ran)
    assert [slot for slot, runs in ran.items() if runs > 1] == []


@pytest.mark.parametrize("start", [0.0, T0], ids=["epoch", "present"])
@pytest.mark.parametrize("workers", [1, 2])
def test_runs_that_take_no_time_run_each_slot_once_in_the_simulation(
    start: float, workers: int
) -> None:
    sim = Simulation(workers=workers, start=start)
    sim.schedule("z", FixedRate(60), duration=0, overlap=Overlap.CANCEL_OTHER, id="z")
    sim.run_for(250)
    assert _slots(sim.records(), start) == [(n * 60.0, n * 60.0, "ok") for n in range(5)]


def test_a_run_ending_as_its_next_slot_comes_due_is_not_cut() -> None:
    sim = Simulation(workers=1, start=T0)
    sim.schedule("z", FixedRate(60), duration=60, overlap=Overlap.CANCEL_OTHER, id="z")
    sim.run_for(250)
    assert _slots(sim.records(), T0) == [(n * 60.0, n * 60.0, "ok") for n in range(4)]


def test_a_run_begun_late_at_its_next_slot_s_instant_skips_it_and_runs_once() -> None:
    sim = Simulation(workers=1, start=T0)
    sim.schedule("hog", OneTime(delay=0), duration=60, id="hog")  # the worker until 60 s
    sim.schedule("z", FixedRate(60), duration=0, overlap=Overlap.CANCEL_OTHER, id="z")
    sim.run_for(250)
    records = [r for r in sim.records() if r.task_id == "z"]
    _once_each(records)
    assert sorted(_slots(records, T0)) == [
        (0.0, 60.0, "ok"),  # late, at the next slot's very instant: not chased
        (60.0, 60.0, "skipped"),
        (120.0, 120.0, "ok"),
        (180.0, 180.0, "ok"),
        (240.0, 240.0, "ok"),
    ]


async def _co() -> None:
    return None


def _thread() -> None:
    return None


@pytest.mark.parametrize("action", [_thread, _co], ids=["thread", "coroutine"])
@pytest.mark.parametrize(
    "schedule", [FixedRate(1 / 3), CronSchedule("* * * * * *")], ids=["rate", "cron"]
)
@pytest.mark.parametrize("workers", [1, 2])
def test_runs_that_take_no_time_run_each_slot_once_on_threads(
    action: Callable[[], object], schedule: FixedRate | CronSchedule, workers: int
) -> None:
    scheduler = Scheduler(clock=FakeClock(T0), workers=workers)
    scheduler.schedule("z", action, schedule, overlap=Overlap.CANCEL_OTHER, id="z")
    with Stepper(scheduler) as steps:
        steps.advance(5)
        records = steps.records("z")
    _once_each(records)
    assert {r.outcome.value for r in records} == {"ok"}  # none cut
    assert [r.started for r in records] == [r.slot for r in records]  # each at its slot
    assert len(records) == (16 if isinstance(schedule, FixedRate) else 5)
