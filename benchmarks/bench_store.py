"""Persistence: status writes per second through SqliteTaskStore, and dispatch against APScheduler.

The workload is the dispatch workload: 20,000 no-op one-off tasks, all due at once, on
4 workers.  Each side registers every task first (lldsched before ``start()``,
APScheduler on a paused scheduler), then the clock starts and stops when the last task
has run (lldsched: ``wait_drained()``, which also waits for the last store write).

* lldsched with ``SqliteTaskStore`` (WAL, ``synchronous=NORMAL``): every transition is
  one transaction.  During dispatch each task is written twice (RUNNING, then SUCCEEDED
  with its execution record); the writes are counted as they happen.
* APScheduler 3 ``BackgroundScheduler`` with ``ThreadPoolExecutor(4)``,
  ``misfire_grace_time=None`` (never skip a late job) and its ``SQLAlchemyJobStore`` on
  SQLite, which pickles each job, selects the due ones and deletes each one-off job after
  submitting it.  Without SQLAlchemy it falls back to its ``MemoryJobStore``, and says so.
* For reference, lldsched without a store and with ``InMemoryTaskStore``.

Figures: dispatch rate (tasks/s) of each, status writes/s, and the durable-to-durable
ratio.  Run: ``.venv/bin/python benchmarks/bench_store.py``.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lldsched import (
    ExecutionRecord,
    InMemoryTaskStore,
    OneTime,
    Scheduler,
    SqliteTaskStore,
    TaskSnapshot,
    TaskStore,
)

TASKS = 20_000
WORKERS = 4
REPEATS = 3

GOALS: dict[str, tuple[str, float]] = {
    "durable dispatch vs APScheduler (x)": (">=", 3.0),
}


def noop() -> None:
    """The task: does nothing (module level, so a durable store can keep its path)."""


class CountingSqliteTaskStore(SqliteTaskStore):
    """SqliteTaskStore counting its saves."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.saves = 0

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        super().save(snapshot, record)
        self.saves += 1  # under the scheduler's lock, like every save


def run_lldsched(make_store: Callable[[Path], TaskStore | None]) -> tuple[float, int, float]:
    """(dispatch seconds, store writes during dispatch, registration seconds)."""
    with tempfile.TemporaryDirectory() as directory:
        store = make_store(Path(directory) / "tasks.db")
        scheduler = Scheduler(workers=WORKERS, store=store)
        began = time.perf_counter()
        for _ in range(TASKS):
            scheduler.schedule("noop", noop, OneTime(delay=0))
        registered = time.perf_counter() - began
        before = store.saves if isinstance(store, CountingSqliteTaskStore) else 0
        began = time.perf_counter()
        scheduler.start()
        assert scheduler.wait_drained(timeout=300), "lldsched did not drain"
        seconds = time.perf_counter() - began
        scheduler.shutdown()
        writes = store.saves - before if isinstance(store, CountingSqliteTaskStore) else 0
        if isinstance(store, SqliteTaskStore):
            store.close()
        return seconds, writes, registered


_done = threading.Event()
_count = [0]
_count_lock = threading.Lock()


def counted() -> None:
    """APScheduler's job: counts its runs and says when the last one ran."""
    with _count_lock:
        _count[0] += 1
        if _count[0] == TASKS:
            _done.set()


def run_apscheduler(durable: bool) -> tuple[float, str]:
    """(dispatch seconds, job store used)."""
    from apscheduler.executors.pool import ThreadPoolExecutor
    from apscheduler.jobstores.memory import MemoryJobStore
    from apscheduler.schedulers.background import BackgroundScheduler

    with tempfile.TemporaryDirectory() as directory:
        jobstore: Any = MemoryJobStore()
        kind = "MemoryJobStore"
        if durable:
            try:
                from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
            except ImportError:
                pass
            else:
                jobstore = SQLAlchemyJobStore(url=f"sqlite:///{directory}/jobs.sqlite")
                kind = "SQLAlchemyJobStore (SQLite)"
        scheduler = BackgroundScheduler(
            jobstores={"default": jobstore},
            executors={"default": ThreadPoolExecutor(WORKERS)},
            job_defaults={"misfire_grace_time": None, "coalesce": False},
            timezone=UTC,
        )
        _done.clear()
        _count[0] = 0
        scheduler.start(paused=True)
        now = datetime.now(UTC)
        for _ in range(TASKS):
            scheduler.add_job(counted, "date", run_date=now)
        began = time.perf_counter()
        scheduler.resume()
        assert _done.wait(600), f"APScheduler ran {_count[0]} of {TASKS} jobs"
        seconds = time.perf_counter() - began
        scheduler.shutdown(wait=True)
        return seconds, kind


def best(runs: list[tuple[float, Any, Any]]) -> tuple[float, Any, Any]:
    return min(runs, key=lambda run: run[0])


def main() -> dict[str, float]:
    plain, _, _ = best([run_lldsched(lambda path: None) for _ in range(REPEATS)])
    memory, _, _ = best([run_lldsched(lambda path: InMemoryTaskStore()) for _ in range(REPEATS)])
    sqlite, writes, registered = best(
        [run_lldsched(CountingSqliteTaskStore) for _ in range(REPEATS)]
    )
    aps_memory = min(run_apscheduler(durable=False)[0] for _ in range(REPEATS))
    aps_durable, kind = run_apscheduler(durable=True)  # one run: it is the slow one
    rate = TASKS / sqlite
    figures = {
        "lldsched dispatch, no store (tasks/s)": TASKS / plain,
        "lldsched dispatch, InMemoryTaskStore (tasks/s)": TASKS / memory,
        "lldsched dispatch, SqliteTaskStore (tasks/s)": rate,
        "SqliteTaskStore status writes/s during dispatch": writes / sqlite,
        "SqliteTaskStore writes/s at registration": TASKS / registered,
        "APScheduler dispatch, MemoryJobStore (tasks/s)": TASKS / aps_memory,
        f"APScheduler dispatch, {kind} (tasks/s)": TASKS / aps_durable,
        "durable dispatch vs APScheduler (x)": rate / (TASKS / aps_durable),
    }
    print(f"workload: {TASKS} no-op one-off tasks due at once, {WORKERS} workers")
    for name, value in figures.items():
        print(f"  {name:<58} {value:12,.1f}")
    print(f"  ({writes} status writes in {sqlite:.2f} s of dispatch; APScheduler used {kind})")
    return figures


if __name__ == "__main__":
    main()
