"""The jobs the container service of docs/OPERATIONS.md registers in ``tests/test_container.py``.

``APP_JOBS=tests.container_jobs:register`` names :func:`register`.  Its one job, run
in a worker process (``isolation="process"``), prints that it started (no flush: the
service runs with ``PYTHONUNBUFFERED=1``, as docs/OPERATIONS.md says a container should) and
then waits until the test writes a line to the FIFO named by ``GATE``: the test holds
a run in flight for as long as it needs, without a sleep on either side.
"""

from __future__ import annotations

import os

from lldsched import OneTime, RetryPolicy, Scheduler


def held() -> str:
    print(f"started {os.getpid()}")
    with open(os.environ["GATE"], encoding="utf-8") as gate:  # blocks until the test writes
        return gate.readline().strip()


def register(scheduler: Scheduler) -> None:
    scheduler.schedule(
        "Bericht für München",  # a name a C locale cannot encode: the log still says it
        "tests.container_jobs:held",
        OneTime(delay=0),
        id="held",
        replace_existing=True,
        isolation="process",
        retry=RetryPolicy(initial_backoff=3600, max_backoff=3600),  # never during a test
    )
