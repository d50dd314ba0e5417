"""Schedulers on PostgreSQL: a task made earliest due in another process wakes this
scheduler's timer through LISTEN/NOTIFY, and a database restart is ridden out.

The engine-agnostic behaviour (each slot once, control verbs, fencing, the
multi-process SIGKILL/SIGSTOP test) runs against PostgreSQL through
``tests/cluster.py``'s ``store_spec`` fixture; what is here is PostgreSQL's own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lldsched import FixedRate, Outcome, Scheduler, SystemClock, TaskStatus
from lldsched.stores.postgres import PostgresTaskStore
from tests import jobs
from tests.pg_server import PostgresServer
from tests.waits import wait_until

ROOT = Path(__file__).resolve().parent.parent

REGISTER = """
import sys
from lldsched import OneTime, Scheduler
from lldsched.stores.postgres import PostgresTaskStore
from tests import jobs
with PostgresTaskStore(sys.argv[1]) as store:
    scheduler = Scheduler(store=store)  # not started: it only registers
    scheduler.schedule("from-elsewhere", jobs.note, OneTime(delay=0), args=("elsewhere",))
    scheduler.shutdown()
"""


@pytest.fixture(autouse=True)
def _clear_calls() -> Iterator[None]:
    jobs.CALLS.clear()
    yield
    jobs.CALLS.clear()


def labels() -> list[str]:
    with jobs.CALLS_LOCK:
        return [label for label, _, _ in jobs.CALLS]


def test_a_task_registered_in_another_process_wakes_this_timer_long_before_its_poll(
    postgres_dsn: str,
) -> None:
    with PostgresTaskStore(postgres_dsn, poll=3600, lease=30) as store:
        scheduler = Scheduler(store=store, max_wait=None).start()
        try:
            path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
            subprocess.run(
                [sys.executable, "-c", REGISTER, postgres_dsn],
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": path},
                check=True,
                timeout=60,
            )
            # Only the notification can wake the timer: its bounded wait is an hour.
            wait_until(lambda: labels() == ["elsewhere"], timeout=20, what="the run")
            (task,) = scheduler.tasks()
            assert task.name == "from-elsewhere" and task.run_count == 1
        finally:
            assert scheduler.shutdown(timeout=10)


def test_a_recurring_task_keeps_running_after_the_database_restarts(
    postgres_server: PostgresServer, postgres_dsn: str
) -> None:
    with PostgresTaskStore(postgres_dsn, poll=0.1, lease=3) as store:
        scheduler = Scheduler(store=store, workers=2).start()
        try:
            scheduler.schedule("tick", jobs.note, FixedRate(0.05), args=("tick",))
            wait_until(lambda: len(labels()) >= 3, timeout=20, what="runs before the restart")
            postgres_server.restart()
            before = len(labels())
            wait_until(
                lambda: len(labels()) >= before + 5, timeout=30, what="runs after the restart"
            )
            ran = [r for r in store.records(scheduler.tasks()[0].id) if r.misfire is None]
            tokens = [record.token or 0 for record in ran]  # SKIPPED records carry their run's
            assert 0 not in tokens and tokens == sorted(tokens) and len(set(tokens)) == len(tokens)
        finally:
            assert scheduler.shutdown(timeout=10)


def test_a_run_in_flight_across_a_database_restart_is_settled_once_by_its_own_claim(
    postgres_server: PostgresServer, postgres_dsn: str
) -> None:
    """The database restarts while a run holds its lease and another process is due to
    claim: the lease row survives the restart, the run's settle goes through on a new
    connection with the token it was claimed with, and the other process never runs
    the slot (an audit's check of the row "The database restarts" of the failure table in
    docs/CLUSTER.md, "Network partitions")."""
    jobs.GATE.clear()
    running = threading.Event()
    with (
        PostgresTaskStore(postgres_dsn, poll=0.1, lease=3) as mine,
        PostgresTaskStore(postgres_dsn, poll=0.1, lease=3) as other,
    ):
        scheduler = Scheduler(store=mine, workers=2)
        scheduler.add_listener(
            lambda event: running.set() if event.status is TaskStatus.RUNNING else None
        )
        scheduler.start()
        elsewhere = Scheduler(store=other, workers=2)
        try:
            scheduler.schedule("held", jobs.gated, FixedRate(3600), id="held")
            assert running.wait(20)
            elsewhere.start()
            (claim,) = mine.leases()
            postgres_server.restart()
            jobs.GATE.set()
            wait_until(lambda: bool(mine.records("held")), timeout=30, what="the settle")
            (record,) = mine.records("held")
            assert record.outcome is Outcome.OK and record.token == claim.token
            assert record.node == mine.node and not mine.leases()
            assert mine.rejected == 0 and other.rejected == 0
        finally:
            jobs.GATE.set()
            assert scheduler.shutdown(timeout=10) and elsewhere.shutdown(timeout=10)
        assert [r.token for r in other.records("held")] == [claim.token]  # nothing ran twice


AHEAD = 5.0  # seconds one process's clock is set ahead of the host's


class Ahead(SystemClock):
    """The host's clock set ``AHEAD`` seconds ahead: one process's clock set wrong."""

    def now(self) -> float:
        return super().now() + AHEAD


def test_a_process_whose_clock_is_ahead_runs_no_slot_twice_and_skips_the_slots_it_passed(
    postgres_dsn: str,
) -> None:
    """Expiry is the server's clock, due instants each scheduler's (docs/CLUSTER.md,
    "Failure matrix", clock skew): a process ahead by five periods of a fixed rate claims
    the slot due now as five seconds late, and its finish, on its clock, has passed the
    next slots, which its overrun policy records ``skipped``: never run, although no run
    overran.  It then runs each slot once, that much early.  No slot twice."""
    with (
        PostgresTaskStore(postgres_dsn, poll=0.1, lease=30) as right,
        PostgresTaskStore(postgres_dsn, poll=0.1, lease=30) as wrong,
    ):
        registrar = Scheduler(store=right)  # the host's clock; never started: it registers
        registrar.schedule("tick", jobs.noop, FixedRate(1), id="tick")
        first = registrar.task("tick").next_run_at
        assert first is not None
        ahead = Scheduler(store=wrong, clock=Ahead()).start()
        try:
            wait_until(
                lambda: sum(record.ok for record in right.records("tick")) >= 3,
                timeout=20,
                what="three runs",
            )
        finally:
            assert ahead.shutdown(timeout=10)
        registrar.shutdown()
        records = sorted(right.records("tick"), key=lambda record: record.slot)
    slots = [record.slot for record in records]
    assert slots == pytest.approx([first + n for n in range(len(slots))])  # each slot once
    run = records[0]
    assert run.ok and run.finished > first + AHEAD  # its finish, on its clock
    skipped = [record.slot for record in records if record.misfire is Outcome.SKIPPED]
    assert len(skipped) >= AHEAD - 1 and all(first < slot <= run.finished for slot in skipped)
    assert all(record.ok for record in records if record.slot > run.finished)
