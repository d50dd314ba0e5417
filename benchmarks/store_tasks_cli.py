"""``python -m lldsched tasks`` on a large store: the wall clock of the operator's reads.

Builds a SQLite store and a PostgreSQL store (a throwaway server: tests/pg_server.py) of
``--tasks`` tasks (default 100,000) and ``--records`` records (default 1,000,000, spread
evenly), one task in a hundred failed (the dead letter), then times, each as its own
process with the wall clock (the interpreter's start included, as an operator sees it):

* ``tasks --store URL`` (every task, with its last record),
* ``tasks --store URL --status failed`` (the dead letter),
* ``tasks --store URL show ID`` (one failed task, mid-store, and its last five records).

The rows are copies of three tasks' rows saved through the store, a third each on
``FixedRate(3600)``, a daily cron and a ``OneTime``, copied in SQL (an insert a row
through the store's API would take minutes), so every one reads as a real row; each copy
has a name, an argument and a next run of its own, and the cron copies 1,440 expressions
between them (a minute of the day each), as a service's tasks would.  ``--uniform``: the
store measured before (2026-12-06), every row a copy of one ``FixedRate(3600)`` task's,
its name and next run too.  ``--leases L``: ``L`` runs in flight besides (a lease row
each, an hour to run, spread over the store), as a shared store's table marks them.  Run:
``PYTHONPATH=. .venv/bin/python benchmarks/store_tasks_cli.py [--tasks N] [--records M]
[--uniform] [--leases L] [--no-sqlite] [--no-postgres] [--repeat K] [--versions DIR
...]``: each command run ``K`` times, the best wall clock and CPU time (user and system:
what a loaded machine bends least) printed, under each source tree given in turn (first
on ``PYTHONPATH``; alternating, to compare two on one store); the output of each command
is written to ``--out DIR`` (default: a temporary directory) to compare two versions
byte for byte.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lldsched import (
    CronSchedule,
    ExecutionRecord,
    FixedRate,
    OneTime,
    Priority,
    RetryPolicy,
    SqliteTaskStore,
    Task,
    TaskSnapshot,
    TaskStatus,
)
from lldsched.schedules.base import Schedule
from tests import jobs

T0 = 1_800_000_000.0
FAILED_EVERY = 100  # one task in a hundred is in the dead letter


SCHEDULES: tuple[Schedule, ...] = (
    FixedRate(3600), CronSchedule("0 3 * * *"), OneTime(T0 + 30 * 86400)
)  # fmt: skip
"""The templates' schedules: task ``i`` is a copy of task ``i % 3`` (``--uniform``: of
task 0, every one)."""


def _templates(uniform: bool) -> list[tuple[TaskSnapshot, ExecutionRecord]]:
    saved = []
    for n, schedule in enumerate(SCHEDULES[:1] if uniform else SCHEDULES):
        task = Task(
            id=f"task-{n}", name="report", action=jobs.noop, schedule=schedule,
            priority=Priority.NORMAL, retry=RetryPolicy(), timeout=None,
        )  # fmt: skip
        snapshot = TaskSnapshot(task, TaskStatus.SCHEDULED, T0, 0, 1, 0, None)
        record = ExecutionRecord(f"task-{n}", "report", 1, T0, T0, 0, T0, T0 + 1, True)
        saved.append((snapshot, record))
    return saved


def _copy(uniform: bool) -> dict[str, str]:
    """The SQL, in both dialects, of copy ``i``'s template id, name, definition and next
    run (``||`` binds tighter than ``%`` in SQLite: the parentheses)."""
    if uniform:
        return {"of": "'task-0'", "name": "name", "definition": "definition", "next": "next_run_at"}
    definition = "definition"
    for before, after in (  # the copy's own name and argument; a cron's minute of the day
        (""" '"name":"report"' """, """ '"name":"report-' || i || '"' """),
        (""" '"args":[]' """, """ '"args":[' || i || ']' """),
        (""" '"expr":"0 3 * * *"' """,
         """ '"expr":"' || (i % 60) || ' ' || (i / 60 % 24) || ' * * *"' """),
    ):  # fmt: skip
        definition = f"replace({definition}, {before.strip()}, {after.strip()})"
    return {
        "of": f"'task-' || (i % {len(SCHEDULES)})", "name": "name || '-' || i",
        "definition": definition, "next": "next_run_at + i",
    }  # fmt: skip


def build_sqlite(path: Path, tasks: int, records: int, *, uniform: bool = False) -> None:
    templates = _templates(uniform)
    with SqliteTaskStore(str(path)) as store:
        for snapshot, record in templates:
            store.save(snapshot, record)
    per = max(1, records // tasks)
    copy = _copy(uniform)
    connection = sqlite3.connect(path)
    with connection:
        connection.execute(
            f"""
            WITH RECURSIVE n(i) AS (
                SELECT {len(templates)} UNION ALL SELECT i + 1 FROM n WHERE i < {tasks - 1}
            )
            INSERT INTO tasks (id, name, definition, status, next_run_at, attempt, run_count,
                               failure_count, last_error, running, failed_seq, priority, version)
            SELECT 'task-' || i, {copy["name"]}, {copy["definition"]},
                   CASE WHEN i % {FAILED_EVERY} = 0 THEN 'failed' ELSE status END,
                   {copy["next"]}, attempt, {per},
                   CASE WHEN i % {FAILED_EVERY} = 0 THEN 1 ELSE 0 END,
                   CASE WHEN i % {FAILED_EVERY} = 0 THEN 'ValueError: boom ' || i END,
                   running, CASE WHEN i % {FAILED_EVERY} = 0 THEN {tasks} - i END,
                   priority, version
              FROM n JOIN tasks ON id = {copy["of"]}
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


def build_postgres(dsn: str, tasks: int, records: int, *, uniform: bool = False) -> None:
    import psycopg

    from lldsched.stores.postgres import PostgresTaskStore

    templates = _templates(uniform)
    with PostgresTaskStore(dsn) as store:
        for snapshot, record in templates:
            store.save(snapshot, record)
    per = max(1, records // tasks)
    copy = _copy(uniform)
    with psycopg.connect(dsn, autocommit=True) as connection:
        for first in range(len(templates), tasks, 1000):  # a lock a row inserted
            _copy_tasks(connection, copy, first, min(first + 999, tasks - 1), tasks, per)
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


def in_flight(tasks: int, leases: int) -> list[tuple[Any, ...]]:
    """``leases`` lease rows (task id, slot, attempt, token, holder, expiry), spread over
    the store's ``tasks``, each held for an hour from now: runs in flight elsewhere."""
    step = max(1, tasks // max(1, leases))
    until = time.time() + 3600
    return [(f"task-{i * step + 1}", T0, 0, i + 1, "bench:1:0", until) for i in range(leases)]


def _lease_postgres(dsn: str, leases: list[tuple[Any, ...]]) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as connection, connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO leases (task_id, slot, attempt, token, holder, expires_at, version)"
            " VALUES (%s, %s, %s, %s, %s, %s, 0)",
            leases,
        )


def _copy_tasks(
    connection: Any, copy: dict[str, str], first: int, last: int, tasks: int, per: int
) -> None:
    """Tasks ``first`` to ``last`` copied (:func:`_copy`), in a transaction of their own
    (FIRST_VERSION's lock is taken a row inserted)."""
    connection.execute(
        f"""
            INSERT INTO tasks (id, name, definition, status, next_run_at, priority, attempt,
                               run_count, failure_count, last_error, running, failed_seq,
                               version, writer)
            SELECT 'task-' || i, {copy["name"]}, {copy["definition"]},
                   CASE WHEN i % {FAILED_EVERY} = 0 THEN 'failed' ELSE status END,
                   {copy["next"]}, priority, attempt, {per},
                   CASE WHEN i % {FAILED_EVERY} = 0 THEN 1 ELSE 0 END,
                   CASE WHEN i % {FAILED_EVERY} = 0 THEN 'ValueError: boom ' || i END,
                   running, CASE WHEN i % {FAILED_EVERY} = 0 THEN {tasks} - i END,
                   version, writer
              FROM generate_series({first}, {last}) AS i JOIN tasks ON id = {copy["of"]}
        """
    )


def timed(store: str, arguments: list[str], out: Path, version: str | None) -> tuple[float, float]:
    """The wall clock and the CPU time (user and system) of one command, a process of its
    own (``version``: a source tree put first on its ``PYTHONPATH``), run in ``out``'s
    folder: ``-m`` puts the working directory before ``PYTHONPATH``, and a source tree's
    would be imported whatever ``version`` says."""
    env = dict(os.environ)
    if version is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (version, env.get("PYTHONPATH"))))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with out.open("wb") as sink:
        subprocess.run(
            [sys.executable, "-m", "lldsched", "tasks", "--store", store, *arguments],
            stdout=sink, check=True, env=env, cwd=out.parent,
        )  # fmt: skip
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def measure(
    name: str, store: str, tasks: int, out: Path, versions: list[str | None], repeat: int
) -> None:
    """Each command, ``repeat`` times under each version in turn (alternating, so a
    machine busy for a while weighs on both alike): the best wall clock and CPU time."""
    shown = f"task-{tasks // 2 // FAILED_EVERY * FAILED_EVERY}"  # a failed one, mid-store
    for label, arguments in (
        ("tasks", []),
        ("tasks --status failed", ["--status", "failed"]),
        (f"tasks show {shown}", ["show", shown]),
    ):
        best: dict[str | None, tuple[float, float]] = {}
        for _ in range(repeat):
            for n, version in enumerate(versions):
                file = out / f"{name}-{n}-{label.replace(' ', '_')}.txt"
                wall, cpu = timed(store, arguments, file, version)
                wall0, cpu0 = best.get(version, (wall, cpu))
                best[version] = (min(wall, wall0), min(cpu, cpu0))
        for version, (wall, cpu) in best.items():
            print(
                f"{name:10} {label:24} {wall:7.2f} s  (CPU {cpu:6.2f} s)  {version or ''}",
                flush=True,
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--uniform", action="store_true", help="every row one task's copy")
    parser.add_argument("--leases", type=int, default=0, help="runs in flight (lease rows)")
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each command, the best")
    parser.add_argument(
        "--versions", nargs="+", metavar="DIR", default=[None],
        help="source trees to time in turn, each first on PYTHONPATH (to compare two)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        out = args.out or Path(scratch)
        out.mkdir(parents=True, exist_ok=True)
        if not args.no_sqlite:
            path = Path(scratch) / "jobs.db"
            build_sqlite(path, args.tasks, args.records, uniform=args.uniform)
            with contextlib.closing(sqlite3.connect(path)) as connection, connection:
                connection.executemany(
                    "INSERT INTO leases (task_id, slot, attempt, token, holder, expires_at)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    in_flight(args.tasks, args.leases),
                )
            measure("sqlite", f"sqlite://{path}", args.tasks, out, args.versions, args.repeat)
        if not args.no_postgres:
            from tests.pg_server import PostgresServer

            with PostgresServer() as server:
                dsn = server.create_database()
                build_postgres(dsn, args.tasks, args.records, uniform=args.uniform)
                _lease_postgres(dsn, in_flight(args.tasks, args.leases))
                measure("postgres", dsn, args.tasks, out, args.versions, args.repeat)


if __name__ == "__main__":
    main()
