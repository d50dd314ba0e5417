"""What a shutdown out of time says of the runs due on a shared store.

A drain on a shared store starts only what its process had claimed (docs/CLUSTER.md,
"How it works"); the tasks its registry has due are the store's, and a run another
process holds is among them (its row says due at the slot being run).  The WARNING of
a shutdown out of time counted those as "1 run due by the shutdown not started (they
stay SCHEDULED or RETRYING with their due time, for a durable store to recover)": seen
with SIGTERM and a 2 s drain in one of two service processes on PostgreSQL, the run it
counted being the other process's, in flight (lldsched/threaded/shutdownwarnings.py,
``_not_started``).

The same line named the runs it left going, and no more: on a shared store their leases
are renewed no more once the shutdown returns, and another process runs the attempt
again once one runs out (docs/CLUSTER.md, "How it works"), which it now says
(``_still_going``; a store of one process's line is as before,
tests/test_scheduler_shutdown.py).
"""

from __future__ import annotations

import logging

import pytest

from lldsched import FixedRate, Scheduler
from tests import jobs
from tests.cluster import StoreSpec, opened
from tests.waits import wait_until

HOUR = 3600.0


def test_a_run_held_elsewhere_is_not_said_left_for_a_durable_store_to_recover(
    store_spec: StoreSpec, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lldsched.scheduler")
    jobs.GATE.clear()
    # lease=300: no renewal within the test; one worker each, busy with its run
    with opened(store_spec, 2, lease=300.0, poll=0.05) as (here_store, there_store):
        here = Scheduler(workers=1, store=here_store)
        there = Scheduler(workers=1, store=there_store)
        try:
            here.schedule("mine", jobs.gated, FixedRate(HOUR), id="mine")  # due now
            here.start()
            wait_until(lambda: len(here_store.leases()) == 1, timeout=30, what="mine claimed")
            there.schedule("theirs", jobs.gated, FixedRate(HOUR), id="theirs")
            there.start()
            wait_until(lambda: len(here_store.leases()) == 2, timeout=30, what="theirs claimed")
            wait_until(lambda: "theirs" in {t.id for t in here.tasks()}, timeout=30,
                       what="theirs followed here, due")  # fmt: skip
            assert not here.shutdown(timeout=0.2)  # mine waits for the gate: out of time
            (said,) = [r.message for r in caplog.records if "returned with" in r.message]
            assert "runs still going: mine 'mine' (on a shared store their leases are " in said
            assert "once one runs out, another process runs that attempt again)" in said
            assert "1 run due by the shutdown not started (on a shared store they stay due " in (
                said
            )
            assert "which may be running them already" in said
            assert "for a durable store to recover" not in said
        finally:
            jobs.GATE.set()
            here.shutdown()
            there.shutdown()
            jobs.GATE.clear()
