"""``python -m lldsched tasks`` on a large store: the wall clock of the operator's reads.

Builds a SQLite store and a PostgreSQL store (a throwaway server: tests/pg_server.py) of
``--tasks`` tasks (default 100,000) and ``--records`` records (default 1,000,000, spread
evenly), one task in a hundred failed (the dead letter), then times, each as its own
process with the wall clock (the interpreter's start included, as an operator sees it):

* ``tasks --store URL`` (every task, with its last record),
* ``tasks --store URL --status failed`` (the dead letter),
* ``tasks --store URL show ID`` (one failed task, mid-store, and its last five records).

The rows are one task's row, saved through the store, copied in SQL (an insert a row
through the store's API would take minutes), so every one reads as a real row.  Run:
``PYTHONPATH=. .venv/bin/python benchmarks/store_tasks_cli.py [--tasks N]
[--records M] [--no-sqlite] [--no-postgres]``; the output of each command is written to
``--out DIR`` (default: a temporary directory) to compare two versions byte for byte.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lldsched import (
    ExecutionRecord,
    FixedRate,
    Priority,
    RetryPolicy,
    SqliteTaskStore,
    Task,
    TaskSnapshot,
    TaskStatus,
)
from tests import jobs

T0 = 1_800_000_000.0
FAILED_EVERY = 100  # one task in a hundred is in the dead letter


def _template() -> tuple[TaskSnapshot, ExecutionRecord]:
    task = Task(
        id="task-0", name="report", action=jobs.noop, schedule=FixedRate(3600),
        priority=Priority.NORMAL, retry=RetryPolicy(), timeout=None,
    )  # fmt: skip
    snapshot = TaskSnapshot(task, TaskStatus.SCHEDULED, T0, 0, 1, 0, None)
    record = ExecutionRecord("task-0", "report", 1, T0, T0, 0, T0, T0 + 1, True)
    return snapshot, record


def build_sqlite(path: Path, tasks: int, records: int) -> None:
    snapshot, record = _template()
    with SqliteTaskStore(str(path)) as store:
        store.save(snapshot, record)
    per = max(1, records // tasks)
    connection = sqlite3.connect(path)
    with connection:
        connection.execute(
            f"""
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {tasks - 1})
            INSERT INTO tasks (id, name, definition, status, next_run_at, attempt, run_count,
                               failure_count, last_error, running, failed_seq, priority, version)
            SELECT 'task-' || i, name, definition,
                   CASE WHEN i % {FAILED_EVERY} = 0 THEN 'failed' ELSE status END,
                   next_run_at, attempt, {per},
                   CASE WHEN i % {FAILED_EVERY} = 0 THEN 1 ELSE 0 END,
                   CASE WHEN i % {FAILED_EVERY} = 0 THEN 'ValueError: boom ' || i END,
                   running, CASE WHEN i % {FAILED_EVERY} = 0 THEN {tasks} - i END,
                   priority, version
              FROM tasks, n WHERE id = 'task-0'
            """
        )
        connection.execute("DELETE FROM records")
        connection.execute(
            f"""
            WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {tasks - 1}),
                           k(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM k WHERE j < {per - 1})
            INSERT INTO records (task_id, seq, attempt, due, slot, worker, started, finished,
                                 ok, error, timed_out, name, node)
            SELECT 'task-' || i, j * {tasks} + i + 1, 1, {T0} + j * 3600, {T0} + j * 3600, 0,
                   {T0} + j * 3600, {T0} + j * 3600 + 1,
                   CASE WHEN i % {FAILED_EVERY} = 0 AND j = {per - 1} THEN 0 ELSE 1 END,
                   CASE WHEN i % {FAILED_EVERY} = 0 AND j = {per - 1} THEN 'ValueError: boom' END,
                   0, 'report', NULL
              FROM n, k
            """
        )
    connection.close()


def build_postgres(dsn: str, tasks: int, records: int) -> None:
    import psycopg

    from lldsched.stores.postgres import PostgresTaskStore

    snapshot, record = _template()
    with PostgresTaskStore(dsn) as store:
        store.save(snapshot, record)
    per = max(1, records // tasks)
    with psycopg.connect(dsn, autocommit=True) as connection:
        for first in range(1, tasks, 1000):  # a lock a row inserted (FIRST_VERSION's)
            _copy_tasks(connection, first, min(first + 999, tasks - 1), tasks, per)
        connection.execute("DELETE FROM records")
        connection.execute(
            f"""
            INSERT INTO records (task_id, attempt, due, slot, worker, started, finished, ok,
                                 error, timed_out, name)
            SELECT 'task-' || i, 1, {T0} + j * 3600, {T0} + j * 3600, 0, {T0} + j * 3600,
                   {T0} + j * 3600 + 1, NOT (i % {FAILED_EVERY} = 0 AND j = {per - 1}),
                   CASE WHEN i % {FAILED_EVERY} = 0 AND j = {per - 1} THEN 'ValueError: boom' END,
                   false, 'report'
              FROM generate_series(0, {per - 1}) AS j, generate_series(0, {tasks - 1}) AS i
             ORDER BY j, i
            """
        )
        connection.execute("ANALYZE")


def _copy_tasks(connection: Any, first: int, last: int, tasks: int, per: int) -> None:
    """Tasks ``first`` to ``last`` copied from ``task-0``, in a transaction of their own."""
    connection.execute(
        f"""
            INSERT INTO tasks (id, name, definition, status, next_run_at, priority, attempt,
                               run_count, failure_count, last_error, running, failed_seq,
                               version, writer)
            SELECT 'task-' || i, name, definition,
                   CASE WHEN i % {FAILED_EVERY} = 0 THEN 'failed' ELSE status END,
                   next_run_at, priority, attempt, {per},
                   CASE WHEN i % {FAILED_EVERY} = 0 THEN 1 ELSE 0 END,
                   CASE WHEN i % {FAILED_EVERY} = 0 THEN 'ValueError: boom ' || i END,
                   running, CASE WHEN i % {FAILED_EVERY} = 0 THEN {tasks} - i END,
                   version, writer
              FROM tasks, generate_series({first}, {last}) AS i WHERE id = 'task-0'
        """
    )


def timed(store: str, arguments: list[str], out: Path) -> float:
    start = time.perf_counter()
    with out.open("wb") as sink:
        subprocess.run(
            [sys.executable, "-m", "lldsched", "tasks", "--store", store, *arguments],
            stdout=sink, check=True, env=os.environ,
        )  # fmt: skip
    return time.perf_counter() - start


def measure(name: str, store: str, tasks: int, out: Path) -> None:
    shown = f"task-{tasks // 2 // FAILED_EVERY * FAILED_EVERY}"  # a failed one, mid-store
    for label, arguments in (
        ("tasks", []),
        ("tasks --status failed", ["--status", "failed"]),
        (f"tasks show {shown}", ["show", shown]),
    ):
        seconds = timed(store, arguments, out / f"{name}-{label.replace(' ', '_')}.txt")
        print(f"{name:10} {label:24} {seconds:7.2f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        out = args.out or Path(scratch)
        out.mkdir(parents=True, exist_ok=True)
        if not args.no_sqlite:
            path = Path(scratch) / "jobs.db"
            build_sqlite(path, args.tasks, args.records)
            measure("sqlite", f"sqlite://{path}", args.tasks, out)
        if not args.no_postgres:
            from tests.pg_server import PostgresServer

            with PostgresServer() as server:
                dsn = server.create_database()
                build_postgres(dsn, args.tasks, args.records)
                measure("postgres", dsn, args.tasks, out)


if __name__ == "__main__":
    main()
