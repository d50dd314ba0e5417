"""``Window(..., max_runs=n)`` on a shared store: the n runs are counted across the
processes, not in each.  A window counts a task's successful runs in the process that
ran them; a process that follows a run settled elsewhere takes the row's count too (as
a restart does from the stored counters), so the run that makes n ends the task
wherever it runs.

Before, each process counted only its own runs: ``Window(FixedRate(0.3), max_runs=4)``
ran 5 times on a shared SQLite file and 7 on PostgreSQL with three processes.
"""

from __future__ import annotations

import time

from lldsched import FakeClock, FixedRate, Scheduler, TaskStatus, Window
from tests import jobs
from tests.cluster import StoreSpec, opened
from tests.waits import wait_until

T0 = float(int(time.time()))


def test_the_last_run_of_a_window_ends_it_in_the_process_that_did_not_run_the_others(
    store_spec: StoreSpec,
) -> None:
    with opened(store_spec, 2, poll=0.05) as (first_store, second_store):
        first = Scheduler(store=first_store, clock=FakeClock(T0))  # started below
        first.schedule("twice", jobs.noop, Window(FixedRate(60), max_runs=2), id="w")
        # Behind by far: it follows the store but claims nothing until its clock moves.
        second_clock = FakeClock(T0 - 1000)
        second = Scheduler(store=second_store, clock=second_clock).start()
        try:

            def followed(runs: int) -> bool:
                second_clock.advance(0)  # wake its timer: it reads the change feed
                known = {task.id: task for task in second.tasks()}
                return "w" in known and known["w"].run_count == runs

            wait_until(lambda: followed(0), timeout=10, what="the registration, followed")
            first.start()
            first.wait_idle()  # the first run, here
            wait_until(lambda: followed(1), timeout=10, what="the first run, followed")
            first.shutdown()
            second_clock.advance(1060)  # the second slot, T0 + 60, is due there only
            wait_until(lambda: second.task("w").run_count == 2, timeout=10, what="run 2")
            second.wait_idle()
            task = second.task("w")
            assert (task.status, task.next_run_at) == (TaskStatus.SUCCEEDED, None)
        finally:
            first.shutdown()
            second.shutdown()
