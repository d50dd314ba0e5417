"""A child scheduler for the multi-process tests: ``python -m tests.cluster_child SPEC``.

Opens the store described by SPEC (:class:`tests.cluster.StoreSpec` as JSON) with
``shared=True``, starts a ``Scheduler`` on it, prints ``ready <node>``, runs until
its stdin is closed, shuts down (runs in flight finish) and prints
``summary {"rejected": n, "node": ...}``: how many of its fenced writes the store
refused.
"""

from __future__ import annotations

import argparse
import json
import sys

from lldsched import Scheduler
from tests import cluster_jobs
from tests.cluster import StoreSpec, open_store


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("spec")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--lease", type=float, default=1.0)
    parser.add_argument("--poll", type=float, default=0.1)
    options = parser.parse_args()
    store = open_store(StoreSpec.from_json(options.spec), lease=options.lease, poll=options.poll)
    cluster_jobs.store.append(store)  # what a run that stops its process holds (stop=)
    scheduler = Scheduler(workers=options.workers, store=store)
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
