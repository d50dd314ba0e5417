"""A fixed rate inside a ``Window`` (or a plan in front of one) counts its slots on its
grid's origin as a bare one does, in one process and across restarts: the ``k``-th
slot is ``FixedRate.slot_at(origin, k)``, the very float, and the row keeps the origin
(docs/decisions/schedules.md, "A fixed rate's grid origin passes through a Window").

Before, the core counted a grid from its origin only for the exact type ``FixedRate``:
a ``Window(FixedRate(...))`` was answered from each run's slot (``slot + period``), so
every run rounded its sum once and the grid drifted as a sum does, restarted or not
(``FixedRate(1/3 + 0.1)`` is off within two runs at 2026's epochs), and its row kept
no origin.  ``Jittered`` counts on the grid of what it wraps too, its slots read back
from their delayed instants: after a run, after downtime and under BUFFER_ONE."""

from __future__ import annotations

from pathlib import Path

import pytest

from lldsched import (
    CronSchedule,
    FakeClock,
    FixedDelay,
    FixedRate,
    Scheduler,
    Simulation,
    SqliteTaskStore,
)
from lldsched.core.names import MAX_SKIPPED
from lldsched.model import ExecutionRecord
from lldsched.policies import Misfire, MisfirePolicy, Overlap
from lldsched.schedules import Jittered, Window
from lldsched.schedules.base import Schedule, on_grid
from lldsched.sim import fixed
from lldsched.testing import Stepper

START = 1_767_571_200.0  # 2026-01-05 00:00 UTC
RATE = FixedRate(1 / 3 + 0.1)  # an awkward float: no sum of it at the epoch is the grid's
HALF = RATE.period / 2


def noop() -> None:
    """An action for the threaded scheduler."""


def _window() -> Window:
    return Window(RATE, end=START + 10 * 86_400)


def _grid(n: int, origin: float = START) -> list[float]:
    return [RATE.slot_at(origin, k) for k in range(n)]


def test_a_window_around_a_fixed_rate_counts_its_slots_from_the_first_in_one_process() -> None:
    sim = Simulation(start=START)
    sim.schedule("poll", _window(), id="poll", duration=fixed(0.0))
    sim.run(RATE.slot_at(START, 599) + HALF)
    assert [r.slot for r in sim.records()] == _grid(600)


def test_a_window_around_a_fixed_rate_restarted_every_three_runs_stays_on_the_first_grid(
    tmp_path: Path,
) -> None:
    """A crash loop or a deploy after every few runs: each life restores the row, which
    keeps the grid's origin, and counts on from it."""
    path, runs, lives = tmp_path / "tasks.db", 3, 150
    now = START
    for life in range(lives):
        with SqliteTaskStore(path) as store:
            sim = Simulation(start=now, store=store)
            if life == 0:
                sim.schedule("poll", _window(), id="poll", duration=fixed(0.0))
            now = RATE.slot_at(START, runs * (life + 1) - 1) + HALF
            sim.run(now)
    with SqliteTaskStore(path) as store:
        slots = [r.slot for r in store.records("poll")]
        (row,) = store.load_all()
    assert slots == _grid(runs * lives)
    assert (row.next_run_at, row.grid) == (RATE.slot_at(START, runs * lives), START)


def test_threaded_restarts_of_a_window_on_a_fake_clock_keep_the_first_grid(
    tmp_path: Path,
) -> None:
    path, now = tmp_path / "tasks.db", START
    for life in range(30):
        with SqliteTaskStore(path) as store:
            scheduler = Scheduler(workers=1, clock=FakeClock(now), store=store)
            with Stepper(scheduler) as steps:
                if life == 0:
                    scheduler.schedule("poll", noop, _window(), id="poll")
                now = RATE.slot_at(START, 2 * life + 1) + HALF
                steps.advance_to(now)
    with SqliteTaskStore(path) as store:
        slots = [r.slot for r in store.records("poll")]
    assert slots == _grid(60)


def test_a_window_ends_where_it_did_counted_on_the_grid() -> None:
    """``end`` and ``max_runs`` still end the task: the window answers on the grid and
    cuts as before."""
    end = RATE.slot_at(START, 40) + HALF
    sim = Simulation(start=START)
    sim.schedule("until", Window(RATE, end=end), id="until", duration=fixed(0.0))
    sim.schedule("most", Window(RATE, max_runs=25), id="most", duration=fixed(0.0))
    sim.run(RATE.slot_at(START, 99) + HALF)
    assert [r.slot for r in sim.records() if r.task_id == "until"] == _grid(41)
    assert [r.slot for r in sim.records() if r.task_id == "most"] == _grid(25)
    assert {t.id: t.status.value for t in sim.tasks()} == {
        "until": "succeeded",
        "most": "succeeded",
    }


def test_a_window_whose_runs_outlast_their_period_skips_slots_of_the_grid() -> None:
    sim = Simulation(start=START)
    sim.schedule("poll", _window(), id="poll", duration=fixed(2.5 * RATE.period))
    sim.run(RATE.slot_at(START, 300) + HALF)
    ran = [r.slot for r in sim.records() if r.outcome.value == "ok"]
    skipped = [r.slot for r in sim.records() if r.outcome.value == "skipped"]
    assert ran == [RATE.slot_at(START, 3 * k) for k in range(len(ran))]
    assert len(ran) >= 100
    on_grid = set(_grid(301))
    assert skipped and all(slot in on_grid for slot in skipped)


@pytest.mark.parametrize("overlap", [Overlap.ALLOW, Overlap.CANCEL_OTHER])
def test_a_window_whose_runs_overlap_queues_each_next_slot_on_the_grid(overlap: Overlap) -> None:
    sim = Simulation(workers=2, start=START)
    instances = 2 if overlap is Overlap.ALLOW else None
    sim.schedule("poll", _window(), duration=fixed(HALF), overlap=overlap, max_instances=instances)
    sim.run(RATE.slot_at(START, 999) + HALF)
    assert [r.slot for r in sim.records()] == _grid(1000)


def test_a_window_tells_where_a_slot_stands_on_the_grid_as_its_schedule_does() -> None:
    window: Schedule = _window()
    slot = RATE.slot_at(START, 7)
    assert on_grid(window, slot, START) == (START, 7)
    assert on_grid(window, slot + 1e-3, START) == (slot + 1e-3, 0)  # off it: a new grid
    assert Window(Jittered(RATE, 0.01, seed=1), max_runs=3).next_on_grid is not None
    assert Window(CronSchedule("* * * * *"), max_runs=3).next_on_grid is None


def test_a_jittered_fixed_rate_tells_where_a_slot_stands_on_the_grid_of_what_it_wraps() -> None:
    jittered = Jittered(RATE, 0.05, seed=7)
    origin = jittered.delayed(START)
    slot = jittered.delayed(RATE.slot_at(START, 7))
    assert on_grid(jittered, slot, origin) == (origin, 7)
    assert on_grid(jittered, slot + 1e-3, origin) == (slot + 1e-3, 0)  # off it: a new grid
    assert jittered.slot_at is not None and jittered.slot_at(origin, 7) == slot
    for off_any_grid in (CronSchedule("* * * * *"), FixedDelay(60)):
        around = Jittered(off_any_grid, 5, seed=7)
        assert (around.slot_at, around.on_grid, around.next_on_grid) == (None, None, None)


def test_a_jittered_fixed_rate_of_a_decimal_period_stays_on_its_decimal_grid() -> None:
    """Read back to 10 µs alone (``slot_of``), a period that is a whole number of 10 µs
    stayed on its decimal grid before too (a guard)."""
    rate, jittered = FixedRate(0.1), Jittered(FixedRate(0.1), 0.02, seed=7)
    sim = Simulation(start=START)
    sim.schedule("poll", jittered, id="poll", duration=fixed(0.0))
    sim.run(rate.slot_at(START, 2999) + 0.05)
    slots = [jittered.slot_of(r.slot) for r in sim.records()]
    assert len(slots) == 3000
    assert all(abs(slot - rate.slot_at(START, k)) < 1e-6 for k, slot in enumerate(slots))


def test_a_fixed_rate_subclass_with_a_next_run_of_its_own_is_asked_it() -> None:
    """The grid count is ``FixedRate``'s answer: a subclass that answers ``next_run`` its
    own way is asked that, wrapped in a ``Window`` or not; one that only words itself
    differently counts on the grid."""

    class EveryOther(FixedRate):
        __slots__ = ()

        def next_run(self, record: ExecutionRecord, now: float) -> float:
            return record.slot + 2 * self.period

        def next_run_and_skipped(
            self, record: ExecutionRecord, *, limit: int
        ) -> tuple[float, list[float]]:
            return self.next_run(record, 0.0), []

    class Worded(FixedRate):
        __slots__ = ()

        def explain(self) -> str:
            return "my own words"

    assert EveryOther(RATE.period).next_on_grid is None
    sim = Simulation(start=START)
    sim.schedule("own", EveryOther(RATE.period), id="own", duration=fixed(0.0))
    sim.schedule("window", Window(EveryOther(RATE.period), max_runs=5), id="window")
    sim.schedule("worded", Worded(RATE.period), id="worded", duration=fixed(0.0))
    sim.run(RATE.slot_at(START, 40) + HALF)
    ran = {
        name: [r.slot for r in sim.records() if r.task_id == name and r.outcome.value == "ok"]
        for name in ("own", "window")
    }
    assert ran["own"][1] - ran["own"][0] == pytest.approx(2 * RATE.period)
    assert len(ran["window"]) == 5
    assert ran["window"][1] - ran["window"][0] == pytest.approx(2 * RATE.period)
    assert [r.slot for r in sim.records() if r.task_id == "worded"] == _grid(41)


def _jittered_undelayed(records: list[float], jittered: Jittered) -> list[float]:
    return [jittered.undelayed(at) - RATE.slot_at(START, k) for k, at in enumerate(records)]


def test_a_jittered_fixed_rate_counts_its_undelayed_slots_from_the_first() -> None:
    """``Jittered`` passes the origin on too: its undelayed slots are the grid's, read
    back within a float or two.  Read back to 10 µs at every run, a period that is no
    whole number of 10 µs lost the remainder a run (3.3 µs for this one: 1.5 ms after 450
    runs)."""
    jittered = Jittered(RATE, 0.05, seed=7)
    sim = Simulation(start=START)
    sim.schedule("poll", jittered, id="poll", duration=fixed(0.0))
    sim.run(RATE.slot_at(START, 599) + HALF)
    off = _jittered_undelayed([r.slot for r in sim.records()], jittered)
    assert len(off) == 600
    assert max(map(abs, off)) < 1e-6


def test_a_jittered_fixed_rate_restarted_every_three_runs_stays_on_the_first_grid(
    tmp_path: Path,
) -> None:
    """Its row keeps the origin as the core keeps it, the first due instant (delayed)."""
    jittered, path, now = Jittered(RATE, 0.05, seed=7), tmp_path / "tasks.db", START
    for life in range(100):
        with SqliteTaskStore(path) as store:
            sim = Simulation(start=now, store=store)
            if life == 0:
                sim.schedule("poll", jittered, id="poll", duration=fixed(0.0))
            now = RATE.slot_at(START, 3 * life + 2) + HALF
            sim.run(now)
    with SqliteTaskStore(path) as store:
        off = _jittered_undelayed([r.slot for r in store.records("poll")], jittered)
        (row,) = store.load_all()
    assert len(off) == 300
    assert max(map(abs, off)) < 1e-6
    assert row.grid == jittered.delayed(START)


def _on_the_grid(records: list[ExecutionRecord], jittered: Jittered) -> list[int]:
    """Each record's index on the wrapped fixed rate's grid from START, checked to be
    that slot's delayed instant within a float or two (a record off the grid fails)."""
    rate = jittered.schedule
    assert isinstance(rate, FixedRate)
    indices = []
    for record in records:
        k = round((jittered.undelayed(record.slot) - START) / rate.period)
        assert record.slot == pytest.approx(jittered.delayed(rate.slot_at(START, k)), abs=1e-6)
        indices.append(k)
    return indices


@pytest.mark.parametrize("misfire", list(Misfire))
@pytest.mark.parametrize("rate", [FixedRate(60), RATE], ids=["60s", "awkward"])
def test_a_jittered_fixed_rate_after_downtime_keeps_the_grid_of_what_it_wraps(
    tmp_path: Path, rate: FixedRate, misfire: Misfire
) -> None:
    """Recovery lists the slots that passed on the wrapped schedule's grid, delayed, as a
    run's next slot is counted: jitter does not drift it.  Stepped one read-back (10 µs)
    at a time, a period that is no whole number of 10 µs lost the remainder a slot
    (3.3 µs for RATE: 0.17 ms after 50 slots of downtime), and the grid started again
    there.  FixedRate(60) was on its grid before too: a guard."""
    jittered, path = Jittered(rate, min(5.0, rate.period / 8), seed=7), tmp_path / "tasks.db"
    policy = MisfirePolicy(misfire, grace=0.0, max_catch_up=1000)
    with SqliteTaskStore(path) as store:
        sim = Simulation(start=START, store=store)
        sim.schedule("poll", jittered, id="poll", duration=fixed(0.0), misfire=policy)
        sim.run(rate.slot_at(START, 9) + rate.period / 2)
    with SqliteTaskStore(path) as store:  # down for 50 slots
        sim = Simulation(start=rate.slot_at(START, 59) + rate.period / 2, store=store)
        sim.run(rate.slot_at(START, 89) + rate.period / 2)
        records = store.records("poll")
        (row,) = store.load_all()
    assert _on_the_grid(records, jittered) == list(range(90))
    decided = {"run_once": "coalesced", "run_all": "ok", "skip": "missed"}[misfire.value]
    assert {r.outcome.value for r in records[10:59]} == {decided}
    assert row.grid == jittered.delayed(START)  # no grid started again after the downtime


@pytest.mark.parametrize("rate", [FixedRate(60), RATE], ids=["60s", "awkward"])
def test_buffer_one_of_a_jittered_fixed_rate_keeps_the_grid_of_what_it_wraps(
    rate: FixedRate,
) -> None:
    """Runs of 30.5 periods: BUFFER_ONE coalesces the slots each covered, past
    MAX_SKIPPED of them, counted on the wrapped schedule's grid (it stepped from the
    run's slot read back, 1.4 ms off RATE's grid after 400 slots)."""
    jittered = Jittered(rate, min(5.0, rate.period / 8), seed=7)
    sim = Simulation(workers=2, start=START)
    sim.schedule(
        "poll", jittered, id="poll", duration=fixed(30.5 * rate.period), overlap=Overlap.BUFFER_ONE
    )
    sim.run(rate.slot_at(START, 400) + rate.period / 2)
    records = sim.records()
    ran = [r for r in records if r.outcome.value == "ok"]
    assert len(ran) == 13
    assert len(records) == 13 * (1 + MAX_SKIPPED + 1)  # each run coalesced past MAX_SKIPPED
    indices = _on_the_grid(records, jittered)
    assert indices == sorted(set(indices))  # each slot once, in order
