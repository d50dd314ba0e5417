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

from lldsched import FixedRate, TaskStatus, Window
from tests import jobs
from tests.cluster import StoreSpec, ahead_and_behind, follows
from tests.waits import wait_until

T0 = float(int(time.time()))


def test_the_last_run_of_a_window_ends_it_in_the_process_that_did_not_run_the_others(
    store_spec: StoreSpec,
) -> None:
    with ahead_and_behind(store_spec, T0) as (first, second):
        first.schedule("twice", jobs.noop, Window(FixedRate(60), max_runs=2), id="w")
        wait_until(lambda: follows(second, "w", lambda task: task.run_count == 0),
                   timeout=10, what="the registration, followed")  # fmt: skip
        first.start()
        first.wait_idle()  # the first run, here
        wait_until(lambda: follows(second, "w", lambda task: task.run_count == 1),
                   timeout=10, what="the first run, followed")  # fmt: skip
        first.shutdown()
        second.clock.advance(1060)  # type: ignore[attr-defined]  # T0 + 60 due there only
        wait_until(lambda: second.task("w").run_count == 2, timeout=10, what="run 2")
        second.wait_idle()
        task = second.task("w")
        assert (task.status, task.next_run_at) == (TaskStatus.SUCCEEDED, None)
