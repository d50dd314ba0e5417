"""Crash: a process using a durable store is killed with SIGKILL mid-run; a new process (this
one) opens the store: no definition or settled record is lost, the run in flight runs again
(at-least-once), and the slots that passed meet each task's misfire policy."""

from __future__ import annotations

import logging
import signal
from pathlib import Path

import pytest

from lldsched import FakeClock, Scheduler, SqliteTaskStore, TaskStatus
from tests import jobs
from tests.conftest import T0, settle
from tests.processes import killed_mid_run

HOUR = 3600.0

# The child: registers its tasks at T0 on a fake clock, lets the one-off settle, then starts
# the run that hangs; it prints the ids it registered, then "started" from inside the run.
CHILD = """
import sys
from lldsched import (FakeClock, FixedRate, Misfire, MisfirePolicy, OneTime, Scheduler,
                      SqliteTaskStore)
from tests import jobs

path, marker, t0 = sys.argv[1], sys.argv[2], float(sys.argv[3])
scheduler = Scheduler(clock=FakeClock(t0), store=SqliteTaskStore(path)).start()
settled = scheduler.schedule("settled", jobs.noop, OneTime(delay=0))
hourly = {
    policy: scheduler.schedule(f"hourly-{policy.value}", jobs.noop,
                               FixedRate(3600, start_delay=3600), misfire=MisfirePolicy(policy))
    for policy in Misfire
}
assert scheduler.wait_idle(10)
print(" ".join([settled.id, *(task.id for task in hourly.values())]), flush=True)
scheduler.schedule("in-flight", jobs.hang_first_time, OneTime(delay=0), args=(marker,))
scheduler.wait_drained(60)  # never returns: the run hangs until SIGKILL
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_a_process_killed_mid_run_loses_nothing_settled_and_reruns_what_was_in_flight(
    tmp_path: Path,
) -> None:
    path, (printed,) = killed_mid_run(CHILD, tmp_path, T0, before=1)
    ids = printed.split()
    settled_id, once_id, all_id, skip_id = ids

    jobs.CALLS.clear()
    clock = FakeClock(T0 + 3.5 * HOUR)  # back at 12:30; the hourly slots 10, 11, 12 passed
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(clock=clock, store=store)
        tasks = {task.name: task for task in scheduler.tasks()}
        assert [task.id for task in scheduler.tasks()][:4] == ids  # no definition lost
        assert set(tasks) == {"settled", "hourly-run_once", "hourly-run_all", "hourly-skip",
                              "in-flight"}  # fmt: skip
        settled = tasks["settled"]
        assert settled.status is TaskStatus.SUCCEEDED and [r.ok for r in settled.history] == [True]
        in_flight = tasks["in-flight"]
        assert in_flight.status is TaskStatus.SCHEDULED and in_flight.history == ()
        scheduler.start()
        try:
            settle(scheduler)
        finally:
            assert scheduler.shutdown()
        assert jobs.CALLS == [("rerun", 0.0, 0)]  # the run in flight ran again, once
        assert in_flight.status is TaskStatus.SUCCEEDED and in_flight.history[0].attempt == 1

        def decided(task_id: str) -> list[tuple[str, float]]:
            return [(r.outcome, (r.slot - T0) / HOUR) for r in store.records(task_id)]

        assert decided(once_id) == [("coalesced", 1.0), ("coalesced", 2.0), ("ok", 3.0)]
        assert decided(all_id) == [("ok", 1.0), ("ok", 2.0), ("ok", 3.0)]
        assert decided(skip_id) == [("missed", 1.0), ("missed", 2.0), ("missed", 3.0)]
        assert decided(settled_id) == [("ok", 0.0)]
        assert {scheduler.task(i).next_run_at for i in ids[1:]} == {T0 + 4 * HOUR}


# A service's jobs, one of them in flight at the SIGKILL: the restart says which.
CUT_CHILD = """
import sys
from lldsched import FakeClock, FixedRate, OneTime, Scheduler, SqliteTaskStore
from tests import jobs

path, marker, t0 = sys.argv[1], sys.argv[2], float(sys.argv[3])
scheduler = Scheduler(clock=FakeClock(t0), store=SqliteTaskStore(path)).start()
scheduler.schedule("hourly", jobs.noop, FixedRate(3600, start_delay=3600), id="hourly")
scheduler.schedule("export", jobs.hang_first_time, OneTime(delay=0), args=(marker,), id="export")
scheduler.wait_drained(60)  # never returns: the run hangs until SIGKILL
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_the_restart_after_a_kill_mid_run_names_the_run_that_runs_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Before, an unshared restart ran the attempt again without a word (a shared
    store's start says it, at INFO on lldsched.cluster): the log is where an operator
    learns that a job may have done its work twice."""
    path, _ = killed_mid_run(CUT_CHILD, tmp_path, T0)
    caplog.set_level(logging.INFO, logger="lldsched.store")
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(clock=FakeClock(T0), store=store)
        try:
            said = [r.getMessage() for r in caplog.records if r.name == "lldsched.store"]
            assert said == [
                f"restored 2 tasks from {store!r}",
                f"1 task had a run in flight when the last process on {store!r} stopped (no "
                "record of it): that attempt runs again (at-least-once): export",
            ]
        finally:
            assert scheduler.shutdown()
