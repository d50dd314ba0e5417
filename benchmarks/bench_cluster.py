"""Many processes, one set of tasks: claimed runs per second with 1, 2 and 4 scheduler
processes on a shared SQLite file, on PostgreSQL, and APScheduler 4 on the same PostgreSQL.

The workload: ``TASKS`` one-off no-op tasks, all due, in one shared store; then
N processes are started, each with a scheduler on the store, and the clock runs
from the moment all of them are told to go until every task has run once.  Each
run is one claim (a lease with a fencing token) and one fenced settle (its record
and the task's new state): what a cluster pays per run.  Loading is not timed: the
tasks are registered once per engine and the store copied for each N (a file
copy; ``CREATE DATABASE … TEMPLATE`` on PostgreSQL).

* **lldsched** (``benchmarks/cluster_worker.py``): ``Scheduler(workers=4)`` on
  ``SqliteTaskStore(path, shared=True)`` or ``PostgresTaskStore(dsn)``, defaults
  (lease 30 s, poll 1 s).  Done when the store holds ``TASKS`` records; the count
  is then checked: one record per task, none twice.
* **APScheduler 4.0.0a6** (``benchmarks/cluster_aps4.py``, run by ``.venv-aps4``,
  which ``make bench`` builds: APScheduler 3 lives in the main venv): worker
  schedulers on its ``SQLAlchemyDataStore`` (psycopg, async) on the same server,
  one task per job as lldsched has one task per run, ``max_concurrent_jobs=100``,
  jobs added directly (its cheapest path).  Done when its ``jobs`` table is empty.

The PostgreSQL server is the tests' throwaway cluster (``tests/pg_server.py``) with
durability **on** (``fsync``, ``synchronous_commit``), both sides on it in turn.
Figures: runs/s per engine and N, the ratio to APScheduler 4 at 4 processes, and
PostgreSQL's growth from 1 to 4 processes.  Run: ``.venv/bin/python
benchmarks/bench_cluster.py [--quick]``.  On a 2-core machine 4 processes share 2
cores with the server: growth from 1 to 4 is what overlapping round trips buy.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psycopg

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # the tests' throwaway server: tests/pg_server.py

from tests.pg_server import PostgresServer  # noqa: E402

APS4_PYTHON = ROOT / ".venv-aps4" / "bin" / "python"
PROCESSES = (1, 2, 4)
DURABLE = {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}
TIMEOUT = 300.0  # seconds one configuration may take before the benchmark gives up

GOALS: dict[str, tuple[str, float]] = {
    "postgres 4 procs vs APScheduler 4 (x)": (">=", 3.0),
    "postgres growth 1 -> 4 procs (x)": (">", 1.0),
}


def timed(command: list[str], *, processes: int, total: int, done: Callable[[], int]) -> float:
    """Start ``processes`` copies of ``command``, wait for each to say ``ready``, tell them
    all to go and return runs per second until ``done()`` reaches ``total``."""
    children = [
        subprocess.Popen(
            command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for _ in range(processes)
    ]
    try:
        for child in children:
            assert child.stdout is not None
            line = child.stdout.readline().strip()
            if line != "ready":
                raise RuntimeError(f"{command[:3]}: expected 'ready', got {line!r}")
        start = time.perf_counter()
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        while done() < total:
            if time.perf_counter() - start > TIMEOUT:
                raise RuntimeError(f"{command[:3]}: {done()} of {total} runs in {TIMEOUT} s")
            time.sleep(0.01)  # polling the store's count, not part of the figure's work
        elapsed = time.perf_counter() - start
    finally:
        for child in children:
            if child.stdin is not None:
                child.stdin.close()
        for child in children:
            try:
                child.wait(60)
            except subprocess.TimeoutExpired:
                child.kill()
    return total / elapsed


def count(dsn: str, query: str) -> Callable[[], int]:
    """``done()`` for a PostgreSQL database: the first column of ``query``."""
    connection = psycopg.connect(dsn, autocommit=True)

    def read() -> int:
        row = connection.execute(query).fetchone()
        return 0 if row is None else int(row[0])

    return read


def sqlite_count(path: Path) -> Callable[[], int]:
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    return lambda: int(connection.execute("SELECT count(*) FROM records").fetchone()[0])


def worker(*args: str) -> list[str]:
    return [sys.executable, str(HERE / "cluster_worker.py"), *args]


def lldsched_postgres(server: PostgresServer, tasks: int) -> dict[int, float]:
    template = server.create_database()
    subprocess.run(worker("load", f"postgres:{template}", str(tasks)), cwd=ROOT, check=True)
    rates = {}
    for processes in PROCESSES:
        dsn = server.create_database(template=template)
        records = count(dsn, "SELECT count(*) FROM records")
        rates[processes] = timed(
            worker("work", f"postgres:{dsn}"), processes=processes, total=tasks, done=records
        )
        ran = count(dsn, "SELECT count(DISTINCT task_id) FROM records")()
        assert records() == tasks == ran, f"postgres: {records()} records for {ran} tasks"
    return rates


def lldsched_sqlite(directory: Path, tasks: int) -> dict[int, float]:
    template = directory / "template.db"
    subprocess.run(worker("load", f"sqlite:{template}", str(tasks)), cwd=ROOT, check=True)
    rates = {}
    for processes in PROCESSES:
        path = directory / f"shared-{processes}.db"
        shutil.copyfile(template, path)
        records = sqlite_count(path)
        rates[processes] = timed(
            worker("work", f"sqlite:{path}"), processes=processes, total=tasks, done=records
        )
        assert records() == tasks, f"sqlite: {records()} records for {tasks} tasks"
    return rates


def apscheduler4(server: PostgresServer, tasks: int) -> dict[int, float]:
    if not APS4_PYTHON.exists():
        raise RuntimeError(f"{APS4_PYTHON} is missing: `make bench` builds it")
    script = str(HERE / "cluster_aps4.py")
    template = server.create_database()
    url = template.replace("postgresql://", "postgresql+psycopg://", 1)
    subprocess.run([str(APS4_PYTHON), script, "load", url, str(tasks)], cwd=ROOT, check=True)
    rates = {}
    for processes in PROCESSES:
        dsn = server.create_database(template=template)
        left = count(dsn, "SELECT count(*) FROM jobs")
        url = dsn.replace("postgresql://", "postgresql+psycopg://", 1)
        rates[processes] = timed(
            [str(APS4_PYTHON), script, "work", url],
            processes=processes,
            total=tasks,
            done=lambda left=left: tasks - left(),  # type: ignore[misc]
        )
    return rates


def main(argv: list[str] | None = None) -> dict[str, float]:
    quick = "--quick" in (argv or [])
    tasks = 1000 if quick else 2000
    aps_tasks = 400 if quick else 1000  # APScheduler 4 registers about 25 tasks a second
    with tempfile.TemporaryDirectory() as directory, PostgresServer(settings=DURABLE) as server:
        measured = {
            "sqlite": lldsched_sqlite(Path(directory), tasks),
            "postgres": lldsched_postgres(server, tasks),
            "APScheduler 4": apscheduler4(server, aps_tasks),
        }
    print(f"claimed runs per second, {tasks} one-off tasks ({aps_tasks} for APScheduler 4)")
    print(f"{'processes':>24}" + "".join(f"{n:>10}" for n in PROCESSES))
    for engine, rates in measured.items():
        print(f"{engine:>24}" + "".join(f"{rates[n]:>10,.0f}" for n in PROCESSES))
    results = {
        f"{engine} {n} procs (runs/s)": rates[n]
        for engine, rates in measured.items()
        for n in PROCESSES
    }
    pg, aps = measured["postgres"], measured["APScheduler 4"]
    results["postgres 4 procs vs APScheduler 4 (x)"] = pg[4] / aps[4]
    results["postgres growth 1 -> 4 procs (x)"] = pg[4] / pg[1]
    results["sqlite growth 1 -> 4 procs (x)"] = measured["sqlite"][4] / measured["sqlite"][1]
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
