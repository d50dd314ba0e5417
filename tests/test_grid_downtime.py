"""After downtime (a restart that finds slots passed, a forward clock jump) the slots a
misfire decision records and runs are a fixed rate's grid's, counted from its origin:
each is ``FixedRate.slot_at(origin, k)`` for some ``k``, the very float, whatever the
misfire policy (docs/decisions/schedules.md, "A fixed rate's grid is counted from its origin",
and "A fixed rate's slots after downtime are its grid's").  Counted from the slot due
instead (``slot_at(due, j)``), a slot of a 0.1 s grid landed a rounding off, and the
grid went on from there, a new one at every downtime."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    RetryPolicy,
    Simulation,
    SqliteTaskStore,
)
from lldsched.core.recovery import after_clock_jump
from lldsched.persistence import TaskStore
from lldsched.policies import Misfire, MisfirePolicy
from lldsched.sim import fixed, uniform
from tests import jobs
from tests.harness import Harness
from tests.memory_folder import memory_folder

START = 1_767_571_200.0  # 2026-01-05 00:00 UTC

POLICIES = {
    "skip": MisfirePolicy(Misfire.SKIP, grace=0.0),
    "run_once": MisfirePolicy(Misfire.RUN_ONCE, grace=0.0),
    "run_all": MisfirePolicy(Misfire.RUN_ALL, grace=0.0, max_catch_up=3),
    "run_all_capped": MisfirePolicy(Misfire.RUN_ALL, grace=0.0, max_catch_up=2_000),
}


def off_grid(rate: FixedRate, origin: float, slots: list[float]) -> list[float]:
    """The slots that are no ``rate.slot_at(origin, k)``: ``k`` is the nearest index, and
    a slot on the grid is that very float."""
    return [
        slot for slot in slots if rate.slot_at(origin, round((slot - origin) / rate.period)) != slot
    ]


def _opened(
    kind: str, path: Path, memory: InMemoryTaskStore
) -> contextlib.AbstractContextManager[TaskStore]:
    if kind == "memory":
        return contextlib.nullcontext(memory)
    return SqliteTaskStore(path, retention=None)  # every record kept, to be checked


@pytest.fixture
def folder() -> Iterator[Path]:
    """The folder of the test's SQLite file, in memory (tests/memory_folder.py): the
    store is opened and closed in each of the test's 12 or 40 lives, and on a disk its
    syncs were most of the SQLite cases' wall time (the four RUN_ALL ones at a load of
    18: 30.6 s on disk, 17.4 s in memory)."""
    with memory_folder("lldsched-grid-downtime-") as name:
        yield Path(name)


@pytest.mark.parametrize("period", [0.1, 1 / 3 + 0.1])
@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_restarted_after_downtime_again_and_again_every_slot_is_on_the_first_grid(
    folder: Path, kind: str, policy: str, period: float
) -> None:
    """Each life runs a few slots, then the process is down for a stretch (a few slots,
    or past ``MAX_SLOTS`` for the capped plan): the next life's recovery decides the
    passed slots.  Every record, missed, coalesced or run, is a slot of the first grid."""
    rate, misfire = FixedRate(period), POLICIES[policy]
    down = 1_500 if policy == "run_all_capped" else 7
    memory = InMemoryTaskStore()
    now, lives = START, 12 if policy == "run_all_capped" else 40
    for life in range(lives):
        with _opened(kind, folder / "tasks.db", memory) as store:
            sim = Simulation(start=now, store=store)
            if life == 0:
                sim.schedule("poll", rate, id="poll", duration=fixed(0.0), misfire=misfire)
            now += period * (5 + 0.5 * (life % 3))
            sim.run(now)
        now += period * (down + 0.37 * (life % 5))
    with _opened(kind, folder / "tasks.db", memory) as store:
        records = store.records("poll")  # type: ignore[attr-defined]
        (row,) = store.load_all()
    slots = [record.slot for record in records]
    outcomes = {record.outcome.value for record in records}
    assert len(slots) > lives * 4
    assert "missed" in outcomes or "coalesced" in outcomes  # downtime was decided
    assert off_grid(rate, START, slots) == []
    assert row.grid == START
    assert row.next_run_at is not None
    assert off_grid(rate, START, [row.next_run_at]) == []


@pytest.mark.parametrize("period", [0.1, 1 / 3 + 0.1])
@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_forward_clock_jumps_keep_every_slot_on_the_first_grid(policy: str, period: float) -> None:
    """The wall clock jumps forward again and again (a suspend) between runs: the slots
    each jump passed meet the policy (``after_clock_jump``), and every record, missed,
    coalesced or run, is a slot of the first grid."""
    rate, misfire = FixedRate(period), POLICIES[policy]
    down = 1_500 if policy == "run_all_capped" else 7
    clock = FakeClock(START)
    h = Harness(clock)
    task = h.core.add("poll", jobs.noop, rate, misfire=misfire)
    for jump in range(12 if policy == "run_all_capped" else 40):
        until = clock.now() + period * (5 + 0.5 * (jump % 3))
        while task.next_run_at is not None and task.next_run_at <= until:
            h.step()
        clock.set(until)
        seconds = period * (down + 0.37 * (jump % 5))
        clock.set(until + seconds)
        after_clock_jump(h.core, seconds, clock.now())
    slots = [record.slot for record in task.history]
    assert len(slots) > 40
    assert {record.outcome.value for record in task.history} & {"missed", "coalesced"}
    assert off_grid(rate, START, slots) == []
    assert task.next_run_at is not None
    assert off_grid(rate, START, [task.next_run_at]) == []


@pytest.mark.parametrize("policy", ["run_all", "run_once", "skip"])
def test_restarts_mid_run_with_retries_and_overruns_keep_every_slot_on_the_first_grid(
    policy: str,
) -> None:
    """Runs that fail and are retried, runs that outlast their period (skipped slots),
    and lives that end while a run is in flight (its attempt owed at the restart, run
    first, the slot to resume at behind it): every record is a slot of the first grid,
    and so is the next due slot of a task not awaiting a retry."""
    rate, misfire = FixedRate(1 / 3 + 0.1), POLICIES[policy]
    period = rate.period
    store = InMemoryTaskStore()
    now = START
    for life in range(60):
        sim = Simulation(start=now, store=store, seed=life)
        if life == 0:
            sim.schedule(
                "poll", rate, id="poll", misfire=misfire, duration=uniform(0, 2.5 * period),
                fails=0.3, retry=RetryPolicy(2, initial_backoff=1.7 * period, max_backoff=4.0),
            )  # fmt: skip
        else:  # models are not stored: the restored task takes them again
            sim.model("poll", duration=uniform(0, 2.5 * period), fails=0.3)
        now += period * (4 + 0.61 * (life % 7))
        sim.run(now)
        now += period * (3 + 1.37 * (life % 5))
    records = store.records("poll")
    slots = [record.slot for record in records]
    outcomes = {record.outcome.value for record in records}
    assert {"ok", "failed"} <= outcomes
    assert outcomes & {"missed", "coalesced"}
    assert off_grid(rate, START, slots) == []
