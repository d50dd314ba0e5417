"""A schedule of one's own whose first run is in the past: the slots passed meet the
task's misfire policy at its registration (or a new schedule's), as they do at a threaded
``start()``, on both runtimes (docs/decisions/extending.md, "A first run in the past meets
the misfire policy")."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from lldsched import (
    ExecutionRecord,
    FakeClock,
    FixedRate,
    Misfire,
    MisfirePolicy,
    Scheduler,
    SqliteTaskStore,
    TaskStatus,
)
from lldsched.stores.codec import register_schedule
from tests import jobs
from tests.conftest import T0
from tests.runtimes import KINDS, Driven

HOUR = 3600.0


@dataclass(frozen=True)
class Listed:
    """The listed instants, in order: the first whatever ``now`` is."""

    slots: tuple[float, ...]

    def first_run(self, now: float) -> float:
        return self.slots[0]

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        return next((slot for slot in self.slots if slot > record.slot), None)


register_schedule(
    "tests.test_first_run_passed.Listed",
    Listed,
    lambda s: {"slots": list(s.slots)},
    lambda d: Listed(tuple(d["slots"])),
)

# Five hourly slots before T0, one after it.
PASSED = Listed((*(T0 - k * HOUR for k in range(5, 0, -1)), T0 + HOUR))


def _done(driven: Driven, task_id: str) -> list[tuple[float, str]]:
    """The task's records: (slot - T0, outcome)."""
    return [(r.slot - T0, r.outcome.value) for r in driven.runtime.task(task_id).history]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (
            None,  # RUN_ONCE: one run for the five slots passed, at once
            [(-k * HOUR, "coalesced") for k in (5, 4, 3, 2)] + [(-HOUR, "ok"), (HOUR, "ok")],
        ),
        (
            MisfirePolicy(Misfire.SKIP),
            [(-k * HOUR, "missed") for k in (5, 4, 3, 2, 1)] + [(HOUR, "ok")],
        ),
        (
            MisfirePolicy(Misfire.RUN_ALL, max_catch_up=2),
            [(-k * HOUR, "missed") for k in (5, 4, 3)]
            + [(-2 * HOUR, "ok"), (-HOUR, "ok"), (HOUR, "ok")],
        ),
    ],
    ids=["run-once", "skip", "run-all"],
)
def test_slots_passed_at_registration_meet_the_misfire_policy(
    kind: str, policy: MisfirePolicy | None, expected: list[tuple[float, str]]
) -> None:
    driven = Driven(kind)
    try:
        task = driven.add("listed", PASSED, misfire=policy)
        driven.run_until(T0 + 2 * HOUR)
        assert sorted(_done(driven, task.id)) == sorted(expected)
        ran = [r.started for r in task.history if r.outcome.ran]
        assert ran[:-1] == [T0] * (len(ran) - 1)  # the catch-up ran at the registration
    finally:
        driven.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_first_run_passed_within_grace_runs_late_and_nothing_is_decided(kind: str) -> None:
    driven = Driven(kind)
    try:
        task = driven.add("listed", Listed((T0 - 30.0, T0 + HOUR)))
        driven.run_until(T0 + 2 * HOUR)
        assert _done(driven, task.id) == [(-30.0, "ok"), (HOUR, "ok")]
    finally:
        driven.close()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("verb", ["reschedule", "replace"])
def test_a_new_schedule_whose_first_run_passed_meets_the_misfire_policy(
    kind: str, verb: str
) -> None:
    driven = Driven(kind)
    try:
        policy = MisfirePolicy(Misfire.SKIP)
        task = driven.add("job", FixedRate(HOUR, start_delay=HOUR), id="job", misfire=policy)
        if verb == "reschedule":
            driven.runtime.reschedule("job", PASSED)
        else:
            driven.add("job", PASSED, id="job", replace_existing=True, misfire=policy)
        driven.run_until(T0 + 2 * HOUR)
        expected = [(-k * HOUR, "missed") for k in (5, 4, 3, 2, 1)] + [(HOUR, "ok")]
        assert _done(driven, task.id) == expected
    finally:
        driven.close()


@pytest.mark.parametrize("shared", [False, True], ids=["unshared", "shared"])
def test_registered_on_a_running_scheduler_as_before_start(tmp_path: Path, shared: bool) -> None:
    """The same task, registered before ``start()`` (decided there, recovery.at_start) and
    on a running scheduler: the same records, kept by the store.  On a shared store the
    claim decides them (threaded/shared/decisions.py), before and after alike."""
    seen = []
    for before_start in (True, False):
        clock = FakeClock(T0)
        with SqliteTaskStore(tmp_path / f"{before_start}.db", shared=shared) as store:
            scheduler = Scheduler(workers=1, clock=clock, store=store)
            if not before_start:
                scheduler.start()
            scheduler.schedule("listed", jobs.noop, PASSED, id="listed")
            if before_start:
                scheduler.start()
            assert scheduler.wait_idle(timeout=5.0)
            assert scheduler.task("listed").status is TaskStatus.SCHEDULED
            assert scheduler.shutdown(timeout=5.0)
            seen.append([(r.slot, r.outcome, r.started) for r in store.records("listed")])
    assert seen[0] == seen[1]
    assert [outcome.value for _, outcome, _ in seen[1]] == ["coalesced"] * 4 + ["ok"]
