"""Crash between a restart's construction and the owed attempt: a process killed mid-run
leaves its row ``running``; the next process's recovery writes that row at construction
(and its ``start()`` again), and is killed too, before the owed attempt ran.  The process
after it still owes that attempt: it runs once, as attempt 1 of its slot, ahead of the
slots the downtime passed, exactly as after one restart (at-least-once: docs/DECISIONS.md,
"A restart killed before the attempt it owes ran")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lldsched import FakeClock, Scheduler, SqliteTaskStore, TaskStatus
from tests import jobs
from tests.conftest import T0, settle
from tests.processes import ROOT, killed_mid_run, lines_of

HOUR = 3600.0

# The process killed mid-run: an hourly task whose first run (its slot T0) hangs.
CHILD = """
import sys
from lldsched import FakeClock, FixedRate, Misfire, MisfirePolicy, Scheduler, SqliteTaskStore
from tests import jobs

path, marker, t0 = sys.argv[1], sys.argv[2], float(sys.argv[3])
scheduler = Scheduler(clock=FakeClock(t0), store=SqliteTaskStore(path)).start()
scheduler.schedule("hourly", jobs.hang_first_time, FixedRate(3600), args=(marker,),
                   misfire=MisfirePolicy(Misfire.POLICY), id="hourly")
scheduler.wait_drained(60)  # never returns: the run hangs until SIGKILL
"""

# The restart killed before the owed attempt ran: built on the store (recovery writes the
# row), started or not; it says "ready" there and waits to be killed.  Started, it stops
# in start() after the start's decision (at_start, its writes made) and before the
# workers begin: the owed attempt cannot have run.
RESTART = """
import sys, threading
from lldsched import FakeClock, Scheduler, SqliteTaskStore

path, now, started = sys.argv[1], float(sys.argv[2]), sys.argv[3] == "started"
scheduler = Scheduler(clock=FakeClock(now), store=SqliteTaskStore(path))

def ready():
    print("ready", flush=True)
    threading.Event().wait()  # until SIGKILL

if started:
    scheduler._pool.start = ready
    scheduler.start()
ready()
"""


def killed_restart(path: Path, now: float, *, started: bool) -> None:
    """Build a scheduler on ``path`` at ``now`` in a child (started or not), and SIGKILL it
    once it says it got there (a handshake, not a sleep)."""
    process = subprocess.Popen(
        [sys.executable, "-c", RESTART, str(path), repr(now), "started" if started else "new"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert lines_of(process).get(timeout=20) == "ready"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(20)
    assert process.returncode == -signal.SIGKILL


# What the last restart (at 12:30; the slots 10, 11, 12 passed) records, in the order
# written, by policy: the decisions for the slots the downtime passed, then the run of the
# 09:00 slot owed (attempt 1), then those the policy runs.
EXPECTED = {
    "SKIP": [("missed", 1.0, 0), ("missed", 2.0, 0), ("missed", 3.0, 0), ("ok", 0.0, 1)],
    "RUN_ONCE": [("coalesced", 1.0, 0), ("coalesced", 2.0, 0), ("ok", 0.0, 1), ("ok", 3.0, 1)],
    "RUN_ALL": [("ok", 0.0, 1), ("ok", 1.0, 1), ("ok", 2.0, 1), ("ok", 3.0, 1)],
}


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
@pytest.mark.parametrize("policy", sorted(EXPECTED))
@pytest.mark.parametrize("killed", ["none", "built", "started", "built-then-started"])
def test_a_restart_killed_before_the_attempt_it_owes_leaves_it_owed(
    tmp_path: Path, policy: str, killed: str
) -> None:
    """``none``: one restart, the rule.  Before, a restart killed after its construction
    (or its start) left the row ``scheduled`` with no attempt in flight: the next one read
    the interrupted slot as one of the downtime's, and the policy decided it (``SKIP``:
    recorded missed, the run lost; ``RUN_ONCE``: coalesced into the latest slot)."""
    path, _ = killed_mid_run(CHILD.replace("POLICY", policy), tmp_path, T0)
    now = T0 + 3.5 * HOUR  # 12:30
    for step in [] if killed == "none" else killed.split("-then-"):
        killed_restart(path, now, started=step == "started")

    jobs.CALLS.clear()
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(clock=FakeClock(now), store=store).start()
        try:
            settle(scheduler)
        finally:
            assert scheduler.shutdown()
        task = scheduler.task("hourly")
        runs = 1 + (policy == "RUN_ONCE") + 3 * (policy == "RUN_ALL")
        assert jobs.CALLS == [("rerun", 0.0, 0)] * runs  # the owed run, once
        decided = [(r.outcome.value, (r.slot - T0) / HOUR, r.attempt) for r in store.records()]
        assert decided == EXPECTED[policy]
        assert task.status is TaskStatus.SCHEDULED and task.next_run_at == T0 + 4 * HOUR
        (row,) = store.load_all()  # the attempt made: the row no longer says one is owed
        assert not row.running and row.attempt == 0 and row.next_run_at == T0 + 4 * HOUR
