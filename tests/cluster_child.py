"""A child scheduler for the multi-process tests: ``python -m tests.cluster_child``.

Imports what it runs (``python -m tests.cluster_child postgres``: PostgreSQL's store too,
which an SQLite child never opens), then reads its orders, one JSON line on its stdin (what
:func:`tests.cluster._spawn` writes: ``spec``, a :class:`tests.cluster.StoreSpec` as
JSON, ``log``, the file its runs log to, ``workers``, ``lease``, ``poll``); it exits at
once if its stdin ends first (a spare never used: :class:`tests.cluster.Spares`).  Opens
the store with ``shared=True``, starts a ``Scheduler`` on it, prints ``ready <node>``,
runs until its stdin is closed, shuts down (runs in flight finish) and prints
``summary {"rejected": n, "node": ...}``: how many of its fenced writes the store
refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys

from lldsched import Scheduler
from tests import cluster_jobs
from tests.cluster_stores import StoreSpec, open_store

if sys.argv[1:] == ["postgres"]:  # imported before the orders, as a spare waits
    with contextlib.suppress(ImportError):  # (psycopg; else imported once it is opened)
        import lldsched.stores.postgres  # noqa: F401 - what a PostgreSQL store opens


def main() -> None:
    line = sys.stdin.readline()
    if not line:
        return  # a spare never given orders
    orders = json.loads(line)
    os.environ["LLDSCHED_CLUSTER_LOG"] = orders["log"]  # where tests.cluster_jobs logs
    store = open_store(
        StoreSpec.from_json(orders["spec"]), lease=orders["lease"], poll=orders["poll"]
    )
    cluster_jobs.store.append(store)  # what a run that stops its process holds (stop=)
    scheduler = Scheduler(workers=orders["workers"], store=store)
    cluster_jobs.scheduler.append(scheduler)  # what a run's verb on its own task calls
    scheduler.start()
    print("ready", store.node, flush=True)
    sys.stdin.read()  # until the parent closes it
    scheduler.shutdown(drain=False, timeout=30)
    summary = {"rejected": store.rejected, "node": store.node}
    store.close()
    print("summary", json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
