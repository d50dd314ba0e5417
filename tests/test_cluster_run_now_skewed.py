"""A ``run_now`` made by a process whose clock lags the others' by minutes (once per
engine): its extra run is due, on the clocks of the processes that claim it, before they
were there, so the claim decides it by the task's misfire policy (docs/CLUSTER.md,
"Failure matrix", clock skew), and the task then goes on at the slot the ``run_now`` put
off, on its grid.  Before, the claiming process counted the slots on from the extra run's
instant: the slot put off was dropped and the grid moved by the skew.

Both clocks are fakes: the lagging process only makes the verb (its timer not started,
as an admin's process), so the one that claims is known.
"""

from __future__ import annotations

import pytest

from lldsched import FakeClock, FixedRate, Misfire, MisfirePolicy, Outcome, Scheduler
from tests import jobs
from tests.cluster import StoreSpec, opened, store_spec
from tests.conftest import T0
from tests.waits import wait_until

__all__ = ["store_spec"]  # the fixture, used by name

LAG = 300.0  # seconds the lagging process's clock is behind
HOURLY = FixedRate(3600, start_delay=600)  # first slot at T0 + 600, on the grid T0 + 600 + 3600 k


@pytest.mark.parametrize(
    ("policy", "extra"),
    [(Misfire.SKIP, Outcome.MISSED), (Misfire.RUN_ONCE, Outcome.OK)],
    ids=["skip", "run-once"],
)
def test_a_run_now_from_a_lagging_process_keeps_the_slot_it_put_off(
    store_spec: StoreSpec, policy: Misfire, extra: Outcome
) -> None:
    with opened(store_spec, 2, poll=0.05) as (right_store, lagging_store):
        clock = FakeClock(T0)
        right = Scheduler(store=right_store, clock=clock)
        right.schedule("hourly", jobs.noop, HOURLY, id="hourly",
                       misfire=MisfirePolicy(policy, grace=60))  # fmt: skip
        lagging = Scheduler(store=lagging_store, clock=FakeClock(T0 - LAG))  # never started
        try:
            right.start()
            assert lagging.run_now("hourly")  # due at T0 - 300 on every other clock

            def decided() -> bool:
                clock.advance(0)  # a wake: the claim (the fake clock never moves itself)
                return bool(right_store.records("hourly")) and not right.task("hourly").running

            wait_until(decided, timeout=20, what="the extra run claimed and decided")
            (record,) = right_store.records("hourly")
            assert (record.slot, record.outcome) == (T0 - LAG, extra)
            (stored,) = right_store.load_all()
            assert stored.next_run_at == T0 + 600  # the slot put off
            assert stored.grid == T0 + 600  # the grid where it was
            assert right.task("hourly").next_run_at == T0 + 600
        finally:
            right.shutdown()
            lagging.shutdown()
