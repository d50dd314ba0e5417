"""A task registered due at once, with misfire policy ``SKIP``, by a process whose clock
lags the others' (once per engine): its first slot is, on the clock of the process that
claims it, that far in the past.  The cluster runs it once or records it ``missed``
once, as docs/CLUSTER.md ("Failure matrix", clock skew) says: within the task's
``grace`` it runs; past it, the claim decides it by the policy (``SKIP``: recorded
``missed``, not run) and a recurring task goes on at its next slot on its grid.  Never
twice, whichever process claims it.

The lagging process only registers (its timer not started, as an admin's process), so
the one that claims is known; the last test starts both, so that either may claim.
"""

from __future__ import annotations

import pytest

from lldsched import FakeClock, FixedRate, Misfire, MisfirePolicy, OneTime, Outcome, Scheduler
from lldsched.coordination import CoordinatedStore
from lldsched.model import TaskStatus
from tests import jobs
from tests.cluster import StoreSpec, opened, store_spec
from tests.conftest import T0
from tests.waits import wait_until

__all__ = ["store_spec"]  # the fixture, used by name

# Past the grace, yet within what a shared SQLite file bears: its lease expiry is each
# scheduler's clock, and clocks apart by more than ``lease - lease / 3`` (20 s at the
# default 30 s) take live leases over (docs/CLUSTER.md, "Failure matrix", clock skew).
GRACE = 4.0
LAG = 10.0  # seconds the lagging process's clock is behind, past the grace
SKIP = MisfirePolicy(Misfire.SKIP, grace=GRACE)


def _decided(scheduler: Scheduler, store: CoordinatedStore, task_id: str) -> bool:
    """Wake ``scheduler`` (the claim: its fake clock never moves itself) and say whether
    ``task_id``'s slot was decided (a record in ``store``, its run over)."""
    clock = scheduler.clock
    assert isinstance(clock, FakeClock)
    clock.advance(0)
    return bool(store.records(task_id)) and not scheduler.task(task_id).running


@pytest.mark.parametrize(
    ("lag", "outcome"),
    [(GRACE / 2, Outcome.OK), (LAG, Outcome.MISSED)],
    ids=["within-grace", "past-grace"],
)
def test_a_recurring_task_registered_due_at_once_by_a_lagging_process_is_decided_once(
    store_spec: StoreSpec, lag: float, outcome: Outcome
) -> None:
    jobs.CALLS.clear()
    with opened(store_spec, 2, poll=0.05) as (right_store, lagging_store):
        clock = FakeClock(T0)
        right = Scheduler(store=right_store, clock=clock)
        lagging = Scheduler(store=lagging_store, clock=FakeClock(T0 - lag))  # never started
        try:
            right.start()
            lagging.schedule("hourly", jobs.note, FixedRate(3600), args=("ran",), id="hourly",
                             misfire=SKIP)  # fmt: skip
            wait_until(lambda: _decided(right, right_store, "hourly"), timeout=20, what="the claim")
            (record,) = right_store.records("hourly")
            assert (record.slot, record.outcome) == (T0 - lag, outcome)
            assert record.node == (right_store.node if outcome is Outcome.OK else None)  # ran
            assert len(jobs.CALLS) == (outcome is Outcome.OK)  # run once, or not at all
            (stored,) = right_store.load_all()
            assert stored.next_run_at == T0 - lag + 3600  # the next slot, on its grid
            assert right.task("hourly").next_run_at == T0 - lag + 3600
        finally:
            right.shutdown()
            lagging.shutdown()


def test_a_one_off_task_registered_past_its_grace_by_a_lagging_process_is_missed_once(
    store_spec: StoreSpec,
) -> None:
    """A one-off task is decided as its one slot is: recorded ``missed`` once, and done
    with (its status says so), never run later nor by the other process."""
    jobs.CALLS.clear()
    with opened(store_spec, 2, poll=0.05) as (right_store, lagging_store):
        clock = FakeClock(T0)
        right = Scheduler(store=right_store, clock=clock)
        lagging = Scheduler(store=lagging_store, clock=FakeClock(T0 - LAG))
        try:
            right.start()
            lagging.schedule("once", jobs.note, OneTime(delay=0), args=("ran",), id="once",
                             misfire=SKIP)  # fmt: skip
            wait_until(lambda: _decided(right, right_store, "once"), timeout=20, what="the claim")
            (record,) = right_store.records("once")
            assert (record.slot, record.outcome) == (T0 - LAG, Outcome.MISSED)
            assert jobs.CALLS == []
            (stored,) = right_store.load_all()
            assert stored.next_run_at is None and stored.status is not TaskStatus.SCHEDULED
        finally:
            right.shutdown()
            lagging.shutdown()


def test_both_processes_started_either_may_claim_and_the_slot_is_decided_once(
    store_spec: StoreSpec,
) -> None:
    """The lagging process's timer runs too: it finds the slot due at once (its clock),
    the other finds it past its grace; whichever claims it, one record, at most one run,
    and the slot is not decided again by the other."""
    jobs.CALLS.clear()
    with opened(store_spec, 2, poll=0.05) as (right_store, lagging_store):
        right_clock, lagging_clock = FakeClock(T0), FakeClock(T0 - LAG)
        right = Scheduler(store=right_store, clock=right_clock)
        lagging = Scheduler(store=lagging_store, clock=lagging_clock)
        try:
            right.start()
            lagging.start()
            lagging.schedule("hourly", jobs.note, FixedRate(3600), args=("ran",), id="hourly",
                             misfire=SKIP)  # fmt: skip

            def decided() -> bool:
                lagging_clock.advance(0)
                return _decided(right, right_store, "hourly")

            wait_until(decided, timeout=20, what="the claim")
            for _ in range(20):  # more wakes of both: nothing decides the slot again
                lagging_clock.advance(0)
                right_clock.advance(0)
            assert right.wait_idle(timeout=10) and lagging.wait_idle(timeout=10)
            (record,) = right_store.records("hourly")
            assert record.slot == T0 - LAG
            assert record.outcome in (Outcome.OK, Outcome.MISSED)
            assert len(jobs.CALLS) == (record.outcome is Outcome.OK)
            assert lagging_store.records("hourly") == [record]
        finally:
            right.shutdown()
            lagging.shutdown()
