"""Crash between a restart's construction and the owed attempt: a process killed mid-run
leaves its attempt in flight owed (at-least-once); the next process is built on the store
(an SQLite file's recovery writes the row at construction, and ``start()`` again) and is
killed too, before the owed attempt ran.  The process after it still owes that attempt: it
runs once, as attempt 1 of its slot, and the slots the downtime passed meet the misfire
policy after it, exactly as after one restart (docs/decisions/persistence.md, "A restart killed
before the attempt it owes ran").  On PostgreSQL (always shared) the attempt is owed by
the dead process's lease, which no construction or start rewrites: the same outcome."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lldsched import FakeClock, Scheduler, SqliteTaskStore, TaskStatus
from lldsched.stores.postgres import PostgresTaskStore
from tests import jobs
from tests.conftest import T0, settle
from tests.crash_postgres import LEASE, wait_leases_expired
from tests.pg_server import PostgresServer
from tests.processes import ROOT, killed_mid_run, lines_of

HOUR = 3600.0

# How each process opens the store (``where``: an SQLite file's path, or a dsn).
OPEN = {
    "sqlite": "SqliteTaskStore(where)",
    "postgresql": f"PostgresTaskStore(where, lease={LEASE}, poll=0.05)",
}
# What a child imports for its store, besides ``lldsched``: an SQLite one not psycopg, about
# as long to import as lldsched itself, in each of the up to three children of a test.
IMPORT = {
    "sqlite": "",
    "postgresql": "from lldsched.stores.postgres import PostgresTaskStore",
}

# The process killed mid-run: an hourly task whose first run (its slot T0) hangs.
CHILD = """
import sys
from lldsched import FakeClock, FixedRate, Misfire, MisfirePolicy, Scheduler, SqliteTaskStore
IMPORT
from tests import jobs

where, marker, t0 = WHERE, sys.argv[2], float(sys.argv[3])
scheduler = Scheduler(clock=FakeClock(t0), store=OPEN).start()
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
IMPORT

where, now, started = sys.argv[1], float(sys.argv[2]), sys.argv[3] == "started"
scheduler = Scheduler(clock=FakeClock(now), store=OPEN)

def ready():
    print("ready", flush=True)
    threading.Event().wait()  # until SIGKILL

if started:
    scheduler._pool.start = ready
    scheduler.start()
ready()
"""


def killed_restart(kind: str, where: str, now: float, *, started: bool) -> None:
    """Build a scheduler on ``where`` at ``now`` in a child (started or not), and SIGKILL
    it once it says it got there (a handshake, not a sleep)."""
    source = RESTART.replace("OPEN", OPEN[kind]).replace("IMPORT", IMPORT[kind])
    process = subprocess.Popen(
        [sys.executable, "-c", source, where, repr(now), "started" if started else "new"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert lines_of(process).get(timeout=20) == "ready"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(20)
    assert process.returncode == -signal.SIGKILL


def open_store(kind: str, where: str) -> SqliteTaskStore | PostgresTaskStore:
    """The store at ``where`` as :data:`OPEN` says ``kind``'s processes open it."""
    if kind == "sqlite":
        return SqliteTaskStore(where)
    return PostgresTaskStore(where, lease=LEASE, poll=0.05)


# What the last restart (at 12:30; the slots 10, 11, 12 passed) records, in the order
# written, by policy: the decisions for the slots the downtime passed, then the run of the
# 09:00 slot owed (attempt 1), then those the policy runs.
EXPECTED = {
    "SKIP": [("missed", 1.0, 0), ("missed", 2.0, 0), ("missed", 3.0, 0), ("ok", 0.0, 1)],
    "RUN_ONCE": [("coalesced", 1.0, 0), ("coalesced", 2.0, 0), ("ok", 0.0, 1), ("ok", 3.0, 1)],
    "RUN_ALL": [("ok", 0.0, 1), ("ok", 1.0, 1), ("ok", 2.0, 1), ("ok", 3.0, 1)],
}


@pytest.fixture(params=["sqlite", "postgresql"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
@pytest.mark.parametrize("policy", sorted(EXPECTED))
@pytest.mark.parametrize("killed", ["none", "built", "started", "built-then-started"])
def test_a_restart_killed_before_the_attempt_it_owes_leaves_it_owed(
    tmp_path: Path, request: pytest.FixtureRequest, store_kind: str, policy: str, killed: str
) -> None:
    """``none``: one restart, the rule.  Before, on an SQLite file, a restart killed after
    its construction (or its start) left the row ``scheduled`` with no attempt in flight:
    the next one read the interrupted slot as one of the downtime's, and the policy decided
    it (``SKIP``: recorded missed, the run lost; ``RUN_ONCE``: coalesced into the latest)."""
    if store_kind == "sqlite":
        where = str(tmp_path / "tasks.db")
    else:
        server: PostgresServer = request.getfixturevalue("postgres_server")
        where = server.create_schema()
    child = CHILD.replace("WHERE", repr(where)).replace("OPEN", OPEN[store_kind])
    child = child.replace("IMPORT", IMPORT[store_kind])
    killed_mid_run(child.replace("POLICY", policy), tmp_path, T0)
    now = T0 + 3.5 * HOUR  # 12:30
    for step in [] if killed == "none" else killed.split("-then-"):
        killed_restart(store_kind, where, now, started=step == "started")
    if store_kind == "postgresql":  # the dead processes' leases, taken over once expired
        wait_leases_expired(where, what="the leases")

    jobs.CALLS.clear()
    with open_store(store_kind, where) as store:
        scheduler = Scheduler(clock=FakeClock(now), store=store).start()
        try:
            settle(scheduler)
        finally:
            assert scheduler.shutdown()
        task = scheduler.task("hourly")
        ran = sum(outcome == "ok" for outcome, _, _ in EXPECTED[policy])
        assert len(jobs.CALLS) == ran  # each run here once: the owed one, then the policy's
        decided = [(r.outcome.value, (r.slot - T0) / HOUR, r.attempt) for r in store.records()]
        assert decided == EXPECTED[policy]
        assert task.status is TaskStatus.SCHEDULED and task.next_run_at == T0 + 4 * HOUR
        (row,) = store.load_all()  # the attempt made: the row no longer says one is owed
        assert not row.running and row.attempt == 0 and row.next_run_at == T0 + 4 * HOUR


def test_an_sqlite_cases_processes_import_no_postgresql_store() -> None:
    """An SQLite case's children import what opens its store, not psycopg (``IMPORT``):
    it doubled a child's start-up."""
    for source in (CHILD, RESTART):
        sqlite = source.replace("OPEN", OPEN["sqlite"]).replace("IMPORT", IMPORT["sqlite"])
        postgresql = source.replace("OPEN", OPEN["postgresql"])
        postgresql = postgresql.replace("IMPORT", IMPORT["postgresql"])
        assert "postgres" not in sqlite.lower()
        compile(sqlite, "<child>", "exec")
        assert "import PostgresTaskStore" in postgresql
