"""A shared store's dead letter, read back by a scheduler that starts on it: oldest
failure first, as the store keeps it and as a restart on an unshared store restores it
(``SchedulerCore.restore``'s ``dead_letter``), not in the order the tasks were
registered (:func:`lldsched.core.follow.load` registers the rows one by one)."""

from __future__ import annotations

from lldsched import FakeClock, OneTime, RetryPolicy, Scheduler
from lldsched.testing import Stepper
from tests import jobs
from tests.cluster import StoreSpec, opened
from tests.conftest import T0


def test_a_scheduler_starting_on_a_shared_store_lists_its_dead_letter_oldest_failure_first(
    store_spec: StoreSpec,
) -> None:
    clock = FakeClock(T0)
    once = RetryPolicy(max_attempts=1)
    with opened(store_spec, 1) as (store,):
        with Stepper(Scheduler(store=store, clock=clock)) as steps:
            steps.scheduler.schedule("late", jobs.broken, OneTime(T0 + 2), id="late", retry=once)
            steps.scheduler.schedule("early", jobs.broken, OneTime(T0 + 1), id="early", retry=once)
            steps.advance(2)
            assert steps.scheduler.dead_letter() == ["early", "late"]
        assert store.dead_letter() == ["early", "late"]
        again = Scheduler(store=store, clock=clock)  # the next process: the rows loaded
        try:
            assert again.dead_letter() == ["early", "late"]
        finally:
            again.shutdown()
