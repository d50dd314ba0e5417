"""lldsched's side of ``bench_cluster``: one scheduler process on a shared store.

``python cluster_worker.py load SPEC N``: register ``N`` one-off tasks of
:func:`noop`, all due now, in the shared store SPEC (``sqlite:PATH`` or
``postgres:DSN``), without starting a scheduler.
``python cluster_worker.py work SPEC``: open SPEC shared, build a ``Scheduler`` on it
(its rows are loaded), print ``ready``, start at a ``go`` line on stdin and shut down
when stdin closes.
"""

from __future__ import annotations

import sys

from lldsched import Misfire, MisfirePolicy, OneTime, Scheduler, SqliteTaskStore
from lldsched.coordination import CoordinatedStore

WORKERS = 4
LATE_IS_FINE = MisfirePolicy(Misfire.RUN_ONCE, grace=3600)  # due at load, run minutes later


def noop() -> None:
    """The task: does nothing (what is measured is the claiming)."""


def open_shared(spec: str) -> CoordinatedStore:
    """``sqlite:PATH`` or ``postgres:DSN``, opened shared."""
    engine, _, where = spec.partition(":")
    if engine == "sqlite":
        return SqliteTaskStore(where, shared=True)
    from lldsched.stores.postgres import PostgresTaskStore

    return PostgresTaskStore(where)


def load(spec: str, count: int) -> None:
    store = open_shared(spec)
    scheduler = Scheduler(store=store)  # never started: it only registers
    for n in range(count):
        scheduler.schedule(f"t{n}", noop, OneTime(delay=0), misfire=LATE_IS_FINE)
    scheduler.shutdown()
    store.close()


def work(spec: str) -> None:
    store = open_shared(spec)
    scheduler = Scheduler(store=store, workers=WORKERS)
    print("ready", flush=True)
    if sys.stdin.readline().strip() == "go":
        scheduler.start()
        sys.stdin.read()  # until the parent closes it
    scheduler.shutdown(timeout=30)
    store.close()


if __name__ == "__main__":
    if sys.argv[1] == "load":
        load(sys.argv[2], int(sys.argv[3]))
    else:
        work(sys.argv[2])
