"""APScheduler 4's side of ``bench_cluster``: run by the ``.venv-aps4`` interpreter, never
imported by lldsched's own environment (APScheduler 3 lives there).

``python cluster_aps4.py load URL N``: configure ``N`` tasks running :func:`noop` and
add one job of each to the SQLAlchemy data store at ``URL``, then exit.
``python cluster_aps4.py work URL``: a worker scheduler (``SchedulerRole.worker``) on
the same store: prints ``ready`` once its services are up, starts processing at a
``go`` line on stdin and stops when stdin closes.

The API used is APScheduler 4.0.0a6's (read from its source:
``apscheduler/_schedulers/sync.py`` and ``datastores/sqlalchemy.py``): ``Scheduler(
data_store, role=..., max_concurrent_jobs=...)``, ``configure_task``, ``add_job`` and
``start_in_background()``.  Jobs added directly are APScheduler 4's cheapest path
(no schedule to process), and the local event broker its default: each worker
acquires jobs again whenever one of its own is released.

One task per job, as lldsched's side has one task per run: a task's
``max_running_jobs`` defaults to 1, and ``acquire_jobs`` locks the task's row
(``FOR UPDATE … SKIP LOCKED``), so N jobs of *one* task would run one at a time
across the whole cluster (27 runs/s with 1 worker, 14 with 4, when tried).
"""

from __future__ import annotations

import sys

from apscheduler import Scheduler, SchedulerRole
from apscheduler.datastores.sqlalchemy import SQLAlchemyDataStore


def noop() -> None:
    """The job: does nothing (what is measured is the scheduling)."""


def load(url: str, count: int) -> None:
    with Scheduler(SQLAlchemyDataStore(url), role=SchedulerRole.scheduler) as scheduler:
        for n in range(count):
            scheduler.configure_task(f"t{n}", func=noop)
            scheduler.add_job(f"t{n}")


def work(url: str) -> None:
    with Scheduler(
        SQLAlchemyDataStore(url), role=SchedulerRole.worker, max_concurrent_jobs=100
    ) as scheduler:
        print("ready", flush=True)
        if sys.stdin.readline().strip() != "go":
            return
        scheduler.start_in_background()
        sys.stdin.read()  # until the parent closes it
        scheduler.stop()


if __name__ == "__main__":
    if sys.argv[1] == "load":
        load(sys.argv[2], int(sys.argv[3]))
    else:
        work(sys.argv[2])
